/**
 * The layers of the README's "Layout", as imports: src/git (1) → src/store (2) → src/repo (3) →
 * src/service (4) → src/http (5) → the entry points (6). A module imports only its own layer and
 * the ones below it; the HTTP layer reaches the domain only through the service layer, never into
 * src/repo or src/store (so every change goes through the service, which sees them all).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/process.js';

const SRC = join(repoRoot, 'src');
const LAYERS: Record<string, number> = { git: 1, store: 2, repo: 3, service: 4, http: 5 };

/** The layer of a file under src/: its first directory, or the entry points and shared errors at the top. */
function layerOf(file: string): { name: string; rank: number } {
  const [first, second] = relative(SRC, file).split('/');
  if (second === undefined) return first === 'errors.ts' ? { name: 'errors', rank: 0 } : { name: 'entry', rank: 6 };
  return { name: first, rank: LAYERS[first] };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative module a file imports or re-exports, type-only ones included, as resolved paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/g)) {
    found.push(resolve(dirname(file), match[1].replace(/\.js$/, '.ts')));
  }
  for (const match of text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)) found.push(resolve(dirname(file), match[1].replace(/\.js$/, '.ts')));
  return found;
}

describe('layers', () => {
  const files = sourceFiles(SRC);

  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(importsOf(join(SRC, 'http', 'app.ts')).length).toBeGreaterThan(5);
  });

  it('has no import of a higher layer', () => {
    const upward: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const target of importsOf(file)) {
        if (!target.startsWith(SRC)) continue;
        const to = layerOf(target);
        if (to.rank > from.rank) upward.push(`${relative(SRC, file)} imports ${relative(SRC, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('has no import from src/http into src/repo or src/store', () => {
    const skipped = files
      .filter((file) => layerOf(file).name === 'http')
      .flatMap((file) => importsOf(file).filter((target) => ['repo', 'store'].includes(layerOf(target).name)).map((target) => `${relative(SRC, file)} imports ${relative(SRC, target)}`));
    expect(skipped).toEqual([]);
  });
});
