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
 * Codes the contract's later sections add ("New error code: 410 `events_expired`."): each joins the
 * registry when its section is built, so the registry may lack some of them but holds no other.
 */
function announcedCodes(markdown: string): Map<string, number> {
  const codes = new Map<string, number>();
  for (const line of markdown.split('\n')) {
    if (!/^New error codes?:/.test(line)) continue;
    for (const match of line.matchAll(/(\d{3}) `([a-z_]+)`/g)) codes.set(match[2], Number(match[1]));
  }
  return codes;
}

/** The registry's codes that are not in the error table must be announced ones, with the same status. */
function expectContractHolds(contract: string, registry: Map<string, number>): void {
  const table = statusTable(contract, /^## Errors/m);
  const announced = announcedCodes(contract);
  for (const [code, status] of table) expect(registry.get(code), code).toBe(status);
  for (const [code, status] of registry) expect(table.get(code) ?? announced.get(code), code).toBe(status);
}

/** The contract as this checkout last saw it, for a checkout with no ../shared beside it (a CI clone). */
const VENDORED_CONTRACT = join(repoRoot, 'test', 'fixtures', 'contract', 'API.md');

/**
 * The contract beside the checkout (../shared/API.md), looked for in each parent directory in turn,
 * so a git worktree further down (/work/wt/<name>) finds the same file; null when there is none.
 */
function sharedContractPath(): string | null {
  for (let dir = dirname(repoRoot); ; dir = dirname(dir)) {
    const candidate = join(dir, 'shared', 'API.md');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

describe('the error registry', () => {
  const registry = new Map(Object.entries(STATUS_BY_CODE));

  it('matches the contract error table (../shared/API.md, or the copy kept in test/fixtures/contract)', () => {
    const contract = readFileSync(sharedContractPath() ?? VENDORED_CONTRACT, 'utf8');
    expectContractHolds(contract, registry);
  });

  it('keeps its copy of the contract equal to ../shared/API.md wherever that is beside the checkout', () => {
    const shared = sharedContractPath();
    const vendored = readFileSync(VENDORED_CONTRACT, 'utf8');
    expectContractHolds(vendored, registry);
    if (shared) expect(vendored).toBe(readFileSync(shared, 'utf8'));
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
