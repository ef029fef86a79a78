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
    // Busy steps until a timer has fired four times: only turns of the event loop between slices
    // let it fire, so without them this runs to its cap (a count of turns, not of time, so a busy
    // machine that runs fewer slices does not fail it).
    await readInSlices(repo, async () => {
      steps++;
      const until = performance.now() + 0.05;
      while (performance.now() < until);
      return turns < 4 && performance.now() - started < 200 * SLICE_MS;
    });
    clearInterval(timer);
    expect(steps).toBeGreaterThan(10);
    expect(turns).toBeGreaterThanOrEqual(4);
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
    // Walks until the timer has run three times (only turns between slices let it run), or to a cap.
    async function* walk(): AsyncGenerator<void, number, void> {
      let total = 0;
      const end = performance.now() + SLICE_MS * 200;
      while (turns < 3 && performance.now() < end) {
        total++;
        yield;
      }
      return total;
    }
    const total = await inSlices(walk());
    clearInterval(ticking);
    expect(total).toBeGreaterThan(0);
    expect(turns).toBeGreaterThanOrEqual(3);
    async function* counted(): AsyncGenerator<void, number, void> {
      for (let step = 0; step < 100; step++) yield;
      return 100;
    }
    expect(await whole(counted())).toBe(100);
  });
});
