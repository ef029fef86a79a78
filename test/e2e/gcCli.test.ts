/**
 * `treehouse gc` in a process of its own beside a running server, as an operator runs it: while an
 * API client writes, commits and throws away branches and a loop of `git clone`s reads, repeated
 * collections lose nothing acknowledged and every clone is `git fsck --strict` clean; and a second
 * collection of a project started while one is under way is refused.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { git, gitAsync, gitAsyncOk, scratchDir } from '../support/git.js';
import { startGitHttpBackend } from '../support/httpBackend.js';
import { repoRoot, startServerProcess, type ServerProcess } from '../support/process.js';

const work = scratchDir('treehouse-gc-cli-');
const servers: ServerProcess[] = [];
afterAll(() => {
  for (const server of servers) server.child.kill('SIGKILL');
  work.remove();
});

interface CliRun {
  /** Resolves with the first match of `pattern` in stdout. */
  waitFor(pattern: RegExp): Promise<void>;
  done: Promise<{ code: number; stdout: string; stderr: string }>;
  kill(signal: NodeJS.Signals): void;
}

function cli(args: string[], dataDir: string): CliRun {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'cli.ts'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, TREEHOUSE_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
    for (const waiter of waiters.splice(0)) {
      if (waiter.pattern.test(stdout)) waiter.resolve();
      else waiters.push(waiter);
    }
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr })));
  return {
    waitFor: (pattern) =>
      new Promise<void>((resolve, reject) => {
        if (pattern.test(stdout)) return resolve();
        waiters.push({ pattern, resolve });
        void done.then(() => reject(new Error(`no ${pattern} in:\n${stdout}\n${stderr}`)));
      }),
    done,
    kill: (signal) => child.kill(signal),
  };
}

async function startServer(name: string, env: Record<string, string> = {}): Promise<{ server: ServerProcess; dataDir: string; call: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>; cloneUrl: (id: string) => string }> {
  const dataDir = join(work.path, name);
  const server = await startServerProcess({ TREEHOUSE_DATA_DIR: dataDir, TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_GC_NEW_OBJECTS: '0', TREEHOUSE_GC_INTERVAL_SECONDS: '0', ...env });
  servers.push(server);
  const key = (await server.waitFor(/^API key for team default: (th_\S+)$/m))[1];
  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: await response.json() };
  };
  return { server, dataDir, call, cloneUrl: (id) => `${server.url.replace('http://', `http://git:${key}@`)}/git/${id}.git` };
}

