import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';

/** A clean, deterministic environment for the git CLI (fixtures/gitEnv.ts), with any extra variables. */
function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return isolatedGitEnv({ extra });
}

/** Runs the real git CLI with a clean, deterministic environment and returns stdout as bytes. */
export function gitBytes(args: string[], options: { cwd?: string; input?: Uint8Array | string; env?: Record<string, string> } = {}): Buffer {
  return execFileSync('git', args, {
    cwd: options.cwd,
    input: options.input,
    maxBuffer: 1 << 30,
    env: gitEnv(options.env),
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

/**
 * Runs git without blocking the event loop, for commands that talk to a server living in this
 * process. Resolves with the exit status and the combined output instead of throwing.
 */
export function gitAsync(
  args: string[],
  options: { cwd?: string; input?: string | Uint8Array; env?: Record<string, string> } = {},
): Promise<{ status: number; stdout: string; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'git',
      args,
      {
        cwd: options.cwd,
        maxBuffer: 1 << 30,
        env: gitEnv(options.env),
      },
      (error, stdout, stderr) => {
        const status = error ? ((error as { code?: number }).code ?? 1) : 0;
        resolve({ status: typeof status === 'number' ? status : 1, stdout: String(stdout), output: String(stdout) + String(stderr) });
      },
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}

/** gitAsync that throws on failure and returns stdout. */
export async function gitAsyncOk(args: string[], options: Parameters<typeof gitAsync>[1] = {}): Promise<string> {
  const result = await gitAsync(args, options);
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed (${result.status}):\n${result.output}`);
  return result.stdout;
}
