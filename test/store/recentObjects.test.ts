/**
 * The log of recent objects (src/store/recentObjects.ts) inside the real LMDB store: a small
 * write's new objects are appended there and every read of the store finds them; the log moves
 * into `objects` once long enough and when the store opens; a rolled-back write leaves nothing; a
 * collection, a project's removal and garbage removal see the logged objects too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { hashObject, type Oid } from '../../src/git/oid.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { scratchDir } from '../support/git.js';

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.remove();
});

/** A store whose log moves once writes pause for `recentIdleMs` (by default never, so a test sees what its writes logged). */
function freshStore(recentIdleMs = 2 ** 31 - 1): { store: LmdbStore; path: string } {
  const dir = scratchDir('treehouse-recent-');
  dirs.push(dir);
  return { store: new LmdbStore({ path: dir.path, recentIdleMs }), path: dir.path };
}

/** Objects in the log and in `objects`, read from the databases themselves. */
function counts(store: LmdbStore): { recent: number; objects: number } {
  // Sequence number 0 holds the last number given, not an object.
  return { recent: store.dbs.recent.getKeysCount({ start: Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]) }), objects: store.dbs.objects.getKeysCount() };
}

const blob = (text: string) => Buffer.from(`${text}\n`);

async function putBlobs(store: LmdbStore, project: number, texts: string[]): Promise<Oid[]> {
  return store.write((tx) => texts.map((text) => tx.project(project).putObject('blob', blob(text))));
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `other`, a second writer on the same data directory, appends an object, which `store` then reads. */
async function expectFound(store: LmdbStore, other: LmdbStore): Promise<void> {
  const [appended] = await putBlobs(other, 1, ['from the other writer']);
  // After lmdb-js resets its read snapshot (a timer), as a request that came later would read.
  await new Promise((resolve) => setTimeout(resolve, 10));
  expect(store.read((tx) => tx.project(1).getObject(appended)?.body.toString())).toBe('from the other writer\n');
}

describe('the log of recent objects (LMDB)', () => {
  it('appends a small write\'s new objects to the log, where every read of the store finds them', async () => {
    const { store } = freshStore();
    try {
      const annex = Buffer.from('an annex');
      const [one, two] = await putBlobs(store, 1, ['one', 'two']);
      const withAnnex = await store.write((tx) => tx.project(1).putObject('blob', blob('three'), annex));
      expect(counts(store)).toEqual({ recent: 3, objects: 0 });
      store.read((tx) => {
        const p = tx.project(1);
        expect(p.getObject(one)?.body.toString()).toBe('one\n');
        expect(p.peekObject(two)?.body.toString()).toBe('two\n');
        const annexed = p.getObjectWithAnnex(withAnnex);
        expect([annexed?.body.toString(), annexed?.annex?.toString()]).toEqual(['three\n', 'an annex']);
        expect([p.hasObject(one), p.hasObject(hashObject('blob', blob('absent')))]).toEqual([true, false]);
        expect(p.objectSize(two)).toBe(4);
        expect(p.findObjectsByPrefix(one.toString('hex').slice(0, 7), 10)).toEqual([one]);
        expect(p.listStored(null, 10).map((entry) => [entry.oid.toString('hex'), entry.raw])).toEqual(
          [one, two, withAnnex].map((oid) => oid.toString('hex')).sort().map((hex) => [hex, true]),
        );
        expect(p.describeStored([one])[0]).toMatchObject({ type: 'blob', rawBytes: 5 });
        // Another project's log entries are not this project's objects.
        expect(tx.project(2).hasObject(one)).toBe(false);
      });
      expect(store.listUndeflated(null, 10).undeflated.map(({ oid }) => oid.toString('hex')).sort()).toEqual([one, two, withAnnex].map((oid) => oid.toString('hex')).sort());
      // Stored once: a second write of the same object appends nothing.
      await putBlobs(store, 1, ['one']);
      expect(counts(store).recent).toBe(3);
      // The deflate cache's form is made from the logged copy.
      await store.write((tx) => tx.project(1).putDeflated(one, Buffer.from('a form')));
      expect(store.read((tx) => tx.project(1).peekDeflated(one))?.inflatedBytes).toBe(4);
    } finally {
      await store.close();
    }
  });

  it('sends a write\'s objects past the first 1,024 to `objects` at once, and any too large for a leaf page\'s node', async () => {
    const { store } = freshStore();
    try {
      const oids = await putBlobs(store, 1, Array.from({ length: 1100 }, (_, i) => `object ${i}`));
      expect(counts(store)).toEqual({ recent: 1024, objects: 76 });
      expect(store.read((tx) => oids.every((oid) => tx.project(1).hasObject(oid)))).toBe(true);
      // 1,899 bytes of body and the type byte fit a node; one byte more goes to overflow pages, and to `objects`.
      const [fits, overflows] = await putBlobs(store, 2, ['x'.repeat(1898), 'y'.repeat(1899)]);
      expect(counts(store)).toEqual({ recent: 1025, objects: 77 });
      expect(store.read((tx) => [tx.project(2).objectSize(fits), tx.project(2).objectSize(overflows)])).toEqual([1899, 1900]);
    } finally {
      await store.close();
    }
  });

  it('moves the log into `objects` once writes pause, a batch at a time, not while they keep coming; every object is found before, during and after', async () => {
    const { store } = freshStore(200);
    try {
      const oids: Oid[] = [];
      // Writes every 20 ms for 0.6 s: the log only grows meanwhile.
      for (let write = 0; write < 30; write++) {
        oids.push(...(await putBlobs(store, 1, Array.from({ length: 70 }, (_, i) => `write ${write} object ${i}`))));
        expect(counts(store)).toEqual({ recent: oids.length, objects: 0 });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(store.read((tx) => oids.every((oid) => tx.project(1).getObject(oid) !== undefined))).toBe(true);
      // Then the pause: moved in writes of 256, each a look at whether a write came. The first count
      // seen below 2,100 is one or more whole batches less, never 0 (all of it at once).
      let firstBelow: number | undefined;
      await until(() => {
        const logged = counts(store).recent;
        if (logged < 2100) firstBelow ??= logged;
        return store.read((tx) => oids.every((oid) => tx.project(1).hasObject(oid))) && logged === 0 && store.recent.size === 0;
      });
      expect(firstBelow).toBeGreaterThan(0);
      expect((2100 - firstBelow!) % 256).toBe(0);
      expect(counts(store)).toEqual({ recent: 0, objects: 2100 });
      expect(store.read((tx) => oids.every((oid) => tx.project(1).getObject(oid) !== undefined))).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('sends new objects to `objects` at once while the log holds 8,192 (writes that never pause)', async () => {
    const { store } = freshStore();
    try {
      const oids: Oid[] = [];
      for (let write = 0; write < 9; write++) oids.push(...(await putBlobs(store, 1, Array.from({ length: 1000 }, (_, i) => `write ${write} object ${i}`))));
      expect(counts(store)).toEqual({ recent: 8192, objects: 808 });
      expect(store.read((tx) => oids.every((oid) => tx.project(1).hasObject(oid)))).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('moves what the log holds into `objects` when the store opens (after a stop or a crash)', async () => {
    const { store, path } = freshStore();
    const oids = await putBlobs(store, 1, ['kept', 'also kept']);
    expect(counts(store).recent).toBe(2);
    await store.close();
    const reopened = new LmdbStore({ path });
    try {
      expect(counts(reopened)).toEqual({ recent: 0, objects: 2 });
      expect(reopened.read((tx) => oids.map((oid) => tx.project(1).getObject(oid)?.body.toString()))).toEqual(['kept\n', 'also kept\n']);
    } finally {
      await reopened.close();
    }
  });

  it('is read by a store opened before the write (a worker thread\'s view), which looks at the log again when it finds nothing', async () => {
    const { store, path } = freshStore(300);
    const reader = new LmdbStore({ path, readOnly: true });
    // lmdb-js keeps a read snapshot until a timer (setTimeout 0) resets it; a worker thread's read
    // comes in a message after that, and so do these (a read before it sees the older snapshot,
    // of the log as of `objects`).
    const nextTask = () => new Promise((resolve) => setTimeout(resolve, 10));
    try {
      const [oid] = await putBlobs(store, 1, ['written after the reader opened']);
      await nextTask();
      expect(reader.read((tx) => tx.project(1).getObject(oid)?.body.toString())).toBe('written after the reader opened\n');
      const [other] = await putBlobs(store, 1, ['and another']);
      await nextTask();
      expect(reader.read((tx) => tx.project(1).hasObject(other))).toBe(true);
      // Moved by the writer: the reader's index names an entry that is gone, and it reads `objects`.
      await until(() => counts(store).recent === 0);
      await nextTask();
      expect(reader.read((tx) => tx.project(1).getObject(oid)?.body.toString())).toBe('written after the reader opened\n');
      // Its next look at the log forgets what was moved: its index holds what the log holds.
      const [last] = await putBlobs(store, 1, ['after the move']);
      await nextTask();
      expect(reader.read((tx) => tx.project(1).hasObject(last))).toBe(true);
      expect(reader.recent.size).toBe(1);
    } finally {
      await reader.close();
      await store.close();
    }
  });

  it('numbers entries after every number given before, so a writer that moved its log still finds what another writer appends next', async () => {
    const { store, path } = freshStore(20);
    // A second writer on the same data directory (another node, the command-line tool), open before either writes.
    const other = new LmdbStore({ path, recentIdleMs: 2 ** 31 - 1 });
    try {
      await putBlobs(store, 1, ['first', 'second']);
      await until(() => counts(store).recent === 0);
      await expectFound(store, other);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('forgets what another writer moved once its own move finds the log empty', async () => {
    const { store, path } = freshStore(20);
    try {
      const oids = await putBlobs(store, 1, ['one', 'two']);
      // Another writer opening the store (the command-line tool, say) moves the log at its start.
      await new LmdbStore({ path }).close();
      expect([counts(store).recent, store.recent.size]).toEqual([0, 2]);
      expect(store.read((tx) => oids.every((oid) => tx.project(1).hasObject(oid)))).toBe(true);
      const [third] = await putBlobs(store, 1, ['three']);
      await until(() => store.recent.size === 0);
      expect(counts(store)).toEqual({ recent: 0, objects: 3 });
      expect(store.read((tx) => tx.project(1).hasObject(third))).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('keeps nothing of a write that rolled back, and stores the same object again later', async () => {
    const { store } = freshStore();
    try {
      const size = store.recent.size;
      let oid: Oid | undefined;
      await expect(
        store.write((tx) => {
          oid = tx.project(1).putObject('blob', blob('rolled back'));
          throw new Error('refused after the put');
        }),
      ).rejects.toThrow('refused after the put');
      expect(store.recent.size).toBe(size);
      expect(counts(store).recent).toBe(0);
      expect(store.read((tx) => tx.project(1).hasObject(oid!))).toBe(false);
      await putBlobs(store, 1, ['rolled back']);
      expect(store.read((tx) => tx.project(1).getObject(oid!)?.body.toString())).toBe('rolled back\n');
    } finally {
      await store.close();
    }
  });

  it('reads again, after a write rolled back, the numbers that write gave or read (another writer gives them next)', async () => {
    const { store, path } = freshStore();
    const other = new LmdbStore({ path, recentIdleMs: 2 ** 31 - 1 });
    try {
      const absent = hashObject('blob', blob('never stored'));
      await expect(
        store.write((tx) => {
          tx.project(1).putObject('blob', blob('rolled back'));
          // A miss inside the write reads the log, its own append included.
          expect(tx.project(1).hasObject(absent)).toBe(false);
          throw new Error('refused after the put');
        }),
      ).rejects.toThrow('refused after the put');
      // The other writer is given the same number, for another object.
      await expectFound(store, other);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it('walks the log once, not at every read that misses, once a move has emptied it', async () => {
    const { store } = freshStore(20);
    try {
      await putBlobs(store, 1, ['one', 'two']);
      await until(() => counts(store).recent === 0);
      await new Promise((resolve) => setTimeout(resolve, 10));
      const walks = store.recent.walks;
      const absent = Array.from({ length: 100 }, (_, index) => hashObject('blob', blob(`absent ${index}`)));
      expect(store.read((tx) => absent.filter((oid) => tx.project(1).hasObject(oid)))).toEqual([]);
      expect(store.recent.walks - walks).toBeLessThanOrEqual(1);
    } finally {
      await store.close();
    }
  });

  it('moves a project\'s log into `objects` when its collection begins, and its writes go there until the collection ends', async () => {
    const { store } = freshStore();
    try {
      const [mine] = await putBlobs(store, 1, ['project one']);
      const [theirs] = await putBlobs(store, 2, ['project two']);
      await store.write((tx) => tx.project(1).beginCollection({ id: 'run', startedAt: new Date(0).toISOString() }));
      expect(counts(store)).toEqual({ recent: 1, objects: 1 });
      await putBlobs(store, 1, ['during the collection']);
      expect(counts(store)).toEqual({ recent: 1, objects: 2 });
      await store.write((tx) => tx.project(1).endCollection());
      await putBlobs(store, 1, ['after the collection']);
      expect(counts(store)).toEqual({ recent: 2, objects: 2 });
      expect(store.read((tx) => [tx.project(1).hasObject(mine), tx.project(2).hasObject(theirs)])).toEqual([true, true]);
    } finally {
      await store.close();
    }
  });

  it('removes logged objects with their project, or when a collection removes them or keeps their form alone', async () => {
    const { store } = freshStore();
    try {
      const [removed, compacted, kept] = await putBlobs(store, 1, ['removed', 'compacted', 'kept']);
      const [otherProject] = await putBlobs(store, 2, ['another project']);
      await store.write((tx) => tx.project(1).putDeflated(compacted, Buffer.from('its form')));
      expect(await store.write((tx) => tx.project(1).removeStored([removed]))).toBe(1);
      expect(await store.write((tx) => tx.project(1).keepCompact([{ oid: compacted, dropRaw: true }]))).toMatchObject({ rawDropped: 1 });
      expect(store.read((tx) => [tx.project(1).hasObject(removed), tx.project(1).objectSize(compacted), tx.project(1).hasObject(kept)])).toEqual([false, 10, true]);
      expect(counts(store).recent).toBe(2);
      expect(await store.write((tx) => tx.dropProjectKeys(1, 100))).toBeGreaterThanOrEqual(1);
      await store.write((tx) => tx.dropProjectKeys(1, 100));
      expect(store.read((tx) => [tx.project(1).hasObject(kept), tx.project(2).hasObject(otherProject)])).toEqual([false, true]);
      expect(counts(store).recent).toBe(1);
    } finally {
      await store.close();
    }
  });
});
