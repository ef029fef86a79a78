/**
 * Fills in the pack-ready form of every object stored without one (src/store/types.ts
 * DeflatedObject), on a worker thread after the write, so serving a clone copies zlib streams
 * instead of compressing each object while the client waits (bench/RESULTS.md measures the
 * difference). An object whose writer named a similar one (the version it replaced at the same
 * path) is tried as a delta against it first, as git's pack-objects would (src/git/packForm.ts),
 * while that base's chain is shorter than DELTA_DEPTH_MAX. An object with no named base, or whose
 * named base gave no delta worth keeping, goes through git's windowed delta search
 * (src/git/deltaWindow.ts): tried against the objects of its project and type written lately that
 * sort nearest it by name hash (the path its writer gave) and size; otherwise it is deflated whole.
 * At start it also pages through what an earlier run stored but did not get to (without hints:
 * sorted by type and size only). The forms are only an optimisation: packs deflate inline what lacks one.
 *
 * The worker holds the search's window (bodies and their indexes, bounded in bytes) across
 * batches; this thread only reads bodies, at most READ_SLICE_MS per turn of the event loop, and writes the forms in
 * the order the worker made them, so a base found in the same batch has its form before the delta.
 */
import type { Worker } from 'node:worker_threads';
import { compareForWindow, NAMED_IN_CALL, type DeltaWindowOptions, type WindowForm, type WindowObject } from '../git/deltaWindow.js';
import type { ObjectType, Oid } from '../git/oid.js';
import { DELTA_TARGET_BYTES_MIN, type PackForm } from '../git/packForm.js';
import { DELTA_DEPTH_MAX } from '../repo/wire/packedForms.js';
import type { AsyncStore, AsyncStoreReadTx, ObjectCursor } from '../store/asyncTypes.js';
import { startModuleWorker } from './moduleWorker.js';

/** git's default pack compression (core.compression -1 is zlib's default, level 6). */
const DEFLATE_LEVEL = 6;
/** Objects per round trip to the worker and per write transaction of results. */
const BATCH_OBJECTS = 512;
/** The worker's scheduling priority below the request thread's (src/service/moduleWorker.ts): its work can wait. */
const BACKGROUND_NICE = 10;
/** How long a batch's reads may hold the event loop before it gets a turn (bodies and bases are rebuilt from forms). */
const READ_SLICE_MS = 4;
/** Objects per batched read: small enough that READ_SLICE_MS is kept to, large enough that a networked store pays few round trips. */
const READ_CHUNK_OBJECTS = 32;
/** Bytes of bodies one batch reads at most (the rest waits for the next batch): what it holds, and hands the worker, at once. */
const READ_BYTES_MAX = 32 * 1024 * 1024;
/** Stored objects looked at per page of the scan at start (one short read of keys). */
const BACKLOG_PAGE_OBJECTS = 4096;

// A top-level binding is a global of the worker: not named \`window\`, which modules take for a browser's.
const WORKER_SOURCE = `
let searchWindow = null;
parentPort.on('message', async (message) => {
  const { DeltaWindow, packForm } = await load();
  let out;
  if (message.pair) {
    const form = packForm(message.pair.body, message.pair.base, message.level);
    out = [{ deflated: form.deflated, delta: form.deltaBytes === null ? null : { base: null, bytes: form.deltaBytes, depth: 0 } }];
  } else {
    searchWindow ??= new DeltaWindow(message.options);
    searchWindow.forget(message.forget);
    out = searchWindow.formsOf(message.objects);
  }
  parentPort.postMessage({ id: message.id, out }, out.map((form) => form.deflated.buffer));
});
`;

interface Pending {
  project: number;
  oid: Oid;
  similarTo: Oid | null;
  /** The name hash of the path it was written at (0: unknown). */
  nameHash: number;
  /** A retry after the store refused its delta: deflated whole, not searched. */
  whole: boolean;
  /** When it was first queued (performance.now()): the queue's head bounds the wait (WAIT_MAX_MS). */
  queuedAt: number;
  /**
   * Does not wait for its named base even when the base is in its batch: set when a whole batch
   * waited. Without it, objects that name each other in a cycle would wait for each other forever,
   * and the drain would spin without ever giving the event loop a turn. (A hint naming the object
   * itself never gets here: the stores drop it.)
   */
  waited?: boolean;
}

