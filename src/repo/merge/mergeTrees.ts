/**
 * Tree-level three-way merge, computing what git 2.39's merge-ort computes (merge-ort.c,
 * as run by `git merge-tree --write-tree`): a clean merge gives git's tree id, a conflicted one
 * git's set of conflicted paths. The merge runs in memory and returns its outcome as data;
 * nothing reaches the caller's object store unless the merge is clean (see StagedObjects).
 *
 * The phases are merge-ort's:
 *   1. collect: walk the three trees together in git's order (traverse_trees()), resolving
 *      paths where the sides agree and descending only into directories that differ, so work
 *      grows with the change, not the tree. A directory only one side changed is deferred and
 *      taken whole unless renames on that side matter (handle_deferred_entries());
 *   2. renames: per side, git's rename detection (diffcore-rename: exact, then same basename
 *      ≥75% similar, then ≥50% similar, with git's similarity estimate), directory renames
 *      (merge.directoryRenames' default "conflict"), then rename handling (rename/delete,
 *      rename/rename, rename/add ...);
 *   3. process: resolve every remaining path (content merges, modify/delete, file/directory
 *      conflicts ...) from the deepest path up, writing each directory's tree as it completes.
 *
 * Ties git breaks by walk order or by the iteration order of its hash maps (two identical
 * files, one of them renamed) are broken the same way: the walk is git's and the maps that
 * decide are modelled on git's hashmap.c (GitStrMap).
 *
 * Where git 2.39 reports less than happened we report more, deliberately: a rename colliding
 * with another path whose content merge failed is a conflict ('rename collision'; git only
 * prints a message and may call the merge clean with conflict markers in the file), and the
 * directory-rename problems git only prints ('directory rename split', 'implicit dir rename')
 * are conflicts too.
 */
import { EMPTY_TREE_OID, oidToHex, type Oid } from '../../git/oid.js';
import { maySpecialFileName, specialFileOf } from '../../git/fsck.js';
import { byteOrderKey, encodePath } from '../../git/pathBytes.js';
import { pathDepth } from '../../git/treeDepth.js';
import type { TreeEntry, TreeMode } from '../../git/tree.js';
import { GitStrMap } from './gitStrMap.js';
import { mergeContent } from './mergeContent.js';
import {
  ABSENT,
  NULL_OID,
  isGitlink,
  isRegular,
  isSymlink,
  MODE_DIRECTORY,
  NOT_RELEVANT,
  parentOf,
  RELEVANT_CONTENT,
  RELEVANT_FOR_ANCESTOR,
  RELEVANT_FOR_SELF,
  RELEVANT_LOCATION,
  sameVersion,
  treeModeOf,
  typeOf,
  versionOf,
  type FilePair,
  type Side,
  type Version,
} from './mergeModel.js';
import { RenameDetector } from './renameDetection.js';
import { StagedObjects } from './stagedObjects.js';
import { walkTogether, type Row } from './walkTrees.js';

export { StagedObjects } from './stagedObjects.js';

/**
 * The object access a merge needs; reads must return what was written. Reads are asynchronous and
 * the merge asks for the objects it needs together (a level of the trees it walks, the blobs of its
 * content merges and rename candidates), so an implementation may gather the reads asked for at
 * one moment into one batch. Writes are synchronous: a store buffers them.
 */
export interface MergeObjects {
  readTree(oid: Oid): Promise<TreeEntry[]>;
  readBlob(oid: Oid): Promise<Buffer>;
  writeBlob(body: Buffer): Oid;
  writeTree(entries: TreeEntry[]): Oid;
  /** Stores a tree already encoded and hashed (StagedObjects.flush), without doing either again. */
  putEncodedTree(oid: Oid, body: Buffer): void;
}

export type ConflictKind = 'content' | 'add/add' | 'modify/delete' | 'file/directory' | 'binary';

/** Git's finer name for the conflict, as in its "CONFLICT (...)" messages. */
export type ConflictReason =
  | 'content'
  | 'add/add'
  | 'binary'
  | 'modify/delete'
  | 'file/directory'
  | 'distinct types'
  | 'submodule'
  | 'rename/delete'
  | 'rename/rename'
  | 'rename collision'
  | 'file location'
  | 'directory rename split'
  | 'implicit dir rename';

/** A file version as a merge sees it: mode (octal text) and id, and the path it had on that side. */
export interface ConflictSide {
  mode: TreeMode;
  oid: Oid;
  path: string;
}

export interface MergeConflict {
  path: string;
  kind: ConflictKind;
  reason: ConflictReason;
  /**
   * The versions that met (absent: that side has no file) and what the merged tree holds for the
   * path (with conflict markers, or the side git keeps) and where. Conflicts git reports only as a
   * message about a directory have none of these.
   */
  base?: ConflictSide;
  ours?: ConflictSide;
  theirs?: ConflictSide;
  merged?: ConflictSide;
  /**
   * Every entry the merged tree holds for this conflict: `merged`, and for a conflict whose versions
   * git split ("<path>~<branch>"), the others. A resolution replaces all of them.
   */
  placed?: ConflictSide[];
}

export type TreeMergeResult = { clean: true; tree: Oid; pathDepthMax: number; specialFiles: DecidedEntry[] } | { clean: false; conflicts: MergeConflict[] };

/** An entry of the result the merge decided (not one taken whole inside an unchanged subtree). */
export interface DecidedEntry {
  path: string;
  mode: TreeMode;
  oid: Oid;
}

/** A merge's full outcome: the tree git would write (with conflict markers if need be) and its conflicts. */
export interface TreeMergeOutcome {
  tree: Oid;
  clean: boolean;
  conflicts: MergeConflict[];
  /**
   * Components of the deepest path the merge decided (wrote or took whole). A subtree taken whole
   * lies where that side had it, so no path of the result is deeper than this or than the sides.
   */
  pathDepthMax: number;
  /**
   * Entries the merge decided whose names git checks by content (.gitmodules, .gitattributes): a
   * content merge or a rename can give such a name new content that neither side had there.
   */
  specialFiles: DecidedEntry[];
}

/** Merges `ours` and `theirs` against `base` (null: the empty tree). */
export async function mergeTrees(objects: MergeObjects, base: Oid | null, ours: Oid, theirs: Oid): Promise<TreeMergeResult> {
  const staged = new StagedObjects(objects);
  const outcome = await mergeTreesWith(staged, base, ours, theirs, { depth: 0 });
  if (!outcome.clean) return { clean: false, conflicts: outcome.conflicts };
  staged.flush(outcome.tree);
  return { clean: true, tree: outcome.tree, pathDepthMax: outcome.pathDepthMax, specialFiles: outcome.specialFiles };
}

