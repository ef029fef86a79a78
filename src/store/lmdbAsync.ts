/**
 * The asynchronous interface (src/store/asyncTypes.ts) over the LMDB store.
 *
 * Reads are the synchronous store's, answered at once. A write transaction cannot stay open across
 * an `await` in lmdb-js (a write transaction is global to the process: every other read and write
 * would run inside it), so a write callback records its writes in an overlay its own reads consult,
 * and when it resolves they are replayed, in order, in one synchronous child transaction.
 *
 * Serialisable, optimistically: write callbacks start one at a time (a FIFO queue); a callback
 * reads through the overlays of the writes queued before it (QueuedWrites), whose replays run
 * before its own, and its replay first checks that what it read of refs, working trees, versions
 * and records is what the store holds then. When that fails (a write before it failed, or a writer
 * of the synchronous interface came between), the callback runs again, alone (at most
 * WRITE_ATTEMPTS_MAX times). Writers, of one branch too, so share commits and their fsync, as the
 * synchronous interface's do.
 *
 * While a garbage collection of a project runs (getCollection, checked at the replay too), what a
 * callback read as present from the store is checked to be there still at its replay: a collector's
 * removal committed in between makes the callback run again (WriteProject.present).
 */
import { setImmediate as turn } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { inflateSync } from 'node:zlib';
import { applyDelta } from '../git/delta.js';
import { SlabAllocator } from '../git/slab.js';
import { hashObject, oidToHex, type ObjectType, type Oid } from '../git/oid.js';
import type {
  AsyncStore,
  AsyncStoreReadTx,
  AsyncStoreWriteTx,
  ObjectCursor,
  CollectionReads,
  CollectionWrites,
  FormHold,
  PackFormReads,
  PackFormWrites,
  ProjectReads,
  ReceivedForm,
  ProjectWrites,
  StoreThreadAccess,
  UndeflatedPage,
} from './asyncTypes.js';
import { commitInfoFromBody } from './commitIndex.js';
import { HeldForms } from './heldForms.js';
import type { LmdbStore } from './lmdb.js';
import { deflatedWithinBySizes } from './deflatedWithin.js';
import {
  RefChangedError,
  type AnnexedObject,
  type CollectionState,
  type CommitInfo,
  type DeflatedObject,
  type DeltaForm,
  type FormChange,
  type ListedEntry,
  type NewObject,
  type ProjectReadTx,
  type ProjectWriteTx,
  type RepackedTable,
  type ShelvedForm,
  type StoredEntry,
  type StoredObject,
  type StoreWriteTx,
  type WorkingTreeState,
} from './types.js';
import { MissingObjectError } from '../errors.js';

/** Ids (or shelves) per page of a shelf compaction's listing: a few milliseconds each. */
const SHELF_PAGE = 5_000;
/** Shelves rewritten per write (at most 64 KB each). */
const SHELVES_PER_WRITE = 16;
/** @internal Per project: ids removed by collections since its entries were last packed (compactAfterCollection); dropped with the project. */
export const REMOVED_SINCE_REPACK_PREFIX = 'gc-removed-since-repack/';
/** @internal Per project: raw copies removed or dropped by collections since `objects` was last packed; dropped with the project. */
export const RAW_REMOVED_SINCE_REPACK_PREFIX = 'gc-raw-removed-since-repack/';
const REPACKED_TABLES: readonly RepackedTable[] = ['objects', 'packed', 'commits', 'introduced'];
/** A shelf with less than this share of its bytes alive is rewritten (compactShelves). */
const SHELF_LIVE_SHARE_MIN = 0.75;
/** Entries, and bytes of values, a repack write takes out and puts back: a few milliseconds. */
const REPACK_ENTRIES = 4_000;
const REPACK_BYTES = 1024 * 1024;

/**
 * Held pointers (src/store/heldForms.ts) put per write: in key order, a few milliseconds each; and
 * how many a seed holds at most before it puts them (some 60 bytes each in memory).
 */
const HELD_POINTERS_PER_WRITE = 4_096;
const HELD_POINTERS_MAX = 1_000_000;
/** A hold's pointers are sorted ahead (prepareFormHold) in slices of about this long. */
const PREPARE_SLICE_MS = 10;
/** Held commits (a seed's: HeldForms.commits) put per write, and their bytes; and the bytes a seed holds at most before it puts them. */
const HELD_COMMITS_PER_WRITE = 4_096;
const HELD_COMMIT_BYTES_PER_WRITE = 1024 * 1024;
const HELD_COMMIT_BYTES_MAX = 64 * 1024 * 1024;
/** Shelves of a let-go private hold removed per write. */
const HELD_SHELVES_DROPPED_PER_WRITE = 256;

/** LmdbAsyncStore's FormHold: the private hold of LmdbStore.beginPrivateHold. */
interface LmdbFormHold extends FormHold {
  held: HeldForms;
}

function lmdbHold(hold: FormHold, project: number): LmdbFormHold {
  if (!('held' in hold) || !((hold as LmdbFormHold).held instanceof HeldForms) || hold.project !== project) throw new Error('not a hold of this store and project');
  return hold as LmdbFormHold;
}

/** Objects a write should store at most (AsyncStore.writeObjectsMax): its replay, in one piece on the event loop, some 17 ms. */
const WRITE_OBJECTS_MAX = 500;

/** Runs of a write callback before a conflict with a synchronous writer is reported. */
const WRITE_ATTEMPTS_MAX = 8;

/** What a replay found changed since its callback read it: the callback runs again. */
export class WriteConflict extends Error {
  override name = 'WriteConflict';
}

/** A FIFO lock: `acquire` resolves with the function that releases it. */
class WriterQueue {
  private tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.tail.then(() => release);
    this.tail = this.tail.then(() => released);
    return acquired;
  }
}

/** `release` callable any number of times, releasing once. */
function once(release: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    release();
  };
}

/**
 * The writes whose replays are queued but not yet committed, oldest first. A write callback reads
 * through their overlays (newest first) before the store, so writers of one branch each see what
 * the one before wrote and their replays still share one commit, as under the synchronous
 * interface. What it read there is checked again at its replay, after theirs: if one of them
 * failed, the check fails and the callback runs again.
 */
class QueuedWrites {
  private readonly queued: WriteBuffer[] = [];
  private readonly settledOf = new Map<WriteBuffer, Promise<void>>();

  add(buffer: WriteBuffer, settled: Promise<void>): void {
    this.queued.push(buffer);
    this.settledOf.set(buffer, settled);
    void settled.then(() => {
      const index = this.queued.indexOf(buffer);
      if (index >= 0) this.queued.splice(index, 1);
      this.settledOf.delete(buffer);
    });
  }

  /** Resolves once every write queued now has committed or failed. */
  async settled(): Promise<void> {
    await Promise.all([...this.settledOf.values()]);
  }

