/**
 * GET git/blame/{path} against `git blame --line-porcelain`: random histories with branches,
 * merges (some editing files themselves), renames git detects (with and without edits) and moves
 * it does not, built with git and pushed; for every file at every branch tip, each line's commit,
 * original line and original path must be git's. Also a working tree's uncommitted lines (the
 * all-zero commit, as `git blame <path>` in a checkout), and hostile parameters.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, scratchDir } from '../support/git.js';
import { unquoteGitPath } from '../support/gitDiff.js';
import { rawRequest } from '../support/rawHttp.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject, type HistoryFile } from '../support/history.js';
import { randomHistory, type RandomHistory } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-blame-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

interface ExpectedLine {
  line: number;
  oid: string;
  original_line: number;
  original_path: string;
}

/** Parses `git blame --line-porcelain` (every line carries its full header). */
function gitBlame(dir: string, args: string[]): ExpectedLine[] {
  const out = git(['blame', '--line-porcelain', ...args], { cwd: dir });
  const lines: ExpectedLine[] = [];
  let current: ExpectedLine | null = null;
  for (const text of out.split('\n')) {
    const header = /^([0-9a-f]{40}) (\d+) (\d+)(?: \d+)?$/.exec(text);
    if (header) {
      current = { line: Number(header[3]), oid: header[1], original_line: Number(header[2]), original_path: '' };
      lines.push(current);
    } else if (current && text.startsWith('filename ')) {
      current.original_path = unquoteGitPath(text.slice('filename '.length));
    }
  }
  return lines;
}

async function apiBlame(project: ClonedProject, path: string, ref?: string) {
  const query = ref === undefined ? '' : `?${new URLSearchParams({ ref })}`;
  return server.call('GET', `${project.base}/git/blame/${path.split('/').map(encodeURIComponent).join('/')}${query}`);
}

describe('GET git/blame against git blame --line-porcelain', () => {
  for (const seed of [21, 22, 23]) {
    describe(`history ${seed}`, () => {
      let project: ClonedProject;
      let history: RandomHistory;
      const tips = new Map<string, string>();
      beforeAll(async () => {
        project = await createClonedProject(server, join(work.path, `h${seed}`));
        history = randomHistory(seed, { commits: 60, rootParent: project.root, startTime: 1_700_000_000 });
        const oids = fastImport(project.dir, history.commits);
        for (const [branch, index] of history.branches) tips.set(branch, oids[index]);
        await pushBranches(project.dir, Object.fromEntries(tips));
      });

      it("gives every line git's commit, original line and original path", async () => {
        let lines = 0;
        let renamedLines = 0;
        const commits = new Set<string>();
        for (const [branch, tip] of tips) {
          const files = git(['ls-tree', '-r', '-z', '--name-only', tip], { cwd: project.dir }).split('\0').filter(Boolean);
          for (const path of files) {
            const expected = gitBlame(project.dir, [tip, '--', path]);
            const response = await apiBlame(project, path, branch);
            expect(response.status, JSON.stringify(response.body)).toBe(200);
            expect(response.body.lines, `${branch}:${path}`).toEqual(expected);
            for (const line of expected) {
              lines++;
              if (line.original_path !== path) renamedLines++;
              commits.add(line.oid);
              expect(response.body.commits[line.oid]).toMatchObject({ author: { name: 'Author', email: 'author@example.com' } });
            }
          }
        }
        // The comparison means something only if lines come from many commits, some through renames.
        expect(lines).toBeGreaterThan(100);
        expect(commits.size).toBeGreaterThan(10);
        expect(renamedLines).toBeGreaterThan(0);
      });
    });
  }
});