export interface MergeTreesOptions {
  /** merge-ort's call_depth: 0 for the real merge, 1+ while building virtual merge bases. */
  depth: number;
  /**
   * Names of the two sides in conflict markers and in "<path>~<name>" (git uses the branch names);
   * 'ours' and 'theirs' when not given. Virtual merge bases always use git's temporary names.
   */
  labels?: MergeLabels;
}

export interface MergeLabels {
  ours: string;
  theirs: string;
}

/**
 * The merge at a given recursion depth; objects go to `objects`, which also keeps the trees the
 * merge reads: it reads the trees it will walk ahead, a level at a time, then again as it walks.
 */
export function mergeTreesWith(objects: StagedObjects, base: Oid | null, ours: Oid, theirs: Oid, options: MergeTreesOptions): Promise<TreeMergeOutcome> {
  return new TreeMerge(objects, options.depth, options.labels).run(base ?? EMPTY_TREE_OID, ours, theirs);
}

// ---------------------------------------------------------------------------------------------
// Objects written during a merge stay in memory until the merge is known to be clean.


// ---------------------------------------------------------------------------------------------
// Per-path state (merge-ort's merged_info / conflict_info in one record).

type Stages = [Version, Version, Version];

interface PathInfo {
  /** Directory holding this path ('' at the top); trees are written per directory. */
  dir: string;
  /** Resolved: `result` is final (and ignored when `isNull`). */
  clean: boolean;
  isNull: boolean;
  result: Version;
  /** The rest matters only while unresolved. Index 0 base, 1 ours, 2 theirs. */
  stages: Stages;
  /** Where each stage came from; differs from the path after renames. */
  pathnames: [string, string, string];
  /** Bit i: stage i is a file (fileMask) or a directory (dirMask). */
  fileMask: number;
  dirMask: number;
  /** 0, or the bits of stages known equal (3: base=ours, 5: base=theirs, 6: ours=theirs). */
  matchMask: number;
  dfConflict: boolean;
  /** A conflict about the path itself (renames, directory renames). */
  pathConflict: boolean;
  /** For a file moved aside by a file/directory conflict: the path it was at. */
  reportPath?: string;
  reason?: ConflictReason;
}

function resolvedInfo(dir: string, result: Version): PathInfo {
  return {
    dir,
    clean: true,
    isNull: result.mode === 0,
    result,
    stages: [ABSENT, ABSENT, ABSENT],
    pathnames: ['', '', ''],
    fileMask: 0,
    dirMask: 0,
    matchMask: 0,
    dfConflict: false,
    pathConflict: false,
  };
}

function cloneInfo(info: PathInfo): PathInfo {
  return { ...info, stages: [...info.stages] as Stages, pathnames: [...info.pathnames] as PathInfo['pathnames'] };
}

/** Branch labels merge-ort uses while building virtual merge bases. */
const VIRTUAL_BRANCH1 = 'Temporary merge branch 1';
const VIRTUAL_BRANCH2 = 'Temporary merge branch 2';
/** Labels for the real merge when the caller names no branches; they show only in conflicts. */
const DEFAULT_LABELS: MergeLabels = { ours: 'ours', theirs: 'theirs' };
const SLASH = 0x2f;
/** The entries of a side that has no tree at a path: one array (frozen, as every merge shares it), so walks of the same trees are known to be the same. */
const NO_ENTRIES = Object.freeze([]) as unknown as TreeEntry[];

