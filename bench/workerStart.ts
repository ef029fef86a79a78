/**
 * How long a worker thread takes to start and load its module (src/service/moduleWorker.ts): the
 * module bundled once per process by esbuild, against its sources loaded through tsx's ESM API.
 * Each start is a new worker (the pack checker's starts on a server's first large push, the deflate
 * cache's again after 10 s idle); the bundle is made by the first start and reused.
 *
 *   npx tsx bench/workerStart.ts [--starts=15]
 */
import { startModuleWorker } from '../src/service/moduleWorker.js';
import { summarise } from './measure.js';

const MODULES = ['../git/packCheck', '../git/deltaWindow'];

async function startMs(modulePath: string, bundled: boolean): Promise<number> {
  const started = performance.now();
  const worker = startModuleWorker(modulePath, `load().then(() => parentPort.postMessage('loaded'), (error) => parentPort.postMessage(String(error)))`, { bundled });
  worker.ref();
  const answer = await new Promise((resolve) => worker.once('message', resolve));
  const ms = performance.now() - started;
  await worker.terminate();
  if (answer !== 'loaded') throw new Error(`${modulePath} did not load: ${answer}`);
  return ms;
}

const starts = Number(process.argv.find((arg) => arg.startsWith('--starts='))?.slice('--starts='.length) ?? 15);
for (const modulePath of MODULES) {
  for (const bundled of [true, false]) {
    const first = await startMs(modulePath, bundled);
    const samples: number[] = [];
    // Turns between the two ways would share the machine's state; each way's starts run in a row.
    for (let i = 0; i < starts; i++) samples.push(await startMs(modulePath, bundled));
    const summary = summarise(samples);
    console.log(`${modulePath.padEnd(18)} ${bundled ? 'bundled' : 'tsx    '} first ${first.toFixed(0)} ms, then median ${summary.medianMs.toFixed(0)} ms (${summary.minMs.toFixed(0)}-${summary.maxMs.toFixed(0)}, n=${starts})`);
  }
}
