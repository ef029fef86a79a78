/**
 * A received pack, read and checked as receive-pack must before storing anything: parsePack
 * (entries, deltas resolved, ids computed, limits enforced; Documentation/gitformat-pack.txt),
 * every object as `git fsck --strict` would, and the history each received object needs (its
 * "gaps": what neither the pack nor the store has). Pure and synchronous given two lookups into
 * the receiver's store, so it can run on a worker thread (src/service/packChecker.ts) as well as
 * inline; a refusal is a result, not a throw, so it crosses a thread boundary as plain data.
 */
import { commitLinks } from './commit.js';
import { FsckError, assertObjectsFsckClean, type FsckMessageId } from './fsck.js';
import { OID_BYTES, oidToHex, type ObjectType, type Oid } from './oid.js';
import { decodeTag } from './tag.js';
import { PackFormatError, parsePack, type ExternalObject, type PackObject, type ParsePackOptions } from './pack.js';
import { introducedObjects } from './introducedObjects.js';
import { OidTable } from './oidTable.js';
import { ENTRY_GITLINK, ENTRY_TREE, TreeCursor } from './tree.js';
import { TREE_DEPTH_MAX, commitTreesDepthProblem, treeDepthProblem, treeHeight } from './treeDepth.js';

/** The parse's limits, and `fsckTolerated`: fsck message ids let pass (CLONE_TOLERATED_FSCK, for a seed). */
export type PackLimits = Omit<ParsePackOptions, 'resolveExternal' | 'dropBlobBodies' | 'onResolved'> & { fsckTolerated?: readonly FsckMessageId[] };

/** What the receiver's store answers while a pack is checked. */
export interface StoreLookups {
  /** A thin pack's delta base. */
  object(oid: Oid): ExternalObject | undefined;
  /** Whether the store holds an object (and so, by its rules, everything the object names). */
  has(oid: Oid): boolean;
  /**
   * Optional, asked instead of `has` where a link to a stored object is followed: the stored
   * object's type (null: stored, its type not known yet), undefined when it is not stored.
   */
  typeOf?(oid: Oid): ObjectType | null | undefined;
}

/** Why a received object cannot be stored: the object its history lacks, and whether a shallow clone cut it there. */
export interface Gap {
  /** Hex id of the first missing object found under it. */
  missing: string;
  /** The missing object is a parent of a commit the client said it holds shallow. */
  shallow: boolean;
}

export type PackCheckResult =
  | {
      ok: true;
      objects: PackObject[];
      gaps: Map<string, Gap>;
      /**
       * For each received commit without a gap (by index in `objects`): its introducedObjects()
       * list. Made when first asked, so a receiver stores the objects first (on the checker's
       * thread they are made once asked, not beside the store's work).
       */
      commitObjects: (pause?: () => Promise<void>) => Promise<Map<number, Buffer>>;
      /** Says the lists will not be asked for, so a checker may let go of what they need. */
      forgetCommitObjects?: () => void;
    }
  | { ok: false; message: string };

/**
 * A pack whose entries are parsed (deltas resolved, ids computed, limits kept) while the rest of its
 * check still runs: a receiver may prepare to store `objects` meanwhile, and stores them only once
 * `result` passes (it carries the same objects).
 */
export interface ParsedPack {
  parsed: true;
  objects: PackObject[];
  result: Promise<PackCheckResult>;
}

/**
 * `clientShallow`: hex ids of the push's `shallow` lines (a push from a shallow clone).
 */
export function checkReceivedPack(pack: Buffer, limits: PackLimits, lookups: StoreLookups, clientShallow: ReadonlySet<string> = new Set()): PackCheckResult {
  const parsed = parseReceivedPack(pack, limits, lookups);
  return parsed.ok ? checkParsedPack(parsed.objects, lookups, clientShallow, new Set(limits.fsckTolerated)) : parsed;
}

/**
 * The first part of checkReceivedPack: the pack's entries parsed, deltas resolved and ids computed,
 * with the ids of the thin pack's bases the store gave. `onResolved`: told of each object once
 * resolved, bases first (ParsePackOptions.onResolved).
 */
