/**
 * Garbage collection as a service (README "Garbage collection"): the command-line tool's
 * `treehouse gc` and the server's schedule both collect a project through `collect`, which keeps
 * the project's queued syncs' commits besides its refs and working trees.
 *
 * The schedule, off the request path: a project is collected once TREEHOUSE_GC_NEW_OBJECTS new
 * versions were stored in it since its last collection began (objects that replaced another at the
 * same path, `similarTo`: each leaves the version before it garbage or cold, which is what a
 * collection removes or keeps compactly; counted as writes commit, in this process), and every
 * TREEHOUSE_GC_INTERVAL_SECONDS each project whose version moved since its last collection is. An
 * import adds files at new paths and replaces no version: it begins no collection, which would find
 * nothing to do and have every write journal meanwhile. A scheduled collection begins at once and
 * runs when its grace period is over; at most BEGUN_MAX are begun at a time (the others wait their
 * turn, nothing is held for them), and they run one after another, in slices, so one process never
 * walks two projects at once.
 */
import type { Oid } from '../git/oid.js';
import {
  CollectionBusyError,
  CollectionLostError,
  collectGarbage,
  endStaleCollections,
  GarbageCollection,
  HEARTBEAT_STALE_MS,
  type CollectionPhase,
  type CollectionReport,
  type CollectOptions,
} from '../repo/gc/collect.js';
import type { FormOf } from '../repo/gc/newestWhole.js';
import type { AsyncStore } from '../store/asyncTypes.js';
import type { Config } from './config.js';
import type { ProjectRecord, Projects } from './projects.js';
import type { RemoteSync } from './remoteSync.js';

/** Collections the schedule has begun and not yet run (each journals its project's writes meanwhile). */
const BEGUN_MAX = 16;
/** Projects read per page by the periodic pass. */
const PROJECTS_PAGE = 200;

const lastKey = (seq: number) => `gc-last/${seq}`;

/** What the last collection of a project found; the periodic pass compares versions with it. */
interface LastCollection {
  /** The project's version when the collection began. */
  version: number;
  at: string;
  removedObjects: number;
  removedBytes: number;
}

interface Begun {
  collection: GarbageCollection;
  record: ProjectRecord;
  version: number;
  dueAt: number;
}

export class GarbageCollector {
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private staleTimer: NodeJS.Timeout | null = null;
  private abort = new AbortController();
  private worker: Promise<void> | null = null;
  private wakeWorker: (() => void) | null = null;
  /** New versions (objects stored with a `similarTo`) per project number since its last collection began. */
  private readonly versionsSince = new Map<number, number>();
  /** Projects to collect, by id, not begun yet. */
  private readonly queued = new Map<string, ProjectRecord>();
  private readonly begun: Begun[] = [];
  /** Collections run by the schedule since start (tests and metrics read it). */
  readonly runs: CollectionReport[] = [];

  constructor(
    private readonly store: AsyncStore,
    private readonly projects: Projects,
    private readonly remoteSync: RemoteSync,
    private readonly config: Config,
    /** Makes the deltas of chains a collection turns around off the event loop (the deflate cache's worker). */
    private readonly formOf?: FormOf,
  ) {
    store.onObjectsStored((project, stored) => {
      if (!this.running) return;
      let versions = 0;
      for (const object of stored) if (object.similarTo) versions++;
      if (versions > 0) this.versionsSince.set(project, (this.versionsSince.get(project) ?? 0) + versions);
    });
    projects.events.on((event) => {
      const threshold = this.config.gc.newObjects;
      if (!this.running || threshold === 0 || event.type === 'project.deleted') return;
      if ((this.versionsSince.get(event.project.seq) ?? 0) >= threshold) this.schedule(event.project);
    });
    projects.onDelete(async (tx, record) => tx.deleteRecord(lastKey(record.seq)));
  }

