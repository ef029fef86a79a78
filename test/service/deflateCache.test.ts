/**
 * The deflate cache on a real LMDB store (no server): the scan at start pages through a backlog
 * larger than one page and leaves every object with a form; a delta the window found on a base the
 * store no longer holds is refused and the object stored whole. What clones carry is tested through
 * the server against git in test/interop/deltaPacks.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { packNameHash } from '../../src/git/nameHash.js';
import { hashObject, type Oid } from '../../src/git/oid.js';
import { DeflateCache } from '../../src/service/deflateCache.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { scratchDir } from '../support/git.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function openStore(): LmdbStore {
  const dir = scratchDir('treehouse-deflate-cache-');
  const store = new LmdbStore({ path: dir.path });
  cleanups.push(() => dir.remove(), () => store.close());
  return store;
}

function startCache(store: LmdbStore, options: { workerIdleMs?: number; quietMs?: number; waitMaxMs?: number; queueMax?: number } = {}): DeflateCache {
  const cache = new DeflateCache(store.async, options);
  cache.start();
  cleanups.push(() => cache.stop());
  return cache;
}

async function forms(store: LmdbStore, project: number, oids: Oid[]) {
  return store.async.read(async (tx) => tx.project(project).getDeflated!(oids));
}

/** A source file of `lines` distinct lines. */
const moduleText = (lines: number, seed: string) => Array.from({ length: lines }, (_, line) => `export const ${seed}${line} = ${(line * 2_654_435_761) >>> 0};`).join('\n');

