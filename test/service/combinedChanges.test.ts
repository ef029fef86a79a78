/**
 * Changes of one project that come while one is under way run together in one transaction
 * (src/service/eventLog.ts, EventLog.runChange), on a real LMDB store: in the order they came,
 * each seeing the ones before it, and a refused one refused alone.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TreehouseError } from '../../src/errors.js';
import { hashObject } from '../../src/git/oid.js';
import { EventLog } from '../../src/service/eventLog.js';
import { EventBus } from '../../src/service/events.js';
import type { ProjectRecord } from '../../src/service/projects.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { LmdbAsyncStore } from '../../src/store/lmdbAsync.js';
import { scratchDir } from '../support/git.js';

const dir = scratchDir('treehouse-combined-changes-');
afterAll(() => dir.remove());

function openLog(path: string): { store: LmdbAsyncStore; log: EventLog; committedWrites: () => number } {
  const store = new LmdbAsyncStore(new LmdbStore({ path }));
  let committed = 0;
  store.onWriteDone((_ms, ok) => {
    if (ok) committed++;
  });
  return { store, log: new EventLog(store, new EventBus()), committedWrites: () => committed };
}

describe('changes of one project combined into one transaction', () => {
  it('runs 40 concurrent changes in their order, each after the one before it, in a few transactions', async () => {
    const { store, log, committedWrites } = openLog(`${dir.path}/a`);
    try {
      const record = { seq: 1 } as ProjectRecord;
      const before = committedWrites();
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          log.runChange(record, async (tx) => ({ version: await tx.bumpVersion(), oid: tx.putObject('blob', Buffer.from(`change ${index}\n`)) }), () => {}),
        ),
      );
      // One version each, in the order the changes came: each saw every one before it.
      expect(results.map((result) => result.version)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
      // All 40 were queued before the first transaction ran its first change: 16, 16, then 8.
      expect(committedWrites() - before).toBe(3);
      await store.read(async (tx) => expect(await tx.project(1).hasObjects(results.map((result) => result.oid))).toEqual(results.map(() => true)));
    } finally {
      await store.close();
    }
  });

  it('takes the changes that came while its first change waited (a lock) into the same transaction', async () => {
    const { store, log, committedWrites } = openLog(`${dir.path}/d`);
    try {
      const record = { seq: 4 } as ProjectRecord;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started!: () => void;
      const firstStarted = new Promise<void>((resolve) => (started = resolve));
      const before = committedWrites();
      const first = log.runChange(
        record,
        async (tx) => {
          started();
          await gate;
          return tx.bumpVersion();
        },
        () => {},
      );
      // The first transaction is under way (its change waits), and these come meanwhile.
      await firstStarted;
      const later = Array.from({ length: 5 }, () => log.runChange(record, (tx) => tx.bumpVersion(), () => {}));
      release();
      expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4, 5, 6]);
      expect(committedWrites() - before).toBe(1);
      // Once it is done, the next change starts a transaction of its own.
      expect(await log.runChange(record, (tx) => tx.bumpVersion(), () => {})).toBe(7);
      expect(committedWrites() - before).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('ends a group once it has buffered a write\'s worth for LMDB\'s replay (writeObjectsMax), and runs the rest after it, in order', async () => {
    const { store, log, committedWrites } = openLog(`${dir.path}/c`);
    try {
      expect(store.writeObjectsMax).toBe(500);
      const record = { seq: 3 } as ProjectRecord;
      const before = committedWrites();
      const results = await Promise.all(
        Array.from({ length: 17 }, (_, change) =>
          log.runChange(
            record,
            async (tx) => {
              for (let blob = 0; blob < 200; blob++) tx.putObject('blob', Buffer.from(`change ${change} blob ${blob}\n`));
              return tx.bumpVersion();
            },
            () => {},
          ),
        ),
      );
      expect(results).toEqual(Array.from({ length: 17 }, (_, index) => index + 1));
      // Groups of three (600 buffered writes) rather than one of sixteen: 3, 3, 3, 3, 3, 2.
      expect(committedWrites() - before).toBe(6);
    } finally {
      await store.close();
    }
  });

  it('refuses a change that fails alone, and makes the others before and after it, in order', async () => {
    const { store, log } = openLog(`${dir.path}/b`);
    try {
      const record = { seq: 2 } as ProjectRecord;
      const refused = new Set([0, 4, 11, 12, 19]);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_, index) =>
          log.runChange(
            record,
            async (tx) => {
              const version = await tx.bumpVersion();
              const oid = tx.putObject('blob', Buffer.from(`change ${index}\n`));
              if (refused.has(index)) throw new TreehouseError('not_found', `change ${index} refused`);
              return { version, oid };
            },
            () => {},
          ),
        ),
      );
      outcomes.forEach((outcome, index) => {
        if (refused.has(index)) expect(outcome.status === 'rejected' && (outcome.reason as Error).message).toBe(`change ${index} refused`);
        else expect(outcome.status).toBe('fulfilled');
      });
      const made = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
      // The refused ones made nothing: the others' versions follow each other in call order.
      expect(made.map((result) => result.version)).toEqual(Array.from({ length: 15 }, (_, index) => index + 1));
      await store.read(async (tx) => {
        const p = tx.project(2);
        expect(await p.getVersion()).toBe(15);
        expect(await p.hasObjects(made.map((result) => result.oid))).toEqual(made.map(() => true));
        expect(await p.hasObjects([...refused].map((index) => hashObject('blob', Buffer.from(`change ${index}\n`))))).toEqual([...refused].map(() => false));
      });
    } finally {
      await store.close();
    }
  });
});
