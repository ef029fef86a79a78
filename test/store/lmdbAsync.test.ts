/** The asynchronous interface's contract on LMDB (src/store/lmdbAsync.ts), plus what only that adapter does. */
import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { createDelta } from '../../src/git/delta.js';
import { EMPTY_TREE_OID, hashObject, type Oid } from '../../src/git/oid.js';
import type { ReceivedForm } from '../../src/store/asyncTypes.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { LmdbAsyncStore } from '../../src/store/lmdbAsync.js';
import { scratchDir } from '../support/git.js';
import { asyncStoreContract } from './asyncContract.js';

const dir = scratchDir('treehouse-async-contract-');
afterAll(() => dir.remove());

asyncStoreContract('LmdbAsyncStore', () => new LmdbAsyncStore(new LmdbStore({ path: dir.path })), { packForms: true, formsAlone: true, putFormsAlone: true, writeObjectsMax: 500, collection: true, visitObjects: true });

describe('LmdbAsyncStore beside writers of the synchronous interface', () => {
  it('runs a write callback again when a synchronous writer changed what it read, and loses no update', async () => {
    const scratch = scratchDir('treehouse-async-mixed-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      await store.write(async (tx) => tx.putRecord('counter', 0));
      let runs = 0;
      const writes = Array.from({ length: 60 }, (_, i) =>
        i % 2 === 0
          ? store.sync.write((tx) => tx.putRecord('counter', tx.getRecord<number>('counter')! + 1))
          : store.write(async (tx) => {
              runs++;
              tx.putRecord('counter', (await tx.getRecord<number>('counter'))! + 1);
            }),
      );
      await Promise.all(writes);
      expect(await store.read((tx) => tx.getRecord('counter'))).toBe(60);
      // Some callbacks read a counter a synchronous write changed before their replay.
      expect(runs).toBeGreaterThan(30);
    } finally {
      await store.close();
      scratch.remove();
    }
  });
});

describe('LmdbAsyncStore writers of one key', () => {
  it('wait for the commit of the write before them instead of running again: 50 increments, 50 runs', async () => {
    const scratch = scratchDir('treehouse-async-pending-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      await store.write(async (tx) => tx.putRecord('counter', 0));
      let runs = 0;
      await Promise.all(
        Array.from({ length: 50 }, () =>
          store.write(async (tx) => {
            runs++;
            tx.putRecord('counter', (await tx.getRecord<number>('counter'))! + 1);
          }),
        ),
      );
      expect(await store.read((tx) => tx.getRecord('counter'))).toBe(50);
      expect(runs).toBe(50);
    } finally {
      await store.close();
      scratch.remove();
    }
  });
});

describe('LmdbAsyncStore commit index inside a write', () => {
  it('indexes thousands of commits put in one transaction, each with two parents, once each (a pushed history)', async () => {
    const scratch = scratchDir('treehouse-async-history-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      const signature = { name: 'H', email: 'h@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const generations = await store.write(async (tx) => {
        const p = tx.project(1);
        const commits: Oid[] = [];
        for (let i = 0; i < 2000; i++) {
          // Every commit merges the two before it: a walk that is not memoised takes 2^i steps.
          const parents = commits.slice(-2).reverse();
          commits.push(p.putObject('commit', encodeCommit({ tree: EMPTY_TREE_OID, parents, author: signature, committer: signature, extraHeaders: [], message: `c${i}\n` })));
        }
        return (await p.getCommitInfos(commits)).map((info) => info?.generation);
      });
      expect(generations).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
    } finally {
      await store.close();
      scratch.remove();
    }
  });
});

