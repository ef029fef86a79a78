import { existsSync, mkdirSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterAll, describe, expect, it } from 'vitest';
import { hashObject } from '../../src/git/oid.js';
import { LmdbStore, untilDurable } from '../../src/store/lmdb.js';
import { openStoreInThread } from '../../src/store/open.js';
import { scratchDir } from '../support/git.js';
import { storeContract } from './contract.js';

const dir = scratchDir('treehouse-contract-');
afterAll(() => dir.remove());

storeContract('LmdbStore', () => new LmdbStore({ path: dir.path }));

describe('LmdbStore', () => {
  it('acknowledges a write once its own commit is durable, not once a write queued after it is (afterCommit lets the next writer in)', async () => {
    const parent = scratchDir('treehouse-flush-');
    const store = new LmdbStore({ path: parent.path });
    try {
      for (let round = 0; round < 3; round++) {
        let bigCommitted = false;
        let big: Promise<void> | undefined;
        await store.write((tx) => tx.putRecord(`small-${round}`, round), {
          afterCommit: () => {
            // A large write queued the moment the small one committed: its callback alone holds the
            // thread for a long while, so the small one's acknowledgement either comes first or waited for it.
            big = store.write((tx) => {
              for (let i = 0; i < 30_000; i++) tx.project(1).putObject('blob', Buffer.from(`round ${round} object ${i}\n`.repeat(20)));
            }, { afterCommit: () => (bigCommitted = true) });
          },
        });
        expect(bigCommitted).toBe(false);
        await big;
        expect(bigCommitted).toBe(true);
      }
      expect(store.read((tx) => tx.getRecord('small-2'))).toBe(2);
    } finally {
      await store.close();
      parent.remove();
    }
  });

  it("waits for a commit's flush, and syncs the file itself when the flush never settles (a batch that failed on a full disk leaves its flush so)", async () => {
    let syncs = 0;
    const sync = async () => {
      syncs++;
    };
    // Flushed in time: no sync of its own.
    await untilDurable(new Promise((resolve) => setTimeout(resolve, 5)), sync, 200);
    expect(syncs).toBe(0);
    // Never flushed: synced after the wait, and then it ends.
    const started = performance.now();
    await untilDurable(new Promise(() => {}), sync, 50);
    expect(syncs).toBe(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    // A sync that fails is the write's failure.
    await expect(untilDurable(new Promise(() => {}), async () => Promise.reject(new Error('EIO')), 10)).rejects.toThrow('EIO');
    // A flush that fails is too.
    await expect(untilDurable(Promise.reject(new Error('flush failed')), sync, 1_000)).rejects.toThrow('flush failed');
    // The store's own sync (lmdb-js's env.sync, which its types leave out) calls back.
    const store = new LmdbStore({ path: join(dir.path, 'sync-now') });
    try {
      await untilDurable(new Promise(() => {}), () => (store as unknown as { syncNow(): Promise<void> }).syncNow(), 1);
    } finally {
      await store.close();
    }
  });

  it('takes its path as a directory, even when the name has a dot (TREEHOUSE_DATA_DIR=/var/lib/treehouse.d)', async () => {
    const parent = scratchDir('treehouse-dotted-');
    try {
      for (const name of ['existing.d', 'missing.db']) {
        const path = join(parent.path, name);
        if (name.startsWith('existing')) mkdirSync(path);
        const store = new LmdbStore({ path });
        await store.write((tx) => tx.putRecord('k', name));
        await store.close();
        expect(existsSync(join(path, 'data.mdb'))).toBe(true);
        const reopened = new LmdbStore({ path });
        expect(reopened.read((tx) => tx.getRecord('k'))).toBe(name);
        await reopened.close();
      }
    } finally {
      parent.remove();
    }
  });

  it('opens a read-only view of a store another opener writes (a worker thread\'s, openStoreInThread), which sees each commit and writes nothing', async () => {
    const parent = scratchDir('treehouse-readonly-');
    try {
      // An empty directory holds no store to read.
      expect(() => new LmdbStore({ path: join(parent.path, 'none'), readOnly: true })).toThrow();
      const path = join(parent.path, 'store');
      const writer = new LmdbStore({ path });
      const body = Buffer.from('seen by the reader');
      const oid = await writer.async.write(async (tx) => tx.project(7).putObject('blob', body));
      const reader = openStoreInThread(writer.async.threadAccess);
      expect(writer.async.threadAccess).toEqual({ backend: 'lmdb', path });
      expect(await reader.read((tx) => tx.project(7).getObjects([oid]))).toEqual([{ type: 'blob', body }]);
      // A later commit is seen too.
      const later = Buffer.from('written after the reader opened');
      const laterOid = await writer.async.write(async (tx) => tx.project(7).putObject('blob', later));
      expect(await reader.read((tx) => tx.project(7).getObjects([laterOid]))).toEqual([{ type: 'blob', body: later }]);
      await expect(reader.write(async (tx) => tx.project(7).putObject('blob', Buffer.from('refused')))).rejects.toThrow();
      expect(await writer.async.read((tx) => tx.project(7).hasObjects([hashObject('blob', Buffer.from('refused'))]))).toEqual([false]);
      await reader.close();
      await writer.close();
    } finally {
      parent.remove();
    }
  });

  it('refuses a data directory of an earlier store format (per-directory working-tree nodes) and leaves it unchanged', async () => {
    const parent = scratchDir('treehouse-format-');
    try {
      // What a format-1 build left: a working-tree key and no format record.
      const old = open({ path: parent.path, noSubdir: false, maxDbs: 8 });
      const worktrees = old.openDB({ name: 'worktrees', keyEncoding: 'binary', encoding: 'msgpack' });
      await worktrees.put(Buffer.from('\0\0\0\x01main\0src', 'latin1'), { t: null, n: [] });
      await old.close();
      expect(() => new LmdbStore({ path: parent.path })).toThrow(/store of format 1; this build reads format 4/);
      expect(() => new LmdbStore({ path: parent.path })).toThrow(/format 1/);
      // A new store records its format, so it opens again.
      const fresh = scratchDir('treehouse-format-new-');
      try {
        await new LmdbStore({ path: fresh.path }).close();
        const again = new LmdbStore({ path: fresh.path });
        expect(again.read((tx) => tx.getRecord('store-format'))).toBe(4);
        await again.close();
      } finally {
        fresh.remove();
      }
    } finally {
      parent.remove();
    }
  });

  it('opens a format-2 store (forms as values of their own), reads its forms and marks it format 4', async () => {
    const parent = scratchDir('treehouse-format2-');
    try {
      const first = new LmdbStore({ path: parent.path });
      const body = Buffer.from('a body kept as a form alone\n'.repeat(4));
      const oid = hashObject('blob', body);
      await first.write((tx) => tx.project(1).putObjectAsForm(oid, 'blob', body.length, { deflated: deflateSync(body) }));
      await first.write((tx) => tx.putRecord('store-format', 2));
      await first.close();
      const reopened = new LmdbStore({ path: parent.path });
      try {
        expect(reopened.read((tx) => tx.getRecord('store-format'))).toBe(4);
        expect(reopened.read((tx) => tx.project(1).getObject(oid))?.body.equals(body)).toBe(true);
      } finally {
        await reopened.close();
      }
    } finally {
      parent.remove();
    }
  });
});