  /** The overlays of `project` in the queued writes other than `except`, newest first. */
  overlays(project: number, except: WriteBuffer): ProjectOverlay[] {
    const out: ProjectOverlay[] = [];
    for (let i = this.queued.length - 1; i >= 0; i--) {
      const overlay = this.queued[i] === except ? undefined : this.queued[i].existingOverlay(project);
      if (overlay) out.push(overlay);
    }
    return out;
  }

  /** The records the queued writes other than `except` put or delete, newest first. */
  records(except: WriteBuffer): Array<Map<string, { value: unknown } | null>> {
    return this.queued.filter((buffer) => buffer !== except).map((buffer) => buffer.records).reverse();
  }
}

const copy = (buffer: Buffer) => Buffer.from(buffer);
const copyForm = (form: DeflatedObject | undefined): DeflatedObject | undefined =>
  form && { type: form.type, inflatedBytes: form.inflatedBytes, deflated: copy(form.deflated), ...(form.delta ? { delta: { ...form.delta, base: copy(form.delta.base) } } : {}) };

/** The first of `layers` (an overlay, then those of the writes queued before it) that has `hex` kept whole or as its form alone. */
function layered(layers: readonly ProjectOverlay[], hex: string): { object?: AnnexedObject; form?: DeflatedObject } | undefined {
  for (const layer of layers) {
    const object = layer.objects.get(hex);
    if (object) return { object };
    const form = layer.forms.get(hex);
    if (form) return { form };
  }
  return undefined;
}

/**
 * The depth of `oid`'s pack-ready form as a write sees it through `layers`, then the store; -1
 * when it has none. A form kept before wins over a whole form put here (putDeflated never replaces one).
 */
function formDepth(layers: readonly ProjectOverlay[], tx: ProjectReadTx, oid: Oid): number {
  const hex = oidToHex(oid);
  for (const layer of layers) {
    const form = layer.forms.get(hex);
    if (form) return form.delta?.depth ?? 0;
  }
  const stored = tx.peekDeflated(oid);
  if (stored) return stored.delta?.depth ?? 0;
  return layers.some((layer) => layer.wholeForms.has(hex)) ? 0 : -1;
}

class ReadOnlyProject implements ProjectReads, PackFormReads, CollectionReads {
  constructor(
    protected readonly store: LmdbStore,
    readonly project: number,
  ) {}

  protected base<T>(read: (tx: ProjectReadTx) => T): T {
    return this.store.read((tx) => read(tx.project(this.project)));
  }

  async getObject(oid: Oid): Promise<StoredObject | undefined> {
    return (await this.getObjects([oid]))[0];
  }

  async getObjects(oids: readonly Oid[]): Promise<Array<StoredObject | undefined>> {
    return this.base((tx) => oids.map((oid) => tx.getObject(oid)));
  }

  async getObjectsWithAnnex(oids: readonly Oid[]): Promise<Array<AnnexedObject | undefined>> {
    return this.base((tx) => oids.map((oid) => tx.getObjectWithAnnex(oid)));
  }

  async visitObjects(oids: readonly Oid[], visit: (object: StoredObject | undefined, index: number) => boolean): Promise<number> {
    // peekObject's body is lmdb-js's buffer, valid until the next read: visit looks before it.
    return this.base((tx) => {
      for (let i = 0; i < oids.length; i++) if (!visit(tx.peekObject(oids[i]), i)) return i + 1;
      return oids.length;
    });
  }

  async hasObjects(oids: readonly Oid[]): Promise<boolean[]> {
    return this.base((tx) => oids.map((oid) => tx.hasObject(oid)));
  }

  async objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>> {
    return this.base((tx) => oids.map((oid) => tx.objectSize(oid)));
  }

  async objectTypes(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>> {
    return this.base((tx) => oids.map((oid) => tx.objectType(oid)));
  }

  async findObjectsByPrefix(hexPrefix: string, limit: number): Promise<Oid[]> {
    return this.base((tx) => tx.findObjectsByPrefix(hexPrefix, limit));
  }

  async getCommitInfos(oids: readonly Oid[]): Promise<Array<CommitInfo | undefined>> {
    return this.base((tx) => oids.map((oid) => tx.getCommitInfo(oid)));
  }

  async getCommitObjects(commit: Oid): Promise<Buffer | undefined> {
    return this.base((tx) => tx.getCommitObjects(commit));
  }

  async getRef(name: string): Promise<Oid | undefined> {
    return this.base((tx) => tx.getRef(name));
  }

  async listRefs(prefix: string): Promise<Array<{ name: string; oid: Oid }>> {
    return this.base((tx) => tx.listRefs(prefix));
  }

  async getWorkingTree(branch: string): Promise<WorkingTreeState | undefined> {
    return this.base((tx) => tx.getWorkingTree(branch));
  }

  async getVersion(): Promise<number> {
    return this.base((tx) => tx.getVersion());
  }

  async getDeflated(oids: readonly Oid[]): Promise<Array<DeflatedObject | undefined>> {
    // peekDeflated's stream is a view the next read reuses: copied before the next.
    return this.base((tx) => oids.map((oid) => copyForm(tx.peekDeflated(oid))));
  }

  async getDeflatedWithin(oids: readonly Oid[], bytesMax: number): Promise<Array<DeflatedObject | undefined>> {
    return this.base((tx) => {
      const out: Array<DeflatedObject | undefined> = [];
      let bytes = 0;
      for (const oid of oids) {
        if (out.length > 0 && bytes >= bytesMax) break;
        const form = tx.peekDeflated(oid);
        if (form) {
          bytes += form.deflated.length;
          out.push(copyForm(form));
        } else {
          bytes += tx.objectSize(oid) ?? 0;
          out.push(undefined);
        }
      }
      return out;
    });
  }

  async getCollection(): Promise<CollectionState | undefined> {
    return this.base((tx) => tx.getCollection());
  }

  async collectionsBegun(): Promise<number> {
    return this.base((tx) => tx.collectionsBegun());
  }

  async listWorkingTrees(): Promise<Array<{ branch: string; state: WorkingTreeState }>> {
    return this.base((tx) => tx.listWorkingTrees());
  }

  async listStored(after: Oid | null, limit: number): Promise<ListedEntry[]> {
    return this.base((tx) => tx.listStored(after, limit));
  }

  async describeStored(oids: readonly Oid[]): Promise<Array<StoredEntry | undefined>> {
    return this.base((tx) => tx.describeStored(oids));
  }

  async listJournal(after: Oid | null, limit: number): Promise<Oid[]> {
    return this.base((tx) => tx.listJournal(after, limit));
  }
}

class ReadTx implements AsyncStoreReadTx {
  constructor(private readonly store: LmdbStore) {}

  project(project: number): ReadOnlyProject {
    return new ReadOnlyProject(this.store, project);
  }

  async getRecord<T>(key: string): Promise<T | undefined> {
    return this.store.read((tx) => tx.getRecord<T>(key));
  }

