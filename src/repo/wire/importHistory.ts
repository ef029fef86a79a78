/**
 * A git seed: history fetched from another repository becomes main's history. Every fetched object
 * is checked like `git fsck --strict`, the history of the chosen commit must be complete (a full
 * clone has no shallow boundary), and the objects reachable from that commit are stored, with the
 * ids the upstream gave them (those of a pack stored as it was parsed, EarlyHistory, all of them).
 * Commits are stored parents first, so each one's generation number is computed from parents
 * already indexed.
 */
import { commitLinks, decodeCommit } from '../../git/commit.js';
import { FsckError, assertObjectsFsckClean } from '../../git/fsck.js';
import { OID_BYTES, oidToHex, sortByOid, type Oid } from '../../git/oid.js';
import { OidTable } from '../../git/oidTable.js';
import type { PackObject } from '../../git/pack.js';
import { branchRef } from '../../git/refname.js';
import { decodeTag } from '../../git/tag.js';
import { decodeTree, ENTRY_GITLINK, ENTRY_TREE, MODE_GITLINK, MODE_TREE, TreeCursor } from '../../git/tree.js';
import { commitTreesDepthProblem } from '../../git/treeDepth.js';
import { resetWorkingTree } from '../worktree/moveWorkingTree.js';
import { formsInBaseOrder, keepPackedForm, storeFormsAlone, storeReceivedObjectsInWrites } from './packedForms.js';
import { MAIN_BRANCH, type Repo, type WriteTx } from '../repo.js';
import { Slicer } from '../slices.js';
import { StreamedRuns, type ResolvedRun, type StoredRuns } from './streamedRuns.js';


/** The walks look at the clock once per this many steps plus one (a power of two, less one). */
const PAUSE_EVERY_MASK = 63;

/** Annotated tags pointing at tags are followed this many levels, no more (git peels without limit; a chain this long is hostile). */
const TAG_CHAIN_MAX = 16;

export class HistoryImportError extends Error {
  override name = 'HistoryImportError';
}

export interface PreparedHistory {
  /** The commit main will point at (the wanted ref, tags peeled). */
  commit: Oid;
  tree: Oid;
  /** Objects to store, in an order that indexes every parent before its children. */
  objects: PackObject[];
  /** Names of the root tree's entries and package.json's bytes, for framework detection. */
  rootNames: string[];
  packageJson: Buffer | undefined;
  /**
   * Commits' introducedObjects() lists by hex id, made when asked (once the objects are stored, so
   * the making does not slow the storing) and stored by indexHistoryCommits().
   */
  commitObjects: () => Promise<Map<string, Buffer>>;
  /** Says the lists will not be asked for (the history was not kept). */
  forgetCommitObjects: () => void;
}

/**
 * Checks fetched objects and orders those reachable from `tip` for storing. Throws HistoryImportError.
 * `checked`: the objects already passed src/git/packCheck.ts (fsck, .gitmodules, tree depth), so
 * those checks are not run twice; `contentsStored`: the trees and blobs are stored already and the
 * check finds gaps and type mismatches, so they are not walked; `commitObjects`: the check's
 * commit object lists, by hex id.
 */
