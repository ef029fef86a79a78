/**
 * The workspace API's read verbs on a large tree, each beside the git command that answers the
 * same question, in the same run (issue 16):
 *   - compare of two commits 100 files apart  vs  git diff --histogram -M
 *   - blame of a 2,000-line file with 500 commits of history  vs  git blame --porcelain
 *   - literal search over the whole tree  vs  git grep -n --column -F
 *   - archive (tar.gz and zip)  vs  git archive
 *
 *   npx tsx bench/workspace.ts [--size=100000] [--runs=5] [--work=DIR]
 *
 * The tree is fixtures/sourceTree.ts's (about 3.4 KB of TypeScript per file). Treehouse runs its
 * verbs in this process on a real LmdbStore; git runs as a process on the same commits, exported
 * from the store object by object and packed (`git repack -adq`), so both read the same objects.
 * Each figure is the median of --runs runs; for ours also the longest event-loop stall seen while
 * the verb ran (the verbs work in slices), and for archive the resident memory it added at most.
 * Results go to stdout (a table, then JSON); bench/RESULTS.md is not touched.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isolatedGitEnv } from '../fixtures/gitEnv.js';
import { mulberry32, SourceTree } from '../fixtures/sourceTree.js';
import { openArchive, type ArchiveFormat } from '../src/repo/archive.js';
import { blame } from '../src/repo/blame.js';
import { commit } from '../src/repo/commit.js';
import { compare } from '../src/repo/compare.js';
import { exportToBareRepo } from '../src/repo/wire/exportToBareRepo.js';
import { initProject } from '../src/repo/initProject.js';
import { DEFAULT_REPO_LIMITS, type Repo } from '../src/repo/repo.js';
import { search } from '../src/repo/search.js';
import { writeFiles } from '../src/repo/writeFiles.js';
import type { CommitAuthors } from '../src/repo/writeCommit.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { summarise, type Summary } from './measure.js';

const PEOPLE: CommitAuthors = { author: { name: 'Bench', email: 'bench@treehouse.invalid' }, committer: { name: 'Bench', email: 'bench@treehouse.invalid' } };
const GIT_ENV = isolatedGitEnv({ noAutoGc: true });
const BLAME_PATH = 'bench/blame/target.ts';
const BLAME_LINES = 2_000;
const BLAME_COMMITS = 500;
const CHANGED_FILES = 100;
/** Appears only in the lines the 100-file change inserted ("// Revision 1: …"): search must read every file. */
const NEEDLE = 'Revision 1:';

function argument(name: string, fallback: number): number {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
}

function gitSync(args: string[], cwd: string): string {
  const result = spawnSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (result.status !== 0 && result.status !== 1) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** A git command timed as a process, its output read (and counted) as a caller would. */
async function timeGit(args: string[], cwd: string): Promise<{ ms: number; bytes: number; out: Buffer }> {
  const start = process.hrtime.bigint();
  const child = spawn('git', args, { cwd, env: GIT_ENV });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const status = await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  if (status !== 0 && status !== 1) throw new Error(`git ${args.join(' ')} exited ${status}`);
  const out = Buffer.concat(chunks);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, bytes: out.length, out };
}

interface OursRun {
  ms: number;
  /** Longest event-loop delay while the verb ran. */
  stallMs: number;
  rssAddedBytes: number;
}

/** Runs one of our verbs, timing it and watching the event loop and resident memory meanwhile. */
async function timeOurs(work: () => Promise<unknown>): Promise<OursRun> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  const rssBefore = process.memoryUsage.rss();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  }, 5);
  histogram.enable();
  const start = process.hrtime.bigint();
  await work();
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  histogram.disable();
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
  return { ms, stallMs: histogram.max / 1e6, rssAddedBytes: rssPeak - rssBefore };
}

async function drain(format: ArchiveFormat, repo: Repo, ref: string): Promise<number> {
  let bytes = 0;
  for await (const chunk of (await openArchive(repo, { ref, format })).stream) bytes += (chunk as Buffer).length;
  return bytes;
}

interface ScenarioResult {
  scenario: string;
  ours: Summary;
  oursStallMsMax: number;
  oursRssAddedMax: number;
  git: Summary;
  check: string;
}

