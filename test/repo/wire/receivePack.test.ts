/**
 * receivePack on a real LMDB store: the ref-update cap, and the branch-name clash check, which
 * must cost one branch listing per push however many branches the push creates (it cost one per
 * new branch: 8,000 new branches froze the server for 97 s); and a garbage collection removing
 * what a pushed pack relied on between its check and its write; a large pack's trees and blobs,
 * stored before the write that moves the refs, kept when the update is refused and stored again
 * when a collection removed them in between (and not asked for again when none ran); and one
 * stored while it is checked, held until it passes.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDelta } from '../../../src/git/delta.js';
import { hashObject, oidToHex } from '../../../src/git/oid.js';
import { PackWriter } from '../../../src/git/pack.js';
import { encodeTree, MODE_FILE } from '../../../src/git/tree.js';
import { checkReceivedPackWithAsyncLookups } from '../../../src/git/packCheck.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { collectGarbage } from '../../../src/repo/gc/collect.js';
import { exportToBareRepo } from '../../../src/repo/wire/exportToBareRepo.js';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../../support/git.js';
import { branchRef } from '../../../src/git/refname.js';
import { receivePack, type ReceivePackInput } from '../../../src/repo/wire/receivePack.js';
import { inWriteTx, type Repo } from '../../../src/repo/repo.js';
import type { AsyncStore, AsyncStoreReadTx, ProjectReads, ReceivedForm } from '../../../src/store/asyncTypes.js';
import { newTestRepo, openTestStore } from '../../support/store.js';
import { PackChecker } from '../../../src/service/packChecker.js';
import type { ResolvedRun } from '../../../src/repo/wire/streamedRuns.js';

const opened = openTestStore();
/** A checker that sends every pack past 1 KB to its worker, as the server does a large push. */
const checker = new PackChecker({ inlineBytesMax: 1024 });
afterAll(async () => {
  await checker.close();
  await opened.close();
});

/**
 * The same store, with every call of ProjectReads.listRefs counted on its way through (nothing
 * is replaced: each call reaches LMDB).
 */
function countingListRefs(store: AsyncStore): { store: AsyncStore; listings: () => number } {
  let listings = 0;
  const passThrough = <T extends object>(target: T, override: (prop: PropertyKey) => unknown) =>
    new Proxy(target, {
      get(inner, prop) {
        const replaced = override(prop);
        if (replaced !== undefined) return replaced;
        const value = Reflect.get(inner, prop, inner);
        return typeof value === 'function' ? value.bind(inner) : value;
      },
    });
  const project = (tx: ProjectReads) =>
    passThrough(tx, (prop) =>
      prop === 'listRefs'
        ? (prefix: string) => {
            listings++;
            return tx.listRefs(prefix);
          }
        : undefined,
    );
  const transaction = <T extends AsyncStoreReadTx>(tx: T) => passThrough(tx, (prop) => (prop === 'project' ? (id: number) => project(tx.project(id)) : undefined));
  const counted = passThrough(store, (prop) => {
    if (prop === 'read') return <T>(action: (tx: AsyncStoreReadTx) => Promise<T>) => store.read((tx) => action(transaction(tx)));
    if (prop === 'write') return <T>(action: Parameters<AsyncStore['write']>[0]) => store.write((tx) => action(transaction(tx)) as Promise<T>);
    return undefined;
  });
  return { store: counted, listings: () => listings };
}

async function headOf(repo: Repo): Promise<Buffer> {
  return (await repo.store.read((tx) => tx.project(repo.project).getRef(branchRef('main'))))!;
}


