/**
 * Event-loop lag of a real server process under a mixed load (issue #11, item 5): clones, pushes,
 * git seeds and API writes at once, while a probe asks /healthz every PROBE_INTERVAL_MS.
 *
 *   npx tsx bench/lag.ts [--duration-ms=30000] [--seed-files=10000] [--only=clone|push|seed|api] [--without=seed,...]
 *     [--cloners=2] [--work=DIR] [--result=FILE]
 *
 * Set up first (untimed): a project of `seed-files` files (fixtures/sourceTree.ts), a git clone of it
 * to push from, and a bare copy served by `git http-backend` to seed new projects from. Then, for
 * `duration-ms`, at once:
 * - CLONERS loops of `git clone --bare` of the big project;
 * - one loop that changes PUSH_FILES files in the clone, commits and `git push`es;
 * - one loop that creates a project seeded from the http-backend copy (the whole history) and
 *   deletes it again;
 * - WRITERS API clients writing a file and committing, on a small project of their own.
 * LAG_CPU_PROFILE_DIR=DIR writes a CPU profile of the server there (node --cpu-prof); LAG_NODE_ARGS
 * adds node flags to the server (e.g. `--trace-gc`) and LAG_SERVER_OUTPUT=FILE keeps what it printed.
 * Reported: the probe's round trips (what any other client waited) and the server's own event-loop
 * delay windows from /healthz (Node's histogram, 10-second windows that ended during the load).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { SourceTree, writeFilesToDirectory } from '../fixtures/sourceTree.js';
import { loadConfig } from '../src/service/config.js';
import { openTreehouse } from '../src/service/treehouse.js';
import { openStore } from '../src/store/open.js';
import { startGitHttpBackend } from '../test/support/httpBackend.js';
import { percentile, runWriteCommitLoad } from '../test/support/load.js';
import { startServerProcess } from '../test/support/process.js';
import { execFile } from 'node:child_process';

const PROBE_INTERVAL_MS = 20;
const CLONERS = 2;
const WRITERS = 8;
const PUSH_FILES = 200;
const BATCH_FILES_MAX = 10_000;
const GIT_ENV = isolatedGitEnv({ noAutoGc: true, extra: { GIT_TERMINAL_PROMPT: '0' } });

export interface LagResult {
  durationMs: number;
  seedFiles: number;
  clones: number;
  pushes: number;
  seeds: number;
  apiRequests: number;
  apiErrors: number;
  failures: string[];
  probe: { samples: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** Worst of the server's own windows that ended during the load. */
  server: { windows: number; p99Ms: number; maxMs: number } | null;
}

function run(command: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: GIT_ENV, maxBuffer: 1 << 28 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')}: ${stderr || error.message}`));
      else resolve();
    });
  });
}