export function parseReceivedPack(
  pack: Buffer,
  limits: PackLimits,
  lookups: StoreLookups,
  onResolved?: ParsePackOptions['onResolved'],
): { ok: true; objects: PackObject[]; externalBases: Oid[] } | { ok: false; message: string } {
  try {
    const { fsckTolerated: _tolerated, ...parseLimits } = limits;
    const { objects, externalBases } = parsePack(pack, { ...parseLimits, resolveExternal: (oid) => lookups.object(oid), dropBlobBodies: true, onResolved });
    return { ok: true, objects, externalBases };
  } catch (error) {
    if (error instanceof PackFormatError || error instanceof FsckError) return { ok: false, message: error.message };
    throw error;
  }
}

/** The rest of checkReceivedPack, on the objects parseReceivedPack gave: fsck, special blobs, tree depth, history gaps. */
export function checkParsedPack(objects: PackObject[], lookups: StoreLookups, clientShallow: ReadonlySet<string> = new Set(), fsckTolerated: ReadonlySet<FsckMessageId> = new Set()): PackCheckResult {
  try {
    const received = indexOfObjects(objects);
    const read = (oid: Oid): ExternalObject | undefined => {
      const index = received.get(oid);
      return index >= 0 ? objects[index] : lookups.object(oid);
    };
    // Then fsck_finish(): the .gitmodules and .gitattributes blobs the received trees name, in the pack or stored.
    assertObjectsFsckClean(objects, read, fsckTolerated);
    const readTree = (oid: Oid): Buffer | undefined => {
      const tree = read(oid);
      return tree?.type === 'tree' ? tree.body : undefined;
    };
    checkTagTargets(objects, received);
    // The history's gaps, and the height of every received tree in the same walk (which refuses
    // an object named as another type).
    const storedType = lookups.typeOf ? (oid: Oid) => lookups.typeOf!(oid) : (oid: Oid) => (lookups.has(oid) ? null : undefined);
    const { gaps, treeHeights, storedHeights } = walkHistory(objects, storedType, clientShallow, received, readTree);
    // git's core.maxTreeDepth on every received commit's tree, stored subtrees included.
    const tooDeep = treeHeights
      ? receivedCommitsDepthProblem(objects, received, treeHeights, readTree, storedHeights)
      : // A walk cut short by a gap leaves heights unknown: the trees are measured on their own.
        commitTreesDepthProblem(
          objects.filter((object) => object.type === 'commit').map((object) => ({ commit: object.oid, tree: commitLinks(object.body).tree })),
          readTree,
        );
    if (tooDeep) return { ok: false, message: tooDeep };
    return {
      ok: true,
      objects,
      gaps,
      // `pause`: awaited every few milliseconds while they are made (the checker's thread takes its next pack meanwhile).
      commitObjects: async (pause) => (pause ? receivedCommitObjectsPausing(objects, gaps, read, pause) : receivedCommitObjects(objects, gaps, read)),
    };
  } catch (error) {
    if (error instanceof PackFormatError || error instanceof FsckError) return { ok: false, message: error.message };
    throw error;
  }
}

/**
 * The received commits and trees whose history is incomplete, each with the first missing object
 * under it. Whatever the store holds is complete already (it never stores anything incomplete),
 * so only received objects are walked, depth first without recursion. Ids stay bytes: the received
 * objects are found through an OidTable and tree entries are read in place (a 3,000-commit push
 * names some 40,000 objects several times each). `received`: each object's index by its id, when the
 * caller has one.
 */
export function historyGaps(objects: PackObject[], has: (oid: Oid) => boolean, clientShallow: ReadonlySet<string>, received = indexOfObjects(objects)): Map<string, Gap> {
  return walkHistory(objects, (oid) => (has(oid) ? null : undefined), clientShallow, received, null).gaps;
}

/**
 * historyGaps(), and with `readTree` (a tree's body, received or stored) the height of every
 * received tree as treeHeight() measures it, capped at TREE_DEPTH_MAX + 1: a tree's height is
 * known once its subtrees are walked, so the depth check reads no entry a second time. A stored
 * subtree is measured by treeHeight(), through `readTree`. Heights are null when a gap cut the
 * walk short (the objects above a gap are not walked further).
 */
