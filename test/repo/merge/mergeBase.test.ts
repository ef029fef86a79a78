import { afterAll, describe, expect, it } from 'vitest';
import { EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex, type Oid } from '../../../src/git/oid.js';
import { mergeBases, mergeCommits, type CommitGraph } from '../../../src/repo/merge/mergeBase.js';
import { initBareRepo, scratchDir } from '../../support/git.js';
import { gitMergeTrees, importCommits, MemoryObjects, type ImportCommit } from '../../support/memoryObjects.js';
import { AsyncObjects } from './asyncObjects.js';

/** A commit graph from "name: parents" lines; times follow the order of definition. */
class FakeGraph implements CommitGraph {
  readonly ids = new Map<string, Oid>();
  private readonly info = new Map<string, { parents: Oid[]; generation: number; time: number }>();
  parentCalls = 0;

  add(name: string, parents: string[] = []): this {
    const oid = hashObject('commit', Buffer.from(name));
    const parentIds = parents.map((p) => this.ids.get(p)!);
    const generation = 1 + Math.max(0, ...parentIds.map((p) => this.info.get(oidToHex(p))!.generation));
    this.ids.set(name, oid);
    this.info.set(oidToHex(oid), { parents: parentIds, generation, time: this.info.size + 1 });
    return this;
  }

  id(name: string): Oid {
    return this.ids.get(name)!;
  }

  name(oid: Oid): string {
    for (const [name, id] of this.ids) if (id.equals(oid)) return name;
    return oidToHex(oid);
  }

  async parents(oid: Oid): Promise<Oid[]> {
    this.parentCalls++;
    return this.info.get(oidToHex(oid))!.parents;
  }

  async generation(oid: Oid): Promise<number> {
    return this.info.get(oidToHex(oid))!.generation;
  }

  async commitTime(oid: Oid): Promise<number> {
    return this.info.get(oidToHex(oid))!.time;
  }

  async tree(): Promise<Oid> {
    return EMPTY_TREE_OID;
  }
}

const basesOf = async (graph: FakeGraph, a: string, b: string) => (await mergeBases(graph, graph.id(a), graph.id(b))).map((oid) => graph.name(oid));

describe('mergeBases', () => {
  it('finds the fork point, or the ancestor itself', async () => {
    const graph = new FakeGraph().add('root').add('base', ['root']).add('x', ['base']).add('y', ['base']).add('x2', ['x']);
    expect(await basesOf(graph, 'x2', 'y')).toEqual(['base']);
    expect(await basesOf(graph, 'x2', 'base')).toEqual(['base']);
    expect(await basesOf(graph, 'x2', 'x2')).toEqual(['x2']);
  });

  it('returns every best common ancestor of a criss-cross, newest first', async () => {
    const graph = new FakeGraph()
      .add('base')
      .add('x', ['base'])
      .add('y', ['base'])
      .add('ours', ['x', 'y'])
      .add('theirs', ['y', 'x']);
    expect(await basesOf(graph, 'ours', 'theirs')).toEqual(['y', 'x']);
  });

  it('drops common ancestors that are below another one', async () => {
    const graph = new FakeGraph()
      .add('a')
      .add('b', ['a'])
      .add('c', ['b'])
      .add('side', ['a'])
      .add('ours', ['c', 'side'])
      .add('theirs', ['c']);
    expect(await basesOf(graph, 'ours', 'theirs')).toEqual(['c']);
  });

  it('returns nothing for unrelated histories', async () => {
    const graph = new FakeGraph().add('a').add('b');
    expect(await basesOf(graph, 'a', 'b')).toEqual([]);
  });

  it('stops at the bases instead of walking the whole history', async () => {
    const graph = new FakeGraph().add('c0');
    for (let i = 1; i <= 2000; i++) graph.add(`c${i}`, [`c${i - 1}`]);
    graph.add('x', ['c2000']).add('y', ['c2000']);
    graph.parentCalls = 0;
    expect(await basesOf(graph, 'x', 'y')).toEqual(['c2000']);
    expect(graph.parentCalls).toBeLessThan(10);
  });
});

