/**
 * Garbage collection of one project (src/repo/gc/collect.ts) on each backend that offers it, a real
 * LMDB store and a real PostgreSQL database, judged against git: after a collection the project
 * keeps exactly what `git rev-list --objects --all` of its export lists (its working trees
 * committed), and the export is `git fsck --strict` clean. What needs pack-ready forms runs on the
 * backends that keep them.
 */
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { branchRef } from '../../../src/git/refname.js';
import { EMPTY_TREE_OID, hashObject, oidToHex, type Oid } from '../../../src/git/oid.js';
import { encodeCommit } from '../../../src/git/commit.js';
import { encodeTree } from '../../../src/git/tree.js';
import { commit } from '../../../src/repo/commit.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { deleteBranch } from '../../../src/repo/deleteBranch.js';
import { CollectionBusyError, CollectionLostError, collectGarbage, endStaleCollections, GarbageCollection } from '../../../src/repo/gc/collect.js';
import { mergeBranches } from '../../../src/repo/merge/mergeBranches.js';
import { readFile } from '../../../src/repo/readFile.js';
import { inReadTx, inWriteTx, type Repo } from '../../../src/repo/repo.js';
import { restore } from '../../../src/repo/restore.js';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import type { AsyncStore, CollectionReads, PackFormReads, PackFormWrites, ProjectReads } from '../../../src/store/asyncTypes.js';
import { expectOnlyReachable, fsckAndReachable, GC_BACKENDS, storedHexes, writeAndCommit } from '../../support/gc.js';
import { newTestRepoIn, testPeople } from '../../support/store.js';

const now = { graceMs: 0 };

/** A grace period that ends when the test says. */
function heldGrace(): { wait: () => Promise<void>; waiting: Promise<void>; end: () => void } {
  let end!: () => void;
  let started!: () => void;
  const over = new Promise<void>((resolve) => (end = resolve));
  const waiting = new Promise<void>((resolve) => (started = resolve));
  return {
    wait: () => {
      started();
      return over;
    },
    waiting,
    end,
  };
}

async function read(repo: Repo, path: string, branch = 'main'): Promise<string> {
  return (await readFile(repo, { branch, path })).content;
}