describe('receivePack', () => {
  it('creates 2,000 branches with one branch listing', async () => {
    const repo = await newTestRepo(opened.store);
    const head = await headOf(repo);
    const { store, listings } = countingListRefs(repo.store);
    const commands = Array.from({ length: 2000 }, (_, i) => ({ old: null, new: head, ref: `refs/heads/many/${i}` }));
    const result = await receivePack({ ...repo, store }, { commands, pack: null, atomic: false });
    expect(result.results.filter((r) => !r.ok)).toEqual([]);
    expect(result.updatedBranches).toHaveLength(2000);
    expect(listings()).toBe(1);
  });

  it('refuses names that clash as paths, within one push as against existing branches, and frees a deleted name', async () => {
    const repo = await newTestRepo(opened.store);
    const head = await headOf(repo);
    const create = (ref: string) => ({ old: null, new: head, ref });
    await receivePack(repo, { commands: [create('refs/heads/a/b'), create('refs/heads/keep/x')], pack: null, atomic: false });
    const result = await receivePack(repo, {
      commands: [
        create('refs/heads/solo'),
        create('refs/heads/solo/inner'),
        create('refs/heads/keep'),
        create('refs/heads/keep/x/deeper'),
        { old: head, new: null, ref: 'refs/heads/a/b' },
        create('refs/heads/a'),
      ],
      pack: null,
      atomic: false,
    });
    expect(result.results).toEqual([
      { ref: 'refs/heads/solo', ok: true },
      { ref: 'refs/heads/solo/inner', ok: false, reason: 'conflicts with refs/heads/solo' },
      { ref: 'refs/heads/keep', ok: false, reason: 'conflicts with refs/heads/keep/x' },
      { ref: 'refs/heads/keep/x/deeper', ok: false, reason: 'conflicts with refs/heads/keep/x' },
      { ref: 'refs/heads/a/b', ok: true },
      { ref: 'refs/heads/a', ok: true },
    ]);
    expect(result.hints).toHaveLength(3);
  });

  it('refuses a push over the ref-update cap before reading its pack', async () => {
    const repo = await newTestRepo(opened.store);
    const head = await headOf(repo);
    const commands = ['x', 'y', 'z'].map((name) => ({ old: null, new: head, ref: `refs/heads/${name}` }));
    const result = await receivePack(repo, { commands, pack: Buffer.from('not a pack at all'), atomic: false, refUpdatesMax: 2 });
    expect(result.unpackError).toBe('refused: 3 ref updates, at most 2 in one push');
    expect(result.results.every((r) => !r.ok && r.reason === 'too many ref updates in one push')).toBe(true);
    expect(result.hints).toEqual(['this push updates 3 refs and a push may update at most 2; push them in smaller batches']);
    expect(await repo.store.read((tx) => tx.project(repo.project).getRef('refs/heads/x'))).toBeUndefined();
    // At the cap, the same push goes through.
    const within = await receivePack(repo, { commands: commands.slice(0, 2), pack: null, atomic: false, refUpdatesMax: 2 });
    expect(within.results.every((r) => r.ok)).toBe(true);
    expect((await repo.store.read((tx) => tx.project(repo.project).getRef('refs/heads/x')))?.equals(head)).toBe(true);
  });
});

/**
 * A commit made with the git CLI in a clone of the project's export, after `change` edits the
 * clone's files: its id, the ids of the objects it adds that `take` passes, and those in a pack.
 */
async function commitInAClone(
  repo: Repo,
  change: (work: string) => void,
  take: (id: Buffer) => boolean = () => true,
  /** Objects the pack carries beyond the commit's (hex ids, written into the clone by `change`). */
  extra: (work: string) => string[] = () => [],
): Promise<{ pack: Buffer; pushed: Buffer; ids: Buffer[] }> {
  const dir = scratchDir('treehouse-push-clone-');
  try {
    const bare = join(dir.path, 'bare.git');
    initBareRepo(bare);
    await exportToBareRepo(repo, bare);
    const work = join(dir.path, 'work');
    git(['clone', '--quiet', bare, work]);
    change(work);
    git(['add', '-A'], { cwd: work });
    git(['commit', '--quiet', '-m', 'pushed'], { cwd: work });
    const pushed = Buffer.from(git(['rev-parse', 'HEAD'], { cwd: work }).trim(), 'hex');
    const ids = git(['rev-list', '--objects', 'HEAD', '^origin/main'], { cwd: work })
      .split('\n')
      .map((line) => line.slice(0, 40))
      .filter(Boolean)
      .map((hex) => Buffer.from(hex, 'hex'))
      .filter(take);
    const pack = gitBytes(['pack-objects', '--stdout', '-q'], { cwd: work, input: `${[...ids.map(oidToHex), ...extra(work)].join('\n')}\n` });
    return { pack, pushed, ids };
  } finally {
    dir.remove();
  }
}

