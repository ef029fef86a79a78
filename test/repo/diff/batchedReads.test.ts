/**
 * The batched reads of compare, blame, search and archive (src/repo/diff/batchedReads.ts): groups
 * bounded in count and bytes, a tree walk in git order that reads sibling subtrees together, and
 * missing trees and blobs reported where the walk meets them, not where it read ahead.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { hashObject, oidFromHex, oidToHex, type Oid } from '../../../src/git/oid.js';
import { encodeTree, MODE_TREE, type TreeEntry } from '../../../src/git/tree.js';
import { BLOB_BATCH_BYTES, BLOB_BATCH_MAX, batchEnds, blobReads, TREE_BATCH_MAX, walkTree, type WalkedEntry } from '../../../src/repo/diff/batchedReads.js';
import { DEFAULT_REPO_LIMITS, type ReadTx, type Repo, type WriteTx } from '../../../src/repo/repo.js';
import { commit } from '../../../src/repo/commit.js';
import { initProject } from '../../../src/repo/initProject.js';
import { projectReads } from '../../../src/repo/slices.js';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import { openTestStore } from '../../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());
let nextProject = 1;
const PEOPLE = { author: { name: 'A', email: 'a@example.com' }, committer: { name: 'A', email: 'a@example.com' } };
const newRepo = (): Repo => ({ store: opened.store.async, project: nextProject++, limits: { ...DEFAULT_REPO_LIMITS } });

/** A directory: names to contents, subdirectories, or ids of objects that are not stored. */
type Spec = { [name: string]: string | Spec | { missing: 'blob' | 'tree' } };

function putTree(tx: WriteTx, spec: Spec): Oid {
  const entries: TreeEntry[] = Object.entries(spec).map(([name, value]) => {
    if (typeof value === 'string') return { name, mode: '100644', oid: tx.putObject('blob', Buffer.from(value)) };
    if ('missing' in value && typeof value.missing === 'string') {
      const oid = hashObject(value.missing as 'blob' | 'tree', Buffer.from(`not stored: ${name}`));
      return { name, mode: value.missing === 'tree' ? MODE_TREE : '100644', oid };
    }
    return { name, mode: MODE_TREE, oid: putTree(tx, value as Spec) };
  });
  return tx.putObject('tree', encodeTree(entries));
}

async function storeTree(repo: Repo, spec: Spec): Promise<Oid> {
  return repo.store.write(async (store) => putTree(store.project(repo.project), spec));
}

/** Every path of a spec in git order: byte order of the full paths, a directory's as if it ended in "/", before what it holds. */
function specPaths(spec: Spec): string[] {
  const keys: string[] = [];
  const visit = (dir: Spec, prefix: string) => {
    for (const [name, value] of Object.entries(dir)) {
      const isTree = typeof value !== 'string' && (!('missing' in value) || value.missing === 'tree');
      keys.push(`${prefix}${name}${isTree ? '/' : ''}`);
      if (typeof value !== 'string' && !('missing' in value && typeof value.missing === 'string')) visit(value as Spec, `${prefix}${name}/`);
    }
  };
  visit(spec, '');
  return keys.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))).map((key) => (key.endsWith('/') ? key.slice(0, -1) : key));
}

/** The project's reads, counting the calls that read objects (getObjects, getObjectsWithAnnex). */
function countingReads(repo: Repo): { reads: ReadTx; calls: () => number } {
  const reads = projectReads(repo);
  let calls = 0;
  const getObjects = reads.getObjects;
  reads.getObjects = (oids) => {
    calls++;
    return getObjects(oids);
  };
  const getObjectsWithAnnex = reads.getObjectsWithAnnex;
  reads.getObjectsWithAnnex = (oids) => {
    calls++;
    return getObjectsWithAnnex(oids);
  };
  return { reads, calls: () => calls };
}

async function collect(walk: AsyncGenerator<WalkedEntry, void, void>): Promise<WalkedEntry[]> {
  const out: WalkedEntry[] = [];
  for await (const entry of walk) out.push(entry);
  return out;
}

describe('batchEnds', () => {
  it('cuts groups at BLOB_BATCH_MAX items and BLOB_BATCH_BYTES bytes, a larger item alone', () => {
    expect(batchEnds([])).toEqual([]);
    expect(batchEnds([1, 2, 3])).toEqual([3]);
    expect(batchEnds(new Array(BLOB_BATCH_MAX * 2 + 1).fill(1))).toEqual([BLOB_BATCH_MAX, BLOB_BATCH_MAX * 2, BLOB_BATCH_MAX * 2 + 1]);
    const half = BLOB_BATCH_BYTES / 2;
    expect(batchEnds([half, half, 1, BLOB_BATCH_BYTES * 3, 5, undefined])).toEqual([2, 3, 4, 6]);
    // Unknown sizes count as nothing.
    expect(batchEnds(new Array(10).fill(undefined))).toEqual([10]);
  });
});