function walkHistory(
  objects: PackObject[],
  /** A stored object's type (null: stored, type unknown), undefined when it is not stored. */
  storedType: (oid: Oid) => ObjectType | null | undefined,
  clientShallow: ReadonlySet<string>,
  received: OidTable,
  readTree: ((oid: Oid) => Buffer | undefined) | null,
): { gaps: Map<string, Gap>; treeHeights: Int32Array | null; storedHeights: OidTable } {
  const state = new Uint8Array(objects.length);
  const gapOf: Array<Gap | undefined> = new Array(objects.length);
  const heights = new Int32Array(objects.length);
  /** Heights of stored trees measured so far (treeHeight's memo). */
  const storedHeights = new OidTable();
  /** Ids the store was asked about: STORED_NOT, STORED_TYPE_UNKNOWN or the stored type's code. */
  const stored = new OidTable();
  const gaps = new Map<string, Gap>();
  // The stack's frames are kept by depth and reused: a 3,000-commit push opens some 40,000, and
  // one allocation each was a third of the walk.
  const frames: WalkFrame[] = [];
  let depth = 0;
  const open = (index: number): void => {
    (frames[depth] ??= new WalkFrame()).open(objects[index], index);
    depth++;
    state[index] = ON_STACK;
  };
  for (let root = 0; root < objects.length; root++) {
    if (state[root] !== UNSEEN) continue;
    open(root);
    while (depth > 0) {
      const frame = frames[depth - 1];
      if (!frame.step()) {
        state[frame.index] = COMPLETE;
        heights[frame.index] = frame.height;
        depth--;
        if (depth > 0) frames[depth - 1].reach(frame.height);
        continue;
      }
      const ids = frame.ids();
      const at = frame.at;
      const index = received.get(ids, at);
      let gap: Gap | undefined;
      if (index >= 0) {
        const expected = frame.expected();
        if (objects[index].type !== expected) throw typeMismatch(objects[frame.index], frame.at === 0 ? 0 : 1, objects[index], expected);
        if (state[index] === COMPLETE) {
          frame.reach(heights[index]);
          continue;
        }
        if (state[index] === MISSING) gap = gapOf[index];
        // Ids are hashes of the content, so objects cannot form a cycle; this only keeps a forged one finite.
        else if (state[index] === ON_STACK) gap = { missing: oidToHex(objects[index].oid), shallow: false };
        else {
          open(index);
          continue;
        }
      } else {
        let held = stored.get(ids, at);
        if (held < 0) {
          const type = storedType(ids.subarray(at, at + OID_BYTES));
          held = type === undefined ? STORED_NOT : type === null ? STORED_TYPE_UNKNOWN : STORED_TYPE_CODES[type];
          stored.add(ids, at, held);
        }
        if (held !== STORED_NOT) {
          // As git's index-pack --strict (check_object): a linked object it holds must be of the link's type.
          const expected = frame.expected();
          if (held !== STORED_TYPE_UNKNOWN && held !== STORED_TYPE_CODES[expected]) {
            throw new PackFormatError(`object ${ids.toString('hex', at, at + OID_BYTES)}: expected type ${expected}, found ${STORED_TYPES[held]}`);
          }
          if (frame.subtree && readTree !== null) frame.reach(treeHeight(ids.subarray(at, at + OID_BYTES), readTree, TREE_DEPTH_MAX, storedHeights));
          continue;
        }
        const top = objects[frame.index];
        gap = { missing: ids.toString('hex', at, at + OID_BYTES), shallow: top.type === 'commit' && clientShallow.has(oidToHex(top.oid)) };
      }
      // Everything on the stack leads to the gap, so it has the same one.
      for (let k = 0; k < depth; k++) {
        const index = frames[k].index;
        state[index] = MISSING;
        gapOf[index] = gap;
        gaps.set(oidToHex(objects[index].oid), gap!);
      }
      depth = 0;
    }
  }
  return { gaps, treeHeights: readTree && gaps.size === 0 ? heights : null, storedHeights };
}

/** What walkHistory notes of an id the store was asked about. */
const STORED_NOT = 0;
const STORED_TYPE_UNKNOWN = 1;
const STORED_TYPE_CODES: Record<ObjectType, number> = { commit: 2, tree: 3, blob: 4, tag: 5 };
const STORED_TYPES = Object.fromEntries(Object.entries(STORED_TYPE_CODES).map(([type, code]) => [code, type])) as Record<number, ObjectType>;

