/**
 * The asynchronous interface's contract on PostgreSQL (src/store/postgres/), on a real embedded
 * server (test/support/postgres.ts), plus what only this backend does: writers on two nodes (two
 * stores on one database) that stay serialisable, listings that writers on another node cannot slip
 * a record into, deadlocks that run a callback again, garbage collection's locks between a removal
 * and a writer that relies on what it removes (and a node's cache that still holds a removed
 * object), generations of commits put in any order,
 * durable commits whatever the database's default, the node's object cache, and a database that
 * cannot be reached or drops the connection mid-transaction (an error the service answers 503, not a hang).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { EMPTY_TREE_OID, hashObject, type Oid } from '../../src/git/oid.js';
import { encodeTree } from '../../src/git/tree.js';
import type { AsyncStoreWriteTx, CollectionWrites, ProjectWrites } from '../../src/store/asyncTypes.js';
import { contractError } from '../../src/service/domainErrors.js';
import { connectionOptions, PostgresStore } from '../../src/store/postgres/store.js';
import { StoreUnavailableError } from '../../src/store/types.js';
import { freePort } from '../support/process.js';
import { freshDatabase } from '../support/postgres.js';
import { asyncStoreContract } from './asyncContract.js';
import { projectNumbers } from './contractSupport.js';

let database: { url: string; drop: () => Promise<void> };
let admin: postgres.Sql;
beforeAll(async () => {
  database = await freshDatabase('async_contract');
  admin = postgres(database.url, { max: 1, onnotice: () => undefined });
}, 120_000);
afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

asyncStoreContract('PostgresStore', () => new PostgresStore({ url: database.url }), { packForms: true, formsAlone: false, collection: true, visitObjects: false });

/** Projects of these tests (the contract's start at 5000). */
const freshProject = projectNumbers(90_000);

/** Two stores on one database: two nodes of the service. */
async function withNodes(test: (nodes: [PostgresStore, PostgresStore]) => Promise<void>): Promise<void> {
  const nodes: [PostgresStore, PostgresStore] = [await PostgresStore.open({ url: database.url }), await PostgresStore.open({ url: database.url })];
  try {
    await test(nodes);
  } finally {
    await Promise.all(nodes.map((node) => node.close()));
  }
}

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('PostgresStore writers on two nodes', () => {
  it('lose no update of one record: 60 increments, each callback run once (writers wait for the lock, never run again)', async () => {
    await withNodes(async (nodes) => {
      const key = `pg/${freshProject()}/counter`;
      await nodes[0].write(async (tx) => tx.putRecord(key, 0));
      let runs = 0;
      await Promise.all(
        Array.from({ length: 60 }, (_, index) =>
          nodes[index % 2].write(async (tx) => {
            runs++;
            tx.putRecord(key, (await tx.getRecord<number>(key))! + 1);
          }),
        ),
      );
      expect(await nodes[1].read((tx) => tx.getRecord(key))).toBe(60);
      expect(runs).toBe(60);
    });
  });

  it('move one branch in turn: every move lands on the one before, and the version counts them', async () => {
    await withNodes(async (nodes) => {
      const project = freshProject();
      const moves = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          nodes[index % 2].write(async (tx) => {
            const p = tx.project(project);
            const saw = (await p.getRef('refs/heads/main')) ?? null;
            const wrote = hashObject('commit', Buffer.from(`node writer ${index}`));
            await p.casRef('refs/heads/main', saw, wrote);
            return { saw, wrote, version: await p.bumpVersion() };
          }),
        ),
      );
      const ordered = [...moves].sort((x, y) => x.version - y.version);
      expect(ordered.map((move) => move.version)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
      ordered.forEach((move, index) => expect(move.saw).toEqual(index === 0 ? null : ordered[index - 1].wrote));
      expect(await nodes[0].read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(ordered[39].wrote);
    });
  });

  it('never let a record slip under a listing: each writer lists the queue and adds the next entry, and no two take one number', async () => {
    await withNodes(async (nodes) => {
      const prefix = `pg/${freshProject()}/queue/`;
      const writers = 40;
      await Promise.all(
        Array.from({ length: writers }, (_, index) =>
          nodes[index % 2].write(async (tx) => {
            const listed = await tx.listRecords<number>(prefix);
            tx.putRecord(`${prefix}${String(listed.length).padStart(3, '0')}`, index);
          }),
        ),
      );
      const entries = await nodes[0].read((tx) => tx.listRecords<number>(prefix));
      expect(entries.map((entry) => entry.key.slice(prefix.length))).toEqual(Array.from({ length: writers }, (_, index) => String(index).padStart(3, '0')));
      expect(new Set(entries.map((entry) => entry.value)).size).toBe(writers);
    });
  });
});

