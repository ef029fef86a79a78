/**
 * A project holding a million unreachable entries: the collection removes them all while its own
 * memory stays within a small bound per entry (ids as bytes in typed buffers, no object per id,
 * bodies never read but those of trees, a page at a time).
 */
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeTree } from '../../../src/git/tree.js';
import { collectGarbage } from '../../../src/repo/gc/collect.js';
import { expectOnlyReachable, storedHexes } from '../../support/gc.js';
import { newTestRepo, openTestStore } from '../../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

const BLOBS = 800_000;
const TREES = 200_000;
/** What the collection may hold beyond what it held before, per unreachable entry. */
const BYTES_PER_ENTRY_MAX = 120;
/** How often the collector's live memory is sampled (each sample a full garbage collection first). */
const SAMPLE_MS = 100;

// What the collection holds, not the garbage it leaves for V8 to collect later (which depends on
// when V8 runs, and so on the machine's load): each sample follows a full collection.
setFlagsFromString('--expose-gc');
const collectV8Garbage = runInNewContext('gc') as () => void;

describe('garbage collection of a million unreachable entries', () => {
  it('removes them all with at most 120 bytes of memory per entry', async () => {
    const repo = await newTestRepo(opened.store, []);
    const kept = await storedHexes(repo);
    const blobIds: Buffer[] = [];
    // Written through the synchronous store in large writes: the test is the collection, not the writes.
    for (let start = 0; start < BLOBS; start += 100_000) {
      await opened.store.write((tx) => {
        const p = tx.project(repo.project);
        for (let i = start; i < start + 100_000; i++) {
          // Blobs are never read by a collection: random ids with a small body stand in for their hashes.
          const oid = randomBytes(20);
          p.putObjectWithId(oid, 'blob', Buffer.from(`garbage ${i}\n`));
          if (i < TREES) blobIds.push(oid);
        }
      });
    }
    for (let start = 0; start < TREES; start += 100_000) {
      await opened.store.write((tx) => {
        const p = tx.project(repo.project);
        for (let i = start; i < start + 100_000; i++) p.putObject('tree', encodeTree([{ name: `f${i}`, mode: '100644', oid: blobIds[i] }]));
      });
    }
    blobIds.length = 0;
    collectV8Garbage();
    const before = process.memoryUsage();
    let peak = 0;
    const sample = () => {
      collectV8Garbage();
      const now = process.memoryUsage();
      peak = Math.max(peak, now.heapUsed + now.arrayBuffers - before.heapUsed - before.arrayBuffers);
    };
    const sampler = setInterval(sample, SAMPLE_MS);
    // Large sweep writes: the test is the collector's memory, not how often it commits.
    const report = await collectGarbage(repo, { graceMs: 0, onPhase: sample, batchIds: 10_000 });
    clearInterval(sampler);
    expect(report.removedObjects).toBe(BLOBS + TREES);
    expect(peak).toBeLessThan((BLOBS + TREES) * BYTES_PER_ENTRY_MAX);
    expect(await storedHexes(repo)).toEqual(kept);
    await expectOnlyReachable(repo);
  }, 120_000);
});