describe('mergeCommits on criss-cross histories, against git', () => {
  const scratch = scratchDir('treehouse-mergebase-');
  initBareRepo(scratch.path);
  afterAll(() => scratch.remove());

  const file = (content: string) => ({ mode: '100644' as const, content: Buffer.from(content, 'utf8') });
  const tree = (spec: Record<string, string>) => new Map(Object.entries(spec).map(([path, content]) => [path, file(content)]));
  const lines = (...items: string[]) => items.map((item) => `${item}\n`).join('');

  /**
   * base → x, y; ours merges (x, y) and theirs merges (y, x), each with its own tree; then each
   * tip may change more. Returns [ours, theirs] commit indexes into `commits`.
   */
  function crissCross(commits: ImportCommit[], trees: Record<'base' | 'x' | 'y' | 'ours' | 'theirs', Record<string, string>>): [number, number] {
    const at = commits.length;
    const time = 10_000 + at * 10;
    commits.push({ files: tree(trees.base), parents: [], time });
    commits.push({ files: tree(trees.x), parents: [at], time: time + 1 });
    commits.push({ files: tree(trees.y), parents: [at], time: time + 2 });
    commits.push({ files: tree(trees.ours), parents: [at + 1, at + 2], time: time + 3 });
    commits.push({ files: tree(trees.theirs), parents: [at + 2, at + 1], time: time + 4 });
    return [at + 3, at + 4];
  }

  it('agrees with git when the bases conflict and the tips resolved alike or differently', async () => {
    const numbers = Array.from({ length: 12 }, (_, i) => String(i + 1));
    const change = (at: number, value: string) => lines(...numbers.map((n, i) => (i === at ? value : n)));
    const base = lines(...numbers);
    const x = change(1, 'x');
    const y = change(1, 'y');
    const commits: ImportCommit[] = [];
    const cases = [
      // Both tips chose x's line and edit elsewhere: clean against the virtual base.
      crissCross(commits, {
        base: { f: base },
        x: { f: x },
        y: { f: y },
        ours: { f: lines('1', 'x', '3', '4', '5', '6', '7', '8', 'nine', '10', '11', '12') },
        theirs: { f: lines('1', 'x', '3', '4', '5', '6', '7', '8', '9', '10', '11', 'twelve') },
      }),
      // The tips resolved differently: a conflict.
      crissCross(commits, { base: { f: base }, x: { f: x }, y: { f: y }, ours: { f: x }, theirs: { f: y } }),
      // Modify/delete inside the virtual base, and unrelated changes.
      crissCross(commits, {
        base: { f: base, g: 'g\n' },
        x: { f: x, g: 'g\n' },
        y: { g: 'g\n' },
        ours: { f: x, g: 'G\n' },
        theirs: { f: x, g: 'g\n', h: 'h\n' },
      }),
      // File/directory conflict inside the virtual base.
      crissCross(commits, {
        base: { a: 'a\n' },
        x: { a: 'a\n', p: 'file\n' },
        y: { a: 'a\n', 'p/q': 'dir\n' },
        ours: { a: 'A\n', 'p/q': 'dir\n' },
        theirs: { a: 'a\n', 'p/q': 'dir\n', z: 'z\n' },
      }),
    ];
    const oids = importCommits(scratch.path, commits);
    const pairs = cases.map(([ours, theirs]) => [oids[ours], oids[theirs]] as [Oid, Oid]);
    const outcomes = gitMergeTrees(scratch.path, pairs);
    const objects = new AsyncObjects(MemoryObjects.fromRepository(scratch.path));
    const summary: string[] = [];
    for (const [i, pair] of pairs.entries()) {
      const ours = await mergeCommits(objects, objects, pair[0], pair[1]);
      const git = outcomes[i];
      if (git.failed) throw new Error(git.error);
      expect(ours.bases).toHaveLength(2);
      if (ours.clean) expect(oidToHex(ours.tree)).toBe(git.tree);
      else expect(ours.conflicts.map((c) => c.path)).toEqual(git.conflictedPaths);
      summary.push(ours.clean === git.clean ? (ours.clean ? 'clean' : `conflict ${git.conflictedPaths.join(',')}`) : 'disagree');
    }
    expect(summary).toEqual(['clean', 'conflict f', 'clean', 'clean']);
  });

  it('keeps virtual merge bases out of the object store', async () => {
    const objects = new AsyncObjects(new MemoryObjects());
    const blob = (text: string) => objects.writeBlob(Buffer.from(text, 'utf8'));
    const treeOf = (content: string) => objects.writeTree([{ name: 'f', mode: '100644', oid: blob(content) }]);
    const commit = (tree: Oid, parents: Oid[], time: number) => {
      const header = [`tree ${oidToHex(tree)}`, ...parents.map((p) => `parent ${oidToHex(p)}`)];
      const who = `T <t@example.com> ${time} +0000`;
      return objects.memory.put('commit', Buffer.from(`${header.join('\n')}\nauthor ${who}\ncommitter ${who}\n\nm\n`, 'utf8'));
    };
    const numbers = Array.from({ length: 12 }, (_, i) => String(i + 1));
    const change = (edits: Record<number, string>) => lines(...numbers.map((n, i) => edits[i] ?? n));
    const base = commit(treeOf(change({})), [], 1);
    const x = commit(treeOf(change({ 1: 'x' })), [base], 2);
    const y = commit(treeOf(change({ 1: 'y' })), [base], 3);
    const ours = commit(treeOf(change({ 1: 'x', 11: 'twelve' })), [x, y], 4);
    const theirs = commit(treeOf(change({ 1: 'x', 8: 'nine' })), [y, x], 5);
    const before = objects.memory.objects.size;
    const result = await mergeCommits(objects, objects, ours, theirs);
    if (!result.clean) throw new Error('expected clean');
    expect(result.bases.map(oidToHex).sort()).toEqual([x, y].map(oidToHex).sort());
    // Only the merged blob and its tree are new; the virtual base (with markers) is not stored.
    expect(objects.memory.objects.size - before).toBe(2);
    expect((await objects.readBlob((await objects.readTree(result.tree))[0].oid)).toString()).toBe(change({ 1: 'x', 8: 'nine', 11: 'twelve' }));
    expect(oidFromHex(oidToHex(result.tree))).toEqual(result.tree);
  });
});