describe('LmdbAsyncStore forms held for a seed (src/store/heldForms.ts)', () => {
  /** A seed's forms in writes of 2,000: random ids, so each write's pointers fall all over `packed`. */
  async function seedForms(store: LmdbAsyncStore, project: number, hold: boolean): Promise<ReceivedForm[]> {
    const forms = Array.from({ length: 16_000 }, (_, index): ReceivedForm => {
      const body = Buffer.from(`blob ${index} ${randomBytes(8).toString('hex')}\n`);
      return { oid: hashObject('blob', body), type: 'blob', inflatedBytes: body.length, deflated: deflateSync(body), delta: null };
    });
    if (hold) store.holdForms(project);
    for (let start = 0; start < forms.length; start += 2_000) {
      expect(await store.putFormsAlone(project, forms.slice(start, start + 2_000), 50)).toEqual(forms.slice(start, start + 2_000).map(() => true));
    }
    if (hold) {
      // Held back until settled: the project reads as holding none of them.
      await store.read(async (tx) => expect((await tx.project(project).getDeflated!([forms[0].oid, forms[15_999].oid])).every((form) => form === undefined)).toBe(true));
      await store.settleForms(project, settling(store, project, forms));
    }
    return forms;
  }

  /** Set by a test: writes to start while the held pointers are put (none when it returns true). */
  let settling: (store: LmdbAsyncStore, project: number, forms: ReceivedForm[]) => boolean = () => true;

  it('puts their pointers in id order once settled: fuller pages of `packed` and a smaller data file than the same writes unheld', async () => {
    const sizes: Record<string, { leafPages: number; fileBytes: number }> = {};
    for (const hold of [true, false]) {
      const scratch = scratchDir('treehouse-held-forms-');
      const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
      try {
        const forms = await seedForms(store, 1, hold);
        await store.read(async (tx) => {
          const p = tx.project(1);
          const sample = [0, 7_777, 15_999].map((index) => forms[index]);
          expect((await p.getDeflated!(sample.map((form) => form.oid))).map((form) => form?.deflated)).toEqual(sample.map((form) => form.deflated));
          expect(await p.hasObjects(forms.map((form) => form.oid))).toEqual(forms.map(() => true));
        });
        const stats = store.sync.dbs.deflated.getStats() as { treeLeafPageCount: number; entryCount: number };
        expect(stats.entryCount).toBe(forms.length);
        sizes[hold ? 'held' : 'unheld'] = { leafPages: stats.treeLeafPageCount, fileBytes: await store.storageUsedBytes() };
      } finally {
        await store.close();
        scratch.remove();
      }
    }
    // 16,000 pointers of 17 bytes under 24-byte keys: some 190 pages full, 290 at LMDB's two thirds.
    expect(sizes.held.leafPages).toBeLessThan(sizes.unheld.leafPages * 0.8);
    expect(sizes.held.fileBytes).toBeLessThan(sizes.unheld.fileBytes);
  });

  it('holds the forms other writes put while the pointers are being settled, so none lands ahead of the sorted runs', async () => {
    // As the deflate cache does for a seed's commits, whose held forms it cannot see: each of 500
    // forms put again, in writes of its own queued behind the settle's first run.
    const leafPages: number[] = [];
    for (const racing of [false, true]) {
      const scratch = scratchDir('treehouse-held-forms-');
      const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
      const puts: Array<Promise<boolean[]>> = [];
      settling = (target, project, forms) => {
        if (racing) for (let index = 0; index < 500; index++) puts.push(target.putFormsAlone(project, [forms[index * 32]], 50));
        return true;
      };
      try {
        const forms = await seedForms(store, 1, true);
        expect(puts.length).toBe(racing ? 500 : 0);
        await Promise.all(puts);
        await store.read(async (tx) => expect(await tx.project(1).hasObjects(forms.map((form) => form.oid))).toEqual(forms.map(() => true)));
        leafPages.push((store.sync.dbs.deflated.getStats() as { treeLeafPageCount: number }).treeLeafPageCount);
      } finally {
        settling = () => true;
        await store.close();
        scratch.remove();
      }
    }
    expect(leafPages[1]).toBe(leafPages[0]);
  });

  /**
   * A seed's commits as it stores them: 6,000 commits of a line with merges, parents first, 128 to a
   * write, each whole with its pack entry (putFormsAlone). Messages of 200-400 bytes, as real ones run.
   */
  function seedCommits(): { forms: ReceivedForm[]; order: Oid[] } {
    const signature = { name: 'Seeder', email: 'seed@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
    const forms: ReceivedForm[] = [];
    const order: Oid[] = [];
    for (let i = 0; i < 6_000; i++) {
      const parents = i === 0 ? [] : i % 10 === 0 && i > 20 ? [order[i - 1], order[i - 20]] : [order[i - 1]];
      const message = `commit ${i}: ${randomBytes(100 + (i % 100)).toString('hex')}\n`;
      const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: { ...signature, timestamp: signature.timestamp + i }, committer: signature, extraHeaders: [], message });
      const oid = hashObject('commit', body);
      order.push(oid);
      forms.push({ oid, type: 'commit', inflatedBytes: body.length, deflated: deflateSync(body), delta: null, body });
    }
    return { forms, order };
  }

  it("holds a seed's commits too, readable meanwhile, and puts them in id order, each kept as its form alone: fuller pages of `commits`, none of `objects`", async () => {
    const { forms, order } = seedCommits();
    const pages: Record<string, { objects: number; commits: number; fileBytes: number }> = {};
    for (const hold of [true, false]) {
      const scratch = scratchDir('treehouse-held-commits-');
      // Unheld, small objects go to the log of recent objects first, moved into `objects` once writes pause.
      const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path, recentIdleMs: 1 }));
      try {
        if (hold) store.holdForms(1);
        for (let start = 0; start < forms.length; start += 128) {
          expect(await store.putFormsAlone(1, forms.slice(start, start + 128), 50)).toEqual(forms.slice(start, start + 128).map(() => true));
        }
        const check = () =>
          store.read(async (tx) => {
            const p = tx.project(1);
            const sample = [0, 2_999, 5_999];
            expect((await p.getObjects(sample.map((index) => order[index]))).map((object) => object?.body)).toEqual(sample.map((index) => forms[index].body));
            expect(await p.hasObjects(order)).toEqual(order.map(() => true));
            // Generations as the line gives them, each counted from the parents held with it.
            expect((await p.getCommitInfos(sample.map((index) => order[index]))).map((info) => info?.generation)).toEqual(sample.map((index) => index + 1));
          });
        if (hold) {
          // Held back, yet the seed (the only reader of its reserved number) reads every commit.
          expect((store.sync.dbs.objects.getStats() as { entryCount: number }).entryCount).toBe(0);
          await check();
          await store.settleForms(1, true);
        }
        await check();
        const stats = (name: 'objects' | 'commits') => store.sync.dbs[name].getStats() as { treeLeafPageCount: number; overflowPages: number; entryCount: number };
        expect(stats('commits').entryCount).toBe(forms.length);
        while (store.sync.recent.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
        // Held, a commit whose pack entry is its form is kept as that form alone (reads rebuild it, as check() did).
        expect(stats('objects').entryCount).toBe(hold ? 0 : forms.length);
        if (hold) expect((store.sync.dbs.deflated.getStats() as { entryCount: number }).entryCount).toBe(forms.length);
        pages[hold ? 'held' : 'unheld'] = { objects: stats('objects').treeLeafPageCount, commits: stats('commits').treeLeafPageCount, fileBytes: await store.storageUsedBytes() };
      } finally {
        await store.close();
        scratch.remove();
      }
    }
    expect(pages.held.objects).toBe(0);
    expect(pages.unheld.objects).toBeGreaterThan(0);
    expect(pages.held.commits).toBeLessThan(pages.unheld.commits * 0.85);
    expect(pages.held.fileBytes).toBeLessThan(pages.unheld.fileBytes);
  });

  it("keeps every commit whose form another write puts while the seed settles (the deflate cache's, of a commit the pack gave no form)", async () => {
    // A seed stores a commit whose pack entry is a delta it cannot keep (its base not stored yet)
    // without a form; the deflate cache deflates it later, maybe while the settle puts the commits.
    const { forms, order } = seedCommits();
    const received = forms.map((form, index) => (index % 2 === 0 ? form : { ...form, delta: { base: randomBytes(20), bytes: 10 } }));
    const scratch = scratchDir('treehouse-held-commits-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      store.holdForms(1);
      for (let start = 0; start < received.length; start += 128) await store.putFormsAlone(1, received.slice(start, start + 128), 50);
      let settled = false;
      const settle = store.settleForms(1, true).finally(() => (settled = true));
      // One write at a time, each queued behind the settle's next: they land between its runs.
      let racing = 0;
      for (let index = 1; index < forms.length && !settled; index += 2) {
        await store.write(async (tx) => tx.project(1).putDeflated!(order[index], forms[index].deflated));
        racing++;
      }
      await settle;
      expect(racing).toBeGreaterThan(1);
      const bodies = (from: LmdbAsyncStore) => from.read(async (tx) => (await tx.project(1).getObjects(order)).map((object) => object?.body));
      expect(await bodies(store)).toEqual(forms.map((form) => form.body));
      await store.close();
      const reopened = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
      try {
        expect(await bodies(reopened)).toEqual(forms.map((form) => form.body));
      } finally {
        await reopened.close();
      }
    } finally {
      await store.close().catch(() => {});
      scratch.remove();
    }
  });

  it("lets a failed seed's held commits go: nothing of them is stored", async () => {
    const { forms } = seedCommits();
    const scratch = scratchDir('treehouse-held-commits-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      store.holdForms(2);
      await store.putFormsAlone(2, forms.slice(0, 500), 50);
      await store.settleForms(2, false);
      await store.read(async (tx) => expect(await tx.project(2).hasObjects(forms.slice(0, 500).map((form) => form.oid))).toEqual(forms.slice(0, 500).map(() => false)));
      expect((store.sync.dbs.commits.getStats() as { entryCount: number }).entryCount).toBe(0);
      expect((store.sync.dbs.objects.getStats() as { entryCount: number }).entryCount).toBe(0);
    } finally {
      await store.close();
      scratch.remove();
    }
  });
});