/** The project exported to a bare repository: `branch` (when given) at `pushed`, and git fsck --strict clean. */
async function expectExportClean(repo: Repo, branch?: { ref: string; pushed: Buffer }): Promise<void> {
  const dir = scratchDir('treehouse-push-export-');
  try {
    const bare = join(dir.path, 'check.git');
    initBareRepo(bare);
    await exportToBareRepo(repo, bare);
    if (branch) expect(git(['rev-parse', branch.ref], { cwd: bare }).trim()).toBe(oidToHex(branch.pushed));
    git(['fsck', '--strict'], { cwd: bare });
  } finally {
    dir.remove();
  }
}

describe('receivePack beside a garbage collection', () => {
  /**
   * A pushed commit whose tree names a blob the pack leaves out because the store holds it: an
   * overwritten, uncommitted version no branch reaches. Built with the git CLI from the project's export.
   */
  async function pushRelyingOnGarbage(repo: Repo): Promise<{ pack: Buffer; pushed: Buffer; blob: Buffer }> {
    await createBranch(repo, { name: 'scratch' });
    await writeFiles(repo, { branch: 'scratch', files: [{ path: 'x.txt', content: 'soon garbage\n' }] });
    await writeFiles(repo, { branch: 'scratch', files: [{ path: 'x.txt', content: 'what scratch holds now\n' }] });
    const blob = hashObject('blob', Buffer.from('soon garbage\n'));
    const { pack, pushed } = await commitInAClone(
      repo,
      (work) => writeFileSync(join(work, 'x.txt'), 'soon garbage\n'),
      (id) => !id.equals(blob),
    );
    return { pack, pushed, blob };
  }

  it('refuses a push whose pack relied on a stored object that a collection removed between its check and its write', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, blob } = await pushRelyingOnGarbage(repo);
    const command = { old: null, new: pushed, ref: 'refs/heads/feature' };
    const result = await receivePack(repo, {
      commands: [command],
      pack,
      atomic: false,
      checkPack: async (bytes, limits, lookups, shallow) => {
        const checked = await checkReceivedPackWithAsyncLookups(bytes, limits, lookups, shallow, Infinity);
        // The check found the blob stored; a collection removes it before the push's write.
        await collectGarbage(repo, { graceMs: 0 });
        return checked!;
      },
    });
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: false, reason: 'missing necessary objects' }]);
    expect(result.hints[0]).toContain('garbage collection');
    await repo.store.read(async (tx) => {
      const p = tx.project(repo.project);
      expect(await p.getRef('refs/heads/feature')).toBeUndefined();
      expect(await p.hasObjects([pushed, blob])).toEqual([false, false]);
    });
  });

  it('accepts the same push when nothing was removed in between (the pack does rely on the stored blob)', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, blob } = await pushRelyingOnGarbage(repo);
    const result = await receivePack(repo, { commands: [{ old: null, new: pushed, ref: 'refs/heads/feature' }], pack, atomic: false });
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect(await repo.store.read((tx) => tx.project(repo.project).hasObjects([pushed, blob]))).toEqual([true, true]);
  });
});

