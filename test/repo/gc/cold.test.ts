/**
 * Cold objects kept compactly by a collection (src/repo/gc/collect.ts step 7, issue 13 item 7): a
 * history written through the repo's verbs, with the deflate cache making every object's
 * pack-ready form as the server does, is collected; what only history reaches is then kept as its
 * form alone, while the hot trees (working trees' and branch heads') and every commit keep their
 * raw copies. Every read of every commit answers as before, and the export is what git finds whole.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deflateSync } from 'node:zlib';
import { createDelta } from '../../../src/git/delta.js';
import { hashObject, oidToHex, type Oid } from '../../../src/git/oid.js';
import { decodeTree, MODE_TREE } from '../../../src/git/tree.js';
import { blame } from '../../../src/repo/blame.js';
import { commit } from '../../../src/repo/commit.js';
import { compare } from '../../../src/repo/compare.js';
import { createBranch } from '../../../src/repo/createBranch.js';
import { deleteFile } from '../../../src/repo/deleteFile.js';
import { collectGarbage } from '../../../src/repo/gc/collect.js';
import { listFiles } from '../../../src/repo/listFiles.js';
import { log, logByPath } from '../../../src/repo/log.js';
import { moveFile } from '../../../src/repo/moveFile.js';
import { readFile } from '../../../src/repo/readFile.js';
import { inReadTx, inWriteTx, type Repo, type WriteTx } from '../../../src/repo/repo.js';
import { restore } from '../../../src/repo/restore.js';
import { search } from '../../../src/repo/search.js';
import { showCommit } from '../../../src/repo/showCommit.js';
import { writeFiles } from '../../../src/repo/writeFiles.js';
import { DeflateCache } from '../../../src/service/deflateCache.js';
import type { AsyncStore, CollectionReads, PackFormReads, PackFormWrites, ProjectReads } from '../../../src/store/asyncTypes.js';
import type { StoredEntry } from '../../../src/store/types.js';
import { expectFormsSound, expectOnlyReachable, fsckAndReachable, storedHexes } from '../../support/gc.js';
import { newTestRepo, openTestStore, testPeople } from '../../support/store.js';

const opened = openTestStore();
const cache = new DeflateCache(opened.store.async);
cache.start();
afterAll(async () => {
  await cache.stop();
  await opened.close();
});

const now = { graceMs: 0 };

/** A file that grows by a paragraph per version, so the deflate cache keeps versions as deltas on the ones before. */
function version(path: string, round: number): string {
  const lines = [`// ${path}`];
  for (let i = 0; i <= round; i++) lines.push(`export const value${i} = ${i * 7}; // paragraph ${i} of ${path}, long enough to be worth a delta`);
  return `${lines.join('\n')}\n`;
}

/**
 * Commits on main (edits, new files, a move, a delete) and a branch with commits of its own, then
 * uncommitted changes on main; the forms are all made. Returns main's commits, oldest first.
 */
async function writeHistory(repo: Repo, commits = 24): Promise<string[]> {
  const made: string[] = [];
  const paths = ['src/a.ts', 'src/b.ts', 'src/deep/c.ts', 'docs/readme.md', 'top.txt'];
  for (let round = 0; round < commits; round++) {
    const files = paths.filter((_, i) => (round + i) % 2 === 0 || round === 0).map((path) => ({ path, content: version(path, round) }));
    files.push({ path: `notes/n${round % 5}.md`, content: version(`notes ${round}`, round % 3) });
    await writeFiles(repo, { branch: 'main', files });
    if (round === 8) await moveFile(repo, { branch: 'main', from: 'notes/n1.md', to: 'moved/n1.md' });
    if (round === 12) await deleteFile(repo, { branch: 'main', path: 'moved/n1.md' });
    made.push((await commit(repo, { branch: 'main', people: testPeople })).oid);
    if (round === 10) await createBranch(repo, { name: 'side' });
    // The cache takes each round's objects as they come, as it keeps up on an idle server: how many
    // it takes at once decides which bases it finds, and so the chains the collection starts from.
    await cache.idle();
  }
  for (let round = 0; round < 3; round++) {
    await writeFiles(repo, { branch: 'side', files: [{ path: 'src/a.ts', content: version('side a', round) }] });
    await commit(repo, { branch: 'side', people: testPeople });
  }
  await writeFiles(repo, { branch: 'main', files: [{ path: 'src/deep/c.ts', content: version('uncommitted c', 2) }] });
  await cache.idle();
  return made;
}

type Reads = ProjectReads & CollectionReads;

async function describeAll(repo: Repo): Promise<StoredEntry[]> {
  const hexes = await storedHexes(repo);
  const entries = await inReadTx(repo, (tx) => (tx as Reads).describeStored(hexes.map((hex) => Buffer.from(hex, 'hex'))));
  return entries.map((entry) => entry!);
}

