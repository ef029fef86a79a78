import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/service/inFlight.js';

describe('InFlight', () => {
  it('settles once every piece of work has, including work added while waiting and work that failed', async () => {
    const work = new InFlight();
    await work.settled();
    const done: string[] = [];
    const later = (name: string, ms: number, fail = false) =>
      new Promise<void>((resolve, reject) => setTimeout(() => (done.push(name), fail ? reject(new Error(name)) : resolve()), ms));
    work.add(later('first', 20));
    work.add(later('failing', 10, true).catch(() => {}));
    const waited = work.settled().then(() => [...done]);
    // Added after the wait began: the wait covers it too.
    setTimeout(() => work.add(later('added meanwhile', 40)), 5);
    expect(await waited).toEqual(['failing', 'first', 'added meanwhile']);
    const rejected = Promise.reject(new Error('unhandled elsewhere'));
    rejected.catch(() => {});
    work.add(rejected);
    await expect(work.settled()).resolves.toBeUndefined();
  });
});
