/**
 * The event bus and the event log (src/service/events.ts, src/service/eventLog.ts): every kind of
 * change, made through the API, through git and through the linked-repository sync of a real
 * server, announces exactly its event with the contract's `data` (../shared/API.md "Events and
 * webhooks (v1.1)"), and the team's log (GET /api/v1/events) holds exactly the events the bus
 * announced, in the same order with increasing ids; a change that is refused, before or inside its
 * transaction, has no event in either.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/service/events.js';
import { git, gitAsync, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { remoteUrl } from '../support/history.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let backend: GitHttpBackend;
const work = scratchDir('treehouse-events-');
const upstreams = join(work.path, 'upstreams');
let events: ChangeEvent[] = [];
/** The last event id of the log that taken() has compared. */
let logCursor = '0';

beforeAll(async () => {
  server = await startTestServer({ env: { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1' } });
  server.th.events.on((event) => events.push(event));
  initBareRepo(join(upstreams, 'linked.git'));
  backend = await startGitHttpBackend(upstreams);
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});
beforeEach(async () => {
  await taken();
});

/**
 * The events so far as [type, project id, data], and forgets them, after checking that the log's
 * events since the last call are exactly those, with their ids, in order.
 */
async function taken(): Promise<Array<[string, string, unknown]>> {
  const announced = events;
  events = [];
  const page = (await server.call('GET', `/api/v1/events?after=${logCursor}&limit=1000`)).body;
  expect(page.events).toEqual(announced.map((event) => ({ id: event.id, type: event.type, project_id: event.project.id, at: event.at, data: event.data })));
  const ids = page.events.map((event: { id: string }) => Number(event.id));
  expect(ids).toEqual(ids.map((_: number, index: number) => Number(logCursor) + 1 + index));
  logCursor = page.next_after;
  return announced.map((event): [string, string, unknown] => [event.type, event.project.id, event.data]);
}

async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const response = await server.call(method, path, body);
  expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
  return response.body;
}

async function head(id: string, branch = 'main'): Promise<string> {
  const { branches } = await ok('GET', `/api/v1/projects/${id}/git/branches`);
  return branches.find((found: { name: string }) => found.name === branch).oid;
}

async function newProject(title: string): Promise<string> {
  const created = await ok('POST', '/api/v1/projects', { title, source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
  await taken();
  return created.project.id;
}

describe('the event bus', () => {
  it('announces a project and its seed commit, settings, publication and deletion', async () => {
    const created = await ok('POST', '/api/v1/projects', { title: 'Events', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
    const id = created.project.id;
    const seeded = await head(id);
    expect(await taken()).toEqual([
      ['project.created', id, {}],
      ['commit.created', id, { branch: 'main', oid: seeded, parent_oids: [], source: 'seed' }],
    ]);
    await ok('PATCH', `/api/v1/projects/${id}`, { title: 'Renamed' });
    await ok('PATCH', `/api/v1/projects/${id}`, { title: 'Renamed' });
    await ok('POST', `/api/v1/projects/${id}/publish`);
    await ok('POST', `/api/v1/projects/${id}/unpublish`);
    expect(await taken()).toEqual([
      ['project.updated', id, { title: 'Renamed' }],
      ['project.published', id, {}],
      ['project.unpublished', id, {}],
    ]);
    expect((await server.call('PATCH', `/api/v1/projects/${id}`, { handle: 'NOT A HANDLE' })).status).toBe(400);
    expect(await taken()).toEqual([]);
    await ok('DELETE', `/api/v1/projects/${id}`);
    expect(await taken()).toEqual([['project.deleted', id, {}]]);
  });

  it('announces file changes with their paths and version, and commits with their parents and source', async () => {
    const id = await newProject('Files');
    const base = `/api/v1/projects/${id}`;
    const seeded = await head(id);
    await ok('POST', `${base}/files/batch`, { branch: 'main', files: [{ path: 'b.txt', content: 'b\n' }], deletes: ['a.txt'] });
    const version = (await ok('GET', base)).project.version;
    await ok('POST', `${base}/files/move`, { branch: 'main', from: 'b.txt', to: 'c.txt' });
    await ok('DELETE', `${base}/files/c.txt?branch=main`);
    expect(await taken()).toEqual([
      ['files.changed', id, { branch: 'main', paths: ['b.txt', 'a.txt'], version }],
      ['files.changed', id, { branch: 'main', paths: ['b.txt', 'c.txt'], version: version + 1 }],
      ['files.changed', id, { branch: 'main', paths: ['c.txt'], version: version + 2 }],
    ]);
    // Refused changes announce nothing.
    expect((await server.call('POST', `${base}/files/batch`, { branch: 'main', files: [{ path: '../x', content: 'x' }] })).status).toBe(400);
    expect((await server.call('DELETE', `${base}/files/missing.txt?branch=main`)).status).toBe(404);
    expect((await server.call('POST', `${base}/git/commit`, { branch: 'main', expected_head: '0'.repeat(40) })).status).toBe(409);
    expect(await taken()).toEqual([]);

    await ok('POST', `${base}/files/batch`, { branch: 'main', files: [{ path: 'd.txt', content: 'd\n' }] });
    const committed = (await ok('POST', `${base}/git/commit`, { branch: 'main' })).commit.oid;
    // Nothing to commit: no new commit, no event.
    await ok('POST', `${base}/git/commit`, { branch: 'main' });
    expect((await taken()).slice(1)).toEqual([['commit.created', id, { branch: 'main', oid: committed, parent_oids: [seeded], source: 'api' }]]);

    const restored = (await ok('POST', `${base}/git/restore`, { branch: 'main', oid: seeded })).commit.oid;
    expect(await taken()).toEqual([['commit.created', id, { branch: 'main', oid: restored, parent_oids: [committed], source: 'restore' }]]);

    // Refused inside the change's transaction (a locked file in a batch): the batch's event goes with it.
    await ok('POST', `${base}/files/batch`, { branch: 'main', files: [{ path: 'locked.txt', content: 'l\n', locked: true }] });
    expect((await taken()).map(([type]) => type)).toEqual(['files.changed']);
    const failed = await server.call('POST', `${base}/files/batch`, { branch: 'main', files: [{ path: 'free.txt', content: 'f\n' }, { path: 'locked.txt', content: 'changed\n' }] });
    expect(failed.status).toBe(423);
    expect(await taken()).toEqual([]);
  });

  it('announces branches created and deleted, and merges', async () => {
    const id = await newProject('Branches');
    const base = `/api/v1/projects/${id}`;
    const seeded = await head(id);
    await ok('POST', `${base}/git/branches`, { name: 'side' });
    expect(await taken()).toEqual([['branch.created', id, { branch: 'side', oid: seeded }]]);
    await ok('POST', `${base}/files/batch`, { branch: 'side', files: [{ path: 's.txt', content: 's\n' }] });
    const onSide = (await ok('POST', `${base}/git/commit`, { branch: 'side' })).commit.oid;
    await taken();
    await ok('POST', `${base}/git/merge`, { source: 'side', target: 'main' });
    expect(await taken()).toEqual([['commit.created', id, { branch: 'main', oid: onSide, parent_oids: [seeded], source: 'merge' }]]);
    expect((await server.call('POST', `${base}/git/merge`, { source: 'nowhere', target: 'main' })).status).toBe(404);
    // A conflicting merge, refused inside its transaction, announces nothing.
    await ok('POST', `${base}/git/branches`, { name: 'left' });
    for (const branch of ['main', 'left']) {
      await ok('POST', `${base}/files/batch`, { branch, files: [{ path: 'a.txt', content: `${branch}\n` }] });
      await ok('POST', `${base}/git/commit`, { branch });
    }
    await taken();
    expect((await server.call('POST', `${base}/git/merge`, { source: 'left', target: 'main' })).status).toBe(409);
    expect((await server.call('DELETE', `${base}/git/branches/main`)).status).toBeGreaterThanOrEqual(400);
    expect(await taken()).toEqual([]);
    await ok('DELETE', `${base}/git/branches/side`);
    expect(await taken()).toEqual([['branch.deleted', id, { branch: 'side', oid: onSide }]]);
  });

  it('announces what a git push moved, created and deleted, and nothing for a refused push', async () => {
    const id = await newProject('Pushed');
    const seeded = await head(id);
    const clone = join(work.path, 'pushed');
    await gitAsyncOk(['clone', '-q', remoteUrl(server, id), clone]);
    writeFileSync(join(clone, 'pushed.txt'), 'pushed\n');
    git(['add', 'pushed.txt'], { cwd: clone });
    git(['commit', '-q', '-m', 'Pushed'], { cwd: clone });
    const pushed = git(['rev-parse', 'HEAD'], { cwd: clone }).trim();
    await gitAsyncOk(['push', '-q', 'origin', 'main', 'main:refs/heads/topic'], { cwd: clone });
    expect(await taken()).toEqual([
      ['commit.created', id, { branch: 'main', oid: pushed, parent_oids: [seeded], source: 'push' }],
      ['branch.created', id, { branch: 'topic', oid: pushed }],
    ]);
    await gitAsyncOk(['push', '-q', 'origin', ':refs/heads/topic'], { cwd: clone });
    expect(await taken()).toEqual([['branch.deleted', id, { branch: 'topic', oid: pushed }]]);
    git(['commit', '-q', '--amend', '-m', 'Rewritten'], { cwd: clone });
    expect((await gitAsync(['push', '-q', '--force', 'origin', 'main'], { cwd: clone })).status).not.toBe(0);
    expect(await taken()).toEqual([]);
  });

  it('announces a link and each sync status of the linked repository', async () => {
    const id = await newProject('Linked');
    const url = `${backend.url}/linked.git`;
    const linked = await ok('PUT', `/api/v1/projects/${id}/git/remote`, { url });
    const seeded = await head(id);
    for (let tries = 0; tries < 200 && !events.some((event) => event.type === 'sync.status' && event.data.status === 'synced'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(await taken()).toEqual([
      ['project.updated', id, { git_remote: { url, linked_at: linked.remote.linked_at } }],
      ['sync.status', id, { branch: 'main', status: 'pending', oid: seeded, error: null }],
      ['sync.status', id, { branch: 'main', status: 'synced', oid: seeded, error: null }],
    ]);
  });
});
