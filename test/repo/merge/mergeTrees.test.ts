import { describe, expect, it } from 'vitest';
import { EMPTY_TREE_OID, oidToHex, type Oid } from '../../../src/git/oid.js';
import type { TreeEntry } from '../../../src/git/tree.js';
import { mergeTrees, type MergeObjects, type TreeMergeResult } from '../../../src/repo/merge/mergeTrees.js';
import { MemoryObjects } from '../../support/memoryObjects.js';
import { AsyncObjects } from './asyncObjects.js';

type FileSpec = string | { content: string | Buffer; mode: '100644' | '100755' | '120000' };
type TreeSpec = Record<string, FileSpec>;

/** Writes a tree from "path → content" (nested paths make subtrees). */
function writeTree(objects: MergeObjects, spec: TreeSpec): Oid {
  const files = Object.entries(spec).map(([path, file]) => ({ parts: path.split('/'), file }));
  const build = (entries: Array<{ parts: string[]; file: FileSpec }>): Oid => {
    const byName = new Map<string, Array<{ parts: string[]; file: FileSpec }>>();
    const out: TreeEntry[] = [];
    for (const { parts, file } of entries) {
      if (parts.length === 1) {
        const { content, mode } = typeof file === 'string' ? { content: file, mode: '100644' as const } : file;
        out.push({ name: parts[0], mode, oid: objects.writeBlob(Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8')) });
      } else {
        const list = byName.get(parts[0]) ?? [];
        list.push({ parts: parts.slice(1), file });
        byName.set(parts[0], list);
      }
    }
    for (const [name, children] of byName) out.push({ name, mode: '40000', oid: build(children) });
    return objects.writeTree(out);
  };
  return build(files);
}

/** Reads a tree back as "path → content" (mode suffixed when not 100644). */
async function readTree(objects: MergeObjects, tree: Oid, prefix = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await objects.readTree(tree)) {
    const path = prefix + entry.name;
    if (entry.mode === '40000') Object.assign(out, await readTree(objects, entry.oid, `${path}/`));
    else out[path] = (await objects.readBlob(entry.oid)).toString('utf8') + (entry.mode === '100644' ? '' : ` [${entry.mode}]`);
  }
  return out;
}

async function merge(base: TreeSpec | null, ours: TreeSpec, theirs: TreeSpec): Promise<{ objects: AsyncObjects; result: TreeMergeResult }> {
  const objects = new AsyncObjects(new MemoryObjects());
  const result = await mergeTrees(objects, base === null ? null : writeTree(objects, base), writeTree(objects, ours), writeTree(objects, theirs));
  return { objects, result };
}

async function mergedFiles(base: TreeSpec | null, ours: TreeSpec, theirs: TreeSpec): Promise<Record<string, string>> {
  const { objects, result } = await merge(base, ours, theirs);
  if (!result.clean) throw new Error(`unexpected conflicts ${JSON.stringify(result.conflicts)}`);
  return readTree(objects, result.tree);
}

async function conflictsOf(base: TreeSpec | null, ours: TreeSpec, theirs: TreeSpec) {
  const { result } = await merge(base, ours, theirs);
  if (result.clean) throw new Error('unexpectedly clean');
  return result.conflicts.map(({ path, kind }) => ({ path, kind }));
}

const text = (...lines: string[]) => lines.map((line) => `${line}\n`).join('');
const long = (tag: string, count = 12) => Array.from({ length: count }, (_, i) => `${tag} line ${i}`);

describe('mergeTrees: clean merges', () => {
  it('takes each side its changes and keeps what neither touched', async () => {
    const base = { keep: 'k\n', a: 'a\n', b: 'b\n', 'dir/x': 'x\n' };
    expect(await mergedFiles(base, { ...base, a: 'A\n', new: 'n\n' }, { ...base, b: 'B\n', 'dir/x': 'X\n' })).toEqual({
      keep: 'k\n',
      a: 'A\n',
      b: 'B\n',
      new: 'n\n',
      'dir/x': 'X\n',
    });
  });

  it('accepts identical changes on both sides, including identical adds and deletes', async () => {
    const base = { a: 'a\n', gone: 'g\n' };
    const side = { a: 'same change\n', added: 'same\n' };
    expect(await mergedFiles(base, side, side)).toEqual(side);
  });

  it('merges disjoint edits of one file', async () => {
    const base = { f: text('1', '2', '3', '4', '5') };
    expect(await mergedFiles(base, { f: text('one', '2', '3', '4', '5') }, { f: text('1', '2', '3', '4', 'five') })).toEqual({
      f: text('one', '2', '3', '4', 'five'),
    });
  });

  it('applies a mode change from one side and a content change from the other', async () => {
    const base = { run: text('echo', 'done') };
    expect(await mergedFiles(base, { run: { content: text('echo', 'done'), mode: '100755' } }, { run: text('echo hi', 'done') })).toEqual({
      run: `${text('echo hi', 'done')} [100755]`,
    });
  });

  it('follows a file renamed on one side with the other side edits (exact rename)', async () => {
    const body = long('f');
    const base = { 'src/old.txt': text(...body) };
    const edited = text(...body.slice(0, 11), 'changed');
    expect(await mergedFiles(base, { 'lib/new.txt': text(...body) }, { 'src/old.txt': edited })).toEqual({ 'lib/new.txt': edited });
  });

  it('follows a file renamed and edited on one side (similarity rename, as git finds it)', async () => {
    const body = long('f');
    const base = { 'old.txt': text(...body) };
    const ours = { 'new.txt': text('top', ...body.slice(1)) };
    const theirs = { 'old.txt': text(...body.slice(0, 11), 'bottom') };
    expect(await mergedFiles(base, ours, theirs)).toEqual({ 'new.txt': text('top', ...body.slice(1, 11), 'bottom') });
  });

  it('removes a directory both sides emptied', async () => {
    const base = { 'd/a': 'a\n', 'd/b': 'b\n', top: 't\n' };
    expect(await mergedFiles(base, { top: 't\n', 'd/b': 'b\n' }, { top: 't\n', 'd/a': 'a\n' })).toEqual({ top: 't\n' });
  });

  it('lets a file replace a directory the other side left alone', async () => {
    const base = { 'p/x': 'x\n', q: 'q\n' };
    expect(await mergedFiles(base, { p: 'now a file\n', q: 'q\n' }, { ...base, q: 'Q\n' })).toEqual({ p: 'now a file\n', q: 'Q\n' });
  });

  it('merges against the empty tree when there is no base', async () => {
    expect(await mergedFiles(null, { a: 'a\n' }, { b: 'b\n' })).toEqual({ a: 'a\n', b: 'b\n' });
  });
});

describe('mergeTrees: conflicts are results', () => {
  it('content: both sides changed the same lines', async () => {
    expect(await conflictsOf({ f: 'base\n' }, { f: 'ours\n' }, { f: 'theirs\n' })).toEqual([{ path: 'f', kind: 'content' }]);
  });

  it('add/add: both sides added different files at one path', async () => {
    expect(await conflictsOf({}, { 'n/f': 'ours\n' }, { 'n/f': 'theirs\n' })).toEqual([{ path: 'n/f', kind: 'add/add' }]);
    // Same content, different modes.
    expect(await conflictsOf({}, { f: 'x\n' }, { f: { content: 'x\n', mode: '100755' } })).toEqual([{ path: 'f', kind: 'add/add' }]);
  });

  it('modify/delete: one side changed what the other deleted', async () => {
    expect(await conflictsOf({ f: 'a\n', g: 'g\n' }, { g: 'g\n' }, { f: 'b\n', g: 'g\n' })).toEqual([{ path: 'f', kind: 'modify/delete' }]);
    // A mode change counts as a modification.
    expect(await conflictsOf({ f: 'a\n' }, { f: { content: 'a\n', mode: '100755' } }, {})).toEqual([{ path: 'f', kind: 'modify/delete' }]);
  });

  it('file/directory: reported at the file path, whichever side has the file', async () => {
    expect(await conflictsOf({}, { p: 'file\n' }, { 'p/inner': 'x\n' })).toEqual([{ path: 'p', kind: 'file/directory' }]);
    expect(await conflictsOf({ p: 'file\n' }, { p: 'edited\n' }, { 'p/inner': 'x\n' })).toEqual([{ path: 'p', kind: 'file/directory' }]);
  });

  it('binary: both sides changed a file with a NUL byte', async () => {
    const bin = (tag: string) => ({ content: Buffer.from(`${tag}\0data`), mode: '100644' as const });
    expect(await conflictsOf({ img: bin('base') }, { img: bin('ours') }, { img: bin('theirs') })).toEqual([{ path: 'img', kind: 'binary' }]);
  });

  it('rename/delete and rename/rename are reported, with git reasons', async () => {
    const body = text(...long('r'));
    const renameDelete = await merge({ old: body }, { new: body }, {});
    expect(renameDelete.result).toMatchObject({ clean: false, conflicts: [{ path: 'new', kind: 'modify/delete', reason: 'rename/delete' }] });
    const renameRename = await merge({ old: body }, { one: body }, { two: body });
    expect(renameRename.result.clean ? [] : renameRename.result.conflicts.map((c) => [c.path, c.reason])).toEqual([
      ['old', 'rename/rename'],
      ['one', 'rename/rename'],
      ['two', 'rename/rename'],
    ]);
  });

  it('directory rename: a file added to a directory the other side moved is a location conflict', async () => {
    const base = { 'a/x': text(...long('x')), 'a/y': text(...long('y')) };
    const ours = { 'b/x': base['a/x'], 'b/y': base['a/y'] };
    const theirs = { ...base, 'a/new': 'new\n' };
    const { result } = await merge(base, ours, theirs);
    expect(result).toMatchObject({ clean: false, conflicts: [{ path: 'b/new', kind: 'file/directory', reason: 'file location' }] });
  });

  it('distinct types: a file on one side and a symlink on the other', async () => {
    const { result } = await merge({}, { p: 'file\n' }, { p: { content: 'target', mode: '120000' } });
    expect(result).toMatchObject({ clean: false, conflicts: [{ path: 'p', kind: 'add/add', reason: 'distinct types' }] });
  });

  it('submodules: one side moving the commit merges, both moving it conflicts', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const commitId = (tag: string) => objects.memory.put('commit', Buffer.from(`tree ${oidToHex(EMPTY_TREE_OID)}\n\n${tag}\n`));
    const tree = (commit: Oid) => objects.writeTree([{ name: 'sub', mode: '160000', oid: commit }]);
    const [base, one, two] = [commitId('base'), commitId('one'), commitId('two')];
    const moved = await mergeTrees(objects, tree(base), tree(one), tree(base));
    expect(moved.clean && (await objects.readTree(moved.tree))[0].oid.equals(one)).toBe(true);
    expect(await mergeTrees(objects, tree(base), tree(one), tree(two))).toMatchObject({
      clean: false,
      conflicts: [{ path: 'sub', kind: 'content', reason: 'submodule' }],
    });
  });

  it('lists every conflicted path once, sorted', async () => {
    const conflicts = await conflictsOf({ b: 'b\n', a: 'a\n' }, { b: 'B1\n', a: 'A1\n' }, { b: 'B2\n', a: 'A2\n' });
    expect(conflicts.map((c) => c.path)).toEqual(['a', 'b']);
  });
});

describe('mergeTrees: cost and objects', () => {
  it('reads only the trees on the path to a change, not the whole tree', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const spec: TreeSpec = {};
    for (let d = 0; d < 40; d++) for (let f = 0; f < 25; f++) spec[`dir${d}/sub/file${f}`] = `${d}/${f}\n`;
    const base = writeTree(objects, spec);
    const ours = writeTree(objects, { ...spec, 'dir3/sub/file1': 'ours\n' });
    const theirs = writeTree(objects, { ...spec, 'dir30/sub/file2': 'theirs\n' });
    objects.treeReads = 0;
    const result = await mergeTrees(objects, base, ours, theirs);
    expect(result.clean).toBe(true);
    // Three roots, then base and the changed side for two levels on each changed path.
    expect(objects.treeReads).toBeLessThanOrEqual(3 + 2 * 2 * 2);
    expect(objects.blobReads).toBe(0);
  });

  it('writes nothing for a conflicted merge, and only new reachable objects for a clean one', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const base = writeTree(objects, { f: 'base\n', 'd/g': 'g\n', h: text('1', '2', '3', '4') });
    const clash = writeTree(objects, { f: 'ours\n', 'd/g': 'g\n', h: text('1', '2', '3', '4') });
    const other = writeTree(objects, { f: 'theirs\n', 'd/g': 'g\n', h: text('one', '2', '3', '4') });
    const before = objects.memory.objects.size;
    objects.writes = 0;
    expect((await mergeTrees(objects, base, clash, other)).clean).toBe(false);
    expect(objects.writes).toBe(0);
    expect(objects.memory.objects.size).toBe(before);

    const ours = writeTree(objects, { f: 'base\n', 'd/g': 'g\n', h: text('1', '2', '3', 'four') });
    objects.writes = 0;
    const result = await mergeTrees(objects, base, ours, other);
    if (!result.clean) throw new Error('expected a clean merge');
    // The merged file h and the new root tree; "d" and "f" already existed.
    expect(objects.writes).toBe(2);
    expect(await readTree(objects, result.tree)).toEqual({ f: 'theirs\n', 'd/g': 'g\n', h: text('one', '2', '3', 'four') });
  });

  it('gives the empty tree when everything is deleted', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const base = writeTree(objects, { a: 'a\n' });
    const empty = writeTree(objects, {});
    const result = await mergeTrees(objects, base, empty, empty);
    expect(result.clean && oidToHex(result.tree)).toBe(oidToHex(EMPTY_TREE_OID));
  });
});

describe('pathDepthMax', () => {
  it('is the depth of the deepest path the merge decided; whole subtrees taken from one side keep their place', async () => {
    const deep = 'd/'.repeat(30);
    // Both sides change files 31 deep: the merge decides paths that deep.
    const { result } = await merge({ [`${deep}f`]: 'f\n', [`${deep}g`]: 'g\n' }, { [`${deep}f`]: 'f2\n', [`${deep}g`]: 'g\n' }, { [`${deep}f`]: 'f\n', [`${deep}g`]: 'g2\n' });
    expect(result.clean && result.pathDepthMax).toBe(31);
    // Only one side touched the deep directory: taken whole at the root, so only "d" and "top" are decided.
    const oneSide = await merge({ [`${deep}f`]: 'f\n', top: 't\n' }, { [`${deep}f`]: 'f2\n', top: 't\n' }, { [`${deep}f`]: 'f\n', top: 't2\n' });
    expect(oneSide.result.clean && oneSide.result.pathDepthMax).toBe(1);
  });
});