export async function prepareHistory(
  fetched: PackObject[],
  tip: Oid,
  options: { checked?: boolean; contentsStored?: boolean; commitObjects?: () => Promise<Map<string, Buffer>>; forgetCommitObjects?: () => void } = {},
): Promise<PreparedHistory> {
  // Ids stay bytes (an OidTable of indexes into `fetched`, tree entries read in place): a
  // 3,000-commit seed names some 40,000 objects many times over, on the event loop, which gets a
  // turn between slices of the walks (held 0.15-0.7 s by the realistic history's in one piece).
  const slicer = new Slicer();
  const indexOf = new OidTable(fetched.length);
  for (let index = 0; index < fetched.length; index++) {
    indexOf.add(fetched[index].oid, 0, index);
    if ((index & PAUSE_EVERY_MASK) === PAUSE_EVERY_MASK) await slicer.pause();
  }
  const byId = (oid: Oid): PackObject | undefined => {
    const index = indexOf.get(oid);
    return index < 0 ? undefined : fetched[index];
  };
  if (!options.checked) checkFetched(fetched, byId);
  const need = (oid: Oid, why: string): PackObject => {
    const object = byId(oid);
    if (!object) throw new HistoryImportError(`The remote sent an incomplete history: ${why} ${oidToHex(oid)} is missing.`);
    return object;
  };

  let target = need(tip, 'the wanted object');
  for (let depth = 0; target.type === 'tag'; depth++) {
    if (depth >= TAG_CHAIN_MAX) throw new HistoryImportError('The tag points through too many other tags.');
    target = need(decodeTag(target.body).object, 'the tagged object');
  }
  if (target.type !== 'commit') throw new HistoryImportError(`The ref points to a ${target.type}, not to a commit.`);

  const { commits, trees: commitTrees } = await commitsParentsFirst(target.oid, need, fetched.length, indexOf, slicer);
  const trees: PackObject[] = [];
  // Each fetched object is reached once: a flag per index, and a tree entry's id looked up in place.
  const reached = new Uint8Array(fetched.length);
  let treesVisited = 0;
  const visitTree = async (oid: Oid) => {
    const root = indexOf.get(oid);
    if (root < 0) need(oid, 'tree');
    if (reached[root]) return;
    reached[root] = 1;
    const stack = [root];
    while (stack.length > 0) {
      // Checked every few trees: a clock read per tree would cost more than a small tree's entries.
      if ((++treesVisited & PAUSE_EVERY_MASK) === 0) await slicer.pause();
      const tree = fetched[stack.pop()!];
      if (tree.type !== 'tree') throw new HistoryImportError(`Object ${oidToHex(tree.oid)} should be a tree but is a ${tree.type}.`);
      trees.push(tree);
      const cursor = new TreeCursor(tree.body);
      while (cursor.next()) {
        if (cursor.kind === ENTRY_GITLINK) continue;
        const index = indexOf.get(tree.body, cursor.oidStart);
        if (index < 0) {
          const what = cursor.kind === ENTRY_TREE ? 'tree' : 'blob';
          throw new HistoryImportError(`The remote sent an incomplete history: ${what} ${tree.body.toString('hex', cursor.oidStart, cursor.oidStart + OID_BYTES)} is missing.`);
        }
        if (reached[index]) continue;
        reached[index] = 1;
        if (cursor.kind === ENTRY_TREE) {
          stack.push(index);
          continue;
        }
        const blob = fetched[index];
        if (blob.type !== 'blob') throw new HistoryImportError(`Object ${oidToHex(blob.oid)} should be a blob but is a ${blob.type}.`);
        trees.push(blob);
      }
    }
  };
  // Trees and blobs stored as the pack was parsed (EarlyHistory) are not walked here: the pack
  // check's walk refuses a type mismatch and finds whether the history is complete (a gap), which
  // the caller checks. The objects are all handed on, for those the early writes did not keep.
  if (options.contentsStored) {
    for (const object of fetched) if (object.type === 'tree' || object.type === 'blob') trees.push(object);
  } else {
    for (const tree of commitTrees) await visitTree(tree);
  }
  if (!options.checked) {
    const tooDeep = commitTreesDepthProblem(
      commits.map((commit, index) => ({ commit: commit.oid, tree: commitTrees[index] })),
      (oid) => byId(oid)?.body,
    );
    if (tooDeep) throw new HistoryImportError(`The fetched history cannot be stored: ${tooDeep}.`);
  }

  const tree = decodeCommit(target.body).tree;
  const rootEntries = decodeTree(need(tree, 'tree').body);
  const packageEntry = rootEntries.find((entry) => entry.name === 'package.json' && entry.mode !== MODE_TREE && entry.mode !== MODE_GITLINK);
  return {
    commit: target.oid,
    tree,
    objects: [...trees, ...commits],
    rootNames: rootEntries.map((entry) => entry.name),
    packageJson: packageEntry ? need(packageEntry.oid, 'blob').body : undefined,
    commitObjects: options.commitObjects ?? (async () => new Map()),
    forgetCommitObjects: options.forgetCommitObjects ?? (() => {}),
  };
}