/** The trees the working trees and branch heads reach. */
async function hotTrees(repo: Repo): Promise<Set<string>> {
  return (await hotObjects(repo)).trees;
}

/** The trees and blobs the working trees and branch heads reach. */
async function hotObjects(repo: Repo): Promise<{ trees: Set<string>; blobs: Set<string> }> {
  const roots = await inReadTx(repo, async (tx) => {
    const heads = await tx.listRefs('refs/heads/');
    const infos = await tx.getCommitInfos(heads.map((ref) => ref.oid));
    const workingTrees = await (tx as Reads).listWorkingTrees();
    return [...infos.map((info) => info!.tree), ...workingTrees.map(({ state }) => state.tree)];
  });
  const hot = new Set<string>();
  const blobs = new Set<string>();
  const stack = [...roots];
  while (stack.length > 0) {
    const tree = stack.pop()!;
    if (hot.has(oidToHex(tree))) continue;
    hot.add(oidToHex(tree));
    const [object] = await inReadTx(repo, (tx) => tx.getObjects([tree]));
    for (const entry of decodeTree(object!.body)) {
      if (entry.mode === MODE_TREE) stack.push(entry.oid);
      else blobs.add(oidToHex(entry.oid));
    }
  }
  return { trees: hot, blobs };
}

/** `count` versions of one growing file, each written and committed; their ids, oldest first. */
async function versionsOf(repo: Repo, path: string, from: number, count: number): Promise<Oid[]> {
  const oids: Oid[] = [];
  for (let round = from; round < from + count; round++) {
    const content = version(path, round);
    await writeFiles(repo, { branch: 'main', files: [{ path, content }] });
    await commit(repo, { branch: 'main', people: testPeople });
    oids.push(hashObject('blob', Buffer.from(content)));
    // Each version's form made before the next is written, as a server's deflate cache keeps up with an editor.
    await cache.idle();
  }
  return oids;
}

/** The forms of `oids`: [base index in `oids` (-1: whole, -2: another object), depth]. */
async function shapes(repo: Repo, oids: readonly Oid[]): Promise<Array<[number, number]>> {
  const forms = await inReadTx(repo, (tx) => (tx as ProjectReads & PackFormReads).getDeflated(oids));
  return forms.map((form) => {
    if (!form!.delta) return [-1, 0];
    const base = oids.findIndex((oid) => oid.equals(form!.delta!.base));
    return [base < 0 ? -2 : base, form!.delta.depth];
  });
}

/** What a reader of the project sees: every commit whole with its files, blame, compare, log by path, search and listings. */
async function everyRead(repo: Repo, commits: readonly string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const oid of commits) out.push(await showCommit(repo, { oid, content: true }));
  for (const ref of [commits[3], commits[15], 'main', 'side']) out.push(await blame(repo, { path: 'src/a.ts', ref }));
  out.push(await compare(repo, { base: commits[1], head: 'main', context: 3, patch: true }));
  out.push(await compare(repo, { base: commits[5], head: 'side', context: 1, patch: true }));
  out.push(await logByPath(repo, { branch: 'main', limit: 100, path: 'src/deep' }));
  out.push(await log(repo, { branch: 'main', limit: 100 }));
  out.push(await search(repo, { q: 'paragraph 3', regex: false, case: true, ref: commits[6], limit: 1000 }));
  out.push(await search(repo, { q: 'paragraph', regex: false, case: true, ref: 'worktree:main', limit: 1000 }));
  out.push(await listFiles(repo, { branch: 'main', content: true }));
  out.push(await listFiles(repo, { branch: 'side', content: false }));
  out.push(await readFile(repo, { branch: 'main', path: 'src/b.ts' }));
  return out;
}

const sum = (entries: readonly StoredEntry[], pick: (entry: StoredEntry) => number) => entries.reduce((total, entry) => total + pick(entry), 0);

/** A store whose next write, once `armed`, waits for `before` to finish first (a writer that commits between the collector's reads and its write). */
function interposed(store: AsyncStore): { store: AsyncStore; arm: (before: () => Promise<unknown>) => void; ran: () => boolean } {
  let pending: (() => Promise<unknown>) | null = null;
  let ran = false;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop !== 'write') return Reflect.get(target, prop, target);
      return async (action: Parameters<AsyncStore['write']>[0]) => {
        const before = pending;
        pending = null;
        if (before) {
          await before();
          ran = true;
        }
        return target.write(action);
      };
    },
  });
  return { store: wrapped, arm: (before) => (pending = before), ran: () => ran };
}