/** Heights past this are all "too deep": TREE_DEPTH_MAX + 1, as treeHeight() returns with its limit. */
const TREE_HEIGHT_CAP = TREE_DEPTH_MAX + 1;

/**
 * commitTreesDepthProblem() on the received commits, their trees' heights taken from a walk
 * (walkHistory): the first commit whose tree has a path deeper than TREE_DEPTH_MAX, or null. A
 * commit whose tree is stored is measured through `readTree`, with the walk's `storedHeights`.
 */
function receivedCommitsDepthProblem(
  objects: PackObject[],
  received: OidTable,
  heights: Int32Array,
  readTree: (oid: Oid) => Buffer | undefined,
  storedHeights: OidTable,
): string | null {
  for (const object of objects) {
    if (object.type !== 'commit') continue;
    const tree = commitLinks(object.body).tree;
    const index = received.get(tree);
    const height = index >= 0 ? (objects[index].type === 'tree' ? heights[index] : 0) : treeHeight(tree, readTree, TREE_DEPTH_MAX, storedHeights);
    if (height > TREE_DEPTH_MAX) return treeDepthProblem(object.oid);
  }
  return null;
}

/** Each object's index by its id. */
function indexOfObjects(objects: PackObject[]): OidTable {
  const table = new OidTable(objects.length);
  objects.forEach((object, index) => table.add(object.oid, 0, index));
  return table;
}

const NO_IDS = Buffer.alloc(0);
const UNSEEN = 0;
const ON_STACK = 1;
const COMPLETE = 2;
const MISSING = 3;

/**
 * A received object on the walk's stack, and the link it is at: a tree's entries are read in place
 * (a submodule's commit lives elsewhere and is passed over), a commit names its tree, then its
 * parents, and a blob or tag names nothing the walk follows (tags are checkTagTargets' part).
 */
class WalkFrame {
  index = 0;
  /** Where the current link's id starts in ids(). */
  at = 0;
  /** Whether the current link is a tree's subtree. */
  subtree = false;
  /** A tree's height so far (1 for a tree with entries, then 1 + its tallest subtree's); 0 for the rest. */
  height = 0;
  private links: Buffer = NO_IDS;
  private next = 0;
  private readonly cursor = new TreeCursor(NO_IDS);
  private isTree = false;

  open(object: PackObject, index: number): void {
    this.index = index;
    this.height = 0;
    this.subtree = false;
    this.next = 0;
    this.isTree = object.type === 'tree';
    if (this.isTree) {
      this.cursor.reset(object.body);
      this.height = object.body.length > 0 ? 1 : 0;
    } else if (object.type === 'commit') {
      const commit = commitLinks(object.body);
      this.links = commit.parents.length === 0 ? commit.tree : Buffer.concat([commit.tree, ...commit.parents]);
    } else {
      // A blob's body is not read: the parse may have dropped it (it would be rebuilt).
      this.links = NO_IDS;
    }
  }

  /** Moves to the next link; false after the last. */
  step(): boolean {
    if (this.isTree) {
      const cursor = this.cursor;
      while (cursor.next()) {
        if (cursor.kind === ENTRY_GITLINK) continue;
        this.at = cursor.oidStart;
        this.subtree = cursor.kind === ENTRY_TREE;
        return true;
      }
      this.subtree = false;
      return false;
    }
    if (this.next >= this.links.length) return false;
    this.at = this.next;
    this.next += OID_BYTES;
    return true;
  }

  /** The buffer the current link's id is in. */
  ids(): Buffer {
    return this.isTree ? this.cursor.body : this.links;
  }

  /** The type the current link's object must have: a commit names its tree first, then its parents. */
  expected(): ObjectType {
    if (this.isTree) return this.subtree ? 'tree' : 'blob';
    return this.at === 0 ? 'tree' : 'commit';
  }

  /** Takes in the height of the object the current link names: a subtree of height h makes the tree 1 + h. */
  reach(childHeight: number): void {
    if (this.subtree && 1 + childHeight > this.height) this.height = Math.min(1 + childHeight, TREE_HEIGHT_CAP);
  }
}

/**
 * A received object named as another type than it is, refused as git's index-pack --strict refuses
 * it (fsck_walk's links: "object ... is a tree, not a blob", "bad tree pointer", "bad parent"): stored,
 * every read of the history through it would take one type for the other.
 */