describe('walkTree', () => {
  it('walks in git order, a directory before what it holds, and reads sibling subtrees together', async () => {
    const repo = newRepo();
    const wide: Spec = {};
    for (let i = 0; i < 2 * TREE_BATCH_MAX + 50; i++) wide[`d${i}`] = { 'a.txt': `a${i}`, 'b.txt': `b${i}` };
    const nested: Spec = { 'x.txt': 'x', one: { two: { three: { 'y.txt': 'y' } }, 'z.txt': 'z' } };
    const spec: Spec = { 'a-b': 'x', a: { 'z.txt': 'z', 'a.txt': 'a' }, 'a.c': 'y', nested, wide, 'é.txt': 'accent', 'Z.md': 'upper' };
    const root = await storeTree(repo, spec);
    const { reads, calls } = countingReads(repo);
    const walked = await collect(walkTree(reads, root, () => true));
    expect(walked.map((entry) => entry.path)).toEqual(specPaths(spec));
    for (const { path, depth } of walked) expect(depth).toBe(path.split('/').length - 1);
    // 312 directories: the root, its subtrees together, three levels below nested, and wide's 306 in three batches.
    expect(calls()).toBe(1 + 1 + 3 + 3);
  });

  it("gives each file the size its tree's annex records, and none where the annex is absent, unknown or of another length", async () => {
    const repo = newRepo();
    const annex = (sizes: number[]) => Buffer.concat(sizes.map((size) => Buffer.from([size >>> 24, (size >>> 16) & 0xff, (size >>> 8) & 0xff, size & 0xff])));
    const root = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      const blob = (text: string) => tx.putObject('blob', Buffer.from(text));
      const inner = encodeTree([
        { name: 'c.txt', mode: '100644', oid: blob('ccc') },
        { name: 'd.txt', mode: '100644', oid: blob('dddd') },
      ]);
      // An annex with one entry too few is not used.
      const innerOid = tx.putObject('tree', inner, annex([3]));
      const plain = tx.putObject('tree', encodeTree([{ name: 'e.txt', mode: '100644', oid: blob('eeeee') }]));
      const top = encodeTree([
        { name: 'a.txt', mode: '100644', oid: blob('a') },
        { name: 'b.txt', mode: '100755', oid: blob('bb') },
        { name: 'inner', mode: MODE_TREE, oid: innerOid },
        { name: 'plain', mode: MODE_TREE, oid: plain },
      ]);
      // b.txt's size not known (0xffffffff); a directory's slot is not a size.
      return tx.putObject('tree', top, annex([1, 0xffffffff, 0, 0]));
    });
    const walked = await collect(walkTree(projectReads(repo), root, () => true));
    expect(walked.map(({ path, size }) => [path, size])).toEqual([
      ['a.txt', 1],
      ['b.txt', undefined],
      ['inner', undefined],
      ['inner/c.txt', undefined],
      ['inner/d.txt', undefined],
      ['plain', undefined],
      ['plain/e.txt', undefined],
    ]);
  });

  it('gives the sizes of files written through the API, as their trees record them', async () => {
    const repo = newRepo();
    await initProject(repo, { files: [], people: PEOPLE });
    const files = [
      { path: 'src/a.ts', content: 'export const a = 1;\n' },
      { path: 'src/deep/b.ts', content: 'b'.repeat(5000) },
      { path: 'README.md', content: '' },
    ];
    await writeFiles(repo, { branch: 'main', files });
    const { oid } = await commit(repo, { branch: 'main', message: 'files', people: PEOPLE });
    const root = await repo.store.read(async (store) => (await store.project(repo.project).getCommitInfos([oidFromHex(oid)]))[0]!.tree);
    const walked = await collect(walkTree(projectReads(repo), root, () => true));
    const sizes = Object.fromEntries(walked.filter((entry) => entry.entry.mode !== MODE_TREE).map(({ path, size }) => [path, size]));
    expect(sizes).toEqual({ 'README.md': 0, 'src/a.ts': 20, 'src/deep/b.ts': 5000 });
  });

  it('does not enter or read a directory descend refuses', async () => {
    const repo = newRepo();
    const root = await storeTree(repo, { keep: { 'a.txt': 'a' }, skip: { missing: 'tree' }, 'z.txt': 'z' });
    const walked = await collect(walkTree(projectReads(repo), root, (path) => path !== 'skip'));
    expect(walked.map((entry) => entry.path)).toEqual(['keep', 'keep/a.txt', 'skip', 'z.txt']);
  });

  it('reports a missing tree when it enters it, after every entry before it', async () => {
    const repo = newRepo();
    const root = await storeTree(repo, { a: { 'x.txt': 'x' }, b: { missing: 'tree' }, c: { 'y.txt': 'y' } });
    const seen: string[] = [];
    const walk = async () => {
      for await (const entry of walkTree(projectReads(repo), root, () => true)) seen.push(entry.path);
    };
    const missing = hashObject('tree', Buffer.from('not stored: b'));
    await expect(walk()).rejects.toThrow(`tree ${oidToHex(missing)} is missing`);
    expect(seen).toEqual(['a', 'a/x.txt', 'b']);
  });

  it('reports a missing root', async () => {
    const repo = newRepo();
    const root = hashObject('tree', Buffer.from('no such root'));
    await expect(collect(walkTree(projectReads(repo), root, () => true))).rejects.toThrow(`tree ${oidToHex(root)} is missing`);
  });
});

describe('blobReads', () => {
  it('reads blobs and sizes in one read each; a missing blob is an error, its size 0', async () => {
    const repo = newRepo();
    const [one, two, tree] = await repo.store.write(async (store) => {
      const tx = store.project(repo.project);
      return [tx.putObject('blob', Buffer.from('one')), tx.putObject('blob', Buffer.from('second')), tx.putObject('tree', encodeTree([]))];
    });
    const missing = hashObject('blob', Buffer.from('not stored'));
    const blobs = blobReads(repo);
    expect((await blobs.readBlobs([two, one, two])).map((body) => body.toString())).toEqual(['second', 'one', 'second']);
    expect((await blobs.readBlob(one)).toString()).toBe('one');
    expect(await blobs.blobSizes([one, missing, two])).toEqual([3, 0, 6]);
    expect(await blobs.blobSize(missing)).toBe(0);
    await expect(blobs.readBlobs([one, missing])).rejects.toThrow(`blob ${oidToHex(missing)} is missing`);
    // Not a blob: missing, as the walks have always said.
    await expect(blobs.readBlob(tree)).rejects.toThrow(`blob ${oidToHex(tree)} is missing`);
  });
});