/** What the search takes of one object, and the queue entry it came from. */
interface Read extends WindowObject {
  item: Pending;
  /** Its named base's key, when that is an object of the same batch (its form is made in the same call, before it). */
  namedInBatch?: string;
  /** Its project and id as one string (formKey), the key every walk over the batch looks it up by. */
  key: string;
}

/**
 * An idle worker is let go after this long: its heap (the window of a large backlog, hundreds of
 * MB after 100,000 new objects) goes with it, and the next batch starts a new one (~0.2 s).
 */
const WORKER_IDLE_MS = 10_000;
/**
 * The worker's young generation (V8's default is 48 MB per thread): each batch's bodies arrive as
 * fresh copies and die with the batch, so a small nursery is scavenged often and cheaply, and the
 * process holds less (the archive test's peak 234-269 MB against 276-310 MB; a 30,000-object backlog
 * took as long).
 */
const DEFLATE_WORKER_YOUNG_MB = 8;
/**
 * The cache yields to writers: objects wait until no write has stored any for QUIET_MS, so a client
 * writing and committing in a loop is not slowed by the reads, the worker's search and the durable
 * writes of forms between its requests (on two cores, the server's CPU per 1-file write and commit
 * at 100,000 files was 8.6-8.8 ms with them and 4.5-5.8 ms without; README "Pack-ready forms").
 * The wait is bounded, so forms keep up under writes that never pause: the oldest waiting object
 * waits at most WAIT_MAX_MS, and QUEUE_START_OBJECTS waiting (an import) start at once. A drain
 * under way stops between batches when the wait applies again. A clone meanwhile deflates what
 * still lacks a form as it streams.
 */
const QUIET_MS = 100;
const WAIT_MAX_MS = 5_000;
const QUEUE_START_OBJECTS = 8 * BATCH_OBJECTS;
/**
 * Objects the queue holds at most (some 200 bytes each). Under writes the cache cannot keep up
 * with (32 clients writing one project on PostgreSQL on two cores: the backlog grew by some 800
 * objects a second for as long as they wrote), what comes past it is not queued, and once the
 * queue runs short the cache scans the store for objects without a form, as at start: the memory
 * stays bounded, and every object still gets its form (without its writer's hint) once the writes let up.
 */
const QUEUE_OBJECTS_MAX = 100_000;

export class DeflateCache {
  private readonly queue: Pending[] = [];
  private worker: Worker | null = null;
  /** Batches posted to the worker and not yet answered. */
  private posted = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private gatherTimer: NodeJS.Timeout | null = null;
  /** When a write last stored objects (performance.now()). */
  private lastWriteAt = -Infinity;
  private running = false;
  /** Objects of the batch being read, searched or stored. */
  private inFlight = 0;
  private stopped = false;
  private batchId = 0;
  private idleWaiters: Array<() => void> = [];
  /** Where the scan for what earlier runs left without a form goes on; undefined when it is done. */
  private backlogAfter: ObjectCursor | null | undefined = undefined;
  /** Objects were left out of a full queue (QUEUE_OBJECTS_MAX) since the last scan began. */
  private overflowed = false;
  /** Objects whose delta the store refused since the last batch, and their bases: the worker's window drops them. */
  private refused: Array<{ project: number; oid: Oid }> = [];
  private readonly windowOptions: DeltaWindowOptions = { depthMax: DELTA_DEPTH_MAX, level: DEFLATE_LEVEL };

  constructor(
    private readonly store: AsyncStore,
    /** `quietMs` (QUIET_MS; 0: no waiting at all) and `waitMaxMs` (WAIT_MAX_MS): see QUIET_MS; `queueMax`: QUEUE_OBJECTS_MAX. */
    private readonly options: { workerIdleMs?: number; quietMs?: number; waitMaxMs?: number; queueMax?: number } = {},
  ) {
    // A backend without pack-ready forms has nothing for this cache to fill.
    if (!store.packForms) return;
    store.onObjectsStored((project, stored) => {
      if (this.stopped || stored.length === 0) return;
      const now = (this.lastWriteAt = performance.now());
      const room = (this.options.queueMax ?? QUEUE_OBJECTS_MAX) - this.queue.length;
      // A store that cannot be scanned for what lacks a form queues everything: the bound would lose forms for good.
      const taken = store.listUndeflated ? Math.max(0, Math.min(room, stored.length)) : stored.length;
      if (taken < stored.length) this.overflowed = true;
      for (let i = 0; i < taken; i++) {
        const { oid, similarTo, nameHash } = stored[i];
        this.queue.push({ project, oid, similarTo, nameHash: nameHash ?? 0, whole: false, queuedAt: now });
      }
      this.gather();
    });
  }

