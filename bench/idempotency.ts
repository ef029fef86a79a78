/**
 * What an Idempotency-Key costs a write (issue 16), against a server process (src/server.ts, as
 * `npm start` runs it) on 127.0.0.1, in about half a minute:
 *
 *   npx tsx bench/idempotency.ts [--rounds=400] [--runs=3]
 *
 * One client writes a 1-file batch and commits it, `rounds` times without a key and `rounds` times
 * with a new key on each request, in alternating runs (the machine's noise falls on both); then it
 * sends each keyed request of the last run again (replays). Prints p50/p99 per request of each kind,
 * and the CPU time the server's main thread spent per request (steadier than latency on a shared machine).
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { percentile } from '../test/support/load.js';
import { startServerProcess } from '../test/support/process.js';

const args = new Map(process.argv.slice(2).map((arg) => arg.replace(/^--/, '').split('=') as [string, string]));
const rounds = Number(args.get('rounds') ?? 400);
const runs = Number(args.get('runs') ?? 3);

const dataDir = join(import.meta.dirname, '.work', `idempotency-${process.pid}`);
rmSync(dataDir, { recursive: true, force: true });
const server = await startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '1000000', TREEHOUSE_RATE_BURST: '1000000' });
const key = (await server.waitFor(/API key for team default: (th_\S+)/))[1];

async function call(method: string, path: string, body: unknown, idempotencyKey?: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status}`);
  return performance.now() - started;
}

const project = await (async () => {
  const response = await fetch(`${server.url}/api/v1/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Keys' }),
  });
  return ((await response.json()) as { project: { id: string } }).project.id;
})();

let sequence = 0;
/** `rounds` write + commit pairs; each request's time, with a fresh key each when `keyed`. */
async function run(keyed: boolean): Promise<{ times: number[]; sent: Array<[string, unknown, string]> }> {
  const times: number[] = [];
  const sent: Array<[string, unknown, string]> = [];
  for (let round = 0; round < rounds; round++) {
    const n = sequence++;
    const requests: Array<[string, unknown]> = [
      [`/projects/${project}/files/batch`, { files: [{ path: `f${n % 50}.txt`, content: `${n}\n` }] }],
      [`/projects/${project}/git/commit`, { message: `commit ${n}` }],
    ];
    for (const [path, body] of requests) {
      const idempotencyKey = keyed ? `bench-${n}-${path.endsWith('commit') ? 'c' : 'w'}` : undefined;
      times.push(await call('POST', path, body, idempotencyKey));
      if (idempotencyKey) sent.push([path, body, idempotencyKey]);
    }
  }
  return { times, sent };
}

/** CPU time the server's main thread has used, in ms (Linux /proc, 100 ticks a second). */
function serverMainThreadCpuMs(): number {
  const pid = server.child.pid!;
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Runs `work` and gives its times with the server's CPU per request. */
async function measured(work: () => Promise<number[]>): Promise<string> {
  const cpuBefore = serverMainThreadCpuMs();
  const times = await work();
  const cpuPerRequest = (serverMainThreadCpuMs() - cpuBefore) / times.length;
  return `p50 ${percentile(times, 0.5).toFixed(2)} ms, p99 ${percentile(times, 0.99).toFixed(2)} ms, server CPU ${cpuPerRequest.toFixed(2)} ms/request`;
}

await run(false); // warm-up
for (let index = 0; index < runs; index++) {
  const plain = await measured(async () => (await run(false)).times);
  let sent: Array<[string, unknown, string]> = [];
  const keyed = await measured(async () => {
    const done = await run(true);
    sent = done.sent;
    return done.times;
  });
  const replays = await measured(async () => {
    const times: number[] = [];
    for (const [path, body, idempotencyKey] of sent) times.push(await call('POST', path, body, idempotencyKey));
    return times;
  });
  process.stdout.write(`run ${index + 1}: without a key ${plain}; with a new key ${keyed}; replays ${replays}\n`);
}
server.child.kill('SIGTERM');
await server.exited;
rmSync(dataDir, { recursive: true, force: true });