describe("LmdbAsyncStore forms held for a push (a private hold, src/repo/wire/heldPushForms.ts)", () => {
  it("puts no delta onto a base whose pointer lost to another writer's form: every delta's recorded depth stays its base's plus one", async () => {
    const scratch = scratchDir('treehouse-private-hold-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      const project = 7;
      const c = Buffer.from(Array.from({ length: 200 }, (_, i) => `line ${i} of a file\n`).join(''));
      const b = Buffer.concat([c, Buffer.from('one more line\n')]);
      const d = Buffer.concat([b, Buffer.from('and another\n')]);
      const [cId, bId, dId] = [c, b, d].map((body) => hashObject('blob', body));
      const whole = (oid: Oid, body: Buffer): ReceivedForm => ({ oid, type: 'blob', inflatedBytes: body.length, deflated: deflateSync(body), delta: null });
      const onto = (oid: Oid, body: Buffer, base: Oid, baseBody: Buffer): ReceivedForm => {
        const delta = createDelta(baseBody, body);
        return { oid, type: 'blob', inflatedBytes: body.length, deflated: deflateSync(delta), delta: { base, bytes: delta.length } };
      };
      // A hold nobody races keeps every object it held.
      const e = Buffer.from('a file nobody else writes\n');
      const unraced = store.beginFormHold(project);
      expect(await store.putFormsAlone(project, [whole(hashObject('blob', e), e)], 50, unraced)).toEqual([true]);
      expect(await store.endFormHold(unraced, true)).toBe(true);
      // The push holds b whole and d as a delta on it (depth 1).
      const hold = store.beginFormHold(project);
      expect(await store.putFormsAlone(project, [whole(bId, b), onto(dId, d, bId, b)], 50, hold)).toEqual([true, true]);
      // Meanwhile another write stores c whole and b as a delta on c (depth 1): nobody sees the held b.
      expect(await store.putFormsAlone(project, [whole(cId, c), onto(bId, b, cId, c)], 50)).toEqual([true, true]);
      // d's object is missing: the hold says so, and its push stores it again.
      expect(await store.endFormHold(hold, true)).toBe(false);
      const [formB, formD] = await store.read((tx) => tx.project(project).getDeflated!([bId, dId]));
      // b is the other writer's; d, held against a b of depth 0, would say depth 1 on a chain of 2.
      expect(formB?.delta?.depth).toBe(1);
      expect(formD).toBeUndefined();
      expect(await store.read((tx) => tx.project(project).hasObjects([cId, bId, dId]))).toEqual([true, true, false]);
    } finally {
      await store.close();
      scratch.remove();
    }
  });

  it("holds a push's commits where nobody else reads them, then puts them with their index entries (generations from the store too); a hold let go stores none", async () => {
    const scratch = scratchDir('treehouse-private-hold-commits-');
    const store = new LmdbAsyncStore(new LmdbStore({ path: scratch.path }));
    try {
      const project = 11;
      const signature = { name: 'Pusher', email: 'push@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const commitForm = (parents: Oid[], message: string): ReceivedForm => {
        const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: signature, committer: signature, extraHeaders: [], message });
        return { oid: hashObject('commit', body), type: 'commit', inflatedBytes: body.length, deflated: deflateSync(body), delta: null, body };
      };
      // The branch's commit, stored before the push.
      const stored = commitForm([], 'stored\n');
      expect(await store.putFormsAlone(project, [stored], 50)).toEqual([true]);
      const first = commitForm([stored.oid], 'first pushed\n');
      const second = commitForm([first.oid], 'second pushed\n');
      const hold = store.beginFormHold(project);
      // Parents first, in two writes: the second reads its parent from the hold.
      expect(await store.putFormsAlone(project, [first], 50, hold)).toEqual([true]);
      expect(await store.putFormsAlone(project, [second, first], 50, hold)).toEqual([true, true]);
      const seen = () =>
        store.read(async (tx) => {
          const p = tx.project(project);
          return { has: await p.hasObjects([first.oid, second.oid]), infos: (await p.getCommitInfos([first.oid, second.oid])).map((info) => info?.generation), raw: await p.getObject(second.oid) };
        });
      expect(await seen()).toEqual({ has: [false, false], infos: [undefined, undefined], raw: undefined });
      expect(await store.endFormHold(hold, true)).toBe(true);
      const after = await seen();
      expect(after.has).toEqual([true, true]);
      expect(after.infos).toEqual([2, 3]);
      expect(after.raw?.body).toEqual(second.body);
      expect((await store.read((tx) => tx.project(project).getDeflated!([second.oid])))[0]).toBeDefined();
      // A refused push's hold: its commit is never stored.
      const refused = commitForm([second.oid], 'refused\n');
      const letGo = store.beginFormHold(project);
      expect(await store.putFormsAlone(project, [refused], 50, letGo)).toEqual([true]);
      expect(await store.endFormHold(letGo, false)).toBe(false);
      expect(await store.read(async (tx) => [await tx.project(project).hasObjects([refused.oid]), (await tx.project(project).getCommitInfos([refused.oid]))[0]])).toEqual([[false], undefined]);
    } finally {
      await store.close();
      scratch.remove();
    }
  });

  it("leaves the shelves of a hold its process never ended to the next compaction, which removes them (no pointer names them)", async () => {
    const scratch = scratchDir('treehouse-private-hold-killed-');
    const sync = new LmdbStore({ path: scratch.path });
    const store = new LmdbAsyncStore(sync);
    try {
      const project = 9;
      const forms = Array.from({ length: 3_000 }, (_, index): ReceivedForm => {
        const body = Buffer.from(`held blob ${index} ${randomBytes(16).toString('hex')}\n`);
        return { oid: hashObject('blob', body), type: 'blob', inflatedBytes: body.length, deflated: deflateSync(body), delta: null };
      });
      const hold = store.beginFormHold(project);
      await store.putFormsAlone(project, forms, 50, hold);
      expect(sync.listShelves(project, null, 1_000).length).toBeGreaterThan(0);
      // As after kill -9: the hold's memory is gone, its pointers never put, its shelves on disk.
      sync.endPrivateHold(project, (hold as unknown as { held: Parameters<LmdbStore['endPrivateHold']>[1] }).held);
      const compacted = await store.compactAfterCollection(project, { removedIds: 0, keptIds: 0 });
      expect(compacted.freedBytes).toBeGreaterThan(0);
      expect(sync.listShelves(project, null, 1_000)).toEqual([]);
      expect(await store.read((tx) => tx.project(project).hasObjects(forms.slice(0, 3).map((form) => form.oid)))).toEqual([false, false, false]);
    } finally {
      await store.close();
      scratch.remove();
    }
  });
});
