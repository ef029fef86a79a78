/** The asynchronous interface's contract on LMDB (src/store/lmdbAsync.ts), plus what only that adapter does. */
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import { EMPTY_TREE_OID, type Oid } from '../../src/git/oid.js';
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