describe('cold objects kept compactly', () => {
  it('keeps what only history reaches as its forms alone, hot trees and commits raw; every read and the export stay the same', async () => {
    const repo = await newTestRepo(opened.store, []);
    const commits = await writeHistory(repo);
    const reachable = await fsckAndReachable(repo);
    const reads = await everyRead(repo, commits);
    const before = await describeAll(repo);
    expect(before.every((entry) => entry.rawBytes > 0 && entry.formBytes > 0)).toBe(true);

    const report = await collectGarbage(repo, now);
    const after = await describeAll(repo);
    const hot = await hotTrees(repo);
    for (const entry of after) {
      const hex = oidToHex(entry.oid);
      if (entry.type === 'commit' || (entry.type === 'tree' && hot.has(hex))) expect({ hex, type: entry.type, raw: entry.rawBytes > 0 }).toEqual({ hex, type: entry.type, raw: true });
      else expect({ hex, type: entry.type, raw: entry.rawBytes }).toEqual({ hex, type: entry.type, raw: 0 });
      expect(entry.formBytes).toBeGreaterThan(0);
    }
    // Hot trees keep their size annex, which listings read.
    const annexes = await inReadTx(repo, (tx) => tx.getObjectsWithAnnex([...hot].map((hex) => Buffer.from(hex, 'hex'))));
    expect(annexes.every((object) => object!.annex !== null)).toBe(true);
    const dropped = after.filter((entry) => entry.rawBytes === 0).length;
    expect(report.coldKept.rawDropped).toBe(dropped);
    expect(dropped).toBeGreaterThan(before.length / 2);
    expect(sum(after, (entry) => entry.rawBytes)).toBeLessThan(sum(before, (entry) => entry.rawBytes) / 3);

    expect(await everyRead(repo, commits)).toEqual(reads);
    expect(await fsckAndReachable(repo)).toEqual(reachable);
    // Every hot blob is whole now, or a delta on a whole form (one whose version another hot file
    // shares): a read of a current file is one inflate, at most one delta more.
    expect(report.newestWhole.chains).toBeGreaterThan(0);
    const listed = await expectFormsSound(repo);
    const { blobs } = await hotObjects(repo);
    const chainLength = (hex: string): number => {
      const base = listed.get(hex)!.formBase;
      return base ? 1 + chainLength(oidToHex(base)) : 0;
    };
    expect([...blobs].filter((hex) => chainLength(hex) > 1)).toEqual([]);
    // A second collection finds nothing more to drop.
    expect((await collectGarbage(repo, now)).coldKept.rawDropped).toBe(0);
    expect(await everyRead(repo, commits)).toEqual(reads);
  });

  it("turns a hot file's chain around, newest whole, then sinks it under the versions written since, and starts a new chain at git's depth", async () => {
    const repo = await newTestRepo(opened.store, []);
    const first = await versionsOf(repo, 'grows.ts', 0, 20);
    // As written through the API: each version a delta on the one before.
    expect(await shapes(repo, first)).toEqual(first.map((_, i) => (i === 0 ? [-1, 0] : [i - 1, i])));
    const bodies = await inReadTx(repo, (tx) => tx.getObjects(first));
    let report = await collectGarbage(repo, now);
    expect(report.newestWhole).toEqual({ chains: 1, formsReplaced: 20 });
    // Newest whole, each older version a delta on the one after it.
    expect(await shapes(repo, first)).toEqual(first.map((_, i) => (i === 19 ? [-1, 0] : [i + 1, 19 - i])));
    expect(await inReadTx(repo, (tx) => tx.getObjects(first))).toEqual(bodies);
    await expectFormsSound(repo);

    // Five more versions: the old newest becomes a delta at depth 5, and every version below it sinks by 5.
    const more = await versionsOf(repo, 'grows.ts', 20, 5);
    report = await collectGarbage(repo, now);
    expect(report.newestWhole).toEqual({ chains: 1, formsReplaced: 25 });
    const all = [...first, ...more];
    expect(await shapes(repo, all)).toEqual(all.map((_, i) => (i === 24 ? [-1, 0] : [i + 1, 24 - i])));
    await expectFormsSound(repo);

    // Thirty more would sink the oldest to depth 54: the chain is full, a new one starts at the newest.
    const last = await versionsOf(repo, 'grows.ts', 25, 30);
    report = await collectGarbage(repo, now);
    expect(report.newestWhole).toEqual({ chains: 1, formsReplaced: 30 });
    const every = [...all, ...last];
    expect(await shapes(repo, every)).toEqual(every.map((_, i) => (i === 24 || i === 54 ? [-1, 0] : i < 24 ? [i + 1, 24 - i] : [i + 1, 54 - i])));
    await expectFormsSound(repo);
    expect((await readFile(repo, { branch: 'main', path: 'grows.ts' })).content).toBe(version('grows.ts', 54));
    const clone = await fsckAndReachable(repo);
    expect(clone).toContain(oidToHex(every[0]));
  });

  it('leaves a chain as it is when a writer makes a form on one of its versions while the collection turns it', async () => {
    const watched = interposed(opened.store.async);
    const repo: Repo = { ...(await newTestRepo(opened.store, [])), store: watched.store };
    const versions = await versionsOf(repo, 'grows.ts', 0, 20);
    // The second version: at depth 1 now, at depth 18 once the chain is turned.
    const [member] = await inReadTx(repo, (tx) => tx.getObjects([versions[1]]));
    const other = Buffer.from(`${member!.body.toString()}// a copy made elsewhere\n`);
    const otherOid = hashObject('blob', other);
    const report = await collectGarbage(repo, {
      graceMs: 0,
      onPhase: (phase) => {
        if (phase !== 'newest-whole') return;
        // A form on it lands before the turning write: turned, its depth 2 would be below its base's.
        watched.arm(() =>
          inWriteTx(repo, async (tx) => {
            tx.putObject('blob', other);
            const delta = createDelta(member!.body, other);
            expect(await (tx as WriteTx & PackFormWrites).putDeflatedDelta(otherOid, { base: versions[1], bytes: delta.length, depth: 2 }, deflateSync(delta))).toBe(true);
          }),
        );
      },
    });
    expect(watched.ran()).toBe(true);
    expect(report.newestWhole).toEqual({ chains: 0, formsReplaced: 0 });
    const listed = await expectFormsSound(repo);
    expect(listed.get(oidToHex(otherOid))!.formDepth).toBe(2);
    expect((await inReadTx(repo, (tx) => tx.getObjects([otherOid])))[0]!.body).toEqual(other);
    // The next collection turns it (the copy, unreachable, is gone).
    expect((await collectGarbage(repo, now)).newestWhole.chains).toBe(1);
    await expectFormsSound(repo);
  });

  it('keeps the raw copies of trees a writer makes hot between the hot mark and the write that would drop them', async () => {
    const watched = interposed(opened.store.async);
    const repo: Repo = { ...(await newTestRepo(opened.store, [])), store: watched.store };
    const commits = await writeHistory(repo);
    const old = commits[4];
    const oldRoot = (await inReadTx(repo, (tx) => tx.getCommitInfos([Buffer.from(old, 'hex')])))[0]!.tree;
    const report = await collectGarbage(repo, {
      graceMs: 0,
      onPhase: (phase) => {
        // The first write of the cold step waits for main's working tree to go back to an old commit,
        // whose trees were cold when the collector marked the hot ones.
        if (phase === 'cold') watched.arm(() => restore(repo, { branch: 'main', oid: old, force: true, people: testPeople }));
      },
    });
    expect(watched.ran()).toBe(true);
    expect(report.coldKept.rawDropped).toBeGreaterThan(0);
    const restored = (await inReadTx(repo, (tx) => tx.getWorkingTree('main')))!.tree;
    expect(oidToHex(restored)).toBe(oidToHex(oldRoot));
    const hot = await hotTrees(repo);
    const entries = await inReadTx(repo, (tx) => (tx as Reads).describeStored([...hot].map((hex) => Buffer.from(hex, 'hex'))));
    expect(entries.filter((entry) => entry!.rawBytes === 0).map((entry) => oidToHex(entry!.oid))).toEqual([]);
    expect((await listFiles(repo, { branch: 'main', content: true })).find((file) => file.path === 'src/a.ts')?.content).toBe(version('src/a.ts', 4));
    await fsckAndReachable(repo);
  });

  it('loses nothing a writer writes and commits while the cold step runs', async () => {
    const repo = await newTestRepo(opened.store, []);
    await writeHistory(repo, 16);
    const written: Array<{ path: string; content: string }> = [];
    let writers: Promise<void> | null = null;
    await collectGarbage(repo, {
      graceMs: 0,
      onPhase: (phase) => {
        if (phase !== 'cold') return;
        writers = (async () => {
          for (let i = 0; i < 10; i++) {
            const file = { path: `src/${i % 3}/during.ts`, content: version(`during ${i}`, i) };
            await writeFiles(repo, { branch: 'main', files: [file, { path: 'src/a.ts', content: version('src/a.ts', 40 + i) }] });
            written.push(file);
            if (i % 3 === 2) await commit(repo, { branch: 'main', people: testPeople });
          }
        })();
      },
    });
    await writers;
    const latest = new Map(written.map((file) => [file.path, file.content]));
    for (const [path, content] of latest) expect((await readFile(repo, { branch: 'main', path })).content).toBe(content);
    expect((await readFile(repo, { branch: 'main', path: 'src/a.ts' })).content).toBe(version('src/a.ts', 49));
    await fsckAndReachable(repo);
    await commit(repo, { branch: 'main', people: testPeople });
    await cache.idle();
    await collectGarbage(repo, now);
    await expectOnlyReachable(repo);
    for (const [path, content] of latest) expect((await readFile(repo, { branch: 'main', path })).content).toBe(content);
  });
});
