/**
 * The stores' LRU cache (src/store/lruCache.ts) when full, so every set evicts: as it is (the oldest
 * entry taken off a list of its own), and as it was, walking the Map from its front for each eviction. A Map keeps a hole for each deleted entry
 * until it is rehashed, and evictions leave theirs at the front, so each of those walks stepped
 * over every hole left since the last rehash. PostgreSQL's object cache is full after a
 * 100,000-file import, and a node then evicts on nearly every object it reads or writes.
 *
 *   npx tsx bench/lruCache.bench.ts [--quick]
 */
import { Bench } from 'tinybench';
import { LruCache } from '../src/store/lruCache.js';
import { summariseTask } from './measure.js';

const ENTRIES = 60_000;

/** The eviction it replaced: a new walk from the front each time. */
class WalkFromFront<K, V> {
  private readonly entries = new Map<K, V>();
  constructor(private readonly entriesMax: number) {}
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    for (const [oldest] of this.entries) {
      if (this.entries.size <= this.entriesMax) break;
      this.entries.delete(oldest);
    }
  }
}

async function main(quick: boolean): Promise<void> {
  const ours = new LruCache<string, number>(ENTRIES, 1, () => 1);
  const before = new WalkFromFront<string, number>(ENTRIES);
  for (let i = 0; i < ENTRIES; i++) {
    ours.set(`k${i}`, i);
    before.set(`k${i}`, i);
  }
  let next = 0;
  const suite = new Bench({ time: quick ? 300 : 2_000, warmupTime: 100 });
  suite.add('LruCache.set, evicting (the oldest from its own list)', () => ours.set(`n${next++}`, next)).add('set evicting by a walk from the front', () => before.set(`n${next++}`, next));
  await suite.run();
  for (const task of suite.tasks) {
    const summary = summariseTask(task);
    console.log(
      `${task.name}: median ${(summary.medianMs * 1000).toFixed(2)} µs, mean ${(((task.result as { latency?: { mean: number } })?.latency?.mean ?? NaN) * 1000).toFixed(2)} µs, ${summary.n} sets`,
    );
  }
}

await main(process.argv.includes('--quick'));
