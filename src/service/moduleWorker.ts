/**
 * Worker threads that run one of our modules. The worker's own code is plain JavaScript evaluated
 * from a string (so it runs the same under tsx, vitest and the built service); it imports the
 * module through `load()`, with tsx's ESM API when the service itself runs from TypeScript sources.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads';

const LOADER_SOURCE = `
const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads');
if (workerData.nice) {
  // Linux: setpriority on a thread id renices that thread alone (/proc/thread-self names it).
  try {
    const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
    if (tid > 0) require('node:os').setPriority(tid, workerData.nice);
  } catch {}
}
let loaded;
const load = () => (loaded ??= workerData.tsxApi
  ? import(workerData.tsxApi).then(({ tsImport }) => tsImport(workerData.moduleUrl, workerData.moduleUrl))
  : import(workerData.moduleUrl));
`;

/**
 * Starts a worker running `source`, which may call `load()` for the module at `modulePath`
 * (relative to this directory, without extension, e.g. '../git/packForm'). Unreferenced: an idle
 * worker never holds the process open.
 *
 * `nice` (Linux; 1-19) lowers the thread's scheduling priority: background work then takes the
 * cores the request thread leaves, instead of taking turns with it when every core is busy (the
 * event loop's delay counts the time the kernel gives to other threads).
 */
export function startModuleWorker(modulePath: string, source: string, options: { nice?: number; resourceLimits?: ResourceLimits } = {}): Worker {
  const moduleUrl = new URL(modulePath + (import.meta.url.endsWith('.ts') ? '.ts' : '.js'), import.meta.url).href;
  // tsx's ESM API (its CommonJS build imports a file it does not ship).
  const tsxApi = moduleUrl.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : null;
  const worker = new Worker(LOADER_SOURCE + source, { eval: true, workerData: { moduleUrl, tsxApi, nice: options.nice ?? 0 }, resourceLimits: options.resourceLimits });
  worker.unref();
  return worker;
}
