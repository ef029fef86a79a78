/**
 * The child process of test/repo/crash.test.ts: opens an LmdbStore in the directory it is given and
 * writes batches (and every third time a commit) until it is killed. After each write or commit
 * has been awaited, that is acknowledged, it prints one line:
 *   ready
 *   write <token>
 *   commit <token> <oid>
 * Usage: node --import tsx test/support/crashWriter.ts <store directory> <round>
 */
import { commit } from '../../src/repo/commit.js';
import { initProject } from '../../src/repo/initProject.js';
import { DEFAULT_REPO_LIMITS, MAIN_BRANCH, type Repo } from '../../src/repo/repo.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import { branchRef } from '../../src/git/refname.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { CRASH_PROJECT, commitsAfter, crashBatch, crashToken } from './crashBatch.js';
import { testPeople } from './store.js';

async function main(): Promise<void> {
  const [path, roundText] = process.argv.slice(2);
  const round = Number(roundText);
  if (!path || !Number.isSafeInteger(round)) throw new Error('usage: crashWriter.ts <store directory> <round>');
  const store = new LmdbStore({ path });
  const repo: Repo = { store: store.async, project: CRASH_PROJECT, limits: { ...DEFAULT_REPO_LIMITS } };
  const exists = store.read((tx) => tx.project(CRASH_PROJECT).getRef(branchRef(MAIN_BRANCH)) !== undefined);
  if (!exists) await initProject(repo, { files: [], people: testPeople });
  process.stdout.write('ready\n');
  for (let index = 0; ; index++) {
    const token = crashToken(round, index);
    await writeFiles(repo, { branch: MAIN_BRANCH, files: crashBatch(round, index) });
    process.stdout.write(`write ${token}\n`);
    if (commitsAfter(index)) {
      const made = await commit(repo, { branch: MAIN_BRANCH, message: `after ${token}`, people: testPeople });
      process.stdout.write(`commit ${token} ${made.oid}\n`);
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
