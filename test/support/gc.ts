/** What the garbage collection tests share: writes that make garbage, and looks at what is stored. */
import { join } from 'node:path';
import { expect } from 'vitest';
import { oidToHex, type Oid } from '../../src/git/oid.js';
import { commit } from '../../src/repo/commit.js';
import { inReadTx, type Repo } from '../../src/repo/repo.js';
import { exportToBareRepo } from '../../src/repo/wire/exportToBareRepo.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import type { AsyncStore, CollectionReads, PackFormReads, PackFormWrites, ProjectReads, ProjectWrites } from '../../src/store/asyncTypes.js';
import type { ListedEntry, StoredEntry } from '../../src/store/types.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { git, initBareRepo, scratchDir } from './git.js';
import { freshDatabase } from './postgres.js';
import { openTestStore, testPeople } from './store.js';

export async function writeAndCommit(repo: Repo, files: Record<string, string>, branch = 'main'): Promise<string> {
  await writeFiles(repo, { branch, files: Object.entries(files).map(([path, content]) => ({ path, content })) });
  return (await commit(repo, { branch, people: testPeople })).oid;
}

/** Every id the project keeps anything under, as hex, sorted. */
export async function storedHexes(repo: Repo): Promise<string[]> {
  const out: string[] = [];
  for (let after: Oid | null = null; ; ) {
    const page = await inReadTx(repo, (tx) => (tx as ProjectReads & CollectionReads).listStored(after, 1000));
    out.push(...page.map((entry) => oidToHex(entry.oid)));
    if (page.length < 1000) return out.sort();
    after = page[page.length - 1].oid;
  }
}

/**
 * Exports the project's refs and what they reach into a bare repository, which `git fsck --strict`
 * must find whole; returns what git lists as reachable from every ref (`rev-list --objects --all`),
 * sorted. The export reads every object it writes, so a missing one fails it.
 */
export async function fsckAndReachable(repo: Repo): Promise<string[]> {
  const dir = scratchDir('treehouse-gc-export-');
  try {
    const bare = join(dir.path, 'bare.git');
    initBareRepo(bare);
    await exportToBareRepo(repo, bare);
    git(['fsck', '--strict', '--no-dangling'], { cwd: bare });
    return git(['rev-list', '--objects', '--all'], { cwd: bare })
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(0, 40))
      .sort();
  } finally {
    dir.remove();
  }
}

/**
 * Asserts every pack-ready form of the project is sound: a delta's base is stored with a form, the
 * delta's recorded depth is above its base's (so chains end, at a whole form, no deeper than
 * recorded; a form rewritten whole by a collection leaves the forms on it recorded deeper than they
 * are), and none is deeper than git's pack.depth (50). Returns the listing by id (hex).
 */
export async function expectFormsSound(repo: Repo): Promise<Map<string, ListedEntry>> {
  const listed = new Map<string, ListedEntry>();
  for (let after: Oid | null = null; ; ) {
    const page: ListedEntry[] = await inReadTx(repo, (tx) => (tx as ProjectReads & CollectionReads).listStored(after, 1000));
    for (const entry of page) listed.set(oidToHex(entry.oid), entry);
    if (page.length < 1000) break;
    after = page[page.length - 1].oid;
  }
  const unsound: string[] = [];
  for (const [hex, entry] of listed) {
    if (!entry.formBase) continue;
    const base = listed.get(oidToHex(entry.formBase));
    if (!base?.form || entry.formDepth <= base.formDepth || entry.formDepth > 50) unsound.push(`${hex}: depth ${entry.formDepth} on ${oidToHex(entry.formBase)} (${base?.form ? `depth ${base.formDepth}` : 'no form'})`);
  }
  expect(unsound).toEqual([]);
  return listed;
}

/** Asserts the project keeps exactly what its refs reach (its working trees being committed). */
export async function expectOnlyReachable(repo: Repo): Promise<void> {
  expect(await storedHexes(repo)).toEqual(await fsckAndReachable(repo));
}