describe('GET git/blame of a working tree', () => {
  it("gives uncommitted lines the all-zero commit, as git blame in a checkout does", async () => {
    const project = await createClonedProject(server, join(work.path, 'worktree'));
    const text = (lines: string[]): HistoryFile => ({ mode: '100644', content: Buffer.from(lines.map((l) => `${l}\n`).join('')) });
    const [first, second] = fastImport(project.dir, [
      { files: new Map([['src/a.txt', text(['one', 'two', 'three', 'four'])]]), parents: [project.root], time: 1_700_000_000 },
      { files: new Map([['src/a.txt', text(['one', 'TWO', 'three', 'four', 'five'])]]), parents: [0], time: 1_700_000_100 },
    ]);
    await pushBranches(project.dir, { main: second });
    git(['reset', '-q', '--hard', second], { cwd: project.dir });
    const changed = 'zero\none\nTWO\nthree\n4\nfive\n';
    expect((await server.call('POST', `${project.base}/files/batch`, { files: [{ path: 'lib/b.txt', content: changed }], deletes: ['src/a.txt'] })).status).toBe(200);
    mkdirSync(join(project.dir, 'lib'));
    git(['mv', 'src/a.txt', 'lib/b.txt'], { cwd: project.dir });
    writeFileSync(join(project.dir, 'lib/b.txt'), changed);
    git(['add', '-A'], { cwd: project.dir });

    const expected = gitBlame(project.dir, ['--', 'lib/b.txt']);
    const response = await apiBlame(project, 'lib/b.txt', 'worktree:main');
    expect(response.status).toBe(200);
    expect(response.body.lines).toEqual(expected);
    expect(expected.map((line) => line.oid.slice(0, 7))).toEqual(['0000000', first.slice(0, 7), second.slice(0, 7), first.slice(0, 7), '0000000', second.slice(0, 7)]);
    expect(response.body.commits['0000000000000000000000000000000000000000'].author.name).toBe('Not Committed Yet');
    // Committed refs do not see the working tree.
    expect((await apiBlame(project, 'lib/b.txt')).status).toBe(404);
    const committed = await apiBlame(project, 'src/a.txt', second.slice(0, 10));
    expect(committed.body.lines).toEqual(gitBlame(project.dir, [second, '--', 'src/a.txt']));
    expect(committed.body.commits[second]).toMatchObject({ message: 'commit 2', committed_at: '2023-11-14T22:15:00.000Z' });
  });
});

describe('GET git/blame hostile input', () => {
  let project: ClonedProject;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'hostile'));
    const [head] = fastImport(project.dir, [{ files: new Map([['dir/file.txt', { mode: '100644', content: Buffer.from('x\n') }]]), parents: [project.root], time: 1_700_000_000 }]);
    await pushBranches(project.dir, { main: head });
  });

  it.each([
    ['dir/file.txt', 'nope', 404],
    ['dir/file.txt', 'worktree:nope', 404],
    ['dir/file.txt', '0000000', 404],
    ['dir', 'main', 404],
    ['missing.txt', 'main', 404],
    ['dir/file.txt/deeper', 'main', 404],
    ['dir//file.txt', 'main', 400],
    ['.git/config', 'main', 400],
    ['dir/file.txt', 'x'.repeat(301), 400],
  ])('answers %s at %s with %i', async (path, ref, status) => {
    const response = await server.call('GET', `${project.base}/git/blame/${path}?${new URLSearchParams({ ref })}`);
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(response.body.error.code).toBe(status === 404 ? 'not_found' : 'invalid_request');
  });

  it('refuses a path that climbs out with "..", however it is encoded', async () => {
    for (const path of ['dir/%2e%2e/dir/file.txt', 'dir/../dir/file.txt', '..%2fdir/file.txt']) {
      const response = await rawRequest(server.url, `GET ${project.base}/git/blame/${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`);
      expect(response.status, path).toBe(400);
      expect(JSON.parse(response.body).error.code).toBe('invalid_request');
    }
  });

  it('blames an empty file as no lines', async () => {
    const [head] = fastImport(project.dir, [{ files: new Map([['empty', { mode: '100644', content: Buffer.alloc(0) }]]), parents: [project.root], time: 1_700_000_500 }]);
    await pushBranches(project.dir, { empty: head });
    const response = await apiBlame(project, 'empty', 'empty');
    expect(response.body).toEqual({ path: 'empty', ref: 'empty', lines: [], commits: {} });
  });
});
