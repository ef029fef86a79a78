/**
 * POST git/merge/preview: the merge POST git/merge would make, computed by the same planMerge() and
 * applied to nothing. It answers the same refusals (unknown branch 404, dirty target working tree
 * 409, locked file 423) and otherwise every file the merge changes in the target, in path order:
 * `added`, `modified` or `deleted` against the target head's tree, or `conflicted` with the conflict's
 * kind, the three sides' contents and the merged content git would leave (conflict markers labelled
 * with the target and source branch names). Files git moves aside in a conflict ("<path>~<branch>")
 * are listed as the additions they are.
 */
import { oidToHex, type Oid } from '../../git/oid.js';
import { MODE_GITLINK, MODE_TREE, type TreeEntry } from '../../git/tree.js';
import { encodeContent } from '../fileContent.js';
import type { ConflictKind, ConflictSide, MergeObjects } from './mergeTrees.js';
import { mergeObjects, planMerge } from './mergeBranches.js';
import { commitTree, inReadTx, type Repo } from '../repo.js';
import { compareKeys } from '../diff/treeChanges.js';

export interface PreviewConflict {
  kind: ConflictKind;
  base?: string;
  ours?: string;
  theirs?: string;
  merged: string;
  encoding?: 'base64';
}

export interface PreviewFile {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'conflicted';
  conflict?: PreviewConflict;
}

export interface MergePreview {
  clean: boolean;
  merge_base: string | null;
  target_head: string;
  source_head: string;
  files: PreviewFile[];
}

export async function previewMerge(repo: Repo, input: { source: string; target: string }): Promise<MergePreview> {
  return inReadTx(repo, async (tx) => {
    const plan = await planMerge(tx, input, mergeObjects(tx));
    const preview: MergePreview = {
      clean: true,
      merge_base: plan.bases.length > 0 ? oidToHex(plan.bases[0]) : null,
      target_head: oidToHex(plan.targetHead),
      source_head: oidToHex(plan.sourceHead),
      files: [],
    };
    if (plan.kind === 'up-to-date') return preview;
    const objects: MergeObjects = plan.kind === 'merge' ? plan.staged : mergeObjects(tx);
    const targetTree = await commitTree(tx, plan.targetHead);
    const resultTree = plan.kind === 'merge' ? plan.outcome.tree : plan.tree;
    const files = new Map<string, PreviewFile>();
    for (const { path, status } of await changedFiles(objects, targetTree, resultTree)) files.set(path, { path, status });
    if (plan.kind === 'merge') {
      preview.clean = plan.outcome.clean;
      const conflicts = plan.outcome.conflicts;
      const described = await Promise.all(conflicts.map((conflict) => describeConflict(objects, conflict.kind, conflict)));
      conflicts.forEach((conflict, i) => files.set(conflict.path, { path: conflict.path, status: 'conflicted', conflict: described[i] }));
    }
    preview.files = [...files.values()].sort((a, b) => compareKeys(a.path, b.path));
    return preview;
  });
}

/** Files (not directories) that differ between two trees, with how, in no particular order; the trees are read a level at a time. */
async function changedFiles(objects: MergeObjects, before: Oid, after: Oid): Promise<Array<{ path: string; status: 'added' | 'modified' | 'deleted' }>> {
  const out: Array<{ path: string; status: 'added' | 'modified' | 'deleted' }> = [];
  const read = (tree: Oid | null) => (tree ? objects.readTree(tree) : Promise.resolve([]));
  let level: Array<{ dir: string; left: Oid | null; right: Oid | null }> = [{ dir: '', left: before, right: after }];
  while (level.length > 0) {
    const differing = level.filter(({ left, right }) => !(left && right && left.equals(right)));
    const trees = await Promise.all(differing.map(({ left, right }) => Promise.all([read(left), read(right)])));
    level = [];
    differing.forEach(({ dir }, i) => {
      const entries = new Map<string, { old?: TreeEntry; new?: TreeEntry }>();
      for (const entry of trees[i][0]) entries.set(entry.name, { old: entry });
      for (const entry of trees[i][1]) entries.set(entry.name, { ...entries.get(entry.name), new: entry });
      for (const [name, { old, new: next }] of entries) {
        const path = dir === '' ? name : `${dir}/${name}`;
        const oldTree = old?.mode === MODE_TREE ? old.oid : null;
        const newTree = next?.mode === MODE_TREE ? next.oid : null;
        if (oldTree || newTree) level.push({ dir: path, left: oldTree, right: newTree });
        const oldFile = old && old.mode !== MODE_TREE ? old : null;
        const newFile = next && next.mode !== MODE_TREE ? next : null;
        if (!oldFile && !newFile) continue;
        if (!oldFile) out.push({ path, status: 'added' });
        else if (!newFile) out.push({ path, status: 'deleted' });
        else if (oldFile.mode !== newFile.mode || !oldFile.oid.equals(newFile.oid)) out.push({ path, status: 'modified' });
      }
    });
  }
  return out;
}

/** The four contents of a conflict: UTF-8 text, or all four base64 when any one is not. */
async function describeConflict(
  objects: MergeObjects,
  kind: ConflictKind,
  sides: { base?: ConflictSide; ours?: ConflictSide; theirs?: ConflictSide; merged?: ConflictSide },
): Promise<PreviewConflict> {
  const read = (side: ConflictSide | undefined) => (side ? contentOf(objects, side) : undefined);
  const [base, ours, theirs, merged] = await Promise.all([read(sides.base), read(sides.ours), read(sides.theirs), read(sides.merged)]);
  const contents = { base, ours, theirs, merged: merged ?? Buffer.alloc(0) };
  const texts = Object.values(contents).filter((value): value is Buffer => value !== undefined);
  const binary = texts.some((content) => encodeContent(content).encoding === 'base64');
  const encode = (content: Buffer) => content.toString(binary ? 'base64' : 'utf8');
  const conflict: PreviewConflict = { kind, merged: encode(contents.merged) };
  if (contents.base) conflict.base = encode(contents.base);
  if (contents.ours) conflict.ours = encode(contents.ours);
  if (contents.theirs) conflict.theirs = encode(contents.theirs);
  if (binary) conflict.encoding = 'base64';
  return conflict;
}

/** A side's bytes: the blob, or git's "Subproject commit <id>" line for a submodule. */
async function contentOf(objects: MergeObjects, side: ConflictSide): Promise<Buffer> {
  if (side.mode === MODE_GITLINK) return Buffer.from(`Subproject commit ${oidToHex(side.oid)}\n`, 'latin1');
  return objects.readBlob(side.oid);
}
