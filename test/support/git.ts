import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs the real git CLI with a clean, deterministic environment and returns stdout as bytes. */
export function gitBytes(args: string[], options: { cwd?: string; input?: Uint8Array | string; env?: Record<string, string> } = {}): Buffer {
  return execFileSync('git', args, {
    cwd: options.cwd,
    input: options.input,
    maxBuffer: 1 << 30,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Test Author',
      GIT_AUTHOR_EMAIL: 'author@example.com',
      GIT_COMMITTER_NAME: 'Test Committer',
      GIT_COMMITTER_EMAIL: 'committer@example.com',
      ...options.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export function git(args: string[], options: Parameters<typeof gitBytes>[1] = {}): string {
  return gitBytes(args, options).toString('utf8');
}

/** A scratch directory removed by the returned cleanup function. */
export function scratchDir(prefix = 'treehouse-test-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export function initBareRepo(path: string): void {
  git(['init', '--bare', '--quiet', '--initial-branch=main', path]);
}
