/**
 * GET git/log with `path` against `git log --format=%H <branch> -- <path>`: random histories with
 * branches, merges (some that change files themselves) and renames are built with git and pushed;
 * for every branch and every path that ever existed (files and directories), the paged API answer
 * must be git's list, in git's order.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, scratchDir } from '../support/git.js';
import { createClonedProject, fastImport, pushBranches, type ClonedProject } from '../support/history.js';
import { randomHistory, type RandomHistory } from '../support/randomHistory.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
const work = scratchDir('treehouse-logpath-');
beforeAll(async () => {
  // Hundreds of calls in a row: the per-key rate limit would answer some of them 429.
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

async function apiLog(project: ClonedProject, branch: string, path: string, limit: number): Promise<string[]> {
  const oids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const query = new URLSearchParams({ branch, path, limit: String(limit) });
    if (cursor) query.set('cursor', cursor);
    const response = await server.call('GET', `${project.base}/git/log?${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    oids.push(...response.body.commits.map((commit: { oid: string }) => commit.oid));
    cursor = response.body.next_cursor;
    if (!cursor) return oids;
  }
  throw new Error('too many pages');
}

describe('GET git/log?path= against git log -- <path>', () => {
  for (const seed of [11, 12]) {
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

      it('lists exactly the commits git lists, for every path and branch', async () => {
        let compared = 0;
        let nonEmpty = 0;
        let mergesShown = 0;
        let simplified = 0;
        for (const [branch, tip] of tips) {
          for (const path of [...history.paths, 'never-existed']) {
            const run = (extra: string[]) => git(['--literal-pathspecs', 'log', '--format=%H %P', ...extra, tip, '--', path], { cwd: project.dir }).split('\n').filter(Boolean);
            const shown = run([]);
            const expected = shown.map((line) => line.split(' ')[0]);
            const ours = await apiLog(project, branch, path, 7);
            expect(ours, `${branch} -- ${path}`).toEqual(expected);
            compared++;
            if (expected.length > 0) nonEmpty++;
            mergesShown += shown.filter((line) => line.split(' ').length > 2).length;
            if (branch === 'main' && run(['--full-history']).length !== shown.length) simplified++;
          }
        }
        expect(nonEmpty).toBeGreaterThan(compared / 2);
        // The comparison only means something if the histories make git show merges and drop
        // side branches that a full history would list.
        expect(mergesShown).toBeGreaterThan(0);
        expect(simplified).toBeGreaterThan(0);
      });
    });
  }
});

describe('GET git/log?path= parameters', () => {
  let project: ClonedProject;
  beforeAll(async () => {
    project = await createClonedProject(server, join(work.path, 'params'));
  });

  it.each([['../etc'], ['/abs'], ['a//b'], ['.git'], ['x'.repeat(5000)]])('refuses path #%# with 400', async (path) => {
    const response = await server.call('GET', `${project.base}/git/log?${new URLSearchParams({ path })}`);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
  });

  it('answers an unknown branch with 404 and a foreign cursor with 400', async () => {
    expect((await server.call('GET', `${project.base}/git/log?path=a&branch=nope`)).status).toBe(404);
    expect((await server.call('GET', `${project.base}/git/log?path=a&cursor=${Buffer.from('zz:1').toString('base64url')}`)).status).toBe(400);
  });

  it('takes a directory with a trailing slash, and gives an empty page for a path never there', async () => {
    const response = await server.call('GET', `${project.base}/git/log?path=nothing/here/`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ commits: [], next_cursor: null });
  });
});