describe('PostgresStore deadlocks', () => {
  it('roll one of two writers back when they wait for each other, and run its callback again', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const [one, two] = [freshProject(), freshProject()];
      const holding = [signal(), signal()];
      let runs = 0;
      // Each takes its first project's lock, waits until the other holds its own, then asks for the other's.
      const writer = (index: 0 | 1, first: number, second: number) =>
        store.write(async (tx) => {
          runs++;
          await tx.project(first).bumpVersion();
          holding[index].resolve();
          await holding[1 - index].promise;
          await tx.project(second).bumpVersion();
        });
      await Promise.all([writer(0, one, two), writer(1, two, one)]);
      // At least one run again; on a loaded machine a run again can meet the other writer's lock
      // once more. Each bump counts once whatever the runs (the versions below).
      expect(runs).toBeGreaterThanOrEqual(3);
      await store.read(async (tx) => {
        expect(await tx.project(one).getVersion()).toBe(2);
        expect(await tx.project(two).getVersion()).toBe(2);
      });
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore dropping a project', () => {
  // Another session holds a key-share lock on one of the project's two objects (as the deflate
  // cache's insert of a form does) and, once the drop waits for it, asks for the other one. Where
  // the drop deleted that other one first, the two wait for each other: PostgreSQL rolls the drop
  // back (its wait began first, so its check finds the cycle first) and the drop runs again.
  // Which object the drop deletes first is the plan's, so both are tried; one must deadlock.
  it('runs a drop again after a deadlock with a session that locks the rows it deletes, and drops everything', async () => {
    const store = await PostgresStore.open({ url: database.url });
    const deadlocks = async () => (await admin<Array<{ count: number }>>`SELECT deadlocks::int AS count FROM pg_stat_database WHERE datname = current_database()`)[0].count;
    const before = await deadlocks();
    try {
      for (const lockedFirst of [0, 1]) {
        const project = freshProject();
        const oids = await store.write(async (tx) => [tx.project(project).putObject('blob', Buffer.from(`one ${project}`)), tx.project(project).putObject('blob', Buffer.from(`two ${project}`))]);
        const [first, second] = lockedFirst === 0 ? oids : [oids[1], oids[0]];
        const other = postgres(database.url, { max: 1, onnotice: () => undefined });
        const firstHeld = signal();
        const askSecond = signal();
        const finish = signal();
        const holder = other
          .begin(async (sql) => {
            await sql`SELECT 1 FROM treehouse_objects WHERE project_id = ${project} AND oid = ${first} FOR KEY SHARE`;
            firstHeld.resolve();
            await askSecond.promise;
            await sql`SELECT 1 FROM treehouse_objects WHERE project_id = ${project} AND oid = ${second} FOR KEY SHARE`.catch(() => undefined);
            await finish.promise;
          })
          .catch(() => undefined);
        await firstHeld.promise;
        const dropped = store.dropProjectKeys(project, 100);
        dropped.catch(() => undefined);
        // The drop waits for the first object; the other session then asks for the second within a
        // few ms, well inside PostgreSQL's deadlock_timeout (1 s) of the drop's wait.
        const waiting = async () => (await admin<Array<{ count: number }>>`SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0].count;
        for (let look = 0; look < 500 && (await waiting()) === 0; look++) await new Promise((resolve) => setTimeout(resolve, 5));
        askSecond.resolve();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        finish.resolve();
        await holder;
        await other.end();
        expect(await dropped).toBeGreaterThanOrEqual(2);
        const [{ count }] = await admin<Array<{ count: number }>>`SELECT count(*)::int AS count FROM treehouse_objects WHERE project_id = ${project}`;
        expect(count).toBe(0);
      }
      expect(await deadlocks()).toBeGreaterThan(before);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore deadlocks at the commit', () => {
  it('run the callback again when the locks a commit takes for its records deadlock with another writer', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const prefix = `pg/${freshProject()}/`;
      const [first, second] = [`${prefix}first`, `${prefix}second`];
      const holding = [signal(), signal()];
      let runs = 0;
      // Each reads (and so locks) one record, waits until the other holds its own, then writes the other's.
      const writer = (index: 0 | 1, read: string, written: string) =>
        store.write(async (tx) => {
          runs++;
          await tx.getRecord(read);
          holding[index].resolve();
          await holding[1 - index].promise;
          tx.putRecord(written, index);
        });
      await Promise.all([writer(0, first, second), writer(1, second, first)]);
      expect(runs).toBe(3);
      const values = await store.read(async (tx) => [await tx.getRecord<number>(first), await tx.getRecord<number>(second)]);
      // Whichever ran again, each record holds what the writer of it put.
      expect(values).toEqual([1, 0]);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore garbage collection', () => {
  type Collecting = ProjectWrites & CollectionWrites;
  const collecting = (tx: AsyncStoreWriteTx, project: number) => tx.project(project) as Collecting;
  const begin = (store: PostgresStore, project: number) =>
    store.write(async (tx) => collecting(tx, project).beginCollection({ id: `pg-${project}`, startedAt: '2026-01-01T00:00:00.000Z' }));

  /** Waits until `count` sessions of the test's database wait for a lock (bounded: 2,000 looks, 10 ms apart). */
  async function lockWaiters(count: number): Promise<void> {
    for (let look = 0; look < 2_000; look++) {
      const [{ waiting }] = await admin<Array<{ waiting: number }>>`
        SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      if (waiting >= count) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`fewer than ${count} sessions came to wait for a lock`);
  }

  /** A transaction of the test's own on the database, held open until `end` says commit or roll back. */
  function heldTransaction(statements: (sql: postgres.TransactionSql) => Promise<unknown>): { ready: Promise<void>; end: (commit: boolean) => Promise<void> } {
    const connection = postgres(database.url, { max: 1, onnotice: () => undefined });
    const ready = signal();
    const decided = signal();
    let commit = false;
    const finished = connection
      .begin(async (sql) => {
        await statements(sql);
        ready.resolve();
        await decided.promise;
        if (!commit) throw new Error('rolled back on purpose');
      })
      .catch(() => undefined);
    return {
      ready: ready.promise,
      end: async (decision) => {
        commit = decision;
        decided.resolve();
        await finished;
        await connection.end();
      },
    };
  }

  it('makes a removal wait for a writer that relies on the object, and run again when that writer journalled what it made reachable', async () => {
    await withNodes(async ([writerNode, collectorNode]) => {
      const project = freshProject();
      const relied = await writerNode.write(async (tx) => tx.project(project).putObject('blob', Buffer.from('relied on by a new tree')));
      await begin(collectorNode, project);
      // The writer's node learns that a collection runs (its first write runs twice: see below), so
      // the write below waits for the collection's row before it sends the rest.
      await writerNode.write(async (tx) => tx.project(project).hasObjects([relied]));
      // Another session's uncommitted insert of an object the writer also puts: the writer's commit
      // waits for it after locking what it read as present.
      const held = Buffer.from('held by another session');
      const other = heldTransaction((sql) => sql`INSERT INTO treehouse_objects (project_id, oid, type, body) VALUES (${project}, ${hashObject('blob', held)}, 3, ${held})`);
      await other.ready;
      let writerRuns = 0;
      const written = writerNode.write(async (tx) => {
        writerRuns++;
        const p = tx.project(project);
        const [present] = await p.hasObjects([relied]);
        if (!present) p.putObject('blob', Buffer.from('relied on by a new tree'));
        p.putObject('blob', held);
        return p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid: relied }]));
      });
      await lockWaiters(1);
      let removerRuns = 0;
      const journalSeen: string[][] = [];
      const removal = collectorNode.write(async (tx) => {
        removerRuns++;
        const p = collecting(tx, project);
        const journalled = await p.listJournal(null, 100);
        journalSeen.push(journalled.map((oid) => oid.toString('hex')));
        // As the sweep does: a journal entry is walked first, and what it reaches is not removed.
        if (journalled.length === 0) p.removeStored([relied]);
      });
      // The removal's DELETE waits for the writer's lock on the object it read as present.
      await lockWaiters(2);
      await other.end(false);
      const tree = await written;
      await removal;
      expect(writerRuns).toBe(1);
      // The removal read the journal again after its DELETE, found the writer's entries, and ran again.
      expect(removerRuns).toBe(2);
      expect(journalSeen[0]).toEqual([]);
      expect(journalSeen[1]).toEqual([tree, hashObject('blob', held)].map((oid) => oid.toString('hex')).sort());
      expect(await collectorNode.read((tx) => tx.project(project).hasObjects([relied, tree]))).toEqual([true, true]);
    });
  });

  it('runs a write again when it sent its statements as if no collection ran and one had begun on another node, and journals it then', async () => {
    await withNodes(async ([writerNode, collectorNode]) => {
      const project = freshProject();
      await writerNode.write(async (tx) => tx.project(project).putObject('blob', Buffer.from('before the collection')));
      await begin(collectorNode, project);
      const runsOf = async (body: string): Promise<{ runs: number; oid: Oid }> => {
        let runs = 0;
        const oid = await writerNode.write(async (tx) => {
          runs++;
          return tx.project(project).putObject('blob', Buffer.from(body));
        });
        return { runs, oid };
      };
      // The writer's node never saw the collection begin: its first run assumed none, and was rolled back.
      const first = await runsOf('first during the collection');
      expect(first.runs).toBe(2);
      // Now it knows: the next write waits for the collection's row and runs once.
      const second = await runsOf('second during the collection');
      expect(second.runs).toBe(1);
      const journal = await collectorNode.write(async (tx) => collecting(tx, project).listJournal(null, 100));
      expect(journal.map((oid) => oid.toString('hex')).sort()).toEqual([first.oid, second.oid].map((oid) => oid.toString('hex')).sort());
      await collectorNode.write(async (tx) => collecting(tx, project).endCollection());
      const journalled = async () => (await admin<Array<{ count: number }>>`SELECT count(*)::int AS count FROM treehouse_collection_journal WHERE project_id = ${project}`)[0].count;
      const atEnd = await journalled();
      // The first write after the end finds none, and those after it assume none again: once each, journalling nothing.
      expect((await runsOf('after the collection')).runs).toBe(1);
      expect((await runsOf('after the collection, again')).runs).toBe(1);
      expect(await journalled()).toBe(atEnd);
    });
  });

  it('runs a writer again when an object it read as present was removed while it waited to commit, and it then stores the object', async () => {
    await withNodes(async ([writerNode, collectorNode]) => {
      const project = freshProject();
      const body = Buffer.from('removed while the writer commits');
      const doomed = await writerNode.write(async (tx) => tx.project(project).putObject('blob', body));
      await begin(collectorNode, project);
      const journalled = await writerNode.write(async (tx) => tx.project(project).putObject('blob', Buffer.from('journalled')));
      // Another session locks the journal entry the removal forgets: the removal waits there, after its DELETE.
      const other = heldTransaction((sql) => sql`SELECT 1 FROM treehouse_collection_journal WHERE project_id = ${project} AND oid = ${journalled} FOR UPDATE`);
      await other.ready;
      let removerRuns = 0;
      const removal = collectorNode.write(async (tx) => {
        removerRuns++;
        const p = collecting(tx, project);
        expect(await p.listJournal(null, 100)).toEqual([journalled]);
        p.removeStored([doomed]);
        p.forgetJournal([journalled]);
      });
      await lockWaiters(1);
      let writerRuns = 0;
      const written = writerNode.write(async (tx) => {
        writerRuns++;
        const p = tx.project(project);
        const [present] = await p.hasObjects([doomed]);
        if (!present) p.putObject('blob', body);
        return p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid: doomed }]));
      });
      // The writer's check of what it read as present waits for the removal's DELETE.
      await lockWaiters(2);
      await other.end(true);
      await removal;
      const tree = await written;
      expect(removerRuns).toBe(1);
      expect(writerRuns).toBe(2);
      await writerNode.read(async (tx) => {
        expect(await tx.project(project).getObjects([doomed])).toEqual([{ type: 'blob', body }]);
        expect(await tx.project(project).hasObjects([tree])).toEqual([true]);
      });
    });
  });

  it("runs a writer again when its node's cache answered an object a collection on another node removed, after the collection ended", async () => {
    await withNodes(async ([cachingNode, collectorNode]) => {
      const project = freshProject();
      const body = Buffer.from('cached on one node, collected by the other');
      const oid = await cachingNode.write(async (tx) => tx.project(project).putObject('blob', body));
      expect(await cachingNode.read((tx) => tx.project(project).getObjects([oid]))).toEqual([{ type: 'blob', body }]);
      await begin(collectorNode, project);
      await collectorNode.write(async (tx) => collecting(tx, project).removeStored([oid]));
      await collectorNode.write(async (tx) => collecting(tx, project).endCollection());
      // The collecting node forgets what it removed; the other node's cache still answers it to readers.
      expect(await collectorNode.read((tx) => tx.project(project).hasObjects([oid]))).toEqual([false]);
      expect(await cachingNode.read((tx) => tx.project(project).hasObjects([oid]))).toEqual([true]);
      let runs = 0;
      const tree = await cachingNode.write(async (tx) => {
        runs++;
        const p = tx.project(project);
        const [present] = await p.hasObjects([oid]);
        if (!present) p.putObject('blob', body);
        return p.putObject('tree', encodeTree([{ name: 'f', mode: '100644', oid }]));
      });
      // The commit found it gone: the node forgot it, and the callback ran again and stored it.
      expect(runs).toBe(2);
      expect(await collectorNode.read((tx) => tx.project(project).getObjects([oid, tree]).then((objects) => objects.map((object) => object?.type)))).toEqual(['blob', 'tree']);
    });
  });
});