async function main(): Promise<void> {
  const files = argument('size', 100_000);
  const runs = argument('runs', 5);
  const workRoot = process.argv.find((arg) => arg.startsWith('--work='))?.slice('--work='.length) ?? join(import.meta.dirname, '.work');
  const dir = join(workRoot, `workspace-${files}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tree = new SourceTree({ files });
  const store = new LmdbStore({ path: join(dir, 'store') });
  const repo: Repo = { store: store.async, project: 1, limits: { ...DEFAULT_REPO_LIMITS, batchFilesMax: files } };
  const log = (message: string) => console.error(`[workspace bench] ${message}`);
  try {
    const setupStart = Date.now();
    await initProject(repo, { files: [], people: PEOPLE });
    await writeFiles(repo, { branch: 'main', files: tree.paths.map((path, index) => ({ path, content: tree.content(index).toString('utf8') })) });
    const base = (await commit(repo, { branch: 'main', message: 'Import', people: PEOPLE })).oid;
    const changed = tree.changeFiles(CHANGED_FILES, 1);
    await writeFiles(repo, { branch: 'main', files: changed.map((file) => ({ path: file.path, content: file.content.toString('utf8') })) });
    const head = (await commit(repo, { branch: 'main', message: '100 files', people: PEOPLE })).oid;

    // A 2,000-line file and 500 commits that each edit a few of its lines (some inserted or removed).
    const rng = mulberry32(0xb1a3e);
    let lines = Array.from({ length: BLAME_LINES }, (_, i) => `export const value${i} = ${Math.floor(rng() * 1e6)}; // line ${i}`);
    let blameHead = head;
    for (let c = 0; c < BLAME_COMMITS; c++) {
      for (let e = 0; e < 3; e++) {
        const at = Math.floor(rng() * lines.length);
        const roll = rng();
        if (roll < 0.15) lines.splice(at, 0, `// inserted in commit ${c}`);
        else if (roll < 0.25 && lines.length > BLAME_LINES - 50) lines.splice(at, 1);
        else lines[at] = `${lines[at].split(' //')[0]} // edited in commit ${c}`;
      }
      await writeFiles(repo, { branch: 'main', files: [{ path: BLAME_PATH, content: `${lines.join('\n')}\n` }] });
      blameHead = (await commit(repo, { branch: 'main', message: `blame edit ${c}`, people: PEOPLE })).oid;
    }
    lines = [];
    log(`store ready in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`);

    const bare = join(dir, 'git.git');
    gitSync(['init', '-q', '--bare', bare], dir);
    await exportToBareRepo(repo, bare);
    gitSync(['repack', '-adq'], bare);
    gitSync(['prune-packed'], bare);
    log(`git repository ready in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`);

    const results: ScenarioResult[] = [];
    const measure = async (scenario: string, ours: () => Promise<unknown>, git: string[], check: (gitOut: Buffer, oursValue: unknown) => string) => {
      const oursRuns: OursRun[] = [];
      const gitRuns: number[] = [];
      let oursValue: unknown;
      let gitOut = Buffer.alloc(0);
      for (let run = 0; run < runs; run++) {
        const g = await timeGit(git, bare);
        gitRuns.push(g.ms);
        gitOut = Buffer.from(g.out);
        oursRuns.push(
          await timeOurs(async () => {
            oursValue = await ours();
          }),
        );
      }
      const result: ScenarioResult = {
        scenario,
        ours: summarise(oursRuns.map((r) => r.ms)),
        oursStallMsMax: Math.max(...oursRuns.map((r) => r.stallMs)),
        oursRssAddedMax: Math.max(...oursRuns.map((r) => r.rssAddedBytes)),
        git: summarise(gitRuns),
        check: check(gitOut, oursValue),
      };
      results.push(result);
      log(`${scenario}: ours ${result.ours.medianMs.toFixed(1)} ms, git ${result.git.medianMs.toFixed(1)} ms (${result.check})`);
    };

    await measure(
      `compare, ${CHANGED_FILES} files apart`,
      () => compare(repo, { base, head, context: 3, patch: true }),
      ['diff', '--histogram', '-M', base, head],
      (out, ours) => `${(ours as { files: unknown[] }).files.length} files; git ${out.toString('utf8').split('\ndiff --git').length} files`,
    );
    await measure(
      `blame, ${BLAME_LINES} lines, ${BLAME_COMMITS} commits`,
      () => blame(repo, { path: BLAME_PATH, ref: blameHead }),
      ['blame', '--porcelain', blameHead, '--', BLAME_PATH],
      (out, ours) => {
        const gitOids = out.toString('utf8').split('\n').filter((line) => /^[0-9a-f]{40} \d+ \d+/.test(line)).map((line) => line.slice(0, 40));
        const ourLines = (ours as { lines: Array<{ oid: string }> }).lines;
        const same = ourLines.length > 0 && ourLines.every((line) => gitOids.includes(line.oid));
        return `${ourLines.length} lines, ${new Set(ourLines.map((l) => l.oid)).size} commits${same ? '' : ', DIFFERS from git'}`;
      },
    );
    await measure(
      'literal search, whole tree',
      () => search(repo, { q: NEEDLE, regex: false, case: true, ref: blameHead, limit: 1000 }),
      ['grep', '-n', '--column', '-F', NEEDLE, blameHead],
      (out, ours) => `${(ours as { matches: unknown[] }).matches.length} matches; git ${out.toString('utf8').split('\n').filter(Boolean).length}`,
    );
    await measure(
      'archive, tar.gz',
      () => drain('tar.gz', repo, blameHead),
      ['archive', '--format=tar.gz', blameHead],
      (out, ours) => `${((ours as number) / 1e6).toFixed(1)} MB; git ${(out.length / 1e6).toFixed(1)} MB`,
    );
    await measure(
      'archive, zip',
      () => drain('zip', repo, blameHead),
      ['archive', '--format=zip', blameHead],
      (out, ours) => `${((ours as number) / 1e6).toFixed(1)} MB; git ${(out.length / 1e6).toFixed(1)} MB`,
    );

    const rows = results.map(
      (r) =>
        `| ${r.scenario} | ${r.ours.medianMs.toFixed(1)} ms | ${r.git.medianMs.toFixed(1)} ms | ${(r.ours.medianMs / r.git.medianMs).toFixed(2)} | ${r.oursStallMsMax.toFixed(1)} ms | ${(r.oursRssAddedMax / 1e6).toFixed(0)} MB | ${r.check} |`,
    );
    console.log(`Workspace benchmark: ${files.toLocaleString('en')} files, median of ${runs} runs\n`);
    console.log('| scenario | Treehouse | git | ratio | longest event-loop stall | RSS added (max) | check |');
    console.log('|---|---:|---:|---:|---:|---:|---|');
    for (const row of rows) console.log(row);
    console.log(`\n${JSON.stringify(results)}`);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