describe('receivePack of a large pack: trees and blobs stored before the write that moves the refs', () => {
  /** A pushed commit adding 2,100 files in 30 directories (more trees and blobs than one write of them takes), built with the git CLI. */
  async function largePush(repo: Repo): Promise<{ pack: Buffer; pushed: Buffer; ids: Buffer[] }> {
    return commitInAClone(repo, (work) => {
      for (let d = 0; d < 30; d++) {
        mkdirSync(join(work, `dir${d}`));
        for (let f = 0; f < 70; f++) writeFileSync(join(work, `dir${d}`, `f${f}.txt`), `file ${d}/${f}\n`);
      }
    });
  }

  it('keeps them when the update is then refused, as git does', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, ids } = await largePush(repo);
    expect(ids.length).toBeGreaterThan(2_100);
    const stale = hashObject('commit', Buffer.from('not the branch head'));
    const result = await receivePack(repo, { commands: [{ old: stale, new: pushed, ref: 'refs/heads/main' }], pack, atomic: false });
    expect(result.results[0].ok).toBe(false);
    expect((await headOf(repo)).equals(pushed)).toBe(false);
    const stored = await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids));
    expect(stored.every(Boolean)).toBe(true);
  });

  it('stores them again in the write that moves the refs when a collection removed them in between, and the clone is fsck-clean', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, ids } = await largePush(repo);
    let removedBefore: boolean[] = [];
    const result = await receivePack(repo, {
      commands: [{ old: null, new: pushed, ref: 'refs/heads/feature' }],
      pack,
      atomic: false,
      runInTx: async (apply) => {
        // Stored, unreferenced: a collection with no grace removes them before the refs move.
        await collectGarbage(repo, { graceMs: 0 });
        removedBefore = await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids));
        return inWriteTx(repo, apply);
      },
    });
    expect(removedBefore.filter(Boolean).length).toBeLessThan(ids.length);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect((await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids))).every(Boolean)).toBe(true);
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });

  /** Runs the push's write with every id its hasObjects calls ask counted. */
  function countingAsked(repo: Repo): { runInTx: NonNullable<ReceivePackInput['runInTx']>; asked: () => number } {
    let asked = 0;
    const runInTx: NonNullable<ReceivePackInput['runInTx']> = (apply) =>
      inWriteTx(repo, (tx) =>
        apply(
          new Proxy(tx, {
            get(inner, prop) {
              const value = Reflect.get(inner, prop, inner);
              if (prop !== 'hasObjects') return typeof value === 'function' ? value.bind(inner) : value;
              return (oids: Buffer[]) => {
                asked += oids.length;
                return inner.hasObjects(oids);
              };
            },
          }),
        ),
      );
    return { runInTx, asked: () => asked };
  }

  it('asks for none of them when no collection ran since the push began (no collection is under way, and none began)', async () => {
    const repo = await newTestRepo(opened.store);
    // One collection long done: the count is compared, not its being zero.
    await collectGarbage(repo, { graceMs: 0 });
    const { pack, pushed, ids } = await largePush(repo);
    const { runInTx, asked } = countingAsked(repo);
    const result = await receivePack(repo, { commands: [{ old: null, new: pushed, ref: 'refs/heads/feature' }], pack, atomic: false, runInTx });
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect(asked()).toBeLessThan(10);
    expect((await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids))).every(Boolean)).toBe(true);
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });

  it('asks for all of them when a collection was under way as the push began (it keeps only what it journals and can read)', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, ids } = await largePush(repo);
    await repo.store.write(async (tx) => tx.project(repo.project).beginCollection!({ id: 'under way', startedAt: new Date().toISOString() }));
    const { runInTx, asked } = countingAsked(repo);
    try {
      const result = await receivePack(repo, { commands: [{ old: null, new: pushed, ref: 'refs/heads/feature' }], pack, atomic: false, runInTx });
      expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    } finally {
      await repo.store.write(async (tx) => tx.project(repo.project).endCollection!());
    }
    expect(asked()).toBeGreaterThanOrEqual(ids.length);
  });
});