describe('PostgresStore commit index', () => {
  it('gives generations from the commits put in one transaction in any order, children first too (2,000 merges, no recursion)', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const project = freshProject();
      const signature = { name: 'H', email: 'h@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const commits: Array<{ oid: Oid; body: Buffer }> = [];
      for (let index = 0; index < 2000; index++) {
        // Every commit merges the two before it: a walk that is not memoised takes 2^i steps.
        const parents = commits.slice(-2).map((commit) => commit.oid).reverse();
        const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: signature, committer: signature, extraHeaders: [], message: `c${index}\n` });
        commits.push({ oid: hashObject('commit', body), body });
      }
      const inside = await store.write(async (tx) => {
        const p = tx.project(project);
        for (const commit of [...commits].reverse()) p.putObjectWithId(commit.oid, 'commit', commit.body);
        return (await p.getCommitInfos(commits.map((commit) => commit.oid))).map((info) => info?.generation);
      });
      const expected = Array.from({ length: 2000 }, (_, index) => index + 1);
      expect(inside).toEqual(expected);
      const stored = await store.read(async (tx) => tx.project(project).getCommitInfos(commits.map((commit) => commit.oid)));
      expect(stored.map((info) => info?.generation)).toEqual(expected);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore commit object lists', () => {
  it('indexes the lists of more commits than one statement takes (10,001), put with their commits in one transaction', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const project = freshProject();
      const signature = { name: 'L', email: 'l@example.com', timestamp: 1_700_000_000, timezone: '+0000' };
      const commits: Array<{ oid: Oid; body: Buffer }> = [];
      for (let index = 0; index < 10_001; index++) {
        const parents = commits.slice(-1).map((commit) => commit.oid);
        const body = encodeCommit({ tree: EMPTY_TREE_OID, parents, author: signature, committer: signature, extraHeaders: [], message: `l${index}\n` });
        commits.push({ oid: hashObject('commit', body), body });
      }
      // One record each (a kind byte and an id; src/git/introducedObjects.ts).
      const list = (index: number) => Buffer.concat([Buffer.from([index % 2]), commits[index].oid]);
      await store.write(async (tx) => {
        const p = tx.project(project);
        for (const commit of commits) p.putObjectWithId(commit.oid, 'commit', commit.body);
        // Newest first: the first statement of lists names the commit in the second of commits.
        for (let index = commits.length - 1; index >= 0; index--) p.putCommitObjects(commits[index].oid, list(index));
      });
      await store.read(async (tx) => {
        const p = tx.project(project);
        for (const index of [0, 9_999, 10_000]) expect(await p.getCommitObjects(commits[index].oid)).toEqual(list(index));
      });
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore large writes (COPY through a session table)', () => {
  /** `count` distinct blob bodies of about `bytes` each, every byte value among them. */
  function bodies(count: number, bytes: number, seed: string): Buffer[] {
    return Array.from({ length: count }, (_, index) => {
      const body = Buffer.alloc(bytes + (index % 7));
      for (let at = 0; at < body.length; at++) body[at] = (at * 31 + index * 17 + seed.length) & 0xff;
      return Buffer.concat([Buffer.from(`${seed} ${index}\n`), body]);
    });
  }

  it('stores a large write of two projects byte for byte, annexes and an empty blob too, and reports only the objects that were not stored yet', async () => {
    // One write connection: both projects' objects pass through the one session table.
    const store = await PostgresStore.open({ url: database.url, writeConnectionsMax: 1 });
    const reader = await PostgresStore.open({ url: database.url, objectCacheBytes: 0, commitCacheBytes: 0 });
    try {
      const [a, b] = [freshProject(), freshProject()];
      const early = bodies(10, 100, 'early');
      await store.write(async (tx) => {
        for (const body of early) tx.project(a).putObject('blob', body);
      });
      const reported = new Map<number, Set<string>>();
      store.onObjectsStored((project, stored) => reported.set(project, new Set(stored.map((object) => object.oid.toString('hex')))));
      const inA = [...early, ...bodies(2_489, 1_000, 'a'), Buffer.alloc(0), bodies(1, 300_000, 'large')[0]];
      const inB = [...early, ...bodies(2_100, 900, 'b')];
      const annex = (index: number) => (index % 5 === 0 ? Buffer.from(`annex ${index}`) : undefined);
      const [oidsA, oidsB] = await store.write(async (tx) => [
        inA.map((body, index) => tx.project(a).putObject('blob', body, annex(index))),
        inB.map((body) => tx.project(b).putObject('blob', body)),
      ]);
      expect(reported.get(a)).toEqual(new Set(oidsA.slice(early.length).map((oid) => oid.toString('hex'))));
      expect(reported.get(b)).toEqual(new Set(oidsB.map((oid) => oid.toString('hex'))));
      // The early objects keep their first copy, without the annex the large write gave some of them.
      const expectedA = inA.map((body, index) => ({ type: 'blob', body, annex: index < early.length ? null : (annex(index) ?? null) }));
      expect(await reader.read((tx) => tx.project(a).getObjectsWithAnnex(oidsA))).toEqual(expectedA);
      expect(await reader.read((tx) => tx.project(b).getObjectsWithAnnex(oidsB))).toEqual(inB.map((body) => ({ type: 'blob', body, annex: null })));
      const counts = await admin<Array<{ project_id: string; count: string }>>`
        SELECT project_id, count(*) FROM treehouse_objects WHERE project_id IN (${a}, ${b}) GROUP BY project_id ORDER BY project_id`;
      expect(counts.map((row) => [Number(row.project_id), Number(row.count)])).toEqual([
        [a, inA.length],
        [b, inB.length],
      ]);
    } finally {
      await Promise.all([store.close(), reader.close()]);
    }
  });

  it('runs a large write again when another transaction stores one of its objects during its COPY, and stores each object once', async () => {
    const store = await PostgresStore.open({ url: database.url });
    const other = postgres(database.url, { max: 1, onnotice: () => undefined });
    try {
      const project = freshProject();
      const all = bodies(2_500, 500, 'raced');
      const oids = all.map((body) => hashObject('blob', body));
      const raced = 1_234;
      const reported: string[] = [];
      store.onObjectsStored((_, stored) => reported.push(...stored.map((object) => object.oid.toString('hex'))));
      let runs = 0;
      // Another writer's row of one of the objects, not committed: the write looks, does not see it,
      // copies it, and its COPY waits at that row until the other commits.
      let writing: Promise<void> | undefined;
      await other.begin(async (tx) => {
        await tx`INSERT INTO treehouse_objects (project_id, oid, type, body) VALUES (${project}, ${oids[raced]}, 3, ${all[raced]})`;
        writing = store.write(async (wtx) => {
          runs++;
          for (const body of all) wtx.project(project).putObject('blob', body);
        });
        writing.catch(() => undefined);
        for (;;) {
          const waiting = await admin`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'treehouse' AND wait_event_type = 'Lock'`;
          if (waiting.length > 0) break;
          await new Promise((done) => setTimeout(done, 20));
        }
      });
      await writing;
      expect(runs).toBe(2);
      expect(new Set(reported)).toEqual(new Set(oids.filter((_, index) => index !== raced).map((oid) => oid.toString('hex'))));
      expect(reported.length).toBe(all.length - 1);
      const [{ count }] = await admin<Array<{ count: string }>>`SELECT count(*) FROM treehouse_objects WHERE project_id = ${project}`;
      expect(Number(count)).toBe(all.length);
      expect(await store.read((tx) => tx.project(project).getObjects(oids))).toEqual(all.map((body) => ({ type: 'blob', body })));
    } finally {
      await Promise.all([store.close(), other.end()]);
    }
  });

  it('leaves nothing of a large write that fails after its objects were sent, and the next one on the same connection stores only its own', async () => {
    const store = await PostgresStore.open({ url: database.url, writeConnectionsMax: 1 });
    try {
      const project = freshProject();
      const doomed = bodies(2_000, 600, 'doomed');
      const unstoredCommit = hashObject('commit', Buffer.from('never stored'));
      const failed = await store
        .write(async (tx) => {
          const p = tx.project(project);
          for (const body of doomed) p.putObject('blob', body);
          // Indexed after the objects are sent, and refused: the commit is not stored.
          p.putCommitObjects(unstoredCommit, Buffer.alloc(21));
        })
        .catch((error: unknown) => error);
      expect(String(failed)).toMatch(/is not stored/);
      const kept = bodies(2_000, 600, 'kept');
      const reported: string[] = [];
      store.onObjectsStored((_, stored) => reported.push(...stored.map((object) => object.oid.toString('hex'))));
      const oids = await store.write(async (tx) => kept.map((body) => tx.project(project).putObject('blob', body)));
      expect(new Set(reported)).toEqual(new Set(oids.map((oid) => oid.toString('hex'))));
      const [{ count }] = await admin<Array<{ count: string }>>`SELECT count(*) FROM treehouse_objects WHERE project_id = ${project}`;
      expect(Number(count)).toBe(kept.length);
      const doomedOids = doomed.map((body) => hashObject('blob', body));
      expect((await store.read((tx) => tx.project(project).hasObjects(doomedOids))).some(Boolean)).toBe(false);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore records', () => {
  it('keeps keys with quotes, backslashes, commas, braces and non-ASCII text, written and deleted in one statement', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const prefix = `pg/${freshProject()}/`;
      const odd = ['a"b', 'back\\slash', 'com,ma', '{brace}', 'NULL', 'caf\u00e9', '\u{1f600}', ' space '].map((tail) => prefix + tail);
      await store.write(async (tx) => odd.forEach((key, index) => tx.putRecord(key, { index })));
      const listed = await store.read((tx) => tx.listRecords<{ index: number }>(prefix));
      const byteOrder = [...odd].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      expect(listed.map((record) => record.key)).toEqual(byteOrder);
      for (const record of listed) expect(record.value.index).toBe(odd.indexOf(record.key));
      await store.write(async (tx) => odd.slice(0, 4).forEach((key) => tx.deleteRecord(key)));
      expect((await store.read((tx) => tx.listRecords(prefix))).map((record) => record.key)).toEqual(byteOrder.filter((key) => !odd.slice(0, 4).includes(key)));
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore durability and caching', () => {
  it('commits with synchronous_commit on even where the database defaults to off', async () => {
    const name = new URL(database.url).pathname.slice(1);
    await admin.unsafe(`ALTER DATABASE ${name} SET synchronous_commit = off`);
    const plain = postgres(database.url, { max: 1, onnotice: () => undefined });
    const storeLike = postgres(database.url, connectionOptions({}, 1));
    try {
      expect((await plain`SHOW synchronous_commit`)[0].synchronous_commit).toBe('off');
      expect((await storeLike`SHOW synchronous_commit`)[0].synchronous_commit).toBe('on');
    } finally {
      await admin.unsafe(`ALTER DATABASE ${name} RESET synchronous_commit`);
      await Promise.all([plain.end(), storeLike.end()]);
    }
  });

  it('answers objects it has read from its cache, and a node that has not read them from the database', async () => {
    await withNodes(async ([reader, other]) => {
      const project = freshProject();
      const body = Buffer.from('cached on the node that read it');
      const oid = await reader.write(async (tx) => tx.project(project).putObject('blob', body));
      expect(await reader.read((tx) => tx.project(project).getObjects([oid]))).toEqual([{ type: 'blob', body }]);
      // Behind both nodes' backs (no path of the store deletes one object): only the database forgets it.
      await admin`DELETE FROM treehouse_objects WHERE project_id = ${project} AND oid = ${oid}`;
      expect(await reader.read((tx) => tx.project(project).getObjects([oid]))).toEqual([{ type: 'blob', body }]);
      expect(await other.read((tx) => tx.project(project).getObjects([oid]))).toEqual([undefined]);
      // Dropping the project forgets the node's copies too.
      while ((await reader.dropProjectKeys(project, 100)) > 0);
      expect(await reader.read((tx) => tx.project(project).hasObjects([oid]))).toEqual([false]);
    });
  });

  it('keeps its object cache within its byte budget', async () => {
    const store = await PostgresStore.open({ url: database.url, objectCacheBytes: 64 * 1024 });
    try {
      const project = freshProject();
      const bodies = Array.from({ length: 64 }, (_, index) => Buffer.alloc(4096, index));
      const oids = await store.write(async (tx) => bodies.map((body) => tx.project(project).putObject('blob', body)));
      expect(await store.read((tx) => tx.project(project).getObjects(oids))).toEqual(bodies.map((body) => ({ type: 'blob', body })));
      // What the cache kept is still answered once the database has lost them all: some, within the budget.
      await admin`DELETE FROM treehouse_objects WHERE project_id = ${project}`;
      const kept = (await store.read((tx) => tx.project(project).hasObjects(oids))).filter(Boolean).length;
      expect(kept).toBeGreaterThan(0);
      expect(kept * 4096).toBeLessThanOrEqual(64 * 1024);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore when the database is unavailable', () => {
  it('rejects reads and writes with StoreUnavailableError when the database does not exist, and the service answers 503', async () => {
    const missing = database.url.replace(/\/[^/]+$/, '/no_such_database');
    const store = new PostgresStore({ url: missing });
    try {
      const read = await store.read(async (tx) => tx.getRecord('x')).catch((error: unknown) => error);
      const write = await store.write(async (tx) => tx.putRecord('x', 1)).catch((error: unknown) => error);
      for (const error of [read, write]) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(contractError(error)?.code).toBe('unavailable');
      }
      await expect(PostgresStore.open({ url: missing })).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await store.close();
    }
  });

  it('rejects with StoreUnavailableError when nothing listens on the port', async () => {
    const url = new URL(database.url);
    url.port = String(await freePort());
    const store = new PostgresStore({ url: url.toString(), connectTimeoutSeconds: 5 });
    try {
      await expect(store.read(async (tx) => tx.project(1).getVersion())).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await store.close();
    }
  });

  it('fails a write whose connection the server ends mid-transaction, writes nothing of it, and serves again after', async () => {
    // One connection per pool: the next write and read reuse the very connections that were cut
    // off (postgres.js hands the cut-off statement's error to the next session's first statement).
    const store = await PostgresStore.open({ url: database.url, writeConnectionsMax: 1, readConnectionsMax: 1 });
    try {
      const project = freshProject();
      const [a, b, c] = ['a', 'b', 'c'].map((text) => hashObject('commit', Buffer.from(text)));
      await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', null, a));
      const locked = signal();
      const terminated = signal();
      const doomed = Buffer.from('never stored');
      const writing = store.write(async (tx) => {
        const p = tx.project(project);
        await p.casRef('refs/heads/main', a, b);
        p.putObject('blob', doomed);
        tx.putRecord(`pg/${project}/doomed`, true);
        locked.resolve();
        await terminated.promise;
        await p.bumpVersion();
      });
      await locked.promise;
      const ended = await admin`
        SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'treehouse' AND state LIKE 'idle in transaction%'`;
      expect(ended.map((row) => row.ended)).toEqual([true]);
      terminated.resolve();
      const error = await writing.catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(contractError(error)?.code).toBe('unavailable');
      await store.read(async (tx) => {
        expect(await tx.project(project).getRef('refs/heads/main')).toEqual(a);
        expect(await tx.project(project).hasObjects([hashObject('blob', doomed)])).toEqual([false]);
        expect(await tx.project(project).getVersion()).toBe(0);
        expect(await tx.getRecord(`pg/${project}/doomed`)).toBeUndefined();
      });
      await store.write(async (tx) => tx.project(project).casRef('refs/heads/main', a, c));
      expect(await store.read((tx) => tx.project(project).getRef('refs/heads/main'))).toEqual(c);
    } finally {
      await store.close();
    }
  });
});

describe('PostgresStore hostile input', () => {
  it('finds no object for a prefix that is not lowercase hex or is longer than an id, nor for a limit below one, inside a write and out', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const project = freshProject();
      const oid = await store.write(async (tx) => tx.project(project).putObject('blob', Buffer.from('findable')));
      const hex = oid.toString('hex');
      const hostile: Array<[string, number]> = [
        ['zz', 10],
        [hex.slice(0, 6).toUpperCase(), 10],
        [`${hex}0`, 10],
        ['%', 10],
        [hex.slice(0, 6), 0],
        [hex.slice(0, 6), -1],
        [hex.slice(0, 6), Number.NaN],
      ];
      for (const [prefix, limit] of hostile) {
        expect(await store.read((tx) => tx.project(project).findObjectsByPrefix(prefix, limit)), `${prefix} ${limit}`).toEqual([]);
        expect(await store.write(async (tx) => tx.project(project).findObjectsByPrefix(prefix, limit)), `${prefix} ${limit}`).toEqual([]);
      }
      expect(await store.read((tx) => tx.project(project).findObjectsByPrefix(hex.slice(0, 6), 2.5))).toEqual([oid]);
    } finally {
      await store.close();
    }
  });

  it('refuses a record key with a NUL character when it is put, and the write leaves nothing', async () => {
    const store = await PostgresStore.open({ url: database.url });
    try {
      const prefix = `pg/${freshProject()}/`;
      await expect(
        store.write(async (tx) => {
          tx.putRecord(`${prefix}fine`, 1);
          tx.putRecord(`${prefix}nul\0here`, 2);
        }),
      ).rejects.toThrow(/NUL/);
      expect(await store.read((tx) => tx.listRecords(prefix))).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

/** Messages a listener heard, and a way to wait for the next one that passes `test`. */
function heard(): { messages: Array<string | null>; listener: (message: string | null) => void; next(test: (message: string | null) => boolean): Promise<void> } {
  const messages: Array<string | null> = [];
  const waiting: Array<{ test: (message: string | null) => boolean; resolve: () => void }> = [];
  return {
    messages,
    listener: (message) => {
      messages.push(message);
      for (const wait of [...waiting]) {
        if (!wait.test(message)) continue;
        waiting.splice(waiting.indexOf(wait), 1);
        wait.resolve();
      }
    },
    next: (test) => new Promise((resolve) => waiting.push({ test, resolve })),
  };
}

describe('PostgresStore signals between nodes', () => {
  it('deliver a committed write’s signals to every node, this one too (as it commits, once), in commit order, and nothing of a write that failed', async () => {
    await withNodes(async ([a, b]) => {
      const onA = heard();
      const onB = heard();
      a.signals.listen('treehouse_test', onA.listener);
      b.signals.listen('treehouse_test', onB.listener);
      await Promise.all([a.signalsReady(), b.signalsReady()]);
      const key = `pg/${freshProject()}/signalled`;
      const failure = await a
        .write(async (tx) => {
          tx.putRecord(key, 'rolled back');
          tx.signal!('treehouse_test', 'never');
          throw new Error('the callback fails');
        })
        .catch((error: Error) => error);
      expect(failure).toBeInstanceOf(Error);
      const last = onB.next((message) => message === 'third');
      await a.write(async (tx) => {
        tx.putRecord(key, 1);
        tx.signal!('treehouse_test', 'first');
        tx.signal!('treehouse_test', 'second');
      });
      // This node heard its own write before the write resolved.
      expect(onA.messages).toEqual([null, 'first', 'second']);
      // A signal alone is a write too.
      await a.write(async (tx) => tx.signal!('treehouse_test', 'third'));
      expect(onA.messages).toEqual([null, 'first', 'second', 'third']);
      await last;
      // null first: listening started, and what came before it was not heard.
      expect(onB.messages).toEqual([null, 'first', 'second', 'third']);
      // B's signal reaches A after the database's echo of A's own (commit order): A heard those once.
      const fromB = onA.next((message) => message === 'from b');
      await b.write(async (tx) => tx.signal!('treehouse_test', 'from b'));
      expect(onB.messages).toEqual([null, 'first', 'second', 'third', 'from b']);
      await fromB;
      expect(onA.messages).toEqual([null, 'first', 'second', 'third', 'from b']);
      expect(a.signals.hears('treehouse_test')).toBe(true);
      expect(a.signals.hears('treehouse_other')).toBe(false);
      expect(await b.read((tx) => tx.getRecord(key))).toBe(1);
    });
  });

  it("deliver a message without a node's mark as it came (a node of an earlier build, in a rolling upgrade), and a marked one without its mark", async () => {
    await withNodes(async ([a]) => {
      const onA = heard();
      a.signals.listen('treehouse_test', onA.listener);
      await a.signalsReady();
      const unmarked = onA.next((message) => message === 'project-from-an-old-node');
      await admin`SELECT pg_notify('treehouse_test', 'project-from-an-old-node')`;
      await unmarked;
      const marked = onA.next((message) => message === 'from another node');
      await admin`SELECT pg_notify('treehouse_test', 'another0node1234 from another node')`;
      await marked;
      expect(onA.messages).toEqual([null, 'project-from-an-old-node', 'from another node']);
    });
  });

  it('refuse a channel that is not an identifier and a message over its size, when signalled, and write nothing', async () => {
    await withNodes(async ([a]) => {
      const key = `pg/${freshProject()}/refused`;
      for (const [channel, message] of [
        ['Treehouse', 'x'],
        ['tree-house', 'x'],
        ['a'.repeat(64), 'x'],
        ['treehouse_test', 'x'.repeat(7_001)],
        ['treehouse_test', 'nul\0inside'],
      ]) {
        await expect(
          a.write(async (tx) => {
            tx.putRecord(key, channel);
            tx.signal!(channel, message);
          }),
        ).rejects.toThrow(RangeError);
      }
      expect(() => a.signals.listen('no spaces', () => undefined)).toThrow(RangeError);
      expect(await a.read((tx) => tx.getRecord(key))).toBeUndefined();
    });
  });

  it('tell a listener that messages may have been missed when its connection is lost, and deliver again once it is back', async () => {
    await withNodes(async ([a, b]) => {
      const onB = heard();
      b.signals.listen('treehouse_test', onB.listener);
      await b.signalsReady();
      expect(b.signals.hears('treehouse_test')).toBe(true);
      const missed = onB.next((message) => message === null);
      const ended = await admin`
        SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN "treehouse_test"'`;
      expect(ended.map((row) => row.ended)).toEqual([true]);
      await missed;
      const after = onB.next((message) => message === 'after');
      await a.write(async (tx) => tx.signal!('treehouse_test', 'after'));
      await after;
      expect(onB.messages).toEqual([null, null, 'after']);
      expect(b.signals.hears('treehouse_test')).toBe(true);
    });
  });
});

describe('PostgresStore rate limits', () => {
  it('share one bucket between nodes: of 40 requests at once, exactly the burst is let in, and the rest are told how long to wait', async () => {
    await withNodes(async (nodes) => {
      const key = `key_${freshProject()}`;
      // 0.001 tokens a second: nothing refills while the test runs.
      const taken = await Promise.all(Array.from({ length: 40 }, (_, index) => nodes[index % 2].rateLimits.takeToken(key, 0.001, 5)));
      const waits = taken.map((answer) => answer.waitSeconds);
      expect(waits.filter((wait) => wait === 0)).toHaveLength(5);
      for (const wait of waits.filter((wait) => wait > 0)) {
        expect(wait).toBeGreaterThan(900);
        expect(wait).toBeLessThanOrEqual(1000);
      }
      // The five let in left 4, 3, 2, 1 and 0 tokens (and a little refill), in some order.
      expect(taken.filter((answer) => answer.waitSeconds === 0).map((answer) => Math.floor(answer.tokens)).sort()).toEqual([0, 1, 2, 3, 4]);
      // Another key has a bucket of its own.
      expect(await nodes[1].rateLimits.takeToken(`${key}_other`, 0.001, 5)).toEqual({ waitSeconds: 0, tokens: expect.closeTo(4, 1) });
    });
  });

  it('refill at the rate, up to the burst, and let nothing in with a burst below one', async () => {
    await withNodes(async ([a]) => {
      const key = `key_${freshProject()}`;
      // A million tokens a second: the bucket is full again by the next statement.
      for (let round = 0; round < 20; round++) expect((await a.rateLimits.takeToken(key, 1_000_000, 1)).waitSeconds).toBe(0);
      const empty = `key_${freshProject()}`;
      expect((await a.rateLimits.takeToken(empty, 0.001, 0)).waitSeconds).toBeGreaterThan(0);
      expect((await a.rateLimits.takeToken(empty, 0.001, 0)).waitSeconds).toBeGreaterThan(0);
    });
  });
});
