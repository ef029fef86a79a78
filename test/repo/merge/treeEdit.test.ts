/**
 * TreeEdit (src/repo/merge/treeEdit.ts), the editor merge resolutions use on a merge's staged tree,
 * against git's index: random sets of files are written, overwritten and removed both ways, and the
 * tree ids must equal `git write-tree` of the same index (empty directories dropped as git drops them).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { EMPTY_TREE_OID, hashObject, oidToHex } from '../../../src/git/oid.js';
import type { FileMode } from '../../../src/git/tree.js';
import { TreeEdit } from '../../../src/repo/merge/treeEdit.js';
import { MemoryObjects } from '../../support/memoryObjects.js';
import { git, scratchDir } from '../../support/git.js';
import { Random } from '../../support/randomHistory.js';
import { AsyncObjects } from './asyncObjects.js';

const repo = scratchDir('treehouse-treeedit-');
git(['init', '-q', repo.path]);
afterAll(() => repo.remove());

type Files = Map<string, { mode: FileMode; content: string }>;

/** git write-tree of an index holding exactly `files` (the blobs need not exist: --missing-ok). */
function gitTree(files: Files, index: string): string {
  const lines = [...files].map(([path, { mode, content }]) => `${mode} ${oidToHex(hashObject('blob', Buffer.from(content)))}\t${path}\n`);
  const env = { GIT_INDEX_FILE: index };
  git(['read-tree', '--empty'], { cwd: repo.path, env });
  git(['update-index', '--index-info'], { cwd: repo.path, env, input: lines.join('') });
  return git(['write-tree', '--missing-ok'], { cwd: repo.path, env }).trim();
}

const NAMES = ['a', 'b', 'c.txt', 'd', '\u00e9', 'a-b', 'a.b'];
const MODES: FileMode[] = ['100644', '100755', '120000'];

function randomPath(random: Random): string {
  return Array.from({ length: 1 + random.below(4) }, () => random.pick(NAMES)).join('/');
}

/** Adds `path` to `files` unless a file would sit where a directory is, or the reverse. */
function fits(files: Files, path: string): boolean {
  for (const other of files.keys()) {
    if (other === path) continue;
    if (other.startsWith(`${path}/`) || path.startsWith(`${other}/`)) return false;
  }
  return true;
}

describe('TreeEdit', () => {
  it('writes, overwrites and removes files as git update-index + write-tree do', async () => {
    let cases = 0;
    for (const seed of fc.sample(fc.nat(), { seed: 5150, numRuns: 60 })) {
      const random = new Random(seed);
      const objects = new AsyncObjects(new MemoryObjects());
      const files: Files = new Map();
      const blob = (content: string) => objects.writeBlob(Buffer.from(content));

      // Built from the empty tree, then edited again from the tree it wrote.
      const first = await TreeEdit.open(objects, EMPTY_TREE_OID);
      for (let i = 0; i < 1 + random.below(25); i++) {
        const path = randomPath(random);
        if (!fits(files, path)) continue;
        const file = { mode: random.pick(MODES), content: `${seed} ${i}` };
        await first.load([path]);
        first.set(path, { mode: file.mode, oid: blob(file.content) });
        files.set(path, file);
      }
      const initial = first.write();
      expect(oidToHex(initial)).toBe(gitTree(files, `${repo.path}/.git/index-${seed}`));

      const second = await TreeEdit.open(objects, initial);
      const existing = [...files.keys()];
      const changes: Array<{ path: string; remove: boolean }> = [];
      for (const path of existing) if (random.chance(40)) changes.push({ path, remove: random.chance(60) });
      for (let i = 0; i < random.below(6); i++) changes.push({ path: randomPath(random), remove: false });
      await second.load(changes.map((change) => change.path));
      for (const [i, change] of changes.entries()) {
        const found = second.lookup(change.path);
        expect(found.kind === 'file', change.path).toBe(files.has(change.path));
        if (change.remove) {
          second.remove(change.path);
          files.delete(change.path);
        } else if (fits(files, change.path) && found.kind !== 'blocked' && found.kind !== 'directory') {
          const file = { mode: random.pick(MODES), content: `${seed} changed ${i}` };
          second.set(change.path, { mode: file.mode, oid: blob(file.content) });
          files.set(change.path, file);
        }
      }
      expect(oidToHex(second.write()), `seed ${seed}`).toBe(gitTree(files, `${repo.path}/.git/index-${seed}`));
      cases++;
    }
    expect(cases).toBe(60);
  });

  it('reports a file in the way of a directory, and drops directories left empty up to the root', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const edit = await TreeEdit.open(objects, EMPTY_TREE_OID);
    await edit.load(['x/y/z']);
    edit.set('x/y/z', { mode: '100644', oid: objects.writeBlob(Buffer.from('z')) });
    const tree = edit.write();
    const again = await TreeEdit.open(objects, tree);
    await again.load(['x/y/z/below', 'x/y']);
    expect(again.lookup('x/y/z/below')).toEqual({ kind: 'blocked', at: 'x/y/z' });
    expect(again.lookup('x/y')).toEqual({ kind: 'directory' });
    expect(again.lookup('x/q')).toEqual({ kind: 'missing' });
    again.remove('x/y');
    again.remove('x/y/z');
    expect(oidToHex(again.write())).toBe(oidToHex(EMPTY_TREE_OID));
  });
});