  async listRecords<T>(prefix: string, options?: { reverse?: boolean; after?: string; limit?: number }): Promise<Array<{ key: string; value: T }>> {
    return this.store.read((tx) => tx.listRecords<T>(prefix, options));
  }
}

/**
 * One write callback's state: the writes to replay (in order), what its reads see of them, and
 * the checks the replay makes of what it read from the store.
 */
class WriteBuffer {
  readonly replay: Array<(tx: StoreWriteTx) => void> = [];
  readonly checks: Array<(tx: StoreWriteTx) => boolean> = [];
  readonly records = new Map<string, { value: unknown } | null>();
  private readonly projects = new Map<number, ProjectOverlay>();

  constructor(readonly queued: QueuedWrites) {}

  existingOverlay(project: number): ProjectOverlay | undefined {
    return this.projects.get(project);
  }
  private readonly slabs = new SlabAllocator();

  /** A copy of `bytes` that lives as long as this buffer. */
  keep(bytes: Buffer): Buffer {
    const out = this.slabs.allocate(bytes.length);
    bytes.copy(out);
    return out;
  }
  /** The replay's project transactions, made once per project rather than once per write. */
  private replayTx: StoreWriteTx | null = null;
  private readonly replayProjects = new Map<number, ProjectWriteTx>();

  projectTx(tx: StoreWriteTx, project: number): ProjectWriteTx {
    if (this.replayTx !== tx) {
      this.replayTx = tx;
      this.replayProjects.clear();
    }
    let projectTx = this.replayProjects.get(project);
    if (!projectTx) this.replayProjects.set(project, (projectTx = tx.project(project)));
    return projectTx;
  }

  overlay(project: number): ProjectOverlay {
    let overlay = this.projects.get(project);
    if (!overlay) this.projects.set(project, (overlay = new ProjectOverlay()));
    return overlay;
  }
}

class ProjectOverlay {
  readonly objects = new Map<string, AnnexedObject>();
  readonly commitObjects = new Map<string, Buffer>();
  /** Index entries of the commits put in this transaction (WriteProject.commitInfoOf). */
  readonly commitInfos = new Map<string, CommitInfo>();
  readonly refs = new Map<string, Oid | null>();
  readonly workingTrees = new Map<string, WorkingTreeState | null>();
  readonly forms = new Map<string, DeflatedObject>();
  /** Whole forms put for objects (putDeflated), whose type and size a read takes from the object. */
  readonly wholeForms = new Map<string, Buffer>();
  version: number | undefined;
}

class WriteProject extends ReadOnlyProject implements ProjectWrites, PackFormWrites, CollectionWrites {
  private readonly overlay: ProjectOverlay;
  /** Whether a collection of the project runs, read (and checked at the replay) at the first object read. */
  private collecting: Promise<boolean> | undefined;

  constructor(
    store: LmdbStore,
    project: number,
    private readonly buffer: WriteBuffer,
  ) {
    super(store, project);
    this.overlay = buffer.overlay(project);
  }

  /** Replays `write` on the synchronous transaction's project. */
  private later(write: (tx: ProjectWriteTx) => void): void {
    this.buffer.replay.push((tx) => write(this.buffer.projectTx(tx, this.project)));
  }

  /** Replay checks that `read` gives what it gave now. */
  private observed<T>(value: T, read: (tx: ProjectReadTx) => T): T {
    this.buffer.checks.push((tx) => isDeepStrictEqual(read(tx.project(this.project)), value));
    return value;
  }

  /**
   * While a collection of the project runs, the ids the store answered as present (`found[i]`) are
   * checked to be there still at the replay: a collector may remove an object no root reaches, and a
   * write that relied on it (storing a tree that names it, a branch at it) must then run again.
   */
  private async present(oids: readonly Oid[], found: (index: number) => boolean): Promise<void> {
    this.collecting ??= this.getCollection().then((state) => state !== undefined);
    if (!(await this.collecting)) return;
    const kept: Oid[] = [];
    for (let i = 0; i < oids.length; i++) if (found(i)) kept.push(this.buffer.keep(oids[i]));
    if (kept.length === 0) return;
    this.buffer.checks.push((tx) => {
      const project = tx.project(this.project);
      return kept.every((oid) => project.hasObject(oid));
    });
  }

  /** This transaction's overlay, then those of the writes queued before it, newest first. */
  private layers(): ProjectOverlay[] {
    return [this.overlay, ...this.buffer.queued.overlays(this.project, this.buffer)];
  }

  /** The first layer's answer for an object: kept whole, or as its form alone. */
  private layered(hex: string): { object?: AnnexedObject; form?: DeflatedObject } | undefined {
    return layered(this.layers(), hex);
  }

  override async getObjects(oids: readonly Oid[]): Promise<Array<StoredObject | undefined>> {
    return (await this.getObjectsWithAnnex(oids)).map((object) => object && { type: object.type, body: object.body });
  }

  /** Through the overlays, as getObjects: the store's views would miss what this write holds. */
  override async visitObjects(oids: readonly Oid[], visit: (object: StoredObject | undefined, index: number) => boolean): Promise<number> {
    const objects = await this.getObjects(oids);
    for (let i = 0; i < objects.length; i++) if (!visit(objects[i], i)) return i + 1;
    return objects.length;
  }

  /** An object a queued write (this one or one before) stored as its form alone, rebuilt as the store will. */
  private async rebuild(oid: Oid, form: DeflatedObject): Promise<StoredObject> {
    const inflated = inflateSync(form.deflated);
    if (!form.delta) return { type: form.type, body: inflated };
    const [base] = await this.getObjects([form.delta.base]);
    if (!base) throw new MissingObjectError('delta base', form.delta.base, `of ${oidToHex(oid)}`);
    return { type: form.type, body: applyDelta(base.body, inflated) };
  }

  override async getObjectsWithAnnex(oids: readonly Oid[]): Promise<Array<AnnexedObject | undefined>> {
    const found = oids.map((oid) => this.layered(oidToHex(oid)));
    const asked = oids.filter((_, i) => !found[i]?.object);
    const stored = await super.getObjectsWithAnnex(asked);
    await this.present(asked, (i) => stored[i] !== undefined);
    let next = 0;
    const out: Array<AnnexedObject | undefined> = [];
    for (let i = 0; i < oids.length; i++) {
      const mine = found[i]?.object;
      if (mine) {
        out.push({ type: mine.type, body: copy(mine.body), annex: mine.annex && copy(mine.annex) });
        continue;
      }
      const fromStore = stored[next++];
      const form = found[i]?.form;
      out.push(fromStore ?? (form ? { ...(await this.rebuild(oids[i], form)), annex: null } : undefined));
    }
    return out;
  }

