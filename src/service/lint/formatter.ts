/**
 * Runs Prettier on a pool of worker threads, one per core (the default), or in this thread.
 * bench/lint.ts measures pool sizes against the main thread (bench/RESULTS.md, "Lint benchmark").
 * On the two-core machine measured, two workers, one worker and this thread were within the noise
 * of a shared machine (each was fastest in some of six runs); the pool keeps the event loop free,
 * where Prettier in this thread delays other requests by a file's formatting at a time.
 *
 * The worker is a few lines of plain JavaScript run with `eval`, so it needs no TypeScript loader
 * (the server runs under tsx, the tests under vitest); it imports Prettier by the URL this module
 * resolved, so it loads the same copy whatever the working directory.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PrettierOptions } from './prettierConfig.js';

export type FormatOutcome =
  | { kind: 'formatted'; text: string }
  /** Prettier could not parse the file; `line`/`column` are 1-based when Prettier knew them. */
  | { kind: 'syntax'; message: string; line: number | null; column: number | null }
  /** Prettier refused the options (a bad value in the project's config). */
  | { kind: 'options'; message: string };

export interface Formatter {
  format(source: string, options: PrettierOptions & { parser: string; filepath: string }): Promise<FormatOutcome>;
  close(): Promise<void>;
}

interface PrettierError {
  name?: string;
  message?: string;
  loc?: { start?: { line?: number; column?: number } };
}

function outcomeOfError(error: PrettierError): FormatOutcome {
  const message = String(error?.message ?? error).split('\n')[0];
  const start = error?.loc?.start;
  if (error?.name === 'SyntaxError' || start) {
    return { kind: 'syntax', message: message.replace(/ \(\d+:\d+\)$/, ''), line: start?.line ?? null, column: start?.column ?? null };
  }
  return { kind: 'options', message };
}

/**
 * Prettier in this thread, one file per turn of the event loop: formats wait in a queue and each
 * starts from setImmediate, so I/O (other requests) runs between any two files and a lint holds the
 * loop for one file's formatting at a time, not for a burst of them.
 */
export class InlineFormatter implements Formatter {
  private prettier: Promise<typeof import('prettier')> | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  format(source: string, options: PrettierOptions & { parser: string; filepath: string }): Promise<FormatOutcome> {
    const turn = this.tail.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => this.formatNow(source, options));
    this.tail = turn;
    return turn;
  }

  async close(): Promise<void> {
    await this.tail;
  }

  private async formatNow(source: string, options: PrettierOptions & { parser: string; filepath: string }): Promise<FormatOutcome> {
    this.prettier ??= import('prettier');
    const prettier = await this.prettier;
    try {
      return { kind: 'formatted', text: await prettier.format(source, options) };
    } catch (error) {
      return outcomeOfError(error as PrettierError);
    }
  }
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
let prettier;
parentPort.on('message', async ({ id, source, options }) => {
  try {
    prettier ??= import(workerData.prettierUrl).then((module) => (module.format ? module : module.default));
    const text = await (await prettier).format(source, options);
    parentPort.postMessage({ id, text });
  } catch (error) {
    const start = error && error.loc && error.loc.start;
    parentPort.postMessage({
      id,
      error: {
        name: error && error.name,
        message: String((error && error.message) || error),
        loc: start ? { start: { line: start.line, column: start.column } } : undefined,
      },
    });
  }
});
`;

interface PendingJob {
  resolve(outcome: FormatOutcome): void;
  reject(error: Error): void;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, PendingJob>;
}

/** Prettier on `size` worker threads; a job goes to the worker with the fewest jobs in flight. */
export class WorkerPoolFormatter implements Formatter {
  private readonly workers: Array<PoolWorker | null>;
  private nextId = 1;
  private closed = false;

  constructor(readonly size: number = defaultPoolSize()) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError('a pool needs at least one worker');
    this.workers = new Array<PoolWorker | null>(size).fill(null);
  }

  format(source: string, options: PrettierOptions & { parser: string; filepath: string }): Promise<FormatOutcome> {
    if (this.closed) return Promise.reject(new Error('the formatter is closed'));
    const slot = this.leastBusy();
    const poolWorker = (this.workers[slot] ??= this.spawn(slot));
    const id = this.nextId++;
    return new Promise<FormatOutcome>((resolve, reject) => {
      if (poolWorker.pending.size === 0) poolWorker.worker.ref();
      poolWorker.pending.set(id, { resolve, reject });
      poolWorker.worker.postMessage({ id, source, options });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const running = this.workers.filter((entry): entry is PoolWorker => entry !== null);
    this.workers.fill(null);
    await Promise.all(running.map((entry) => entry.worker.terminate()));
  }

  private leastBusy(): number {
    let best = 0;
    let bestLoad = Infinity;
    for (let i = 0; i < this.workers.length; i++) {
      const load = this.workers[i]?.pending.size ?? 0;
      if (load < bestLoad) {
        best = i;
        bestLoad = load;
      }
    }
    return best;
  }

  private spawn(slot: number): PoolWorker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { prettierUrl: prettierUrl() } });
    const entry: PoolWorker = { worker, pending: new Map() };
    // An idle worker must not keep the process alive; one with jobs in flight must.
    worker.unref();
    worker.on('message', (message: { id: number; text?: string; error?: PrettierError }) => {
      const job = entry.pending.get(message.id);
      if (!job) return;
      entry.pending.delete(message.id);
      if (entry.pending.size === 0) worker.unref();
      job.resolve(message.error ? outcomeOfError(message.error) : { kind: 'formatted', text: message.text ?? '' });
    });
    const fail = (error: Error) => {
      if (this.workers[slot] === entry) this.workers[slot] = null;
      for (const job of entry.pending.values()) job.reject(error);
      entry.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`a Prettier worker exited (code ${code})`)));
    return entry;
  }
}

/** Where Prettier is, for the workers (import.meta.resolve is missing under some test runners). */
function prettierUrl(): string {
  if (typeof import.meta.resolve === 'function') return import.meta.resolve('prettier');
  return pathToFileURL(createRequire(import.meta.url).resolve('prettier')).href;
}

/** One worker per core. */
export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism());
}