describe('receivePack of a large pack: trees and blobs stored while the pack is checked, held until it passes', () => {
  /**
   * A pushed commit adding 2,100 files in 30 directories (more than one streamed run of 2,048),
   * each with 256 bytes that do not compress, so the pack is past receivePack's PACK_HELD_BYTES_MIN.
   */
  function manyFiles(work: string): void {
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(work, `dir${d}`));
      for (let f = 0; f < 70; f++) {
        const noise = [1, 2, 3, 4].map((k) => createHash('sha256').update(`${d}/${f}/${k}`).digest('hex')).join('');
        writeFileSync(join(work, `dir${d}`, `f${f}.txt`), `held file ${d}/${f}\n${noise}\n`);
      }
    }
  }

  /** The project's shelves (LMDB: the values its held forms' bytes went into). */
  const shelvesOf = (repo: Repo) => opened.store.listShelves(repo.project, null, 100_000).map((shelf) => shelf.shelf);

  /** The same store with every putFormsAlone call's promise and forms noted, so a test can wait for the held runs. */
  function notingPuts(store: AsyncStore): { store: AsyncStore; puts: Array<Promise<unknown>>; forms: ReceivedForm[]; holdCalls: string[]; written: () => Promise<unknown> } {
    const puts: Array<Promise<unknown>> = [];
    const forms: ReceivedForm[] = [];
    const holdCalls: string[] = [];
    let markPrepared = () => {};
    const prepared = new Promise<void>((resolve) => (markPrepared = resolve));
    const noted = new Proxy(store, {
      get(inner, prop) {
        const value = Reflect.get(inner, prop, inner);
        if ((prop === 'prepareFormHold' || prop === 'endFormHold') && typeof value === 'function') {
          return (...args: unknown[]) => {
            holdCalls.push(prop);
            if (prop === 'prepareFormHold') markPrepared();
            return value.apply(inner, args);
          };
        }
        if (prop === 'putFormsAlone') {
          return (...args: Parameters<NonNullable<AsyncStore['putFormsAlone']>>) => {
            const put = inner.putFormsAlone!(...args);
            forms.push(...args[1]);
            puts.push(put.catch(() => {}));
            return put;
          };
        }
        return typeof value === 'function' ? value.bind(inner) : value;
      },
    });
    // The check's verdict may come before the push has written every run it was told (they are
    // written one after another): the hold is readied after the last, once the pack is parsed.
    const written = async () => {
      await prepared;
      await Promise.all(puts);
    };
    return { store: noted, puts, forms, holdCalls, written };
  }

  /** receivePack of `pack` creating refs/heads/feature at `pushed`, through `store`, checked by `checkPack` (the worker's, streaming, by default). */
  function pushFeature(repo: Repo, store: AsyncStore, pack: Buffer, pushed: Buffer, checkPack: ReceivePackInput['checkPack'] = (...args) => checker.check(...args)) {
    return receivePack({ ...repo, store }, { commands: [{ old: null, new: pushed, ref: 'refs/heads/feature' }], pack, atomic: false, checkPack });
  }

  it('reads none of them until the check has passed, then stores them, and the clone is fsck-clean', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, ids } = await commitInAClone(repo, manyFiles);
    const shelvesBefore = shelvesOf(repo).length;
    let runs = 0;
    let readDuringCheck: boolean[] = [];
    let shelvesDuringCheck = 0;
    const noted = notingPuts(repo.store);
    let runsWhenParsed = -1;
    const result = await pushFeature(repo, noted.store, pack, pushed, async (bytes, limits, lookups, shallow, onResolved, onParsed) => {
      expect(onResolved).toBeDefined();
      expect(onParsed).toBeDefined();
      const checked = await checker.check(
        bytes,
        limits,
        lookups,
        shallow,
        (run: ResolvedRun) => {
          runs++;
          onResolved!(run);
        },
        () => {
          runsWhenParsed = runs;
          onParsed!();
        },
      );
      // Told once, after the last run; the held pointers were readied for the hold's end then.
      expect(runsWhenParsed).toBe(runs);
      // Every run is written once the hold is readied (its shelves are there), and none of it is read.
      await noted.written();
      shelvesDuringCheck = shelvesOf(repo).length;
      readDuringCheck = await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids));
      return checked;
    });
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(noted.holdCalls).toEqual(['prepareFormHold', 'endFormHold']);
    expect(shelvesDuringCheck).toBeGreaterThan(shelvesBefore);
    expect(readDuringCheck.filter(Boolean)).toEqual([]);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect((await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids))).every(Boolean)).toBe(true);
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });

  it("stores the commits parents first after the check, one whose entry is a delta on its child with that form at the end", async () => {
    const repo = await newTestRepo(opened.store);
    const head = await headOf(repo);
    // Noise that does not compress, so the pack is past PACK_HELD_BYTES_MIN and its runs are held.
    const noise = Array.from({ length: 400 }, (_, i) => Array.from({ length: 16 }, (_, k) => createHash('sha512').update(`commits ${i} ${k}`).digest('hex')).join(''));
    const files = noise.map((text, i) => ({ name: `noise-${String(i).padStart(3, '0')}.txt`, body: Buffer.from(text) }));
    const tree = encodeTree(files.map(({ name, body }) => ({ name, mode: MODE_FILE, oid: hashObject('blob', body) })));
    const treeHex = oidToHex(hashObject('tree', tree));
    const commitOf = (parent: Buffer, message: string) => Buffer.from(`tree ${treeHex}\nparent ${oidToHex(parent)}\nauthor T <t@example.com> 1700000000 +0000\ncommitter T <t@example.com> 1700000000 +0000\n\n${message}\n`);
    const first = commitOf(head, `first ${'of three '.repeat(20)}`);
    const second = commitOf(hashObject('commit', first), `second ${'of three '.repeat(20)}`);
    const third = commitOf(hashObject('commit', second), `third ${'of three '.repeat(20)}`);
    const [firstId, secondId, thirdId] = [first, second, third].map((body) => hashObject('commit', body));
    // Newest first, as git writes them; the second as a delta on the third, its child.
    const writer = new PackWriter(files.length + 4);
    const chunks = [writer.start()];
    const thirdEntry = writer.addObject('commit', third);
    chunks.push(thirdEntry.bytes, writer.addOfsDelta(thirdEntry.offset, createDelta(third, second)).bytes, writer.addObject('commit', first).bytes);
    for (const { body } of files) chunks.push(writer.addObject('blob', body).bytes);
    chunks.push(writer.addObject('tree', tree).bytes, writer.finish());
    const pack = Buffer.concat(chunks);
    expect(pack.length).toBeGreaterThan(256 * 1024);
    const result = await pushFeature(repo, repo.store, pack, thirdId);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    const [headInfo] = await repo.store.read((tx) => tx.project(repo.project).getCommitInfos([head]));
    const stored = await repo.store.read(async (tx) => {
      const p = tx.project(repo.project);
      return { generations: (await p.getCommitInfos([firstId, secondId, thirdId])).map((info) => info?.generation), forms: (await p.getDeflated!([firstId, secondId, thirdId])).map((form) => form?.delta?.depth ?? (form ? 0 : null)) };
    });
    const base = headInfo!.generation;
    expect(stored).toEqual({ generations: [base + 1, base + 2, base + 3], forms: [0, 1, 0] });
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed: thirdId });
  });

  it("stores again a held delta whose base lost to another writer's form meanwhile, so the branch's history is whole", async () => {
    const repo = await newTestRepo(opened.store);
    const head = (await repo.store.read((tx) => tx.project(repo.project).getRef(branchRef('main'))))!;
    const c = Buffer.from(Array.from({ length: 200 }, (_, i) => `line ${i} of a file\n`).join(''));
    const b = Buffer.concat([c, Buffer.from('one more line\n')]);
    const d = Buffer.concat([b, Buffer.from('and another\n')]);
    const [cId, bId, dId] = [c, b, d].map((body) => hashObject('blob', body));
    // Noise that does not compress, so the pack is past PACK_HELD_BYTES_MIN and its runs are held.
    const noise = Array.from({ length: 400 }, (_, i) => Array.from({ length: 16 }, (_, k) => createHash('sha512').update(`noise ${i} ${k}`).digest('hex')).join(''));
    const files = [
      { name: 'b.txt', body: b },
      { name: 'd.txt', body: d },
      ...noise.map((text, i) => ({ name: `noise-${String(i).padStart(3, '0')}.txt`, body: Buffer.from(text) })),
    ];
    const tree = encodeTree(files.map(({ name, body }) => ({ name, mode: MODE_FILE, oid: hashObject('blob', body) })));
    const commit = Buffer.from(`tree ${oidToHex(hashObject('tree', tree))}\nparent ${oidToHex(head)}\nauthor T <t@example.com> 1700000000 +0000\ncommitter T <t@example.com> 1700000000 +0000\n\nraced\n`);
    // The pack has d as a delta on b.
    const writer = new PackWriter(files.length + 2);
    const chunks = [writer.start()];
    const bEntry = writer.addObject('blob', b);
    chunks.push(bEntry.bytes, writer.addOfsDelta(bEntry.offset, createDelta(b, d)).bytes);
    for (const { body } of files.slice(2)) chunks.push(writer.addObject('blob', body).bytes);
    chunks.push(writer.addObject('tree', tree).bytes, writer.addObject('commit', commit).bytes, writer.finish());
    const pack = Buffer.concat(chunks);
    const pushed = hashObject('commit', commit);
    const noted = notingPuts(repo.store);
    const result = await pushFeature(repo, noted.store, pack, pushed, async (bytes, limits, lookups, shallow, onResolved, onParsed) => {
      const checked = await checker.check(bytes, limits, lookups, shallow, onResolved, onParsed);
      await noted.written();
      // Meanwhile another write stores c whole and b as a delta on c: nobody sees the held b, so
      // its form wins, and the held d (a delta on the held b) is not put.
      const delta = createDelta(c, b);
      await repo.store.putFormsAlone!(
        repo.project,
        [
          { oid: cId, type: 'blob', inflatedBytes: c.length, deflated: deflateSync(c), delta: null },
          { oid: bId, type: 'blob', inflatedBytes: b.length, deflated: deflateSync(delta), delta: { base: cId, bytes: delta.length } },
        ],
        50,
      );
      return checked;
    });
    expect(noted.puts.length).toBeGreaterThanOrEqual(1);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect(await repo.store.read((tx) => tx.project(repo.project).hasObjects([bId, dId]))).toEqual([true, true]);
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });

  it('leaves nothing of a pack its check refuses after every run was held: no object, no shelf', async () => {
    const repo = await newTestRepo(opened.store);
    // A tree whose entries are out of order, which fsck refuses; the parse and its runs go through.
    const { pack, pushed, ids } = await commitInAClone(repo, manyFiles, undefined, (work) => {
      const blob = git(['hash-object', '-w', '--stdin'], { cwd: work, input: 'x\n' }).trim();
      const entry = (name: string) => Buffer.concat([Buffer.from(`100644 ${name}\0`), Buffer.from(blob, 'hex')]);
      const unsorted = Buffer.concat([entry('b'), entry('a')]);
      return [git(['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], { cwd: work, input: unsorted }).trim()];
    });
    const shelvesBefore = shelvesOf(repo);
    const noted = notingPuts(repo.store);
    const result = await pushFeature(repo, noted.store, pack, pushed);
    expect(noted.puts.length).toBeGreaterThanOrEqual(2);
    expect(result.unpackError).toMatch(/treeNotSorted|not properly sorted/);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: false, reason: 'unpacker error' }]);
    expect(shelvesOf(repo)).toEqual(shelvesBefore);
    expect((await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids))).filter(Boolean)).toEqual([]);
  });

  /**
   * A history of its own (a root commit adding manyFiles, then `more` commits each changing a
   * file), as a pack of everything it reaches: every commit's parents are in the pack. `extra`
   * writes objects the pack carries beyond it (hex ids).
   */
  function unrelatedHistory(more: number, extra: (work: string) => string[] = () => []): { pack: Buffer; commits: Buffer[] } {
    const dir = scratchDir('treehouse-push-history-');
    try {
      const work = join(dir.path, 'work');
      mkdirSync(work);
      git(['init', '--quiet'], { cwd: work });
      manyFiles(work);
      git(['add', '-A'], { cwd: work });
      git(['commit', '--quiet', '-m', 'root'], { cwd: work });
      for (let i = 0; i < more; i++) {
        writeFileSync(join(work, 'dir0', 'f0.txt'), `changed ${i}\n`);
        git(['commit', '--quiet', '-am', `change ${i}`], { cwd: work });
      }
      const commits = git(['rev-list', '--reverse', 'HEAD'], { cwd: work }).trim().split('\n').map((hex) => Buffer.from(hex, 'hex'));
      const ids = git(['rev-list', '--objects', 'HEAD'], { cwd: work }).split('\n').map((line) => line.slice(0, 40)).filter(Boolean);
      const pack = gitBytes(['pack-objects', '--stdout', '-q'], { cwd: work, input: `${[...ids, ...extra(work)].join('\n')}\n` });
      return { pack, commits };
    } finally {
      dir.remove();
    }
  }

  it('holds the commits too when the pack carries their parents, read by nobody until the check passes, then indexed parents first', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, commits } = unrelatedHistory(5);
    const pushed = commits[commits.length - 1];
    let readDuringCheck: boolean[] = [];
    let heldDuringCheck: string[] = [];
    const noted = notingPuts(repo.store);
    const result = await pushFeature(repo, noted.store, pack, pushed, async (bytes, limits, lookups, shallow, onResolved, onParsed) => {
      const checked = await checker.check(bytes, limits, lookups, shallow, onResolved, onParsed);
      await noted.written();
      heldDuringCheck = noted.forms.filter((form) => form.type === 'commit').map((form) => oidToHex(form.oid));
      readDuringCheck = await repo.store.read((tx) => tx.project(repo.project).hasObjects(commits));
      return checked;
    });
    // Every commit went to the hold, each after its parent, and none was read before the verdict.
    expect(heldDuringCheck).toEqual(commits.map(oidToHex));
    expect(readDuringCheck).toEqual(commits.map(() => false));
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    const generations = await repo.store.read(async (tx) => (await tx.project(repo.project).getCommitInfos(commits)).map((info) => info?.generation));
    expect(generations).toEqual(commits.map((_, index) => index + 1));
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });

  it('lands two held pushes of the same history into one project at once, each branch with its whole history', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, commits } = unrelatedHistory(4);
    const pushed = commits[commits.length - 1];
    const checkPack: ReceivePackInput['checkPack'] = (...args) => checker.check(...args);
    const [one, two] = await Promise.all(
      ['refs/heads/one', 'refs/heads/two'].map((ref) => receivePack(repo, { commands: [{ old: null, new: pushed, ref }], pack, atomic: false, checkPack })),
    );
    expect(one.results).toEqual([{ ref: 'refs/heads/one', ok: true }]);
    expect(two.results).toEqual([{ ref: 'refs/heads/two', ok: true }]);
    const generations = await repo.store.read(async (tx) => (await tx.project(repo.project).getCommitInfos(commits)).map((info) => info?.generation));
    expect(generations).toEqual(commits.map((_, index) => index + 1));
    await expectExportClean(repo, { ref: 'refs/heads/one', pushed });
    await expectExportClean(repo, { ref: 'refs/heads/two', pushed });
  });

  it('leaves none of the held commits of a pack its check refuses', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, commits } = unrelatedHistory(3, (work) => {
      const blob = git(['hash-object', '-w', '--stdin'], { cwd: work, input: 'x\n' }).trim();
      const entry = (name: string) => Buffer.concat([Buffer.from(`100644 ${name}\0`), Buffer.from(blob, 'hex')]);
      return [git(['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], { cwd: work, input: Buffer.concat([entry('b'), entry('a')]) }).trim()];
    });
    const noted = notingPuts(repo.store);
    const result = await pushFeature(repo, noted.store, pack, commits[commits.length - 1]);
    expect(noted.puts.length).toBeGreaterThanOrEqual(2);
    expect(result.unpackError).toMatch(/treeNotSorted|not properly sorted/);
    expect(await repo.store.read((tx) => tx.project(repo.project).hasObjects(commits))).toEqual(commits.map(() => false));
    expect(await repo.store.read(async (tx) => (await tx.project(repo.project).getCommitInfos(commits)).filter(Boolean))).toEqual([]);
  });

  it('keeps the held shelves through a collection and its compaction that run while the pack is checked', async () => {
    const repo = await newTestRepo(opened.store);
    const { pack, pushed, ids } = await commitInAClone(repo, manyFiles);
    const noted = notingPuts(repo.store);
    let compacted = false;
    const result = await pushFeature(repo, noted.store, pack, pushed, async (bytes, limits, lookups, shallow, onResolved, onParsed) => {
      const checked = await checker.check(bytes, limits, lookups, shallow, onResolved, onParsed);
      await noted.written();
      // Held shelves have no pointer naming them yet: to a compaction they look dead.
      const report = await collectGarbage(repo, { graceMs: 0 });
      compacted = report !== undefined;
      return checked;
    });
    expect(compacted).toBe(true);
    expect(noted.puts.length).toBeGreaterThanOrEqual(2);
    expect(result.results).toEqual([{ ref: 'refs/heads/feature', ok: true }]);
    expect((await repo.store.read((tx) => tx.project(repo.project).hasObjects(ids))).every(Boolean)).toBe(true);
    await expectExportClean(repo, { ref: 'refs/heads/feature', pushed });
  });
});
