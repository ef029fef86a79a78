/**
 * The contract every AsyncStore backend must pass (src/store/asyncTypes.ts): test/store/contract.ts
 * ported test for test to the asynchronous interface, and then what buffered writes and batched
 * reads add (read-your-writes, rollback after awaited reads, casRef checked at once, serialisable
 * concurrent writers, copies, the order of batched answers).
 *
 * `openStore` opens the backend on the same underlying storage each time it is called, so the
 * suite can close a store and open it again to check that acknowledged writes survive. Tests share
 * that storage and keep out of each other's way by using their own project numbers and record keys.
 *
 * `options.packForms` says whether the backend offers pack-ready forms: the tests of forms are
 * registered only then (never skipped at run time, which would pass whatever the store does), and
 * one test checks that the store says the same. `options.visitObjects`, likewise, whether its reads
 * offer visitObjects (views of its memory instead of copies).
 */
import { randomBytes } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Boom, commitBody, EMPTY_BLOB_HEX, EMPTY_TREE_HEX, expectBoom, hexes, HELLO_BLOB_HEX, projectNumbers } from './contractSupport.js';
import { createDelta } from '../../src/git/delta.js';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex, type Oid } from '../../src/git/oid.js';
import { encodeTree } from '../../src/git/tree.js';
import { RefChangedError, type ListedEntry, type NewObject, type WorkingTreeState } from '../../src/store/types.js';
import type { AsyncStore, CollectionReads, CollectionWrites, PackFormReads, PackFormWrites, ProjectReads, ProjectWrites, ReceivedForm, RecordReads } from '../../src/store/asyncTypes.js';

/** Every test takes project numbers from here, so tests never see each other's data (the sync suite starts at 1000). */
const freshProject = projectNumbers(5000);

/** The RefChangedError a promise rejects with; fails the test when it resolves or rejects with something else. */
async function refusalOf(promise: Promise<unknown>): Promise<RefChangedError> {
  let outcome: unknown = 'resolved';
  await promise.catch((error: unknown) => {
    outcome = error;
  });
  expect(outcome).toBeInstanceOf(RefChangedError);
  return outcome as RefChangedError;
}

/**
 * A call that may throw at once or return a rejected promise, as a promise either way: the interface
 * leaves open whether a refusal that needs no read is synchronous.
 */
function settled<T>(call: () => T | Promise<T>): Promise<T> {
  return Promise.resolve().then(call);
}

/**
 * Eight versions of a 150-line blob, each with one line edited from the one before: their ids,
 * each version's delta on the one before (none for the first), and each as a received pack's
 * entry (a delta on the version before, from the second on).
 */
function receivedVersions(): { versions: Buffer[]; oids: Oid[]; deltas: Array<Buffer | null>; entry: (index: number) => ReceivedForm } {
  const versions = Array.from({ length: 8 }, (_, round) => Buffer.from(Array.from({ length: 150 }, (_, line) => `line ${line} ${line === round * 17 ? 'edited' : ''}`).join('\n')));
  const oids = versions.map((body) => hashObject('blob', body));
  const deltas = versions.map((body, index) => (index === 0 ? null : createDelta(versions[index - 1], body)));
  const entry = (index: number): ReceivedForm => ({
    oid: oids[index],
    type: 'blob',
    inflatedBytes: versions[index].length,
    deflated: deflateSync(deltas[index] ?? versions[index]),
    delta: deltas[index] ? { base: oids[index - 1], bytes: deltas[index]!.length } : null,
  });
  return { versions, oids, deltas, entry };
}

/**
 * What a call after entries 0-2 of receivedVersions() were stored is given: 3 and 4 (kept), 5 and 6
 * (over a limit of 4, and so on nothing), an entry stored already as a form and one stored whole
 * (true, the first copy kept), and deltas on a base that has no form and on themselves (false).
 */
function mixedEntries(entry: (index: number) => ReceivedForm, stranger: { oid: Oid; body: Buffer }, orphan: { oid: Oid; body: Buffer }): ReceivedForm[] {
  return [
    entry(3),
    entry(4),
    entry(5),
    entry(6),
    { ...entry(1), deflated: deflateSync(Buffer.from('other')), delta: null },
    { oid: stranger.oid, type: 'blob', inflatedBytes: stranger.body.length, deflated: deflateSync(Buffer.from('x')), delta: null },
    { oid: orphan.oid, type: 'blob', inflatedBytes: orphan.body.length, deflated: deflateSync(Buffer.from('x')), delta: { base: hashObject('blob', Buffer.from('none')), bytes: 1 } },
    { oid: orphan.oid, type: 'blob', inflatedBytes: orphan.body.length, deflated: deflateSync(Buffer.from('x')), delta: { base: orphan.oid, bytes: 1 } },
  ];
}

/** A transaction's project as one offering pack-ready forms; only the tests registered when `options.packForms` is true call these. */
function formReads(p: ProjectReads & Partial<PackFormReads>): ProjectReads & PackFormReads {
  if (typeof p.getDeflated !== 'function') throw new Error('the store said it offers pack-ready forms, but a read transaction has no getDeflated');
  return p as ProjectReads & PackFormReads;
}

/** A stand-in for a pack-ready form's zlib stream: the store keeps it as given. */
const stream = (text: string) => Buffer.from(`zlib:${text}`);

function formWrites(p: ProjectWrites & Partial<PackFormWrites>): ProjectWrites & PackFormWrites {
  for (const method of ['getDeflated', 'putDeflated', 'putDeflatedDelta', 'putObjectAsForm', 'putObjectsAsForms'] as const) {
    if (typeof p[method] !== 'function') throw new Error(`the store said it offers pack-ready forms, but a write transaction has no ${method}`);
  }
  return p as ProjectWrites & PackFormWrites;
}

/** A transaction's project as one offering garbage collection; only the tests registered when `options.collection` is true call these. */
function collectionReads(p: ProjectReads & Partial<CollectionReads>): ProjectReads & CollectionReads {
  for (const method of ['getCollection', 'listWorkingTrees', 'listStored', 'describeStored', 'listJournal'] as const) {
    if (typeof p[method] !== 'function') throw new Error(`the store said it offers garbage collection, but a transaction has no ${method}`);
  }
  return p as ProjectReads & CollectionReads;
}

function collectionWrites(p: ProjectWrites & Partial<CollectionWrites>): ProjectWrites & CollectionWrites & PackFormWrites {
  for (const method of ['beginCollection', 'endCollection', 'forgetJournal', 'removeStored', 'replaceFormWhole', 'keepCompact', 'replaceForms'] as const) {
    if (typeof p[method] !== 'function') throw new Error(`the store said it offers garbage collection, but a write transaction has no ${method}`);
  }
  collectionReads(p);
  return p as ProjectWrites & CollectionWrites & PackFormWrites;
}

/** What a read or write transaction can read, so one helper can look at the same data from inside a write and from a reader beside it. */
type Reader = RecordReads & { project(project: number): ProjectReads };