describe.each(GC_BACKENDS)('garbage collection on $name', (backend) => {
  let store: AsyncStore;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await backend.open());
  }, 120_000);
  afterAll(() => close());
  it('removes overwritten contents and uncommitted working-tree states, and keeps exactly what the refs reach', async () => {
    const repo = await newTestRepoIn(store);
    for (let round = 0; round < 20; round++) {
      await writeFiles(repo, { branch: 'main', files: [{ path: `dir/f${round % 4}.txt`, content: `round ${round}\n` }, { path: 'top.txt', content: `top ${round}\n` }] });
      if (round % 5 === 4) await commit(repo, { branch: 'main', people: testPeople });
    }
    const before = (await storedHexes(repo)).length;
    const reachable = await fsckAndReachable(repo);
    const report = await collectGarbage(repo, now);
    expect(report.removedObjects).toBe(before - reachable.length);
    expect(report.removedObjects).toBeGreaterThan(0);
    expect(report.removedBytes).toBeGreaterThan(0);
    expect(report.keptObjects).toBe(reachable.length);
    await expectOnlyReachable(repo);
    expect(await read(repo, 'dir/f3.txt')).toBe('round 19\n');
    // A second collection finds nothing more.
    expect((await collectGarbage(repo, now)).removedObjects).toBe(0);
  });

  it('keeps what every working tree holds uncommitted, on every branch', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'committed\n' });
    await createBranch(repo, { name: 'side' });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'uncommitted on main\n' }] });
    await writeFiles(repo, { branch: 'side', files: [{ path: 'deep/b.txt', content: 'uncommitted on side\n' }] });
    await writeFiles(repo, { branch: 'side', files: [{ path: 'deep/b.txt', content: 'uncommitted on side, again\n' }] });
    const replaced = hashObject('blob', Buffer.from('uncommitted on side\n'));
    await collectGarbage(repo, now);
    expect(await read(repo, 'a.txt')).toBe('uncommitted on main\n');
    expect(await read(repo, 'deep/b.txt', 'side')).toBe('uncommitted on side, again\n');
    expect(await inReadTx(repo, (tx) => tx.hasObjects([replaced]))).toEqual([false]);
    await commit(repo, { branch: 'main', people: testPeople });
    await commit(repo, { branch: 'side', people: testPeople });
    await collectGarbage(repo, now);
    await expectOnlyReachable(repo);
  });

  it("collects an unmerged deleted branch's commits, trees and blobs, and keeps a merged one's", async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'base\n' });
    await createBranch(repo, { name: 'lost' });
    const lostCommits = [await writeAndCommit(repo, { 'lost/1.txt': 'one\n' }, 'lost'), await writeAndCommit(repo, { 'lost/2.txt': 'two\n' }, 'lost')];
    await createBranch(repo, { name: 'merged' });
    const mergedCommit = await writeAndCommit(repo, { 'merged.txt': 'merged\n' }, 'merged');
    await mergeBranches(repo, { source: 'merged', target: 'main', people: testPeople });
    await deleteBranch(repo, { name: 'lost' });
    await deleteBranch(repo, { name: 'merged' });
    await collectGarbage(repo, now);
    await expectOnlyReachable(repo);
    const ids = [...lostCommits, mergedCommit].map((hex) => Buffer.from(hex, 'hex'));
    expect(await inReadTx(repo, (tx) => tx.hasObjects(ids))).toEqual([false, false, true]);
    expect(await inReadTx(repo, (tx) => tx.hasObjects([hashObject('blob', Buffer.from('one\n'))]))).toEqual([false]);
  });

  it('keeps projects apart: the same objects in another project stay when they are garbage in this one', async () => {
    const one = await newTestRepoIn(store);
    const two = await newTestRepoIn(store);
    await writeAndCommit(one, { 'same.txt': 'shared content\n' });
    await writeAndCommit(two, { 'same.txt': 'shared content\n' });
    await writeAndCommit(one, { 'same.txt': 'changed in one\n' });
    const twoBefore = await storedHexes(two);
    await createBranch(one, { name: 'x' });
    await deleteBranch(one, { name: 'x' });
    await writeFiles(one, { branch: 'main', files: [{ path: 'same.txt', content: 'garbage in one\n' }] });
    await writeFiles(one, { branch: 'main', files: [{ path: 'same.txt', content: 'changed in one\n' }] });
    expect((await collectGarbage(one, now)).removedObjects).toBeGreaterThan(0);
    expect(await storedHexes(two)).toEqual(twoBefore);
    expect(await read(two, 'same.txt')).toBe('shared content\n');
    await expectOnlyReachable(one);
    await expectOnlyReachable(two);
  });

  it('walks a 4,096-deep tree without recursion: kept while a branch reaches it, removed whole once the branch is gone', async () => {
    const repo = await newTestRepoIn(store);
    const head = (await inReadTx(repo, (tx) => tx.getRef(branchRef('main'))))!;
    const deep = await inWriteTx(repo, async (tx) => {
      let tree = tx.putObject('tree', encodeTree([{ name: 'leaf.txt', mode: '100644', oid: tx.putObject('blob', Buffer.from('at the bottom\n')) }]));
      for (let level = 0; level < 4095; level++) tree = tx.putObject('tree', encodeTree([{ name: 'd', mode: '40000', oid: tree }]));
      const author = { name: 'Deep', email: 'deep@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const oid = tx.putObject('commit', encodeCommit({ tree, parents: [head], author, committer: author, extraHeaders: [], message: 'deep\n' }));
      await tx.casRef(branchRef('deep'), null, oid);
      tx.putWorkingTree('deep', { tree, locks: [] });
      return oid;
    });
    expect((await collectGarbage(repo, now)).removedObjects).toBe(0);
    expect(await inReadTx(repo, (tx) => tx.hasObjects([deep]))).toEqual([true]);
    await expectOnlyReachable(repo);
    await deleteBranch(repo, { name: 'deep' });
    const report = await collectGarbage(repo, { graceMs: 0, batchIds: 100 });
    // The commit, 4,096 trees and the blob.
    expect(report.removedObjects).toBe(1 + 4096 + 1);
    await expectOnlyReachable(repo);
  });

  if (backend.forms) {
    it('rewrites whole the pack-ready form of a kept object whose delta base it removes', async () => {
      const repo = await newTestRepoIn(store);
      const text = (version: number) => `${'the same long line of a file that changes a little\n'.repeat(20)}version ${version}\n`;
      await writeAndCommit(repo, { 'f.txt': text(1) });
      const v1 = hashObject('blob', Buffer.from(text(1)));
      await writeFiles(repo, { branch: 'main', files: [{ path: 'f.txt', content: text(2) }] });
      const v2 = hashObject('blob', Buffer.from(text(2)));
      // An uncommitted version whose form is a delta on v2, and which is a base itself.
      await writeFiles(repo, { branch: 'main', files: [{ path: 'f.txt', content: text(3) }] });
      const v3 = hashObject('blob', Buffer.from(text(3)));
      await inWriteTx(repo, async (tx) => {
        const forms = tx as typeof tx & PackFormWrites;
        forms.putDeflated(v1, deflateSync(Buffer.from(text(1))));
        forms.putDeflated(v2, deflateSync(Buffer.from(text(2))));
        expect(await forms.putDeflatedDelta(v3, { base: v2, bytes: 3, depth: 1 }, deflateSync(Buffer.from('abc')))).toBe(true);
      });
      // v3 stays (the working tree holds it), v2 goes: v3's form must not name v2 any more.
      const report = await collectGarbage(repo, now);
      expect(report.formsRewritten).toBe(1);
      await inReadTx(repo, async (tx) => {
        expect(await tx.hasObjects([v1, v2, v3])).toEqual([true, false, true]);
        const [form] = await (tx as ProjectReads & PackFormReads).getDeflated([v3]);
        expect(form?.delta).toBeUndefined();
        expect(await tx.getObjects([v3])).toEqual([{ type: 'blob', body: Buffer.from(text(3)) }]);
      });
    });
  }

  it(`removes what references before what it references${backend.forms ? ', and a tree and the delta form that name each other together' : ''}`, async () => {
    const repo = await newTestRepoIn(store);
    const subtreeBody = encodeTree([{ name: 'x.txt', mode: '100644', oid: hashObject('blob', Buffer.from('x\n')) }]);
    const subtree = hashObject('tree', subtreeBody);
    const parentBody = encodeTree([{ name: 'sub', mode: '40000', oid: subtree }]);
    const parent = hashObject('tree', parentBody);
    await inWriteTx(repo, async (tx) => {
      tx.putObject('blob', Buffer.from('x\n'));
      if (backend.forms) {
        // A pack may hold a tree and, as a delta on it, the subtree it names: each needs the other.
        const forms = tx as typeof tx & PackFormWrites;
        expect(await forms.putObjectAsForm(parent, 'tree', parentBody.length, { deflated: deflateSync(parentBody) })).toBe(true);
        const delta = (await import('../../../src/git/delta.js')).createDelta(parentBody, subtreeBody);
        expect(await forms.putObjectAsForm(subtree, 'tree', subtreeBody.length, { deflated: deflateSync(delta), delta: { base: parent, bytes: delta.length, depth: 1 } })).toBe(true);
      } else {
        tx.putObject('tree', parentBody);
        tx.putObject('tree', subtreeBody);
      }
      // A chain of unreachable commits on it.
      const author = { name: 'C', email: 'c@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      let previous: Oid[] = [];
      for (let i = 0; i < 5; i++) previous = [tx.putObject('commit', encodeCommit({ tree: parent, parents: previous, author, committer: author, extraHeaders: [], message: `${i}\n` }))];
    });
    const removals: string[][] = [];
    // Watch each sweep write's removals on their way to the store (nothing is replaced).
    const watched: Repo = {
      ...repo,
      store: new Proxy(repo.store, {
        get(target, prop) {
          if (prop !== 'write') return Reflect.get(target, prop, target);
          return (action: Parameters<typeof repo.store.write>[0]) =>
            target.write((tx) =>
              action(
                new Proxy(tx, {
                  get(inner, key) {
                    if (key !== 'project') return Reflect.get(inner, key, inner);
                    return (n: number) => {
                      const p = inner.project(n);
                      return new Proxy(p, {
                        get(project, name) {
                          if (name === 'removeStored') {
                            return (oids: Oid[]) => {
                              if (oids.length > 0) removals.push(oids.map(oidToHex));
                              return project.removeStored!(oids);
                            };
                          }
                          const value = Reflect.get(project, name, project);
                          return typeof value === 'function' ? value.bind(project) : value;
                        },
                      });
                    };
                  },
                }),
              ),
            );
        },
      }),
    };
    await collectGarbage(watched, { graceMs: 0, batchIds: 1 });
    const position = (hex: string) => removals.findIndex((batch) => batch.includes(hex));
    if (backend.forms) {
      // The pair goes in one write; the commits (which name the parent tree) before it, the blob after.
      expect(position(oidToHex(parent))).toBe(position(oidToHex(subtree)));
      expect(removals[position(oidToHex(parent))].sort()).toEqual([oidToHex(parent), oidToHex(subtree)].sort());
    } else {
      // The commits, then the parent tree, then the subtree it names, each in a write of its own.
      expect(removals.map((batch) => batch.length)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
      expect(position(oidToHex(subtree))).toBe(6);
    }
    expect(position(hashObject('blob', Buffer.from('x\n')).toString('hex'))).toBeGreaterThan(position(oidToHex(subtree)));
    const commitPositions = removals.slice(0, 5).map((batch) => batch.length);
    expect(commitPositions).toEqual([1, 1, 1, 1, 1]);
    expect(position(oidToHex(parent))).toBe(5);
    await expectOnlyReachable(repo);
  });

  it('refuses a second collection of a project while the first is alive, and takes over one whose collector went silent', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'a\n' });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'garbage soon\n' }] });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'a\n' }] });
    const grace = heldGrace();
    const first = collectGarbage(repo, { graceMs: 60_000, wait: grace.wait });
    await grace.waiting;
    await expect(collectGarbage(repo, now)).rejects.toBeInstanceOf(CollectionBusyError);
    grace.end();
    expect((await first).removedObjects).toBeGreaterThan(0);
    // A collector that stopped saying it is alive (a crash): the next one takes over.
    const silent = await GarbageCollection.begin(repo, now);
    await repo.store.write(async (tx) => tx.putRecord(`gc-heartbeat/${repo.project}`, { id: silent.state.id, at: Date.now() - 10 * 60_000 }));
    const takeover = await collectGarbage(repo, now);
    expect(takeover.removedObjects).toBe(0);
    await expect(silent.run()).rejects.toBeInstanceOf(CollectionLostError);
    await silent.close();
    // And the server's start ends silent collections it finds.
    const crashed = await GarbageCollection.begin(repo, now);
    await repo.store.write(async (tx) => tx.putRecord(`gc-heartbeat/${repo.project}`, { id: crashed.state.id, at: Date.now() - 10 * 60_000 }));
    expect(await endStaleCollections(repo.store)).toBe(1);
    expect(await inReadTx(repo, (tx) => (tx as ProjectReads & CollectionReads).getCollection())).toBeUndefined();
    await crashed.close();
  });

  it('stops when its project is dropped during the grace period, and leaves nothing of it', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'a\n' });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'b\n' }] });
    const grace = heldGrace();
    const running = collectGarbage(repo, { graceMs: 60_000, wait: grace.wait });
    await grace.waiting;
    while ((await repo.store.dropProjectKeys(repo.project, 3)) > 0);
    grace.end();
    await expect(running).rejects.toBeInstanceOf(CollectionLostError);
    expect(await storedHexes(repo)).toEqual([]);
    expect(await inReadTx(repo, async (tx) => [await (tx as ProjectReads & CollectionReads).listJournal(null, 10), await tx.listRefs('')])).toEqual([[], []]);
    expect(await repo.store.read((tx) => tx.getRecord(`gc-heartbeat/${repo.project}`))).toBeUndefined();
  });

  it('keeps, through its grace period, what a reader took before it began, and through the run what changed during it', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'committed\n' });
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'before the collection\n' }] });
    // A reader takes the working tree's tree now and reads its file later.
    const takenTree = (await inReadTx(repo, (tx) => tx.getWorkingTree('main')))!.tree;
    const before = hashObject('blob', Buffer.from('before the collection\n'));
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'replaced before it began\n' }] });
    const grace = heldGrace();
    const running = collectGarbage(repo, { graceMs: 60_000, wait: grace.wait });
    await grace.waiting;
    // During the grace period the old state is all there.
    expect(await inReadTx(repo, (tx) => tx.hasObjects([takenTree, before]))).toEqual([true, true]);
    // A change while the collection runs: what the working tree held is kept by this run.
    const during = (await inReadTx(repo, (tx) => tx.getWorkingTree('main')))!.tree;
    await writeFiles(repo, { branch: 'main', files: [{ path: 'a.txt', content: 'replaced during it\n' }] });
    grace.end();
    await running;
    expect(await inReadTx(repo, (tx) => tx.hasObjects([takenTree, before, during, hashObject('blob', Buffer.from('replaced before it began\n'))]))).toEqual([false, false, true, true]);
    await collectGarbage(repo, now);
    expect(await inReadTx(repo, (tx) => tx.hasObjects([during]))).toEqual([false]);
  });

  it('keeps the extra roots it is given (queued syncs) and everything they reach', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'a.txt': 'a\n' });
    await createBranch(repo, { name: 'queued' });
    const queued = Buffer.from(await writeAndCommit(repo, { 'q.txt': 'queued\n' }, 'queued'), 'hex');
    await deleteBranch(repo, { name: 'queued' });
    await collectGarbage(repo, { graceMs: 0, extraRoots: async () => [queued] });
    expect(await inReadTx(repo, (tx) => tx.hasObjects([queued, hashObject('blob', Buffer.from('queued\n'))]))).toEqual([true, true]);
    await collectGarbage(repo, now);
    expect(await inReadTx(repo, (tx) => tx.hasObjects([queued]))).toEqual([false]);
  });

  it('leaves a whole store while writers restore, branch from and write over what it is removing', async () => {
    const repo = await newTestRepoIn(store);
    await writeAndCommit(repo, { 'keep.txt': 'keep\n' });
    await createBranch(repo, { name: 'doomed' });
    const doomed: string[] = [];
    for (let i = 0; i < 12; i++) {
      doomed.push(await writeAndCommit(repo, Object.fromEntries(Array.from({ length: 8 }, (_, f) => [`d${i % 3}/f${f}.txt`, `doomed ${i} ${f}\n`])), 'doomed'));
    }
    await deleteBranch(repo, { name: 'doomed' });
    const outcomes: string[] = [];
    let writers: Promise<void> | null = null;
    const report = await collectGarbage(repo, {
      graceMs: 0,
      batchIds: 3,
      onPhase: (phase) => {
        if (phase !== 'sweep') return;
        // While the sweep removes the doomed commits, writers bring some of them back.
        writers = (async () => {
          for (let i = 0; i < doomed.length; i++) {
            const attempt = i % 3 === 0 ? restore(repo, { branch: 'main', oid: doomed[i], force: true, people: testPeople }) : createBranch(repo, { name: `back${i}`, from: doomed[i] });
            await attempt.then(
              () => outcomes.push('kept'),
              (error: Error) => outcomes.push(error.message.includes('not found') ? 'gone' : `failed: ${error.message}`),
            );
            await writeFiles(repo, { branch: 'main', files: [{ path: 'keep.txt', content: `write ${i}\n` }] });
          }
        })();
      },
    });
    await writers;
    expect(outcomes.filter((outcome) => outcome.startsWith('failed'))).toEqual([]);
    expect(outcomes).toHaveLength(doomed.length);
    expect(report.removedObjects).toBeGreaterThan(0);
    // Everything a ref reaches is whole, by git's reckoning, and so is what main's working tree holds.
    await fsckAndReachable(repo);
    const { listFiles } = await import('../../../src/repo/listFiles.js');
    for (const file of await listFiles(repo, { branch: 'main', content: true })) expect(file.content).toBeDefined();
    await commit(repo, { branch: 'main', people: testPeople });
    await collectGarbage(repo, now);
    await expectOnlyReachable(repo);
  });

  it('collects a project of 4,000 empty commits in order and their empty tree stays', async () => {
    const repo = await newTestRepoIn(store);
    await inWriteTx(repo, async (tx) => {
      tx.putObject('tree', Buffer.alloc(0));
      const author = { name: 'C', email: 'c@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      let previous: Oid[] = [];
      for (let i = 0; i < 4000; i++) previous = [tx.putObject('commit', encodeCommit({ tree: EMPTY_TREE_OID, parents: previous, author, committer: author, extraHeaders: [], message: `${i}\n` }))];
    });
    const report = await collectGarbage(repo, { graceMs: 0, batchIds: 500 });
    expect(report.removedObjects).toBe(4000);
    await expectOnlyReachable(repo);
  });
});
