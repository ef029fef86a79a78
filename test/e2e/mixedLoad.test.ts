/**
 * Everything at once on one project, as a busy workspace sees it: API clients writing and
 * committing on main, `git push`es to a branch (packs large enough for the pack checker's worker
 * thread, which asks this thread about the store while it checks), merges of that branch into
 * main, branches created and deleted, bare clones and fetches into a kept clone, log reads, and
 * garbage collections running under it all (a second of grace, every 20 new versions: a writer's commit makes 3-4).
 *
 * Nothing may fail that the contract does not allow to, and nothing acknowledged may be lost: no
 * 5xx, no git command refused, every commit answered 201 (API commits and merges) reachable from
 * main, the pushed branch at the last commit pushed, and clones `fsck --strict` clean. A push under
 * such a load once crashed the pack check (src/service/syncQuestions.ts).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceTree, writeFilesToDirectory } from '../../fixtures/sourceTree.js';
import { strictClone } from '../support/clones.js';
import { gitAsyncOk, scratchDir } from '../support/git.js';
import { remoteUrl } from '../support/history.js';
import { startTestServer, type TestServer } from '../support/server.js';

const DURATION_MS = Number(process.env.TREEHOUSE_MIXED_LOAD_MS ?? 8_000);
const WRITERS = 3;
const PUSHED_FILES = 30;

let server: TestServer;
const work = scratchDir('treehouse-mixed-');
beforeAll(async () => {
  server = await startTestServer({ env: { TREEHOUSE_RATE_PER_SECOND: '0', TREEHOUSE_GC_GRACE_SECONDS: '1', TREEHOUSE_GC_NEW_OBJECTS: '20', TREEHOUSE_GC_INTERVAL_SECONDS: '0' } });
});
afterAll(async () => {
  await server.close();
  work.remove();
});

describe('a mixed load on one project', () => {
  it('answers every request as the contract allows, loses no acknowledged commit, and serves fsck-clean clones throughout', async () => {
    const tree = new SourceTree({ files: 1_500 });
    const id = (await server.call('POST', '/api/v1/projects', { title: 'Mixed' })).body.project.id as string;
    const files = [...tree.files()].map((file) => ({ path: file.path, content: file.content.toString('utf8') }));
    expect((await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files })).status).toBe(200);
    expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'Seed' })).status).toBe(201);
    const remote = remoteUrl(server, id);
    const pushClone = join(work.path, 'push');
    await gitAsyncOk(['clone', '-q', remote, pushClone]);
    await gitAsyncOk(['checkout', '-q', '-b', 'pushes'], { cwd: pushClone });
    const fetchClone = join(work.path, 'fetch');
    await gitAsyncOk(['clone', '-q', '--bare', remote, fetchClone]);

    const failures: string[] = [];
    const acknowledged: string[] = [];
    const counts = { writes: 0, pushes: 0, merges: 0, branches: 0, clones: 0, fetches: 0, logs: 0 };
    let lastPushed = '';
    const deadline = Date.now() + DURATION_MS;
    const expectStatus = (what: string, response: { status: number; body: any }, allowed: number[], codes: string[] = []) => {
      const allowedCode = response.status === 409 && codes.includes(response.body?.error?.code);
      if (!allowed.includes(response.status) && !allowedCode) failures.push(`${what}: ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
    };
    const loop = async (name: string, body: (round: number) => Promise<void>) => {
      for (let round = 0; Date.now() < deadline; round++) {
        try {
          await body(round);
        } catch (error) {
          failures.push(`${name}: ${(error as Error).message.slice(0, 500)}`);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, writer) =>
      loop(`writer ${writer}`, async (round) => {
        const written = await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: `load/w${writer}/f${round % 20}.txt`, content: `writer ${writer} round ${round}\n` }] });
        expectStatus('write', written, [200]);
        const committed = await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: `writer ${writer} round ${round}` });
        // 200: another writer's commit took this write along.
        expectStatus('commit', committed, [200, 201]);
        if (committed.status === 201) acknowledged.push(committed.body.commit.oid);
        counts.writes++;
      }),
    );
    const pusher = loop('push', async (round) => {
      writeFilesToDirectory(pushClone, tree.changeFiles(PUSHED_FILES, 700_000 + round));
      await gitAsyncOk(['commit', '-qam', `push ${round}`], { cwd: pushClone });
      await gitAsyncOk(['push', '-q', 'origin', 'pushes'], { cwd: pushClone });
      lastPushed = (await gitAsyncOk(['rev-parse', 'HEAD'], { cwd: pushClone })).trim();
      counts.pushes++;
    });
    const merger = loop('merge', async () => {
      const merged = await server.call('POST', `/api/v1/projects/${id}/git/merge`, { source: 'pushes', target: 'main' });
      // 404 until the first push; 409 while a writer's file is not committed yet.
      expectStatus('merge', merged, [200, 201, 404], ['uncommitted_changes', 'ref_changed']);
      if (merged.status === 201) acknowledged.push(merged.body.merge.oid);
      counts.merges++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    });
    const brancher = loop('branches', async (round) => {
      expectStatus('branch create', await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: `tmp-${round}`, from: 'main' }), [201]);
      expectStatus('branch delete', await server.call('DELETE', `/api/v1/projects/${id}/git/branches/tmp-${round}`), [200]);
      counts.branches++;
    });
    const cloner = loop('clone', async (round) => {
      await strictClone(remote, join(work.path, `clone-${round}`), work.path);
      counts.clones++;
    });
    const fetcher = loop('fetch', async () => {
      await gitAsyncOk(['fetch', '-q', 'origin', '+refs/heads/*:refs/heads/*'], { cwd: fetchClone });
      await gitAsyncOk(['fsck', '--strict', '--no-progress'], { cwd: fetchClone });
      counts.fetches++;
    });
    const reader = loop('log', async () => {
      expectStatus('log', await server.call('GET', `/api/v1/projects/${id}/git/log?limit=50`), [200]);
      counts.logs++;
    });
    await Promise.all([...writers, pusher, merger, brancher, cloner, fetcher, reader]);

    expect(failures).toEqual([]);
    for (const [kind, count] of Object.entries(counts)) expect(count, kind).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(WRITERS);
    // At least one collection ran under the load, and removed something.
    await server.th.gc.idle();
    expect(server.th.gc.runs.length).toBeGreaterThan(0);

    const final = join(work.path, 'final');
    await strictClone(remote, final, work.path);
    const onMain = new Set((await gitAsyncOk(['rev-list', 'main'], { cwd: final })).split('\n').filter(Boolean));
    expect(acknowledged.filter((oid) => !onMain.has(oid))).toEqual([]);
    expect((await gitAsyncOk(['rev-parse', 'pushes'], { cwd: final })).trim()).toBe(lastPushed);
  }, 120_000);
});