/** Each object as `git fsck --strict` checks it, and the .gitmodules and .gitattributes blobs the trees name (fsck_finish()). */
function checkFetched(fetched: PackObject[], byId: (oid: Oid) => PackObject | undefined): void {
  try {
    assertObjectsFsckClean(fetched, byId);
  } catch (error) {
    if (error instanceof FsckError) throw new HistoryImportError(`The fetched history fails git fsck: ${error.message}`);
    throw error;
  }
}

/**
 * Every commit reachable from `tip`, each after all of its parents (an iterative post-order walk),
 * with each one's tree. States are kept by the commit's index among the fetched objects.
 */
async function commitsParentsFirst(
  tip: Oid,
  need: (oid: Oid, why: string) => PackObject,
  count: number,
  indexOf: OidTable,
  slicer: Slicer,
): Promise<{ commits: PackObject[]; trees: Oid[] }> {
  const commits: PackObject[] = [];
  const trees: Oid[] = [];
  const OPEN = 1;
  const DONE = 2;
  const state = new Uint8Array(count);
  const stack: Array<{ object: PackObject; index: number; tree: Oid; parents: Oid[]; next: number }> = [];
  const open = (oid: Oid) => {
    const object = need(oid, 'commit');
    if (object.type !== 'commit') throw new HistoryImportError(`Object ${oidToHex(oid)} should be a commit but is a ${object.type}.`);
    const index = indexOf.get(oid);
    state[index] = OPEN;
    const { tree, parents } = commitLinks(object.body);
    stack.push({ object, index, tree, parents, next: 0 });
  };
  open(tip);
  for (let step = 0; stack.length > 0; step++) {
    if ((step & PAUSE_EVERY_MASK) === 0) await slicer.pause();
    const top = stack[stack.length - 1];
    if (top.next < top.parents.length) {
      const parent = top.parents[top.next++];
      const index = indexOf.get(parent);
      const seen = index < 0 ? 0 : state[index];
      if (seen === OPEN) throw new HistoryImportError(`Commit ${oidToHex(parent)} is its own ancestor.`);
      if (seen === 0) open(parent);
      continue;
    }
    stack.pop();
    state[top.index] = DONE;
    commits.push(top.object);
    trees.push(top.tree);
  }
  return { commits, trees };
}

/**
 * Stores a prepared history's objects under `repo.project`, a few hundred per write (in order, so
 * each commit's parents are indexed before it), so a large seed never holds the event loop for
 * long. Nothing points at them until startMainAt() runs.
 */
export async function storeHistoryObjects(repo: Pick<Repo, 'store' | 'project'>, history: PreparedHistory, early?: EarlyHistory): Promise<void> {
  // Trees and blobs bases first, so each is stored as the fetched pack's entry in the write that
  // stores its base or a later one (src/repo/wire/packedForms.ts); commits after them, parents first.
  // Those `early` stored while the pack was parsed are not stored again.
  const stored = early ? await early.settled() : null;
  const commits = history.objects.filter((object) => object.type === 'commit' && !stored?.kept.has(object.oid));
  const contents = history.objects.filter((object) => object.type !== 'commit' && !stored?.kept.has(object.oid));
  // The store may hold back part of these writes and store it in an order of its own at the end
  // (AsyncStore.holdForms): nobody reads the reserved number meanwhile.
  repo.store.holdForms?.(repo.project);
  let late: PackObject[];
  try {
    // Nobody refers to them yet (the project is reserved, not created): in writes of their own when
    // the store can (half the work of a write whose callback is replayed), else with the rest.
    const unkept = await storeFormsAlone(repo.store, repo.project, formsInBaseOrder(contents));
    const ordered = [...unkept, ...contents.filter((object) => !object.packed), ...commits];
    late = [...(stored?.late ?? []), ...(await storeReceivedObjectsInWrites(repo.store, repo.project, ordered))];
  } catch (error) {
    await repo.store.settleForms?.(repo.project, false);
    throw error;
  }
  await repo.store.settleForms?.(repo.project, true);
  // An entry whose delta base came in a later write (commits against commits, rarely), once all are stored.
  if (late.length > 0) {
    await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      for (const object of formsInBaseOrder(late)) await keepPackedForm(tx, object);
    });
  }
}