  /** Starts the scan for what earlier runs left without a pack-ready form, then works in the background. */
  start(): void {
    this.stopped = false;
    if (!this.store.packForms || !this.store.listUndeflated) return;
    this.backlogAfter = null;
    this.overflowed = false;
    this.kick();
  }

  /** Objects waiting for a form or being given one, plus one while a scan is under way or due (objects were left out of a full queue). */
  get backlog(): number {
    return this.queue.length + this.inFlight + (this.backlogAfter !== undefined || this.overflowed ? 1 : 0);
  }

  /** Resolves when the queue is empty and the scan at start done (for benchmarks and tests). */
  idle(): Promise<void> {
    if (this.backlog === 0 && !this.running) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    // Whoever waits for the forms wants them now: no waiting for writes to pause (waitMs()).
    if (this.gatherTimer) this.kick();
    return done;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    this.queue.length = 0;
    this.backlogAfter = undefined;
    this.overflowed = false;
    while (this.running) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.worker?.terminate();
    this.worker = null;
  }

  /** Starts on the queue once the wait of QUIET_MS is over (a running drain looks again between its batches). */
  private gather(): void {
    if (this.running || this.gatherTimer) return;
    const waitMs = this.waitMs();
    if (waitMs <= 0) return this.kick();
    this.gatherTimer = setTimeout(() => {
      this.gatherTimer = null;
      this.gather();
    }, waitMs);
    // Forms are optional (the scan at the next start finds what lacks one): waiting never holds the process open.
    this.gatherTimer.unref();
  }

  /** How long the queue should wait still (QUIET_MS); 0 or less: start now. */
  private waitMs(): number {
    const quietMs = this.options.quietMs ?? QUIET_MS;
    // Whoever waits for the forms (idle()) wants them now.
    if (quietMs <= 0 || this.idleWaiters.length > 0 || this.queue.length >= QUEUE_START_OBJECTS) return 0;
    const now = performance.now();
    const oldest = this.queue[0]?.queuedAt ?? now;
    return Math.min(this.lastWriteAt + quietMs, oldest + (this.options.waitMaxMs ?? WAIT_MAX_MS)) - now;
  }

