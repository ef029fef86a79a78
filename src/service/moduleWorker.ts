/**
 * Worker threads that run one of our modules. The worker's own code is plain JavaScript evaluated
 * from a string (so it runs the same under tsx, vitest and the built service); it imports the
 * module through `load()`.
 *
 * When the service runs from TypeScript sources, the module and what it imports are bundled once
 * per process with esbuild (which tsx itself uses to compile) and the worker imports that bundle
 * from a data: URL. Loading the sources through tsx's ESM API instead starts a loader-hooks thread
 * in every worker and compiles module by module: 150-350 ms before a pushed pack's check could
 * begin (bench/workerStart.ts: the pack checker's worker ready in 202 ms through tsx, 47 ms
 * bundled, medians on an idle machine). A
 * module whose graph imports a package (the store's LMDB, for one) is not bundled: it is loaded
 * through tsx, as is any module when esbuild fails.
 */
import { Worker, MessageChannel, type ResourceLimits } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { isBuiltin } from 'node:module';

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
const load = () => (loaded ??= (workerData.bundlePort
  ? new Promise((resolve) => workerData.bundlePort.once('message', (bundleUrl) => { workerData.bundlePort.close(); resolve(bundleUrl); }))
  : Promise.resolve(null)
).then((bundleUrl) => bundleUrl
  ? import(bundleUrl)
  : workerData.tsxApi
    ? import(workerData.tsxApi).then(({ tsImport }) => tsImport(workerData.moduleUrl, workerData.moduleUrl))
    : import(workerData.moduleUrl)));
`;

/** Each TypeScript module's bundle (a data: URL), or null when it is loaded through tsx; made once per process. */
const bundles = new Map<string, Promise<string | null>>();

/**
 * Starts a worker running `source`, which may call `load()` for the module at `modulePath`
 * (relative to this directory, without extension, e.g. '../git/packForm'). Unreferenced: an idle
 * worker never holds the process open.
 *
 * `nice` (Linux; 1-19) lowers the thread's scheduling priority: background work then takes the
 * cores the request thread leaves, instead of taking turns with it when every core is busy (the
 * event loop's delay counts the time the kernel gives to other threads).
 */
export function startModuleWorker(modulePath: string, source: string, options: { nice?: number; resourceLimits?: ResourceLimits; bundled?: boolean } = {}): Worker {
  const moduleUrl = new URL(modulePath + (import.meta.url.endsWith('.ts') ? '.ts' : '.js'), import.meta.url).href;
  const fromSources = moduleUrl.endsWith('.ts');
  // `bundled: false` loads the sources through tsx (bench/workerStart.ts compares the two).
  const bundled = fromSources && options.bundled !== false;
  // tsx's ESM API (its CommonJS build imports a file it does not ship).
  const tsxApi = fromSources ? import.meta.resolve('tsx/esm/api') : null;
  const channel = bundled ? new MessageChannel() : null;
  const worker = new Worker(LOADER_SOURCE + source, {
    eval: true,
    workerData: { moduleUrl, tsxApi, nice: options.nice ?? 0, bundlePort: channel?.port2 },
    transferList: channel ? [channel.port2] : [],
    resourceLimits: options.resourceLimits,
  });
  worker.unref();
  if (channel) {
    let bundle = bundles.get(moduleUrl);
    if (!bundle) bundles.set(moduleUrl, (bundle = bundleOf(moduleUrl)));
    void bundle.then((bundleUrl) => {
      channel.port1.postMessage(bundleUrl);
      channel.port1.close();
    });
  }
  return worker;
}

/**
 * The module at `moduleUrl` and everything it imports as one ES module in a data: URL, or null
 * when its graph imports a package or esbuild fails (the worker then loads it through tsx). Errors
 * thrown in it name the module's path (sourceURL), not the data: URL.
 */
async function bundleOf(moduleUrl: string): Promise<string | null> {
  try {
    const { build } = await import('esbuild');
    const path = fileURLToPath(moduleUrl);
    const result = await build({ entryPoints: [path], bundle: true, format: 'esm', platform: 'node', target: 'node20', packages: 'external', write: false, metafile: true, logLevel: 'silent' });
    const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports);
    // This module's own import of esbuild is bundled along with whatever starts workers; it fails
    // (and is caught) only in a worker that starts workers itself.
    const packageImported = imports.some((imported) => imported.external && !isBuiltin(imported.path) && !(imported.kind === 'dynamic-import' && imported.path === 'esbuild'));
    if (packageImported) return null;
    const code = `${result.outputFiles[0].text}\n//# sourceURL=${moduleUrl}.bundle.js\n`;
    return `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`;
  } catch {
    return null;
  }
}