async function api(base: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

export async function runLagBench(options: {
  workDir: string;
  durationMs: number;
  seedFiles: number;
  /** One kind of load alone (clone, push, seed or api), to see which one makes the lag. */
  only?: string;
  /** Kinds of load to leave out (clone, push, seed, api). */
  without?: string[];
  cloners?: number;
  progress: (text: string) => void;
}): Promise<LagResult> {
  const { workDir, progress } = options;
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const dataDir = join(workDir, 'data');
  const setupConfig = loadConfig({ TREEHOUSE_DATA_DIR: dataDir });
  const setup = openTreehouse(setupConfig, await openStore(setupConfig));
  const keys = [(await setup.accounts.bootstrap())!];
  for (let i = 1; i < WRITERS; i++) keys.push((await setup.accounts.createKey('default', `lag-${i}`)).key);
  await setup.close();
  const [key] = keys;

  const profileDir = process.env.LAG_CPU_PROFILE_DIR;
  const server = await startServerProcess(
    { TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' },
    [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...(process.env.LAG_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
  );
  const upstreamRoot = join(workDir, 'upstream');
  mkdirSync(upstreamRoot);
  const upstream = await startGitHttpBackend(upstreamRoot);
  try {
    progress(`lag: seeding a project of ${options.seedFiles} files`);
    const tree = new SourceTree({ files: options.seedFiles });
    const big = (await api(server.url, key, 'POST', '/projects', { title: 'Lag big' })).project.id as string;
    const files = [...tree.files()];
    for (let i = 0; i < files.length; i += BATCH_FILES_MAX) {
      const batch = files.slice(i, i + BATCH_FILES_MAX).map((file) => ({ path: file.path, content: file.content.toString('utf8') }));
      await api(server.url, key, 'POST', `/projects/${big}/files/batch`, { files: batch });
    }
    await api(server.url, key, 'POST', `/projects/${big}/git/commit`, { message: 'Seed' });
    const small = (await api(server.url, key, 'POST', '/projects', { title: 'Lag writes' })).project.id as string;
    const remote = `${server.url.replace('http://', `http://git:${key}@`)}/git/${big}.git`;
    const pushClone = join(workDir, 'push-clone');
    await run('git', ['clone', '-q', remote, pushClone]);
    await run('git', ['clone', '-q', '--bare', remote, join(upstreamRoot, 'seed.git')]);
    // Let the deflate worker catch up, so the load starts from a quiet server.
    for (;;) {
      const health = await (await fetch(`${server.url}/healthz`)).json();
      if (health.deflate_backlog === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    progress(`lag: mixed load for ${options.durationMs} ms`);
    const failures: string[] = [];
    const started = Date.now();
    const deadline = started + options.durationMs;
    const counts = { clones: 0, pushes: 0, seeds: 0 };
    const only = options.only;
    const left = (name: string) => (only !== undefined && !name.startsWith(only)) || (options.without ?? []).some((kind) => name.startsWith(kind));
    const loop = async (name: string, body: (round: number) => Promise<void>) => {
      if (left(name)) return;
      for (let round = 0; Date.now() < deadline; round++) {
        try {
          await body(round);
        } catch (error) {
          failures.push(`${name}: ${(error as Error).message.slice(0, 300)}`);
        }
      }
    };
    const probes: number[] = [];
    const windows: Array<{ at: string; window_ms: number; p99: number; max: number }> = [];
    const probe = (async () => {
      while (Date.now() < deadline) {
        const t0 = performance.now();
        const health = await (await fetch(`${server.url}/healthz`)).json();
        probes.push(performance.now() - t0);
        const window = health.event_loop_delay_ms;
        if (window && !windows.some((seen) => seen.at === window.at)) windows.push(window);
        await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
      }
    })();
    const cloners = Array.from({ length: options.cloners ?? CLONERS }, (_, index) =>
      loop(`clone ${index}`, async (round) => {
        const dir = join(workDir, `clone-${index}-${round}`);
        await run('git', ['clone', '-q', '--bare', remote, dir]);
        rmSync(dir, { recursive: true, force: true });
        counts.clones++;
      }),
    );
    const pusher = loop('push', async (round) => {
      writeFilesToDirectory(pushClone, tree.changeFiles(PUSH_FILES, 1_000_000 + round));
      await run('git', ['commit', '-qam', `push round ${round}`], pushClone);
      await run('git', ['push', '-q', 'origin', 'main'], pushClone);
      counts.pushes++;
    });
    const seeder = loop('seed', async () => {
      const seeded = (await api(server.url, key, 'POST', '/projects', { title: 'Lag seed', source: { kind: 'git', url: `${upstream.url}/seed.git` } })).project.id;
      await api(server.url, key, 'DELETE', `/projects/${seeded}`);
      counts.seeds++;
    });
    const writes = runWriteCommitLoad({ baseUrl: server.url, projectId: small, keys, clients: left('api') ? 0 : WRITERS, durationMs: options.durationMs });
    const [writeResult] = await Promise.all([writes, probe, pusher, seeder, ...cloners]);
    const ended = Date.now();
    // Windows that lay mostly inside the load.
    const during = windows.filter((window) => {
      const at = Date.parse(window.at);
      return at - window.window_ms / 2 > started && at - window.window_ms / 2 <= ended;
    });
    // A failed request's cause is in the server's log (a 500 names only "Internal error").
    if (failures.length > 0) {
      const logged = server.output().split('\n').filter((line) => line.includes('"level":50'));
      for (const line of logged.slice(0, 3)) failures.push(`server log: ${line.slice(0, 1500)}`);
    }
    return {
      durationMs: ended - started,
      seedFiles: options.seedFiles,
      ...counts,
      apiRequests: writeResult.requests,
      apiErrors: writeResult.errors,
      failures,
      probe: { samples: probes.length, p50Ms: percentile(probes, 0.5), p99Ms: percentile(probes, 0.99), maxMs: Math.max(...probes) },
      server: during.length === 0 ? null : { windows: during.length, p99Ms: Math.max(...during.map((w) => w.p99)), maxMs: Math.max(...during.map((w) => w.max)) },
    };
  } finally {
    if (process.env.LAG_SERVER_OUTPUT) writeFileSync(process.env.LAG_SERVER_OUTPUT, server.output());
    server.child.kill('SIGTERM');
    await server.exited;
    await upstream.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

function option(argv: string[], name: string): string | undefined {
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

async function main(argv: string[]): Promise<void> {
  const result = await runLagBench({
    workDir: option(argv, 'work') ?? join(import.meta.dirname, '.work', `lag-${process.pid}`),
    durationMs: Number(option(argv, 'duration-ms') ?? 30_000),
    seedFiles: Number(option(argv, 'seed-files') ?? 10_000),
    only: option(argv, 'only'),
    without: option(argv, 'without')?.split(','),
    cloners: option(argv, 'cloners') === undefined ? undefined : Number(option(argv, 'cloners')),
    progress: (text) => process.stderr.write(`[bench] ${text}\n`),
  });
  const resultPath = option(argv, 'result');
  if (resultPath) writeFileSync(resultPath, JSON.stringify(result));
  else console.log(JSON.stringify(result, null, 2));
}

if (process.argv[1] === import.meta.filename) await main(process.argv);
