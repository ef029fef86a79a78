/**
 * The contract every Store backend must pass (src/store/types.ts), modelled on go-git's
 * storage/test/storage_suite.go: one suite, run by each backend's test file with a factory.
 *
 * `openStore` opens the backend on the same underlying storage each time it is called, so the
 * suite can close a store and open it again to check that acknowledged writes survive. Tests share
 * that storage and keep out of each other's way by using their own project numbers and record keys.
 */
import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Boom, commitBody, EMPTY_BLOB_HEX, EMPTY_TREE_HEX, expectBoom, hexes, HELLO_BLOB_HEX, projectNumbers } from './contractSupport.js';
import { createDelta } from '../../src/git/delta.js';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex, type Oid } from '../../src/git/oid.js';
import { encodeTree } from '../../src/git/tree.js';
import { RefChangedError, type ProjectWriteTx, type Store } from '../../src/store/types.js';

/** Every test takes project numbers from here, so tests never see each other's data. */
const freshProject = projectNumbers(1000);

export function storeContract(backendName: string, openStore: () => Store): void {
  describe(`Store contract: ${backendName}`, () => {
    let store: Store;
    beforeAll(() => {
      store = openStore();
    });
    afterAll(async () => {
      await store.close();
    });

    describe('objects', () => {
      it('gives the golden ids of the empty blob and the empty tree', async () => {
        const project = freshProject();
        const ids = await store.write((tx) => {
          const p = tx.project(project);
          return { blob: p.putObject('blob', Buffer.alloc(0)), tree: p.putObject('tree', encodeTree([])) };
        });
        expect(oidToHex(ids.blob)).toBe(EMPTY_BLOB_HEX);
        expect(oidToHex(ids.tree)).toBe(EMPTY_TREE_HEX);
        expect(ids.blob.equals(EMPTY_BLOB_OID)).toBe(true);
        expect(ids.tree.equals(EMPTY_TREE_OID)).toBe(true);
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.getObject(EMPTY_BLOB_OID)).toEqual({ type: 'blob', body: Buffer.alloc(0) });
          expect(p.getObject(EMPTY_TREE_OID)).toEqual({ type: 'tree', body: Buffer.alloc(0) });
          expect(p.objectSize(EMPTY_BLOB_OID)).toBe(0);
        });
      });

      it('round-trips every object type byte for byte', async () => {
        const project = freshProject();
        const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
        const hello = Buffer.from('hello\n');
        const tree = encodeTree([{ name: 'hello', mode: '100644', oid: hashObject('blob', hello) }]);
        const commit = commitBody(hashObject('tree', tree), [], 1_700_000_000);
        const tag = Buffer.from(`object ${oidToHex(hashObject('commit', commit))}\ntype commit\ntag v1\ntagger C <c@example.com> 1700000000 +0000\n\nv1\n`);
        const written = await store.write((tx) => {
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
        store.read((tx) => {
          const p = tx.project(project);
          for (const { type, body, oid } of written) {
            expect(oid.equals(hashObject(type, body))).toBe(true);
            expect(p.hasObject(oid)).toBe(true);
            expect(p.objectSize(oid)).toBe(body.length);
            const stored = p.getObject(oid)!;
            expect(stored.type).toBe(type);
            expect(stored.body.equals(body)).toBe(true);
          }
          const absent = oidFromHex('00'.repeat(20));
          expect(p.getObject(absent)).toBeUndefined();
          expect(p.hasObject(absent)).toBe(false);
          expect(p.objectSize(absent)).toBeUndefined();
        });
      });

      it('copies bodies in and out, so callers cannot change what is stored', async () => {
        const project = freshProject();
        const body = Buffer.from('original');
        const oid = await store.write((tx) => tx.project(project).putObject('blob', body));
        body.fill(0x21);
        const first = store.read((tx) => tx.project(project).getObject(oid)!.body);
        first.fill(0x22);
        const second = store.read((tx) => tx.project(project).getObject(oid)!.body);
        expect(second.toString()).toBe('original');
      });

      it('stores an object once and keeps the first copy (putObject is idempotent)', async () => {
        const project = freshProject();
        const body = Buffer.from('same');
        const [a, b] = await store.write((tx) => {
          const p = tx.project(project);
          return [p.putObject('blob', body), p.putObject('blob', body)];
        });
        expect(a.equals(b)).toBe(true);
        const oid = hashObject('blob', Buffer.from('given id'));
        await store.write((tx) => tx.project(project).putObjectWithId(oid, 'blob', Buffer.from('given id')));
        // A second put under a stored id (whatever its bytes) leaves the first copy in place.
        await store.write((tx) => tx.project(project).putObjectWithId(oid, 'blob', Buffer.from('other bytes')));
        expect(store.read((tx) => tx.project(project).getObject(oid))).toEqual({ type: 'blob', body: Buffer.from('given id') });
      });

      it('keeps projects apart: the same object in one project is absent from another', async () => {
        const [one, two] = [freshProject(), freshProject()];
        const oid = await store.write((tx) => tx.project(one).putObject('blob', Buffer.from('only in one')));
        store.read((tx) => {
          expect(tx.project(one).hasObject(oid)).toBe(true);
          expect(tx.project(two).hasObject(oid)).toBe(false);
          expect(tx.project(two).findObjectsByPrefix(oidToHex(oid).slice(0, 6), 10)).toEqual([]);
        });
      });
    });

    describe('findObjectsByPrefix', () => {
      it('finds by odd and even prefixes, honours the limit and stays in its project', async () => {
        const project = freshProject();
        const neighbour = freshProject();
        const bodies = Array.from({ length: 200 }, (_, i) => Buffer.from(`object ${i}`));
        const oids = await store.write((tx) => {
          tx.project(neighbour).putObject('blob', Buffer.from('neighbour'));
          return bodies.map((body) => tx.project(project).putObject('blob', body));
        });
        const all = hexes(oids).sort();
        store.read((tx) => {
          const p = tx.project(project);
          for (const hex of all.slice(0, 20)) {
            for (const length of [1, 2, 3, 4, 7, 8, 39, 40]) {
              const prefix = hex.slice(0, length);
              const expected = all.filter((other) => other.startsWith(prefix));
              const found = hexes(p.findObjectsByPrefix(prefix, 1000));
              expect(found.sort()).toEqual(expected);
              expect(p.findObjectsByPrefix(prefix, 1).length).toBe(1);
            }
          }
          // An odd prefix must not match ids whose next digit is outside it, nor stop before "f".
          const byFirstDigit = all.filter((hex) => hex.startsWith('f'));
          expect(hexes(p.findObjectsByPrefix('f', 1000)).sort()).toEqual(byFirstDigit);
          expect(hexes(p.findObjectsByPrefix('', 1000)).sort()).toEqual(all);
          expect(p.findObjectsByPrefix('ff'.repeat(20), 10)).toEqual([]);
          expect(hexes(p.findObjectsByPrefix(all[0].slice(0, 1), 3)).length).toBeLessThanOrEqual(3);
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
        // A parent the store has never seen (a shallow boundary) counts as generation 1.
        const shallow = commitBody(tree, [oidFromHex('ab'.repeat(20))], 5_000, 'shallow\n');

        await store.write((tx) => {
          const p = tx.project(project);
          p.putObject('tree', encodeTree([]));
          for (const body of [root, left, leftTwo, right, merge]) p.putObject('commit', body);
          p.putObjectWithId(hashObject('commit', shallow), 'commit', shallow);
        });
        store.read((tx) => {
          const p = tx.project(project);
          const info = (oid: Oid) => {
            const found = p.getCommitInfo(oid)!;
            return { tree: oidToHex(found.tree), parents: hexes(found.parents), commitTime: found.commitTime, generation: found.generation };
          };
          const treeHex = oidToHex(tree);
          expect(info(rootOid)).toEqual({ tree: treeHex, parents: [], commitTime: 1_000, generation: 1 });
          expect(info(leftOid)).toEqual({ tree: treeHex, parents: [oidToHex(rootOid)], commitTime: 2_000, generation: 2 });
          expect(info(leftTwoOid).generation).toBe(3);
          expect(info(rightOid).generation).toBe(2);
          expect(info(hashObject('commit', merge))).toEqual({
            tree: treeHex,
            parents: [oidToHex(rightOid), oidToHex(leftTwoOid)],
            commitTime: 4_000,
            generation: 4,
          });
          expect(info(hashObject('commit', shallow)).generation).toBe(2);
          // Only commits are indexed.
          expect(p.getCommitInfo(tree)).toBeUndefined();
          expect(p.getCommitInfo(oidFromHex('cd'.repeat(20)))).toBeUndefined();
        });
      });

      it("keeps a commit's object list per project, replaces it, and refuses one for an unstored commit or of broken records", async () => {
        const [project, other] = [freshProject(), freshProject()];
        const commit = commitBody(EMPTY_TREE_OID, [], 1_000, 'listed\n');
        const records = Buffer.concat([Buffer.from([2]), EMPTY_TREE_OID, Buffer.from([3]), EMPTY_BLOB_OID]);
        const oid = await store.write((tx) => {
          const p = tx.project(project);
          const id = p.putObject('commit', commit);
          expect(p.getCommitObjects(id)).toBeUndefined();
          p.putCommitObjects(id, records);
          expect(p.getCommitObjects(id)).toEqual(records);
          return id;
        });
        store.read((tx) => {
          expect(tx.project(project).getCommitObjects(oid)).toEqual(records);
          expect(tx.project(other).getCommitObjects(oid)).toBeUndefined();
        });
        await store.write((tx) => tx.project(project).putCommitObjects(oid, records.subarray(0, 21)));
        expect(store.read((tx) => tx.project(project).getCommitObjects(oid))).toEqual(records.subarray(0, 21));
        await expect(store.write((tx) => tx.project(other).putCommitObjects(oid, records))).rejects.toThrow(/not stored/);
        await expect(store.write((tx) => tx.project(project).putCommitObjects(oid, records.subarray(0, 20)))).rejects.toThrow(/whole records/);
        expect(store.read((tx) => tx.project(project).getCommitObjects(oid))).toEqual(records.subarray(0, 21));
      });

      it('keeps large committer times and many parents exactly', async () => {
        const project = freshProject();
        const parents = Array.from({ length: 17 }, (_, i) => hashObject('commit', Buffer.from(`absent ${i}`)));
        const body = commitBody(EMPTY_TREE_OID, parents, 4_102_444_800, 'octopus\n');
        const oid = await store.write((tx) => tx.project(project).putObject('commit', body));
        const info = store.read((tx) => tx.project(project).getCommitInfo(oid))!;
        expect(hexes(info.parents)).toEqual(hexes(parents));
        expect(info.commitTime).toBe(4_102_444_800);
        expect(info.generation).toBe(2);
      });
    });

    describe('refs', () => {
      const a = hashObject('commit', Buffer.from('a'));
      const b = hashObject('commit', Buffer.from('b'));
      const c = hashObject('commit', Buffer.from('c'));

      it('creates with "must not exist", moves from the expected value, and deletes', async () => {
        const project = freshProject();
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', null, a));
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(a);
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', a, b));
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(b);
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', b, null));
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toBeUndefined();
        // Deleted means gone: it can be created again from "must not exist".
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', null, c));
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(c);
      });

      it('refuses "must not exist" when the ref exists, and leaves it unchanged', async () => {
        const project = freshProject();
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', null, a));
        const refusal = store.write((tx) => tx.project(project).casRef('refs/heads/main', null, b));
        await expect(refusal).rejects.toBeInstanceOf(RefChangedError);
        await refusal.catch((error: RefChangedError) => {
          expect(error.ref).toBe('refs/heads/main');
          expect(error.current).toEqual(a);
        });
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(a);
      });

      it('refuses a mismatch (stale value, or a ref that does not exist) and leaves the ref unchanged', async () => {
        const project = freshProject();
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', null, a));
        for (const [expected, next] of [
          [b, c],
          [b, null],
        ] as Array<[Oid, Oid | null]>) {
          const refusal = store.write((tx) => tx.project(project).casRef('refs/heads/main', expected, next));
          await expect(refusal).rejects.toBeInstanceOf(RefChangedError);
          expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(a);
        }
        const missing = store.write((tx) => tx.project(project).casRef('refs/heads/nope', a, b));
        await expect(missing).rejects.toMatchObject({ name: 'RefChangedError', ref: 'refs/heads/nope', current: null });
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/nope'))).toBeUndefined();
      });

      it('leaves the ref unchanged when the mismatch is caught inside the transaction', async () => {
        const project = freshProject();
        const outcome = await store.write((tx) => {
          const p = tx.project(project);
          p.casRef('refs/heads/main', null, a);
          try {
            p.casRef('refs/heads/main', b, c);
            return 'moved';
          } catch (error) {
            return error instanceof RefChangedError && error.current?.equals(a) ? 'refused' : 'wrong error';
          }
        });
        expect(outcome).toBe('refused');
        expect(store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(a);
      });

      it('lists refs by prefix, sorted by name, per project', async () => {
        const project = freshProject();
        const other = freshProject();
        const names = ['refs/heads/main', 'refs/heads/feature/x', 'refs/heads/feature', 'refs/tags/v1', 'refs/heads/a', 'refs/headsx'];
        await store.write((tx) => {
          for (const name of names) tx.project(project).casRef(name, null, a);
          tx.project(other).casRef('refs/heads/other', null, b);
        });
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.listRefs('refs/heads/').map((r) => r.name)).toEqual(['refs/heads/a', 'refs/heads/feature', 'refs/heads/feature/x', 'refs/heads/main']);
          expect(p.listRefs('refs/heads/feature/').map((r) => r.name)).toEqual(['refs/heads/feature/x']);
          expect(p.listRefs('refs/').map((r) => r.name)).toEqual([...names].sort());
          expect(p.listRefs('refs/heads/main')[0].oid).toEqual(a);
          expect(p.listRefs('refs/nothing/')).toEqual([]);
          expect(tx.project(other).listRefs('refs/').map((r) => r.name)).toEqual(['refs/heads/other']);
        });
      });
    });

    describe('write transactions', () => {
      it('see their own writes and return the callback result', async () => {
        const project = freshProject();
        const seen = await store.write((tx) => {
          const p = tx.project(project);
          const oid = p.putObject('blob', Buffer.from('fresh'));
          p.casRef('refs/heads/main', null, oid);
          tx.putRecord(`contract/${project}/own`, { n: 1 });
          return {
            object: p.getObject(oid)?.body.toString(),
            ref: p.getRef('refs/heads/main')?.equals(oid),
            record: tx.getRecord<{ n: number }>(`contract/${project}/own`),
          };
        });
        expect(seen).toEqual({ object: 'fresh', ref: true, record: { n: 1 } });
      });

      it('leave nothing behind when the callback throws', async () => {
        const project = freshProject();
        const head = hashObject('commit', Buffer.from('head'));
        await store.write((tx) => tx.project(project).casRef('refs/heads/main', null, head));
        const versionBefore = store.read((tx) => tx.project(project).getVersion());
        let blob: Oid | undefined;
        let commit: Oid | undefined;
        await expectBoom(
          store.write((tx) => {
            const p = tx.project(project);
            blob = p.putObject('blob', Buffer.from('doomed'));
            commit = p.putObject('commit', commitBody(EMPTY_TREE_OID, [], 1_234));
            p.casRef('refs/heads/main', head, commit);
            p.casRef('refs/heads/doomed', null, commit);
            p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: [] });
            p.bumpVersion();
            tx.putRecord(`contract/${project}/doomed`, 'x');
            throw new Boom('rolled back');
          }),
        );
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.hasObject(blob!)).toBe(false);
          expect(p.hasObject(commit!)).toBe(false);
          expect(p.getCommitInfo(commit!)).toBeUndefined();
          expect(p.getRef('refs/heads/main')).toEqual(head);
          expect(p.getRef('refs/heads/doomed')).toBeUndefined();
          expect(p.getWorkingTree('main')).toBeUndefined();
          expect(p.getVersion()).toBe(versionBefore);
          expect(tx.getRecord(`contract/${project}/doomed`)).toBeUndefined();
        });
        // The store keeps working after a rollback.
        await store.write((tx) => tx.putRecord(`contract/${project}/after`, 'ok'));
        expect(store.read((tx) => tx.getRecord(`contract/${project}/after`))).toBe('ok');
      });

      it('refuse writes inside a read transaction', () => {
        const project = freshProject();
        expect(() => store.read((tx) => (tx.project(project) as ProjectWriteTx).putObject('blob', Buffer.from('x')))).toThrow();
        expect(() => store.read((tx) => (tx as unknown as { putRecord(k: string, v: unknown): void }).putRecord('k', 1))).toThrow();
        expect(store.read((tx) => tx.project(project).findObjectsByPrefix('', 10))).toEqual([]);
      });

      it('run one at a time: concurrent writes never lose an update', async () => {
        const key = `contract/${freshProject()}/counter`;
        await Promise.all(
          Array.from({ length: 50 }, () => store.write((tx) => tx.putRecord(key, (tx.getRecord<number>(key) ?? 0) + 1))),
        );
        expect(store.read((tx) => tx.getRecord<number>(key))).toBe(50);
      });

      it('count versions per project', async () => {
        const [one, two] = [freshProject(), freshProject()];
        expect(store.read((tx) => tx.project(one).getVersion())).toBe(0);
        const bumped = await store.write((tx) => [tx.project(one).bumpVersion(), tx.project(one).bumpVersion()]);
        expect(bumped).toEqual([1, 2]);
        store.read((tx) => {
          expect(tx.project(one).getVersion()).toBe(2);
          expect(tx.project(two).getVersion()).toBe(0);
        });
      });
    });

    describe('working trees', () => {
      const state = (name: string) => ({ tree: hashObject('tree', Buffer.from(name)), locks: [`${name}/locked.txt`, 'z'] });

      it('round-trip per branch and delete one branch', async () => {
        const project = freshProject();
        // "feat" is a prefix of "feat2" and of "feat/x": each branch must see only its own record.
        const branches = ['feat', 'feat2', 'feat/x'];
        await store.write((tx) => {
          for (const branch of branches) tx.project(project).putWorkingTree(branch, state(branch));
        });
        store.read((tx) => {
          const p = tx.project(project);
          for (const branch of branches) expect(p.getWorkingTree(branch)).toEqual(state(branch));
          expect(p.getWorkingTree('nope')).toBeUndefined();
        });
        await store.write((tx) => {
          tx.project(project).deleteWorkingTree('feat2');
          tx.project(project).putWorkingTree('feat', state('replaced'));
        });
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.getWorkingTree('feat')).toEqual(state('replaced'));
          expect(p.getWorkingTree('feat2')).toBeUndefined();
          expect(p.getWorkingTree('feat/x')).toEqual(state('feat/x'));
        });
      });

      it('keep locked paths whose names are not UTF-8 byte for byte (escapes of src/git/pathBytes.ts)', async () => {
        const project = freshProject();
        const locks = ['caf\udce9.txt', 'd/x\udce8.txt', 'd/x\udce9.txt', 'caf\ufffd.txt', '\u{1f600}/ok'];
        await store.write((tx) => tx.project(project).putWorkingTree('main', { tree: EMPTY_TREE_OID, locks }));
        store.read((tx) => expect(tx.project(project).getWorkingTree('main')?.locks).toEqual(locks));
      });
    });

    describe('object annex', () => {
      it('returns the annex with its object, keeps it out of the body, size and deflate header', async () => {
        const project = freshProject();
        const body = encodeTree([{ name: 'f', mode: '100644', oid: hashObject('blob', Buffer.from('x')) }]);
        const annex = Buffer.from([0, 0, 0, 1]);
        const plain = Buffer.from('no annex');
        const [tree, blob] = await store.write((tx) => {
          const p = tx.project(project);
          return [p.putObject('tree', body, annex), p.putObject('blob', plain)];
        });
        expect(tree).toEqual(hashObject('tree', body));
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.getObject(tree)).toEqual({ type: 'tree', body });
          // A peek is the body alone, annex left out, and a copy of it equals the stored bytes.
          const peeked = p.peekObject(tree)!;
          expect({ type: peeked.type, body: Buffer.from(peeked.body) }).toEqual({ type: 'tree', body });
          expect(Buffer.from(p.peekObject(blob)!.body)).toEqual(plain);
          expect(p.peekObject(hashObject('blob', Buffer.from('absent')))).toBeUndefined();
          expect(p.getObjectWithAnnex(tree)).toEqual({ type: 'tree', body, annex });
          expect(p.objectSize(tree)).toBe(body.length);
          expect(p.getObjectWithAnnex(blob)).toEqual({ type: 'blob', body: plain, annex: null });
          expect(p.getObjectWithAnnex(hashObject('blob', Buffer.from('absent')))).toBeUndefined();
        });
        await store.write((tx) => tx.project(project).putDeflated(tree, Buffer.from('zlib bytes')));
        store.read((tx) => {
          const packed = tx.project(project).peekDeflated(tree)!;
          expect(packed.type).toBe('tree');
          expect(packed.inflatedBytes).toBe(body.length);
          expect(packed.delta).toBeUndefined();
        });
      });

      it('keeps pack-ready forms as deltas only against bases that have one, at the next depth, never replacing a form', async () => {
        const project = freshProject();
        const bodies = ['version 1\n', 'version 2\n', 'version 3\n', 'unrelated\n'].map((text) => Buffer.from(text));
        const [v1, v2, v3, loose] = await store.write((tx) => bodies.map((body) => tx.project(project).putObject('blob', body)));
        const stream = (text: string) => Buffer.from(`zlib:${text}`);
        const kept = await store.write((tx) => {
          const p = tx.project(project);
          return [
            // No form for the base yet: refused.
            p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 1 }, stream('v2 on v1')),
            (p.putDeflated(v1, stream('v1 whole')), true),
            // The depth must be the base's + 1.
            p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 2 }, stream('v2 on v1')),
            p.putDeflatedDelta(v2, { base: v1, bytes: 7, depth: 1 }, stream('v2 on v1')),
            p.putDeflatedDelta(v3, { base: v2, bytes: 9, depth: 2 }, stream('v3 on v2')),
            // A form is never replaced, by a delta or a whole stream.
            p.putDeflatedDelta(v2, { base: v3, bytes: 5, depth: 3 }, stream('v2 on v3')),
            // Itself as base, or an object not stored: refused.
            p.putDeflatedDelta(v1, { base: v1, bytes: 1, depth: 1 }, stream('self')),
            p.putDeflatedDelta(hashObject('blob', Buffer.from('absent')), { base: v1, bytes: 1, depth: 1 }, stream('absent')),
          ];
        });
        expect(kept).toEqual([false, true, false, true, true, false, false, false]);
        await store.write((tx) => tx.project(project).putDeflated(v2, stream('v2 whole')));
        store.read((tx) => {
          const p = tx.project(project);
          const form = p.peekDeflated(v3)!;
          expect({ ...form, deflated: Buffer.from(form.deflated) }).toEqual({
            type: 'blob',
            inflatedBytes: bodies[2].length,
            delta: { base: v2, bytes: 9, depth: 2 },
            deflated: stream('v3 on v2'),
          });
          const second = p.peekDeflated(v2)!;
          expect([Buffer.from(second.deflated), second.delta?.depth]).toEqual([stream('v2 on v1'), 1]);
          expect(Buffer.from(p.peekDeflated(v1)!.deflated)).toEqual(stream('v1 whole'));
          expect(p.peekDeflated(loose)).toBeUndefined();
        });
      });
    });

    describe('objects kept as pack-ready forms alone', () => {
      it('read back whole, rebuilt through their delta chains, and count as stored everywhere', async () => {
        const project = freshProject();
        const versions = Array.from({ length: 6 }, (_, round) => Buffer.from(Array.from({ length: 200 }, (_, line) => `line ${line} ${line === round * 30 ? 'edited' : ''}`).join('\n')));
        const oids = versions.map((body) => hashObject('blob', body));
        const results = await store.write((tx) => {
          const p = tx.project(project);
          const out = [p.putObjectAsForm(oids[0], 'blob', versions[0].length, { deflated: deflateSync(versions[0]) })];
          for (let index = 1; index < versions.length; index++) {
            const delta = createDelta(versions[index - 1], versions[index]);
            out.push(p.putObjectAsForm(oids[index], 'blob', versions[index].length, { deflated: deflateSync(delta), delta: { base: oids[index - 1], bytes: delta.length, depth: index } }));
          }
          // A delta on a base without a form, or at the wrong depth, stores nothing.
          const orphan = Buffer.from('orphan body, long enough');
          out.push(p.putObjectAsForm(hashObject('blob', orphan), 'blob', orphan.length, { deflated: deflateSync(Buffer.from('x')), delta: { base: hashObject('blob', Buffer.from('none')), bytes: 1, depth: 1 } }));
          out.push(p.putObjectAsForm(hashObject('blob', orphan), 'blob', orphan.length, { deflated: deflateSync(Buffer.from('x')), delta: { base: oids[0], bytes: 1, depth: 3 } }));
          expect(() => p.putObjectAsForm(hashObject('commit', orphan), 'commit', orphan.length, { deflated: deflateSync(orphan) })).toThrow();
          return out;
        });
        expect(results).toEqual([true, true, true, true, true, true, false, false]);
        store.read((tx) => {
          const p = tx.project(project);
          versions.forEach((body, index) => {
            expect(p.getObject(oids[index])).toEqual({ type: 'blob', body });
            expect(Buffer.from(p.peekObject(oids[index])!.body)).toEqual(body);
            expect(p.getObjectWithAnnex(oids[index])).toEqual({ type: 'blob', body, annex: null });
            expect(p.hasObject(oids[index])).toBe(true);
            expect(p.objectSize(oids[index])).toBe(body.length);
            expect(p.peekDeflated(oids[index])!.delta?.depth ?? 0).toBe(index);
          });
          // A body handed out may be changed by its reader; the next read is not.
          p.getObject(oids[5])!.body.fill(0);
          expect(p.getObject(oids[5])!.body).toEqual(versions[5]);
          expect(p.findObjectsByPrefix(oidToHex(oids[3]).slice(0, 7), 10)).toEqual([oids[3]]);
          expect(p.hasObject(hashObject('blob', Buffer.from('orphan body, long enough')))).toBe(false);
          // Another project holds none of them.
          expect(tx.project(freshProject()).getObject(oids[2])).toBeUndefined();
        });
      });
    });

    describe('many forms in one call (putObjectsAsForms)', () => {
      it('stores them in turn, a delta on a form put in the same call or before, and stops at the first that does not fit', async () => {
        const project = freshProject();
        const versions = Array.from({ length: 6 }, (_, round) => Buffer.from(Array.from({ length: 120 }, (_, line) => `line ${line} ${line === round * 20 ? 'edited' : ''}`).join('\n')));
        const oids = versions.map((body) => hashObject('blob', body));
        const entry = (index: number, depth = index) => {
          const delta = index === 0 ? null : createDelta(versions[index - 1], versions[index]);
          return {
            oid: oids[index],
            type: 'blob' as const,
            inflatedBytes: versions[index].length,
            form: delta ? { deflated: deflateSync(delta), delta: { base: oids[index - 1], bytes: delta.length, depth } } : { deflated: deflateSync(versions[0]) },
          };
        };
        // The base in an earlier write, its deltas in this one; one already stored is passed over.
        await store.write((tx) => tx.project(project).putObjectsAsForms([entry(0)]));
        expect(await store.write((tx) => tx.project(project).putObjectsAsForms([entry(0), entry(1), entry(2), entry(3)]))).toBe(-1);
        // A wrong depth (on a base put in the same call, and on a stored one) stops the call there.
        expect(await store.write((tx) => tx.project(project).putObjectsAsForms([entry(4), entry(5, 9)]))).toBe(1);
        expect(await store.write((tx) => tx.project(project).putObjectsAsForms([entry(5, 2)]))).toBe(0);
        // A self-reference does not fit either; a commit is refused whole.
        expect(await store.write((tx) => tx.project(project).putObjectsAsForms([{ ...entry(5), form: { ...entry(5).form, delta: { base: oids[5], bytes: 1, depth: 1 } } }]))).toBe(0);
        await expect(store.write((tx) => tx.project(project).putObjectsAsForms([{ ...entry(0), oid: hashObject('commit', versions[0]), type: 'commit' as const }]))).rejects.toThrow();
        store.read((tx) => {
          const p = tx.project(project);
          versions.slice(0, 5).forEach((body, index) => {
            expect(p.getObject(oids[index])).toEqual({ type: 'blob', body });
            expect(p.peekDeflated(oids[index])!.delta?.depth ?? 0).toBe(index);
          });
          expect(p.hasObject(oids[5])).toBe(false);
        });
      });
    });

    describe('many pack-ready forms in one write (a seed, a push)', () => {
      it('read back inside the write and after it, across several hundred KB, and an aborted write leaves none', async () => {
        const project = freshProject();
        // Incompressible bodies (about 2 KB deflated each, 600 KB in all), and a delta chain among them.
        const bodies = Array.from({ length: 300 }, (_, index) => Buffer.concat([Buffer.from(`body ${index}\n`), randomBytes(2000)]));
        const oids = bodies.map((body) => hashObject('blob', body));
        const edited = Buffer.concat([bodies[0], Buffer.from('one more line\n')]);
        const editedOid = hashObject('blob', edited);
        const seen = await store.write((tx) => {
          const p = tx.project(project);
          bodies.forEach((body, index) => expect(p.putObjectAsForm(oids[index], 'blob', body.length, { deflated: deflateSync(body) })).toBe(true));
          const delta = createDelta(bodies[0], edited);
          expect(p.putObjectAsForm(editedOid, 'blob', edited.length, { deflated: deflateSync(delta), delta: { base: oids[0], bytes: delta.length, depth: 1 } })).toBe(true);
          // A second put of a form is refused, as for a form kept on its own.
          expect(p.putObjectAsForm(oids[7], 'blob', bodies[7].length, { deflated: deflateSync(bodies[7]) })).toBe(true);
          expect(p.peekDeflated(oids[7])?.inflatedBytes).toBe(bodies[7].length);
          return [p.getObject(oids[0])?.body, p.getObject(oids[299])?.body, p.getObject(editedOid)?.body];
        });
        expect(seen).toEqual([bodies[0], bodies[299], edited]);
        store.read((tx) => {
          const p = tx.project(project);
          bodies.forEach((body, index) => {
            expect(p.getObject(oids[index])?.body.equals(body)).toBe(true);
            expect(p.objectSize(oids[index])).toBe(body.length);
            expect(Buffer.from(p.peekDeflated(oids[index])!.deflated)).toEqual(deflateSync(body));
          });
          expect(p.getObject(editedOid)?.body).toEqual(edited);
          expect(p.peekDeflated(editedOid)?.delta?.depth).toBe(1);
        });

        const lost = Array.from({ length: 60 }, (_, index) => Buffer.from(`lost ${index} `.repeat(50)));
        await expect(
          store.write((tx) => {
            const p = tx.project(project);
            for (const body of lost) p.putObjectAsForm(hashObject('blob', body), 'blob', body.length, { deflated: deflateSync(body) });
            throw new Error('abort');
          }),
        ).rejects.toThrow('abort');
        store.read((tx) => {
          for (const body of lost) expect(tx.project(project).hasObject(hashObject('blob', body))).toBe(false);
        });
        // The forms go with their project.
        while ((await store.write((tx) => tx.dropProjectKeys(project, 1000))) > 0);
        store.read((tx) => {
          expect(tx.project(project).hasObject(oids[0])).toBe(false);
          expect(tx.project(project).findObjectsByPrefix('', 10)).toEqual([]);
        });
      });
    });

    describe('records', () => {
      it('put, get, replace, delete and list by prefix in key order', async () => {
        const prefix = `contract/${freshProject()}/`;
        const keys = ['b', 'a', 'c/1', 'c/2', 'ab'].map((k) => prefix + k);
        await store.write((tx) => {
          keys.forEach((key, index) => tx.putRecord(key, { index, nested: { list: [index, 'x'] } }));
          tx.putRecord(`${prefix.slice(0, -1)}x`, 'outside the prefix');
        });
        store.read((tx) => {
          expect(tx.getRecord(keys[0])).toEqual({ index: 0, nested: { list: [0, 'x'] } });
          expect(tx.getRecord(`${prefix}missing`)).toBeUndefined();
          const listed = tx.listRecords<{ index: number }>(prefix);
          expect(listed.map((r) => r.key.slice(prefix.length))).toEqual(['a', 'ab', 'b', 'c/1', 'c/2']);
          expect(listed[0].value.index).toBe(1);
          const reversed = tx.listRecords(prefix, { reverse: true });
          expect(reversed.map((r) => r.key.slice(prefix.length))).toEqual(['c/2', 'c/1', 'b', 'ab', 'a']);
          expect(tx.listRecords(prefix, { limit: 2 }).map((r) => r.key.slice(prefix.length))).toEqual(['a', 'ab']);
          expect(tx.listRecords(prefix, { after: `${prefix}ab` }).map((r) => r.key.slice(prefix.length))).toEqual(['b', 'c/1', 'c/2']);
          expect(tx.listRecords(prefix, { reverse: true, after: `${prefix}b`, limit: 1 }).map((r) => r.key.slice(prefix.length))).toEqual(['ab']);
          expect(tx.listRecords(`${prefix}c/`).map((r) => r.key.slice(prefix.length))).toEqual(['c/1', 'c/2']);
        });
        await store.write((tx) => {
          tx.putRecord(keys[0], 'replaced');
          tx.deleteRecord(keys[1]);
          tx.deleteRecord(`${prefix}never-existed`);
        });
        store.read((tx) => {
          expect(tx.getRecord(keys[0])).toBe('replaced');
          expect(tx.getRecord(keys[1])).toBeUndefined();
          expect(tx.listRecords(prefix).length).toBe(4);
        });
      });
    });

    describe('dropProject', () => {
      async function populate(project: number, tag: string) {
        return store.write((tx) => {
          const p = tx.project(project);
          const blob = p.putObject('blob', Buffer.from(`shared content`));
          const own = p.putObject('blob', Buffer.from(`content of ${tag}`));
          const tree = p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid: blob }]));
          const commit = p.putObject('commit', commitBody(tree, [], 1_000, `${tag}\n`));
          p.putCommitObjects(commit, Buffer.concat([Buffer.from([2]), tree]));
          p.casRef('refs/heads/main', null, commit);
          p.putWorkingTree('main', { tree, locks: ['f'] });
          p.bumpVersion();
          tx.putRecord(`contract/${project}/meta`, tag);
          return { blob, own, tree, commit };
        });
      }

      it('frees every object, commit, ref, node and version of one project and nothing of another', async () => {
        // Neighbours on both sides of the dropped project's key range.
        const [before, dropped, after] = [freshProject(), freshProject(), freshProject()];
        const kept = await populate(before, 'before');
        const gone = await populate(dropped, 'dropped');
        await populate(after, 'after');
        // A few entries per write, so the drop takes several transactions and the limit is exercised.
        let writes = 0;
        while ((await store.write((tx) => tx.dropProjectKeys(dropped, 3))) > 0) writes++;
        expect(writes).toBeGreaterThan(2);
        store.read((tx) => {
          const p = tx.project(dropped);
          for (const oid of Object.values(gone)) expect(p.hasObject(oid)).toBe(false);
          expect(p.findObjectsByPrefix('', 100)).toEqual([]);
          expect(p.getCommitInfo(gone.commit)).toBeUndefined();
          expect(p.getCommitObjects(gone.commit)).toBeUndefined();
          expect(p.listRefs('')).toEqual([]);
          expect(p.getWorkingTree('main')).toBeUndefined();
          expect(p.getVersion()).toBe(0);
          for (const project of [before, after]) {
            const q = tx.project(project);
            expect(q.findObjectsByPrefix('', 100).length).toBe(4);
            expect(q.hasObject(kept.blob)).toBe(true);
            expect(q.getCommitInfo(q.getRef('refs/heads/main')!)).toBeDefined();
            expect(q.getCommitObjects(q.getRef('refs/heads/main')!)).toHaveLength(21);
            expect(q.getWorkingTree('main')?.locks).toEqual(['f']);
            expect(q.getVersion()).toBe(1);
            // Records belong to the caller, not to the project; dropProjectKeys leaves them.
            expect(tx.getRecord(`contract/${project}/meta`)).toBeDefined();
          }
        });
        // The dropped project's number can be used again from scratch.
        const again = await populate(dropped, 'again');
        store.read((tx) => {
          expect(tx.project(dropped).findObjectsByPrefix('', 100).length).toBe(4);
          expect(tx.project(dropped).hasObject(again.own)).toBe(true);
          expect(tx.project(dropped).getVersion()).toBe(1);
        });
      });

      it('drops a project with many keys at most keysMax a transaction', async () => {
        const project = freshProject();
        const keep = freshProject();
        await store.write((tx) => {
          for (let i = 0; i < 3000; i++) tx.project(project).putObject('blob', Buffer.from(`many ${i}`));
          tx.project(keep).putObject('blob', Buffer.from('keep'));
        });
        const removed: number[] = [];
        for (let count = -1; count !== 0; ) removed.push((count = await store.write((tx) => tx.dropProjectKeys(project, 1000))));
        expect(removed).toEqual([1000, 1000, 1000, 0]);
        store.read((tx) => {
          expect(tx.project(project).findObjectsByPrefix('', 10)).toEqual([]);
          expect(tx.project(keep).findObjectsByPrefix('', 10).length).toBe(1);
        });
      });
    });

    describe('durability', () => {
      it('resolves write() after the commit, and the data survives close and reopen', async () => {
        const project = freshProject();
        const body = Buffer.from('survives');
        const pending = store.write((tx) => {
          const p = tx.project(project);
          const oid = p.putObject('blob', body);
          p.casRef('refs/heads/main', null, oid);
          p.putWorkingTree('main', { tree: EMPTY_TREE_OID, locks: ['f', 'g/h'] });
          p.bumpVersion();
          tx.putRecord(`contract/${project}/durable`, { ok: true });
          return oid;
        });
        expect(pending).toBeInstanceOf(Promise);
        const oid = await pending;
        await store.close();
        expect(() => store.read(() => 1)).toThrow();
        store = openStore();
        store.read((tx) => {
          const p = tx.project(project);
          expect(p.getObject(oid)).toEqual({ type: 'blob', body });
          expect(p.getRef('refs/heads/main')).toEqual(oid);
          expect(p.getWorkingTree('main')).toEqual({ tree: EMPTY_TREE_OID, locks: ['f', 'g/h'] });
          expect(p.getVersion()).toBe(1);
          expect(tx.getRecord(`contract/${project}/durable`)).toEqual({ ok: true });
        });
      });
    });
  });
}
