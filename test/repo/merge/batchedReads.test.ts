import { describe, expect, it } from 'vitest';
import { oidToHex, type Oid } from '../../../src/git/oid.js';
import type { TreeEntry } from '../../../src/git/tree.js';
import { computeMerge } from '../../../src/repo/merge/mergeBase.js';
import { commitGraph, mergeObjects } from '../../../src/repo/merge/mergeBranches.js';
import type { ReadTx } from '../../../src/repo/repo.js';
import { MemoryObjects } from '../../support/memoryObjects.js';
import { AsyncObjects } from './asyncObjects.js';

/** A read transaction over a MemoryObjects that answers only the batched reads a merge makes, counting the calls. */
function countingTx(memory: MemoryObjects) {
  const calls = { getObjects: 0, objects: 0, getCommitInfos: 0 };
  const graph = new AsyncObjects(memory);
  const tx = {
    getObjects: async (oids: readonly Oid[]) => {
      calls.getObjects++;
      calls.objects += oids.length;
      return oids.map((oid) => {
        const stored = memory.objects.get(oidToHex(oid));
        return stored && { type: stored.type, body: Buffer.from(stored.body) };
      });
    },
    getCommitInfos: async (oids: readonly Oid[]) => {
      calls.getCommitInfos++;
      return Promise.all(
        oids.map(async (oid) => ({ tree: await graph.tree(oid), parents: await graph.parents(oid), commitTime: await graph.commitTime(oid), generation: await graph.generation(oid) })),
      );
    },
  } as unknown as ReadTx;
  return { tx, calls };
}

/** Writes a tree of "path → content" files. */
function writeTree(objects: MemoryObjects, files: Record<string, string>): Oid {
  const build = (entries: Array<[string[], string]>): Oid => {
    const out: TreeEntry[] = [];
    const dirs = new Map<string, Array<[string[], string]>>();
    for (const [parts, content] of entries) {
      if (parts.length === 1) out.push({ name: parts[0], mode: '100644', oid: objects.writeBlob(Buffer.from(content, 'utf8')) });
      else dirs.set(parts[0], [...(dirs.get(parts[0]) ?? []), [parts.slice(1), content]]);
    }
    for (const [name, children] of dirs) out.push({ name, mode: '40000', oid: build(children) });
    return objects.writeTree(out);
  };
  return build(Object.entries(files).map(([path, content]) => [path.split('/'), content]));
}

function commit(objects: MemoryObjects, tree: Oid, parents: Oid[], time: number): Oid {
  const who = `T <t@example.com> ${time} +0000`;
  const header = [`tree ${oidToHex(tree)}`, ...parents.map((parent) => `parent ${oidToHex(parent)}`)].join('\n');
  return objects.put('commit', Buffer.from(`${header}\nauthor ${who}\ncommitter ${who}\n\nm\n`, 'utf8'));
}

describe('merge reads through a transaction', () => {
  it('reads the trees a level at a time and each commit entry once', async () => {
    const memory = new MemoryObjects();
    const spec: Record<string, string> = {};
    for (let d = 0; d < 40; d++) for (let f = 0; f < 5; f++) spec[`dir${d}/sub/file${f}`] = `${d}/${f}\n`;
    const ours: Record<string, string> = { ...spec };
    const theirs: Record<string, string> = { ...spec };
    // Both sides change every directory (different files), so the merge enters all 80 of them.
    for (let d = 0; d < 40; d++) {
      ours[`dir${d}/sub/file1`] = 'ours\n';
      theirs[`dir${d}/sub/file2`] = 'theirs\n';
    }
    const base = commit(memory, writeTree(memory, spec), [], 1);
    const oursCommit = commit(memory, writeTree(memory, ours), [base], 2);
    const theirsCommit = commit(memory, writeTree(memory, theirs), [base], 3);

    const { tx, calls } = countingTx(memory);
    const { outcome, bases } = await computeMerge(mergeObjects(tx), commitGraph(tx), oursCommit, theirsCommit);
    expect(bases.map(oidToHex)).toEqual([oidToHex(base)]);
    const merged = { ...spec };
    for (let d = 0; d < 40; d++) Object.assign(merged, { [`dir${d}/sub/file1`]: 'ours\n', [`dir${d}/sub/file2`]: 'theirs\n' });
    expect(outcome.clean && oidToHex(outcome.tree)).toBe(oidToHex(writeTree(new MemoryObjects(), merged)));
    // The three roots, then the 120 trees of "dirN", then the 120 of "dirN/sub".
    expect(calls.objects).toBe(3 + 3 * 40 + 3 * 40);
    expect(calls.getObjects).toBe(3);
    // Both heads, then their parent: the base's entry, read once though both heads lead to it.
    expect(calls.getCommitInfos).toBe(2);
  });

  it('reads the blobs of the files both sides changed together', async () => {
    const memory = new MemoryObjects();
    const lines = (path: string, tag: string, changed: number) => Array.from({ length: 10 }, (_, i) => (i === changed ? `${tag}\n` : `${path} ${i}\n`)).join('');
    const paths = Array.from({ length: 30 }, (_, f) => `f${f}`);
    const version = (tag: string, changed: number) => Object.fromEntries(paths.map((path) => [path, lines(path, tag, changed)]));
    const spec = version('', -1);
    const ours = version('ours', 1);
    const theirs = version('theirs', 8);
    const [base, oursTree, theirsTree] = [writeTree(memory, spec), writeTree(memory, ours), writeTree(memory, theirs)];
    const baseCommit = commit(memory, base, [], 1);
    const { tx, calls } = countingTx(memory);
    const { outcome } = await computeMerge(mergeObjects(tx), commitGraph(tx), commit(memory, oursTree, [baseCommit], 2), commit(memory, theirsTree, [baseCommit], 3));
    expect(outcome.clean).toBe(true);
    // The three roots, then the 90 blobs of the 30 content merges in one batch.
    expect(calls.getObjects).toBe(2);
    expect(calls.objects).toBe(3 + 3 * 30);
  });
});