export function asyncStoreContract(backendName: string, openStore: () => AsyncStore, options: { packForms: boolean; formsAlone?: boolean; putFormsAlone?: boolean; writeObjectsMax?: number; collection: boolean; visitObjects: boolean }): void {
  const formsAlone = options.formsAlone ?? false;
  describe(`AsyncStore contract: ${backendName}`, () => {
    let store: AsyncStore;
    beforeAll(() => {
      store = openStore();
    });
    afterAll(async () => {
      await store.close();
    });
    /** Blobs of `bodies`, put in one write; their ids. */
    const putBlobs = (project: number, bodies: Buffer[]) => store.write(async (tx) => bodies.map((body) => tx.project(project).putObject('blob', body)));

    describe('capabilities', () => {
      it('offers pack-ready forms exactly when the suite was told it does, in read and write transactions alike, and their backlog', async () => {
        expect(store.packForms).toBe(options.packForms);
        expect(typeof store.listUndeflated === 'function').toBe(options.packForms);
        const project = freshProject();
        const offered = await store.read(async (tx) => typeof tx.project(project).getDeflated === 'function');
        expect(offered).toBe(options.packForms);
        const methods = await store.write(async (tx) => {
          const p = tx.project(project);
          return [p.getDeflated, p.putDeflated, p.putDeflatedDelta, p.putObjectAsForm, p.putObjectsAsForms].map((method) => typeof method === 'function');
        });
        expect(methods).toEqual([options.packForms, options.packForms, options.packForms, options.packForms, options.packForms]);
        expect(store.formsAlone ?? false).toBe(formsAlone);
        expect(typeof store.putFormsAlone === 'function').toBe(options.putFormsAlone ?? false);
        expect(store.writeObjectsMax).toBe(options.writeObjectsMax);
        expect(store.collection).toBe(options.collection);
        const collecting = await store.write(async (tx) => typeof tx.project(project).removeStored === 'function');
        expect(collecting).toBe(options.collection);
      });
    });

    describe('objects', () => {
      it('gives the golden ids of the empty blob and the empty tree', async () => {
        const project = freshProject();
        const ids = await store.write(async (tx) => {
          const p = tx.project(project);
          return { blob: p.putObject('blob', Buffer.alloc(0)), tree: p.putObject('tree', encodeTree([])) };
        });
        expect(oidToHex(ids.blob)).toBe(EMPTY_BLOB_HEX);
        expect(oidToHex(ids.tree)).toBe(EMPTY_TREE_HEX);
        expect(ids.blob.equals(EMPTY_BLOB_OID)).toBe(true);
        expect(ids.tree.equals(EMPTY_TREE_OID)).toBe(true);
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getObject(EMPTY_BLOB_OID)).toEqual({ type: 'blob', body: Buffer.alloc(0) });
          expect(await p.getObjects([EMPTY_BLOB_OID, EMPTY_TREE_OID])).toEqual([
            { type: 'blob', body: Buffer.alloc(0) },
            { type: 'tree', body: Buffer.alloc(0) },
          ]);
          expect(await p.objectSizes([EMPTY_BLOB_OID, EMPTY_TREE_OID])).toEqual([0, 0]);
        });
      });

      it('round-trips every object type byte for byte', async () => {
        const project = freshProject();
        const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
        const hello = Buffer.from('hello\n');
        const tree = encodeTree([{ name: 'hello', mode: '100644', oid: hashObject('blob', hello) }]);
        const commit = commitBody(hashObject('tree', tree), [], 1_700_000_000);
        const tag = Buffer.from(`object ${oidToHex(hashObject('commit', commit))}\ntype commit\ntag v1\ntagger C <c@example.com> 1700000000 +0000\n\nv1\n`);
        const written = await store.write(async (tx) => {
          const p = tx.project(project);
          return [
            { type: 'blob' as const, body: binary, oid: p.putObject('blob', binary) },
            { type: 'blob' as const, body: hello, oid: p.putObject('blob', hello) },
            { type: 'tree' as const, body: tree, oid: p.putObject('tree', tree) },
            { type: 'commit' as const, body: commit, oid: p.putObject('commit', commit) },
            { type: 'tag' as const, body: tag, oid: p.putObject('tag', tag) },
          ];
        });
        expect(oidToHex(written[1].oid)).toBe(HELLO_BLOB_HEX);
        for (const { type, body, oid } of written) expect(oid.equals(hashObject(type, body))).toBe(true);
        const absent = oidFromHex('00'.repeat(20));
        const asked = [...written.map((w) => w.oid), absent];
        // Batched reads of one transaction may run side by side: a networked backend pipelines them.
        const [objects, has, sizes, types] = await store.read(async (tx) => {
          const p = tx.project(project);
          return Promise.all([p.getObjects(asked), p.hasObjects(asked), p.objectSizes(asked), p.objectTypes(asked)]);
        });
        expect(types).toEqual([...written.map((w) => w.type), undefined]);
        expect(objects).toEqual([...written.map(({ type, body }) => ({ type, body })), undefined]);
        written.forEach(({ body }, index) => expect(objects[index]!.body.equals(body)).toBe(true));
        expect(has).toEqual([true, true, true, true, true, false]);
        expect(sizes).toEqual([...written.map((w) => w.body.length), undefined]);
        expect(await store.read(async (tx) => tx.project(project).getObject(absent))).toBeUndefined();
      });

      it('copies bodies in and out, so callers cannot change what is stored', async () => {
        const project = freshProject();
        const body = Buffer.from('original');
        const oid = await store.write(async (tx) => tx.project(project).putObject('blob', body));
        body.fill(0x21);
        const [first] = await store.read(async (tx) => tx.project(project).getObjects([oid]));
        first!.body.fill(0x22);
        // Within one transaction too: a layer that caches what it read must still hand out copies.
        const second = await store.read(async (tx) => {
          const p = tx.project(project);
          const [one] = await p.getObjects([oid]);
          one!.body.fill(0x23);
          return (await p.getObjects([oid]))[0];
        });
        expect(second!.body.toString()).toBe('original');
      });

      it('stores an object once and keeps the first copy (putObject is idempotent)', async () => {
        const project = freshProject();
        const body = Buffer.from('same');
        const [a, b] = await store.write(async (tx) => {
          const p = tx.project(project);
          return [p.putObject('blob', body), p.putObject('blob', body)];
        });
        expect(a.equals(b)).toBe(true);
        const oid = hashObject('blob', Buffer.from('given id'));
        await store.write(async (tx) => tx.project(project).putObjectWithId(oid, 'blob', Buffer.from('given id')));
        // A second put under a stored id (whatever its bytes) leaves the first copy in place.
        await store.write(async (tx) => tx.project(project).putObjectWithId(oid, 'blob', Buffer.from('other bytes')));
        expect(await store.read(async (tx) => tx.project(project).getObjects([oid]))).toEqual([{ type: 'blob', body: Buffer.from('given id') }]);
        // The same within one transaction, where the first copy is still only buffered.
        const buffered = hashObject('blob', Buffer.from('first in the buffer'));
        const seen = await store.write(async (tx) => {
          const p = tx.project(project);
          p.putObjectWithId(buffered, 'blob', Buffer.from('first in the buffer'));
          p.putObjectWithId(buffered, 'blob', Buffer.from('second in the buffer'));
          return (await p.getObjects([buffered]))[0]?.body.toString();
        });
        expect(seen).toBe('first in the buffer');
        expect(await store.read(async (tx) => tx.project(project).getObjects([buffered]))).toEqual([{ type: 'blob', body: Buffer.from('first in the buffer') }]);
      });

      it('keeps projects apart: the same object in one project is absent from another', async () => {
        const [one, two] = [freshProject(), freshProject()];
        const oid = await store.write(async (tx) => tx.project(one).putObject('blob', Buffer.from('only in one')));
        await store.read(async (tx) => {
          expect(await tx.project(one).hasObjects([oid])).toEqual([true]);
          expect(await tx.project(two).hasObjects([oid])).toEqual([false]);
          expect(await tx.project(two).getObjects([oid])).toEqual([undefined]);
          expect(await tx.project(two).findObjectsByPrefix(oidToHex(oid).slice(0, 6), 10)).toEqual([]);
        });
      });
    });

    describe('findObjectsByPrefix', () => {
      it('finds by odd and even prefixes, honours the limit and stays in its project', async () => {
        const project = freshProject();
        const neighbour = freshProject();
        const bodies = Array.from({ length: 200 }, (_, i) => Buffer.from(`object ${i}`));
        const oids = await store.write(async (tx) => {
          tx.project(neighbour).putObject('blob', Buffer.from('neighbour'));
          return bodies.map((body) => tx.project(project).putObject('blob', body));
        });
        const all = hexes(oids).sort();
        await store.read(async (tx) => {
          const p = tx.project(project);
          for (const hex of all.slice(0, 20)) {
            for (const length of [1, 2, 3, 4, 7, 8, 39, 40]) {
              const prefix = hex.slice(0, length);
              const expected = all.filter((other) => other.startsWith(prefix));
              const found = hexes(await p.findObjectsByPrefix(prefix, 1000));
              expect(found.sort()).toEqual(expected);
              expect((await p.findObjectsByPrefix(prefix, 1)).length).toBe(1);
            }
          }
          // An odd prefix must not match ids whose next digit is outside it, nor stop before "f".
          const byFirstDigit = all.filter((hex) => hex.startsWith('f'));
          expect(hexes(await p.findObjectsByPrefix('f', 1000)).sort()).toEqual(byFirstDigit);
          expect(hexes(await p.findObjectsByPrefix('', 1000)).sort()).toEqual(all);
          expect(await p.findObjectsByPrefix('ff'.repeat(20), 10)).toEqual([]);
          expect((await p.findObjectsByPrefix(all[0].slice(0, 1), 3)).length).toBeLessThanOrEqual(3);
        });
      });
    });

    describe('commit index', () => {
      it('indexes tree, parents, committer time and generation numbers', async () => {
        const project = freshProject();
        const tree = EMPTY_TREE_OID;
        const root = commitBody(tree, [], 1_000);
        const rootOid = hashObject('commit', root);
        const left = commitBody(tree, [rootOid], 2_000, 'left\n');
        const leftOid = hashObject('commit', left);
        const leftTwo = commitBody(tree, [leftOid], 3_000, 'left two\n');
        const leftTwoOid = hashObject('commit', leftTwo);
        const right = commitBody(tree, [rootOid], 2_500, 'right\n');
        const rightOid = hashObject('commit', right);
        const merge = commitBody(tree, [rightOid, leftTwoOid], 4_000, 'merge\n');
        const mergeOid = hashObject('commit', merge);
        // A parent the store has never seen (a shallow boundary) counts as generation 1.
        const shallow = commitBody(tree, [oidFromHex('ab'.repeat(20))], 5_000, 'shallow\n');
        const shallowOid = hashObject('commit', shallow);

        // The parents are put in the same transaction: generations come from the buffered commits.
        await store.write(async (tx) => {
          const p = tx.project(project);
          p.putObject('tree', encodeTree([]));
          for (const body of [root, left, leftTwo, right, merge]) p.putObject('commit', body);
          p.putObjectWithId(shallowOid, 'commit', shallow);
        });
        const infos = await store.read(async (tx) => tx.project(project).getCommitInfos([rootOid, leftOid, leftTwoOid, rightOid, mergeOid, shallowOid, tree, oidFromHex('cd'.repeat(20))]));
        const info = (index: number) => {
          const found = infos[index]!;
          return { tree: oidToHex(found.tree), parents: hexes(found.parents), commitTime: found.commitTime, generation: found.generation };
        };
        const treeHex = oidToHex(tree);
        expect(info(0)).toEqual({ tree: treeHex, parents: [], commitTime: 1_000, generation: 1 });
        expect(info(1)).toEqual({ tree: treeHex, parents: [oidToHex(rootOid)], commitTime: 2_000, generation: 2 });
        expect(info(2).generation).toBe(3);
        expect(info(3).generation).toBe(2);
        expect(info(4)).toEqual({ tree: treeHex, parents: [oidToHex(rightOid), oidToHex(leftTwoOid)], commitTime: 4_000, generation: 4 });
        expect(info(5).generation).toBe(2);
        // Only commits are indexed.
        expect(infos.slice(6)).toEqual([undefined, undefined]);
      });

      it("keeps a commit's object list per project, replaces it, and refuses one for an unstored commit or of broken records", async () => {
        const [project, other] = [freshProject(), freshProject()];
        const commit = commitBody(EMPTY_TREE_OID, [], 1_000, 'listed\n');
        const records = Buffer.concat([Buffer.from([2]), EMPTY_TREE_OID, Buffer.from([3]), EMPTY_BLOB_OID]);
        const oid = await store.write(async (tx) => {
          const p = tx.project(project);
          const id = p.putObject('commit', commit);
          expect(await p.getCommitObjects(id)).toBeUndefined();
          p.putCommitObjects(id, records);
          expect(await p.getCommitObjects(id)).toEqual(records);
          return id;
        });
        await store.read(async (tx) => {
          expect(await tx.project(project).getCommitObjects(oid)).toEqual(records);
          expect(await tx.project(other).getCommitObjects(oid)).toBeUndefined();
        });
        await store.write(async (tx) => tx.project(project).putCommitObjects(oid, records.subarray(0, 21)));
        expect(await store.read(async (tx) => tx.project(project).getCommitObjects(oid))).toEqual(records.subarray(0, 21));
        // Whether the refusal comes from the call or from the commit, the write rejects and keeps nothing.
        await expect(store.write(async (tx) => tx.project(other).putCommitObjects(oid, records))).rejects.toThrow(/not stored/);
        await expect(store.write(async (tx) => tx.project(project).putCommitObjects(oid, records.subarray(0, 20)))).rejects.toThrow(/whole records/);
        expect(await store.read(async (tx) => tx.project(project).getCommitObjects(oid))).toEqual(records.subarray(0, 21));
        expect(await store.read(async (tx) => tx.project(other).getCommitObjects(oid))).toBeUndefined();
      });

      it('keeps large committer times and many parents exactly', async () => {
        const project = freshProject();
        const parents = Array.from({ length: 17 }, (_, i) => hashObject('commit', Buffer.from(`absent ${i}`)));
        const body = commitBody(EMPTY_TREE_OID, parents, 4_102_444_800, 'octopus\n');
        const oid = await store.write(async (tx) => tx.project(project).putObject('commit', body));
        const [info] = await store.read(async (tx) => tx.project(project).getCommitInfos([oid]));
        expect(hexes(info!.parents)).toEqual(hexes(parents));
        expect(info!.commitTime).toBe(4_102_444_800);
        expect(info!.generation).toBe(2);
      });
    });

    describe('refs', () => {
      const a = hashObject('commit', Buffer.from('a'));
      const b = hashObject('commit', Buffer.from('b'));
      const c = hashObject('commit', Buffer.from('c'));
      const refOf = (project: number, name: string) => store.read(async (tx) => tx.project(project).getRef(name));

      it('creates with "must not exist", moves from the expected value, and deletes', async () => {
        const project = freshProject();
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, a));
        expect(await refOf(project, 'refs/heads/main')).toEqual(a);
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', a, b));
        expect(await refOf(project, 'refs/heads/main')).toEqual(b);
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', b, null));
        expect(await refOf(project, 'refs/heads/main')).toBeUndefined();
        // Deleted means gone: it can be created again from "must not exist".
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, c));
        expect(await refOf(project, 'refs/heads/main')).toEqual(c);
      });

      it('refuses "must not exist" when the ref exists, and leaves it unchanged', async () => {
        const project = freshProject();
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, a));
        const error = await refusalOf(store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, b)));
        expect(error.ref).toBe('refs/heads/main');
        expect(error.current).toEqual(a);
        expect(await refOf(project, 'refs/heads/main')).toEqual(a);
      });

      it('refuses a mismatch (stale value, or a ref that does not exist) and leaves the ref unchanged', async () => {
        const project = freshProject();
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, a));
        for (const [expected, next] of [
          [b, c],
          [b, null],
        ] as Array<[Oid, Oid | null]>) {
          const error = await refusalOf(store.write(async (tx) => tx.project(project).casRef('refs/heads/main', expected, next)));
          expect(error.current).toEqual(a);
          expect(await refOf(project, 'refs/heads/main')).toEqual(a);
        }
        const missing = store.write(async (tx) => tx.project(project).casRef('refs/heads/nope', a, b));
        await expect(missing).rejects.toMatchObject({ name: 'RefChangedError', ref: 'refs/heads/nope', current: null });
        expect(await refOf(project, 'refs/heads/nope')).toBeUndefined();
      });

      it('leaves the ref unchanged when the mismatch is caught inside the transaction', async () => {
        const project = freshProject();
        const outcome = await store.write(async (tx) => {
          const p = tx.project(project);
          await p.casRef('refs/heads/main', null, a);
          try {
            await p.casRef('refs/heads/main', b, c);
            return 'moved';
          } catch (error) {
            return error instanceof RefChangedError && error.current?.equals(a) ? 'refused' : 'wrong error';
          }
        });
        expect(outcome).toBe('refused');
        expect(await refOf(project, 'refs/heads/main')).toEqual(a);
      });

      it('lists refs by prefix, sorted by name, per project', async () => {
        const project = freshProject();
        const other = freshProject();
        const names = ['refs/heads/main', 'refs/heads/feature/x', 'refs/heads/feature', 'refs/tags/v1', 'refs/heads/a', 'refs/headsx'];
        await store.write(async (tx) => {
          for (const name of names) await tx.project(project).casRef(name, null, a);
          await tx.project(other).casRef('refs/heads/other', null, b);
        });
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect((await p.listRefs('refs/heads/')).map((r) => r.name)).toEqual(['refs/heads/a', 'refs/heads/feature', 'refs/heads/feature/x', 'refs/heads/main']);
          expect((await p.listRefs('refs/heads/feature/')).map((r) => r.name)).toEqual(['refs/heads/feature/x']);
          expect((await p.listRefs('refs/')).map((r) => r.name)).toEqual([...names].sort());
          expect((await p.listRefs('refs/heads/main'))[0].oid).toEqual(a);
          expect(await p.listRefs('refs/nothing/')).toEqual([]);
          expect((await tx.project(other).listRefs('refs/')).map((r) => r.name)).toEqual(['refs/heads/other']);
        });
      });
    });

    describe('write transactions', () => {
      it('see their own writes and return the callback result', async () => {
        const project = freshProject();
        const seen = await store.write(async (tx) => {
          const p = tx.project(project);
          const oid = p.putObject('blob', Buffer.from('fresh'));
          await p.casRef('refs/heads/main', null, oid);
          tx.putRecord(`asyncContract/${project}/own`, { n: 1 });
          return {
            object: (await p.getObjects([oid]))[0]?.body.toString(),
            type: (await p.objectTypes([oid]))[0],
            ref: (await p.getRef('refs/heads/main'))?.equals(oid),
            record: await tx.getRecord<{ n: number }>(`asyncContract/${project}/own`),
          };
        });
        expect(seen).toEqual({ object: 'fresh', type: 'blob', ref: true, record: { n: 1 } });
      });

      it('leave nothing behind when the callback throws', async () => {
        const project = freshProject();
        const head = hashObject('commit', Buffer.from('head'));
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, head));
        const versionBefore = await store.read(async (tx) => tx.project(project).getVersion());
        let blob: Oid | undefined;
        let commit: Oid | undefined;
        await expectBoom(
          store.write(async (tx) => {
            const p = tx.project(project);
            blob = p.putObject('blob', Buffer.from('doomed'));
            commit = p.putObject('commit', commitBody(EMPTY_TREE_OID, [], 1_234));
            await p.casRef('refs/heads/main', head, commit);
            await p.casRef('refs/heads/doomed', null, commit);
            p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: [] });
            await p.bumpVersion();
            tx.putRecord(`asyncContract/${project}/doomed`, 'x');
            throw new Boom('rolled back');
          }),
        );
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.hasObjects([blob!, commit!])).toEqual([false, false]);
          expect(await p.getCommitInfos([commit!])).toEqual([undefined]);
          expect(await p.getRef('refs/heads/main')).toEqual(head);
          expect(await p.getRef('refs/heads/doomed')).toBeUndefined();
          expect(await p.getWorkingTree('main')).toBeUndefined();
          expect(await p.getVersion()).toBe(versionBefore);
          expect(await tx.getRecord(`asyncContract/${project}/doomed`)).toBeUndefined();
        });
        // The store keeps working after a rollback.
        await store.write(async (tx) => tx.putRecord(`asyncContract/${project}/after`, 'ok'));
        expect(await store.read(async (tx) => tx.getRecord(`asyncContract/${project}/after`))).toBe('ok');
      });

      it('refuse writes inside a read transaction', async () => {
        const project = freshProject();
        await expect(store.read(async (tx) => (tx.project(project) as unknown as ProjectWrites).putObject('blob', Buffer.from('x')))).rejects.toThrow();
        await expect(store.read(async (tx) => (tx as unknown as { putRecord(k: string, v: unknown): void }).putRecord('k', 1))).rejects.toThrow();
        expect(await store.read(async (tx) => tx.project(project).findObjectsByPrefix('', 10))).toEqual([]);
      });

      it('run one at a time: concurrent writes never lose an update', async () => {
        const key = `asyncContract/${freshProject()}/counter`;
        await Promise.all(Array.from({ length: 50 }, () => store.write(async (tx) => tx.putRecord(key, ((await tx.getRecord<number>(key)) ?? 0) + 1))));
        expect(await store.read(async (tx) => tx.getRecord<number>(key))).toBe(50);
      });

      it('count versions per project', async () => {
        const [one, two] = [freshProject(), freshProject()];
        expect(await store.read(async (tx) => tx.project(one).getVersion())).toBe(0);
        const bumped = await store.write(async (tx) => [await tx.project(one).bumpVersion(), await tx.project(one).bumpVersion()]);
        expect(bumped).toEqual([1, 2]);
        await store.read(async (tx) => {
          expect(await tx.project(one).getVersion()).toBe(2);
          expect(await tx.project(two).getVersion()).toBe(0);
        });
      });
    });

    describe('working trees', () => {
      const state = (name: string) => ({ tree: hashObject('tree', Buffer.from(name)), locks: [`${name}/locked.txt`, 'z'] });

      it('round-trip per branch and delete one branch', async () => {
        const project = freshProject();
        // "feat" is a prefix of "feat2" and of "feat/x": each branch must see only its own record.
        const branches = ['feat', 'feat2', 'feat/x'];
        await store.write(async (tx) => {
          for (const branch of branches) tx.project(project).putWorkingTree(branch, state(branch));
        });
        await store.read(async (tx) => {
          const p = tx.project(project);
          for (const branch of branches) expect(await p.getWorkingTree(branch)).toEqual(state(branch));
          expect(await p.getWorkingTree('nope')).toBeUndefined();
        });
        await store.write(async (tx) => {
          tx.project(project).deleteWorkingTree('feat2');
          tx.project(project).putWorkingTree('feat', state('replaced'));
        });
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getWorkingTree('feat')).toEqual(state('replaced'));
          expect(await p.getWorkingTree('feat2')).toBeUndefined();
          expect(await p.getWorkingTree('feat/x')).toEqual(state('feat/x'));
        });
      });

      it('keep locked paths whose names are not UTF-8 byte for byte (escapes of src/git/pathBytes.ts)', async () => {
        const project = freshProject();
        const locks = ['caf\udce9.txt', 'd/x\udce8.txt', 'd/x\udce9.txt', 'caf\ufffd.txt', '\u{1f600}/ok'];
        await store.write(async (tx) => tx.project(project).putWorkingTree('main', { tree: EMPTY_TREE_OID, locks }));
        expect((await store.read(async (tx) => tx.project(project).getWorkingTree('main')))?.locks).toEqual(locks);
      });
    });

    describe('object annex', () => {
      it('returns the annex with its object, keeps it out of the body and size, and copies it', async () => {
        const project = freshProject();
        const body = encodeTree([{ name: 'f', mode: '100644', oid: hashObject('blob', Buffer.from('x')) }]);
        const annex = Buffer.from([0, 0, 0, 1]);
        const plain = Buffer.from('no annex');
        const absent = hashObject('blob', Buffer.from('absent'));
        const [tree, blob] = await store.write(async (tx) => {
          const p = tx.project(project);
          return [p.putObject('tree', body, Buffer.from(annex)), p.putObject('blob', plain)];
        });
        expect(tree).toEqual(hashObject('tree', body));
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getObjects([tree, blob, absent])).toEqual([{ type: 'tree', body }, { type: 'blob', body: plain }, undefined]);
          expect(await p.getObjectsWithAnnex([tree, blob, absent])).toEqual([{ type: 'tree', body, annex }, { type: 'blob', body: plain, annex: null }, undefined]);
          expect(await p.objectSizes([tree, blob])).toEqual([body.length, plain.length]);
          const [first] = await p.getObjectsWithAnnex([tree]);
          first!.annex!.fill(9);
          first!.body.fill(9);
          expect(await p.getObjectsWithAnnex([tree])).toEqual([{ type: 'tree', body, annex }]);
        });
      });

      if (options.packForms) {
        it('keeps the annex out of the pack-ready form: its type and inflated size are the object alone', async () => {
          const project = freshProject();
          const body = encodeTree([{ name: 'f', mode: '100644', oid: hashObject('blob', Buffer.from('x')) }]);
          const tree = await store.write(async (tx) => tx.project(project).putObject('tree', body, Buffer.from([0, 0, 0, 1])));
          await store.write(async (tx) => formWrites(tx.project(project)).putDeflated(tree, Buffer.from('zlib bytes')));
          const [packed] = await store.read(async (tx) => formReads(tx.project(project)).getDeflated([tree]));
          expect(packed).toEqual({ type: 'tree', inflatedBytes: body.length, deflated: Buffer.from('zlib bytes') });
          expect(packed!.delta).toBeUndefined();
        });

        it('keeps pack-ready forms as deltas only against bases that have one, at the next depth, never replacing a form', async () => {
          const project = freshProject();
          const bodies = ['version 1\n', 'version 2\n', 'version 3\n', 'unrelated\n'].map((text) => Buffer.from(text));
          const [v1, v2, v3, loose] = await putBlobs(project, bodies);
          const kept = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const out: boolean[] = [];
            // No form for the base yet: refused.
            out.push(await p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 1 }, stream('v2 on v1')));
            // Buffered in this transaction, and a base for the deltas after it all the same.
            p.putDeflated(v1, stream('v1 whole'));
            out.push(true);
            // The depth must be the base's + 1.
            out.push(await p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 2 }, stream('v2 on v1')));
            out.push(await p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 1 }, stream('v2 on v1')));
            out.push(await p.putDeflatedDelta(v3, { base: v2, bytes: 9, depth: 2 }, stream('v3 on v2')));
            // A form is never replaced, by a delta or a whole stream.
            out.push(await p.putDeflatedDelta(v2, { base: v3, bytes: 5, depth: 3 }, stream('v2 on v3')));
            // Itself as base, or an object not stored: refused.
            out.push(await p.putDeflatedDelta(v1, { base: v1, bytes: 1, depth: 1 }, stream('self')));
            out.push(await p.putDeflatedDelta(hashObject('blob', Buffer.from('absent')), { base: v1, bytes: 1, depth: 1 }, stream('absent')));
            return out;
          });
          expect(kept).toEqual([false, true, false, true, true, false, false, false]);
          await store.write(async (tx) => formWrites(tx.project(project)).putDeflated(v2, stream('v2 whole')));
          const [third, second, first, none] = await store.read(async (tx) => formReads(tx.project(project)).getDeflated([v3, v2, v1, loose]));
          expect(third).toEqual({ type: 'blob', inflatedBytes: bodies[2].length, delta: { base: v2, bytes: 9, depth: 2 }, deflated: stream('v3 on v2') });
          expect([second!.deflated, second!.delta?.depth]).toEqual([stream('v2 on v1'), 1]);
          expect(first!.deflated).toEqual(stream('v1 whole'));
          expect(none).toBeUndefined();
        });

        it('settles delta puts made together as if made one after another, each seeing the forms kept before it', async () => {
          const project = freshProject();
          const [v1, v2, v3, v4] = await putBlobs(project, ['version 1\n', 'version 2\n', 'version 3\n', 'version 4\n'].map((text) => Buffer.from(text)));
          const kept = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            p.putDeflated(v1, stream('v1 whole'));
            return Promise.all([
              p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 1 }, stream('v2 on v1')),
              // On v2, kept just before it: depth 2.
              p.putDeflatedDelta(v3, { base: v2, bytes: 9, depth: 2 }, stream('v3 on v2')),
              // v2 again: the first put counts.
              p.putDeflatedDelta(v2, { base: v3, bytes: 5, depth: 3 }, stream('v2 on v3')),
              // The wrong depth on v3, then the right one.
              p.putDeflatedDelta(v4, { base: v3, bytes: 4, depth: 2 }, stream('v4 on v3')),
              p.putDeflatedDelta(v4, { base: v3, bytes: 4, depth: 3 }, stream('v4 on v3')),
              // A base with no form.
              p.putDeflatedDelta(v1, { base: hashObject('blob', Buffer.from('absent')), bytes: 1, depth: 1 }, stream('v1 on absent')),
            ]);
          });
          expect(kept).toEqual([true, true, false, false, true, false]);
          const forms = await store.read(async (tx) => formReads(tx.project(project)).getDeflated([v1, v2, v3, v4]));
          expect(forms.map((form) => [form!.deflated, form!.delta?.depth ?? 0])).toEqual([
            [stream('v1 whole'), 0],
            [stream('v2 on v1'), 1],
            [stream('v3 on v2'), 2],
            [stream('v4 on v3'), 3],
          ]);
        });

        it('answers getDeflated in the order asked, with duplicates, undefined where there is no form, and copies', async () => {
          const project = freshProject();
          const [x, y] = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const ids = [p.putObject('blob', Buffer.from('x')), p.putObject('blob', Buffer.from('y')), p.putObject('blob', Buffer.from('no form'))];
            p.putDeflated(ids[0], deflateSync(Buffer.from('x')));
            p.putDeflated(ids[1], deflateSync(Buffer.from('y')));
            return ids;
          });
          const noForm = hashObject('blob', Buffer.from('no form'));
          const absent = hashObject('blob', Buffer.from('absent'));
          const forms = await store.read(async (tx) => formReads(tx.project(project)).getDeflated([y, noForm, x, absent, y]));
          expect(forms.map((form) => form?.deflated)).toEqual([deflateSync(Buffer.from('y')), undefined, deflateSync(Buffer.from('x')), undefined, deflateSync(Buffer.from('y'))]);
          forms[0]!.deflated.fill(0);
          expect(forms[4]!.deflated).toEqual(deflateSync(Buffer.from('y')));
          expect((await store.read(async (tx) => formReads(tx.project(project)).getDeflated([y])))[0]!.deflated).toEqual(deflateSync(Buffer.from('y')));
          expect(await store.read(async (tx) => formReads(tx.project(project)).getDeflated([]))).toEqual([]);
        });

        it('answers getDeflatedWithin with the forms of the first objects, read in order until their bytes reach the bound', async () => {
          const project = freshProject();
          // Incompressible bodies: a form is about as large as its body, so both ways of counting agree.
          const bodies = Array.from({ length: 4 }, () => randomBytes(1000));
          const big = randomBytes(5000);
          const [a, b, c, d, noForm] = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const ids = bodies.map((body) => p.putObject('blob', body));
            for (let i = 0; i < ids.length; i++) p.putDeflated(ids[i], deflateSync(bodies[i]));
            return [...ids, p.putObject('blob', big)];
          });
          const absent = hashObject('blob', Buffer.from('absent'));
          const within = (oids: Oid[], bytesMax: number) => store.read(async (tx) => formReads(tx.project(project)).getDeflatedWithin(oids, bytesMax));
          const all = await store.read(async (tx) => formReads(tx.project(project)).getDeflated([a, b, c, d]));
          expect(await within([a, b, c, d], 1e9)).toEqual(all);
          // At least one, however small the bound.
          expect(await within([a, b, c, d], 1)).toEqual(all.slice(0, 1));
          // The second object takes the bytes past the bound, so the read stops after it.
          expect(await within([a, b, c, d], 1500)).toEqual(all.slice(0, 2));
          // An object without a form counts its body's size; an absent one counts nothing.
          expect(await within([noForm, a], 3000)).toEqual([undefined]);
          expect(await within([noForm, a], 10_000)).toEqual([undefined, all[0]]);
          expect(await within([absent, a, b], 1)).toEqual([undefined, all[0]]);
          expect(await within([], 1)).toEqual([]);
          // Copies: changing one changes neither the store nor the others.
          const forms = await within([a, b], 1e9);
          forms[0]!.deflated.fill(0);
          expect(forms[1]!.deflated).toEqual(all[1]!.deflated);
          expect(await within([a], 1)).toEqual(all.slice(0, 1));
          // A write sees its own objects and forms.
          const body = randomBytes(1000);
          const seen = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const e = p.putObject('blob', body);
            p.putDeflated(e, deflateSync(body));
            return p.getDeflatedWithin([e, a, b], 1500);
          });
          expect(seen.map((form) => form?.deflated)).toEqual([deflateSync(body), all[0]!.deflated]);
        });
      }
    });

    if (options.packForms) {
      describe('objects kept as pack-ready forms alone', () => {
        it('read back whole, rebuilt through their delta chains, and count as stored everywhere', async () => {
          const project = freshProject();
          const versions = Array.from({ length: 6 }, (_, round) => Buffer.from(Array.from({ length: 200 }, (_, line) => `line ${line} ${line === round * 30 ? 'edited' : ''}`).join('\n')));
          const oids = versions.map((body) => hashObject('blob', body));
          const orphan = Buffer.from('orphan body, long enough');
          const results = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            // One after the other: each delta's base must already have its form.
            const out = [await p.putObjectAsForm(oids[0], 'blob', versions[0].length, { deflated: deflateSync(versions[0]) })];
            for (let index = 1; index < versions.length; index++) {
              const delta = createDelta(versions[index - 1], versions[index]);
              out.push(await p.putObjectAsForm(oids[index], 'blob', versions[index].length, { deflated: deflateSync(delta), delta: { base: oids[index - 1], bytes: delta.length, depth: index } }));
            }
            // A delta on a base without a form, or at the wrong depth, stores nothing.
            out.push(await p.putObjectAsForm(hashObject('blob', orphan), 'blob', orphan.length, { deflated: deflateSync(Buffer.from('x')), delta: { base: hashObject('blob', Buffer.from('none')), bytes: 1, depth: 1 } }));
            out.push(await p.putObjectAsForm(hashObject('blob', orphan), 'blob', orphan.length, { deflated: deflateSync(Buffer.from('x')), delta: { base: oids[0], bytes: 1, depth: 3 } }));
            await expect(settled(() => p.putObjectAsForm(hashObject('commit', orphan), 'commit', orphan.length, { deflated: deflateSync(orphan) }))).rejects.toThrow();
            return out;
          });
          expect(results).toEqual([true, true, true, true, true, true, false, false]);
          await store.read(async (tx) => {
            const p = formReads(tx.project(project));
            expect(await p.getObjects(oids)).toEqual(versions.map((body) => ({ type: 'blob', body })));
            expect(await p.getObjectsWithAnnex(oids)).toEqual(versions.map((body) => ({ type: 'blob', body, annex: null })));
            expect(await p.hasObjects(oids)).toEqual(oids.map(() => true));
            expect(await p.objectSizes(oids)).toEqual(versions.map((body) => body.length));
            // Kept as forms alone: the type is the form's.
            expect(await p.objectTypes(oids)).toEqual(oids.map(() => 'blob'));
            expect((await p.getDeflated(oids)).map((form) => form!.delta?.depth ?? 0)).toEqual([0, 1, 2, 3, 4, 5]);
            // A body handed out may be changed by its reader; the next read is not.
            (await p.getObjects([oids[5]]))[0]!.body.fill(0);
            expect((await p.getObjects([oids[5]]))[0]!.body).toEqual(versions[5]);
            expect(await p.findObjectsByPrefix(oidToHex(oids[3]).slice(0, 7), 10)).toEqual([oids[3]]);
            expect(await p.hasObjects([hashObject('blob', orphan), hashObject('commit', orphan)])).toEqual([false, false]);
            // Another project holds none of them.
            expect(await tx.project(freshProject()).getObjects([oids[2]])).toEqual([undefined]);
          });
        });
      });

      describe('a received pack\'s entries in one call (putObjectsAsForms)', () => {
        it('keeps each delta at 1 + its base\'s depth up to the limit, answers as putObjectAsForm would, and reads back', async () => {
          const project = freshProject();
          const { versions, oids, deltas, entry } = receivedVersions();
          // The first three in one write, so the rest build on forms the store holds.
          await store.write(async (tx) => formWrites(tx.project(project)).putObjectsAsForms([0, 1, 2].map(entry), 50));
          const orphan = Buffer.from('orphan body, long enough');
          const orphanOid = hashObject('blob', orphan);
          const stranger = Buffer.from('a blob stored whole before');
          const strangerOid = await store.write(async (tx) => tx.project(project).putObject('blob', stranger));
          const { answers, seen } = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const answers = await p.putObjectsAsForms(mixedEntries(entry, { oid: strangerOid, body: stranger }, { oid: orphanOid, body: orphan }), 4);
            await expect(settled(() => p.putObjectsAsForms([{ oid: orphanOid, type: 'commit', inflatedBytes: orphan.length, deflated: deflateSync(orphan), delta: null }], 5))).rejects.toThrow();
            const seen = (await p.getObjects([oids[4], oids[5], strangerOid])).map((object) => object?.body);
            return { answers, seen };
          });
          expect(answers).toEqual([true, true, false, false, true, true, false, false]);
          expect(seen).toEqual([versions[4], undefined, stranger]);
          await store.read(async (tx) => {
            const p = formReads(tx.project(project));
            expect(await p.getObjects(oids.slice(0, 5))).toEqual(versions.slice(0, 5).map((body) => ({ type: 'blob', body })));
            expect((await p.getDeflated(oids.slice(0, 5))).map((form) => form!.delta?.depth ?? 0)).toEqual([0, 1, 2, 3, 4]);
            expect((await p.getDeflated([oids[1]]))[0]!.deflated).toEqual(deflateSync(deltas[1]!));
            expect(await p.hasObjects([oids[5], oids[6], orphanOid])).toEqual([false, false, false]);
            expect(await p.getObjects([strangerOid])).toEqual([{ type: 'blob', body: stranger }]);
          });
        });
      });

      if (options.putFormsAlone) {
        describe('a received pack\'s entries in writes of their own (putFormsAlone)', () => {
          it('answers as putObjectsAsForms, deltas at 1 + their base\'s depth across writes, and a refusal stores nothing', async () => {
            const project = freshProject();
            const { versions, oids, deltas, entry } = receivedVersions();
            expect(await store.putFormsAlone!(project, [0, 1, 2].map(entry), 50)).toEqual([true, true, true]);
            const orphan = Buffer.from('orphan body, long enough');
            const orphanOid = hashObject('blob', orphan);
            const stranger = Buffer.from('a blob stored whole before');
            const strangerOid = await store.write(async (tx) => tx.project(project).putObject('blob', stranger));
            const answers = await store.putFormsAlone!(project, mixedEntries(entry, { oid: strangerOid, body: stranger }, { oid: orphanOid, body: orphan }), 4);
            expect(answers).toEqual([true, true, false, false, true, true, false, false]);
            // A commit is refused whole: nothing of the call is stored.
            const lone = Buffer.from('a blob in a refused call');
            await expect(
              settled(() => store.putFormsAlone!(project, [{ oid: hashObject('blob', lone), type: 'blob', inflatedBytes: lone.length, deflated: deflateSync(lone), delta: null }, { oid: orphanOid, type: 'commit', inflatedBytes: orphan.length, deflated: deflateSync(orphan), delta: null }], 5)),
            ).rejects.toThrow();
            await store.read(async (tx) => {
              const p = formReads(tx.project(project));
              expect(await p.getObjects(oids.slice(0, 5))).toEqual(versions.slice(0, 5).map((body) => ({ type: 'blob', body })));
              expect((await p.getDeflated(oids.slice(0, 5))).map((form) => form!.delta?.depth ?? 0)).toEqual([0, 1, 2, 3, 4]);
              expect((await p.getDeflated([oids[1]]))[0]!.deflated).toEqual(deflateSync(deltas[1]!));
              expect(await p.hasObjects([oids[5], oids[6], orphanOid, hashObject('blob', lone)])).toEqual([false, false, false, false]);
              expect(await p.getObjects([strangerOid])).toEqual([{ type: 'blob', body: stranger }]);
            });
          });

          it('stores a commit whole and indexed with its entry as its form, a delta on a commit put before it too; one stored before keeps what it had', async () => {
            const project = freshProject();
            const commit = (message: string) => commitBody(EMPTY_TREE_OID, [], 1, `${message}\n`);
            const first = commit(`first ${'x'.repeat(100)}`);
            const firstOid = hashObject('commit', first);
            const second = Buffer.concat([first.subarray(0, first.length - 1), Buffer.from(' and more\n')]);
            const secondOid = hashObject('commit', second);
            const before = commit('stored whole before');
            const beforeOid = await store.write(async (tx) => tx.project(project).putObject('commit', before));
            const delta = createDelta(first, second);
            const answers = await store.putFormsAlone!(
              project,
              [
                { oid: firstOid, type: 'commit', inflatedBytes: first.length, deflated: deflateSync(first), delta: null, body: first },
                { oid: secondOid, type: 'commit', inflatedBytes: second.length, deflated: deflateSync(delta), delta: { base: firstOid, bytes: delta.length }, body: second },
                { oid: beforeOid, type: 'commit', inflatedBytes: before.length, deflated: deflateSync(before), delta: null, body: before },
              ],
              50,
            );
            expect(answers).toEqual([true, true, true]);
            await store.read(async (tx) => {
              const p = formReads(tx.project(project));
              expect(await p.getObjects([firstOid, secondOid])).toEqual([{ type: 'commit', body: first }, { type: 'commit', body: second }]);
              expect((await tx.project(project).getCommitInfos([firstOid, secondOid])).map((info) => info?.generation)).toEqual([1, 1]);
              const forms = await p.getDeflated([firstOid, secondOid, beforeOid]);
              // The one stored whole before had no form, and answered "there": none is added.
              expect(forms.map((form) => form?.delta?.depth ?? (form ? 0 : null))).toEqual([0, 1, null]);
              expect(forms[1]!.deflated).toEqual(deflateSync(delta));
              expect(await p.getObjects([beforeOid])).toEqual([{ type: 'commit', body: before }]);
            });
          });

          it('held (holdForms): the same answers and depths across writes, a commit\'s form too, read once settled; let go without keep', async () => {
            const project = freshProject();
            const { versions, oids, deltas, entry } = receivedVersions();
            store.holdForms?.(project);
            expect(await store.putFormsAlone!(project, [0, 1, 2].map(entry), 50)).toEqual([true, true, true]);
            // A duplicate across writes, a delta on a base held by an earlier write, and one over the depth limit.
            expect(await store.putFormsAlone!(project, [entry(2), entry(3), entry(4)], 50)).toEqual([true, true, true]);
            expect(await store.putFormsAlone!(project, [entry(5), entry(6)], 5)).toEqual([true, false]);
            const commit = Buffer.from(`tree ${EMPTY_TREE_HEX}\nauthor A <a@example.com> 1 +0000\ncommitter A <a@example.com> 1 +0000\n\nheld\n`);
            const commitOid = await store.write(async (tx) => {
              const p = formWrites(tx.project(project));
              const oid = p.putObject('commit', commit);
              p.putDeflated(oid, deflateSync(commit));
              return oid;
            });
            await store.settleForms?.(project, true);
            await store.read(async (tx) => {
              const p = formReads(tx.project(project));
              expect(await p.getObjects(oids.slice(0, 6))).toEqual(versions.slice(0, 6).map((body) => ({ type: 'blob', body })));
              expect((await p.getDeflated(oids.slice(0, 7))).map((form) => (form ? (form.delta?.depth ?? 0) : null))).toEqual([0, 1, 2, 3, 4, 5, null]);
              expect((await p.getDeflated([oids[3]]))[0]!.deflated).toEqual(deflateSync(deltas[3]!));
              expect((await p.getDeflated([commitOid]))[0]!.deflated).toEqual(deflateSync(commit));
            });
            if (!store.holdForms) return;
            // Let go: nothing of it is read, then or after another write.
            const other = freshProject();
            store.holdForms(other);
            expect(await store.putFormsAlone!(other, [0, 1].map(entry), 50)).toEqual([true, true]);
            await store.settleForms!(other, false);
            await store.write(async (tx) => void tx.project(other).putObject('blob', Buffer.from('after')));
            await store.read(async (tx) => {
              expect(await formReads(tx.project(other)).getDeflated([oids[0], oids[1]])).toEqual([undefined, undefined]);
            });
          });
        });
      }

      describe('many pack-ready forms in one write (a seed, a push)', () => {
        it('read back inside the write and after it, across several hundred KB, and an aborted write leaves none', async () => {
          const project = freshProject();
          // Incompressible bodies (about 2 KB deflated each, 600 KB in all), and a delta chain among them.
          const bodies = Array.from({ length: 300 }, (_, index) => Buffer.concat([Buffer.from(`body ${index}\n`), randomBytes(2000)]));
          const oids = bodies.map((body) => hashObject('blob', body));
          const edited = Buffer.concat([bodies[0], Buffer.from('one more line\n')]);
          const editedOid = hashObject('blob', edited);
          const seen = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            // Independent puts side by side, as a receiver hands over a pack's entries.
            const stored = await Promise.all(bodies.map((body, index) => p.putObjectAsForm(oids[index], 'blob', body.length, { deflated: deflateSync(body) })));
            expect(stored).toEqual(bodies.map(() => true));
            const delta = createDelta(bodies[0], edited);
            expect(await p.putObjectAsForm(editedOid, 'blob', edited.length, { deflated: deflateSync(delta), delta: { base: oids[0], bytes: delta.length, depth: 1 } })).toBe(true);
            // Putting a stored object again answers true and keeps its first form.
            expect(await p.putObjectAsForm(oids[7], 'blob', bodies[7].length + 1, { deflated: deflateSync(Buffer.from('other')) })).toBe(true);
            const [form] = await p.getDeflated([oids[7]]);
            expect([form?.inflatedBytes, form?.deflated]).toEqual([bodies[7].length, deflateSync(bodies[7])]);
            return (await p.getObjects([oids[0], oids[299], editedOid])).map((object) => object?.body);
          });
          expect(seen).toEqual([bodies[0], bodies[299], edited]);
          await store.read(async (tx) => {
            const p = formReads(tx.project(project));
            const [objects, sizes, forms] = await Promise.all([p.getObjects(oids), p.objectSizes(oids), p.getDeflated(oids)]);
            bodies.forEach((body, index) => {
              expect(objects[index]?.body.equals(body)).toBe(true);
              expect(sizes[index]).toBe(body.length);
              expect(forms[index]!.deflated).toEqual(deflateSync(body));
            });
            expect((await p.getObjects([editedOid]))[0]?.body).toEqual(edited);
            expect((await p.getDeflated([editedOid]))[0]?.delta?.depth).toBe(1);
          });

          const lost = Array.from({ length: 60 }, (_, index) => Buffer.from(`lost ${index} `.repeat(50)));
          await expect(
            store.write(async (tx) => {
              const p = formWrites(tx.project(project));
              for (const body of lost) await p.putObjectAsForm(hashObject('blob', body), 'blob', body.length, { deflated: deflateSync(body) });
              throw new Error('abort');
            }),
          ).rejects.toThrow('abort');
          expect(await store.read(async (tx) => tx.project(project).hasObjects(lost.map((body) => hashObject('blob', body))))).toEqual(lost.map(() => false));
          // The forms go with their project.
          while ((await store.dropProjectKeys(project, 1000)) > 0);
          await store.read(async (tx) => {
            const p = formReads(tx.project(project));
            expect(await p.hasObjects([oids[0]])).toEqual([false]);
            expect(await p.getDeflated([oids[0], editedOid])).toEqual([undefined, undefined]);
            expect(await p.findObjectsByPrefix('', 10)).toEqual([]);
          });
        });
      });
    }

    if (options.packForms) {
      describe('the backlog of objects without a pack-ready form', () => {
        it('pages through every project in (project, id) order, listing the objects without a form, looking at most `limit` per page', async () => {
          const [project, other] = [freshProject(), freshProject()];
          const bodies = Array.from({ length: 12 }, (_, index) => Buffer.from(`backlog ${project} ${index}`));
          const formOnly = Buffer.from(`backlog ${project}: kept as its form alone`);
          const ids = await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            const stored = bodies.map((body) => p.putObject('blob', body));
            for (const [index, oid] of stored.entries()) if (index % 2 === 0) p.putDeflated(oid, deflateSync(bodies[index]));
            expect(await p.putObjectAsForm(hashObject('blob', formOnly), 'blob', formOnly.length, { deflated: deflateSync(formOnly) })).toBe(true);
            return stored;
          });
          const otherId = await store.write(async (tx) => tx.project(other).putObject('commit', commitBody(EMPTY_TREE_OID, [], 1_700_000_000, 'backlog\n')));

          const listed: Array<{ project: number; oid: Oid }> = [];
          let after: { project: number; oid: Oid } | null = null;
          let pages = 0;
          do {
            const page: Awaited<ReturnType<NonNullable<AsyncStore['listUndeflated']>>> = await store.listUndeflated!(after, 5);
            expect(page.undeflated.length).toBeLessThanOrEqual(5);
            listed.push(...page.undeflated);
            after = page.next;
            pages++;
          } while (after !== null);
          const key = ({ project: number, oid }: { project: number; oid: Oid }) => `${number.toString(16).padStart(8, '0')}/${oidToHex(oid)}`;
          const keys = listed.map(key);
          expect(keys).toEqual([...keys].sort());
          expect(new Set(keys).size).toBe(keys.length);
          const mine = listed.filter((entry) => entry.project === project || entry.project === other).map(key);
          const expected = [...ids.filter((_, index) => index % 2 === 1).map((oid) => ({ project, oid })), { project: other, oid: otherId }].map(key).sort();
          expect(mine).toEqual(expected);
          // Pages look at `limit` objects each: at least one page per five of ours.
          expect(pages).toBeGreaterThanOrEqual(Math.ceil(13 / 5));

          // Once they have forms, they are listed no more.
          await store.write(async (tx) => {
            const p = formWrites(tx.project(project));
            for (const [index, oid] of ids.entries()) if (index % 2 === 1) p.putDeflated(oid, deflateSync(bodies[index]));
          });
          const page = await store.listUndeflated!({ project, oid: Buffer.alloc(20) }, 100);
          expect(page.undeflated.filter((entry) => entry.project === project)).toEqual([]);
        });
      });
    }

    describe('records', () => {
      it('put, get, replace, delete and list by prefix in key order', async () => {
        const prefix = `asyncContract/${freshProject()}/`;
        const keys = ['b', 'a', 'c/1', 'c/2', 'ab'].map((k) => prefix + k);
        const tail = (listed: Array<{ key: string }>) => listed.map((r) => r.key.slice(prefix.length));
        await store.write(async (tx) => {
          keys.forEach((key, index) => tx.putRecord(key, { index, nested: { list: [index, 'x'] } }));
          tx.putRecord(`${prefix.slice(0, -1)}x`, 'outside the prefix');
        });
        await store.read(async (tx) => {
          expect(await tx.getRecord(keys[0])).toEqual({ index: 0, nested: { list: [0, 'x'] } });
          expect(await tx.getRecord(`${prefix}missing`)).toBeUndefined();
          const listed = await tx.listRecords<{ index: number }>(prefix);
          expect(tail(listed)).toEqual(['a', 'ab', 'b', 'c/1', 'c/2']);
          expect(listed[0].value.index).toBe(1);
          expect(tail(await tx.listRecords(prefix, { reverse: true }))).toEqual(['c/2', 'c/1', 'b', 'ab', 'a']);
          expect(tail(await tx.listRecords(prefix, { limit: 2 }))).toEqual(['a', 'ab']);
          expect(tail(await tx.listRecords(prefix, { after: `${prefix}ab` }))).toEqual(['b', 'c/1', 'c/2']);
          expect(tail(await tx.listRecords(prefix, { reverse: true, after: `${prefix}b`, limit: 1 }))).toEqual(['ab']);
          expect(tail(await tx.listRecords(`${prefix}c/`))).toEqual(['c/1', 'c/2']);
        });
        await store.write(async (tx) => {
          tx.putRecord(keys[0], 'replaced');
          tx.deleteRecord(keys[1]);
          tx.deleteRecord(`${prefix}never-existed`);
        });
        await store.read(async (tx) => {
          expect(await tx.getRecord(keys[0])).toBe('replaced');
          expect(await tx.getRecord(keys[1])).toBeUndefined();
          expect((await tx.listRecords(prefix)).length).toBe(4);
        });
      });

      it('list buffered puts and deletes inside the write, merged in key order with what is committed', async () => {
        const prefix = `asyncContract/${freshProject()}/`;
        await store.write(async (tx) => {
          for (const key of ['b', 'd', 'f']) tx.putRecord(prefix + key, `committed ${key}`);
        });
        const seen = await store.write(async (tx) => {
          tx.putRecord(`${prefix}a`, 'buffered a');
          tx.putRecord(`${prefix}d`, 'buffered d');
          tx.putRecord(`${prefix}e`, 'buffered e');
          tx.deleteRecord(`${prefix}b`);
          return {
            forward: await tx.listRecords<string>(prefix),
            reverse: (await tx.listRecords<string>(prefix, { reverse: true, limit: 3 })).map((r) => r.key.slice(prefix.length)),
            after: (await tx.listRecords<string>(prefix, { after: `${prefix}a`, limit: 2 })).map((r) => r.key.slice(prefix.length)),
          };
        });
        expect(seen.forward.map((r) => [r.key.slice(prefix.length), r.value])).toEqual([
          ['a', 'buffered a'],
          ['d', 'buffered d'],
          ['e', 'buffered e'],
          ['f', 'committed f'],
        ]);
        expect(seen.reverse).toEqual(['f', 'e', 'd']);
        expect(seen.after).toEqual(['d', 'e']);
        expect((await store.read(async (tx) => tx.listRecords<string>(prefix))).map((r) => r.value)).toEqual(['buffered a', 'buffered d', 'buffered e', 'committed f']);
      });
    });

    describe('dropProject', () => {
      async function populate(project: number, tag: string) {
        return store.write(async (tx) => {
          const p = tx.project(project);
          const blob = p.putObject('blob', Buffer.from(`shared content`));
          const own = p.putObject('blob', Buffer.from(`content of ${tag}`));
          const tree = p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid: blob }]));
          const commit = p.putObject('commit', commitBody(tree, [], 1_000, `${tag}\n`));
          p.putCommitObjects(commit, Buffer.concat([Buffer.from([2]), tree]));
          await p.casRef('refs/heads/main', null, commit);
          p.putWorkingTree('main', { tree, locks: ['f'] });
          await p.bumpVersion();
          tx.putRecord(`asyncContract/${project}/meta`, tag);
          return { blob, own, tree, commit };
        });
      }

      it('frees every object, commit, ref, node and version of one project and nothing of another', async () => {
        // Neighbours on both sides of the dropped project's key range.
        const [before, dropped, after] = [freshProject(), freshProject(), freshProject()];
        const kept = await populate(before, 'before');
        const gone = await populate(dropped, 'dropped');
        await populate(after, 'after');
        // A few entries per call, so the drop takes several transactions and the limit is exercised.
        let calls = 0;
        while ((await store.dropProjectKeys(dropped, 3)) > 0) calls++;
        expect(calls).toBeGreaterThan(2);
        await store.read(async (tx) => {
          const p = tx.project(dropped);
          expect(await p.hasObjects(Object.values(gone))).toEqual([false, false, false, false]);
          expect(await p.findObjectsByPrefix('', 100)).toEqual([]);
          expect(await p.getCommitInfos([gone.commit])).toEqual([undefined]);
          expect(await p.getCommitObjects(gone.commit)).toBeUndefined();
          expect(await p.listRefs('')).toEqual([]);
          expect(await p.getWorkingTree('main')).toBeUndefined();
          expect(await p.getVersion()).toBe(0);
          for (const project of [before, after]) {
            const q = tx.project(project);
            expect((await q.findObjectsByPrefix('', 100)).length).toBe(4);
            expect(await q.hasObjects([kept.blob])).toEqual([true]);
            const head = (await q.getRef('refs/heads/main'))!;
            expect((await q.getCommitInfos([head]))[0]).toBeDefined();
            expect(await q.getCommitObjects(head)).toHaveLength(21);
            expect((await q.getWorkingTree('main'))?.locks).toEqual(['f']);
            expect(await q.getVersion()).toBe(1);
            // Records belong to the caller, not to the project; dropProjectKeys leaves them.
            expect(await tx.getRecord(`asyncContract/${project}/meta`)).toBeDefined();
          }
        });
        // The dropped project's number can be used again from scratch.
        const again = await populate(dropped, 'again');
        await store.read(async (tx) => {
          expect((await tx.project(dropped).findObjectsByPrefix('', 100)).length).toBe(4);
          expect(await tx.project(dropped).hasObjects([again.own])).toEqual([true]);
          expect(await tx.project(dropped).getVersion()).toBe(1);
        });
      });

      it('drops a project with many keys at most keysMax a transaction', async () => {
        const project = freshProject();
        const keep = freshProject();
        await store.write(async (tx) => {
          for (let i = 0; i < 3000; i++) tx.project(project).putObject('blob', Buffer.from(`many ${i}`));
          tx.project(keep).putObject('blob', Buffer.from('keep'));
        });
        const removed: number[] = [];
        for (let count = -1; count !== 0; ) removed.push((count = await store.dropProjectKeys(project, 1000)));
        expect(removed).toEqual([1000, 1000, 1000, 0]);
        await store.read(async (tx) => {
          expect(await tx.project(project).findObjectsByPrefix('', 10)).toEqual([]);
          expect((await tx.project(keep).findObjectsByPrefix('', 10)).length).toBe(1);
        });
      });
    });

    describe('buffered writes', () => {
      it('sees its own puts, ref moves, working trees, records and version bump, which a reader beside it does not see until the commit', async () => {
        const project = freshProject();
        const prefix = `asyncContract/${project}/`;
        const head = hashObject('commit', Buffer.from('head'));
        const oldTree: WorkingTreeState = { tree: EMPTY_TREE_OID, locks: ['a'] };
        await store.write(async (tx) => {
          const p = tx.project(project);
          await p.casRef('refs/heads/main', null, head);
          p.putWorkingTree('old', oldTree);
          tx.putRecord(`${prefix}old`, 'old');
          await p.bumpVersion();
        });
        const body = Buffer.from('buffered');
        const blob = hashObject('blob', body);
        const commit = commitBody(EMPTY_TREE_OID, [head], 2_000);
        const commitOid = hashObject('commit', commit);
        const newTree: WorkingTreeState = { tree: hashObject('tree', Buffer.from('new tree')), locks: ['n'] };
        const view = async (tx: Reader) => {
          const p = tx.project(project);
          return {
            objects: await p.getObjects([blob, commitOid]),
            has: await p.hasObjects([blob, commitOid]),
            sizes: await p.objectSizes([blob, commitOid]),
            found: await p.findObjectsByPrefix(oidToHex(blob), 10),
            parents: (await p.getCommitInfos([commitOid]))[0]?.parents,
            main: await p.getRef('refs/heads/main'),
            created: await p.getRef('refs/heads/new'),
            refs: await p.listRefs('refs/heads/'),
            trees: [await p.getWorkingTree('old'), await p.getWorkingTree('new')],
            records: [await tx.getRecord(`${prefix}old`), await tx.getRecord(`${prefix}new`)],
            listed: (await tx.listRecords(prefix)).map((r) => r.key.slice(prefix.length)),
            version: await p.getVersion(),
          };
        };
        const committed = {
          objects: [undefined, undefined],
          has: [false, false],
          sizes: [undefined, undefined],
          found: [],
          parents: undefined,
          main: head,
          created: undefined,
          refs: [{ name: 'refs/heads/main', oid: head }],
          trees: [oldTree, undefined],
          records: ['old', undefined],
          listed: ['old'],
          version: 1,
        };
        const written = {
          objects: [
            { type: 'blob', body },
            { type: 'commit', body: commit },
          ],
          has: [true, true],
          sizes: [body.length, commit.length],
          found: [blob],
          parents: [head],
          main: commitOid,
          created: blob,
          refs: [
            { name: 'refs/heads/main', oid: commitOid },
            { name: 'refs/heads/new', oid: blob },
          ],
          trees: [undefined, newTree],
          records: [undefined, { n: 2 }],
          listed: ['new'],
          version: 2,
        };
        expect(await store.read(view)).toEqual(committed);
        const seen = await store.write(async (tx) => {
          const p = tx.project(project);
          p.putObject('blob', body);
          p.putObject('commit', commit);
          await p.casRef('refs/heads/main', head, commitOid);
          await p.casRef('refs/heads/new', null, blob);
          p.putWorkingTree('new', newTree);
          p.deleteWorkingTree('old');
          tx.putRecord(`${prefix}new`, { n: 2 });
          tx.deleteRecord(`${prefix}old`);
          const version = await p.bumpVersion();
          // Awaited inside the callback, so this reader runs while the writes are still only buffered.
          const outside = await store.read(view);
          return { version, inside: await view(tx), outside };
        });
        expect(seen.version).toBe(2);
        expect(seen.inside).toEqual(written);
        expect(seen.outside).toEqual(committed);
        expect(await store.read(view)).toEqual(written);
      });

      it('leaves nothing when the callback throws after awaiting reads and making writes', async () => {
        const project = freshProject();
        const prefix = `asyncContract/${project}/`;
        const head = hashObject('commit', Buffer.from('head'));
        const kept: WorkingTreeState = { tree: EMPTY_TREE_OID, locks: ['kept'] };
        await store.write(async (tx) => {
          const p = tx.project(project);
          p.putObject('blob', Buffer.from('committed'));
          await p.casRef('refs/heads/main', null, head);
          p.putWorkingTree('kept', kept);
          tx.putRecord(`${prefix}kept`, 'kept');
          await p.bumpVersion();
        });
        const snapshot = async (tx: Reader) => {
          const p = tx.project(project);
          return {
            objects: hexes(await p.findObjectsByPrefix('', 100)).sort(),
            refs: await p.listRefs(''),
            trees: [await p.getWorkingTree('kept'), await p.getWorkingTree('doomed')],
            records: await tx.listRecords(prefix),
            version: await p.getVersion(),
          };
        };
        const before = await store.read(snapshot);
        const doomedCommit = commitBody(EMPTY_TREE_OID, [head], 3_000, 'doomed\n');
        const doomedOid = hashObject('commit', doomedCommit);
        await expectBoom(
          store.write(async (tx) => {
            const p = tx.project(project);
            const current = await p.getRef('refs/heads/main');
            await p.getVersion();
            await tx.getRecord(`${prefix}kept`);
            p.putObject('blob', Buffer.from('doomed'));
            p.putObject('commit', doomedCommit);
            p.putCommitObjects(doomedOid, Buffer.concat([Buffer.from([2]), EMPTY_TREE_OID]));
            await p.casRef('refs/heads/main', current ?? null, doomedOid);
            await p.casRef('refs/heads/doomed', null, doomedOid);
            p.putWorkingTree('doomed', { tree: EMPTY_TREE_OID, locks: [] });
            p.deleteWorkingTree('kept');
            tx.putRecord(`${prefix}doomed`, 'x');
            tx.deleteRecord(`${prefix}kept`);
            await p.bumpVersion();
            // More reads after the writes, so the throw comes with a full buffer and reads in flight behind it.
            expect((await p.getObjects([doomedOid]))[0]?.type).toBe('commit');
            await tx.listRecords(prefix);
            throw new Boom('rolled back');
          }),
        );
        expect(await store.read(snapshot)).toEqual(before);
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.hasObjects([doomedOid, hashObject('blob', Buffer.from('doomed'))])).toEqual([false, false]);
          expect(await p.getCommitInfos([doomedOid])).toEqual([undefined]);
          expect(await p.getCommitObjects(doomedOid)).toBeUndefined();
        });
        expect(before.version).toBe(1);
        expect(before.trees).toEqual([kept, undefined]);
      });

      it('rejects casRef at once, against committed and own moves alike, and commits the rest when the callback catches the refusal', async () => {
        const project = freshProject();
        const [a, b, c] = ['a', 'b', 'c'].map((text) => hashObject('commit', Buffer.from(text)));
        await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, a));
        const refusals = await store.write(async (tx) => {
          const p = tx.project(project);
          const caught = (promise: Promise<void>) => promise.then(() => undefined, (error: unknown) => error);
          // Against the committed value.
          const stale = await caught(p.casRef('refs/heads/main', b, c));
          await p.casRef('refs/heads/main', a, b);
          // Against this transaction's own move: the old value no longer matches, the new one does.
          const moved = await caught(p.casRef('refs/heads/main', a, c));
          await p.casRef('refs/heads/feature', null, c);
          const created = await caught(p.casRef('refs/heads/feature', null, a));
          await p.casRef('refs/heads/feature', c, null);
          const deleted = await caught(p.casRef('refs/heads/feature', c, a));
          tx.putRecord(`asyncContract/${project}/after`, 'kept');
          return { stale, moved, created, deleted };
        });
        for (const [refusal, ref, current] of [
          [refusals.stale, 'refs/heads/main', a],
          [refusals.moved, 'refs/heads/main', b],
          [refusals.created, 'refs/heads/feature', c],
          [refusals.deleted, 'refs/heads/feature', null],
        ] as Array<[unknown, string, Oid | null]>) {
          expect(refusal).toBeInstanceOf(RefChangedError);
          expect((refusal as RefChangedError).ref).toBe(ref);
          expect((refusal as RefChangedError).current).toEqual(current);
        }
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getRef('refs/heads/main')).toEqual(b);
          expect(await p.getRef('refs/heads/feature')).toBeUndefined();
          expect(await tx.getRecord(`asyncContract/${project}/after`)).toBe('kept');
        });
      });

      it('serialises 50 concurrent writers moving one branch from the value each read: every move lands, each on the one before', async () => {
        const project = freshProject();
        const outcomes = await Promise.all(
          Array.from({ length: 50 }, (_, index) =>
            store.write(async (tx) => {
              const p = tx.project(project);
              const saw = (await p.getRef('refs/heads/main')) ?? null;
              const wrote = hashObject('commit', Buffer.from(`writer ${index}`));
              await p.casRef('refs/heads/main', saw, wrote);
              return { saw, wrote, version: await p.bumpVersion() };
            }),
          ),
        );
        // The version each writer got orders them; each must have seen the ref its predecessor wrote.
        const ordered = [...outcomes].sort((x, y) => x.version - y.version);
        expect(ordered.map((o) => o.version)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        ordered.forEach((outcome, index) => expect(outcome.saw).toEqual(index === 0 ? null : ordered[index - 1].wrote));
        await store.read(async (tx) => {
          expect(await tx.project(project).getRef('refs/heads/main')).toEqual(ordered[49].wrote);
          expect(await tx.project(project).getVersion()).toBe(50);
        });
      });

      it('resolves write with the callback value, stores what puts were given, and hands out copies', async () => {
        const project = freshProject();
        expect(await store.write(async () => 42)).toBe(42);
        expect(await store.write(async () => undefined)).toBeUndefined();
        const result = { nested: [1, 'two'] };
        expect(await store.write(async () => result)).toBe(result);

        const body = Buffer.from('kept as given');
        const withId = Buffer.from('kept with its id');
        const withIdOid = hashObject('blob', withId);
        const treeBody = encodeTree([{ name: 'f', mode: '100644', oid: hashObject('blob', body) }]);
        const annex = Buffer.from([1, 2, 3, 4]);
        const similar = Buffer.from(EMPTY_BLOB_OID);
        const inside = await store.write(async (tx) => {
          const p = tx.project(project);
          const oid = p.putObject('blob', body, undefined, similar);
          p.putObjectWithId(withIdOid, 'blob', withId);
          const tree = p.putObject('tree', treeBody, annex);
          // Bodies and annexes belong to the transaction once put (asyncTypes.ts); the similarity
          // hint is only a hint, which its writer may reuse at once.
          similar.fill(0x2a);
          const [first] = await p.getObjects([oid]);
          first!.body.fill(0x2b);
          return { oid, tree, objects: await p.getObjectsWithAnnex([oid, withIdOid, tree]) };
        });
        const expected = [
          { type: 'blob', body: Buffer.from('kept as given'), annex: null },
          { type: 'blob', body: Buffer.from('kept with its id'), annex: null },
          { type: 'tree', body: encodeTree([{ name: 'f', mode: '100644', oid: hashObject('blob', Buffer.from('kept as given')) }]), annex: Buffer.from([1, 2, 3, 4]) },
        ];
        expect(inside.objects).toEqual(expected);
        await store.read(async (tx) => {
          const p = tx.project(project);
          const asked = [inside.oid, withIdOid, inside.tree];
          const first = await p.getObjectsWithAnnex(asked);
          expect(first).toEqual(expected);
          for (const object of first) {
            object!.body.fill(0);
            object!.annex?.fill(0);
          }
          expect(await p.getObjectsWithAnnex(asked)).toEqual(expected);
          (await p.getObject(inside.oid))!.body.fill(0);
          expect(await p.getObjects([inside.oid])).toEqual([{ type: 'blob', body: Buffer.from('kept as given') }]);
        });
      });

      it('shows readers each committed write whole: a listing never holds half of one', async () => {
        const prefix = `asyncContract/${freshProject()}/`;
        const writes = Array.from({ length: 20 }, (_, n) =>
          store.write(async (tx) => {
            tx.putRecord(`${prefix}a`, n);
            tx.putRecord(`${prefix}b`, n);
          }),
        );
        const reads = Array.from({ length: 40 }, () => store.read(async (tx) => (await tx.listRecords<number>(prefix)).map((r) => r.value)));
        await Promise.all(writes);
        for (const values of await Promise.all(reads)) {
          if (values.length > 0) expect(values).toEqual([values[0], values[0]]);
        }
        expect((await store.read(async (tx) => tx.listRecords<number>(prefix))).length).toBe(2);
      });
    });

    describe('batched reads', () => {
      it('answer in the order asked, with undefined for missing ids, duplicates included, committed and buffered alike', async () => {
        const project = freshProject();
        const xBody = Buffer.from('x body');
        const yBody = Buffer.from('y, a longer body');
        const commit = commitBody(EMPTY_TREE_OID, [], 7_000);
        const [x, y, c] = await store.write(async (tx) => {
          const p = tx.project(project);
          return [p.putObject('blob', xBody), p.putObject('blob', yBody, Buffer.from('y annex')), p.putObject('commit', commit)];
        });
        const absent = hashObject('blob', Buffer.from('absent'));
        const X = { type: 'blob', body: xBody };
        const Y = { type: 'blob', body: yBody };
        const C = { type: 'commit', body: commit };
        const asked = [y, absent, x, y, c, absent, x];
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getObjects(asked)).toEqual([Y, undefined, X, Y, C, undefined, X]);
          expect(await p.getObjectsWithAnnex(asked)).toEqual([
            { ...Y, annex: Buffer.from('y annex') },
            undefined,
            { ...X, annex: null },
            { ...Y, annex: Buffer.from('y annex') },
            { ...C, annex: null },
            undefined,
            { ...X, annex: null },
          ]);
          expect(await p.hasObjects(asked)).toEqual([true, false, true, true, true, false, true]);
          expect(await p.objectSizes(asked)).toEqual([yBody.length, undefined, xBody.length, yBody.length, commit.length, undefined, xBody.length]);
          const infos = await p.getCommitInfos([c, x, absent, c]);
          expect(infos.map((info) => info && { tree: info.tree, parents: info.parents, commitTime: info.commitTime, generation: info.generation })).toEqual([
            { tree: EMPTY_TREE_OID, parents: [], commitTime: 7_000, generation: 1 },
            undefined,
            undefined,
            { tree: EMPTY_TREE_OID, parents: [], commitTime: 7_000, generation: 1 },
          ]);
          // Two entries for one id are two copies: changing one leaves the other.
          const twice = await p.getObjects([x, x]);
          twice[0]!.body.fill(0);
          expect(twice[1]!.body).toEqual(xBody);
          for (const answer of await Promise.all([p.getObjects([]), p.getObjectsWithAnnex([]), p.hasObjects([]), p.objectSizes([]), p.getCommitInfos([])])) expect(answer).toEqual([]);
        });
        const zBody = Buffer.from('z, only buffered');
        const inside = await store.write(async (tx) => {
          const p = tx.project(project);
          const z = p.putObject('blob', zBody);
          const order = [z, x, absent, z, y];
          return { objects: await p.getObjects(order), has: await p.hasObjects(order), sizes: await p.objectSizes(order) };
        });
        const Z = { type: 'blob', body: zBody };
        expect(inside).toEqual({
          objects: [Z, X, undefined, Z, Y],
          has: [true, true, false, true, true],
          sizes: [zBody.length, xBody.length, undefined, zBody.length, yBody.length],
        });
      });
    });

    describe('visitObjects', () => {
      it(`is offered ${options.visitObjects ? '' : 'neither '}in read ${options.visitObjects ? 'and' : 'nor'} write transactions`, async () => {
        const project = freshProject();
        expect(await store.read(async (tx) => typeof tx.project(project).visitObjects === 'function')).toBe(options.visitObjects);
        expect(await store.write(async (tx) => typeof tx.project(project).visitObjects === 'function')).toBe(options.visitObjects);
      });

      if (options.visitObjects) {
        /** What each visit saw (copied while it could look), and how many the call said it visited. */
        async function visits(p: ProjectReads, oids: Oid[], stopAfter = Number.POSITIVE_INFINITY) {
          const seen: Array<{ index: number; type?: string; body?: Buffer }> = [];
          const count = await p.visitObjects!(oids, (object, index) => {
            seen.push({ index, ...(object ? { type: object.type, body: Buffer.from(object.body) } : {}) });
            return seen.length < stopAfter;
          });
          return { count, seen };
        }

        it('hands each object in the order asked (undefined where missing) and stops after a visit that says so', async () => {
          const project = freshProject();
          const xBody = Buffer.from('x visited');
          const yBody = Buffer.from('y visited, with an annex');
          const [x, y] = await store.write(async (tx) => {
            const p = tx.project(project);
            return [p.putObject('blob', xBody), p.putObject('blob', yBody, Buffer.from('annex'))];
          });
          const absent = hashObject('blob', Buffer.from('never stored'));
          await store.read(async (tx) => {
            const p = tx.project(project);
            expect(await visits(p, [y, absent, x, y])).toEqual({
              count: 4,
              seen: [
                { index: 0, type: 'blob', body: yBody },
                { index: 1 },
                { index: 2, type: 'blob', body: xBody },
                { index: 3, type: 'blob', body: yBody },
              ],
            });
            expect(await visits(p, [x, y, x], 2)).toEqual({ count: 2, seen: [{ index: 0, type: 'blob', body: xBody }, { index: 1, type: 'blob', body: yBody }] });
            expect(await visits(p, [])).toEqual({ count: 0, seen: [] });
            // Another project's objects are not this one's.
            expect(await visits(tx.project(freshProject()), [x])).toEqual({ count: 1, seen: [{ index: 0 }] });
          });
          // Inside a write, what the write put is visited too.
          const zBody = Buffer.from('z, only buffered');
          const inside = await store.write(async (tx) => {
            const p = tx.project(project);
            const z = p.putObject('blob', zBody);
            return visits(p, [z, x, absent]);
          });
          expect(inside).toEqual({ count: 3, seen: [{ index: 0, type: 'blob', body: zBody }, { index: 1, type: 'blob', body: xBody }, { index: 2 }] });
        });

        it('lets an error thrown by a visit out, and reads normally after it', async () => {
          const project = freshProject();
          const body = Buffer.from('visited before a throw');
          const [oid] = await store.write(async (tx) => [tx.project(project).putObject('blob', body)]);
          await expectBoom(
            store.read((tx) =>
              tx.project(project).visitObjects!([oid], () => {
                throw new Boom('visit failed');
              }),
            ),
          );
          expect(await store.read((tx) => tx.project(project).getObjects([oid]))).toEqual([{ type: 'blob', body }]);
        });
      }
    });

    describe('listeners', () => {
      it('tell onObjectsStored, after each committed write, the objects it stored per project and their similar objects', async () => {
        const [project, other] = [freshProject(), freshProject()];
        const calls: Array<{ project: number; stored: Array<{ oid: string; similarTo: string | null }> }> = [];
        let listening = true;
        store.onObjectsStored((stored: number, objects: NewObject[]) => {
          if (!listening || (stored !== project && stored !== other)) return;
          calls.push({ project: stored, stored: objects.map((o) => ({ oid: oidToHex(o.oid), similarTo: o.similarTo && oidToHex(o.similarTo) })) });
        });
        const aBody = Buffer.from('listened a');
        const bBody = Buffer.from('listened b');
        const cBody = Buffer.from('listened c');
        const [a, b, c] = [aBody, bBody, cBody].map((body) => hashObject('blob', body));
        // The hint is the caller's buffer: it may change it once putObject returned.
        const hint = Buffer.from(a);
        await store.write(async (tx) => {
          const p = tx.project(project);
          p.putObject('blob', aBody);
          p.putObject('blob', bBody, undefined, hint);
          hint.fill(0);
          p.putObject('blob', aBody);
          tx.project(other).putObjectWithId(c, 'blob', cBody);
        });
        const sorted = (list: Array<{ oid: string; similarTo: string | null }>) => [...list].sort((x, y) => x.oid.localeCompare(y.oid));
        const byProject = (wanted: number) => sorted(calls.filter((call) => call.project === wanted).flatMap((call) => call.stored));
        expect(byProject(project)).toEqual(sorted([
          { oid: oidToHex(a), similarTo: null },
          { oid: oidToHex(b), similarTo: oidToHex(a) },
        ]));
        expect(byProject(other)).toEqual([{ oid: oidToHex(c), similarTo: null }]);
        calls.length = 0;
        // Objects already stored are not stored again, and a write that throws stores nothing.
        await store.write(async (tx) => {
          tx.project(project).putObject('blob', aBody);
        });
        await expectBoom(
          store.write(async (tx) => {
            tx.project(project).putObject('blob', Buffer.from('never stored'));
            throw new Boom('rolled back');
          }),
        );
        expect(calls.flatMap((call) => call.stored)).toEqual([]);
        listening = false;
      });

      if (options.packForms) {
        it('tell onObjectsStored the name hash each writer gave (the deflate cache sorts by it), and none where it gave none', async () => {
          const project = freshProject();
          const seen: Array<{ oid: string; nameHash: number | undefined }> = [];
          let listening = true;
          store.onObjectsStored((stored: number, objects: NewObject[]) => {
            if (listening && stored === project) seen.push(...objects.map((o) => ({ oid: oidToHex(o.oid), nameHash: o.nameHash })));
          });
          const [named, unnamed] = [Buffer.from('named by its path'), Buffer.from('no path known')];
          await store.write(async (tx) => {
            tx.project(project).putObject('blob', named, undefined, null, 0xdead_beef);
            tx.project(project).putObject('blob', unnamed);
          });
          listening = false;
          expect(seen.sort((a, b) => a.oid.localeCompare(b.oid))).toEqual(
            [
              { oid: oidToHex(hashObject('blob', named)), nameHash: 0xdead_beef },
              { oid: oidToHex(hashObject('blob', unnamed)), nameHash: undefined },
            ].sort((a, b) => a.oid.localeCompare(b.oid)),
          );
        });
      }

      it('tell onWriteDone after each write, committed or not, how long it took', async () => {
        const key = `asyncContract/${freshProject()}/timed`;
        const done: Array<{ durationMs: number; committed: boolean }> = [];
        let listening = true;
        store.onWriteDone((durationMs, committed) => {
          if (listening) done.push({ durationMs, committed });
        });
        await store.write(async (tx) => tx.putRecord(key, 1));
        await expectBoom(
          store.write(async (tx) => {
            tx.putRecord(key, 2);
            throw new Boom('rolled back');
          }),
        );
        await refusalOf(store.write(async (tx) => tx.project(freshProject()).casRef('refs/heads/main', EMPTY_BLOB_OID, null)));
        await store.read(async (tx) => tx.getRecord(key));
        listening = false;
        expect(done.map((d) => d.committed)).toEqual([true, false, false]);
        for (const { durationMs } of done) {
          expect(Number.isFinite(durationMs)).toBe(true);
          expect(durationMs).toBeGreaterThanOrEqual(0);
        }
      });
    });

    describe('storage', () => {
      it('reports the bytes its data takes, at least what was just stored', async () => {
        const project = freshProject();
        // Incompressible, so no backend keeps them in fewer bytes.
        const bodies = Array.from({ length: 64 }, () => randomBytes(16 * 1024));
        await store.write(async (tx) => {
          for (const body of bodies) tx.project(project).putObject('blob', body);
        });
        const used = await store.storageUsedBytes();
        expect(Number.isSafeInteger(used)).toBe(true);
        expect(used).toBeGreaterThanOrEqual(64 * 16 * 1024);
        while ((await store.dropProjectKeys(project, 1000)) > 0);
      });
    });

    if (options.collection) {
      describe('garbage collection', () => {
        const blob = (text: string) => Buffer.from(text, 'utf8');
        const begin = (project: number, id = `run-${project}`) =>
          store.write(async (tx) => collectionWrites(tx.project(project)).beginCollection({ id, startedAt: '2026-01-01T00:00:00.000Z' }));
        const journal = (project: number) => store.read((tx) => collectionReads(tx.project(project)).listJournal(null, 1000));

        it('reruns a write callback whose object read "present" was removed before its commit, which then stores the object', async () => {
          const project = freshProject();
          const body = blob('a blob a collector removes');
          const oid = await store.write(async (tx) => tx.project(project).putObject('blob', body));
          await begin(project);
          // A second store on the same storage removes the object while the first write's callback runs.
          const other = openStore();
          let runs = 0;
          try {
            const tree = await store.write(async (tx) => {
              runs++;
              const p = tx.project(project);
              const [present] = await p.hasObjects([oid]);
              if (runs === 1) await other.write(async (otx) => collectionWrites(otx.project(project)).removeStored([oid]));
              // A writer that finds the blob stored does not store it again, only names it.
              if (!present) p.putObject('blob', body);
              return p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid }]));
            });
            expect(runs).toBe(2);
            await store.read(async (tx) => {
              expect(await tx.project(project).getObjects([oid])).toEqual([{ type: 'blob', body }]);
              expect(await tx.project(project).hasObjects([tree])).toEqual([true]);
            });
          } finally {
            await other.close();
          }
        });

        it('counts the collections begun, when it stores large pushes ahead of their refs (writeObjectsMax), and reruns a write that read the count when one begins before its commit', async () => {
          const project = freshProject();
          const counted = (p: ProjectReads) => {
            expect(typeof p.collectionsBegun).toBe(options.writeObjectsMax === undefined ? 'undefined' : 'function');
            return p.collectionsBegun?.() ?? Promise.resolve(undefined);
          };
          const count = () => store.read((tx) => counted(tx.project(project)));
          if (options.writeObjectsMax === undefined) {
            await count();
            return;
          }
          expect(await count()).toBe(0);
          await begin(project);
          await store.write(async (tx) => collectionWrites(tx.project(project)).endCollection());
          await begin(project);
          expect(await count()).toBe(2);
          // Another project's collections are its own.
          expect(await store.read((tx) => counted(tx.project(freshProject())))).toBe(0);
          const other = openStore();
          const seen: Array<number | undefined> = [];
          try {
            await store.write(async (tx) => {
              seen.push(await counted(tx.project(project)));
              if (seen.length === 1) await other.write(async (otx) => collectionWrites(otx.project(project)).beginCollection({ id: 'another', startedAt: '2026-01-02T00:00:00.000Z' }));
            });
          } finally {
            await other.close();
          }
          expect(seen).toEqual([2, 3]);
          const reopened = openStore();
          try {
            expect(await reopened.read((tx) => counted(tx.project(project)))).toBe(3);
          } finally {
            await reopened.close();
          }
          await store.write(async (tx) => collectionWrites(tx.project(project)).endCollection());
        });

        it('checks every kind of "present" read the same way: bodies, sizes, commit entries, lists and forms', async () => {
          const project = freshProject();
          const body = blob('read by every kind of read');
          const commit = commitBody(EMPTY_TREE_OID, [], 1_700_000_000);
          const [oid, commitOid] = await store.write(async (tx) => {
            const p = collectionWrites(tx.project(project));
            const ids = [p.putObject('blob', body), p.putObject('commit', commit)];
            if (options.packForms) p.putDeflated(ids[0], deflateSync(body));
            p.putCommitObjects(ids[1], Buffer.alloc(0));
            return ids;
          });
          await begin(project);
          const reads: Array<(p: ProjectWrites & PackFormWrites) => Promise<unknown>> = [
            (p) => p.getObjects([oid]),
            (p) => p.getObjectsWithAnnex([oid]),
            (p) => p.objectSizes([oid]),
            (p) => p.hasObjects([oid]),
            (p) => p.getCommitInfos([commitOid]),
            (p) => p.getCommitObjects(commitOid),
            ...(options.packForms ? [(p: ProjectWrites & PackFormWrites) => p.getDeflated([oid])] : []),
            (p) => p.findObjectsByPrefix(oidToHex(commitOid).slice(0, 8), 4),
          ];
          const other = openStore();
          try {
            for (const read of reads) {
              let runs = 0;
              await store.write(async (tx) => {
                runs++;
                const p = collectionWrites(tx.project(project));
                await read(p);
                if (runs === 1) await other.write(async (otx) => collectionWrites(otx.project(project)).removeStored([oid, commitOid]));
                // Put back, so the next read finds them again.
                if (runs === 2) {
                  p.putObject('blob', body);
                  p.putObject('commit', commit);
                }
              });
              expect({ read: String(read), runs }).toEqual({ read: String(read), runs: 2 });
              await store.write(async (tx) => {
                const p = collectionWrites(tx.project(project));
                if (options.packForms) p.putDeflated(oid, deflateSync(body));
                p.putCommitObjects(commitOid, Buffer.alloc(0));
              });
            }
          } finally {
            await other.close();
          }
        });

        it('journals, while a collection runs, new objects, delta forms and the values refs and working trees take and lose; nothing before or after', async () => {
          const project = freshProject();
          const neighbour = freshProject();
          const [before, v1] = await store.write(async (tx) => {
            const p = collectionWrites(tx.project(project));
            const ids = [p.putObject('blob', blob('stored before')), p.putObject('blob', blob('version one, long enough to be a base'))];
            if (options.packForms) p.putDeflated(ids[1], deflateSync(blob('version one, long enough to be a base')));
            await p.casRef('refs/heads/main', null, ids[0]);
            p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: [] });
            return ids;
          });
          expect(await journal(project)).toEqual([]);
          await begin(project);
          const v2Body = blob('version two, long enough to be a delta');
          const [fresh, v2, tree] = await store.write(async (tx) => {
            const p = collectionWrites(tx.project(project));
            const ids = [p.putObject('blob', blob('stored during')), p.putObject('blob', v2Body)];
            // Stored again: not journalled (it was there).
            p.putObject('blob', blob('stored before'));
            const tree = p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid: ids[0] }]));
            await p.casRef('refs/heads/main', before, ids[0]);
            await p.casRef('refs/heads/side', null, v1);
            p.putWorkingTree('main', { tree, locks: [] });
            tx.project(neighbour).putObject('blob', blob('another project'));
            return [...ids, tree];
          });
          if (options.packForms) {
            await store.write(async (tx) => {
              const p = collectionWrites(tx.project(project));
              expect(await p.putDeflatedDelta(v2, { base: v1, bytes: 3, depth: 1 }, deflateSync(blob('abc')))).toBe(true);
            });
          }
          expect(hexes(await journal(project)).sort()).toEqual(hexes([before, v1, fresh, v2, tree, EMPTY_TREE_OID]).sort());
          expect(await journal(neighbour)).toEqual([]);
          // Paged by id.
          const [first] = await store.read((tx) => collectionReads(tx.project(project)).listJournal(null, 1));
          expect(hexes(await store.read((tx) => collectionReads(tx.project(project)).listJournal(first, 100)))).toEqual(hexes(await journal(project)).slice(1));
          await store.write(async (tx) => collectionWrites(tx.project(project)).forgetJournal([fresh, v2]));
          expect(hexes(await journal(project)).sort()).toEqual(hexes([before, v1, tree, EMPTY_TREE_OID]).sort());
          await store.write(async (tx) => collectionWrites(tx.project(project)).endCollection());
          expect(await journal(project)).toEqual([]);
          await store.write(async (tx) => {
            const p = tx.project(project);
            p.putObject('blob', blob('stored after'));
            await p.casRef('refs/heads/side', v1, null);
          });
          expect(await journal(project)).toEqual([]);
          expect(await store.read((tx) => collectionReads(tx.project(project)).getCollection())).toBeUndefined();
        });

        it('reruns a write callback whose read of the journal or the collection changed before its commit', async () => {
          const project = freshProject();
          await begin(project);
          const other = openStore();
          try {
            let runs = 0;
            const seen = await store.write(async (tx) => {
              runs++;
              const p = collectionWrites(tx.project(project));
              const listed = await p.listJournal(null, 10);
              if (runs === 1) await other.write(async (otx) => otx.project(project).putObject('blob', blob('journalled meanwhile')));
              return listed.length;
            });
            expect({ runs, seen }).toEqual({ runs: 2, seen: 1 });
            runs = 0;
            const state = await store.write(async (tx) => {
              runs++;
              const p = collectionWrites(tx.project(project));
              const read = await p.getCollection();
              if (runs === 1) await other.write(async (otx) => collectionWrites(otx.project(project)).endCollection());
              return read;
            });
            expect({ runs, state }).toEqual({ runs: 2, state: undefined });
          } finally {
            await other.close();
          }
        });

        it('lists the ids it keeps, in id order and by pages, with where each is kept; and describes ids asked for', async () => {
          const project = freshProject();
          const base = blob('a base version with enough text in it');
          const next = blob('a next version with enough text in it');
          const formOnly = blob('kept as its form alone');
          const commit = commitBody(EMPTY_TREE_OID, [], 1_700_000_000);
          const formOid = hashObject('tree', formOnly);
          const forms = options.packForms;
          const ids = await store.write(async (tx) => {
            const p = collectionWrites(tx.project(project));
            const baseOid = p.putObject('blob', base);
            const nextOid = p.putObject('blob', next, Buffer.from('an annex'));
            const commitOid = p.putObject('commit', commit);
            p.putCommitObjects(commitOid, Buffer.alloc(0));
            if (!forms) return { baseOid, nextOid, commitOid };
            p.putDeflated(baseOid, deflateSync(base));
            await p.putDeflatedDelta(nextOid, { base: baseOid, bytes: 4, depth: 1 }, deflateSync(blob('xxxx')));
            await p.putObjectAsForm(formOid, 'tree', formOnly.length, { deflated: deflateSync(formOnly) });
            return { baseOid, nextOid, commitOid, formOid };
          });
          const listed = await store.read((tx) => collectionReads(tx.project(project)).listStored(null, 100));
          expect(hexes(listed.map((entry) => entry.oid))).toEqual(hexes(Object.values(ids)).sort());
          const byHex = new Map(listed.map((entry) => [oidToHex(entry.oid), entry]));
          // Whether a form is kept compactly is the backend's layout; the keepCompact test looks at it.
          const where = (entry: ListedEntry | undefined) => entry && { oid: entry.oid, raw: entry.raw, form: entry.form, formBase: entry.formBase, commit: entry.commit };
          expect(where(byHex.get(oidToHex(ids.baseOid)))).toEqual({ oid: ids.baseOid, raw: true, form: forms, formBase: null, commit: false });
          expect(where(byHex.get(oidToHex(ids.nextOid)))).toEqual({ oid: ids.nextOid, raw: true, form: forms, formBase: forms ? ids.baseOid : null, commit: false });
          expect(where(byHex.get(oidToHex(ids.commitOid)))).toEqual({ oid: ids.commitOid, raw: true, form: false, formBase: null, commit: true });
          expect(byHex.get(oidToHex(ids.commitOid))!.formCompact).toBe(false);
          // Kept as its form alone, or (a backend that keeps every raw copy) with its raw copy rebuilt from the form.
          if (forms) expect(where(byHex.get(oidToHex(formOid)))).toEqual({ oid: formOid, raw: !formsAlone, form: true, formBase: null, commit: false });
          // Pages of two.
          const paged: Oid[] = [];
          for (let after: Oid | null = null; ; ) {
            const page = await store.read((tx) => collectionReads(tx.project(project)).listStored(after, 2));
            paged.push(...page.map((entry) => entry.oid));
            if (page.length < 2) break;
            after = page[page.length - 1].oid;
          }
          expect(hexes(paged)).toEqual(hexes(listed.map((entry) => entry.oid)));
          expect(await store.read((tx) => collectionReads(tx.project(freshProject())).listStored(null, 100))).toEqual([]);

          const described = await store.read((tx) => collectionReads(tx.project(project)).describeStored([ids.baseOid, ids.nextOid, hashObject('blob', blob('absent')), ids.commitOid, formOid]));
          expect(described[2]).toBeUndefined();
          const [baseEntry, nextEntry, , commitEntry, formEntry] = described;
          expect(baseEntry).toMatchObject({ oid: ids.baseOid, type: 'blob', formBase: null, formDepth: 0, indexBytes: 0 });
          expect(baseEntry!.rawBytes).toBeGreaterThanOrEqual(base.length);
          expect(nextEntry).toMatchObject({ type: 'blob', formDepth: forms ? 1 : 0, formBase: forms ? ids.baseOid : null });
          expect(nextEntry!.rawBytes).toBeGreaterThanOrEqual(next.length + 'an annex'.length);
          expect(commitEntry).toMatchObject({ type: 'commit', formBytes: 0, formBase: null });
          expect(commitEntry!.indexBytes).toBeGreaterThan(0);
          if (!forms) {
            // Without forms: none is kept, and an id stored as nothing else is not stored at all.
            expect([baseEntry!.formBytes, nextEntry!.formBytes, formEntry]).toEqual([0, 0, undefined]);
            return;
          }
          expect(baseEntry!.formBytes).toBeGreaterThan(0);
          expect(formEntry).toMatchObject({ type: 'tree', rawBytes: formsAlone ? 0 : formOnly.length, formBase: null, formDepth: 0 });
          expect(formEntry!.formBytes).toBeGreaterThan(0);
        });

        it('removes everything under an id: raw copy with its annex, commit index entry and object list; nothing of another id', async () => {
          const project = freshProject();
          const { kept, gone, commitOid } = await store.write(async (tx) => {
            const p = collectionWrites(tx.project(project));
            const kept = p.putObject('blob', blob('kept'), Buffer.from('its annex'));
            const gone = p.putObject('blob', blob('removed'), Buffer.from('an annex that goes'));
            const commitOid = p.putObject('commit', commitBody(EMPTY_TREE_OID, [], 1_700_000_002));
            p.putCommitObjects(commitOid, Buffer.alloc(0));
            return { kept, gone, commitOid };
          });
          await store.write(async (tx) => collectionWrites(tx.project(project)).removeStored([gone, commitOid]));
          await store.read(async (tx) => {
            const p = collectionReads(tx.project(project));
            expect(await p.hasObjects([gone, commitOid, kept])).toEqual([false, false, true]);
            expect(await p.getObjectsWithAnnex([kept, gone])).toEqual([{ type: 'blob', body: blob('kept'), annex: Buffer.from('its annex') }, undefined]);
            expect(await p.getCommitInfos([commitOid])).toEqual([undefined]);
            expect(await p.getCommitObjects(commitOid)).toBeUndefined();
            expect(await p.describeStored([gone, commitOid])).toEqual([undefined, undefined]);
            expect(hexes((await p.listStored(null, 10)).map((entry) => entry.oid))).toEqual([oidToHex(kept)]);
          });
          // Removing what is not stored, or is gone already, changes nothing.
          await store.write(async (tx) => collectionWrites(tx.project(project)).removeStored([gone, hashObject('blob', blob('never stored'))]));
          expect(await store.read((tx) => tx.project(project).hasObjects([kept]))).toEqual([true]);
        });

        if (options.packForms) {
          it('removes a form with its id, and rewrites a delta form whole only while it is still on the given base', async () => {
            const project = freshProject();
            const base = blob('the base of a delta, with some length');
            const next = blob('the next of a delta, with some length');
            const { baseOid, nextOid, commitOid } = await store.write(async (tx) => {
              const p = collectionWrites(tx.project(project));
              const baseOid = p.putObject('blob', base);
              const nextOid = p.putObject('blob', next);
              p.putDeflated(baseOid, deflateSync(base));
              await p.putDeflatedDelta(nextOid, { base: baseOid, bytes: 4, depth: 1 }, deflateSync(blob('xxxx')));
              const commitOid = p.putObject('commit', commitBody(EMPTY_TREE_OID, [], 1_700_000_001));
              p.putCommitObjects(commitOid, Buffer.alloc(0));
              return { baseOid, nextOid, commitOid };
            });
            await store.write(async (tx) => {
              const p = collectionWrites(tx.project(project));
              // Not on this base: nothing changes.
              p.replaceFormWhole(nextOid, commitOid, deflateSync(next));
            });
            expect((await store.read((tx) => formReads(tx.project(project)).getDeflated([nextOid])))[0]!.delta?.base).toEqual(baseOid);
            await store.write(async (tx) => collectionWrites(tx.project(project)).replaceFormWhole(nextOid, baseOid, deflateSync(next)));
            await store.write(async (tx) => collectionWrites(tx.project(project)).removeStored([baseOid, commitOid]));
            await store.read(async (tx) => {
              const p = collectionReads(formReads(tx.project(project)) as ProjectReads);
              const [form] = await formReads(tx.project(project)).getDeflated([nextOid]);
              expect(form?.delta).toBeUndefined();
              expect(form && inflateSync(form.deflated)).toEqual(next);
              expect(await p.hasObjects([baseOid, commitOid, nextOid])).toEqual([false, false, true]);
              expect(await p.getCommitInfos([commitOid])).toEqual([undefined]);
              expect(await p.getCommitObjects(commitOid)).toBeUndefined();
              expect(await formReads(tx.project(project)).getDeflated([baseOid])).toEqual([undefined]);
              expect(await p.describeStored([baseOid, commitOid])).toEqual([undefined, undefined]);
            });
          });

          if (!formsAlone) {
            it('keeps every raw copy when asked to keep objects compactly (a backend that keeps forms beside them), and every read stays the same', async () => {
              const project = freshProject();
              const bodies = [blob('a first version of a file, long enough'), blob('a second version of a file, long enough')];
              const ids = await store.write(async (tx) => {
                const p = collectionWrites(tx.project(project));
                const oids = bodies.map((body) => p.putObject('blob', body));
                p.putDeflated(oids[0], deflateSync(bodies[0]));
                const delta = createDelta(bodies[0], bodies[1]);
                expect(await p.putDeflatedDelta(oids[1], { base: oids[0], bytes: delta.length, depth: 1 }, deflateSync(delta))).toBe(true);
                return oids;
              });
              const snapshot = () => store.read(async (tx) => ({ objects: await tx.project(project).getObjects(ids), forms: await formReads(tx.project(project)).getDeflated(ids) }));
              const before = await snapshot();
              await store.write(async (tx) => collectionWrites(tx.project(project)).keepCompact(ids.map((oid) => ({ oid, dropRaw: true }))));
              expect(await snapshot()).toEqual(before);
              const described = await store.read((tx) => collectionReads(tx.project(project)).describeStored(ids));
              expect(described.map((entry) => entry!.rawBytes)).toEqual(bodies.map((body) => body.length));
              expect(described.map((entry) => entry!.formDepth)).toEqual([0, 1]);
            });
          }

          if (formsAlone) it('keeps objects compactly: raw copies go where a form rebuilds them (never a commit\'s), forms and every read stay the same, nothing is journalled', async () => {
            const project = freshProject();
            // Enough forms for the backend's compact layout to take them (LMDB shelves 16 or more per write).
            const versions = Array.from({ length: 24 }, (_, round) => Buffer.from(Array.from({ length: 120 }, (_, line) => `line ${line}${line === round * 5 ? ' edited' : ''}`).join('\n')));
            const fileName = (index: number) => `f${index}`;
            const ids = await store.write(async (tx) => {
              const p = collectionWrites(tx.project(project));
              const blobs = versions.map((body) => p.putObject('blob', body));
              p.putDeflated(blobs[0], deflateSync(versions[0]));
              for (let index = 1; index < versions.length; index++) {
                const delta = createDelta(versions[index - 1], versions[index]);
                expect(await p.putDeflatedDelta(blobs[index], { base: blobs[index - 1], bytes: delta.length, depth: index }, deflateSync(delta))).toBe(true);
              }
              const treeBody = encodeTree(blobs.map((oid, index) => ({ name: fileName(index), mode: '100644', oid })));
              const tree = p.putObject('tree', treeBody, Buffer.from('the sizes of its blobs'));
              p.putDeflated(tree, deflateSync(treeBody));
              const commitOid = p.putObject('commit', commitBody(tree, [], 1_700_000_002));
              p.putDeflated(commitOid, deflateSync(commitBody(tree, [], 1_700_000_002)));
              const formless = p.putObject('blob', blob('a blob with no form yet'));
              return { blobs, tree, treeBody, commitOid, formless };
            });
            const all = [...ids.blobs, ids.tree, ids.commitOid, ids.formless];
            const snapshot = () =>
              store.read(async (tx) => {
                const p = formReads(tx.project(project));
                return { objects: await p.getObjects(all), sizes: await p.objectSizes(all), present: await p.hasObjects(all), forms: await p.getDeflated(all) };
              });
            const before = await snapshot();
            await begin(project);
            // A reader that found the tree, as the raw copies go between its reads.
            const [treeFound] = await store.read((tx) => tx.project(project).hasObjects([ids.tree]));
            // Every id asked to drop its raw copy but the last blob.
            const asked = all.map((oid) => ({ oid, dropRaw: !oid.equals(ids.blobs[23]) }));
            await store.write(async (tx) => collectionWrites(tx.project(project)).keepCompact(asked));
            expect(treeFound).toBe(true);
            expect((await store.read((tx) => tx.project(project).getObjects([ids.tree])))[0]?.body).toEqual(ids.treeBody);
            expect(await snapshot()).toEqual(before);
            expect(await journal(project)).toEqual([]);
            const described = await store.read((tx) => collectionReads(tx.project(project)).describeStored(all));
            const rawBytes = described.map((entry) => entry!.rawBytes);
            // Gone: every blob's but the last, the tree's (its annex too). Kept: the last blob's (not asked), the commit's, the formless blob's.
            expect(rawBytes.slice(0, 23)).toEqual(ids.blobs.slice(0, 23).map(() => 0));
            expect(rawBytes[23]).toBeGreaterThan(0);
            expect(rawBytes[24]).toBe(0);
            expect(rawBytes[25]).toBeGreaterThan(0);
            expect(rawBytes[26]).toBeGreaterThan(0);
            expect((await store.read((tx) => tx.project(project).getObjectsWithAnnex([ids.tree])))[0]).toEqual({ type: 'tree', body: ids.treeBody, annex: null });
            const listed = new Map((await store.read((tx) => collectionReads(tx.project(project)).listStored(null, 100))).map((entry) => [oidToHex(entry.oid), entry]));
            expect(all.map((oid) => listed.get(oidToHex(oid))!.formCompact)).toEqual([...ids.blobs.map(() => true), true, true, false]);
            expect(all.map((oid) => listed.get(oidToHex(oid))!.raw)).toEqual(rawBytes.map((bytes) => bytes > 0));
            // Again: nothing more to do, and nothing changes.
            await store.write(async (tx) => collectionWrites(tx.project(project)).keepCompact(asked));
            expect(await snapshot()).toEqual(before);
            // A write that read the tree before its raw copy went commits over it (it stays readable).
            let runs = 0;
            const other = openStore();
            try {
              const parent = await store.write(async (tx) => {
                runs++;
                const p = collectionWrites(tx.project(project));
                const [read] = await p.getObjectsWithAnnex([ids.blobs[23]]);
                if (runs === 1) await other.write(async (otx) => collectionWrites(otx.project(project)).keepCompact([{ oid: ids.blobs[23], dropRaw: true }]));
                return p.putObject('tree', encodeTree([{ name: 'kept', mode: '100644', oid: hashObject('blob', read!.body) }]));
              });
              expect(runs).toBe(1);
              expect(await store.read((tx) => tx.project(project).hasObjects([parent]))).toEqual([true]);
            } finally {
              await other.close();
            }
            expect((await store.read((tx) => collectionReads(tx.project(project)).describeStored([ids.blobs[23]])))[0]!.rawBytes).toBe(0);
            expect(await snapshot()).toEqual(before);
            // A stored again object gets its raw copy back.
            await store.write(async (tx) => void tx.project(project).putObject('tree', ids.treeBody, Buffer.from('sizes again')));
            expect((await store.read((tx) => tx.project(project).getObjectsWithAnnex([ids.tree])))[0]!.annex).toEqual(Buffer.from('sizes again'));
            await store.write(async (tx) => collectionWrites(tx.project(project)).endCollection());
          });

          it('replaces several forms together only when each is still what the caller read, turning a chain around', async () => {
            const project = freshProject();
            const versions = Array.from({ length: 4 }, (_, round) => Buffer.from(Array.from({ length: 40 + round * 10 }, (_, line) => `line ${line} of a file that grows`).join('\n')));
            const oids = await store.write(async (tx) => {
              const p = collectionWrites(tx.project(project));
              const ids = versions.map((body) => p.putObject('blob', body));
              p.putDeflated(ids[0], deflateSync(versions[0]));
              for (let i = 1; i < versions.length; i++) {
                const delta = createDelta(versions[i - 1], versions[i]);
                expect(await p.putDeflatedDelta(ids[i], { base: ids[i - 1], bytes: delta.length, depth: i }, deflateSync(delta))).toBe(true);
              }
              return ids;
            });
            const formsOf = () => store.read((tx) => formReads(tx.project(project)).getDeflated(oids));
            const before = await formsOf();
            // Newest whole, each older version a delta on the one after it.
            const turned = versions.map((body, i) => {
              if (i === 3) return { oid: oids[3], was: { base: oids[2], depth: 3 }, form: { deflated: deflateSync(body) } };
              const delta = createDelta(versions[i + 1], body);
              return { oid: oids[i], was: { base: i === 0 ? null : oids[i - 1], depth: i }, form: { deflated: deflateSync(delta), delta: { base: oids[i + 1], bytes: delta.length, depth: 3 - i } } };
            });
            // One expectation wrong (the second version's depth): nothing changes.
            const stale = turned.map((change, i) => (i === 1 ? { ...change, was: { ...change.was, depth: 5 } } : change));
            await store.write(async (tx) => collectionWrites(tx.project(project)).replaceForms(stale));
            expect(await formsOf()).toEqual(before);
            await store.write(async (tx) => collectionWrites(tx.project(project)).replaceForms(turned));
            const after = await formsOf();
            expect(after.map((form) => form!.delta?.depth ?? 0)).toEqual([3, 2, 1, 0]);
            expect(after.map((form) => form?.delta && oidToHex(form.delta.base))).toEqual([oidToHex(oids[1]), oidToHex(oids[2]), oidToHex(oids[3]), undefined]);
            await store.read(async (tx) => {
              const p = collectionReads(formReads(tx.project(project)) as ProjectReads);
              expect(await p.getObjects(oids)).toEqual(versions.map((body) => ({ type: 'blob', body })));
              expect(await p.objectSizes(oids)).toEqual(versions.map((body) => body.length));
              const listed = new Map((await p.listStored(null, 10)).map((entry) => [oidToHex(entry.oid), entry]));
              expect(oids.map((oid) => listed.get(oidToHex(oid))!.formDepth)).toEqual([3, 2, 1, 0]);
            });
            // Read back as forms alone too: each rebuilt through its new chain.
            await store.write(async (tx) => collectionWrites(tx.project(project)).keepCompact(oids.map((oid) => ({ oid, dropRaw: true }))));
            expect(await store.read((tx) => tx.project(project).getObjects(oids))).toEqual(versions.map((body) => ({ type: 'blob', body })));
          });
        }

        it('lists every working tree record of a project', async () => {
          const project = freshProject();
          await store.write(async (tx) => {
            const p = tx.project(project);
            p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: ['a'] });
            p.putWorkingTree('feature/x', { tree: hashObject('tree', Buffer.alloc(0)), locks: [] });
            tx.project(freshProject()).putWorkingTree('other', { tree: EMPTY_TREE_OID, locks: [] });
          });
          const listed = await store.read((tx) => collectionReads(tx.project(project)).listWorkingTrees());
          expect(listed.map(({ branch }) => branch).sort()).toEqual(['feature/x', 'main']);
          expect(listed.find(({ branch }) => branch === 'main')!.state).toEqual({ tree: EMPTY_TREE_OID, locks: ['a'] });
        });

        it('drops the collection and the journal with the project', async () => {
          const project = freshProject();
          await begin(project);
          await store.write(async (tx) => tx.project(project).putObject('blob', blob('journalled, then dropped')));
          expect(await journal(project)).toHaveLength(1);
          while ((await store.dropProjectKeys(project, 1)) > 0);
          expect(await journal(project)).toEqual([]);
          expect(await store.read((tx) => collectionReads(tx.project(project)).getCollection())).toBeUndefined();
        });
      });
    }

    describe('durability', () => {
      it('resolves write() after the commit, and the data survives close and reopen', async () => {
        const project = freshProject();
        const body = Buffer.from('survives');
        const pending = store.write(async (tx) => {
          const p = tx.project(project);
          const oid = p.putObject('blob', body);
          await p.casRef('refs/heads/main', null, oid);
          p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: ['f', 'g/h'] });
          await p.bumpVersion();
          tx.putRecord(`asyncContract/${project}/durable`, { ok: true });
          return oid;
        });
        expect(pending).toBeInstanceOf(Promise);
        const oid = await pending;
        await store.close();
        const closed = store;
        await expect(settled(() => closed.read(async () => 1))).rejects.toThrow();
        await expect(settled(() => closed.write(async () => 1))).rejects.toThrow();
        store = openStore();
        await store.read(async (tx) => {
          const p = tx.project(project);
          expect(await p.getObjects([oid])).toEqual([{ type: 'blob', body }]);
          expect(await p.getRef('refs/heads/main')).toEqual(oid);
          expect(await p.getWorkingTree('main')).toEqual({ tree: EMPTY_TREE_OID, locks: ['f', 'g/h'] });
          expect(await p.getVersion()).toBe(1);
          expect(await tx.getRecord(`asyncContract/${project}/durable`)).toEqual({ ok: true });
        });
      });
    });
  });
}
