/**
 * The threads searches read and scan blobs on (src/repo/search/threads.ts): a pool of worker
 * threads, each of which opens the store itself (AsyncStore.threadAccess) and runs batches of files
 * against a query, as `git grep` reads and scans on several threads. The request thread keeps
 * walking the tree and putting the answers together, so it stays free for other requests.
 *
 * Started on the first search and kept while searches come (unreferenced while idle, so they never
 * hold the process open); after IDLE_MS without a search they stop, giving back their memory (about
 * 50 MB each under tsx). A worker takes a moment to start and compile its modules: until it is
 * ready, searches run on the request thread as they would without the pool. The workers run at the
 * request thread's priority (a search is a request someone waits on); there are at most two,
 * whatever the cores.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { SearchJob, SearchJobResult, SearchThreads } from '../repo/search/threads.js';
import { startModuleWorker } from './moduleWorker.js';

/** Worker threads at most: two keep two cores busy; more would take cores other requests need. */
const WORKERS_MAX = 2;
/** Batches each worker has under way: one running, one waiting, so it never waits for the next. */
const BATCHES_PER_WORKER = 2;
/** Workers stop after this long without a batch. */
const IDLE_MS = 30_000;

/** The workers' code (src/service/moduleWorker.ts runs it; `load()` imports src/repo/search/threads.ts). */
const WORKER_SOURCE = `
parentPort.on('message', async ({ warm, id, job }) => {
  if (warm) return load().then(() => parentPort.postMessage({ warm: true }), () => {});
  try {
    const { runSearchJob } = await load();
    parentPort.postMessage({ id, result: await runSearchJob(job) });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});
`;

interface PendingJob {
  resolve(result: SearchJobResult): void;
  reject(error: Error): void;
}

interface PooledWorker {
  worker: Worker;
  ready: boolean;
  jobs: Map<number, PendingJob>;
}

export class SearchThreadPool implements SearchThreads {
  private readonly workers: PooledWorker[] = [];
  private nextId = 1;
  private closed = false;
  private readonly size = Math.min(WORKERS_MAX, availableParallelism());
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly idleMs: number;

  constructor(options: { idleMs?: number } = {}) {
    this.idleMs = options.idleMs ?? IDLE_MS;
  }

  /** Worker threads started (ready or not). */
  get running(): number {
    return this.workers.length;
  }

  get parallelism(): number {
    return this.size * BATCHES_PER_WORKER;
  }

  available(): boolean {
    if (this.closed) return false;
    while (this.workers.length < this.size) this.workers.push(this.spawn());
    this.stillWanted();
    return this.workers.every((pooled) => pooled.ready);
  }

  /** Pushes back the idle stop: the pool is in use. */
  private stillWanted(): void {
    this.idleTimer?.refresh();
    if (this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.workers.some((pooled) => pooled.jobs.size > 0)) return this.stillWanted();
      for (const pooled of this.workers.splice(0)) void pooled.worker.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  run(job: SearchJob): Promise<SearchJobResult> {
    if (this.closed) return Promise.reject(new Error('the search threads are closed'));
    // The worker with the fewest batches under way.
    let pooled = this.workers.find((candidate) => candidate.ready);
    if (!pooled) return Promise.reject(new Error('no search thread is ready'));
    for (const candidate of this.workers) if (candidate.ready && candidate.jobs.size < pooled.jobs.size) pooled = candidate;
    const chosen = pooled;
    const id = this.nextId++;
    this.stillWanted();
    return new Promise<SearchJobResult>((resolve, reject) => {
      if (chosen.jobs.size === 0) chosen.worker.ref();
      chosen.jobs.set(id, { resolve, reject });
      // The ids travel as a buffer of their own, moved to the worker rather than copied.
      const oids = new Uint8Array(job.oids);
      chosen.worker.postMessage({ id, job: { ...job, oids } }, [oids.buffer]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const workers = this.workers.splice(0);
    await Promise.all(workers.map((pooled) => pooled.worker.terminate()));
  }

  private spawn(): PooledWorker {
    const worker = startModuleWorker('../repo/search/threads', WORKER_SOURCE);
    const pooled: PooledWorker = { worker, ready: false, jobs: new Map() };
    worker.on('message', (answer: { warm?: boolean; id?: number; result?: SearchJobResult; error?: string }) => {
      if (answer.warm) {
        pooled.ready = true;
        return;
      }
      const job = pooled.jobs.get(answer.id!);
      if (!job) return;
      pooled.jobs.delete(answer.id!);
      if (pooled.jobs.size === 0) worker.unref();
      if (answer.error !== undefined) job.reject(new Error(`search failed on its thread: ${answer.error}`));
      else job.resolve(answer.result!);
    });
    const fail = (error: Error) => {
      // A worker stopped for idleness is no longer in the pool and has no batch.
      const index = this.workers.indexOf(pooled);
      if (index >= 0) this.workers.splice(index, 1);
      pooled.ready = false;
      for (const job of pooled.jobs.values()) job.reject(error);
      pooled.jobs.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`a search thread exited (code ${code})`)));
    worker.postMessage({ warm: true });
    return pooled;
  }
}
