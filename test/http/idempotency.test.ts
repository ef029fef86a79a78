/**
 * Idempotency-Key over HTTP (../shared/API.md "Workspace additions (v1.1)", README "Idempotency-Key"):
 * on every write route a repeat gets the first answer (status and body, `Idempotent-Replayed: true`)
 * and changes nothing (the project's version, heads and files, the team's event log); the same key
 * with another request is 422 and changes nothing; a repeat while the first runs is 409; 50
 * identical commit requests at once make one commit; keys are per API key; an answer survives a
 * restart and expires; hostile header values are refused before anything runs.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsyncOk, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { projectState } from '../support/projectState.js';
import { idempotentCommitRequest, rawRequest, rawRequestsAtOnce } from '../support/rawHttp.js';
import { startTestServer, type ApiResponse, type TestServer } from '../support/server.js';

const ENV = { TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1', TREEHOUSE_RATE_PER_SECOND: '100000', TREEHOUSE_RATE_BURST: '100000' };

let server: TestServer;
let backend: GitHttpBackend;
let receiver: Server;
let receiverUrl: string;
const work = scratchDir('treehouse-idempotency-');
const upstreams = join(work.path, 'upstreams');

beforeAll(async () => {
  server = await startTestServer({ env: ENV });
  initBareRepo(join(upstreams, 'linked.git'));
  backend = await startGitHttpBackend(upstreams);
  receiver = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close(), new Promise((resolve) => receiver?.close(resolve))]);
  work.remove();
});

let keyCount = 0;
const freshKey = () => `test-key-${++keyCount}-${Date.now()}`;

function keyed(method: string, path: string, body: unknown, key: string, options: { apiKey?: string; raw?: string } = {}): Promise<ApiResponse> {
  return server.call(method, path, body, { headers: { 'idempotency-key': key }, key: options.apiKey, raw: options.raw });
}

async function ok(method: string, path: string, body?: unknown): Promise<any> {
  const response = await server.call(method, path, body);
  expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
  return response.body;
}

/** The id of the team's newest event (paging through the log from `after`). */
async function lastEventId(after = '0'): Promise<string> {
  for (;;) {
    const page = (await server.call('GET', `/api/v1/events?after=${after}&limit=1000`)).body;
    if (page.events.length === 0) return after;
    after = page.next_after;
  }
}

