/** What the garbage collection tests share: writes that make garbage, and looks at what is stored. */
import { join } from 'node:path';
import { expect } from 'vitest';
import { oidToHex, type Oid } from '../../src/git/oid.js';
import { commit } from '../../src/repo/commit.js';
import { inReadTx, type Repo } from '../../src/repo/repo.js';
import { exportToBareRepo } from '../../src/repo/wire/exportToBareRepo.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import type { CollectionReads, ProjectReads } from '../../src/store/asyncTypes.js';
import { git, initBareRepo, scratchDir } from './git.js';
import { testPeople } from './store.js';

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

/** Asserts the project keeps exactly what its refs reach (its working trees being committed). */
export async function expectOnlyReachable(repo: Repo): Promise<void> {
  expect(await storedHexes(repo)).toEqual(await fsckAndReachable(repo));
}