function typeMismatch(naming: PackObject, entry: number, named: PackObject, expected: ObjectType): PackFormatError {
  const named_ = oidToHex(named.oid);
  if (naming.type === 'commit') {
    const what = entry === 0 ? 'tree pointer' : 'parent';
    return new PackFormatError(`bad ${what} ${named_} in commit ${oidToHex(naming.oid)}: it is a ${named.type}`);
  }
  return new PackFormatError(`object ${named_} is a ${named.type}, not a ${expected} (named in tree ${oidToHex(naming.oid)})`);
}

/** Each received tag whose object is received too must name it as the type it is (git: "bad tag pointer"). */
function checkTagTargets(objects: PackObject[], received: OidTable): void {
  for (const object of objects) {
    if (object.type !== 'tag') continue;
    const tag = decodeTag(object.body);
    const index = received.get(tag.object);
    if (index >= 0 && objects[index].type !== tag.type) {
      throw new PackFormatError(`bad tag pointer to ${oidToHex(tag.object)} in tag ${oidToHex(object.oid)}: it is a ${objects[index].type}, not a ${tag.type}`);
    }
  }
}

/**
 * The introducedObjects() list of every received commit whose history is complete, so a clone is
 * planned without reading trees (src/repo/wire/packObjects.ts). Trees come from the pack, or from the
 * store for a parent's unchanged directories. The lists are an index, not a check: a commit whose
 * list cannot be made (a parent's tree that is not there) simply gets none.
 *
 * A client chooses the work: many commits may pair the same large trees (a chain that alternates
 * two of them). Equal (tree, parent tree) pairs are diffed once, and the tree bytes read in all are
 * bounded by `treeBytesBudget` (by default a few times what the pack's trees take, which a real
 * history stays well within); past it the remaining commits get no list and are walked when cloned.
 */
