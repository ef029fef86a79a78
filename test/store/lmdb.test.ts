import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../src/store/lmdb.js';
import { scratchDir } from '../support/git.js';
import { storeContract } from './contract.js';

const dir = scratchDir('treehouse-contract-');
afterAll(() => dir.remove());

storeContract('LmdbStore', () => new LmdbStore({ path: dir.path }));

describe('LmdbStore', () => {
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

  it('refuses a data directory of an earlier store format (per-directory working-tree nodes) and leaves it unchanged', async () => {
    const parent = scratchDir('treehouse-format-');
    try {
      // What a format-1 build left: a working-tree key and no format record.
      const old = open({ path: parent.path, noSubdir: false, maxDbs: 8 });
      const worktrees = old.openDB({ name: 'worktrees', keyEncoding: 'binary', encoding: 'msgpack' });
      await worktrees.put(Buffer.from('\0\0\0\x01main\0src', 'latin1'), { t: null, n: [] });
      await old.close();
      expect(() => new LmdbStore({ path: parent.path })).toThrow(/store of format 1; this build reads format 2/);
      expect(() => new LmdbStore({ path: parent.path })).toThrow(/format 1/);
      // A new store records its format, so it opens again.
      const fresh = scratchDir('treehouse-format-new-');
      try {
        await new LmdbStore({ path: fresh.path }).close();
        const again = new LmdbStore({ path: fresh.path });
        expect(again.read((tx) => tx.getRecord('store-format'))).toBe(2);
        await again.close();
      } finally {
        fresh.remove();
      }
    } finally {
      parent.remove();
    }
  });
});