  private kick(): void {
    if (this.gatherTimer) clearTimeout(this.gatherTimer);
    this.gatherTimer = null;
    if (this.running || this.stopped || this.backlog === 0) return;
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.backlog > 0 && !this.stopped) this.gather();
      else for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
  }

  /** Queues a page of the scan (at start, or after objects were left out of a full queue) when the queue runs short of a batch. */
  private async readBacklogPage(): Promise<void> {
    if (this.queue.length >= BATCH_OBJECTS) return;
    if (this.backlogAfter === undefined && this.overflowed && this.store.listUndeflated) {
      // From the first key: what was left out lies anywhere in the store.
      this.overflowed = false;
      this.backlogAfter = null;
    }
    if (this.backlogAfter === undefined) return;
    try {
      const page = await this.store.listUndeflated!(this.backlogAfter, BACKLOG_PAGE_OBJECTS);
      if (this.stopped) return;
      const now = performance.now();
      for (const { project, oid } of page.undeflated) this.queue.push({ project, oid, similarTo: null, nameHash: 0, whole: false, queuedAt: now });
      this.backlogAfter = page.next ?? undefined;
    } catch {
      // A closing store: start() scans again next time.
      this.backlogAfter = undefined;
    }
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      await this.readBacklogPage();
      if (this.stopped) return;
      if (this.queue.length === 0) {
        if (this.backlogAfter === undefined) return;
        // A page of objects that all have forms: the loop gets a turn before the next page.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      // Writes came again meanwhile: the rest waits for them to pause (gather() after the drain).
      if (this.waitMs() > 0) return;
      const batch = this.queue.splice(0, BATCH_OBJECTS);
      this.inFlight = batch.length;
      try {
        if (!(await this.formBatch(batch))) return;
      } finally {
        this.inFlight = 0;
      }
    }
  }

  /** Reads, searches and stores the forms of one batch; false when the cache should stop for now. */
  private async formBatch(batch: Pending[]): Promise<boolean> {
    const reads: Read[] = [];
    // An object whose named base is in this batch gets its form in the same call, after the base's (readBatch).
    const inBatch = new Set(batch.map((item) => formKey(item.project, item.oid)));
    const later: Pending[] = [];
    try {
      await this.readBatch(batch, inBatch, reads, later);
    } catch {
      // A store that cannot be read now (a database restarting, a closing store): the batch goes
      // without forms (start() finds them later; clones deflate them meanwhile), as a failed write's does.
      return false;
    }
    if (reads.length === 0) {
      // Nothing could be read: the batch's first chunk all waits for bases that wait too (objects
      // naming each other in a cycle). They, and whatever the read's time slice left, stop waiting,
      // and the loop gets a turn before they are read.
      this.queue.unshift(...later.map((item) => ({ ...item, waited: true })));
      this.inFlight -= later.length;
      await new Promise((resolve) => setImmediate(resolve));
      return true;
    }
    this.queue.unshift(...later);
    this.inFlight -= later.length;
    // git's order for the search (a base found among them comes, and is stored, before its delta),
    // after the named bases of the batch: each version of a chain written in a row comes after the one it replaced.
    const levels = chainLevels(reads);
    reads.sort((a, b) => levels.get(a)! - levels.get(b)! || compareForWindow(a, b));
    let forms: WindowForm[];
    try {
      forms = await this.searchForms(reads);
    } catch {
      // The worker failed (it is started again next time, with an empty window); packs deflate inline meanwhile.
      this.worker = null;
      return false;
    }
    if (this.stopped) return false;
    try {
      // Collected, not queued, inside the callback: a store may run it more than once.
      const refused = await this.store.write(async (tx) => {
        const refused: Array<{ item: Pending; base: Oid }> = [];
        // A wave's deltas are put at once (on PostgreSQL each checks its base in a round trip of
        // its own, which one at a time bounded the drain); each names a base put in an earlier wave, or stored.
        for (const wave of formWaves(reads, forms)) {
          const deltas: Array<Promise<{ item: Pending; base: Oid } | null>> = [];
          for (const index of wave) {
            const { item } = reads[index];
            const project = tx.project(item.project);
            const { deflated, delta } = forms[index];
            const stream = Buffer.from(deflated.buffer, deflated.byteOffset, deflated.byteLength);
            if (!delta) {
              project.putDeflated!(item.oid, stream);
              continue;
            }
            const form = { base: Buffer.from(delta.base.buffer, delta.base.byteOffset, delta.base.byteLength), bytes: delta.bytes, depth: delta.depth };
            // Refused when the base's form is not what the search saw: the object is tried again, whole.
            deltas.push(project.putDeflatedDelta!(item.oid, form, stream).then((kept) => (kept ? null : { item, base: form.base })));
          }
          // Every put settled before the callback goes on or fails: none runs on after it.
          const settled = await Promise.allSettled(deltas);
          for (const outcome of settled) {
            if (outcome.status === 'rejected') throw outcome.reason;
            if (outcome.value) refused.push(outcome.value);
          }
        }
        return refused;
      });
      // Neither is a base the window can vouch for now: the base's form is not what it believed.
      this.refused.push(...refused.flatMap(({ item, base }) => [{ project: item.project, oid: item.oid }, { project: item.project, oid: base }]));
      this.queue.push(...refused.map(({ item }) => ({ ...item, similarTo: null, whole: true })));
    } catch {
      // A full disk or a closing store: the forms are optional, and start() picks the rest up later.
      // The window holds objects that got no form; deltas on them are refused and retried whole.
      return false;
    }
    return true;
  }

  /**
   * Reads what `batch` needs into `reads`, in chunks, the event loop given a turn whenever a slice of
   * READ_SLICE_MS is up, leaving in `later` what waits for the next batch: what is past
   * READ_BYTES_MAX, and an object whose named base is in the batch but was not read (past it, or it
   * had a form already), which the next batch reads with the base's stored form.
   *
   * The batch is read whole rather than cut where a slice ends: cut, a batch on PostgreSQL (whose
   * reads are round trips) took one or two chunks, each batch paid a trip to the worker and a write
   * of its own, and under 32 clients writing the forms fell behind for good (README "Pack-ready forms").
   */
  private async readBatch(batch: Pending[], inBatch: Set<string>, reads: Read[], later: Pending[]): Promise<void> {
    const read: Read[] = [];
    let bytes = 0;
    await this.store.read(async (tx) => {
      let sliceEnd = performance.now() + READ_SLICE_MS;
      for (let at = 0; at < batch.length; at += READ_CHUNK_OBJECTS) {
        if (at > 0 && (bytes > READ_BYTES_MAX || this.stopped)) {
          later.push(...batch.slice(at));
          break;
        }
        if (performance.now() > sliceEnd) {
          await new Promise((resolve) => setImmediate(resolve));
          sliceEnd = performance.now() + READ_SLICE_MS;
        }
        const byProject = new Map<number, Pending[]>();
        for (const item of batch.slice(at, at + READ_CHUNK_OBJECTS)) byProject.set(item.project, [...(byProject.get(item.project) ?? []), item]);
        for (const [project, items] of byProject) {
          for (const object of await readForDeflate(tx, project, items, inBatch)) {
            read.push(object);
            bytes += object.body.length + (object.named?.body.length ?? 0);
          }
        }
      }
    });
    const byKey = new Map(read.map((object) => [object.key, object]));
    const kept = new Map<Read, boolean>();
    for (const object of read) {
      // Kept unless its chain of named bases in the batch reaches one that was not read (a cycle
      // is kept: the worker gives the first of a cycle it meets no named base).
      const { path, stop, cycle } = chainUp(object, (at) => (at.namedInBatch ? byKey.get(at.namedInBatch) : null), (at) => kept.has(at));
      const fate = stop === undefined ? false : stop === null || cycle ? true : kept.get(stop)!;
      for (const step of path) kept.set(step, fate);
    }
    for (const object of read) {
      if (!kept.get(object)) {
        later.push(object.item);
        continue;
      }
      const base = object.namedInBatch && byKey.get(object.namedInBatch);
      if (base && base.type === object.type) object.named = { oid: base.oid, body: base.body, depth: NAMED_IN_CALL };
      reads.push(object);
    }
  }

  /** A pack-ready form of `body` against `base`, made on the worker (upload-pack's thin deltas of large objects). */
  async formOffLoop(body: Buffer, base: Buffer): Promise<PackForm> {
    if (this.stopped) throw new Error('the deflate cache is stopped');
    const [form] = await this.post({ pair: { body, base }, level: DEFLATE_LEVEL });
    return { deflated: Buffer.from(form.deflated.buffer, form.deflated.byteOffset, form.deflated.byteLength), deltaBytes: form.delta?.bytes ?? null };
  }

  private searchForms(reads: Read[]): Promise<WindowForm[]> {
    const forget = this.refused.splice(0);
    const objects: WindowObject[] = reads.map(({ project, oid, type, nameHash, body, named, whole }) => ({ project, oid, type, nameHash, body, named, whole }));
    return this.post({ objects, forget, options: this.windowOptions });
  }

  /** Whether a worker thread is running (it is let go when idle). */
  get workerRunning(): boolean {
    return this.worker !== null;
  }

  /** Lets the worker go once nothing has been posted to it for WORKER_IDLE_MS. */
  private releaseWhenIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.posted > 0 || !this.worker) return;
      const worker = this.worker;
      this.worker = null;
      void worker.terminate();
    }, this.options.workerIdleMs ?? WORKER_IDLE_MS);
    this.idleTimer.unref();
  }

  private post(message: object): Promise<WindowForm[]> {
    const worker = (this.worker ??= startModuleWorker('../git/deltaWindow', WORKER_SOURCE, { nice: BACKGROUND_NICE, resourceLimits: { maxYoungGenerationSizeMb: DEFLATE_WORKER_YOUNG_MB } }));
    const id = ++this.batchId;
    this.posted++;
    return new Promise<WindowForm[]>((resolve, reject) => {
      const done = () => {
        this.posted--;
        this.releaseWhenIdle();
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const onMessage = (message: { id: number; out: WindowForm[] }) => {
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
      worker.postMessage({ id, ...message });
    });
  }
}

const formKey = (project: number, oid: Uint8Array) => `${project}/${Buffer.from(oid.buffer, oid.byteOffset, oid.byteLength).toString('hex')}`;

/**
 * The indexes of `reads` (in order) in runs whose forms may be put at once: no form in a run is a
 * delta on an object put in the same run, and no id comes twice in one.
 */
function formWaves(reads: readonly Read[], forms: readonly WindowForm[]): number[][] {
  const waves: number[][] = [];
  let wave: number[] = [];
  const inWave = new Set<string>();
  reads.forEach((read, index) => {
    const base = forms[index].delta?.base;
    if (inWave.has(read.key) || (base && inWave.has(formKey(read.project, base)))) {
      waves.push(wave);
      wave = [];
      inWave.clear();
    }
    wave.push(index);
    inWave.add(read.key);
  });
  if (wave.length > 0) waves.push(wave);
  return waves;
}

/**
 * Each read's place in the order of the worker's call: 0, or one more than its named base's when
 * that is in the batch (a cycle of objects naming each other is cut where it is entered).
 */
function chainLevels(reads: readonly Read[]): Map<Read, number> {
  const byKey = new Map(reads.map((read) => [read.key, read]));
  const levels = new Map<Read, number>();
  for (const read of reads) {
    const { path, stop, cycle } = chainUp(read, (at) => (at.named?.depth === NAMED_IN_CALL && at.namedInBatch ? byKey.get(at.namedInBatch) : null), (at) => levels.has(at));
    let level = stop && !cycle ? levels.get(stop)! + 1 : 0;
    for (let i = path.length - 1; i >= 0; i--) levels.set(path[i], level++);
  }
  return levels;
}

/**
 * From `start` up its chain of named bases (`baseOf`: null when it names none, undefined when the
 * one it names is not among those read) to the first that is `known`, met twice (`cycle`), or the
 * end: the objects passed on the way, and where it stopped (null or undefined: at the end, as
 * `baseOf` answered). Iterative: a batch's chain may be as long as the batch.
 */
function chainUp(start: Read, baseOf: (read: Read) => Read | null | undefined, known: (read: Read) => boolean): { path: Read[]; stop: Read | null | undefined; cycle: boolean } {
  const path: Read[] = [];
  const onPath = new Set<Read>();
  let at: Read | null | undefined = start;
  while (at && !known(at) && !onPath.has(at)) {
    path.push(at);
    onPath.add(at);
    at = baseOf(at);
  }
  return { path, stop: at, cycle: !!at && onPath.has(at) };
}

/**
 * What deflating `items` of one project needs, in three batched reads: which have no form yet, their
 * bodies, and for those with a named base the base's form (its depth) and body. A named base in
 * the batch (`inBatch`) is not read here: the read is marked (`namedInBatch`), and readBatch gives it that base.
 */
async function readForDeflate(tx: AsyncStoreReadTx, projectNumber: number, items: Pending[], inBatch: Set<string>): Promise<Read[]> {
  const project = tx.project(projectNumber);
  const forms = await project.getDeflated!(items.map((item) => item.oid));
  const missing = items.filter((_, i) => !forms[i]);
  const objects = await project.getObjects(missing.map((item) => item.oid));
  const found = missing.flatMap((item, i) => (objects[i] ? [{ item, object: objects[i]! }] : []));
  const named = found.filter(({ item, object }) => item.similarTo !== null && !item.whole && object.body.length >= DELTA_TARGET_BYTES_MIN);
  // The key of each named base that is in the batch, by the object naming it.
  const namedInBatch = new Map<Pending, string>();
  for (const { item } of named) {
    const key = formKey(projectNumber, item.similarTo!);
    if (!item.waited && inBatch.has(key)) namedInBatch.set(item, key);
  }
  // A delta base must have a form of its own, with room below the depth limit.
  const tried = named.filter(({ item }) => !namedInBatch.has(item));
  const baseForms = await project.getDeflated!(tried.map(({ item }) => item.similarTo!));
  const depths = new Map(tried.map(({ item }, i) => [item, baseForms[i] ? (baseForms[i]!.delta?.depth ?? 0) : DELTA_DEPTH_MAX]));
  const withBase = tried.filter(({ item }) => depths.get(item)! < DELTA_DEPTH_MAX);
  const baseObjects = await project.getObjects(withBase.map(({ item }) => item.similarTo!));
  const bases = new Map(withBase.map(({ item }, i) => [item, baseObjects[i]]));
  return found.map(({ item, object }) => {
    const base = bases.get(item);
    const read: Read = { item, project: projectNumber, oid: item.oid, type: object.type as ObjectType, nameHash: item.nameHash, body: object.body, named: null, whole: item.whole, key: formKey(projectNumber, item.oid) };
    if (base && base.type === object.type) read.named = { oid: item.similarTo!, body: base.body, depth: depths.get(item)! };
    read.namedInBatch = namedInBatch.get(item);
    return read;
  });
}
