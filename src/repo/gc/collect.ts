/**
 * Garbage collection of one project (README "Garbage collection"): what no ref, working tree,
 * queued sync or recent reader can reach is removed, while writers and readers go on.
 *
 * 1. **Begin** (one write): the project's collection is recorded (CollectionWrites.beginCollection),
 *    unless another one runs (CollectionBusyError). From then on every write of the project
 *    journals the ids it makes reachable: objects it stores new, forms it keeps as deltas, and each
 *    value a ref or working tree takes or loses.
 * 2. **Grace**: nothing is read or removed for `graceMs`, so a reader that took a root before the
 *    collection began (a clone streaming a branch since deleted, an archive of a working tree since
 *    changed) finishes first; what changes meanwhile is in the journal. A heartbeat record tells a
 *    second collector this one is alive.
 * 3. **Mark** from the refs, the working trees, `extraRoots` and the journal (Marker): everything
 *    reachable from them is kept. The journal is taken (read and forgotten) in writes, so an id
 *    journalled again later is read again.
 * 4. **List** every stored id; one the mark did not reach is a candidate (Candidates). A kept object
 *    whose pack-ready form is a delta on a candidate gets its form rewritten whole first.
 * 5. **Order** the candidates so an object goes before what it references and before its delta's
 *    base: whatever is still stored during the sweep is whole (candidates.ts).
 * 6. **Sweep** in writes of about `batchIds` ids. Each write first takes what was journalled since
 *    (a few ids are walked inside the write; a backlog outside it first) and removes only what is
 *    still unmarked; its read of the journal is checked at its commit, so nothing a writer made
 *    reachable before that commit is removed. Writers that relied on a candidate being present
 *    are checked at their own commit (src/store/asyncTypes.ts) and run again.
 * 7. **Newest whole** (newestWhole.ts): the delta chain of each blob the working trees and branch
 *    heads reach (a *hot* blob) is turned around, so the blob is whole and the versions before it
 *    are deltas on the ones after, as git orders them: a current file reads in one inflate.
 * 8. **Keep cold objects compactly**: every kept object loses its raw copy where a pack-ready form
 *    can rebuild it, and its form moves into the backend's compact layout (LMDB's shelves), in the
 *    order the mark met it (about history's order). The trees the working trees and branch heads
 *    reach (the *hot* trees: writes patch them, listings read their size annex, merges read heads'
 *    trees) keep their raw copies, and so do commits that have one (log reads them; a seed keeps
 *    its commits as their pack entries alone from the start, heldForms.ts). Blobs, hot ones too, are kept
 *    as their forms: the working tree's blobs raw would take about twice git's whole repository
 *    (README "Storage at rest"), and step 7 makes the hot ones whole. Each write first marks the hot
 *    trees of the roots it commits over, so a tree a writer made hot meanwhile (a restore, a branch
 *    at an old commit) keeps its raw copy.
 * 9. **Compact** (the backend's own step) and end the collection.
 */
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { deflate } from 'node:zlib';
import type { Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import type { AsyncStore, AsyncStoreReadTx, AsyncStoreWriteTx, CollectionReads, CollectionWrites, PackFormReads, ProjectReads, ProjectWrites, RecordReads } from '../../store/asyncTypes.js';
import type { CollectionState, ListedEntry, StoredEntry } from '../../store/types.js';
import type { Repo } from '../repo.js';
import { Slicer } from '../slices.js';
import { Candidates } from './candidates.js';
import { Marker, type MarkReads } from './mark.js';
import { dependsOnPlan, FormIndex, planTurn, type FormOf, type TurnPlan } from './newestWhole.js';

const deflateAsync = promisify(deflate);

/** git's default pack compression (zlib level 6), as the deflate cache uses. */
const DEFLATE_LEVEL = 6;
/** Ids removed per write: a few milliseconds of LMDB deletes. */
export const SWEEP_BATCH_IDS = 500;
/** Ids listed per read. */
const LIST_PAGE_IDS = 500;
/** Journal ids taken per write outside the sweep. */
const JOURNAL_TAKE_IDS = 2_000;
/** Journal ids a sweep write walks itself; more are taken outside it first. */
const JOURNAL_INLINE_IDS = 64;
/** Objects kept compactly per write (step 8): a few milliseconds of LMDB work, a few shelves. */
const COLD_BATCH_IDS = 500;
/** Batched reads a cold write may make to mark trees made hot since the hot mark; more are made outside it first. */
const HOT_INLINE_READS = 8;
/** Kept delta forms step 7 indexes at most (about 160 bytes each); a project with more leaves the step out. */
const FORM_INDEX_MAX = 500_000;
/** Rounds of planning: a plan blocked by another not yet written is tried again in the next. */
const TURN_ROUNDS_MAX = 4;
/** Chains turned around per write, and bytes of new forms per write. */
const TURNS_PER_WRITE = 64;
const TURN_WRITE_BYTES = 1024 * 1024;
/** Journalled ids a turning write checks; with more journalled (a busy project), it leaves its plans for the next collection. */
const JOURNAL_CHECK_IDS = 1_000;
/** Forms rewritten whole per write, and bodies read for them per read. */
const REWRITES_PER_WRITE = 256;
const REWRITE_BODIES_PER_READ = 8;
/** How often a running collection says it is alive, and how long a silent one is taken to be dead. */
export const HEARTBEAT_MS = 15_000;
export const HEARTBEAT_STALE_MS = 120_000;

const HEARTBEAT_PREFIX = 'gc-heartbeat/';
const heartbeatKey = (project: number) => `${HEARTBEAT_PREFIX}${project}`;

interface Heartbeat {
  id: string;
  /** Milliseconds since the epoch. */
  at: number;
}

/** Another collection of the project is running (its heartbeat is recent). */
export class CollectionBusyError extends Error {
  override name = 'CollectionBusyError';
  constructor(readonly running: CollectionState) {
    super(`a garbage collection of this project is under way (since ${running.startedAt})`);
  }
}

/** The collection is no longer this run's: the project was deleted, or a collector took over a silent run. */
export class CollectionLostError extends Error {
  override name = 'CollectionLostError';
}

export interface CollectOptions {
  /** Waited between beginning and marking (see the module's comment). */
  graceMs: number;
  /** Waits out the grace period (a timer unless given: tests end it when they choose). */
  wait?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Ids kept besides refs, working trees and the journal (the commits of queued syncs). */
  extraRoots?: () => Promise<Oid[]>;
  /** Whether the project still exists; asked in the write that begins the collection, so checked at its commit. */
  owned?: (tx: RecordReads) => Promise<boolean>;
  signal?: AbortSignal;
  batchIds?: number;
  /** Told as each step begins (the command-line tool prints them). */
  onPhase?: (phase: CollectionPhase) => void;
  /** Makes step 7's deltas off the event loop (the deflate cache's worker); on the loop, a slice at a time, when not given. */
  formOf?: FormOf;
}

export type CollectionPhase = 'grace' | 'mark' | 'list' | 'order' | 'rewrite' | 'sweep' | 'newest-whole' | 'cold' | 'compact' | 'end';

export interface CollectionReport {
  project: number;
  /** Ids removed, and what they took: raw copies, pack-ready forms, commit index entries and lists. */
  removedObjects: number;
  removedBytes: number;
  /** Ids kept (reachable). */
  keptObjects: number;
  /** Kept objects whose delta form named a removed base, rewritten whole. */
  formsRewritten: number;
  /** Step 7: hot blobs' chains turned around (each now whole), and the forms that replaced (its members' and the depths below them). */
  newestWhole: { chains: number; formsReplaced: number };
  /** Step 8: raw copies dropped (objects now kept as their forms alone), and forms moved into the compact layout. */
  coldKept: { rawDropped: number; formsMoved: number };
  /** What the backend's compaction rewrote and freed (null: it has none). */
  compaction: { rewrittenBytes: number; freedBytes: number } | null;
  /** From the end of the grace period to the end. */
  durationMs: number;
}

type CollectingReads = ProjectReads & CollectionReads;
type CollectingWrites = ProjectWrites & CollectionWrites;

function collectingReads(tx: AsyncStoreReadTx | AsyncStoreWriteTx, project: number): CollectingReads {
  const p = tx.project(project);
  if (typeof p.listStored !== 'function') throw new Error('this store offers no garbage collection');
  return p as CollectingReads;
}

function collectingWrites(tx: AsyncStoreWriteTx, project: number): CollectingWrites {
  const p = tx.project(project);
  if (typeof p.removeStored !== 'function') throw new Error('this store offers no garbage collection');
  return p as CollectingWrites;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** The trees of every working tree and branch head: the roots of the hot trees and blobs (steps 7 and 8). */
async function hotRoots(p: Pick<ProjectReads, 'listRefs' | 'getCommitInfos'> & Pick<CollectionReads, 'listWorkingTrees'>): Promise<Oid[]> {
  const heads = await p.listRefs('refs/heads/');
  const infos = await p.getCommitInfos(heads.map((ref) => ref.oid));
  const workingTrees = await p.listWorkingTrees();
  return [...workingTrees.map(({ state }) => state.tree), ...infos.flatMap((info) => (info ? [info.tree] : []))];
}

/**
 * Ends the collections whose collector has gone silent (it crashed, or was killed): their projects'
 * writers stop journalling. Returns how many it ended.
 */
export async function endStaleCollections(store: AsyncStore): Promise<number> {
  if (!store.collection) return 0;
  const beats = await store.read((tx) => tx.listRecords<Heartbeat>(HEARTBEAT_PREFIX));
  let ended = 0;
  for (const { key, value } of beats) {
    if (Date.now() - value.at < HEARTBEAT_STALE_MS) continue;
    const project = Number(key.slice(HEARTBEAT_PREFIX.length));
    const endedOne = await store.write(async (tx) => {
      const beat = await tx.getRecord<Heartbeat>(key);
      if (!beat || Date.now() - beat.at < HEARTBEAT_STALE_MS) return false;
      tx.deleteRecord(key);
      const p = collectingWrites(tx, project);
      if ((await p.getCollection())?.id !== beat.id) return false;
      p.endCollection();
      return true;
    });
    if (endedOne) ended++;
  }
  return ended;
}

/** Begins, waits out the grace period, and runs a collection of the project. */
export async function collectGarbage(repo: Repo, options: CollectOptions): Promise<CollectionReport> {
  const collection = await GarbageCollection.begin(repo, options);
  try {
    await collection.waitGrace();
    return await collection.run();
  } finally {
    await collection.close();
  }
}

export class GarbageCollection {
  private readonly slicer = new Slicer();
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private ended = false;

  private constructor(
    private readonly repo: Repo,
    private readonly options: CollectOptions,
    readonly state: CollectionState,
  ) {}

  /** Records the collection (step 1), or throws CollectionBusyError when another one is alive. */
  static async begin(repo: Repo, options: CollectOptions): Promise<GarbageCollection> {
    if (!repo.store.collection) throw new Error('this store offers no garbage collection');
    const state: CollectionState = { id: randomUUID(), startedAt: new Date().toISOString() };
    await repo.store.write(async (tx) => {
      const p = collectingWrites(tx, repo.project);
      const running = await p.getCollection();
      if (running) {
        const heartbeat = await tx.getRecord<Heartbeat>(heartbeatKey(repo.project));
        if (heartbeat?.id === running.id && Date.now() - heartbeat.at < HEARTBEAT_STALE_MS) throw new CollectionBusyError(running);
      }
      if (options.owned && !(await options.owned(tx))) throw new CollectionLostError('the project does not exist');
      p.beginCollection(state);
      tx.putRecord<Heartbeat>(heartbeatKey(repo.project), { id: state.id, at: Date.now() });
    });
    const collection = new GarbageCollection(repo, options, state);
    collection.heartbeatTimer = setInterval(() => void collection.heartbeat().catch(() => undefined), HEARTBEAT_MS);
    collection.heartbeatTimer.unref();
    return collection;
  }

  /** Says the collection is alive, if it is still this one. */
  async heartbeat(): Promise<void> {
    if (this.ended) return;
    await this.repo.store.write(async (tx) => {
      const running = await collectingWrites(tx, this.repo.project).getCollection();
      if (running?.id === this.state.id) tx.putRecord<Heartbeat>(heartbeatKey(this.repo.project), { id: this.state.id, at: Date.now() });
    });
  }

  async waitGrace(): Promise<void> {
    this.options.onPhase?.('grace');
    await (this.options.wait ?? sleep)(this.options.graceMs, this.options.signal);
  }

  /** Steps 3 to 9; the grace period must be over. */
  async run(): Promise<CollectionReport> {
    const started = performance.now();
    const { project } = this.repo;
    const reads = this.reads();
    // Every kept delta form (step 7), from the listing and from what writers add meanwhile; null past its cap.
    let forms: FormIndex | null = new FormIndex();
    const noteForm = (entry: StoredEntry) => forms?.set(entry.oid, entry.formBase, entry.formDepth);
    const marker = new Marker(reads, this.slicer, { recordOrder: true, onForm: noteForm });
    const hotBlobs = new OidTable();
    const hot = new Marker(reads, this.slicer, { blobsInto: hotBlobs });

    this.phase('mark');
    const roots = await this.repo.store.read(async (tx) => {
      const p = collectingReads(tx, project);
      return { refs: await p.listRefs(''), workingTrees: await p.listWorkingTrees() };
    });
    for (const ref of roots.refs) marker.add(ref.oid, undefined);
    for (const { state } of roots.workingTrees) marker.add(state.tree, 'tree');
    for (const oid of (await this.options.extraRoots?.()) ?? []) marker.add(oid, undefined);
    await marker.drain();
    await this.takeJournal(marker);
    for (const tree of await hotRoots(reads)) hot.add(tree, 'tree');
    await hot.drain();

    this.phase('list');
    const candidates = new Candidates();
    const rewrites: Array<{ oid: Oid; base: Oid }> = [];
    // Step 8's work: kept objects whose raw copy can go, and those whose form is not kept compactly.
    const cold = { dropRaw: new OidTable(), moveForm: new OidTable() };
    // Step 7's work: hot blobs whose form is a delta.
    const hotDeltas: Oid[] = [];
    let keptObjects = 0;
    // Raw copies kept by the listing, and those of candidates (for the backend's compaction).
    let rawListedKept = 0;
    let rawOfCandidates = 0;
    for (let after: Oid | null = null; ; ) {
      const page: ListedEntry[] = await reads.listStored(after, LIST_PAGE_IDS);
      const unmarked: Oid[] = [];
      for (const entry of page) {
        if (!marker.isMarked(entry.oid)) {
          unmarked.push(entry.oid);
          if (entry.raw) rawOfCandidates++;
          continue;
        }
        keptObjects++;
        if (entry.raw) rawListedKept++;
        if (!entry.form) continue;
        if (entry.formBase && forms) {
          forms.set(entry.oid, entry.formBase, entry.formDepth);
          if (forms.size > FORM_INDEX_MAX) forms = null;
          else if (hotBlobs.has(entry.oid)) hotDeltas.push(entry.oid);
        }
        if (entry.raw && !entry.commit && !hot.isMarked(entry.oid)) cold.dropRaw.add(entry.oid);
        if (!entry.formCompact) cold.moveForm.add(entry.oid);
        if (entry.formBase && !marker.isMarked(entry.formBase)) {
          rewrites.push({ oid: entry.oid, base: entry.formBase });
          // Rewritten whole as a value of its own: moved afterwards.
          cold.moveForm.add(entry.oid);
        }
      }
      // Only candidates are read whole (their types, sizes and delta depths); what is kept is not.
      for (const entry of unmarked.length > 0 ? await reads.describeStored(unmarked) : []) if (entry) candidates.add(entry);
      if (page.length < LIST_PAGE_IDS) break;
      after = page[page.length - 1].oid;
      await this.slicer.pause();
      this.checkSignal();
    }
    // From here on, an object marked late keeps its form's chain (Marker.followForms).
    marker.followForms = true;
    await this.takeJournal(marker);

    this.phase('order');
    await candidates.order(reads, this.slicer);

    this.phase('rewrite');
    const formsRewritten = await this.rewriteForms(rewrites, marker, (oid) => forms?.set(oid, null, 0));

    this.phase('sweep');
    let removed = { objects: 0, bytes: 0 };
    for (const batch of candidates.batches(this.options.batchIds ?? SWEEP_BATCH_IDS)) {
      this.checkSignal();
      const gone = await this.sweep(batch, marker);
      removed = { objects: removed.objects + gone.objects, bytes: removed.bytes + gone.bytes };
      await this.slicer.pause();
    }

    this.phase('newest-whole');
    const newestWhole = forms ? await this.turnHotChains(hotDeltas, forms, hotBlobs, cold.moveForm) : { chains: 0, formsReplaced: 0 };

    this.phase('cold');
    const coldKept = await this.keepColdCompact(marker, hot, cold);

    this.phase('compact');
    // Dropped raw copies and moved forms leave pages sparse as removals do.
    const collected = {
      removedIds: removed.objects + coldKept.rawDropped + coldKept.formsMoved,
      keptIds: keptObjects,
      rawRemoved: rawOfCandidates + coldKept.rawDropped,
      rawKept: rawListedKept - coldKept.rawDropped,
    };
    const compaction = this.repo.store.compactAfterCollection ? await this.repo.store.compactAfterCollection(project, collected) : null;

    this.phase('end');
    await this.end();
    return {
      project,
      removedObjects: removed.objects,
      removedBytes: removed.bytes,
      keptObjects,
      formsRewritten,
      newestWhole,
      coldKept,
      compaction,
      durationMs: performance.now() - started,
    };
  }

  /** Ends the collection if it is still this one (after a failure too); stops the heartbeat. */
  async close(): Promise<void> {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    if (!this.ended) await this.end().catch(() => undefined);
  }

  private async end(): Promise<void> {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    await this.repo.store.write(async (tx) => {
      const p = collectingWrites(tx, this.repo.project);
      // A dropped project's collection is gone already; its heartbeat is this run's to remove.
      if ((await tx.getRecord<Heartbeat>(heartbeatKey(this.repo.project)))?.id === this.state.id) tx.deleteRecord(heartbeatKey(this.repo.project));
      if ((await p.getCollection())?.id === this.state.id) p.endCollection();
    });
    this.ended = true;
  }

  private phase(phase: CollectionPhase): void {
    this.checkSignal();
    this.options.onPhase?.(phase);
  }

  private checkSignal(): void {
    this.options.signal?.throwIfAborted();
  }

  /** The project's reads, each a read of its own (the walk pauses between them); forms too when the store keeps them. */
  private reads(): CollectingReads & Partial<PackFormReads> {
    const { store, project } = this.repo;
    const read = <T>(action: (p: CollectingReads & Partial<PackFormReads>) => Promise<T>): Promise<T> => store.read((tx) => action(collectingReads(tx, project)));
    return {
      ...(store.packForms ? { getDeflated: (oids: readonly Oid[]) => read((p) => p.getDeflated!(oids)) } : {}),
      project,
      getObject: (oid) => read((p) => p.getObject(oid)),
      getObjects: (oids) => read((p) => p.getObjects(oids)),
      getObjectsWithAnnex: (oids) => read((p) => p.getObjectsWithAnnex(oids)),
      hasObjects: (oids) => read((p) => p.hasObjects(oids)),
      objectSizes: (oids) => read((p) => p.objectSizes(oids)),
      objectTypes: (oids) => read((p) => p.objectTypes(oids)),
      findObjectsByPrefix: (hexPrefix, limit) => read((p) => p.findObjectsByPrefix(hexPrefix, limit)),
      getCommitInfos: (oids) => read((p) => p.getCommitInfos(oids)),
      getCommitObjects: (commit) => read((p) => p.getCommitObjects(commit)),
      getRef: (name) => read((p) => p.getRef(name)),
      listRefs: (prefix) => read((p) => p.listRefs(prefix)),
      getWorkingTree: (branch) => read((p) => p.getWorkingTree(branch)),
      getVersion: () => read((p) => p.getVersion()),
      getCollection: () => read((p) => p.getCollection()),
      listWorkingTrees: () => read((p) => p.listWorkingTrees()),
      listStored: (after, limit) => read((p) => p.listStored(after, limit)),
      describeStored: (oids) => read((p) => p.describeStored(oids)),
      listJournal: (after, limit) => read((p) => p.listJournal(after, limit)),
    };
  }

  /**
   * Takes the journal until it is empty: each batch is read and forgotten in one write (an id
   * journalled again after it is forgotten is taken again), then walked.
   */
  private async takeJournal(marker: Marker): Promise<void> {
    for (;;) {
      const taken = await this.repo.store.write(async (tx) => {
        const p = await this.ours(tx);
        const ids = await p.listJournal(null, JOURNAL_TAKE_IDS);
        p.forgetJournal(ids);
        return ids;
      });
      if (taken.length === 0) return;
      for (const oid of taken) this.markJournalled(marker, oid);
      await marker.drain();
      this.checkSignal();
    }
  }

  /** A journalled id is kept; once forms are followed, one already kept may have a new form whose base must stay. */
  private markJournalled(marker: Marker, oid: Oid): void {
    if (marker.followForms && marker.isMarked(oid)) marker.lookAgain(oid);
    else marker.add(oid, undefined);
  }

  /** The project's writes in `tx`, once it is checked that the collection is still this one. */
  private async ours(tx: AsyncStoreWriteTx): Promise<CollectingWrites> {
    const p = collectingWrites(tx, this.repo.project);
    if ((await p.getCollection())?.id !== this.state.id) throw new CollectionLostError('the collection was ended by another (the project was deleted, or a collector took over)');
    return p;
  }

  /**
   * Rewrites whole the forms of kept objects whose delta base is a candidate, so the base can go.
   * A base marked since is left alone; one a rewrite did not reach is kept (marked) instead.
   */
  private async rewriteForms(rewrites: Array<{ oid: Oid; base: Oid }>, marker: Marker, rewrote: (oid: Oid) => void): Promise<number> {
    let rewritten = 0;
    for (let start = 0; start < rewrites.length; start += REWRITES_PER_WRITE) {
      const wanted = rewrites.slice(start, start + REWRITES_PER_WRITE).filter(({ base }) => !marker.isMarked(base));
      const chunk: Array<{ oid: Oid; base: Oid; deflated: Buffer }> = [];
      // Bodies read a few at a time (a body may be 100 MB), each deflated on zlib's thread pool.
      for (let at = 0; at < wanted.length; at += REWRITE_BODIES_PER_READ) {
        const group = wanted.slice(at, at + REWRITE_BODIES_PER_READ);
        const bodies = await this.reads().getObjects(group.map(({ oid }) => oid));
        for (const [i, { oid, base }] of group.entries()) {
          const body = bodies[i]?.body;
          if (body) chunk.push({ oid, base, deflated: await deflateAsync(body, { level: DEFLATE_LEVEL }) });
        }
      }
      if (chunk.length === 0) continue;
      await this.repo.store.write(async (tx) => {
        const p = await this.ours(tx);
        for (const { oid, base, deflated } of chunk) p.replaceFormWhole(oid, base, deflated);
      });
      const after = await this.reads().describeStored(chunk.map(({ oid }) => oid));
      chunk.forEach(({ oid, base }, i) => {
        if (after[i]?.formBase?.equals(base)) marker.add(base, undefined);
        else {
          rewritten++;
          rewrote(oid);
        }
      });
      await marker.drain();
      await this.slicer.pause();
      this.checkSignal();
    }
    return rewritten;
  }

  /**
   * Step 7 (newestWhole.ts): the chain of each hot blob whose form is a delta turned around, so
   * it is whole and the versions below it are deltas on the ones above. Plans are made outside the
   * writes (their deltas on the deflate cache's worker when given) and written TURNS_PER_WRITE at a
   * time; each write reads the journal and leaves out a plan a form made meanwhile would depend on
   * (there are forms only this collection changes, and the store replaces a plan's forms only when
   * each is still what the plan read). `moved` gets every replaced form, for step 8.
   */
  private async turnHotChains(heads: readonly Oid[], forms: FormIndex, hotBlobs: OidTable, moved: OidTable): Promise<{ chains: number; formsReplaced: number }> {
    const total = { chains: 0, formsReplaced: 0 };
    const reads = this.reads();
    if (!reads.getDeflated) return total;
    const planReads = { objectSizes: reads.objectSizes, getObjects: reads.getObjects, getDeflated: reads.getDeflated };
    let taken = new OidTable();
    let pending: TurnPlan[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      const plans = pending;
      pending = [];
      pendingBytes = 0;
      // Written or left out, these plans no longer hold what they would change: the index says what is.
      taken = new OidTable();
      const written = await this.repo.store.write(async (tx) => {
        const p = await this.ours(tx);
        const journalled = await p.listJournal(null, JOURNAL_CHECK_IDS + 1);
        if (journalled.length > JOURNAL_CHECK_IDS) return [];
        const described = journalled.length > 0 ? await p.describeStored(journalled) : [];
        const clear = plans.filter((plan) => !described.some((entry) => dependsOnPlan(plan, entry)));
        for (const plan of clear) p.replaceForms(plan.changes);
        return clear;
      });
      // Where the store made a plan's change, its head is whole now (its form was a delta, and only this collection changes forms).
      const heads = written.length > 0 ? await reads.describeStored(written.map((plan) => plan.members[0])) : [];
      written.forEach((plan, i) => {
        if (!heads[i] || heads[i]!.formBase !== null) return;
        for (const [oid, base, depth] of plan.after) {
          forms.set(oid, base, depth);
          moved.add(oid);
        }
        total.chains++;
        total.formsReplaced += plan.changes.length;
      });
      this.checkSignal();
    };
    // A plan blocked by one not yet written is planned again once it is, in a later round.
    let round = [...heads];
    for (let rounds = 0; round.length > 0 && rounds < TURN_ROUNDS_MAX; rounds++) {
      const blocked: Oid[] = [];
      for (const head of round) {
        const plan = await planTurn(head, forms, (oid) => hotBlobs.has(oid), taken, planReads, this.options.formOf, () => this.slicer.pause());
        await this.slicer.pause();
        this.checkSignal();
        if (plan === 'blocked') blocked.push(head);
        if (!plan || plan === 'blocked') continue;
        for (const [oid] of plan.after) taken.add(oid);
        pending.push(plan);
        pendingBytes += plan.changes.reduce((sum, change) => sum + change.form.deflated.length, 0);
        if (pending.length >= TURNS_PER_WRITE || pendingBytes >= TURN_WRITE_BYTES) await flush();
      }
      if (pending.length > 0) await flush();
      round = blocked;
    }
    return total;
  }

  /**
   * Step 8: the objects of `cold` kept compactly, in the order the mark met them, a write of
   * COLD_BATCH_IDS at a time. Each write first marks, with its own reads (checked at its commit),
   * the hot trees of the roots it commits over, and keeps the raw copy of every hot tree: a tree a
   * writer made hot after the hot mark (a restore, a branch at an old commit, a directory written
   * back to an old state) keeps its raw copy. A hot walk of more than HOT_INLINE_READS reads is
   * made outside the write first. Nothing here makes an object unreadable (its form stays), so no
   * writer or reader has to be checked against it.
   */
  private async keepColdCompact(marker: Marker, hot: Marker, cold: { dropRaw: OidTable; moveForm: OidTable }): Promise<{ rawDropped: number; formsMoved: number }> {
    const total = { rawDropped: 0, formsMoved: 0 };
    const order = marker.order!;
    let batch: Array<{ oid: Oid; dropRaw: boolean; moveForm: boolean }> = [];
    const flush = async () => {
      const kept = await this.keepBatchCompact(batch, hot);
      total.rawDropped += kept.rawDropped;
      total.formsMoved += kept.formsMoved;
      batch = [];
      await this.slicer.pause();
      this.checkSignal();
    };
    for (let at = 0; at < order.length; at++) {
      const oid = order.at(at);
      const dropRaw = cold.dropRaw.has(oid);
      const moveForm = cold.moveForm.has(oid);
      if (!dropRaw && !moveForm) continue;
      batch.push({ oid: Buffer.from(oid), dropRaw, moveForm });
      if (batch.length >= COLD_BATCH_IDS) await flush();
    }
    if (batch.length > 0) await flush();
    return total;
  }

  private async keepBatchCompact(batch: ReadonlyArray<{ oid: Oid; dropRaw: boolean; moveForm: boolean }>, hot: Marker): Promise<{ rawDropped: number; formsMoved: number }> {
    for (;;) {
      const kept = await this.repo.store.write(async (tx) => {
        const p = await this.ours(tx);
        for (const tree of await hotRoots(p)) hot.add(tree, 'tree');
        if (!(await hot.drain(p as MarkReads, HOT_INLINE_READS))) return null;
        const objects = batch.map(({ oid, dropRaw }) => ({ oid, dropRaw: dropRaw && !hot.isMarked(oid) }));
        p.keepCompact(objects);
        return { rawDropped: objects.filter(({ dropRaw }) => dropRaw).length, formsMoved: batch.filter(({ moveForm }) => moveForm).length };
      });
      if (kept) return kept;
      await hot.drain();
    }
  }

  /**
   * Removes what of `batch` is still unmarked, in one write that first walks whatever was
   * journalled since (outside the write when there is a backlog). Its read of the journal is
   * checked at its commit: an id journalled in between runs it again.
   */
  private async sweep(batch: Array<{ oid: Oid; bytes: number }>, marker: Marker): Promise<{ objects: number; bytes: number }> {
    for (;;) {
      const outcome = await this.repo.store.write(async (tx) => {
        const p = await this.ours(tx);
        const journalled = await p.listJournal(null, JOURNAL_INLINE_IDS + 1);
        if (journalled.length > JOURNAL_INLINE_IDS) return null;
        for (const oid of journalled) this.markJournalled(marker, oid);
        // Walked through this write's reads: what it reads is what the removal commits over.
        await marker.drain(p as MarkReads);
        p.forgetJournal(journalled);
        const gone = batch.filter(({ oid }) => !marker.isMarked(oid));
        p.removeStored(gone.map(({ oid }) => oid));
        return { objects: gone.length, bytes: gone.reduce((sum, { bytes }) => sum + bytes, 0) };
      });
      if (outcome) return outcome;
      await this.takeJournal(marker);
    }
  }
}
