/**
 * Fills in the pack-ready form of every object stored without one (src/store/types.ts
 * DeflatedObject), on a worker thread after the write, so serving a clone copies zlib streams
 * instead of compressing each object while the client waits (bench/RESULTS.md measures the
 * difference). An object whose writer named a similar one (the version it replaced at the same
 * path) is tried as a delta against it, as git's pack-objects would (src/git/packForm.ts), while
 * that base's chain is shorter than DELTA_DEPTH_MAX; otherwise, and when the delta is not worth it,
 * it is deflated whole. At start it also picks up whatever an earlier run stored but did not get
 * to (without hints: whole). The forms are only an optimisation: packs deflate inline what lacks one.
 */
import type { Worker } from 'node:worker_threads';
import { oidToHex, type Oid } from '../git/oid.js';
import { DELTA_TARGET_BYTES_MIN, type PackForm } from '../git/packForm.js';
import { DELTA_DEPTH_MAX } from '../repo/wire/packedForms.js';
import type { AsyncStore, AsyncStoreReadTx } from '../store/asyncTypes.js';
import type { Store } from '../store/types.js';
import { startModuleWorker } from './moduleWorker.js';

/** git's default pack compression (core.compression -1 is zlib's default, level 6). */
const DEFLATE_LEVEL = 6;
/** Objects per round trip to the worker and per write transaction of results. */
const BATCH_OBJECTS = 512;
/** The worker's scheduling priority below the request thread's (src/service/moduleWorker.ts): its work can wait. */
const BACKGROUND_NICE = 10;
/** How long one batch's reads may hold the event loop (bodies and bases are rebuilt from forms). */
const READ_SLICE_MS = 4;
/** Objects per batched read: small enough that READ_SLICE_MS is kept to, large enough that a networked store pays few round trips. */
const READ_CHUNK_OBJECTS = 32;

const WORKER_SOURCE = `
parentPort.on('message', async ({ id, bodies, bases, level }) => {
  const { packForm } = await load();
  const out = bodies.map((body, i) => packForm(body, bases[i], level));
  parentPort.postMessage({ id, out }, out.map((form) => form.deflated.buffer));
});
`;

interface Pending {
  project: number;
  oid: Oid;
  similarTo: Oid | null;
}

interface Form {
  deflated: Uint8Array;
  deltaBytes: number | null;
}

export class DeflateCache {
  private readonly queue: Pending[] = [];
  private worker: Worker | null = null;
  private running = false;
  private stopped = false;
  private batchId = 0;
  private idleWaiters: Array<() => void> = [];

  /**
   * `backlogSource` lists what earlier runs stored without a form: the one lookup the asynchronous
   * interface has no call for (it is a scan of every project), so the LMDB store answers it.
   */
  constructor(
    private readonly store: AsyncStore,
    private readonly backlogSource: Pick<Store, 'listUndeflated'>,
  ) {
    // A backend without pack-ready forms has nothing for this cache to fill.
    if (!store.packForms) return;
    store.onObjectsStored((project, stored) => {
      if (this.stopped) return;
      for (const { oid, similarTo } of stored) this.queue.push({ project, oid, similarTo });
      this.kick();
    });
  }

  /** Queues what earlier runs left without a pack-ready form, then works in the background. */
  start(): void {
    this.stopped = false;
    if (!this.store.packForms) return;
    for (const pending of this.backlogSource.listUndeflated(Number.MAX_SAFE_INTEGER)) this.queue.push({ ...pending, similarTo: null });
    this.kick();
  }

  get backlog(): number {
    return this.queue.length;
  }

