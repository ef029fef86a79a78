import { afterAll, describe, expect, it } from 'vitest';
import { inSlices, readInSlices, SLICE_MS, Slicer, whole } from '../../src/repo/slices.js';
import { newTestRepo, openTestStore } from '../support/store.js';

const opened = openTestStore();
afterAll(() => opened.close());

describe('readInSlices', () => {
  it('runs every step, and lets the event loop run between slices', async () => {
    const repo = await newTestRepo(opened.store);
    let steps = 0;
    let turns = 0;
    const timer = setInterval(() => turns++, 1);
    const started = performance.now();
    await readInSlices(repo, async () => {
      steps++;
      const until = performance.now() + 0.05;
      while (performance.now() < until);
      return performance.now() - started < 10 * SLICE_MS;
    });
    clearInterval(timer);
    expect(steps).toBeGreaterThan(10);
    // Ten slices' worth of busy work, yet timers fired in between.
    expect(turns).toBeGreaterThan(3);
  });

  it('pauses only once a slice is due', async () => {
    const slicer = new Slicer();
    expect(slicer.due).toBe(false);
    const until = performance.now() + SLICE_MS + 1;
    while (performance.now() < until);
    expect(slicer.due).toBe(true);
    await slicer.pause();
    expect(slicer.due).toBe(false);
  });
});

describe('inSlices', () => {
  it('runs a generator walk to its value, giving the event loop a turn between slices', async () => {
    let turns = 0;
    const ticking = setInterval(() => turns++, 1);
    async function* walk(): AsyncGenerator<void, number, void> {
      let total = 0;
      const end = performance.now() + SLICE_MS * 6;
      while (performance.now() < end) {
        total++;
        yield;
      }
      return total;
    }
    const total = await inSlices(walk());
    clearInterval(ticking);
    expect(total).toBeGreaterThan(0);
    // Six slices' worth of work: the timer ran in between at least a few times.
    expect(turns).toBeGreaterThanOrEqual(3);
    expect(await whole(walk())).toBeGreaterThan(0);
  });
});
