/**
 * A push: the received pack is parsed and every object checked like `git fsck --strict` before
 * anything is stored; then each ref update is a compare-and-swap that must be a fast-forward of a
 * branch whose working tree is clean and whose locked files stay as they are, to a commit whose
 * whole history is here. Objects and ref moves land in one transaction (a large pack's objects
 * in writes of their own just before it, or while it is checked, held until it passes:
 * src/repo/wire/heldPushForms.ts); a bad pack stores nothing and moves no ref.
 * With `atomic`, one refused update refuses them all.
 *
 * Connectivity is judged per ref, as git's receive-pack does: a pushed commit whose history
 * cannot be completed from the pack and the store (a push from a shallow clone whose shallow
 * commits are new here, or a pack that simply lacks objects) refuses the updates that need it,
 * and none of its objects is stored, so everything in the store keeps a complete history. Every
 * refusal comes with a hint the client shows as a "remote:" line.
 */
import { oidToHex, sortByOid, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import type { PackObject } from '../../git/pack.js';
import { parentsFirstSteps } from '../../git/packOrder.js';
import { formsInBaseOrder, keepPackedForm, storeFormsAlone, storeReceivedObjects, storeReceivedObjectsInWrites } from './packedForms.js';
import { checkReceivedPackWithAsyncLookups, type AsyncStoreLookups, type Gap, type PackCheckResult, type PackLimits } from '../../git/packCheck.js';
import { BRANCH_REF_PREFIX, branchNameProblem } from '../../git/refname.js';
import type { RefResult, RefUpdateCommand } from '../../git/smartProtocol.js';
import { isAncestor } from '../ancestry.js';
import { inSlicesOf, Slicer } from '../slices.js';
import { HeldPushForms } from './heldPushForms.js';
import type { ResolvedRun, StoredRuns } from './streamedRuns.js';
import { lockedChanges, resetWorkingTree, uncommittedPaths } from '../worktree/moveWorkingTree.js';
import { commitInfo, hasObject, inReadTx, inWriteTx, MAIN_BRANCH, type Repo, type WriteTx } from '../repo.js';

/** Trees and blobs a checked pack must carry for them to be stored before the write that moves the refs. */
const PACK_STORED_FIRST_MIN = 2_048;

/**
 * Packs from this size have their trees and blobs (and commits whose parents they carry) stored
 * while they are checked, held until the check passes (src/repo/wire/heldPushForms.ts); smaller
 * ones are checked inline, or soon enough.
 */
const PACK_HELD_BYTES_MIN = 256 * 1024;

/** The loop sorting a pack's objects looks at the clock once per this many plus one (a power of two, less one). */
const PAUSE_EVERY_MASK = 1023;

/** Ids asked per hasObjects call by allStored: some 4 ms of reading each. */
const STORED_ASKED_PER_CALL = 2_048;

export interface ReceivePackInput {
  commands: RefUpdateCommand[];
  pack: Buffer | null;
  atomic: boolean;
  /** The `shallow` lines of a push from a shallow clone: commits the client holds without parents. */
  shallow?: Oid[];
  /** Most ref updates one push may carry (TREEHOUSE_PUSH_REFS_MAX); more refuses the push whole. */
  refUpdatesMax?: number;
  packLimits?: PackLimits;
  /**
   * Parses and checks the pack (src/git/packCheck.ts) somewhere other than this thread, such as
   * src/service/packChecker.ts, asking the store through `lookups` (storeLookups of the repo);
   * without it the pack is checked inline.
   */
  checkPack?: (
    pack: Buffer,
    limits: PackLimits,
    lookups: AsyncStoreLookups,
    clientShallow: ReadonlySet<string>,
    onResolved?: (run: ResolvedRun) => void,
    onParsed?: () => void,
  ) => Promise<PackCheckResult>;
  /**
   * Runs the push's transaction-level core (applyPushInTx) in the caller's write transaction, so
   * the caller commits its own records with the push (its events); by default a transaction of its own.
   */
  runInTx?: (apply: (tx: WriteTx) => Promise<ReceivePackResult>) => Promise<ReceivePackResult>;
}

/** A push whose pack passed its check: the received objects, the history gaps found, the ref commands. */
export interface CheckedPush {
  objects: PackObject[];
  gaps: Map<string, Gap>;
  commands: RefUpdateCommand[];
  atomic?: boolean;
  /**
   * Stored objects the check found and the pack builds on (its connectivity stopped at them). A
   * garbage collection may remove an object no branch reaches between the check and the write, so
   * the write asks for them again: its answers are checked at its commit (src/store/asyncTypes.ts).
   */
  relied?: readonly Oid[];
  /**
   * The objects of a large pack were stored in writes before this one (`ids`; `late`: those whose
   * pack entry still waits to be kept as a form). The write stores them again only if any is gone:
   * a collection may remove objects no branch reaches between those writes and this one.
   * `collectionsBegun`: the project's count before the first of them (ProjectReads.collectionsBegun),
   * when its store keeps one; the same in this write, none was removed.
   */
  storedFirst?: { ids: readonly Oid[]; late: readonly PackObject[]; collectionsBegun?: number };
}

export interface ReceivePackResult {
  unpackError: string | null;
  results: RefResult[];
  /** Branches that moved (created or updated). */
  updatedBranches: string[];
  /** What to do about each refusal, one line each, for the client's terminal ("remote: …"). */
  hints: string[];
  /**
   * Settles once the received commits' object lists (an index for clones) are stored or given up:
   * a push is answered before, and a clone meanwhile walks the commits' trees instead.
   */
  indexed?: Promise<void>;
}

/** A refused update: `reason` follows "ng <ref>" in the report, `hint` tells the user what to do. */
class RefusedUpdate extends Error {
  constructor(
    reason: string,
    readonly hint: string,
  ) {
    super(reason);
  }
}

export async function receivePack(repo: Repo, input: ReceivePackInput): Promise<ReceivePackResult> {
  const refuseAll = (reason: string, unpackError: string | null, hint: string): ReceivePackResult => ({
    unpackError,
    results: input.commands.map((command) => ({ ref: command.ref, ok: false, reason })),
    updatedBranches: [],
    hints: [hint],
  });
  const refUpdatesMax = input.refUpdatesMax ?? Infinity;
  if (input.commands.length > refUpdatesMax) {
    // Refused before the pack is even parsed: the cap bounds the work of one push.
    return refuseAll(
      'too many ref updates in one push',
      `refused: ${input.commands.length} ref updates, at most ${refUpdatesMax} in one push`,
      `this push updates ${input.commands.length} refs and a push may update at most ${refUpdatesMax}; push them in smaller batches`,
    );
  }
  const clientShallow = new Set((input.shallow ?? []).map(oidToHex));
  let objects: PackObject[] = [];
  let gaps = new Map<string, Gap>();
  let commitObjects: () => Promise<Map<number, Buffer>> = async () => new Map();
  let forgetCommitObjects = () => {};
  const relied = new ReliedObjects();
  /** Objects of a large pack held while it is checked, then kept (their ids, and the commits whose form waits) or let go. */
  let keptEarly: StoredRuns | null = null;
  /** Read before anything of the pack is stored (CheckedPush.storedFirst). */
  let collectionsBegun: number | undefined;
  if (input.pack && input.pack.length > 0) {
    if (repo.store.writeObjectsMax !== undefined) collectionsBegun = await collectionsBegunIfNoneRuns(repo);
    const lookups = storeLookups(repo, relied);
    const limits = input.packLimits ?? {};
    const held = input.checkPack && input.pack.length >= PACK_HELD_BYTES_MIN ? HeldPushForms.begin(repo.store, repo.project) : null;
    let checked: PackCheckResult;
    try {
      // Inline, every pass answers at least one question the last did not, so the passes end.
      checked = input.checkPack
        ? await input.checkPack(input.pack, limits, lookups, clientShallow, held?.add, held?.prepare)
        : (await checkReceivedPackWithAsyncLookups(input.pack, limits, lookups, clientShallow, Infinity))!;
    } catch (error) {
      await held?.end(false).catch(() => {});
      throw error;
    }
    if (!checked.ok) {
      // (A failure to drop the held shelves leaves bytes no pointer names: a compaction takes them.)
      await held?.end(false).catch(() => {});
      return refuseAll('unpacker error', checked.message, `the pack was refused and nothing was stored: ${checked.message}`);
    }
    objects = checked.objects;
    gaps = checked.gaps;
    commitObjects = checked.commitObjects;
    forgetCommitObjects = checked.forgetCommitObjects ?? forgetCommitObjects;
    // A history with gaps stores only part of the pack: what was held is let go, and the part stored as before.
    if (held) keptEarly = await held.end(gaps.size === 0);
  }
  try {
    // In a store that replays a write in one piece on the event loop (writeObjectsMax), a large
    // pack's objects go in first, in writes of their own that nobody refers to yet (one write
    // storing 40,000 held the loop some 300 ms). Unless no collection ran since the push began
    // (collectionsBegun), the write that moves the refs checks they are all still there, and
    // stores them all again if a collection removed some meanwhile. Like git's
    // receive-pack, which moves a checked pack into the repository before it updates refs, they
    // stay when an update is then refused, until a collection.
    const kept = gaps.size === 0 ? objects : objects.filter((object) => !gaps.has(oidToHex(object.oid)));
    // The pack's objects sorted for the writes below in one pass, and the commits put parents
    // first, each in slices: for a history of 3,000 commits the two held the event loop 40 ms in
    // one piece, and they grow with the history.
    const slicer = new Slicer();
    const contents: PackObject[] = [];
    const carried: PackObject[] = [];
    const others: PackObject[] = [];
    for (let index = 0; index < kept.length; index++) {
      const object = kept[index];
      if (object.type === 'tree' || object.type === 'blob') {
        contents.push(object);
        if (object.packed && !keptEarly?.kept.has(object.oid)) carried.push(object);
      } else if (!keptEarly?.kept.has(object.oid)) others.push(object);
      if ((index & PAUSE_EVERY_MASK) === PAUSE_EVERY_MASK) await slicer.pause();
    }
    let storedFirst: CheckedPush['storedFirst'];
    if (repo.store.writeObjectsMax !== undefined && (carried.length >= PACK_STORED_FIRST_MIN || (keptEarly?.kept.size ?? 0) > 0)) {
      const unkept = await storeFormsAlone(repo.store, repo.project, formsInBaseOrder(carried));
      // The rest too: what was not kept as a form, then the commits not held (each indexed, parents
      // first; a held one's parents are held or stored), then the tags, after what they name.
      const ordered = await inSlicesOf(parentsFirstSteps(others), slicer);
      const rest = [...unkept, ...contents.filter((object) => !object.packed), ...ordered.filter((object) => object.type === 'commit'), ...ordered.filter((object) => object.type !== 'commit')];
      const late = [...(keptEarly?.late ?? []), ...(await storeReceivedObjectsInWrites(repo.store, repo.project, rest))];
      storedFirst = { ids: kept.map((object) => object.oid), late, collectionsBegun };
    }
    const push = { objects, gaps, commands: input.commands, atomic: input.atomic, relied: relied.list(), storedFirst };
    const apply = (tx: WriteTx) => applyPushInTx(tx, push);
    let result: ReceivePackResult;
    try {
      result = await (input.runInTx ? input.runInTx(apply) : inWriteTx(repo, apply));
    } catch (error) {
      forgetCommitObjects();
      throw error;
    }
    // The commits' object lists are made once the objects are stored (on the checker's thread,
    // beside the store's work, they slowed it by a fifth), and stored after the push is answered.
    return { ...result, indexed: indexCommitObjects(repo, objects, commitObjects()) };
  } catch (error) {
    if (error instanceof AtomicFailure) return { unpackError: null, results: error.results, updatedBranches: [], hints: error.hints };
    if (error instanceof ReliedObjectsGone) {
      return refuseAll(
        'missing necessary objects',
        null,
        'objects this push builds on were removed by a garbage collection while it was checked (no branch reached them any more); fetch, then push again',
      );
    }
    throw error;
  }
}

/** Objects a stored answer of the pack check said were there (see CheckedPush.relied). */
class ReliedObjects {
  private readonly seen = new OidTable();
  private readonly oids: Oid[] = [];

  note(oid: Oid): void {
    if (this.seen.add(oid)) this.oids.push(Buffer.from(oid));
  }

  /** What was noted so far (the check's answers; the commits' object lists made later ask more). */
  list(): Oid[] {
    return this.oids.slice();
  }
}

/**
 * The project's count of collections begun (ProjectReads.collectionsBegun), read before anything of
 * a pack is stored; undefined when one is under way, or the store keeps no count. Not relied on
 * with one under way: it keeps what is stored new (journalled), but a held tree is journalled
 * before it can be read, so what it names that was stored before it would not be kept.
 */
async function collectionsBegunIfNoneRuns(repo: Repo): Promise<number | undefined> {
  return repo.store.read(async (tx) => {
    const p = tx.project(repo.project);
    if (!p.collectionsBegun || !p.getCollection || (await p.getCollection()) !== undefined) return undefined;
    return p.collectionsBegun();
  });
}

/**
 * Whether no collection of the project began since `before` was read (undefined: not known): then
 * what was stored since is all there, and is not asked for (allStored held the event loop some
 * 90 ms for a push of 43,000 objects, run in one piece with the write's other work).
 */
async function noCollectionBegun(tx: WriteTx, before: number | undefined): Promise<boolean> {
  return before !== undefined && tx.collectionsBegun !== undefined && (await tx.collectionsBegun()) === before;
}

/** Whether every one of `ids` is stored, asked a batch at a time (a batch is read in one piece). */
async function allStored(tx: WriteTx, ids: readonly Oid[]): Promise<boolean> {
  for (let start = 0; start < ids.length; start += STORED_ASKED_PER_CALL) {
    if ((await tx.hasObjects(ids.slice(start, start + STORED_ASKED_PER_CALL))).includes(false)) return false;
  }
  return true;
}

/** Objects the pack check found stored are gone: the push is refused whole, as one with a gap would be. */
class ReliedObjectsGone extends Error {}

/** A checked push in the caller's transaction: its objects stored (those of a gap left out), then each ref command applied. */
export async function applyPushInTx(tx: WriteTx, push: CheckedPush): Promise<ReceivePackResult> {
  const { objects, gaps, commands, atomic } = push;
  if (push.storedFirst && ((await noCollectionBegun(tx, push.storedFirst.collectionsBegun)) || (await allStored(tx, push.storedFirst.ids)))) {
    for (const object of formsInBaseOrder(push.storedFirst.late)) await keepPackedForm(tx, object);
  } else {
    // Parents before children, so every commit's generation number is computed from indexed parents.
    await storeReceivedObjects(tx, gaps.size === 0 ? objects : objects.filter((object) => !gaps.has(oidToHex(object.oid))));
  }
  // After the pack's own objects are stored, so an id that is both is found.
  if (push.relied && push.relied.length > 0 && (await tx.hasObjects(push.relied)).includes(false)) throw new ReliedObjectsGone();
  const results: RefResult[] = [];
  const updatedBranches: string[] = [];
  const hints: string[] = [];
  // One listing per push, however many branches it creates.
  const branches = new BranchNames((await tx.listRefs(BRANCH_REF_PREFIX)).map((ref) => ref.name));
  for (const command of commands) {
    try {
      const branch = await applyCommand(tx, command, gaps, branches, hints);
      results.push({ ref: command.ref, ok: true });
      if (branch) updatedBranches.push(branch);
    } catch (error) {
      if (!(error instanceof RefusedUpdate)) throw error;
      results.push({ ref: command.ref, ok: false, reason: error.message });
      hints.push(`${command.ref}: ${error.hint}`);
    }
  }
  // Thrown, so the transaction stores nothing; receivePack answers it.
  if (atomic && results.some((result) => !result.ok)) {
    throw new AtomicFailure(
      results.map((r) => (r.ok ? { ref: r.ref, ok: false, reason: 'atomic push failed' } : r)),
      [...hints, 'the push was atomic, so no branch moved'],
    );
  }
  return { unpackError: null, results, updatedBranches, hints };
}

/**
 * Stores the received commits' object lists (an index for clones, src/repo/wire/packObjects.ts) once the
 * commits are stored. A failure here loses only the index: a commit without a list is planned by
 * walking its tree, so the push it belongs to is answered as it went.
 */
async function indexCommitObjects(repo: Repo, objects: PackObject[], lists: Promise<Map<number, Buffer>>): Promise<void> {
  try {
    const listed = await lists;
    if (listed.size === 0) return;
    await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      // In id order: each list lands at the end of the page before it, which LMDB then leaves full.
      const ordered = sortByOid([...listed], ([index]) => objects[index].oid);
      for (const [index, list] of ordered) tx.putCommitObjects(objects[index].oid, list);
    });
  } catch {
    // Only an index: see above.
  }
}