  /**
   * Collects one project now: begins, waits out the grace period (the configured one unless given),
   * runs. Throws CollectionBusyError when another collection of it runs, CollectionLostError when
   * the project is deleted meanwhile.
   */
  async collect(record: ProjectRecord, options: { graceMs?: number; onPhase?: (phase: CollectionPhase) => void; signal?: AbortSignal; wait?: CollectOptions['wait'] } = {}): Promise<CollectionReport> {
    const version = await this.projects.version(record);
    const report = await collectGarbage(this.projects.repo(record), {
      ...this.optionsFor(record),
      graceMs: options.graceMs ?? this.config.gc.graceMs,
      onPhase: options.onPhase,
      signal: options.signal,
      wait: options.wait,
    });
    await this.recordRun(record, version, report);
    return report;
  }

  /**
   * Collects several projects (the command-line tool): every collection begins at once, the grace
   * period is waited out once, then they run one after another. `onDone` is told each outcome: a
   * report, or the error that stopped it (CollectionBusyError: another collection runs). `signal`
   * stops them all: what is begun is ended, what was removed stays removed.
   */
  async collectMany(
    records: readonly ProjectRecord[],
    options: { graceMs?: number; signal?: AbortSignal; onGrace?: (ms: number) => void; onDone: (record: ProjectRecord, outcome: CollectionReport | Error) => void },
  ): Promise<void> {
    const graceMs = options.graceMs ?? this.config.gc.graceMs;
    const begun: Array<{ record: ProjectRecord; version: number; collection: GarbageCollection }> = [];
    try {
      for (const record of records) {
        try {
          const version = await this.projects.version(record);
          options.signal?.throwIfAborted();
          begun.push({ record, version, collection: await GarbageCollection.begin(this.projects.repo(record), { ...this.optionsFor(record), graceMs, signal: options.signal }) });
        } catch (error) {
          if (!(error instanceof CollectionBusyError) && !(error instanceof CollectionLostError)) throw error;
          options.onDone(record, error);
        }
      }
      if (begun.length === 0) return;
      options.onGrace?.(graceMs);
      await begun[0].collection.waitGrace();
      for (const { record, version, collection } of begun) {
        try {
          const report = await collection.run();
          await this.recordRun(record, version, report);
          options.onDone(record, report);
        } catch (error) {
          if (!(error instanceof CollectionLostError)) throw error;
          options.onDone(record, error);
        } finally {
          await collection.close();
        }
      }
    } finally {
      await Promise.allSettled(begun.map(({ collection }) => collection.close()));
    }
  }

  /** Starts the schedule (the server calls it once it listens). */
  start(): void {
    if (this.running || !this.store.collection) return;
    this.running = true;
    this.abort = new AbortController();
    // A collector that died (a `treehouse gc` killed mid-run) leaves its project journalling until this ends it.
    const endStale = () => void endStaleCollections(this.store).catch((error: Error) => process.stderr.write(`ending stale garbage collections failed: ${error.stack ?? error.message}\n`));
    endStale();
    this.staleTimer = setInterval(endStale, HEARTBEAT_STALE_MS);
    this.staleTimer.unref();
    if (this.config.gc.intervalMs > 0) {
      this.timer = setInterval(() => void this.scheduleChanged().catch((error: Error) => process.stderr.write(`scheduling garbage collections failed: ${error.stack ?? error.message}\n`)), this.config.gc.intervalMs);
      this.timer.unref();
    }
  }

  /** Stops the schedule: the collection under way is cut short, begun ones are ended (nothing half-done stays). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    if (this.staleTimer) clearInterval(this.staleTimer);
    this.timer = this.staleTimer = null;
    this.abort.abort();
    this.wakeWorker?.();
    await this.worker;
    this.queued.clear();
    await Promise.allSettled(this.begun.splice(0).map(({ collection }) => collection.close()));
  }

  /** Queues a collection of the project (nothing when one is queued or begun already). */
  schedule(record: ProjectRecord): void {
    if (!this.running || this.queued.has(record.id) || this.begun.some((begun) => begun.record.id === record.id)) return;
    this.queued.set(record.id, record);
    this.versionsSince.delete(record.seq);
    this.kick();
  }