/**
 * Writes what `from` keeps (every id's raw copy with its annex, its pack-ready form where the
 * backend keeps forms, its commit's object list) with its refs and working trees into project
 * `project` of `to`, as the writers that made it would have: the same state, written fresh (no
 * pages freed by removals).
 */
export async function copyProject(from: Repo, to: AsyncStore, project: number): Promise<void> {
  const entries: StoredEntry[] = [];
  for (let after: Oid | null = null; ; ) {
    const page = await inReadTx(from, (tx) => (tx as ProjectReads & CollectionReads).listStored(after, 1000));
    const described = await inReadTx(from, (tx) => (tx as ProjectReads & CollectionReads).describeStored(page.map((entry) => entry.oid)));
    entries.push(...described.map((entry) => entry!));
    if (page.length < 1000) break;
    after = page[page.length - 1].oid;
  }
  // Bases before the deltas on them.
  entries.sort((a, b) => a.formDepth - b.formDepth);
  for (let start = 0; start < entries.length; start += 500) {
    const chunk = entries.slice(start, start + 500);
    const { objects, forms, lists } = await inReadTx(from, async (tx) => {
      const reads = tx as ProjectReads & Partial<PackFormReads>;
      return {
        objects: await reads.getObjectsWithAnnex(chunk.map((entry) => entry.oid)),
        forms: typeof reads.getDeflated === 'function' ? await reads.getDeflated(chunk.map((entry) => entry.oid)) : chunk.map(() => undefined),
        lists: await Promise.all(chunk.map((entry) => reads.getCommitObjects(entry.oid))),
      };
    });
    await to.write(async (tx) => {
      const p = tx.project(project) as ProjectWrites & PackFormWrites;
      for (const [i, entry] of chunk.entries()) {
        const object = objects[i]!;
        const form = forms[i];
        if (entry.rawBytes === 0 && form) {
          expect(await p.putObjectAsForm(entry.oid, object.type, form.inflatedBytes, { deflated: form.deflated, delta: form.delta })).toBe(true);
          continue;
        }
        p.putObjectWithId(entry.oid, object.type, object.body, object.annex ?? undefined);
        if (form?.delta) expect(await p.putDeflatedDelta(entry.oid, form.delta, form.deflated)).toBe(true);
        else if (form) p.putDeflated(entry.oid, form.deflated);
        if (lists[i]) p.putCommitObjects(entry.oid, lists[i]!);
      }
    });
  }
  const { refs, workingTrees, version } = await inReadTx(from, async (tx) => ({
    refs: await tx.listRefs(''),
    workingTrees: await (tx as ProjectReads & CollectionReads).listWorkingTrees(),
    version: await tx.getVersion(),
  }));
  await to.write(async (tx) => {
    const p = tx.project(project);
    for (const ref of refs) await p.casRef(ref.name, null, ref.oid);
    for (const { branch, state } of workingTrees) p.putWorkingTree(branch, state);
    for (let v = 0; v < version; v++) await p.bumpVersion();
  });
}

/** A backend the collection tests run on: a store of its own, and whether it keeps pack-ready forms. */
export interface GcBackend {
  name: string;
  forms: boolean;
  open(): Promise<{ store: AsyncStore; close: () => Promise<void> }>;
}

export const GC_BACKENDS: readonly GcBackend[] = [
  {
    name: 'LMDB',
    forms: true,
    open: async () => {
      const opened = openTestStore();
      return { store: opened.store.async, close: opened.close };
    },
  },
  {
    name: 'PostgreSQL',
    forms: true,
    open: async () => {
      const database = await freshDatabase('gc');
      const store = await PostgresStore.open({ url: database.url });
      return {
        store,
        close: async () => {
          await store.close();
          await database.drop();
        },
      };
    },
  },
];