  /** Resolves when the queue is empty (for benchmarks and tests). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && !this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    while (this.running) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.worker?.terminate();
    this.worker = null;
  }

  private kick(): void {
    if (this.running || this.stopped || this.queue.length === 0) return;
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.queue.length > 0 && !this.stopped) this.kick();
      else for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      const batch = this.queue.splice(0, BATCH_OBJECTS);
      const bodies: Buffer[] = [];
      const bases: Array<Buffer | null> = [];
      const kept: Array<Pending & { baseDepth: number }> = [];
      // An object whose base is in this batch waits for the next one, when the base has its form.
      const inBatch = new Set(batch.map((item) => `${item.project}/${oidToHex(item.oid)}`));
      const later: Pending[] = [];
      const readEnd = performance.now() + READ_SLICE_MS;
      await this.store.read(async (tx) => {
        for (let at = 0; at < batch.length; at += READ_CHUNK_OBJECTS) {
          // Reading rebuilds bodies (and bases) from their forms: the rest waits for the next turn.
          if (at > 0 && performance.now() > readEnd) {
            later.push(...batch.slice(at));
            break;
          }
          const byProject = new Map<number, Pending[]>();
          for (const item of batch.slice(at, at + READ_CHUNK_OBJECTS)) {
            if (item.similarTo && inBatch.has(`${item.project}/${oidToHex(item.similarTo)}`)) later.push(item);
            else byProject.set(item.project, [...(byProject.get(item.project) ?? []), item]);
          }
          for (const [project, items] of byProject) {
            for (const read of await readForDeflate(tx, project, items)) {
              bodies.push(read.body);
              bases.push(read.base);
              kept.push(read.item);
            }
          }
        }
      });
      this.queue.unshift(...later);
      if (kept.length === 0) continue;
      let forms: Form[];
      try {
        forms = await this.packForms(bodies, bases);
      } catch {
        // The worker failed (it is started again next time); packs deflate inline meanwhile.
        this.worker = null;
        return;
      }
      if (this.stopped) return;
      try {
        // Collected, not queued, inside the callback: a store may run it more than once.
        const refused = await this.store.write(async (tx) => {
          const refused: Pending[] = [];
          for (const [index, item] of kept.entries()) {
            const project = tx.project(item.project);
            const { deflated, deltaBytes } = forms[index];
            const stream = Buffer.from(deflated.buffer, deflated.byteOffset, deflated.byteLength);
            if (deltaBytes === null) {
              project.putDeflated!(item.oid, stream);
              continue;
            }
            const delta = { base: item.similarTo!, bytes: deltaBytes, depth: item.baseDepth + 1 };
            // Refused when the base's form changed meanwhile: the object is tried again, whole.
            if (!(await project.putDeflatedDelta!(item.oid, delta, stream))) refused.push({ project: item.project, oid: item.oid, similarTo: null });
          }
          return refused;
        });
        this.queue.push(...refused);
      } catch {
        // A full disk or a closing store: the forms are optional, and start() picks the rest up later.
        return;
      }
    }
  }

  /** A pack-ready form of `body` against `base`, made on the worker (upload-pack's thin deltas of large objects). */
  async formOffLoop(body: Buffer, base: Buffer): Promise<PackForm> {
    if (this.stopped) throw new Error('the deflate cache is stopped');
    const [form] = await this.packForms([body], [base]);
    return { deflated: Buffer.from(form.deflated.buffer, form.deflated.byteOffset, form.deflated.byteLength), deltaBytes: form.deltaBytes };
  }

  private packForms(bodies: Buffer[], bases: Array<Buffer | null>): Promise<Form[]> {
    const worker = (this.worker ??= startModuleWorker('../git/packForm', WORKER_SOURCE, { nice: BACKGROUND_NICE }));
    const id = ++this.batchId;
    return new Promise((resolve, reject) => {
      const done = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const onMessage = (message: { id: number; out: Form[] }) => {
        if (message.id !== id) return;
        done();
        resolve(message.out);
      };
      // The next batch starts a new worker.
      const forget = () => {
        if (this.worker === worker) this.worker = null;
      };
      const onError = (error: Error) => {
        done();
        forget();
        reject(error);
      };
      // Stopped (or crashed) with this batch unanswered.
      const onExit = () => {
        done();
        forget();
        reject(new Error('the deflate worker exited'));
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage({ id, bodies, bases, level: DEFLATE_LEVEL });
    });
  }
}

/**
 * What deflating `items` of one project needs, in three batched reads: which have no form yet, their
 * bodies, and for those tried as deltas the base's form (its depth) and body.
 */
async function readForDeflate(tx: AsyncStoreReadTx, projectNumber: number, items: Pending[]): Promise<Array<{ item: Pending & { baseDepth: number }; body: Buffer; base: Buffer | null }>> {
  const project = tx.project(projectNumber);
  const forms = await project.getDeflated!(items.map((item) => item.oid));
  const missing = items.filter((_, i) => !forms[i]);
  const objects = await project.getObjects(missing.map((item) => item.oid));
  const found = missing.flatMap((item, i) => (objects[i] ? [{ item, object: objects[i]! }] : []));
  // A delta base must have a form of its own, with room below the depth limit.
  const tried = found.filter(({ item, object }) => item.similarTo !== null && object.body.length >= DELTA_TARGET_BYTES_MIN);
  const baseForms = await project.getDeflated!(tried.map(({ item }) => item.similarTo!));
  const depths = new Map(tried.map(({ item }, i) => [item, baseForms[i] ? (baseForms[i]!.delta?.depth ?? 0) : DELTA_DEPTH_MAX]));
  const withBase = tried.filter(({ item }) => depths.get(item)! < DELTA_DEPTH_MAX);
  const baseObjects = await project.getObjects(withBase.map(({ item }) => item.similarTo!));
  const bases = new Map(withBase.map(({ item }, i) => [item, baseObjects[i]]));
  return found.map(({ item, object }) => {
    const base = bases.get(item);
    return { item: { ...item, baseDepth: depths.get(item) ?? DELTA_DEPTH_MAX }, body: object.body, base: base && base.type === object.type ? base.body : null };
  });
}
