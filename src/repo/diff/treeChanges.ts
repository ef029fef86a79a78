/**
 * The files that differ between two trees, as git's tree diff (tree-diff.c) finds them: subtrees
 * with equal ids are skipped, so the cost follows the size of the change; a file whose mode or blob
 * differs is one change (a type change included); a file replaced by a directory is a deletion and
 * additions. Changes come in git's order, which is the byte order of their paths.
 */
import { OID_BYTES, type Oid } from '../../git/oid.js';
import { ENTRY_TREE, MODE_TREE, TreeCursor, type TreeMode } from '../../git/tree.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import type { PathFilter } from '../pathFilter.js';
import type { Repo } from '../repo.js';
import { readInSlices, type Slicer } from '../slices.js';
import { TREE_BATCH_MAX } from './batchedReads.js';
import { MissingObjectError } from '../../errors.js';

/** A file, symlink or submodule as a tree holds it. */
export interface FileVersion {
  mode: Exclude<TreeMode, typeof MODE_TREE>;
  oid: Oid;
}

export interface TreeChange {
  path: string;
  /** null: the file is not in the old tree (added). */
  old: FileVersion | null;
  /** null: the file is not in the new tree (deleted). */
  new: FileVersion | null;
}

/** A directory to compare; `trees`: its old and new tree bodies once read (undefined: not stored). */
type DirectoryWork = { dir: string; old: Oid | null; new: Oid | null; trees?: [Buffer | undefined, Buffer | undefined] };
type Work = DirectoryWork | TreeChange;

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Compares entry keys (a directory's name as if followed by "/") by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  if (ASCII_ONLY.test(a) && ASCII_ONLY.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The changes from `oldTree` to `newTree` (null: the empty tree) under `filter`, in path order. */
export async function treeChanges(repo: Repo, oldTree: Oid | null, newTree: Oid | null, filter: PathFilter, slicer?: Slicer): Promise<TreeChange[]> {
  const out: TreeChange[] = [];
  const stack: Work[] = [{ dir: '', old: oldTree, new: newTree }];
  await readInSlices(
    repo,
    async (tx) => {
      // The changes on top of the stack, then one directory.
      let work = stack.pop();
      while (work && 'path' in work) {
        out.push(work);
        work = stack.pop();
      }
      if (!work) return false;
      if (!work.trees) await readAhead(tx, work, stack);
      expand(work, filter, stack);
      return stack.length > 0;
    },
    slicer,
  );
  return out;
}

/**
 * Reads the trees of `work` and of the directories next on the stack (the ones the walk expands
 * next, in order) in one read.
 */
async function readAhead(tx: ProjectReads, work: DirectoryWork, stack: Work[]): Promise<void> {
  const batch: DirectoryWork[] = [work];
  for (let i = stack.length - 1; i >= 0 && batch.length < TREE_BATCH_MAX; i--) {
    const next = stack[i];
    if (!('path' in next) && !next.trees) batch.push(next);
  }
  // Equal trees are skipped unread.
  const reading = batch.filter((item) => !(item.old && item.new && item.old.equals(item.new)));
  const oids = reading.flatMap((item) => [item.old, item.new]).filter((oid): oid is Oid => oid !== null);
  const objects = oids.length > 0 ? await tx.getObjects(oids) : [];
  let next = 0;
  const bodyOf = (oid: Oid | null): Buffer | undefined => {
    if (!oid) return EMPTY;
    const object = objects[next++];
    return object && object.type === 'tree' ? object.body : undefined;
  };
  for (const item of reading) {
    const old = bodyOf(item.old);
    item.trees = [old, bodyOf(item.new)];
  }
}

const EMPTY = Buffer.alloc(0);

function requireBody(body: Buffer | undefined, oid: Oid | null): Buffer {
  if (!body) throw new MissingObjectError('tree', oid!);
  return body;
}

/**
 * Pushes a directory's differing entries onto the stack, last first, so they pop in order. The two
 * bodies are walked together in their (git) order, as git's tree diff does: an entry whose bytes
 * (mode, name, id) are the same on both sides is passed over without decoding it, so a directory
 * of 20 files with one changed decodes one name. Stored trees are in git order with no name twice
 * (encoded so, or refused on receipt by fsck).
 */
function expand(work: DirectoryWork, filter: PathFilter, stack: Work[]): void {
  if (work.old && work.new && work.old.equals(work.new)) return;
  const a = new TreeCursor(requireBody(work.trees![0], work.old));
  const b = new TreeCursor(requireBody(work.trees![1], work.new));
  const found: Work[] = [];
  let hasA = a.next();
  let hasB = b.next();
  while (hasA || hasB) {
    let order: number;
    if (!hasA) order = 1;
    else if (!hasB) order = -1;
    else if (sameEntry(a, b)) {
      hasA = a.next();
      hasB = b.next();
      continue;
    } else order = compareNames(a, b);
    const old = order <= 0 ? a : null;
    const next = order >= 0 ? b : null;
    const either = (old ?? next)!;
    const name = either.name();
    const path = work.dir === '' ? name : `${work.dir}/${name}`;
    if (either.kind === ENTRY_TREE) {
      // Equal names: both are directories (a file and a directory of one name differ in order).
      if (!(old && next && sameId(old, next)) && filter.reachesDirectory(path)) found.push({ dir: path, old: old?.oid() ?? null, new: next?.oid() ?? null });
    } else {
      const oldMode = old?.mode();
      const newMode = next?.mode();
      if (!(old && next && oldMode === newMode && sameId(old, next)) && filter.matchesFile(path)) {
        found.push({
          path,
          old: old ? { mode: oldMode as FileVersion['mode'], oid: old.oid() } : null,
          new: next ? { mode: newMode as FileVersion['mode'], oid: next.oid() } : null,
        });
      }
    }
    if (old) hasA = a.next();
    if (next) hasB = b.next();
  }
  for (let i = found.length - 1; i >= 0; i--) stack.push(found[i]);
}

/** Whether two entries are the same bytes: mode, name and id (the ids, which differ most, first). */
function sameEntry(a: TreeCursor, b: TreeCursor): boolean {
  const length = a.oidStart + OID_BYTES - a.modeStart;
  if (b.oidStart + OID_BYTES - b.modeStart !== length || !sameId(a, b)) return false;
  const aBody = a.body;
  const bBody = b.body;
  for (let i = 0, end = a.oidStart - a.modeStart; i < end; i++) if (aBody[a.modeStart + i] !== bBody[b.modeStart + i]) return false;
  return true;
}

function sameId(a: TreeCursor, b: TreeCursor): boolean {
  for (let i = 0; i < OID_BYTES; i++) if (a.body[a.oidStart + i] !== b.body[b.oidStart + i]) return false;
  return true;
}

/** git's base_name_compare on the two current entries: name bytes, a directory's as if followed by "/". */
function compareNames(a: TreeCursor, b: TreeCursor): number {
  const aLength = a.nameEnd - a.nameStart;
  const bLength = b.nameEnd - b.nameStart;
  const common = Math.min(aLength, bLength);
  for (let i = 0; i < common; i++) {
    const difference = a.body[a.nameStart + i] - b.body[b.nameStart + i];
    if (difference !== 0) return difference;
  }
  const aNext = aLength > common ? a.body[a.nameStart + common] : a.kind === ENTRY_TREE ? SLASH : 0;
  const bNext = bLength > common ? b.body[b.nameStart + common] : b.kind === ENTRY_TREE ? SLASH : 0;
  return aNext - bNext;
}

const SLASH = 0x2f;
