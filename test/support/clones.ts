/**
 * Bare clones as the interop tests check them: the one pack a fresh clone keeps (as it was
 * received), the objects it holds, and a clone checked as strictly as git checks.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { git, gitAsyncOk } from './git.js';

/** The one pack a fresh bare clone holds, as it was received. */
export function packOf(bareDir: string): { path: string; bytes: number } {
  const dir = join(bareDir, 'objects', 'pack');
  const packs = readdirSync(dir).filter((name) => name.endsWith('.pack'));
  expect(packs).toHaveLength(1);
  const path = join(dir, packs[0]);
  return { path, bytes: statSync(path).size };
}

/** Every object id of the repository's refs (with paths), sorted: two repositories hold the same objects when these are equal. */
export function objectsOf(bareDir: string): string {
  return git(['rev-list', '--objects', '--all'], { cwd: bareDir }).split('\n').sort().join('\n');
}

/**
 * A bare clone checked as strictly as git checks: objects on receipt, `fsck --strict`, and
 * `index-pack --strict` of the pack as received (its index written under `scratch`). Returns the
 * pack's path. `config`: `-c` options for the clone, such as a protocol version.
 */
export async function strictClone(url: string, dir: string, scratch: string, config: string[] = []): Promise<string> {
  await gitAsyncOk([...config, '-c', 'transfer.fsckObjects=true', 'clone', '-q', '--bare', url, dir]);
  await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: dir });
  const pack = packOf(dir).path;
  await gitAsyncOk(['index-pack', '--strict', '-o', join(scratch, `${Math.random().toString(36).slice(2)}.idx`), pack], { cwd: dir });
  return pack;
}
