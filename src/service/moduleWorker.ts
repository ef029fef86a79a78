/**
 * Worker threads that run one of our modules. The worker's own code is plain JavaScript evaluated
 * from a string (so it runs the same under tsx, vitest and the built service); it imports the
 * module through `load()`, with tsx's ESM API when the service itself runs from TypeScript sources.
 */
import { Worker } from 'node:worker_threads';

const LOADER_SOURCE = `
const { parentPort, workerData, receiveMessageOnPort } = require('node:worker_threads');
let loaded;
const load = () => (loaded ??= workerData.tsxApi
  ? import(workerData.tsxApi).then(({ tsImport }) => tsImport(workerData.moduleUrl, workerData.moduleUrl))
  : import(workerData.moduleUrl));
`;

/**
 * Starts a worker running `source`, which may call `load()` for the module at `modulePath`
 * (relative to this directory, without extension, e.g. '../git/packForm'). Unreferenced: an idle
 * worker never holds the process open.
 */
export function startModuleWorker(modulePath: string, source: string): Worker {
  const moduleUrl = new URL(modulePath + (import.meta.url.endsWith('.ts') ? '.ts' : '.js'), import.meta.url).href;
  // tsx's ESM API (its CommonJS build imports a file it does not ship).
  const tsxApi = moduleUrl.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : null;
  const worker = new Worker(LOADER_SOURCE + source, { eval: true, workerData: { moduleUrl, tsxApi } });
  worker.unref();
  return worker;
}