  override async hasObjects(oids: readonly Oid[]): Promise<boolean[]> {
    const stored = await super.hasObjects(oids);
    await this.present(oids, (i) => stored[i]);
    return oids.map((oid, i) => stored[i] || this.layered(oidToHex(oid)) !== undefined);
  }

  override async objectTypes(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>> {
    const stored = await super.objectTypes(oids);
    await this.present(oids, (i) => stored[i] !== undefined);
    return oids.map((oid, i) => {
      if (stored[i] !== undefined) return stored[i];
      const mine = this.layered(oidToHex(oid));
      return mine?.object?.type ?? mine?.form?.type;
    });
  }

  override async objectSizes(oids: readonly Oid[]): Promise<Array<number | undefined>> {
    const stored = await super.objectSizes(oids);
    await this.present(oids, (i) => stored[i] !== undefined);
    return oids.map((oid, i) => {
      const mine = this.layered(oidToHex(oid));
      return mine?.object?.body.length ?? stored[i] ?? mine?.form?.inflatedBytes;
    });
  }

  override async findObjectsByPrefix(hexPrefix: string, limit: number): Promise<Oid[]> {
    const found = await super.findObjectsByPrefix(hexPrefix, limit);
    await this.present(found, () => true);
    const seen = new Set(found.map(oidToHex));
    const mine = this.layers().flatMap((layer) => [...layer.objects.keys(), ...layer.forms.keys()]);
    for (const hex of mine.sort()) {
      if (found.length >= limit) break;
      if (hex.startsWith(hexPrefix) && !seen.has(hex)) {
        seen.add(hex);
        found.push(Buffer.from(hex, 'hex'));
      }
    }
    return found.sort(Buffer.compare);
  }

  override async getCommitInfos(oids: readonly Oid[]): Promise<Array<CommitInfo | undefined>> {
    const stored = await super.getCommitInfos(oids);
    await this.present(oids, (i) => stored[i] !== undefined);
    return stored.map((info, i) => info ?? this.layeredCommitInfo(oidToHex(oids[i])));
  }

  private layeredCommitInfo(hex: string): CommitInfo | undefined {
    for (const layer of this.layers()) {
      const info = layer.commitInfos.get(hex);
      if (info) return info;
    }
    return undefined;
  }

  override async getCommitObjects(commit: Oid): Promise<Buffer | undefined> {
    const hex = oidToHex(commit);
    for (const layer of this.layers()) {
      const list = layer.commitObjects.get(hex);
      if (list) return copy(list);
    }
    const stored = await super.getCommitObjects(commit);
    await this.present([commit], () => stored !== undefined);
    return stored;
  }

  /**
   * A ref, working tree or version as this transaction sees it: its own write, else the newest
   * queued write's (checked at the replay, which runs after theirs), else the store's (checked too).
   */
  private async keyed<T>(pick: (layer: ProjectOverlay) => { value: T } | undefined, stored: () => Promise<T>, read: (tx: ProjectReadTx) => T): Promise<T> {
    const [own, ...queued] = this.layers();
    const written = pick(own);
    if (written) return written.value;
    for (const layer of queued) {
      const theirs = pick(layer);
      if (theirs) return this.observed(theirs.value, read);
    }
    return this.observed(await stored(), read);
  }

  override async getRef(name: string): Promise<Oid | undefined> {
    return this.keyed(
      (layer) => (layer.refs.has(name) ? { value: layer.refs.get(name) ?? undefined } : undefined),
      () => super.getRef(name),
      (tx) => tx.getRef(name),
    );
  }

  override async listRefs(prefix: string): Promise<Array<{ name: string; oid: Oid }>> {
    const [own, ...queued] = this.layers();
    const refs = new Map((await super.listRefs(prefix)).map((ref) => [ref.name, ref.oid]));
    const apply = (layer: ProjectOverlay) => {
      for (const [name, oid] of layer.refs) {
        if (!name.startsWith(prefix)) continue;
        if (oid) refs.set(name, oid);
        else refs.delete(name);
      }
    };
    const sorted = () => [...refs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, oid]) => ({ name, oid }));
    // The oldest queued write first, so the newest wins: what the store holds when this replay runs, checked then.
    for (const layer of [...queued].reverse()) apply(layer);
    this.observed(sorted(), (tx) => tx.listRefs(prefix));
    apply(own);
    return sorted();
  }

  override async getWorkingTree(branch: string): Promise<WorkingTreeState | undefined> {
    return this.keyed(
      (layer) => (layer.workingTrees.has(branch) ? { value: layer.workingTrees.get(branch) ?? undefined } : undefined),
      () => super.getWorkingTree(branch),
      (tx) => tx.getWorkingTree(branch),
    );
  }

  override async getVersion(): Promise<number> {
    const version = await this.keyed(
      (layer) => (layer.version !== undefined ? { value: layer.version } : undefined),
      () => super.getVersion(),
      (tx) => tx.getVersion(),
    );
    this.overlay.version = version;
    return version;
  }

  override async getDeflated(oids: readonly Oid[]): Promise<Array<DeflatedObject | undefined>> {
    const stored = await super.getDeflated(oids);
    await this.present(oids, (i) => stored[i] !== undefined);
    const out: Array<DeflatedObject | undefined> = [];
    for (let i = 0; i < oids.length; i++) {
      if (stored[i]) {
        out.push(stored[i]);
        continue;
      }
      const hex = oidToHex(oids[i]);
      let answer: DeflatedObject | undefined;
      for (const layer of this.layers()) {
        const form = layer.forms.get(hex);
        if (form) {
          answer = copyForm(form);
          break;
        }
        const whole = layer.wholeForms.get(hex);
        if (whole) {
          // A form is kept only for a stored object (the store ignores one for an absent object).
          const [object] = await this.getObjects([oids[i]]);
          answer = object && { type: object.type, inflatedBytes: object.body.length, deflated: copy(whole) };
          break;
        }
      }
      out.push(answer);
    }
    return out;
  }

  override async getDeflatedWithin(oids: readonly Oid[], bytesMax: number): Promise<Array<DeflatedObject | undefined>> {
    // The store alone does not see this write's forms: counted by the sizes this write sees instead.
    return deflatedWithinBySizes(this, oids, bytesMax);
  }

  /** The store's, checked at the replay (a collection beginning or ending in between runs the callback again). */
  override async getCollection(): Promise<CollectionState | undefined> {
    return this.observed(await super.getCollection(), (tx) => tx.getCollection());
  }

  /** The store's, checked at the replay (a collection beginning in between runs the callback again). */
  override async collectionsBegun(): Promise<number> {
    return this.observed(await super.collectionsBegun(), (tx) => tx.collectionsBegun());
  }

  override async listWorkingTrees(): Promise<Array<{ branch: string; state: WorkingTreeState }>> {
    return this.observed(await super.listWorkingTrees(), (tx) => tx.listWorkingTrees());
  }