describe('treehouse gc beside a running server', () => {
  it('loses nothing a writer was told was written, and every clone taken meanwhile is fsck-clean', async () => {
    const { dataDir, call, cloneUrl } = await startServer('concurrent');
    const created = await call('POST', '/projects', { title: 'Collected while used', source: { kind: 'files', files: Array.from({ length: 20 }, (_, i) => ({ path: `seed/${i}.txt`, content: `seed ${i}\n` })) } });
    expect(created.status).toBe(201);
    const id = created.body.project.id as string;
    const base = `/projects/${id}`;

    // The writer: overwrites files, commits every few writes, and makes branches it throws away.
    const latest = new Map<string, string>();
    const commits: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        const path = `work/${n % 7}.txt`;
        const content = `write ${n}\n`;
        const written = await call('POST', `${base}/files/batch`, { files: [{ path, content }] });
        if (written.status !== 200) throw new Error(`write answered ${written.status}: ${JSON.stringify(written.body)}`);
        latest.set(path, content);
        if (n % 4 === 3) {
          const made = await call('POST', `${base}/git/commit`, { message: `after write ${n}` });
          if (made.status !== 201) throw new Error(`commit answered ${made.status}`);
          commits.push(made.body.commit.oid);
        }
        if (n % 9 === 8) {
          const branch = `throwaway-${n}`;
          expect((await call('POST', `${base}/git/branches`, { name: branch })).status).toBe(201);
          expect((await call('POST', `${base}/files/batch`, { branch, files: [{ path: `t/${n}.txt`, content: `thrown away ${n}\n` }] })).status).toBe(200);
          expect((await call('POST', `${base}/git/commit`, { branch, message: 'soon unreachable' })).status).toBe(201);
          expect((await call('DELETE', `${base}/git/branches/${branch}`)).status).toBe(200);
        }
      }
    })();
    // The cloner: clone main, check, again. (Main alone: a clone that wants a branch deleted after
    // it read the refs is refused "not our ref", collection or not, as git's upload-pack does.)
    const clones: string[] = [];
    const cloner = (async () => {
      for (let n = 0; writing; n++) {
        const dir = join(work.path, `clone-${n}`);
        const cloned = await gitAsync(['clone', '-q', '--single-branch', '--branch', 'main', cloneUrl(id), dir]);
        if (cloned.status !== 0) throw new Error(`clone failed: ${cloned.output}`);
        const fsck = await gitAsync(['fsck', '--strict', '--no-dangling'], { cwd: dir });
        if (fsck.status !== 0) throw new Error(`fsck of clone ${n} failed: ${fsck.output}`);
        clones.push(dir);
      }
    })();

    const removed: number[] = [];
    try {
      for (let round = 0; round < 4; round++) {
        const run = await cli(['gc', '--project', id, '--grace', '0'], dataDir).done;
        expect(run.code, run.stdout + run.stderr).toBe(0);
        removed.push(Number(run.stdout.match(/removed (\d+) objects/)![1]));
      }
    } finally {
      writing = false;
      await Promise.all([writer, cloner]);
    }
    process.stdout.write(`gc cli: ${latest.size} paths, ${commits.length} commits, ${clones.length} clones, removed ${removed.join(",")}\n`);
    expect(removed.some((count) => count > 0)).toBe(true);
    expect(clones.length).toBeGreaterThanOrEqual(2);
    expect(commits.length).toBeGreaterThanOrEqual(4);

    // Every acknowledged write is there, and every acknowledged commit is in main's history.
    for (const [path, content] of latest) expect((await call('GET', `${base}/files/${path}`)).body.content).toBe(content);
    const final = join(work.path, 'final');
    expect((await gitAsync(['clone', '-q', cloneUrl(id), final])).status).toBe(0);
    git(['fsck', '--strict', '--no-dangling'], { cwd: final });
    const history = new Set(git(['rev-list', 'HEAD'], { cwd: final }).split('\n').filter(Boolean));
    for (const oid of commits) expect(history.has(oid)).toBe(true);
    // What the last commit held is what main's files say, where no write came after it.
    const last = await call('GET', `${base}/git/commits/${commits[commits.length - 1]}`);
    expect(last.status).toBe(200);
  }, 180_000);

  it('keeps every commit of a seeded history, those stored as their pack entries alone and deltas on other commits too', async () => {
    // Commits with long, alike messages: git's repack keeps many of them as deltas on one another,
    // and a seed keeps each commit as its pack entry alone (src/store/heldForms.ts).
    const upstream = join(work.path, 'upstream', 'alike.git');
    git(['init', '-q', '--bare', '--initial-branch=main', upstream]);
    const preamble = Array.from({ length: 40 }, (_, line) => `Line ${line} of the release checklist every commit of this project repeats.`).join('\n');
    let stream = '';
    for (let i = 0; i < 300; i++) {
      const content = `version ${i}\n`;
      const message = `Release step ${i}\n\n${preamble}\nStep ${i} done.\n`;
      stream += `commit refs/heads/main\nmark :${i + 1}\ncommitter Seeder <seed@example.com> ${1_700_000_000 + i * 60} +0000\n`;
      stream += `data ${Buffer.byteLength(message)}\n${message}\n`;
      if (i > 0) stream += `from :${i}\n`;
      stream += `M 100644 inline file${i % 7}.txt\ndata ${Buffer.byteLength(content)}\n${content}\n`;
    }
    git(['fast-import', '--quiet'], { cwd: upstream, input: stream });
    git(['repack', '-adf', '-q'], { cwd: upstream });
    const idx = readdirSync(join(upstream, 'objects', 'pack')).find((name) => name.endsWith('.idx'))!;
    const deltaCommits = git(['verify-pack', '-v', join(upstream, 'objects', 'pack', idx)]).split('\n').filter((line) => /^[0-9a-f]{40} commit .* [0-9a-f]{40}$/.test(line.trim())).length;
    expect(deltaCommits).toBeGreaterThan(50);
    const backend = await startGitHttpBackend(join(work.path, 'upstream'));
    try {
      const { dataDir, call, cloneUrl } = await startServer('seeded', { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' });
      const created = await call('POST', '/projects', { title: 'Seeded', source: { kind: 'git', url: `${backend.url}/alike.git` } });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.project.id as string;
      const run = await cli(['gc', '--project', id, '--grace', '0'], dataDir).done;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const clone = join(work.path, 'seeded-clone');
      await gitAsyncOk(['clone', '-q', '--bare', cloneUrl(id), clone]);
      git(['fsck', '--strict', '--no-dangling'], { cwd: clone });
      const objects = (dir: string) => git(['rev-list', '--objects', 'main'], { cwd: dir }).split('\n').sort();
      expect(objects(clone)).toEqual(objects(upstream));
      const log = await call('GET', `/projects/${id}/git/log?limit=200`);
      expect(log.body.commits.map((commit: { message: string }) => commit.message.split('\n')[0])).toEqual(Array.from({ length: 200 }, (_, i) => `Release step ${299 - i}`));
    } finally {
      await backend.close();
    }
  }, 120_000);

  it('refuses a second collection of a project while the first is under way, and an interrupted one ends its collection', async () => {
    const { dataDir, call } = await startServer('twice');
    const created = await call('POST', '/projects', { title: 'Collected twice' });
    const id = created.body.project.id as string;
    expect((await call('POST', `/projects/${id}/files/batch`, { files: [{ path: 'a.txt', content: 'one\n' }] })).status).toBe(200);
    expect((await call('POST', `/projects/${id}/files/batch`, { files: [{ path: 'a.txt', content: 'two\n' }] })).status).toBe(200);
    // The first waits out a grace period longer than this test: it is interrupted below.
    const first = cli(['gc', '--project', id, '--grace', '600'], dataDir);
    await first.waitFor(/waiting out the grace period/);
    const second = await cli(['gc', '--project', id, '--grace', '0'], dataDir).done;
    expect(second.code, second.stdout + second.stderr).toBe(1);
    expect(second.stderr).toMatch(/garbage collection of this project is under way/);
    first.kill('SIGTERM');
    const interrupted = await first.done;
    expect(interrupted.code).toBe(1);
    expect(interrupted.stderr).toMatch(/interrupted; the collections under way were ended/);
    // Ended, not left to go silent: the next collection runs at once.
    const third = await cli(['gc', '--project', id, '--grace', '0'], dataDir).done;
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect(third.stdout).toMatch(new RegExp(`${id} \\(collected-twice\\): removed [1-9]\\d* objects`));
    // The command line refuses what it does not understand.
    const bad = await cli(['gc', '--project', id, '--grace', 'soon'], dataDir).done;
    expect(bad.code).toBe(2);
    const unknown = await cli(['gc', '--project', 'prj_nope'], dataDir).done;
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no project prj_nope/);
  }, 120_000);
});