class AtomicFailure extends Error {
  constructor(
    readonly results: RefResult[],
    readonly hints: string[],
  ) {
    super('atomic push failed');
  }
}

const short = (hex: string) => hex.slice(0, 7);

/**
 * The pack check's questions to the project's store, each batch a read of its own (bodies are
 * copies); what it finds stored is noted in `relied` when given.
 */
export function storeLookups(repo: Repo, relied?: ReliedObjects): AsyncStoreLookups {
  return {
    objects: async (oids) => {
      const found = await inReadTx(repo, (tx) => tx.getObjects(oids));
      if (relied) found.forEach((object, i) => object && relied.note(oids[i]));
      return found;
    },
    has: async (oids) => {
      const found = await inReadTx(repo, (tx) => tx.hasObjects(oids));
      if (relied) found.forEach((present, i) => present && relied.note(oids[i]));
      return found;
    },
    types: async (oids) => {
      const found = await inReadTx(repo, (tx) => tx.objectTypes(oids));
      if (relied) found.forEach((type, i) => type !== undefined && relied.note(oids[i]));
      return found;
    },
  };
}

/** Applies one update or throws RefusedUpdate with the reason git shows after "ng"; a warning for the client goes into `hints`. */
async function applyCommand(tx: WriteTx, command: RefUpdateCommand, gaps: Map<string, Gap>, branches: BranchNames, hints: string[]): Promise<string | null> {
  if (!command.ref.startsWith(BRANCH_REF_PREFIX)) {
    throw new RefusedUpdate('only branches (refs/heads/*) can be pushed', 'a project keeps branches only; tags and other refs are not stored');
  }
  const branch = command.ref.slice(BRANCH_REF_PREFIX.length);
  if (branchNameProblem(branch)) throw new RefusedUpdate('invalid branch name', 'choose a name that `git check-ref-format --branch` accepts');
  const current = (await tx.getRef(command.ref)) ?? null;
  const sameAsOld = command.old === null ? current === null : current !== null && current.equals(command.old);
  if (!sameAsOld) {
    if (current === null) throw new RefusedUpdate('branch does not exist', 'the branch was deleted on Treehouse; fetch, then push it as a new branch');
    throw new RefusedUpdate('stale info (fetch first)', 'the branch moved on Treehouse since you fetched; pull, then push again');
  }
  if (command.new === null) {
    if (current === null) {
      // As git's receive-pack: a branch that is not there is deleted already (the client sent no
      // old id, so it expected none); the update succeeds with a warning and changes nothing.
      hints.push(`${command.ref}: warning: deleting a non-existent ref`);
      return null;
    }
    if (branch === MAIN_BRANCH) throw new RefusedUpdate('deleting main is not allowed', 'main is every project\'s default branch and cannot be deleted');
    if ((await uncommittedPaths(tx, branch, (await commitInfo(tx, current))!.tree)).length > 0) throw uncommittedChanges();
    await tx.casRef(command.ref, current, null);
    tx.deleteWorkingTree(branch);
    await tx.bumpVersion();
    branches.delete(command.ref);
    return null;
  }
  const newHex = oidToHex(command.new);
  const gap = gaps.get(newHex);
  if (gap?.shallow) {
    throw new RefusedUpdate(
      'shallow update not allowed',
      `the history below ${short(gap.missing)} is not on Treehouse and this push comes from a shallow clone; ` +
        'fetch the whole history (git fetch --unshallow) and push again',
    );
  }
  if (gap || !(await hasObject(tx, command.new))) {
    throw new RefusedUpdate('missing necessary objects', `the push does not carry ${short(gap?.missing ?? newHex)}, which ${short(newHex)} needs`);
  }
  const next = await commitInfo(tx, command.new);
  if (!next) throw new RefusedUpdate('not a commit', 'a branch must point at a commit');
  if (current === null) {
    const clash = branches.clash(command.ref);
    if (clash) {
      throw new RefusedUpdate(`conflicts with ${clash}`, `git cannot hold both ${command.ref} and ${clash} (one would be a directory of the other); choose another name`);
    }
  } else {
    if (current.equals(command.new)) return null;
    if (!(await isAncestor(tx, current, command.new))) {
      throw new RefusedUpdate(
        'non-fast-forward (history is never rewritten)',
        'Treehouse never rewrites history, forced or not; fetch, merge (or rebase onto) the branch and push again',
      );
    }
    if ((await uncommittedPaths(tx, branch, (await commitInfo(tx, current))!.tree)).length > 0) throw uncommittedChanges();
    const locked = await lockedChanges(tx, branch, next.tree);
    if (locked.length > 0) {
      throw new RefusedUpdate(`locked files would change: ${locked.join(', ')}`, 'unlock those files through the API (a batch entry with locked: false), then push again');
    }
  }
  await tx.casRef(command.ref, current, command.new);
  await resetWorkingTree(tx, branch, next.tree);
  await tx.bumpVersion();
  if (current === null) branches.add(command.ref);
  return branch;
}

