/**
 * Checking a received pack (issue 13, item 3): a realistic history (fixtures/history.ts) packed as
 * `git push` would send it (`git pack-objects --revs` of main, after `git repack -adf`), then, in the same run, tinybench
 * times our checkReceivedPack (parse, delta resolution, ids, fsck of every object, .gitmodules and
 * tree-depth checks, history gaps) on one thread beside `git index-pack --strict` of the same pack
 * (each a new process, with its default threads and with --threads=1), and plain `git index-pack`:
 * what the client of a full clone runs on the same objects, so the least a clone can take whatever
 * the server does. Speed is reported, never asserted.
 *
 *   npx tsx bench/ingest.bench.ts [--commits=3000] [--work=DIR] [--iterations=5]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { writeHistoryRepo } from '../fixtures/history.js';
import { checkReceivedPack } from '../src/git/packCheck.js';
import { summariseTask, type Summary } from './measure.js';

const GIT_ENV = isolatedGitEnv({ noAutoGc: true });

function git(args: string[], options: { cwd?: string; input?: string } = {}): Buffer {
  const result = spawnSync('git', args, { cwd: options.cwd, env: GIT_ENV, input: options.input, maxBuffer: 1 << 30 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

const format = (summary: Summary) => `${summary.medianMs.toFixed(0)} ms (${summary.minMs.toFixed(0)}–${summary.maxMs.toFixed(0)}, n=${summary.n})`;

async function main(): Promise<void> {
  const value = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const work = value('work') ?? join(process.cwd(), 'bench', '.work', 'ingest');
  const iterations = Number(value('iterations') ?? 5);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const repo = join(work, 'history.git');
  const history = await writeHistoryRepo(repo, { kind: 'project', commits: Number(value('commits') ?? 3000) });
  // As a client's repository would be after gc, and as bench/history.ts serves it.
  git(['-c', 'pack.threads=1', 'repack', '-adf', '--window=10', '--depth=50', '-q'], { cwd: repo });
  const pack = git(['pack-objects', '--revs', '--stdout', '--delta-base-offset'], { cwd: repo, input: 'main\n' });
  const packFile = join(work, 'push.pack');
  writeFileSync(packFile, pack);
  const nothing = { object: () => undefined, has: () => false };
  let objects = 0;
  const bench = new Bench({ iterations, time: 0, warmupIterations: 1 });
  bench
    .add('ours: checkReceivedPack', () => {
      const result = checkReceivedPack(readFileSync(packFile), {}, nothing);
      if (!result.ok) throw new Error(result.message);
      objects = result.objects.length;
    })
    .add('git index-pack (what a cloning client runs)', () => {
      rmSync(join(work, 'push.idx'), { force: true });
      git(['index-pack', packFile]);
    })
    .add('git index-pack --strict', () => {
      rmSync(join(work, 'push.idx'), { force: true });
      git(['index-pack', '--strict', packFile]);
    })
    .add('git index-pack --strict --threads=1', () => {
      rmSync(join(work, 'push.idx'), { force: true });
      git(['index-pack', '--strict', '--threads=1', packFile]);
    });
  await bench.run();
  console.log(`history: ${history.commits} commits, pack ${(pack.length / 1e6).toFixed(1)} MB, ${objects} objects`);
  for (const task of bench.tasks) console.log(`${task.name.padEnd(48)} ${format(summariseTask(task))}`);
  rmSync(work, { recursive: true, force: true });
}

await main();