export function receivedCommitObjects(
  objects: PackObject[],
  gaps: Map<string, Gap>,
  read: (oid: Oid) => ExternalObject | undefined,
  treeBytesBudget = defaultTreeBytesBudget(objects),
): Map<number, Buffer> {
  const steps = receivedCommitObjectsInSteps(objects, gaps, read, treeBytesBudget);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Commits whose lists are made between two looks at the clock (receivedCommitObjectsPausing). */
const LIST_STEPS_PER_LOOK = 64;
/** How long the lists are made before `pause` is awaited. */
const LIST_SLICE_MS = 8;

/**
 * receivedCommitObjects, awaiting `pause` every few milliseconds: made on the pack checker's
 * thread after a push is answered, they kept the next push's pack waiting there some 0.3 s.
 */
export async function receivedCommitObjectsPausing(
  objects: PackObject[],
  gaps: Map<string, Gap>,
  read: (oid: Oid) => ExternalObject | undefined,
  pause: () => Promise<void>,
): Promise<Map<number, Buffer>> {
  const steps = receivedCommitObjectsInSteps(objects, gaps, read, defaultTreeBytesBudget(objects));
  let sliceStart = performance.now();
  for (let count = 1; ; count++) {
    const step = steps.next();
    if (step.done) return step.value;
    if (count % LIST_STEPS_PER_LOOK === 0 && performance.now() - sliceStart > LIST_SLICE_MS) {
      await pause();
      sliceStart = performance.now();
    }
  }
}

/** receivedCommitObjects, one step per commit looked at. */
function* receivedCommitObjectsInSteps(
  objects: PackObject[],
  gaps: Map<string, Gap>,
  read: (oid: Oid) => ExternalObject | undefined,
  treeBytesBudget: number,
): Generator<void, Map<number, Buffer>> {
  const lists = new Map<number, Buffer>();
  let budgetLeft = treeBytesBudget;
  const readTree = (oid: Oid): Buffer | undefined => {
    const found = read(oid);
    if (found?.type !== 'tree') return undefined;
    budgetLeft -= found.body.length;
    if (budgetLeft < 0) throw new ListBudgetSpent();
    return found.body;
  };
  const treeOf = (oid: Oid): Oid | null => {
    const found = read(oid);
    return found?.type === 'commit' ? commitLinks(found.body).tree : null;
  };
  const byPair = new Map<string, Buffer>();
  for (let index = 0; index < objects.length; index++) {
    const object = objects[index];
    if (object.type !== 'commit' || gaps.has(oidToHex(object.oid))) continue;
    yield;
    const commit = commitLinks(object.body);
    const parentTree = commit.parents.length > 0 ? treeOf(commit.parents[0]) : null;
    if (commit.parents.length > 0 && !parentTree) continue;
    const pair = `${oidToHex(commit.tree)}${parentTree ? oidToHex(parentTree) : ''}`;
    const known = byPair.get(pair);
    if (known) {
      lists.set(index, known);
      continue;
    }
    try {
      const list = introducedObjects(commit.tree, parentTree, readTree);
      byPair.set(pair, list);
      lists.set(index, list);
    } catch (error) {
      if (error instanceof ListBudgetSpent) break;
      // A tree that is not there: the commit is planned by walking its tree instead.
    }
  }
  return lists;
}

class ListBudgetSpent extends Error {}

/** Tree bytes the lists of a pack may read: four times its trees, and 16 MB for a small pack on a large stored tree. */
function defaultTreeBytesBudget(objects: PackObject[]): number {
  let treeBytes = 0;
  for (const object of objects) if (object.type === 'tree') treeBytes += object.body.length;
  return 4 * treeBytes + 16 * 1024 * 1024;
}

/**
 * The receiver's store as an asynchronous backend answers: many questions in one call, later. The
 * check itself stays synchronous (StoreLookups); PrefetchedLookups stands between the two.
 */
export interface AsyncStoreLookups {
  /** Objects in the order asked (bodies are the caller's copies), undefined where not stored. */
  objects(oids: readonly Oid[]): Promise<Array<ExternalObject | undefined>>;
  has(oids: readonly Oid[]): Promise<boolean[]>;
  /** Optional: the stored objects' types, undefined where not stored (the check then refuses a link of another type). */
  types?(oids: readonly Oid[]): Promise<Array<ObjectType | undefined>>;
}

/** Bytes of stored trees a prefetch reads ahead of the depth check before it stops reading ahead. */
const PREFETCH_TREE_BYTES_MAX = 64 * 1024 * 1024;
/** Ids asked of the store in one call. */
const PREFETCH_BATCH = 512;

/**
 * StoreLookups over answers fetched ahead from an asynchronous store. A question it has no answer
 * for yet is written down and answered provisionally (no such object; held), so one pass of the
 * check reaches every question it can; `fetch()` then asks them all in batches, and the pass is
 * run again. A pass that asked something new is discarded: only a pass that found every answer
 * here (`complete`) counts.
 *
 * A stored tree the check reads is read for the depth check, which walks all of it: so a fetched
 * tree's subtrees are fetched with it, level by level, within PREFETCH_TREE_BYTES_MAX, instead of
 * costing a pass per level.
 */
export class PrefetchedLookups implements StoreLookups {
  private readonly objectAnswers = new Map<string, ExternalObject | undefined>();
  private readonly hasAnswers = new Map<string, boolean>();
  private readonly wantedObjects = new Map<string, Oid>();
  private readonly wantedHas = new Map<string, Oid>();
  private readonly typeAnswers = new Map<string, ObjectType | undefined>();
  private readonly wantedTypes = new Map<string, Oid>();
  private treeBytesRead = 0;

  constructor(private readonly source: AsyncStoreLookups) {}

  object(oid: Oid): ExternalObject | undefined {
    const hex = oidToHex(oid);
    if (this.objectAnswers.has(hex)) return this.objectAnswers.get(hex);
    this.wantedObjects.set(hex, oid);
    return undefined;
  }

  has(oid: Oid): boolean {
    const hex = oidToHex(oid);
    const known = this.hasAnswers.get(hex);
    if (known !== undefined) return known;
    if (this.objectAnswers.has(hex)) return this.objectAnswers.get(hex) !== undefined;
    this.wantedHas.set(hex, oid);
    return true;
  }

  typeOf(oid: Oid): ObjectType | null | undefined {
    if (!this.source.types) return this.has(oid) ? null : undefined;
    const hex = oidToHex(oid);
    if (this.typeAnswers.has(hex)) return this.typeAnswers.get(hex);
    if (this.objectAnswers.has(hex)) return this.objectAnswers.get(hex)?.type;
    this.wantedTypes.set(hex, oid);
    // Stored, as has() answers before it knows: the pass goes on, and the next one knows.
    return null;
  }

  /** Whether every question since the last fetch() had its answer here. */
  get complete(): boolean {
    return this.wantedObjects.size === 0 && this.wantedHas.size === 0 && this.wantedTypes.size === 0;
  }

  /** Asks the store what the last pass wanted, stored trees' subtrees along. */
  async fetch(): Promise<void> {
    const hasWanted = [...this.wantedHas.entries()];
    this.wantedHas.clear();
    for (let at = 0; at < hasWanted.length; at += PREFETCH_BATCH) {
      const batch = hasWanted.slice(at, at + PREFETCH_BATCH);
      const answers = await this.source.has(batch.map(([, oid]) => oid));
      batch.forEach(([hex], i) => this.hasAnswers.set(hex, answers[i]));
    }
    const typesWanted = [...this.wantedTypes.entries()];
    this.wantedTypes.clear();
    for (let at = 0; at < typesWanted.length; at += PREFETCH_BATCH) {
      const batch = typesWanted.slice(at, at + PREFETCH_BATCH);
      const answers = await this.source.types!(batch.map(([, oid]) => oid));
      batch.forEach(([hex], i) => this.typeAnswers.set(hex, answers[i]));
    }
    let level = [...this.wantedObjects.entries()];
    this.wantedObjects.clear();
    while (level.length > 0) {
      const next = new Map<string, Oid>();
      for (let at = 0; at < level.length; at += PREFETCH_BATCH) {
        const batch = level.slice(at, at + PREFETCH_BATCH);
        const answers = await this.source.objects(batch.map(([, oid]) => oid));
        batch.forEach(([hex], i) => {
          const object = answers[i];
          this.objectAnswers.set(hex, object);
          if (object?.type !== 'tree') return;
          this.treeBytesRead += object.body.length;
          if (this.treeBytesRead > PREFETCH_TREE_BYTES_MAX) return;
          const cursor = new TreeCursor(object.body);
          while (cursor.next()) {
            if (cursor.kind !== ENTRY_TREE) continue;
            const subtree = object.body.subarray(cursor.oidStart, cursor.oidStart + OID_BYTES);
            const subtreeHex = oidToHex(subtree);
            if (!this.objectAnswers.has(subtreeHex)) next.set(subtreeHex, subtree);
          }
        });
      }
      level = [...next.entries()];
    }
  }
}

/**
 * checkReceivedPack over an asynchronous store: passes of the check over PrefetchedLookups, the
 * store asked in between, until a pass finds every answer. Each pass costs a parse of the pack, so
 * this is for small packs (src/service/packChecker.ts checks large ones on a worker, whose
 * questions the store answers one at a time). Null when `passesMax` passes were not enough.
 */
export async function checkReceivedPackWithAsyncLookups(
  pack: Buffer,
  limits: PackLimits,
  source: AsyncStoreLookups,
  clientShallow: ReadonlySet<string> = new Set(),
  passesMax = PASSES_MAX,
): Promise<PackCheckResult | null> {
  const lookups = new PrefetchedLookups(source);
  for (let pass = 1; pass <= passesMax; pass++) {
    const result = checkReceivedPack(pack, limits, lookups, clientShallow);
    if (lookups.complete) {
      if (!result.ok) return result;
      return { ...result, commitObjects: () => commitObjectsWithAsyncLookups(result, lookups, passesMax) };
    }
    await lookups.fetch();
  }
  return null;
}

/** Passes of the check (or of the commits' lists) over an asynchronous store before giving up. */
const PASSES_MAX = 32;

/**
 * The commits' object lists as `result.commitObjects` makes them, passes over `lookups` until one
 * finds every parent tree it reads; lists are an index, so when the passes run out no commit gets one.
 */
async function commitObjectsWithAsyncLookups(result: PackCheckResult & { ok: true }, lookups: PrefetchedLookups, passesMax: number): Promise<Map<number, Buffer>> {
  for (let pass = 1; pass <= passesMax; pass++) {
    const lists = await result.commitObjects();
    if (lookups.complete) return lists;
    await lookups.fetch();
  }
  return new Map();
}