/**
 * The branch refs of a project as git ref paths, for the clash check in constant time per name:
 * `a` cannot sit beside `a/b`, because one would be a file where the other needs a directory.
 */
class BranchNames {
  private readonly names = new Set<string>();
  /** Each directory of a branch ref ("refs/heads/a" for "refs/heads/a/b") and the refs below it. */
  private readonly below = new Map<string, Set<string>>();

  constructor(names: string[]) {
    for (const name of names) this.add(name);
  }

  add(name: string): void {
    this.names.add(name);
    for (const directory of directoriesOf(name)) {
      let refs = this.below.get(directory);
      if (!refs) this.below.set(directory, (refs = new Set()));
      refs.add(name);
    }
  }

  delete(name: string): void {
    this.names.delete(name);
    for (const directory of directoriesOf(name)) {
      const refs = this.below.get(directory);
      refs?.delete(name);
      if (refs?.size === 0) this.below.delete(directory);
    }
  }

  /** An existing ref the new one would clash with, or null. */
  clash(name: string): string | null {
    for (const directory of directoriesOf(name)) if (this.names.has(directory)) return directory;
    const under = this.below.get(name);
    return under ? under.values().next().value! : null;
  }
}

/** "refs/heads/a/b/c" → "refs/heads/a", "refs/heads/a/b" (the directories below refs/heads/). */
function directoriesOf(name: string): string[] {
  const out: string[] = [];
  for (let slash = name.indexOf('/', BRANCH_REF_PREFIX.length); slash >= 0; slash = name.indexOf('/', slash + 1)) out.push(name.slice(0, slash));
  return out;
}

function uncommittedChanges(): RefusedUpdate {
  return new RefusedUpdate(
    'uncommitted changes',
    'the branch has uncommitted changes in its Treehouse working tree; commit or discard them through the API, then push again',
  );
}