  /** The store's, checked at the replay: an id journalled in between runs the callback again. */
  override async listJournal(after: Oid | null, limit: number): Promise<Oid[]> {
    const [from, listed] = [after && copy(after), await super.listJournal(after, limit)];
    return this.observed(listed, (tx) => tx.listJournal(from, limit));
  }

  beginCollection(state: CollectionState): void {
    const kept = { ...state };
    this.later((tx) => tx.beginCollection(kept));
  }

  endCollection(): void {
    this.later((tx) => tx.endCollection());
  }

  forgetJournal(oids: readonly Oid[]): void {
    const kept = oids.map(copy);
    this.later((tx) => tx.forgetJournal(kept));
  }

  removeStored(oids: readonly Oid[]): void {
    const kept = oids.map(copy);
    this.later((tx) => tx.removeStored(kept));
  }

  replaceFormWhole(oid: Oid, base: Oid, deflated: Buffer): void {
    const [id, from, stream] = [copy(oid), copy(base), copy(deflated)];
    this.later((tx) => tx.replaceFormWhole(id, from, stream));
  }

  replaceForms(changes: readonly FormChange[]): void {
    const kept = changes.map(({ oid, was, form }) => ({
      oid: copy(oid),
      was: { base: was.base && copy(was.base), depth: was.depth },
      form: { deflated: copy(form.deflated), ...(form.delta ? { delta: { base: copy(form.delta.base), bytes: form.delta.bytes, depth: form.delta.depth } } : {}) },
    }));
    this.later((tx) => void tx.replaceForms(kept));
  }

  keepCompact(objects: ReadonlyArray<{ oid: Oid; dropRaw: boolean }>): void {
    const kept = objects.map(({ oid, dropRaw }) => ({ oid: copy(oid), dropRaw }));
    this.later((tx) => tx.keepCompact(kept));
  }

  putObject(type: ObjectType, body: Buffer, annex?: Buffer, similarTo?: Oid | null, nameHash?: number): Oid {
    const oid = hashObject(type, body);
    this.keepObject(oid, type, body, annex, similarTo ?? null, nameHash);
    return oid;
  }

  putObjectWithId(oid: Oid, type: ObjectType, body: Buffer, annex?: Buffer, similarTo: Oid | null = null, nameHash?: number): void {
    this.keepObject(this.buffer.keep(oid), type, body, annex, similarTo, nameHash);
  }

  /**
   * A commit's index entry as the store will make it when the replay puts it: its generation from
   * its parents' entries, put before it in this transaction or stored (a parent in neither counts
   * as generation 1, as the store counts a shallow boundary). Made at put time, once: a history of
   * thousands of commits pushed in one transaction is read back through these.
   */
  private commitInfoOf(body: Buffer): CommitInfo {
    const parsed = commitInfoFromBody(body);
    let generation = 1;
    for (const parent of parsed.parents) {
      const known = this.layeredCommitInfo(oidToHex(parent)) ?? this.base((tx) => tx.getCommitInfo(parent));
      generation = Math.max(generation, (known?.generation ?? 1) + 1);
    }
    return { ...parsed, generation };
  }

  /** `oid` is this transaction's own; body and annex are the transaction's until it ends (asyncTypes.ts), so they are kept as given. */
  private keepObject(oid: Oid, type: ObjectType, body: Buffer, annex: Buffer | undefined, similarTo: Oid | null, nameHash: number | undefined): void {
    const hex = oidToHex(oid);
    // A stored id keeps its first copy, in the overlay as in the store.
    if (this.overlay.objects.has(hex)) return;
    const kept: AnnexedObject = { type, body, annex: annex ?? null };
    const hint = similarTo && this.buffer.keep(similarTo);
    this.overlay.objects.set(hex, kept);
    if (type === 'commit') this.overlay.commitInfos.set(hex, this.commitInfoOf(body));
    this.later((tx) => tx.putObjectWithId(oid, type, kept.body, kept.annex ?? undefined, hint, nameHash));
  }

  async casRef(name: string, expected: Oid | null, next: Oid | null): Promise<void> {
    const current = (await this.getRef(name)) ?? null;
    const matches = expected === null ? current === null : current !== null && current.equals(expected);
    if (!matches) throw new RefChangedError(name, current);
    const [was, to] = [expected && copy(expected), next && copy(next)];
    this.overlay.refs.set(name, to);
    this.later((tx) => tx.casRef(name, was, to));
  }

  putCommitObjects(commit: Oid, records: Buffer): void {
    const [id, list] = [copy(commit), copy(records)];
    this.overlay.commitObjects.set(oidToHex(id), list);
    this.later((tx) => tx.putCommitObjects(id, list));
  }

  putWorkingTree(branch: string, state: WorkingTreeState): void {
    const kept = { tree: copy(state.tree), locks: [...state.locks] };
    this.overlay.workingTrees.set(branch, kept);
    this.later((tx) => tx.putWorkingTree(branch, kept));
  }

  deleteWorkingTree(branch: string): void {
    this.overlay.workingTrees.set(branch, null);
    this.later((tx) => tx.deleteWorkingTree(branch));
  }

  async bumpVersion(): Promise<number> {
    const version = (await this.getVersion()) + 1;
    this.overlay.version = version;
    this.later((tx) => tx.bumpVersion());
    return version;
  }

  putDeflated(oid: Oid, deflated: Buffer): void {
    const [id, stream] = [copy(oid), copy(deflated)];
    // Its type and size come from the object when a read asks (wholeForms).
    if (!this.overlay.forms.has(oidToHex(id))) this.overlay.wholeForms.set(oidToHex(id), stream);
    this.later((tx) => tx.putDeflated(id, stream));
  }

  async putDeflatedDelta(oid: Oid, delta: DeltaForm, deflated: Buffer): Promise<boolean> {
    const hex = oidToHex(oid);
    const [form] = await this.getDeflated([oid]);
    const [object] = await this.getObjects([oid]);
    // Another put of the same id, made together with this one, came first: the first one counts.
    if (form || !object || this.overlay.forms.has(hex) || !this.deltaFits(oid, delta)) return false;
    const kept = { base: copy(delta.base), bytes: delta.bytes, depth: delta.depth };
    const stream = copy(deflated);
    this.overlay.forms.set(hex, { type: object.type, inflatedBytes: object.body.length, delta: kept, deflated: stream });
    const id = copy(oid);
    this.later((tx) => {
      if (!tx.putDeflatedDelta(id, kept, stream)) throw new WriteConflict(`the delta form of ${hex} no longer fits`);
    });
    return true;
  }

