import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultMessages, errorCodes } from '../../src/errors.js';
import { STATUS_BY_CODE } from '../../src/http/errors.js';
import { repoRoot } from '../support/process.js';

/** Rows "| 409 | code ..." of the first markdown table under `heading`. */
function statusTable(markdown: string, heading: RegExp): Map<string, number> {
  const start = markdown.search(heading);
  expect(start).toBeGreaterThanOrEqual(0);
  const rows = new Map<string, number>();
  for (const line of markdown.slice(start).split('\n').slice(1)) {
    if (line.startsWith('#')) break;
    const match = /^\|\s*(\d{3})\s*\|\s*([a-z_]+)\s*\|/.exec(line);
    if (match) rows.set(match[2], Number(match[1]));
  }
  return rows;
}

/**
 * The contract sits in `shared/` beside the checkout (../shared/API.md); a git worktree is a level
 * deeper (<root>/wt/<name>), so look in the directories above until it is found.
 */
function contractPath(): string {
  for (let dir = dirname(repoRoot); ; dir = dirname(dir)) {
    const candidate = join(dir, 'shared', 'API.md');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return join(repoRoot, '..', 'shared', 'API.md');
  }
}

describe('the error registry', () => {
  const registry = new Map(Object.entries(STATUS_BY_CODE));

  it('matches the contract error table (../shared/API.md)', () => {
    const contract = readFileSync(contractPath(), 'utf8');
    expect(statusTable(contract, /^## Errors/m)).toEqual(registry);
  });

  it('matches the README error table', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    expect(statusTable(readme, /^## Errors/m)).toEqual(registry);
  });

  it('has a default message for every code and nothing more', () => {
    expect(Object.keys(defaultMessages).sort()).toEqual([...errorCodes].sort());
    expect([...registry.keys()].sort()).toEqual([...errorCodes].sort());
  });
});