async function newProject(title: string): Promise<{ id: string; base: string }> {
  const created = await ok('POST', '/api/v1/projects', { title, source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
  return { id: created.project.id, base: `/api/v1/projects/${created.project.id}` };
}

async function head(base: string, branch = 'main'): Promise<string> {
  return (await ok('GET', `${base}/git/branches`)).branches.find((found: { name: string }) => found.name === branch).oid;
}

/**
 * The request with a new key, then again: the repeat answers the first's status and body with
 * `Idempotent-Replayed: true` and leaves `observe()` and the event log as the first left them.
 */
async function expectReplayed(
  method: string,
  path: string,
  body: unknown,
  observe: () => Promise<unknown>,
  settle?: () => Promise<void>,
): Promise<ApiResponse & { key: string }> {
  const key = freshKey();
  const first = await keyed(method, path, body, key);
  expect(first.status, `${method} ${path}: ${JSON.stringify(first.body)}`).toBeLessThan(300);
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  await settle?.();
  const before = { observed: await observe(), lastEvent: await lastEventId() };
  const again = await keyed(method, path, body, key);
  expect([again.status, again.body]).toEqual([first.status, first.body]);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect({ observed: await observe(), lastEvent: await lastEventId() }).toEqual(before);
  return { ...first, key };
}

describe('a repeat with the same Idempotency-Key', () => {
  it('gets the first answer of every file and git write, and changes nothing', async () => {
    const { base } = await newProject('Replays');
    const state = () => projectState(server, base, ['main', 'feature']);
    const initial = await head(base);
    await ok('POST', `${base}/git/branches`, { name: 'feature' });
    await ok('POST', `${base}/files/batch`, { branch: 'feature', files: [{ path: 'f.txt', content: 'feature\n' }] });
    await ok('POST', `${base}/git/commit`, { branch: 'feature', message: 'feature work' });

    const batch = await expectReplayed(
      'POST',
      `${base}/files/batch`,
      {
        files: [
          { path: 'b.txt', content: 'b\n' },
          { path: 'gone/x.txt', content: 'x\n' },
          { path: 'm.txt', content: 'm\n' },
        ],
      },
      state,
    );
    expect(batch.body).toEqual({ written: 3 });
    expect((await expectReplayed('POST', `${base}/files/move`, { from: 'm.txt', to: 'moved/m.txt' }, state)).body).toEqual({
      from: 'm.txt',
      to: 'moved/m.txt',
    });
    expect((await expectReplayed('DELETE', `${base}/files/gone/x.txt?branch=main`, undefined, state)).body).toEqual({ path: 'gone/x.txt' });
    expect((await expectReplayed('DELETE', `${base}/file?path=b.txt`, undefined, state)).body).toEqual({ path: 'b.txt' });
    const commit = await expectReplayed('POST', `${base}/git/commit`, { message: 'with a key' }, state);
    expect(commit.status).toBe(201);
    expect(commit.body.commit.oid).toBe(await head(base));
    // Nothing to commit: 200, created false, replayed as such.
    const none = await expectReplayed('POST', `${base}/git/commit`, { message: 'nothing' }, state);
    expect([none.status, none.body.commit.created]).toEqual([200, false]);
    const restored = await expectReplayed('POST', `${base}/git/restore`, { oid: initial }, state);
    expect([restored.status, restored.body.commit.oid]).toEqual([201, await head(base)]);
    const preview = await expectReplayed('POST', `${base}/git/merge/preview`, { source: 'feature' }, state);
    expect(preview.body.files).toEqual([{ path: 'f.txt', status: 'added' }]);
    const merged = await expectReplayed('POST', `${base}/git/merge`, { source: 'feature', message: 'merge with a key' }, state);
    expect([merged.status, merged.body.merge.oid]).toEqual([201, await head(base)]);
    const created = await expectReplayed('POST', `${base}/git/branches`, { name: 'topic' }, state);
    expect([created.status, created.body.branch]).toEqual([201, { name: 'topic', oid: await head(base) }]);
    expect((await expectReplayed('DELETE', `${base}/git/branches/topic`, undefined, state)).body).toEqual({ deleted: 'topic' });
    await ok('POST', `${base}/files/batch`, { files: [{ path: 'src/app.js', content: 'const x=1\n' }] });
    const lint = await expectReplayed('POST', `${base}/lint`, { branch: 'main' }, state);
    expect(lint.body.errors).toMatchObject([{ path: 'src/app.js', rule: 'format' }]);
  });

  it('gets the first answer of every project write, and changes nothing', async () => {
    const title = `Created with a key ${Date.now()}`;
    const listed = async () => (await ok('GET', `/api/v1/projects?q=${encodeURIComponent(title)}`)).projects;
    const created = await expectReplayed(
      'POST',
      '/api/v1/projects',
      { title, source: { kind: 'files', files: [{ path: 'index.html', content: '<p>hi</p>\n' }] } },
      listed,
    );
    expect(created.status).toBe(201);
    expect(await listed()).toHaveLength(1);
    const createdKey = created.key;
    const id = created.body.project.id;
    const base = `/api/v1/projects/${id}`;
    // The answer kept is the one a read gives (version and all).
    expect(created.body.project).toEqual((await ok('GET', base)).project);
    const state = () => projectState(server, base);

    const patched = await expectReplayed('PATCH', base, { title: `${title} (renamed)` }, state);
    expect(patched.body.project).toEqual((await ok('GET', base)).project);
    const published = await expectReplayed('POST', `${base}/publish`, undefined, state);
    expect(published.body).toEqual({ published: true, handle: created.body.project.handle, url: `${server.url}/p/${created.body.project.handle}/` });
    // Publishing again changes nothing, with or without a key.
    await expectReplayed('POST', `${base}/publish`, undefined, state);
    expect((await expectReplayed('POST', `${base}/unpublish`, undefined, state)).body).toEqual({ published: false });

    // A repeat answers what happened, even once the project is gone.
    await ok('DELETE', base);
    const late = await keyed(
      'POST',
      '/api/v1/projects',
      { title, source: { kind: 'files', files: [{ path: 'index.html', content: '<p>hi</p>\n' }] } },
      createdKey,
    );
    expect([late.status, late.body, late.headers.get('idempotent-replayed')]).toEqual([201, created.body, 'true']);

    const { id: doomed, base: doomedBase } = await newProject('Deleted with a key');
    const projects = async () => (await ok('GET', '/api/v1/projects?limit=200')).projects.map((project: { id: string }) => project.id);
    expect((await expectReplayed('DELETE', doomedBase, undefined, projects)).body).toEqual({ deleted: doomed });
    // Without the key, the same delete is the 404 it always was.
    expect((await server.call('DELETE', doomedBase)).status).toBe(404);
  });

  it('gets the first answer of the linked-repository writes, and changes nothing', async () => {
    const { base } = await newProject('Linked with a key');
    const url = `${backend.url}/linked.git`;
    const remote = async () => (await ok('GET', `${base}/git/remote`)).remote;
    // The sync runs in the background: the replay is compared once it is done.
    const synced = async () => {
      while ((await remote()).sync.status === 'pending') await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const state = async () => ({ project: await projectState(server, base), remote: await remote() });
    const linked = await expectReplayed('PUT', `${base}/git/remote`, { url }, state, synced);
    expect(linked.body.remote).toMatchObject({ url, sync: { status: 'pending', oid: await head(base) } });
    await expectReplayed('POST', `${base}/git/remote/sync`, undefined, state, synced);
    expect((await remote()).sync.status).toBe('synced');
    const unlinked = await expectReplayed('DELETE', `${base}/git/remote`, undefined, () => projectState(server, base));
    expect(unlinked.body.remote).toMatchObject({ url, sync: { status: 'synced' } });
    expect((await server.call('GET', `${base}/git/remote`)).status).toBe(404);
  });

  it('gets the first answer of the webhook writes, the secret included, and changes nothing', async () => {
    const hooks = async () => (await ok('GET', '/api/v1/webhooks')).webhooks;
    const created = await expectReplayed('POST', '/api/v1/webhooks', { url: receiverUrl, events: ['files.changed'] }, hooks);
    expect(created.status).toBe(201);
    expect(created.body.webhook.secret).toMatch(/^whsec_/);
    const hook = created.body.webhook.id;
    const { base } = await newProject('Webhook target');
    await ok('POST', `${base}/files/batch`, { files: [{ path: 'w.txt', content: 'w\n' }] });
    const deliveries = async () => (await ok('GET', `/api/v1/webhooks/${hook}/deliveries`)).deliveries;
    while ((await deliveries()).length === 0 || (await deliveries())[0].status === 'pending') await new Promise((resolve) => setTimeout(resolve, 20));
    const [delivery] = await deliveries();
    const key = freshKey();
    const first = await keyed('POST', `/api/v1/webhooks/${hook}/deliveries/${delivery.id}/redeliver`, undefined, key);
    expect([first.status, first.body.delivery.id, first.body.delivery.status]).toEqual([202, delivery.id, 'pending']);
    const again = await keyed('POST', `/api/v1/webhooks/${hook}/deliveries/${delivery.id}/redeliver`, undefined, key);
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([202, first.body, 'true']);

    expect((await expectReplayed('DELETE', `/api/v1/webhooks/${hook}`, undefined, hooks)).body).toEqual({ deleted: hook });
    expect((await server.call('DELETE', `/api/v1/webhooks/${hook}`)).status).toBe(404);
  });
});

describe('a request made of several transactions', () => {
  it('replays a project created from a git seed: the history stored first, the project in the last transaction with its answer', async () => {
    const seedWork = join(work.path, 'seed-work');
    git(['init', '-q', '-b', 'main', seedWork]);
    git(['-c', 'user.name=Seed', '-c', 'user.email=seed@example.com', 'commit', '-q', '--allow-empty', '-m', 'seeded history'], { cwd: seedWork });
    initBareRepo(join(upstreams, 'seed.git'));
    git(['push', '-q', join(upstreams, 'seed.git'), 'main'], { cwd: seedWork });
    const title = `Seeded with a key ${Date.now()}`;
    const listed = async () => (await ok('GET', `/api/v1/projects?q=${encodeURIComponent(title)}`)).projects;
    const created = await expectReplayed('POST', '/api/v1/projects', { title, source: { kind: 'git', url: `${backend.url}/seed.git` } }, listed);
    expect(created.status).toBe(201);
    expect(await listed()).toHaveLength(1);
    const { commits } = await ok('GET', `/api/v1/projects/${created.body.project.id}/git/log`);
    expect(commits.map((commit: { message: string }) => commit.message)).toEqual(['seeded history']);
  });
});

describe('the same key with another request', () => {
  it('is 422 idempotency_key_reused for another body, path, query or method, and changes nothing', async () => {
    const { base } = await newProject('Reused keys');
    const key = freshKey();
    const first = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'one.txt', content: '1\n' }] }, key);
    expect(first.status).toBe(200);
    const before = { state: await projectState(server, base), lastEvent: await lastEventId() };
    const others: Array<[string, string, unknown, string?]> = [
      ['POST', `${base}/files/batch`, { files: [{ path: 'one.txt', content: '2\n' }] }],
      // The same JSON with other bytes (spacing) is another body.
      ['POST', `${base}/files/batch`, undefined, JSON.stringify({ files: [{ path: 'one.txt', content: '1\n' }] }, null, 1)],
      ['POST', `${base}/files/batch?branch=main`, { files: [{ path: 'one.txt', content: '1\n' }] }],
      ['POST', `${base}/git/commit`, {}],
      ['DELETE', `${base}/files/one.txt`, undefined],
      ['PATCH', base, { title: 'another route' }],
    ];
    for (const [method, path, body, raw] of others) {
      const answer = await keyed(method, path, body, key, { raw });
      expect([method, path, answer.status, answer.body.error?.code]).toEqual([method, path, 422, 'idempotency_key_reused']);
      expect(answer.headers.get('idempotent-replayed')).toBeNull();
    }
    expect({ state: await projectState(server, base), lastEvent: await lastEventId() }).toEqual(before);
    // The first request itself still replays.
    const again = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'one.txt', content: '1\n' }] }, key);
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([200, { written: 1 }, 'true']);
  });

  it('is answered by a key of its own for each API key', async () => {
    const { key: second } = await server.th.accounts.createKey('default', 'second');
    const key = freshKey();
    const title = `Per API key ${Date.now()}`;
    const body = { title };
    const mine = await keyed('POST', '/api/v1/projects', body, key);
    const theirs = await keyed('POST', '/api/v1/projects', body, key, { apiKey: second });
    expect([mine.status, theirs.status, theirs.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect(theirs.body.project.id).not.toBe(mine.body.project.id);
    expect((await ok('GET', `/api/v1/projects?q=${encodeURIComponent(title)}`)).projects).toHaveLength(2);
    // Each replays its own.
    expect((await keyed('POST', '/api/v1/projects', body, key, { apiKey: second })).body).toEqual(theirs.body);
    expect((await keyed('POST', '/api/v1/projects', body, key)).body).toEqual(mine.body);
  });

  it('runs again after a failure: failures are not kept', async () => {
    const { base } = await newProject('Failures');
    const key = freshKey();
    const refused = await keyed('POST', `${base}/files/move`, { from: 'missing.txt', to: 'b.txt' }, key);
    expect([refused.status, refused.body.error.code]).toEqual([404, 'not_found']);
    // Another request under the same key runs, since the failure kept nothing.
    const written = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'missing.txt', content: 'now\n' }] }, key);
    expect([written.status, written.headers.get('idempotent-replayed')]).toEqual([200, null]);
    const bad = await keyed('POST', `${base}/files/batch`, { files: [{ path: '../x', content: '' }] }, freshKey());
    expect(bad.status).toBe(400);
  });
});

