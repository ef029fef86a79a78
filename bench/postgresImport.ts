/**
 * Where an import's time goes on each backend (issue 15: "import of 100k files ≤ 20 s"): the repo
 * layer's import (initProject, writeFiles in batches of 10,000 files as the HTTP API takes them,
 * commit), on LMDB and on a durable PostgreSQL in one run, each step timed with the CPU this
 * process spent and, for PostgreSQL, the CPU its server processes spent (read from /proc: the
 * postmaster's children), so a step's time can be split into node work, database work and waiting.
 *
 *   npx tsx bench/postgresImport.ts [--files=10000] [--reps=2] [--backends=lmdb,postgres]
 */
import { readdirSync, readFileSync } from 'node:fs';
import postgres from 'postgres';
import { SourceTree } from '../fixtures/sourceTree.js';
import { commit } from '../src/repo/commit.js';
import { initProject } from '../src/repo/initProject.js';
import { DEFAULT_REPO_LIMITS, MAIN_BRANCH, type Repo } from '../src/repo/repo.js';
import { writeFiles, type FileWrite } from '../src/repo/writeFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import type { AsyncStore } from '../src/store/asyncTypes.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { PostgresStore } from '../src/store/postgres/store.js';
import { scratchDir } from '../test/support/git.js';
import { freshDatabase, launchPostgres } from '../test/support/postgres.js';

const BATCH_FILES = 10_000;
const PEOPLE: CommitAuthors = {
  author: { name: 'Bench', email: 'bench@treehouse.invalid' },
  committer: { name: 'Bench', email: 'bench@treehouse.invalid' },
};

function option(name: string): string | undefined {
  return process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** CPU seconds (user + system) of the processes whose parent is `parent`, and of `parent` itself. */
function childrenCpuSeconds(parent: number): number {
  const ticks = 100;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    if (ppid !== parent && Number(entry) !== parent) continue;
    total += (Number(fields[11]) + Number(fields[12])) / ticks;
  }
  return total;
}

interface Step {
  step: string;
  wallMs: number;
  nodeCpuMs: number;
  dbCpuMs: number;
}

async function timed(steps: Step[], step: string, postmaster: number | null, action: () => Promise<unknown>): Promise<void> {
  const db0 = postmaster === null ? 0 : childrenCpuSeconds(postmaster);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await action();
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  const db1 = postmaster === null ? 0 : childrenCpuSeconds(postmaster);
  steps.push({ step, wallMs: Math.round(wallMs), nodeCpuMs: Math.round((cpu.user + cpu.system) / 1000), dbCpuMs: Math.round((db1 - db0) * 1000) });
}

async function importOnce(store: AsyncStore, project: number, batches: FileWrite[][], postmaster: number | null): Promise<Step[]> {
  const repo: Repo = { store, project, limits: { ...DEFAULT_REPO_LIMITS } };
  const steps: Step[] = [];
  await timed(steps, 'init', postmaster, () => initProject(repo, { files: [], people: PEOPLE }));
  for (const [index, files] of batches.entries()) await timed(steps, `batch ${index + 1}`, postmaster, () => writeFiles(repo, { branch: MAIN_BRANCH, files }));
  await timed(steps, 'commit', postmaster, () => commit(repo, { branch: MAIN_BRANCH, message: 'Import', people: PEOPLE }));
  const total = steps.reduce((sum, s) => ({ step: 'total', wallMs: sum.wallMs + s.wallMs, nodeCpuMs: sum.nodeCpuMs + s.nodeCpuMs, dbCpuMs: sum.dbCpuMs + s.dbCpuMs }), { step: 'total', wallMs: 0, nodeCpuMs: 0, dbCpuMs: 0 });
  steps.push(total);
  return steps;
}

async function main(): Promise<void> {
  const files = Number(option('files') ?? 10_000);
  const reps = Number(option('reps') ?? 2);
  const backends = (option('backends') ?? 'lmdb,postgres').split(',');
  const tree = new SourceTree({ files });
  const batches: FileWrite[][] = [];
  for (let at = 0; at < files; at += BATCH_FILES) {
    const batch: FileWrite[] = [];
    for (let i = at; i < Math.min(files, at + BATCH_FILES); i++) batch.push({ path: tree.paths[i], content: tree.content(i).toString('utf8') });
    batches.push(batch);
  }
  const cluster = await launchPostgres({ durable: true });
  const database = await freshDatabase('import_bench', cluster);
  const pg = await PostgresStore.open({ url: database.url });
  const probe = postgres(database.url, { max: 1, onnotice: () => undefined, fetch_types: false });
  const [{ pid }] = await probe<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const postmaster = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  const lmdbDir = scratchDir('treehouse-import-bench-');
  const lmdb = new LmdbStore({ path: lmdbDir.path });
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const backend of backends) {
        const steps = backend === 'lmdb' ? await importOnce(lmdb.async, 100 + rep, batches, null) : await importOnce(pg, 100 + rep, batches, postmaster);
        const total = steps[steps.length - 1];
        console.log(`${backend} rep ${rep + 1}: ${files} files in ${total.wallMs} ms (node CPU ${total.nodeCpuMs} ms, database CPU ${total.dbCpuMs} ms)`);
        if (option('steps') !== undefined || rep === reps - 1) console.table(steps);
      }
    }
  } finally {
    await probe.end();
    await pg.close();
    await lmdb.close();
    lmdbDir.remove();
    await database.drop();
    await cluster.stop();
  }
}

await main();