describe('DeflateCache', () => {
  it('pages through a backlog of several pages at start, counting it until done, and leaves every object with a form', async () => {
    const store = openStore();
    // Stored before any cache listens: an earlier run's backlog, more than one page of 4,096.
    const oids = await store.async.write(async (tx) => Array.from({ length: 5_000 }, (_, index) => tx.project(1 + (index % 3)).putObject('blob', Buffer.from(`backlog object ${index}\n`.repeat(5)))));
    const cache = startCache(store);
    expect(cache.backlog).toBeGreaterThan(0);
    await cache.idle();
    expect(cache.backlog).toBe(0);
    const byProject = [1, 2, 3].map((project) => oids.filter((_, index) => 1 + (index % 3) === project));
    for (const [index, ids] of byProject.entries()) expect((await forms(store, index + 1, ids)).every((form) => form !== undefined)).toBe(true);
    const page = await store.async.listUndeflated!(null, 10_000);
    expect(page.undeflated).toEqual([]);
  });

  it('stores an object whole when the store refuses the delta the window found (its base is gone), and every object still gets a form', async () => {
    const store = openStore();
    const cache = startCache(store);
    const text = moduleText(200, 'kept');
    const [base] = await store.async.write(async (tx) => [tx.project(7).putObject('blob', Buffer.from(text), undefined, null, packNameHash('a/module.ts'))]);
    await cache.idle();
    expect((await forms(store, 7, [base]))[0]).toBeDefined();
    // The project's data goes (the window still holds the base), and an edited copy arrives.
    while ((await store.async.dropProjectKeys(7, 1_000)) > 0);
    const edited = text.split('\n').map((line, index) => (index % 10 === 0 ? `${line} // edited` : line)).join('\n');
    const copy = await store.async.write(async (tx) => tx.project(7).putObject('blob', Buffer.from(edited), undefined, null, packNameHash('b/module.ts')));
    await cache.idle();
    const [form] = await forms(store, 7, [copy]);
    expect(form).toBeDefined();
    expect(form!.delta).toBeUndefined();
    // The gone base was dropped from the window with the refusal: an object closest to it is now a
    // delta on the copy, where it would have named the base again, been refused and stored whole.
    const again = await store.async.write(async (tx) => tx.project(7).putObject('blob', Buffer.from(`${text}\n// one more line`), undefined, null, packNameHash('c/module.ts')));
    await cache.idle();
    const [next] = await forms(store, 7, [again]);
    expect(next!.delta?.base).toEqual(copy);
  });

  it('lets its worker go once idle (its heap with it), and starts a new one for the next objects', async () => {
    const store = openStore();
    const cache = startCache(store, { workerIdleMs: 50 });
    const write = (seed: string) => store.async.write(async (tx) => Array.from({ length: 20 }, (_, index) => tx.project(3).putObject('blob', Buffer.from(moduleText(100, `${seed}${index}`)), undefined, null, packNameHash(`src/${seed}${index}.ts`))));
    const first = await write('first');
    await cache.idle();
    expect((await forms(store, 3, first)).every((form) => form !== undefined)).toBe(true);
    for (const deadline = Date.now() + 10_000; cache.workerRunning && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(cache.workerRunning).toBe(false);
    const second = await write('second');
    await cache.idle();
    expect((await forms(store, 3, second)).every((form) => form !== undefined)).toBe(true);
  });

  it('gathers the objects of writes that follow each other closely into one write of their forms', async () => {
    // Ten one-file writes in quick succession (a client writing and committing in a loop): waiting
    // for the writes to pause, they get their forms in one write transaction of the cache; without
    // waiting, the cache starts after each write and writes forms in between them.
    const formWritesOf = async (quietMs: number) => {
      const store = openStore();
      const cache = startCache(store, { quietMs });
      await cache.idle();
      let writes = 0;
      store.onWriteDone(() => writes++);
      const oids: Oid[] = [];
      for (let round = 0; round < 10; round++) {
        const [oid] = await store.async.write(async (tx) => [tx.project(4).putObject('blob', Buffer.from(moduleText(50, `g${quietMs}r${round}`)))]);
        oids.push(oid);
        // What a client's next request would wait for anyway: a turn of the loop and the durable commit.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await cache.idle();
      expect((await forms(store, 4, oids)).every((form) => form !== undefined)).toBe(true);
      return writes - 10;
    };
    // A quiet period far longer than the loop takes (idle() starts the cache at once): one write of forms.
    expect(await formWritesOf(60_000)).toBe(1);
    expect(await formWritesOf(0)).toBeGreaterThan(1);
  });

  it('gives a chain of versions written one after another their forms in one write, each a delta on the one it replaced', async () => {
    // A file edited and committed in a loop: each version names the one before it. They used to get
    // their forms a link per write (a version waited for the next batch while its base was in this one).
    const store = openStore();
    const cache = startCache(store, { quietMs: 60_000 });
    await cache.idle();
    let writes = 0;
    store.onWriteDone(() => writes++);
    const oids: Oid[] = [];
    let text = moduleText(200, 'chain');
    for (let round = 0; round < 30; round++) {
      text = text.replace(`chain${round * 5} =`, `chain${round * 5}edited =`);
      const previous = oids.at(-1) ?? null;
      oids.push(await store.async.write(async (tx) => tx.project(6).putObject('blob', Buffer.from(text), undefined, previous, packNameHash('src/chain.ts'))));
    }
    await cache.idle();
    expect(writes - oids.length).toBe(1);
    const made = await forms(store, 6, oids);
    expect(made[0]!.delta).toBeUndefined();
    made.slice(1).forEach((form, index) => {
      expect(form!.delta!.base.equals(oids[index])).toBe(true);
      expect(form!.delta!.depth).toBe(index + 1);
    });
  });

  it('queues at most queueMax objects, and gives what it left out its form through a scan of the store once the queue runs short', async () => {
    // Writes faster than the forms are made, for as long as they last, grew the queue without end.
    const store = openStore();
    const cache = startCache(store, { quietMs: 60_000, waitMaxMs: 60_000, queueMax: 5 });
    await cache.idle();
    const oids: Oid[] = [];
    for (let round = 0; round < 20; round++) {
      oids.push(await store.async.write(async (tx) => tx.project(7).putObject('blob', Buffer.from(moduleText(60, `bounded${round}`)))));
    }
    // Five queued, and one for the scan that is due.
    expect(cache.backlog).toBe(6);
    expect((await forms(store, 7, oids)).every((form) => form === undefined)).toBe(true);
    await cache.idle();
    expect(cache.backlog).toBe(0);
    expect((await forms(store, 7, oids)).every((form) => form !== undefined)).toBe(true);
  });

  /** Writes one object to project 5 every `everyMs` for `forMs`, counting the cache's writes of forms made meanwhile. */
  async function writeSteadily(store: LmdbStore, everyMs: number, forMs: number): Promise<{ oids: Oid[]; formWritesDuring: number }> {
    let formWrites = 0;
    let writing = true;
    const oids: Oid[] = [];
    store.onWriteDone(() => {
      if (writing) formWrites++;
    });
    for (const end = Date.now() + forMs; Date.now() < end; ) {
      const [oid] = await store.async.write(async (tx) => [tx.project(5).putObject('blob', Buffer.from(moduleText(40, `steady${oids.length}`)))]);
      oids.push(oid);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    writing = false;
    return { oids, formWritesDuring: formWrites - oids.length };
  }

  async function waitForNoBacklog(cache: DeflateCache, withinMs: number): Promise<void> {
    for (const deadline = Date.now() + withinMs; cache.backlog > 0; ) {
      if (Date.now() > deadline) throw new Error(`the cache still had ${cache.backlog} object(s) waiting after ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('waits while writes keep coming, then makes their forms once they pause, without being asked', async () => {
    const store = openStore();
    const cache = startCache(store, { quietMs: 1_000, waitMaxMs: 60_000 });
    await cache.idle();
    // A write every 10 ms for 0.6 s never leaves the 1 s of quiet the cache waits for.
    const { oids, formWritesDuring } = await writeSteadily(store, 10, 600);
    expect(oids.length).toBeGreaterThan(5);
    expect(formWritesDuring).toBe(0);
    expect(cache.backlog).toBe(oids.length);
    // No idle(): the quiet period alone starts it.
    await waitForNoBacklog(cache, 30_000);
    expect((await forms(store, 5, oids)).every((form) => form !== undefined)).toBe(true);
  });

  it('makes forms while writes never pause once the oldest waiting object has waited its longest', async () => {
    const store = openStore();
    const cache = startCache(store, { quietMs: 60_000, waitMaxMs: 200 });
    await cache.idle();
    const { oids, formWritesDuring } = await writeSteadily(store, 10, 1_500);
    expect(formWritesDuring).toBeGreaterThan(0);
    // What the last writes left waits its 200 ms too, then gets its forms.
    await waitForNoBacklog(cache, 30_000);
    expect((await forms(store, 5, oids)).every((form) => form !== undefined)).toBe(true);
  });

  it('gives forms to objects written together that name each other as their similar object', async () => {
    // Each waits one turn for a base in its batch; objects that name each other would wait for each
    // other forever (the drain spun without giving the loop a turn: every timer, this test's too, stopped).
    // The third names itself, a hint the store drops before the cache sees it.
    const store = openStore();
    const cache = startCache(store);
    const bodies = ['swapA', 'swapB', 'itself'].map((seed) => Buffer.from(moduleText(120, seed)));
    const [a, b, self] = bodies.map((body) => hashObject('blob', body));
    const written = await store.async.write(async (tx) => {
      const project = tx.project(9);
      return [
        project.putObject('blob', bodies[0], undefined, b, packNameHash('x.ts')),
        project.putObject('blob', bodies[1], undefined, a, packNameHash('y.ts')),
        project.putObject('blob', bodies[2], undefined, self, packNameHash('z.ts')),
      ];
    });
    expect(written).toEqual([a, b, self]);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await cache.idle();
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
    expect((await forms(store, 9, written)).every((form) => form !== undefined)).toBe(true);
  });
});