/**
 * A seed's objects stored while its pack is still parsed (the pack checker streams them, src/service/packChecker.ts
 * begin()), under a reserved number whose forms are held back (AsyncStore.holdForms), so the store's
 * work falls within the parse instead of after it: trees and blobs as their pack entries alone, and
 * each commit once its parents are stored (the commit index needs theirs). Objects the pack carried
 * beyond the wanted commit's history are stored too (git sends none): unreachable, they go at the
 * project's next collection. Only for a store that keeps forms alone.
 */
export class EarlyHistory {
  private readonly runs: StreamedRuns;
  private chain: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | null = null;

  constructor(private readonly repo: Pick<Repo, 'store' | 'project'>) {
    repo.store.holdForms?.(repo.project);
    this.runs = new StreamedRuns(repo.store, repo.project);
  }

  /** Whether the store keeps forms alone, so streaming objects to it helps. */
  get wanted(): boolean {
    return this.repo.store.putFormsAlone !== undefined;
  }

  /** Stores a run after those given before: its trees and blobs, and the commits whose parents are all stored or in this write. */
  readonly add = (run: ResolvedRun): void => {
    // Told from the pack checker's message handler, which must not throw: a failure is settled()'s.
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await this.runs.add(run);
      } catch (error) {
        this.failure = { error };
      }
    });
  };

  /** Once every run given is stored: the ids kept, and the late entries. Rejects with the first failure. */
  async settled(): Promise<StoredRuns> {
    await this.chain;
    if (this.failure) throw this.failure.error;
    return this.runs;
  }

  /** Lets go of what was stored (the seed failed): waits for the runs under way, then drops the held forms. */
  async abandon(): Promise<void> {
    this.failure ??= { error: new Error('the seed was abandoned') };
    await this.chain;
    await this.repo.store.settleForms?.(this.repo.project, false);
  }
}

/**
 * Stores the commits' object lists (an index for clones) of a history storeHistoryObjects() stored:
 * lost, not fatal, when they fail (a commit without a list is planned by walking its tree).
 */
export async function indexHistoryCommits(repo: Pick<Repo, 'store' | 'project'>, history: PreparedHistory): Promise<void> {
  try {
    const listed = await history.commitObjects();
    if (listed.size === 0) return;
    // In id order: each list lands at the end of the page before it, which LMDB then leaves full.
    const commits = sortByOid(
      history.objects.filter((object) => object.type === 'commit'),
      (commit) => commit.oid,
    );
    await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      for (const commit of commits) {
        const list = listed.get(oidToHex(commit.oid));
        if (list) tx.putCommitObjects(commit.oid, list);
      }
    });
  } catch {
    // A commit without a list is planned by walking its tree.
  }
}

/** Points main and its working tree at the history's commit, whose objects are stored. */
export async function startMainAt(tx: WriteTx, history: PreparedHistory): Promise<void> {
  await tx.casRef(branchRef(MAIN_BRANCH), null, history.commit);
  await resetWorkingTree(tx, MAIN_BRANCH, history.tree);
  await tx.bumpVersion();
}