function joinPath(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

/**
 * merge-ort's sort_dirs_next_to_their_children(): byte order as if every path ended in '/', so a
 * directory sorts right before everything inside it.
 */
function compareDirsFirst(a: string, b: string): number {
  // Keys from byteOrderKey(): one character per byte, so characters compare as the bytes do.
  const common = Math.min(a.length, b.length);
  let i = 0;
  while (i < common && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  const ca = i < a.length ? a.charCodeAt(i) : SLASH;
  const cb = i < b.length ? b.charCodeAt(i) : SLASH;
  if (ca === cb) return i < a.length ? 1 : -1;
  return ca - cb;
}

// ---------------------------------------------------------------------------------------------

class TreeMerge {
  private readonly paths = new Map<string, PathInfo>();
  private readonly conflicted = new Map<string, PathInfo>();
  /** Conflicts git reports only as messages, with no conflicted entry (merge still unclean). */
  private readonly pathlessConflicts: MergeConflict[] = [];
  private readonly pairs: Record<Side, FilePair[]> = { 1: [], 2: [] };
  private readonly relevantSources: Record<Side, Map<string, number>> = { 1: new Map(), 2: new Map() };
  private readonly dirsRemoved: Record<Side, Map<string, number>> = { 1: new Map(), 2: new Map() };
  /** Per side: removed directory → votes per target directory (git's iteration order matters for ties). */
  private readonly dirRenameCounts: Record<Side, Map<string, GitStrMap<number>>> = { 1: new Map(), 2: new Map() };
  private readonly dirRenames: Record<Side, Map<string, string>> = { 1: new Map(), 2: new Map() };
  /**
   * merge-ort's dir_rename_mask while walking: 0 normally; 2 or 4 inside a directory removed on
   * the other side (the side that still has it); 7 once that side added a file there, which makes
   * every deletion below relevant for directory-rename detection.
   */
  private dirRenameMask = 0;
  /** Directories whose walk is deferred, per side, with the dirRenameMask to resume with. */
  private deferred: Record<Side, GitStrMap<number>> = { 1: new GitStrMap(), 2: new GitStrMap() };
  /** Whether a side's deferred directories may still be resolved without a walk. */
  private readonly trivialMergesOkay: Record<Side, boolean> = { 1: true, 2: true };
  private readonly branch1: string;
  private readonly branch2: string;
  private readonly renameDetector: RenameDetector;
  /** Blobs read ahead for content merges, by id. */
  private readonly contents = new Map<string, Buffer>();
  private readonly walked = new Map<TreeEntry[], { trees: TreeEntry[][]; rows: Row[] }>();

  constructor(
    private readonly objects: StagedObjects,
    private readonly depth: number,
    labels: MergeLabels = DEFAULT_LABELS,
  ) {
    this.branch1 = depth > 0 ? VIRTUAL_BRANCH1 : labels.ours;
    this.branch2 = depth > 0 ? VIRTUAL_BRANCH2 : labels.theirs;
    this.renameDetector = new RenameDetector(objects);
  }

  async run(base: Oid, ours: Oid, theirs: Oid): Promise<TreeMergeOutcome> {
    await this.readAhead([{ subtrees: [base, ours, theirs], mask: this.dirRenameMask }]);
    const roots = await Promise.all([this.objects.readTree(base), this.objects.readTree(ours), this.objects.readTree(theirs)]);
    await this.collect('', roots);
    await this.handleDeferredEntries();
    await this.detectAndProcessRenames();
    const { tree, pathDepthMax, specialFiles } = await this.processEntries();
    const conflicts = this.reportConflicts();
    return { tree, clean: conflicts.length === 0, conflicts, pathDepthMax, specialFiles };
  }

  // -------------------------------------------------------------------------------------------
  // Phase 1: collect (merge-ort's collect_merge_info).

  /**
   * Walks the three trees of `dir` and every directory below that needs a look, depth first in
   * git's order, as merge-ort's recursion does, but on an explicit stack (trees may be thousands
   * deep). A directory entered saves dirRenameMask and gets it back once its walk is done. The
   * trees it enters were read ahead (readAhead()).
   */
  private async collect(dir: string, trees: TreeEntry[][]): Promise<void> {
    type Frame = { dir: string; rows: Row[]; next: number } | { restoreMask: number };
    const stack: Frame[] = [this.collectFrame(dir, trees)];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if ('restoreMask' in top) {
        this.dirRenameMask = top.restoreMask;
        stack.pop();
        continue;
      }
      if (top.next >= top.rows.length) {
        stack.pop();
        continue;
      }
      const row = top.rows[top.next++];
      const inside = this.collectEntry(top.dir, row.find((entry) => entry !== undefined)!.name, row);
      if (inside) {
        stack.push({ restoreMask: inside.previousMask });
        stack.push(this.collectFrame(inside.path, await this.childTrees(inside.info)));
      }
    }
  }

  /** The rows of one directory, as merge-ort's collect_merge_info_callback() meets them. */
  private collectFrame(dir: string, trees: TreeEntry[][]): { dir: string; rows: Row[]; next: number } {
    const rows = this.rowsOf(trees);
    this.dirRenameMask = frameMask(rows, this.dirRenameMask);
    return { dir, rows, next: 0 };
  }

  /**
   * Reads the trees the walk from these directories will enter, a level at a time (one batch per
   * level instead of one per directory), by walking ahead the way collect() will: rows only, deciding
   * what collectEntry() will decide about entering a directory. A wrong guess costs a read, never a
   * result: the walk reads what was not read ahead, and `objects` keeps what was.
   */
  private async readAhead(entering: Array<{ subtrees: Array<Oid | null>; mask: number }>): Promise<void> {
    while (entering.length > 0) {
      const trees = await Promise.all(entering.map(({ subtrees }) => Promise.all(subtrees.map((oid) => (oid ? this.objects.readTree(oid) : NO_ENTRIES)))));
      const next: typeof entering = [];
      entering.forEach(({ mask }, i) => {
        const rows = this.rowsOf(trees[i]);
        const rowMask = frameMask(rows, mask);
        for (const row of rows) {
          const childMask = this.entryMaskIfEntered(row, rowMask);
          if (childMask !== null) next.push({ subtrees: row.map((entry) => (entry?.mode === '40000' ? entry.oid : null)), mask: childMask });
        }
      });
      entering = next;
    }
  }

  /** The rows of three trees walked together, walked once per merge (readAhead() and collect() meet the same directories). */
  private rowsOf(trees: TreeEntry[][]): Row[] {
    const key = trees[1].length > 0 ? trees[1] : trees[2].length > 0 ? trees[2] : trees[0];
    const walked = this.walked.get(key);
    if (walked && walked.trees[0] === trees[0] && walked.trees[1] === trees[1] && walked.trees[2] === trees[2]) return walked.rows;
    const rows = walkTogether(trees);
    this.walked.set(key, { trees, rows });
    return rows;
  }

  /**
   * What collectEntry() decides about entering a row's directory, met with dirRenameMask `mask`:
   * null when it will not enter it (the sides agree on it, it is not a directory, or it is
   * deferred), else the dirRenameMask the walk inside starts with. Every row of a directory is met
   * with the directory's mask (collectEntry() restores it), and collectRenameInfo() makes the mask
   * 7 only where it was 7 already.
   */
  private entryMaskIfEntered(row: Row, mask: number): number | null {
    if (unchangedRow(row)) return null;
    const { fileMask, dirMask } = masksOf(row);
    if (dirMask === 0) return null;
    // Indexed, not destructured: destructuring steps an iterator, which allocates until the code is optimised.
    const base = versionOf(row[0]);
    const ours = versionOf(row[1]);
    const theirs = versionOf(row[2]);
    const oursMatchesBase = base.mode !== 0 && ours.mode !== 0 && sameVersion(base, ours);
    const theirsMatchesBase = base.mode !== 0 && theirs.mode !== 0 && sameVersion(base, theirs);
    if (oursMatchesBase && theirsMatchesBase) return null;
    let side = oursMatchesBase ? 2 : theirsMatchesBase ? 1 : 0;
    if (fileMask === 0 && (dirMask === 2 || dirMask === 4)) side = dirMask / 2;
    if (mask !== 7 && side !== 0 && this.trivialMergesOkay[side as Side]) return null;
    return mask !== 7 && (dirMask === 3 || dirMask === 5) ? dirMask & ~1 : mask;
  }

  /**
   * Resolves or records one path. Returns the directory to walk next (and the dirRenameMask to
   * restore after it) when the path is a directory that needs a look inside now.
   */
  private collectEntry(dir: string, name: string, entries: Row): { path: string; info: PathInfo; previousMask: number } | null {
    // Most rows of a directory the walk enters are the same on all three sides.
    if (unchangedRow(entries)) return this.setResolved(joinPath(dir, name), dir, versionOf(entries[0]));
    const previousMask = this.dirRenameMask;
    const { fileMask, dirMask } = masksOf(entries);
    const versions: Stages = [versionOf(entries[0]), versionOf(entries[1]), versionOf(entries[2])];
    const base = versions[0];
    const ours = versions[1];
    const theirs = versions[2];
    const oursMatchesBase = base.mode !== 0 && ours.mode !== 0 && sameVersion(base, ours);
    const theirsMatchesBase = base.mode !== 0 && theirs.mode !== 0 && sameVersion(base, theirs);
    const sidesMatch = ours.mode !== 0 && theirs.mode !== 0 && sameVersion(ours, theirs);
    const matchMask = oursMatchesBase ? (theirsMatchesBase ? 7 : 3) : theirsMatchesBase ? 5 : sidesMatch ? 6 : 0;
    const path = joinPath(dir, name);

    // Whole subtrees (or files) the sides agree on are resolved without looking inside.
    if (oursMatchesBase && theirsMatchesBase) return this.setResolved(path, dir, base);
    if (fileMask === 7) {
      if (sidesMatch) return this.setResolved(path, dir, ours);
      if (oursMatchesBase) return this.setResolved(path, dir, theirs);
      if (theirsMatchesBase) return this.setResolved(path, dir, ours);
    }

    this.collectRenameInfo(versions, dir, path, fileMask, dirMask, matchMask);
    const info: PathInfo = {
      dir,
      clean: false,
      isNull: dirMask !== 0,
      result: ABSENT,
      stages: versions,
      pathnames: [path, path, path],
      fileMask,
      dirMask,
      matchMask,
      dfConflict: fileMask !== 0 && dirMask !== 0,
      pathConflict: false,
    };
    this.paths.set(path, info);
    if (dirMask === 0) return null;
    // A directory only one side changed (or only one side has) may need no look inside: that
    // side's tree is the result unless renames are involved. merge-ort defers it and decides
    // after the walk (handle_deferred_entries()); the order it then walks deferred directories
    // in decides ties between identical files in rename detection, so we defer the same way.
    let side = oursMatchesBase ? 2 : theirsMatchesBase ? 1 : 0;
    if (fileMask === 0 && (dirMask === 2 || dirMask === 4)) {
      info.matchMask = 7 - dirMask;
      side = dirMask / 2;
    }
    if (this.dirRenameMask !== 7 && side !== 0 && this.trivialMergesOkay[side as Side]) {
      this.deferred[side as Side].set(path, this.dirRenameMask);
      this.dirRenameMask = previousMask;
      return null;
    }
    return { path, info, previousMask };
  }

  private async collectInside(path: string, info: PathInfo): Promise<void> {
    await this.collect(path, await this.childTrees(info));
  }

  /** The three sides' entries of a directory about to be walked. */
  private childTrees(info: PathInfo): Promise<TreeEntry[][]> {
    info.matchMask &= info.fileMask;
    return Promise.all([0, 1, 2].map((i) => ((info.dirMask >> i) & 1 ? this.objects.readTree(info.stages[i].oid) : NO_ENTRIES)));
  }

  /**
   * handle_deferred_entries(): a side with a deletion that matters for renames needs its
   * deferred directories walked (in git's hash-map order); otherwise they take that side's tree.
   */
  private async handleDeferredEntries(): Promise<void> {
    for (const side of [1, 2] as const) {
      const walk = this.relevantSources[side].size > 0;
      this.trivialMergesOkay[side] = !walk;
      const deferred = this.deferred[side];
      this.deferred[side] = new GitStrMap<number>();
      if (walk) {
        const entering = [...deferred.entries()].map(([path, mask]) => {
          const info = this.paths.get(path)!;
          return { subtrees: info.stages.map((version, i) => ((info.dirMask >> i) & 1 ? version.oid : null)), mask };
        });
        await this.readAhead(entering);
      }
      for (const [path, mask] of deferred.entries()) {
        const info = this.paths.get(path)!;
        if (!walk) {
          resolveTrivially(info, side);
          continue;
        }
        this.dirRenameMask = mask;
        await this.collectInside(path, info);
      }
      for (const [path] of this.deferred[side].entries()) resolveTrivially(this.paths.get(path)!, side);
    }
  }

  /** Records a path the sides agree on; null, so collectEntry can return it (nothing to walk). */
  private setResolved(path: string, dir: string, result: Version): null {
    this.paths.set(path, resolvedInfo(dir, result));
    return null;
  }

  /** merge-ort's collect_rename_info(): rename candidates and directory-removal bookkeeping. */
  private collectRenameInfo(versions: Stages, dir: string, path: string, fileMask: number, dirMask: number, matchMask: number): void {
    if (this.dirRenameMask !== 7 && (dirMask === 3 || dirMask === 5)) this.dirRenameMask = dirMask & ~1;
    if (dirMask === 1 || dirMask === 3 || dirMask === 5) {
      const sides = (7 - dirMask) / 2;
      const relevance = this.dirRenameMask === 7 ? RELEVANT_FOR_ANCESTOR : NOT_RELEVANT;
      if (sides & 1) this.dirsRemoved[1].set(path, relevance);
      if (sides & 2) this.dirsRemoved[2].set(path, relevance);
    }
    if (this.dirRenameMask === 7 && (fileMask === 2 || fileMask === 4)) {
      const side = (3 - (fileMask >> 1)) as Side;
      this.dirsRemoved[side].set(dir, RELEVANT_FOR_SELF);
    }
    if (fileMask === 0 || fileMask === 7) return;
    for (const side of [1, 2] as const) {
      const sideBit = 1 << side;
      if (fileMask & 1 && !(fileMask & sideBit)) {
        const contentRelevant = (matchMask & fileMask) === 0;
        const locationRelevant = this.dirRenameMask === 7;
        if (contentRelevant || locationRelevant) {
          this.relevantSources[side].set(path, contentRelevant ? RELEVANT_CONTENT : RELEVANT_LOCATION);
        }
        this.pairs[side].push({ status: 'D', side, onePath: path, one: versions[0], twoPath: path, two: ABSENT, used: false });
      }
      if (!(fileMask & 1) && fileMask & sideBit) {
        this.pairs[side].push({ status: 'A', side, onePath: path, one: ABSENT, twoPath: path, two: versions[side], used: false });
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Phase 2: renames (merge-ort's detect_and_process_renames).

  private async detectAndProcessRenames(): Promise<void> {
    for (const side of [1, 2] as const) {
      this.pairs[side] = await this.renameDetector.detect({
        pairs: this.pairs[side],
        relevantSources: this.relevantSources[side],
        dirsRemoved: this.dirsRemoved[side],
        dirRenameCounts: this.dirRenameCounts[side],
      });
    }
    // Directory renames are only looked for in the real merge, not in virtual merge bases.
    if (this.depth === 0) {
      this.chooseDirectoryRenames(1);
      this.chooseDirectoryRenames(2);
      for (const source of [...this.dirRenames[1].keys()]) {
        if (this.dirRenames[2].has(source)) {
          this.dirRenames[1].delete(source);
          this.dirRenames[2].delete(source);
        }
      }
    }
    const collisions: Record<Side, Map<string, Collision>> = {
      1: this.computeCollisions(this.dirRenames[2], this.pairs[1]),
      2: this.computeCollisions(this.dirRenames[1], this.pairs[2]),
    };
    const combined = [...this.collectRenames(1, collisions), ...this.collectRenames(2, collisions)];
    const sourceKeys = new Map(combined.map((pair) => [pair, encodePath(pair.onePath)]));
    combined.sort((a, b) => Buffer.compare(sourceKeys.get(a)!, sourceKeys.get(b)!)); // stable
    await this.processRenames(combined);
  }

  /** get_provisional_directory_renames(): a removed directory moved where most of its files went. */
  private chooseDirectoryRenames(side: Side): void {
    for (const [sourceDir, counts] of this.dirRenameCounts[side]) {
      let max = 0;
      let tiedMax = 0;
      let best: string | null = null;
      for (const [targetDir, count] of counts.entries()) {
        if (count === max) tiedMax = max;
        else if (count > max) {
          max = count;
          best = targetDir;
        }
      }
      if (max === 0) continue;
      if (tiedMax === max) {
        this.pathlessConflicts.push({ path: sourceDir, kind: 'file/directory', reason: 'directory rename split' });
      } else {
        this.dirRenames[side].set(sourceDir, best!);
      }
    }
  }

  /** compute_collisions(): where would the other side's directory renames put this side's new files? */
  private computeCollisions(otherSideRenames: Map<string, string>, pairs: readonly FilePair[]): Map<string, Collision> {
    const collisions = new Map<string, Collision>();
    if (otherSideRenames.size === 0) return collisions;
    for (const pair of pairs) {
      if (pair.status !== 'A' && pair.status !== 'R') continue;
      const renamedDir = findRenamedDirectory(pair.twoPath, otherSideRenames);
      if (!renamedDir) continue;
      const newPath = applyDirectoryRename(renamedDir, pair.twoPath);
      let collision = collisions.get(newPath);
      if (!collision) {
        collision = { sources: new Set(), reported: false };
        collisions.set(newPath, collision);
      }
      collision.sources.add(pair.twoPath);
    }
    return collisions;
  }

  /**
   * collect_renames(): this side's renames, plus its additions that the other side's directory
   * renames move (then marked as a "file location" conflict, merge.directoryRenames=conflict).
   */
  private collectRenames(side: Side, collisions: Record<Side, Map<string, Collision>>): FilePair[] {
    const otherSide: Side = side === 1 ? 2 : 1;
    const result: FilePair[] = [];
    for (const pair of this.pairs[side]) {
      if (pair.status !== 'A' && pair.status !== 'R') continue;
      const newPath = this.checkDirectoryRename(pair.twoPath, side, this.dirRenames[otherSide], this.dirRenames[side], collisions);
      if (pair.status !== 'R' && newPath === null) continue;
      if (newPath !== null) this.applyDirectoryRenameModifications(pair, newPath);
      result.push(pair);
    }
    return result;
  }

  /** check_for_directory_rename() with handle_path_level_conflicts(). */
  private checkDirectoryRename(
    path: string,
    side: Side,
    dirRenames: Map<string, string>,
    exclusions: Map<string, string>,
    collisions: Record<Side, Map<string, Collision>>,
  ): string | null {
    if (dirRenames.size === 0) return null;
    const otherSide: Side = side === 1 ? 2 : 1;
    if (collisions[otherSide].has(path)) return null;
    const renamedDir = findRenamedDirectory(path, dirRenames);
    if (!renamedDir) return null;
    // Do not move into a directory this side renamed away itself.
    if (exclusions.has(renamedDir[1])) return null;
    const newPath = applyDirectoryRename(renamedDir, path);
    const collision = collisions[side].get(newPath)!;
    let clean = true;
    if (collision.reported) {
      clean = false;
    } else if (this.pathInTheWay(newPath, 1 << side)) {
      collision.reported = true;
      clean = false;
    } else if (collision.sources.size > 1) {
      collision.reported = true;
      clean = false;
    }
    if (!clean) {
      this.pathlessConflicts.push({ path, kind: 'file/directory', reason: 'implicit dir rename' });
      return null;
    }
    return newPath;
  }

  private pathInTheWay(path: string, sideMask: number): boolean {
    const info = this.paths.get(path);
    if (!info) return false;
    return info.clean || (sideMask & (info.fileMask | info.dirMask)) !== 0;
  }

  /** apply_directory_rename_modifications(): move a path's entry to its new place. */
  private applyDirectoryRenameModifications(pair: FilePair, newPath: string): void {
    const oldPath = pair.twoPath;
    let info = this.paths.get(oldPath)!;
    // Create the directories leading to the new path that no side has.
    const missingDirs: string[] = [];
    let parent = parentOf(newPath);
    while (parent !== '' && !this.paths.has(parent)) {
      missingDirs.push(parent);
      parent = parentOf(parent);
    }
    for (let i = missingDirs.length - 1; i >= 0; i--) {
      const dirInfo = resolvedInfo(parentOf(missingDirs[i]), ABSENT);
      dirInfo.clean = false;
      dirInfo.isNull = false;
      dirInfo.dirMask = info.fileMask;
      this.paths.set(missingDirs[i], dirInfo);
    }
    if (info.dirMask === 0) {
      this.paths.delete(oldPath);
    } else {
      // The old path is also a directory that stays; split the file part off.
      const fileInfo = cloneInfo(info);
      fileInfo.dirMask = 0;
      fileInfo.stages[1] = ABSENT;
      info.fileMask = 0;
      info.clean = true;
      for (let i = 0; i < 3; i++) if (!(info.dirMask & (1 << i))) info.stages[i] = ABSENT;
      info = fileInfo;
    }
    info.dir = parentOf(newPath);
    const existing = this.paths.get(newPath);
    if (!existing) {
      this.paths.set(newPath, info);
    } else {
      existing.fileMask |= info.fileMask;
      if (existing.dirMask) existing.dfConflict = true;
      const index = info.fileMask >> 1;
      existing.pathnames[index] = info.pathnames[index];
      existing.stages[index] = info.stages[index];
      info = existing;
    }
    info.pathConflict = true;
    info.reason ??= 'file location';
    pair.twoPath = newPath;
  }

  /** merge-ort's process_renames(). */
  private async processRenames(renames: readonly FilePair[]): Promise<void> {
    for (let i = 0; i < renames.length; i++) {
      const pair = renames[i];
      const oldPath = pair.onePath;
      const newPath = pair.twoPath;
      const oldInfo = this.paths.get(oldPath);
      // Gone (moved by a directory rename) or resolved: the rename changes nothing.
      if (!oldInfo || oldInfo.clean) continue;

      const next = renames[i + 1];
      if (next && next.onePath === oldPath) {
        // Both sides renamed the same file.
        const pathnames: [string, string, string] = [oldPath, newPath, next.twoPath];
        const base = this.paths.get(pathnames[0])!;
        const side1 = this.paths.get(pathnames[1])!;
        const side2 = this.paths.get(pathnames[2])!;
        if (pathnames[1] === pathnames[2]) {
          // rename/rename(1to1): a plain rename on both sides.
          side1.stages[0] = base.stages[0];
          side1.fileMask |= 1;
          base.isNull = true;
          base.clean = true;
          i++;
          continue;
        }
        // rename/rename(1to2): both new paths get the merged content; all three conflict.
        const merged = await this.mergeVersions(base.stages[0], side1.stages[1], side2.stages[2], pathnames, 1 + 2 * this.depth);
        const wasBinary = !merged.clean && sameVersion(merged.version, side1.stages[1]);
        side1.stages[1] = merged.version;
        side2.stages[2] = wasBinary ? side2.stages[2] : merged.version;
        for (const info of [side1, side2, base]) {
          info.pathConflict = true;
          info.reason ??= 'rename/rename';
        }
        i++;
        continue;
      }

      const newInfo = this.paths.get(newPath)!;
      const targetIndex = pair.side;
      const otherIndex = 3 - targetIndex;
      const otherBit = 1 << otherIndex;
      const sourceDeleted = oldInfo.fileMask === 1;
      let collision = (newInfo.fileMask & otherBit) !== 0;
      const typeChanged = !sourceDeleted && isRegular(oldInfo.stages[otherIndex].mode) !== isRegular(newInfo.stages[targetIndex].mode);
      // A type change plus a collision is really a double rename git could not see.
      if (typeChanged && collision) collision = false;

      if (collision && !sourceDeleted) {
        // rename/add or rename/rename(2to1): merge the renamed file with the other side's
        // version of the source first; the path then merges like an add/add.
        const pathnames: [string, string, string] = [oldPath, oldPath, oldPath];
        pathnames[targetIndex] = newPath;
        const base = this.paths.get(pathnames[0])!;
        const side1 = this.paths.get(pathnames[1])!;
        const side2 = this.paths.get(pathnames[2])!;
        const merged = await this.mergeVersions(base.stages[0], side1.stages[1], side2.stages[2], pathnames, 1 + 2 * this.depth);
        newInfo.stages[targetIndex] = merged.version;
        if (!merged.clean) {
          // git 2.39 only prints "CONFLICT (rename involved in collision)" here and may then
          // call the merge clean although the file holds conflict markers; we report it.
          newInfo.pathConflict = true;
          newInfo.reason = 'rename collision';
        }
      } else if (collision && sourceDeleted) {
        // rename/delete colliding with an add: left to look like an add/add conflict.
        newInfo.pathConflict = true;
        newInfo.reason ??= 'rename/delete';
      } else {
        newInfo.stages[0] = oldInfo.stages[0];
        newInfo.fileMask |= 1;
        newInfo.pathnames[0] = oldPath;
        if (typeChanged) {
          // Rename vs. type change: the original stays for the other side's new type.
          oldInfo.stages[0] = ABSENT;
          oldInfo.fileMask &= 6;
        } else if (sourceDeleted) {
          newInfo.pathConflict = true;
          newInfo.reason ??= 'rename/delete';
        } else {
          // A normal rename: the other side's changes to the source follow the file.
          newInfo.stages[otherIndex] = oldInfo.stages[otherIndex];
          newInfo.fileMask |= otherBit;
          newInfo.pathnames[otherIndex] = oldPath;
        }
      }
      if (!typeChanged) {
        oldInfo.isNull = true;
        oldInfo.clean = true;
      }
    }
  }

  // -------------------------------------------------------------------------------------------
  // Phase 3: process entries (merge-ort's process_entries / process_entry).

  private async processEntries(): Promise<{ tree: Oid; pathDepthMax: number; specialFiles: DecidedEntry[] }> {
    const snapshot: Array<{ path: string; info: PathInfo; key: string }> = [];
    this.paths.forEach((info, path) => snapshot.push({ path, info, key: byteOrderKey(path) }));
    snapshot.sort((a, b) => compareDirsFirst(a.key, b.key));
    // The files both sides changed are content-merged below: read their blobs in one batch first.
    const toMerge: Stages[] = [];
    for (const { info } of snapshot) if (!info.clean && (info.fileMask & 6) === 6) toMerge.push(info.stages);
    await this.readContents(toMerge);
    const records = new Map<string, TreeEntry[]>();
    const dirsWithChildren = new Set<string>();
    let pathDepthMax = 0;
    const specialFiles: DecidedEntry[] = [];
    const record = (path: string, info: PathInfo) => {
      dirsWithChildren.add(info.dir);
      // Mode 0 without isNull: merge-ort's directory-rename code can leave a conflicted file
      // stage empty and then writes a "000000" tree entry; we leave such an entry out.
      if (info.isNull || info.result.mode === 0) return;
      pathDepthMax = Math.max(pathDepthMax, pathDepth(path));
      const name = info.dir === '' ? path : path.slice(info.dir.length + 1);
      if (maySpecialFileName(name) && specialFileOf(encodePath(name))) specialFiles.push({ path, mode: treeModeOf(info.result.mode), oid: info.result.oid });
      let list = records.get(info.dir);
      if (!list) {
        list = [];
        records.set(info.dir, list);
      }
      list.push({ name, mode: treeModeOf(info.result.mode), oid: info.result.oid });
    };
    // Deepest first: everything inside a directory is done before the directory itself.
    for (let k = snapshot.length - 1; k >= 0; k--) {
      const { path, info } = snapshot[k];
      if (dirsWithChildren.has(path)) {
        const children = records.get(path) ?? [];
        if (children.length === 0) {
          info.isNull = true;
        } else {
          info.isNull = false;
          // Recorded deepest first, so reversed they are mostly in git order already (encodeTree then skips its sort).
          info.result = { mode: MODE_DIRECTORY, oid: this.objects.writeTree(children.reverse()) };
        }
        records.delete(path);
      }
      if (info.clean) record(path, info);
      // A directory with no file at its path needs only its record: processEntry() would do just that, after a wait.
      else if (info.dirMask !== 0 && info.fileMask === 0) record(path, info);
      else await this.processEntry(path, info, record);
    }
    return { tree: this.objects.writeTree((records.get('') ?? []).reverse()), pathDepthMax, specialFiles };
  }

  private async processEntry(path: string, entry: PathInfo, record: (path: string, info: PathInfo) => void): Promise<void> {
    let info = entry;
    let dfFileIndex = 0;
    if (info.dirMask) {
      record(path, info);
      if (info.fileMask === 0) return;
    }

    if (info.dfConflict && info.result.mode === 0) {
      // The directory merged away; the file can have the path after all.
      info.dfConflict = false;
      info.clean = false;
      info.isNull = false;
      info.matchMask &= ~info.dirMask;
      info.dirMask = 0;
      for (let i = 0; i < 3; i++) if (!(info.fileMask & (1 << i))) info.stages[i] = ABSENT;
    } else if (info.dfConflict) {
      // The directory stays, so a surviving file moves aside to "<path>~<branch>".
      if (info.fileMask === 1) {
        info.fileMask = 0;
        return;
      }
      const fileInfo = cloneInfo(info);
      fileInfo.matchMask &= ~fileInfo.dirMask;
      fileInfo.dirMask = 0;
      for (let i = 0; i < 3; i++) if (!(fileInfo.fileMask & (1 << i))) fileInfo.stages[i] = ABSENT;
      dfFileIndex = info.dirMask & 2 ? 2 : 1;
      const originalPath = path;
      path = this.uniquePath(path, dfFileIndex === 1 ? this.branch1 : this.branch2);
      this.paths.set(path, fileInfo);
      fileInfo.reportPath = originalPath;
      fileInfo.reason = 'file/directory';
      info.fileMask = 0;
      info = fileInfo;
    }

    const [base, ours, theirs] = info.stages;
    if (info.matchMask) {
      info.clean = !info.dfConflict && !info.pathConflict;
      if (info.matchMask === 6) {
        info.result = ours;
      } else {
        const side = (7 & ~info.matchMask) === 4 ? 2 : 1;
        info.result = info.stages[side];
        info.isNull = info.result.mode === 0;
        if (info.isNull) info.clean = true;
      }
    } else if (info.fileMask >= 6 && typeOf(ours.mode) !== typeOf(theirs.mode)) {
      if (this.depth > 0) {
        info.clean = false;
        info.result = base;
        info.isNull = base.mode === 0;
      } else {
        path = this.separateDistinctTypes(path, info, record);
      }
    } else if (info.fileMask >= 6) {
      const merged = await this.mergeVersions(base, ours, theirs, info.pathnames, this.depth * 2);
      info.clean = merged.clean && !info.dfConflict && !info.pathConflict;
      info.result = merged.version;
      info.isNull = merged.version.mode === 0;
      if (merged.clean && info.dfConflict) {
        info.fileMask = 1 << dfFileIndex;
        info.stages[dfFileIndex] = merged.version;
      }
      if (!merged.clean && info.reason !== 'file/directory') {
        info.reason = merged.binary ? 'binary' : isGitlink(merged.version.mode) ? 'submodule' : info.fileMask === 6 ? 'add/add' : 'content';
      }
    } else if (info.fileMask === 3 || info.fileMask === 5) {
      const side = info.fileMask === 5 ? 2 : 1;
      // While building a virtual base, keep the base version.
      info.result = info.stages[this.depth > 0 ? 0 : side];
      info.clean = false;
      info.reason ??= 'modify/delete';
    } else if (info.fileMask === 2 || info.fileMask === 4) {
      const side = info.fileMask === 4 ? 2 : 1;
      info.result = info.stages[side];
      info.clean = !info.dfConflict && !info.pathConflict;
    } else if (info.fileMask === 1) {
      info.isNull = true;
      info.result = ABSENT;
      info.clean = !info.pathConflict;
    }

    if (!info.clean) this.conflicted.set(path, info);
    record(path, info);
  }

  /**
   * A path that is a file on one side and a symlink or submodule on the other: each is kept
   * under its own name ("<path>~<branch>" for the regular file, or for both), both conflicted.
   * Returns the path the caller goes on with (ours' version).
   */
  private separateDistinctTypes(path: string, info: PathInfo, record: (path: string, info: PathInfo) => void): string {
    const [base, ours, theirs] = info.stages;
    const renameOurs = isRegular(ours.mode) || !isRegular(theirs.mode);
    const renameTheirs = !isRegular(ours.mode);
    const oursPath = renameOurs ? this.uniquePath(path, this.branch1) : null;
    let theirsPath = renameTheirs ? this.uniquePath(path, this.branch2) : null;
    info.clean = false;
    info.reason = 'distinct types';
    info.reportPath = path;

    const theirsInfo = cloneInfo(info);
    theirsInfo.result = theirs;
    theirsInfo.stages[1] = ABSENT;
    theirsInfo.fileMask = 5;
    if (typeOf(theirs.mode) !== typeOf(base.mode)) {
      theirsInfo.stages[0] = ABSENT;
      theirsInfo.fileMask = 4;
    }
    info.result = ours;
    info.stages[2] = ABSENT;
    info.fileMask = 3;
    if (typeOf(ours.mode) !== typeOf(base.mode)) {
      info.stages[0] = ABSENT;
      info.fileMask = 2;
    }
    if (oursPath !== null) this.paths.set(oursPath, info);
    if (theirsPath === null) theirsPath = path;
    this.paths.set(theirsPath, theirsInfo);
    if (oursPath !== null && renameTheirs) this.paths.delete(path);
    this.conflicted.set(theirsPath, theirsInfo);
    record(theirsPath, theirsInfo);
    return oursPath ?? path;
  }

  /** merge-ort's unique_path(): "<path>~<branch>", with "_<n>" added until no path has the name. */
  private uniquePath(path: string, branch: string): string {
    const base = `${path}~${branch.replace(/\//g, '_')}`;
    let candidate = base;
    for (let suffix = 0; this.paths.has(candidate); suffix++) candidate = `${base}_${suffix}`;
    return candidate;
  }

  /**
   * Reads the blobs mergeVersions() will merge for these versions into `contents`, together. A
   * version read for nothing costs a read; one not read here is read by mergeVersions().
   */
  private async readContents(merges: ReadonlyArray<readonly [Version, Version, Version]>): Promise<void> {
    const wanted = new Map<string, Oid>();
    for (const [base, ours, theirs] of merges) {
      if (!contentMergeNeeded(base, ours, theirs)) continue;
      for (const version of typeOf(base.mode) === typeOf(ours.mode) ? [base, ours, theirs] : [ours, theirs]) {
        const hex = oidToHex(version.oid);
        if (!this.contents.has(hex)) wanted.set(hex, version.oid);
      }
    }
    const oids = [...wanted.values()];
    const bodies = await Promise.all(oids.map((oid) => this.objects.readBlob(oid)));
    oids.forEach((oid, i) => this.contents.set(oidToHex(oid), bodies[i]));
  }

  private async content(oid: Oid): Promise<Buffer> {
    return this.contents.get(oidToHex(oid)) ?? (await this.objects.readBlob(oid));
  }

  /**
   * merge-ort's handle_content_merge(): merge modes, take a side when the other kept the base,
   * else merge the contents (regular files), or conflict (symlinks, submodules).
   */
  private async mergeVersions(
    base: Version,
    ours: Version,
    theirs: Version,
    pathnames: readonly [string, string, string],
    extraMarkerSize: number,
  ): Promise<{ version: Version; clean: boolean; binary: boolean }> {
    let clean = true;
    let binary = false;
    let mode: number;
    if (ours.mode === theirs.mode || ours.mode === base.mode) {
      mode = theirs.mode;
    } else {
      // Both changed the mode differently (possible only for 100644 against 100755).
      mode = ours.mode;
      clean = theirs.mode === base.mode;
    }
    let oid: Oid;
    if (ours.oid.equals(theirs.oid) || ours.oid.equals(base.oid)) {
      oid = theirs.oid;
    } else if (theirs.oid.equals(base.oid)) {
      oid = ours.oid;
    } else if (isRegular(ours.mode)) {
      const twoWay = typeOf(base.mode) !== typeOf(ours.mode);
      const sameNames = pathnames[0] === pathnames[1] && pathnames[1] === pathnames[2];
      const [baseContent, oursContent, theirsContent] = await Promise.all([twoWay ? Buffer.alloc(0) : this.content(base.oid), this.content(ours.oid), this.content(theirs.oid)]);
      const merged = mergeContent(
        baseContent,
        oursContent,
        theirsContent,
        {
          oursLabel: sameNames ? this.branch1 : `${this.branch1}:${pathnames[1]}`,
          theirsLabel: sameNames ? this.branch2 : `${this.branch2}:${pathnames[2]}`,
          markerSize: 7 + extraMarkerSize,
          virtualAncestor: this.depth > 0,
        },
      );
      oid = this.objects.writeBlob(merged.content);
      if (!merged.clean) {
        clean = false;
        binary = merged.kind === 'binary';
      }
    } else if (isGitlink(ours.mode)) {
      // Merging submodule commits needs the submodule's history, which a merge of this
      // repository does not have: git then reports a conflict too.
      const twoWay = typeOf(base.mode) !== typeOf(ours.mode);
      clean = false;
      oid = this.depth > 0 ? (twoWay ? NULL_OID : base.oid) : ours.oid;
      if (this.depth > 0 && twoWay) {
        mode = base.mode;
        oid = base.oid;
      }
    } else if (isSymlink(ours.mode)) {
      clean = false;
      if (this.depth > 0) {
        mode = base.mode;
        oid = base.oid;
      } else {
        oid = ours.oid;
      }
    } else {
      throw new Error(`unsupported mode ${mode.toString(8)} in a content merge`);
    }
    return { version: { mode, oid }, clean, binary };
  }

  // -------------------------------------------------------------------------------------------

  private reportConflicts(): MergeConflict[] {
    const byPath = new Map<string, MergeConflict>();
    for (const [path, info] of this.conflicted) {
      if (info.fileMask === 0) continue; // git lists a path only with at least one stage
      const reportPath = info.reportPath ?? path;
      const reason = info.reason ?? 'content';
      let conflict = byPath.get(reportPath);
      if (!conflict) {
        conflict = { path: reportPath, kind: kindOf(reason, info), reason };
        byPath.set(reportPath, conflict);
      }
      // A path split in two (distinct types) has one side in each entry; gather them.
      conflict.base ??= sideOf(info, 0);
      conflict.ours ??= sideOf(info, 1);
      conflict.theirs ??= sideOf(info, 2);
      const placed = !info.isNull && info.result.mode !== 0 ? { mode: treeModeOf(info.result.mode), oid: info.result.oid, path } : undefined;
      if (placed && (!conflict.merged || path === reportPath)) conflict.merged = placed;
      if (placed) (conflict.placed ??= []).push(placed);
    }
    for (const conflict of this.pathlessConflicts) if (!byPath.has(conflict.path)) byPath.set(conflict.path, conflict);
    return [...byPath.values()].sort((a, b) => Buffer.compare(encodePath(a.path), encodePath(b.path)));
  }
}

/** Whether mergeVersions() merges these versions' contents (and so reads their blobs). */
function contentMergeNeeded(base: Version, ours: Version, theirs: Version): boolean {
  return !ours.oid.equals(theirs.oid) && !ours.oid.equals(base.oid) && !theirs.oid.equals(base.oid) && isRegular(ours.mode);
}

/** Stage `index` of a conflicted path (0 base, 1 ours, 2 theirs), if that side has a file there. */
function sideOf(info: PathInfo, index: 0 | 1 | 2): ConflictSide | undefined {
  const version = info.stages[index];
  if (version.mode === 0 || !(info.fileMask & (1 << index))) return undefined;
  return { mode: treeModeOf(version.mode), oid: version.oid, path: info.pathnames[index] };
}

function kindOf(reason: ConflictReason, info: PathInfo): ConflictKind {
  switch (reason) {
    case 'binary':
      return 'binary';
    case 'add/add':
    case 'rename/rename':
    case 'rename collision':
      return 'add/add';
    case 'modify/delete':
    case 'rename/delete':
      return 'modify/delete';
    case 'file/directory':
    case 'file location':
    case 'directory rename split':
    case 'implicit dir rename':
      return 'file/directory';
    case 'distinct types':
      return info.stages[0].mode === 0 ? 'add/add' : 'content';
    case 'content':
    case 'submodule':
      return 'content';
  }
}

interface Collision {
  /** Paths this side added that the other side's directory renames would put at the same place. */
  sources: Set<string>;
  reported: boolean;
}

/**
 * A directory's dirRenameMask once its rows are known: inside a directory removed on one side, a
 * file the other side added here makes the directory's rename matter (merge-ort looks at all
 * entries first: traverse_trees_wrapper).
 */
function frameMask(rows: readonly Row[], mask: number): number {
  if (mask !== 2 && mask !== 4) return mask;
  for (const row of rows) {
    const { fileMask } = masksOf(row);
    if (fileMask !== 0 && fileMask === mask) return 7;
  }
  return mask;
}

/** The same mode and id on all three sides (what collectEntry() resolves to the base without a look). */
function unchangedRow(row: Row): boolean {
  const base = row[0];
  const ours = row[1];
  const theirs = row[2];
  return base !== undefined && ours !== undefined && theirs !== undefined && base.mode === ours.mode && base.mode === theirs.mode && base.oid.equals(ours.oid) && base.oid.equals(theirs.oid);
}

function masksOf(entries: readonly (TreeEntry | undefined)[]): { fileMask: number; dirMask: number } {
  let fileMask = 0;
  let dirMask = 0;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (!entry) continue;
    if (entry.mode === '40000') dirMask |= 1 << i;
    else fileMask |= 1 << i;
  }
  return { fileMask, dirMask };
}

/** check_dir_renamed(): the deepest renamed directory containing `path`, as [old, new]. */
function findRenamedDirectory(path: string, dirRenames: Map<string, string>): [string, string] | null {
  let dir = path;
  for (let slash = dir.lastIndexOf('/'); slash >= 0; slash = dir.lastIndexOf('/')) {
    dir = dir.slice(0, slash);
    const target = dirRenames.get(dir);
    if (target !== undefined) return [dir, target];
  }
  return null;
}

/** apply_dir_rename(): replace the leading old directory of `path` with the new one. */
function applyDirectoryRename([oldDir, newDir]: [string, string], path: string): string {
  if (newDir === '') return path.slice(oldDir.length + 1);
  return newDir + path.slice(oldDir.length);
}

/** resolve_trivial_directory_merge(): the directory is that side's tree (or gone). */
function resolveTrivially(info: PathInfo, side: Side): void {
  info.result = info.stages[side];
  info.isNull = info.stages[side].mode === 0;
  info.matchMask = 0;
  info.clean = true;
}
