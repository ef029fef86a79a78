import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../fixtures/sourceTree.js';
import { hashObject, type Oid } from '../../../src/git/oid.js';
import { encodeTree, MODE_TREE, type TreeEntry } from '../../../src/git/tree.js';
import { WorkingDir } from '../../../src/repo/worktree/workingDir.js';

const blob = (text: string): Oid => hashObject('blob', Buffer.from(text));

describe('WorkingDir', () => {
  // A directory patched in place remembers where the names it looked up lie, and compares names
  // byte by byte: every answer must stay a plain map's through additions and removals that shift
  // the entries (names that prefix each other, a file and a directory sorting apart, non-ASCII),
  // and the tree it encodes must be git's encoding of that map.
  it('answers as a plain map does through a long run of lookups, changes, additions and removals, and encodes what git would', () => {
    const next = mulberry32(7);
    const names = ['a', 'a.b', 'a-b', 'a0', 'ab', 'abc', 'b', 'é', 'zz', 'z', 'foo', 'foo.txt', 'foo-bar', 'foo0', 'Ω', 'x y'];
    for (let round = 0; round < 20; round++) {
      const model = new Map<string, TreeEntry & { size: number }>();
      for (const name of names) {
        if (next() < 0.5) continue;
        const isTree = next() < 0.3;
        model.set(name, { name, mode: isTree ? MODE_TREE : '100644', oid: blob(`${name} ${round}`), size: isTree ? 0 : 3 });
      }
      const body = encodeTree([...model.values()]);
      const dir = WorkingDir.fromTree(hashObject('tree', body), Buffer.from(body), null);
      for (let step = 0; step < 300; step++) {
        const name = names[Math.floor(next() * names.length)];
        const roll = next();
        if (roll < 0.5) {
          const got = dir.get(name);
          const want = model.get(name);
          expect(got && { name: got.name, mode: got.mode, oid: got.oid?.toString('hex') }).toEqual(want && { name: want.name, mode: want.mode, oid: want.oid.toString('hex') });
        } else if (roll < 0.75) {
          // A file's new content, or a new file: keeps the type of an entry that is there.
          const present = model.get(name);
          const mode = present?.mode ?? (next() < 0.3 ? MODE_TREE : '100644');
          const entry = { name, mode, oid: blob(`${name} ${step}`), size: mode === MODE_TREE ? 0 : 5 };
          dir.set(entry);
          model.set(name, entry);
        } else {
          dir.delete(name);
          model.delete(name);
        }
        expect(dir.size).toBe(model.size);
      }
      const encoded = dir.encode(() => {
        throw new Error('no subdirectory was cleared');
      });
      expect(encoded.body.equals(encodeTree([...model.values()]))).toBe(true);
    }
  });
});