describe('a repeat while the first request runs', () => {
  it('is 409 idempotency_in_progress (422 with another body), and the key is free again once the first failed', async () => {
    // A git server that holds its first answer until told, so the creation is still running.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const holding = new Promise<void>((resolve) => (reached = resolve));
    const stall = createServer((request, response) => {
      reached();
      void released.then(() => response.writeHead(404).end('no such repository'));
    });
    await new Promise<void>((resolve) => stall.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(stall.address() as { port: number }).port}/held.git`;
    try {
      const key = freshKey();
      const body = { title: 'Held seed', source: { kind: 'git', url } };
      const first = keyed('POST', '/api/v1/projects', body, key);
      await holding;
      const before = await lastEventId();
      const repeat = await keyed('POST', '/api/v1/projects', body, key);
      expect([repeat.status, repeat.body.error.code]).toEqual([409, 'idempotency_in_progress']);
      const other = await keyed('POST', '/api/v1/projects', { ...body, title: 'Another' }, key);
      expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
      release();
      const answered = await first;
      expect([answered.status, answered.body.error.code]).toEqual([400, 'invalid_request']);
      // The failure kept nothing: the same request runs again (and fails again, the upstream still has no repository).
      const retried = await keyed('POST', '/api/v1/projects', body, key);
      expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([400, null]);
      expect(await lastEventId(before)).toBe(before);
    } finally {
      release();
      await new Promise((resolve) => stall.close(resolve));
    }
  });

  it('makes one commit of 50 identical commit requests sent at once; the others answer 409 or the replay', async () => {
    const { id, base } = await newProject('Fifty at once');
    await ok('POST', `${base}/files/batch`, { files: [{ path: 'once.txt', content: 'once\n' }] });
    const parent = await head(base);
    const key = freshKey();
    const request = idempotentCommitRequest(server.url, server.key, id, key, 'exactly once');
    const answers = (
      await rawRequestsAtOnce(
        server.url,
        Array.from({ length: 50 }, () => request),
      )
    ).map((answer) => ({ ...answer, body: JSON.parse(answer.body) }));
    const made = answers.filter((answer) => answer.status === 201);
    expect(made.filter((answer) => answer.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 201) expect(answer.body).toEqual(made[0].body);
      else expect([answer.status, answer.body.error.code]).toEqual([409, 'idempotency_in_progress']);
    }
    const { commits } = await ok('GET', `${base}/git/log?limit=5`);
    expect(commits.map((commit: { message: string }) => commit.message).filter((message: string) => message === 'exactly once')).toHaveLength(1);
    expect([commits[0].oid, commits[0].parent_oids]).toEqual([made[0].body.commit.oid, [parent]]);
    // Once it is done, every repeat is the replay.
    const later = await Promise.all(Array.from({ length: 5 }, () => keyed('POST', `${base}/git/commit`, { message: 'exactly once' }, key)));
    expect(later.map((answer) => [answer.status, answer.headers.get('idempotent-replayed')])).toEqual(later.map(() => [201, 'true']));
  });
});

describe('kept answers', () => {
  it('survive a restart on the same data directory', async () => {
    const dataDir = scratchDir('treehouse-idempotency-restart-');
    try {
      const first = await startTestServer({ env: ENV, dataDir: dataDir.path });
      const created = await first.call('POST', '/api/v1/projects', { title: 'Restarted' });
      const path = `/api/v1/projects/${created.body.project.id}/files/batch`;
      const body = { files: [{ path: 'r.txt', content: 'r\n' }] };
      const answered = await first.call('POST', path, body, { headers: { 'idempotency-key': 'across a restart' } });
      const version = (await first.call('GET', `/api/v1/projects/${created.body.project.id}`)).body.project.version;
      await first.close();
      const second = await startTestServer({ env: ENV, dataDir: dataDir.path });
      try {
        const again = await second.call('POST', path, body, { key: first.key, headers: { 'idempotency-key': 'across a restart' } });
        expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([answered.status, answered.body, 'true']);
        expect((await second.call('GET', `/api/v1/projects/${created.body.project.id}`, undefined, { key: first.key })).body.project.version).toBe(version);
      } finally {
        await second.close();
      }
    } finally {
      dataDir.remove();
    }
  });

  it('expire after their time: the request then runs again, and pruning removes them', async () => {
    const { base } = await newProject('Expiry');
    const key = freshKey();
    const body = { files: [{ path: 'e.txt', content: 'e\n' }] };
    const first = await keyed('POST', `${base}/files/batch`, body, key);
    const version = (await ok('GET', base)).project.version;
    const idempotency = server.th.idempotency;
    const records = () => server.th.store.read(async (tx) => (await tx.listRecords('idempotency/')).length);
    const kept = await records();
    const dayAndASecond = server.th.config.idempotency.ttlMs + 1000;
    try {
      idempotency.now = () => Date.now() + dayAndASecond;
      const again = await keyed('POST', `${base}/files/batch`, body, key);
      expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([first.status, first.body, null]);
      expect((await ok('GET', base)).project.version).toBe(version + 1);
      // The expired record was replaced, not added to.
      expect(await records()).toBe(kept);
      expect(await idempotency.prune(Date.now() + 2 * dayAndASecond)).toBeGreaterThanOrEqual(1);
      expect(await records()).toBe(0);
      expect(await server.th.store.read(async (tx) => (await tx.listRecords('idempotency-expiry/')).length)).toBe(0);
    } finally {
      idempotency.now = Date.now;
    }
  });

  it('are kept for TREEHOUSE_IDEMPOTENCY_TTL_SECONDS: 0 keeps none', async () => {
    const brief = await startTestServer({ env: { ...ENV, TREEHOUSE_IDEMPOTENCY_TTL_SECONDS: '0' } });
    try {
      const created = await brief.call('POST', '/api/v1/projects', { title: 'No memory' });
      const project = `/api/v1/projects/${created.body.project.id}`;
      const version = (await brief.call('GET', project)).body.project.version;
      const path = `${project}/files/batch`;
      const body = { files: [{ path: 'n.txt', content: 'n\n' }] };
      for (let run = 0; run < 2; run++) {
        const answer = await brief.call('POST', path, body, { headers: { 'idempotency-key': 'forgotten at once' } });
        expect([answer.status, answer.headers.get('idempotent-replayed')]).toEqual([200, null]);
      }
      expect((await brief.call('GET', project)).body.project.version).toBe(version + 2);
    } finally {
      await brief.close();
    }
  });
});

describe('the Idempotency-Key header', () => {
  it('takes 1 to 255 printable ASCII characters, spaces and punctuation included', async () => {
    const { base } = await newProject('Good keys');
    for (const key of ['k', 'x'.repeat(255), 'a key with spaces', '~!@#$%^&*()_+{}|:"<>?`-=[]\\;\',./']) {
      const path = `${base}/files/batch`;
      const body = { files: [{ path: 'k.txt', content: `${key.length}\n` }] };
      const first = await keyed('POST', path, body, key);
      const again = await keyed('POST', path, body, key);
      expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    }
  });

  it('is refused with 400 naming it when empty, too long, not printable ASCII or given twice, and nothing changes', async () => {
    const { id, base } = await newProject('Hostile keys');
    const before = { state: await projectState(server, base), lastEvent: await lastEventId() };
    const body = JSON.stringify({ files: [{ path: 'h.txt', content: 'h\n' }] });
    const { host } = new URL(server.url);
    const send = (headerLines: Buffer) =>
      rawRequest(
        server.url,
        Buffer.concat([
          Buffer.from(
            `POST /api/v1/projects/${id}/files/batch HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n`,
          ),
          headerLines,
          Buffer.from(`\r\n${body}`),
        ]),
      );
    const hostile: Array<[string, Buffer]> = [
      ['empty', Buffer.from('Idempotency-Key:\r\n')],
      ['only spaces (trimmed to empty)', Buffer.from('Idempotency-Key:    \r\n')],
      ['256 characters', Buffer.from(`Idempotency-Key: ${'y'.repeat(256)}\r\n`)],
      ['a tab inside', Buffer.from('Idempotency-Key: a\tb\r\n')],
      ['a Latin-1 byte', Buffer.concat([Buffer.from('Idempotency-Key: caf'), Buffer.from([0xe9]), Buffer.from('\r\n')])],
      ['UTF-8 bytes', Buffer.from('Idempotency-Key: clé 🔑\r\n', 'utf8')],
      ['given twice', Buffer.from('Idempotency-Key: one\r\nidempotency-key: one\r\n')],
      ['given twice, differently', Buffer.from('Idempotency-Key: one\r\nIDEMPOTENCY-KEY: two\r\n')],
    ];
    for (const [what, lines] of hostile) {
      const answer = await send(lines);
      expect([what, answer.status], answer.body).toEqual([what, 400]);
      const error = JSON.parse(answer.body).error;
      expect([what, error.code, error.details?.issues[0].path], answer.body).toEqual([what, 'invalid_request', 'Idempotency-Key']);
    }
    expect({ state: await projectState(server, base), lastEvent: await lastEventId() }).toEqual(before);
    // Control characters other than tab (NUL, DEL) never reach a route: Node's parser refuses the request.
    for (const control of ['\x00', '\x7f', '\x1b']) {
      const answer = await send(Buffer.from(`Idempotency-Key: a${control}b\r\n`));
      expect([answer.status, JSON.parse(answer.body).error.code]).toEqual([400, 'invalid_request']);
    }
    // On a read the header plays no part.
    const read = await server.call('GET', `${base}/files`, undefined, { headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(read.status).toBe(200);
    expect({ state: await projectState(server, base), lastEvent: await lastEventId() }).toEqual(before);
  });

  it('is in the OpenAPI document on every write, and on no read', async () => {
    const document = (await server.call('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    let writes = 0;
    for (const [path, operations] of Object.entries<Record<string, { parameters: Array<{ name: string; in: string }> }>>(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const declared = operation.parameters.some((parameter) => parameter.name === 'Idempotency-Key' && parameter.in === 'header');
        const write = method !== 'get';
        if (write) writes++;
        expect([method, path, declared]).toEqual([method, path, write]);
      }
    }
    expect(writes).toBeGreaterThanOrEqual(22);
  });

  it('is checked after the API key: without one it is 401', async () => {
    const answer = await server.call('POST', '/api/v1/projects', { title: 'x' }, { key: null, headers: { 'idempotency-key': '' } });
    expect(answer.status).toBe(401);
  });
});

describe('large bodies', () => {
  it('are told apart by every byte, not only their start (the fingerprint is hashed in slices)', async () => {
    const { base } = await newProject('Large');
    const key = freshKey();
    const content = 'z'.repeat(3 * 1024 * 1024);
    const first = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'big.txt', content: `${content}1` }] }, key);
    expect(first.status).toBe(200);
    const other = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'big.txt', content: `${content}2` }] }, key);
    expect([other.status, other.body.error.code]).toEqual([422, 'idempotency_key_reused']);
    const again = await keyed('POST', `${base}/files/batch`, { files: [{ path: 'big.txt', content: `${content}1` }] }, key);
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
  });
});

describe('clones', () => {
  it('see one commit after a replayed commit', async () => {
    const { id, base } = await newProject('Cloned');
    await ok('POST', `${base}/files/batch`, { files: [{ path: 'c.txt', content: 'c\n' }] });
    const key = freshKey();
    await keyed('POST', `${base}/git/commit`, { message: 'once' }, key);
    await keyed('POST', `${base}/git/commit`, { message: 'once' }, key);
    const clone = join(work.path, 'clone');
    await gitAsyncOk(['clone', '-q', `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${id}.git`, clone]);
    expect(git(['log', '--format=%s'], { cwd: clone }).trim().split('\n')).toEqual(['once', 'Initial commit']);
  });
});
