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
    // A busy machine can stall this process for longer than a slice between two statements (a CI
    // run once saw one due right after its pause): a check that the slicer is not due counts only when it ran
    // within a slice of the moment its slice began, and the test asks for three that did.
    let fitted = 0;
    for (let attempt = 0; attempt < 50 && fitted < 3; attempt++) {
      const createdAt = performance.now();
      const slicer = new Slicer();
      const dueWhenFresh = slicer.due;
      const freshFitted = performance.now() - createdAt < SLICE_MS;
      if (freshFitted) expect(dueWhenFresh).toBe(false);
      const until = performance.now() + SLICE_MS + 1;
      while (performance.now() < until);
      expect(slicer.due).toBe(true);
      // The next slice begins during pause(), so no earlier than this.
      const pausedAt = performance.now();
      await slicer.pause();
      const dueAfterPause = slicer.due;
      const pauseFitted = performance.now() - pausedAt < SLICE_MS;
      if (pauseFitted) expect(dueAfterPause).toBe(false);
      if (freshFitted && pauseFitted) fitted++;
    }
    expect(fitted).toBe(3);
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