  /** Queues every project whose version moved since its last collection (the periodic pass). */
  async scheduleChanged(): Promise<void> {
    for (let after: string | undefined; this.running; ) {
      const page = await this.projects.listAll(after, PROJECTS_PAGE);
      const versions = await this.store.read((tx) => Promise.all(page.map((record) => tx.project(record.seq).getVersion())));
      const lasts = await this.store.read((tx) => Promise.all(page.map((record) => tx.getRecord<LastCollection>(lastKey(record.seq)))));
      page.forEach((record, i) => {
        if (lasts[i]?.version !== versions[i]) this.schedule(record);
      });
      if (page.length < PROJECTS_PAGE) return;
      after = page[page.length - 1].id;
    }
  }

  /** Resolves when nothing is queued, begun or running (tests). */
  async idle(): Promise<void> {
    while (this.worker) await this.worker;
  }

  private optionsFor(record: ProjectRecord): Omit<CollectOptions, 'graceMs'> {
    return {
      extraRoots: (): Promise<Oid[]> => this.remoteSync.queuedCommits(record),
      owned: (tx) => this.projects.stillExists(tx, record),
      ...(this.formOf ? { formOf: this.formOf } : {}),
    };
  }

  private async recordRun(record: ProjectRecord, version: number, report: CollectionReport): Promise<void> {
    const last: LastCollection = { version, at: new Date().toISOString(), removedObjects: report.removedObjects, removedBytes: report.removedBytes };
    await this.store.write(async (tx) => {
      if (await this.projects.stillExists(tx, record)) tx.putRecord(lastKey(record.seq), last);
    });
  }

  private kick(): void {
    if (this.worker) {
      this.wakeWorker?.();
      return;
    }
    this.worker = this.work()
      .catch((error: Error) => {
        process.stderr.write(`garbage collection failed: ${error.stack ?? error.message}\n`);
      })
      .finally(() => {
        this.worker = null;
      });
  }

  /** Begins what is queued (up to BEGUN_MAX), then runs the begun collections as their grace ends, one at a time. */
  private async work(): Promise<void> {
    while (this.running) {
      await this.beginQueued();
      if (this.begun.length === 0) return;
      this.begun.sort((a, b) => a.dueAt - b.dueAt);
      const next = this.begun[0];
      const waitMs = next.dueAt - Date.now();
      if (waitMs > 0) {
        await this.sleep(waitMs);
        continue;
      }
      this.begun.shift();
      try {
        const report = await next.collection.run();
        this.runs.push(report);
        await this.recordRun(next.record, next.version, report);
      } catch (error) {
        if (!(error instanceof CollectionLostError) && !this.abort.signal.aborted) {
          process.stderr.write(`garbage collection of project ${next.record.id} failed: ${(error as Error).stack ?? String(error)}\n`);
        }
      } finally {
        await next.collection.close();
      }
    }
  }

  private async beginQueued(): Promise<void> {
    for (const [id, record] of this.queued) {
      if (this.begun.length >= BEGUN_MAX || !this.running) return;
      this.queued.delete(id);
      try {
        const version = await this.projects.version(record);
        const collection = await GarbageCollection.begin(this.projects.repo(record), {
          ...this.optionsFor(record),
          graceMs: this.config.gc.graceMs,
          signal: this.abort.signal,
        });
        this.begun.push({ collection, record, version, dueAt: Date.now() + this.config.gc.graceMs });
      } catch (error) {
        // Another collector has it, or the project is gone: nothing to do now.
        if (error instanceof CollectionBusyError || error instanceof CollectionLostError) continue;
        throw error;
      }
    }
  }

  /** Sleeps `ms`, or until schedule() or stop() wakes the worker. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      const wake = () => done();
      this.wakeWorker = wake;
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}