  async putObjectAsForm(oid: Oid, type: ObjectType, inflatedBytes: number, form: { deflated: Buffer; delta?: DeltaForm }): Promise<boolean> {
    if (type === 'commit') throw new Error('a commit is stored whole (putObjectWithId), so it is indexed');
    const hex = oidToHex(oid);
    if (this.layered(hex)) return true;
    if (this.base((tx) => tx.hasObject(oid))) {
      // Kept as it is: so it must still be there at the replay.
      await this.present([oid], () => true);
      return true;
    }
    if (form.delta && !this.deltaFits(oid, form.delta)) return false;
    // The stream belongs to the transaction (asyncTypes.ts); the ids may be views into a caller's buffer.
    const delta = form.delta && { base: this.buffer.keep(form.delta.base), bytes: form.delta.bytes, depth: form.delta.depth };
    const kept = { deflated: form.deflated, ...(delta ? { delta } : {}) };
    this.overlay.forms.set(hex, { type, inflatedBytes, ...kept });
    const id = this.buffer.keep(oid);
    this.later((tx) => {
      if (!tx.putObjectAsForm(id, type, inflatedBytes, kept)) throw new WriteConflict(`the form of ${hex} no longer fits`);
    });
    return true;
  }

  /**
   * putObjectAsForm for each of `entries` in turn (a base before the deltas on it), in one call: a
   * received history's 40,000 trees and blobs cost one overlay lookup, one read of the store and
   * one replay step each, not a promise, a read transaction and a closure. A delta is kept at 1 +
   * its base's depth when that is at most `depthMax`.
   */
  async putObjectsAsForms(entries: readonly ReceivedForm[], depthMax: number): Promise<boolean[]> {
    const layers = this.layers();
    const answers = new Array<boolean>(entries.length).fill(false);
    const kept: Array<{ oid: Oid; type: ObjectType; inflatedBytes: number; form: { deflated: Buffer; delta?: DeltaForm } }> = [];
    const held: Oid[] = [];
    // Before anything is kept: a refused call leaves the overlay as it was.
    if (entries.some((entry) => entry.type === 'commit')) throw new Error('a commit is stored whole (putObjectWithId), so it is indexed');
    this.base((tx) => {
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i];
        const hex = oidToHex(entry.oid);
        if (layered(layers, hex)) {
          answers[i] = true;
          continue;
        }
        if (tx.hasObject(entry.oid)) {
          held.push(entry.oid);
          answers[i] = true;
          continue;
        }
        let delta: DeltaForm | undefined;
        if (entry.delta) {
          const baseDepth = entry.delta.base.equals(entry.oid) ? -1 : formDepth(layers, tx, entry.delta.base);
          if (baseDepth < 0 || baseDepth + 1 > depthMax) continue;
          delta = { base: this.buffer.keep(entry.delta.base), bytes: entry.delta.bytes, depth: baseDepth + 1 };
        }
        const form = { deflated: entry.deflated, ...(delta ? { delta } : {}) };
        this.overlay.forms.set(hex, { type: entry.type, inflatedBytes: entry.inflatedBytes, ...form });
        kept.push({ oid: this.buffer.keep(entry.oid), type: entry.type, inflatedBytes: entry.inflatedBytes, form });
        answers[i] = true;
      }
    });
    // Kept as they are: so they must still be there at the replay.
    if (held.length > 0) await this.present(held, () => true);
    if (kept.length > 0) {
      this.later((tx) => {
        const unfit = tx.putObjectsAsForms(kept);
        if (unfit >= 0) throw new WriteConflict(`the form of ${oidToHex(kept[unfit].oid)} no longer fits`);
      });
    }
    return answers;
  }

  /**
   * As the store's check: the base has a form, and the delta's depth is 1 + the base's. A pack's
   * chains are mostly on bases put in this transaction, whose depth the overlay knows.
   */
  private deltaFits(oid: Oid, delta: DeltaForm): boolean {
    if (delta.base.equals(oid)) return false;
    const baseDepth = this.base((tx) => formDepth(this.layers(), tx, delta.base));
    return baseDepth >= 0 && delta.depth === baseDepth + 1;
  }
}

class WriteTx implements AsyncStoreWriteTx {
  constructor(
    private readonly store: LmdbStore,
    private readonly buffer: WriteBuffer,
  ) {}

  private readonly projects = new Map<number, WriteProject>();

  get bufferedWrites(): number {
    return this.buffer.replay.length;
  }

  project(project: number): WriteProject {
    let tx = this.projects.get(project);
    if (!tx) this.projects.set(project, (tx = new WriteProject(this.store, project, this.buffer)));
    return tx;
  }

  async getRecord<T>(key: string): Promise<T | undefined> {
    const mine = this.buffer.records.get(key);
    if (mine !== undefined) return mine === null ? undefined : (structuredClone(mine.value) as T);
    // The newest queued write's record, checked at the replay (which runs after theirs), else the store's.
    const queued = this.buffer.queued.records(this.buffer).find((records) => records.has(key))?.get(key);
    const value = queued !== undefined ? (queued === null ? undefined : (structuredClone(queued.value) as T)) : this.store.read((tx) => tx.getRecord<T>(key));
    this.buffer.checks.push((tx) => isDeepStrictEqual(tx.getRecord(key), value));
    return value;
  }

  async listRecords<T>(prefix: string, options: { reverse?: boolean; after?: string; limit?: number } = {}): Promise<Array<{ key: string; value: T }>> {
    // A listing is read from the store alone: if a queued write changes a record under `prefix`, the
    // replay's check fails and the callback runs again once the queue has committed (runWrite).
    const mine = [...this.buffer.records].filter(([key]) => key.startsWith(prefix));
    // Enough of the store's to fill `limit` whatever this transaction deleted.
    const asked = { ...options, limit: options.limit === undefined ? undefined : options.limit + mine.length };
    const stored = this.store.read((tx) => tx.listRecords<T>(prefix, asked));
    this.buffer.checks.push((tx) => isDeepStrictEqual(tx.listRecords(prefix, asked), stored));
    const merged = new Map(stored.map(({ key, value }) => [key, value]));
    for (const [key, record] of mine) {
      if (record) merged.set(key, structuredClone(record.value) as T);
      else merged.delete(key);
    }
    const after = options.after;
    const keys = [...merged.keys()]
      .filter((key) => after === undefined || (options.reverse ? key < after : key > after))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (options.reverse) keys.reverse();
    return keys.slice(0, options.limit ?? keys.length).map((key) => ({ key, value: merged.get(key)! }));
  }

  putRecord<T>(key: string, value: T): void {
    const kept = structuredClone(value);
    this.buffer.records.set(key, { value: kept });
    this.buffer.replay.push((tx) => tx.putRecord(key, kept));
  }

  deleteRecord(key: string): void {
    this.buffer.records.set(key, null);
    this.buffer.replay.push((tx) => tx.deleteRecord(key));
  }
}

export class LmdbAsyncStore implements AsyncStore {
  readonly packForms = true;
  readonly formsAlone = true;
  readonly writeObjectsMax = WRITE_OBJECTS_MAX;
  readonly collection = true;
  private readonly writers = new WriterQueue();
  private readonly queued = new QueuedWrites();
  private readonly writeListeners: Array<(durationMs: number, committed: boolean) => void> = [];
  private closed = false;

