/**
 * The search threads' pool (src/service/searchThreads.ts) on a real LMDB store: not ready at the
 * first ask (the workers start then), searches batches once ready, answers what a search on the
 * request thread answers, stops its workers after its idle time and starts them again when asked.
 * What searches answer through it is test/repo/search/search.test.ts's.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Repo } from '../../src/repo/repo.js';
import { search } from '../../src/repo/search.js';
import { SearchThreadPool } from '../../src/service/searchThreads.js';
import { newTestRepo, openTestStore, text } from '../support/store.js';

const opened = openTestStore();
const pool = new SearchThreadPool({ idleMs: 300 });
afterAll(async () => {
  await pool.close();
  await opened.close();
});

async function untilReady(): Promise<void> {
  while (!pool.available()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('SearchThreadPool', () => {
  it('starts on the first ask, answers as the request thread does, and stops its workers when idle', async () => {
    const files = Array.from({ length: 1500 }, (_, i) => text(`d${i % 7}/f${i}.txt`, i % 13 === 0 ? `one\nneedle ${i}\n` : `plain ${i}\n`));
    const inline: Repo = await newTestRepo(opened.store, files);
    const threaded: Repo = { ...inline, searchThreads: pool };
    const query = { q: 'needle', regex: false, case: true, ref: 'main', limit: 1000 };
    const expected = await search(inline, query);
    expect(expected.matches.length).toBe(Math.ceil(1500 / 13));

    expect(pool.running).toBe(0);
    expect(pool.available()).toBe(false);
    expect(pool.running).toBeGreaterThan(0);
    await untilReady();
    expect(await search(threaded, query)).toEqual(expected);
    expect(await search(threaded, { ...query, limit: 5 })).toEqual({ matches: expected.matches.slice(0, 5), truncated: true });

    // Idle past its time, the pool has no worker left; asked again, it starts them and answers.
    while (pool.running > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await search(threaded, query)).toEqual(expected);
    await untilReady();
    expect(await search(threaded, query)).toEqual(expected);
  });
});
