import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
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
});