  constructor(readonly sync: LmdbStore) {}

  get threadAccess(): StoreThreadAccess {
    return { backend: 'lmdb', path: this.sync.path };
  }

  async read<T>(action: (tx: AsyncStoreReadTx) => Promise<T>): Promise<T> {
    this.assertOpen();
    return action(new ReadTx(this.sync));
  }

  /** Every write, committed or not, timed from its callback's start to its commit's durability. */
  async write<T>(action: (tx: AsyncStoreWriteTx) => Promise<T>): Promise<T> {
    this.assertOpen();
    const started = performance.now();
    let committed = false;
    try {
      const result = await this.runWrite(action);
      committed = true;
      return result;
    } finally {
      const durationMs = performance.now() - started;
      for (const listener of this.writeListeners) listener(durationMs, committed);
    }
  }

  private async runWrite<T>(action: (tx: AsyncStoreWriteTx) => Promise<T>): Promise<T> {
    // First optimistically: the queue is released once the replay is queued, so writes that
    // follow read through its overlay and share its commit (QueuedWrites); a replay that finds
    // what its callback read changed (a writer before it failed, or a writer of the synchronous
    // interface came between) runs again, alone: after the queued writes settle, holding the queue
    // until it has committed.
    let exclusive = false;
    for (let attempt = 1; ; attempt++) {
      const release = once(await this.writers.acquire());
      try {
        // Run again after a conflict: with nothing queued before it, so it reads only committed state.
        if (exclusive) await this.queued.settled();
        const buffer = new WriteBuffer(this.queued);
        const result = await action(new WriteTx(this.sync, buffer));
        let committedOrFailed!: () => void;
        const settled = new Promise<void>((resolve) => (committedOrFailed = resolve));
        const committed = this.sync.write(
          (tx) => {
            for (const check of buffer.checks) if (!check(tx)) throw new WriteConflict('another writer changed what this transaction read');
            for (const write of buffer.replay) write(tx);
          },
          {
            afterCommit: () => {
              committedOrFailed();
              release();
            },
          },
        );
        void committed.catch(() => committedOrFailed());
        this.queued.add(buffer, settled);
        if (!exclusive) release();
        await committed;
        return result;
      } catch (error) {
        if (!(error instanceof WriteConflict) || attempt >= WRITE_ATTEMPTS_MAX) throw error;
        exclusive = true;
      } finally {
        release();
      }
    }
  }

  async putFormsAlone(project: number, entries: readonly ReceivedForm[], depthMax: number, hold?: FormHold): Promise<boolean[]> {
    if (entries.length === 0) return [];
    if (hold) {
      const { held } = lmdbHold(hold, project);
      return this.writeAlone((tx) => {
        (tx as StoreWriteTx & { useHold(project: number, held: HeldForms): void }).useHold(project, held);
        return tx.project(project).putReceivedForms(entries, depthMax);
      });
    }
    const answers = await this.writeAlone((tx) => tx.project(project).putReceivedForms(entries, depthMax));
    // A history too large to hold every pointer of: what is held goes in now, sorted still.
    const held = this.sync.heldFormsOf(project);
    if (held && held.size >= HELD_POINTERS_MAX) await this.putHeldPointers(held);
    // (Whole, mid-seed: their forms' pointers are not in yet, and a read must find them.)
    if (held && held.commitBytes >= HELD_COMMIT_BYTES_MAX) await this.putHeldCommits(held, false);
    return answers;
  }

  holdForms(project: number): void {
    this.sync.holdForms(project);
  }

  async settleForms(project: number, keep: boolean): Promise<void> {
    // Held until every pointer is in: a form another write puts meanwhile (the deflate cache's, of
    // an object whose held form it cannot see) is held too, not put in the middle of the project's
    // range ahead of the sorted runs, where each such key left a page half full (packed grew from
    // 2.5 to 5.8 MB in a seed that raced 500 of them).
    const held = keep ? this.sync.heldFormsOf(project) : undefined;
    while (held && held.size > 0) await this.putHeldPointers(held);
    // Then the commits: one whose form is in (its pointer put) is kept as that form alone, as trees
    // and blobs are: reads rebuild it (one inflate, cached), and the commit index keeps what walks
    // of history read. Forms held meanwhile go in last; their commits keep their raw copies.
    while (held && held.commitCount > 0) await this.putHeldCommits(held, true);
    while (held && held.size > 0) await this.putHeldPointers(held);
    this.sync.releaseHeldForms(project);
  }

  private async putHeldCommits(held: HeldForms, formsAlone: boolean): Promise<void> {
    let first = true;
    for (const run of held.drainCommits(HELD_COMMITS_PER_WRITE, HELD_COMMIT_BYTES_PER_WRITE)) {
      if (!first) await turn();
      first = false;
      await this.writeAlone((tx) => this.sync.putHeldCommits(tx, run, formsAlone, held));
      held.forgetCommits(run);
    }
  }

  private async putHeldPointers(held: HeldForms): Promise<void> {
    let first = true;
    for (const run of held.drain(HELD_POINTERS_PER_WRITE)) {
      if (!first) await turn();
      first = false;
      await this.writeAlone((tx) => this.sync.putHeldPointers(tx, run, held));
    }
  }

  beginFormHold(project: number): FormHold {
    const hold: LmdbFormHold = { project, held: this.sync.beginPrivateHold(project) };
    return hold;
  }

  async prepareFormHold(hold: FormHold): Promise<void> {
    const { held } = lmdbHold(hold, hold.project);
    // The held pointers sorted now rather than after the verdict (some 85 ms of a 3,000-commit
    // push's first), in slices between which other requests run.
    let since = performance.now();
    for (const _ of held.prepare()) {
      if (performance.now() - since < PREPARE_SLICE_MS) continue;
      await turn();
      since = performance.now();
    }
  }

  async endFormHold(hold: FormHold, keep: boolean): Promise<boolean> {
    const { project, held } = lmdbHold(hold, hold.project);
    try {
      if (keep) {
        // Only pointers go in, sorted, where none is: a form another write put meanwhile wins, and
        // the held one's bytes stay dead in its shelf until the shelf is compacted. Then the
        // commits held, parents first, each with its raw copy: their trees are in by then.
        while (held.size > 0) await this.putHeldPointers(held);
        while (held.commitCount > 0) await this.putHeldCommits(held, false);
        return held.missing === 0;
      } else {
        for (let start = 0; start < held.shelves.length; start += HELD_SHELVES_DROPPED_PER_WRITE) {
          const keys = held.shelves.slice(start, start + HELD_SHELVES_DROPPED_PER_WRITE);
          await this.writeAlone((tx) => this.sync.dropShelves(tx, keys));
        }
        return false;
      }
    } finally {
      this.sync.endPrivateHold(project, held);
    }
  }


