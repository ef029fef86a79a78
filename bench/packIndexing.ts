/**
 * The cloning client's own share of a clone: `git index-pack` of the packs a clone received, run as
 * `git clone` runs it on a pack as it arrives, but alone, in a fresh bare repository with no server.
 * No server's answer can make a clone faster than this (bench/clone.ts, bench/history.ts).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';

const GIT_ENV = isolatedGitEnv({ noAutoGc: true });

/** Flags `git clone` gives index-pack for the pack it fetches (fetch-pack.c), less progress and keep. */
const CLONE_INDEX_PACK_ARGS = ['index-pack', '--stdin', '--fix-thin', '--check-self-contained-and-connected'];

/**
 * Milliseconds `git index-pack` takes over the packs of the clone in `cloned`, into `scratch` (made
 * fresh, removed after). Asynchronous: a caller may run git's http-backend in its own process.
 */
export async function timePackIndexing(cloned: string, scratch: string): Promise<number> {
  rmSync(scratch, { recursive: true, force: true });
  await runGit(['init', '-q', '--bare', scratch], process.cwd());
  const packs = join(cloned, 'objects', 'pack');
  let ms = 0;
  for (const pack of readdirSync(packs).filter((name) => name.endsWith('.pack'))) {
    ms += await runGit(CLONE_INDEX_PACK_ARGS, scratch, join(packs, pack));
  }
  rmSync(scratch, { recursive: true, force: true });
  return ms;
}

/** Runs git with `stdinFile` as its input, if given; its time in ms. */
function runGit(args: string[], cwd: string, stdinFile?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const input = stdinFile === undefined ? null : openSync(stdinFile, 'r');
    const started = process.hrtime.bigint();
    const child = spawn('git', args, { cwd, env: GIT_ENV, stdio: [input ?? 'ignore', 'ignore', 'pipe'] });
    // The child holds its own copy of the descriptor once spawned.
    if (input !== null) closeSync(input);
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.on('close', (status, signal) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (status === 0) resolve(ms);
      else reject(new Error(`git ${args[0]} failed (${status ?? signal}): ${stderr.slice(-500)}`));
    });
  });
}
