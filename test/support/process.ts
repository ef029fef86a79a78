import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const repoRoot = join(import.meta.dirname, '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the first match of `pattern` in stdout, or rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the server the way `npm start` does (tsx src/server.ts), on a free port; `nodeArgs` go to node (e.g. --cpu-prof). */
export async function startServerProcess(env: Record<string, string>, nodeArgs: string[] = []): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(repoRoot, 'src', 'server.ts')], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', TREEHOUSE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        const match = stdout.match(pattern);
        if (match) return resolve(match);
        if (child.exitCode !== null || Date.now() - started > timeoutMs) {
          return reject(new Error(`no ${pattern} in server output:\n${stdout}\n${stderr}`));
        }
        setTimeout(poll, 50);
      };
      poll();
    });
  await waitFor(/Treehouse listening on/);
  return { child, url: `http://127.0.0.1:${port}`, output: () => stdout + stderr, waitFor, exited };
}

/**
 * Server processes a test starts (and starts again on the same data after a kill): `start` waits
 * until one listens; `killAll` (an afterAll) kills those still running and waits for them.
 */
export function serverProcesses(): { start(env: Record<string, string>): Promise<ServerProcess>; killAll(): Promise<void> } {
  const running: ServerProcess[] = [];
  return {
    async start(env) {
      const server = await startServerProcess(env);
      running.push(server);
      await server.waitFor(/listening on/);
      return server;
    },
    async killAll() {
      for (const server of running) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await Promise.all(running.map((server) => server.exited));
    },
  };
}

/**
 * A request loop against `server`, killed with SIGKILL while its next request is in flight, once
 * `acknowledgedBeforeKill` requests were acknowledged (a count, not a time). `request(index)` sends
 * the index-th request and gives what counts as its acknowledgement, or throws for an answer that
 * is not one. Resolves, once the process is gone, with the acknowledgements in order.
 */
export async function killDuringRequests<T>(server: ServerProcess, acknowledgedBeforeKill: number, request: (index: number) => Promise<T>): Promise<T[]> {
  const acknowledged: T[] = [];
  let stop = false;
  const loop = (async () => {
    for (let index = 0; !stop; index++) {
      try {
        acknowledged.push(await request(index));
      } catch (error) {
        if (stop) return;
        throw error;
      }
    }
  })();
  while (acknowledged.length < acknowledgedBeforeKill) {
    // A loop that failed before the kill says why instead of waiting for ever.
    await Promise.race([loop, new Promise((resolve) => setTimeout(resolve, 5))]);
  }
  stop = true;
  server.child.kill('SIGKILL');
  const exited = await server.exited;
  if (exited.signal !== 'SIGKILL') throw new Error(`the server exited with ${JSON.stringify(exited)} before it was killed`);
  await loop;
  return acknowledged;
}

/**
 * A process's anonymous resident memory (RssAnon of /proc/PID/status: heap and buffers, not the
 * file-backed pages of LMDB's mapped data file), in bytes; 0 once the process is gone.
 */
export function anonymousRssBytes(pid: number): number {
  try {
    const match = /RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