  async dropProjectKeys(project: number, keysMax: number): Promise<number> {
    return this.writeAlone((tx) => tx.dropProjectKeys(project, keysMax));
  }

  /**
   * After a collection: shelves of pack-ready forms (src/store/lmdb.ts) less than three quarters
   * alive are rewritten with their live forms alone, SHELVES_PER_WRITE at a time (a collection that
   * turns chains around replaces forms every time it runs: at one half, a store collected every
   * 2,000 new objects kept 22 % dead bytes in its shelves); once the ids removed since the project's
   * entries were last packed outnumber those kept, they are packed again (repackProject), and
   * `objects` alone once the raw copies removed or dropped since it was last packed outnumber those
   * kept (objects stored since the collection before were 690 leaf pages for 2,558 entries that
   * fit in 293). Listings run a page per turn of the event loop. Nothing but a collection removes
   * or moves a shelved form, and one runs per project at a time, so what a listing found stays true.
   */
  async compactAfterCollection(project: number, collected: { removedIds: number; keptIds: number; rawRemoved?: number; rawKept?: number }): Promise<{ rewrittenBytes: number; freedBytes: number }> {
    const total = await this.compactShelves(project);
    const key = `${REMOVED_SINCE_REPACK_PREFIX}${project}`;
    const rawKey = `${RAW_REMOVED_SINCE_REPACK_PREFIX}${project}`;
    const [removedBefore, rawRemovedBefore] = await this.read(async (tx) => [(await tx.getRecord<number>(key)) ?? 0, (await tx.getRecord<number>(rawKey)) ?? 0]);
    const removedSince = removedBefore + collected.removedIds;
    const rawRemovedSince = rawRemovedBefore + (collected.rawRemoved ?? 0);
    const before = this.sync.pagesInUseBytes();
    if (removedSince >= collected.keptIds && removedSince > 0) {
      total.rewrittenBytes += await this.repackProject(project, REPACKED_TABLES);
      await this.write(async (tx) => {
        tx.deleteRecord(key);
        tx.deleteRecord(rawKey);
      });
    } else if (rawRemovedSince >= (collected.rawKept ?? Infinity) && rawRemovedSince > 0) {
      // Raw copies come and go far more than ids: a project whose history is kept as forms keeps
      // few (its commits and hot trees) among all that pass through `objects`.
      total.rewrittenBytes += await this.repackProject(project, ['objects']);
      await this.write(async (tx) => {
        tx.putRecord(key, removedSince);
        tx.deleteRecord(rawKey);
      });
    } else {
      await this.write(async (tx) => {
        tx.putRecord(key, removedSince);
        tx.putRecord(rawKey, rawRemovedSince);
      });
    }
    total.freedBytes += Math.max(0, before - this.sync.pagesInUseBytes());
    return total;
  }

  /**
   * Removals leave LMDB's pages sparse: a page merges with a neighbour only once it is under a
   * quarter full, so a project that lost most of its entries keeps them on several times the
   * pages they need. Taking them out and putting them back in key order packs them full again
   * (measured: 10,000 overwrites of 100 files, collected, 1,133 entries on 144 pages of `objects`
   * where a fresh store used 31). A write per REPACK_ENTRIES entries or REPACK_BYTES of values.
   */
  private async repackProject(project: number, tables: readonly RepackedTable[]): Promise<number> {
    let bytes = 0;
    for (const table of tables) {
      // From the end of the range down: see StoreWriteTx.repackProjectKeys.
      for (let before: Buffer | null = null; ; ) {
        const from: Buffer | null = before;
        const done: { last: Buffer | null; bytes: number } = await this.writeAlone((tx) => tx.repackProjectKeys(project, table, from, REPACK_ENTRIES, REPACK_BYTES));
        bytes += done.bytes;
        if (!done.last) break;
        before = done.last;
        await turn();
      }
    }
    return bytes;
  }

  private async compactShelves(project: number): Promise<{ rewrittenBytes: number; freedBytes: number }> {
    const live = new Map<string, number>();
    await this.eachShelvedForm(project, (form) => live.set(form.shelf, (live.get(form.shelf) ?? 0) + form.length));
    const chosen = new Map<string, ShelvedForm[]>();
    for (let after: string | null = null; ; ) {
      const page = this.sync.listShelves(project, after, SHELF_PAGE);
      // A push's shelves whose pointers are held until its check passes look dead, and are not.
      const held = this.sync.heldShelves(project);
      for (const { shelf, bytes } of page) if ((live.get(shelf) ?? 0) < bytes * SHELF_LIVE_SHARE_MIN && !held.has(shelf)) chosen.set(shelf, []);
      if (page.length < SHELF_PAGE) break;
      after = page[page.length - 1].shelf;
      await turn();
    }
    if (chosen.size === 0) return { rewrittenBytes: 0, freedBytes: 0 };
    await this.eachShelvedForm(project, (form) => chosen.get(form.shelf)?.push(form));
    const shelves = [...chosen].map(([id, forms]) => ({ id: Buffer.from(id, 'hex'), forms }));
    const total = { rewrittenBytes: 0, freedBytes: 0 };
    for (let start = 0; start < shelves.length; start += SHELVES_PER_WRITE) {
      const done = await this.writeAlone((tx) => tx.rewriteShelves(project, shelves.slice(start, start + SHELVES_PER_WRITE)));
      total.rewrittenBytes += done.rewrittenBytes;
      total.freedBytes += done.freedBytes;
      await turn();
    }
    return total;
  }

  private async eachShelvedForm(project: number, visit: (form: ShelvedForm & { shelf: string }) => void): Promise<void> {
    for (let after: Oid | null = null; ; ) {
      const { forms, next } = this.sync.listShelvedForms(project, after, SHELF_PAGE);
      forms.forEach(visit);
      if (!next) return;
      after = next;
      await turn();
    }
  }

  /** A write of the synchronous interface, holding the writer queue until it has committed. */
  private async writeAlone<T>(action: (tx: StoreWriteTx) => T): Promise<T> {
    this.assertOpen();
    const release = once(await this.writers.acquire());
    try {
      return await this.sync.write(action, { afterCommit: release });
    } finally {
      release();
    }
  }

  onObjectsStored(listener: (project: number, stored: NewObject[]) => void): void {
    this.sync.onObjectsStored(listener);
  }

  async listUndeflated(after: ObjectCursor | null, limit: number): Promise<UndeflatedPage> {
    this.assertOpen();
    return this.sync.listUndeflated(after, limit);
  }

  onWriteDone(listener: (durationMs: number, committed: boolean) => void): void {
    this.writeListeners.push(listener);
  }

  async storageUsedBytes(): Promise<number> {
    return this.sync.storageUsedBytes();
  }

  backup(dir: string): Promise<void> {
    return this.sync.backup(dir);
  }

  close(): Promise<void> {
    this.closed = true;
    return this.sync.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }
}

