import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ limits: { fileBytesMax: 1024, batchFilesMax: 5, requestBodyBytesMax: 64 * 1024 } });
});
afterAll(() => server.close());

async function newProject(title = 'Test project', extra: Record<string, unknown> = {}) {
  const created = await server.call('POST', '/api/v1/projects', { title, ...extra });
  expect(created.status).toBe(201);
  return created.body.project as { id: string; handle: string };
}

function expectError(response: { status: number; body: any }, status: number, code: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(typeof response.body.error.message).toBe('string');
}

describe('authentication', () => {
  it('refuses missing, malformed, unknown and revoked keys with 401 and WWW-Authenticate', async () => {
    for (const key of [null, 'nope', `th_${'x'.repeat(40)}`]) {
      const response = await server.call('GET', '/api/v1/projects', undefined, { key });
      expectError(response, 401, 'unauthorized');
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
    }
    const { record, key } = await server.th.accounts.createKey('default', 'temp');
    expect((await server.call('GET', '/api/v1/projects', undefined, { key })).status).toBe(200);
    await server.th.accounts.revokeKey(record.id);
    expectError(await server.call('GET', '/api/v1/projects', undefined, { key }), 401, 'unauthorized');
  });

  it('hides projects of another team (404) and changes nothing', async () => {
    const project = await newProject('Private');
    await server.th.accounts.createTeam('other');
    const { key: otherKey } = await server.th.accounts.createKey('other');
    const asOther = { key: otherKey };
    expectError(await server.call('GET', `/api/v1/projects/${project.id}`, undefined, asOther), 404, 'not_found');
    expectError(await server.call('POST', `/api/v1/projects/${project.id}/files/batch`, { files: [{ path: 'x', content: 'y' }] }, asOther), 404, 'not_found');
    expectError(await server.call('DELETE', `/api/v1/projects/${project.id}`, undefined, asOther), 404, 'not_found');
    expectError(await server.call('PATCH', `/api/v1/projects/${project.id}`, { title: 'stolen' }, asOther), 404, 'not_found');
    const list = await server.call('GET', '/api/v1/projects', undefined, asOther);
    expect(list.body.projects).toEqual([]);
    const mine = await server.call('GET', `/api/v1/projects/${project.id}`);
    expect(mine.body.project.title).toBe('Private');
    expect((await server.call('GET', `/api/v1/projects/${project.id}/files`)).body.files).toEqual([]);
  });
});

describe('projects', () => {
  it('creates, reads, lists with q and cursor, patches, publishes and deletes', async () => {
    const a = await newProject('Alpha Site');
    expect(a.handle).toBe('alpha-site');
    const b = await newProject('Alpha Site');
    expect(b.handle).toBe('alpha-site-2');
    const c = await newProject('Gamma', { handle: 'gamma-handle', framework: 'vite' });
    expectError(await server.call('POST', '/api/v1/projects', { title: 'x', handle: 'gamma-handle' }), 409, 'handle_taken');
    expectError(await server.call('POST', '/api/v1/projects', { title: 'x', handle: 'Bad Handle' }), 400, 'invalid_request');
    expectError(await server.call('POST', '/api/v1/projects', { title: '' }), 400, 'invalid_request');
    expectError(await server.call('POST', '/api/v1/projects', { title: 'x', extra: 1 }), 400, 'invalid_request');

    const read = await server.call('GET', `/api/v1/projects/${c.id}`);
    expect(read.body.project).toMatchObject({
      id: c.id,
      handle: 'gamma-handle',
      framework: 'vite',
      published: false,
      version: 1,
      last_deployed_at: null,
      default_branch: 'main',
      has_commerce_credentials: false,
      git_remote: null,
    });
    expect(read.body.project.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const search = await server.call('GET', '/api/v1/projects?q=ALPHA');
    expect(search.body.projects.map((p: { id: string }) => p.id)).toEqual([b.id, a.id]);
    const page1 = await server.call('GET', '/api/v1/projects?limit=1&q=alpha');
    expect(page1.body.projects.map((p: { id: string }) => p.id)).toEqual([b.id]);
    const page2 = await server.call('GET', `/api/v1/projects?limit=1&q=alpha&cursor=${page1.body.next_cursor}`);
    expect(page2.body.projects.map((p: { id: string }) => p.id)).toEqual([a.id]);
    expect(page2.body.next_cursor).toBeNull();
    expectError(await server.call('GET', '/api/v1/projects?limit=0'), 400, 'invalid_request');
    expectError(await server.call('GET', '/api/v1/projects?limit=201'), 400, 'invalid_request');

    const patched = await server.call('PATCH', `/api/v1/projects/${a.id}`, { title: 'Renamed', handle: 'renamed-site' });
    expect(patched.body.project).toMatchObject({ title: 'Renamed', handle: 'renamed-site', version: 2 });
    expectError(await server.call('PATCH', `/api/v1/projects/${a.id}`, { handle: 'gamma-handle' }), 409, 'handle_taken');

    const published = await server.call('POST', `/api/v1/projects/${a.id}/publish`);
    expect(published.body).toEqual({ published: true, handle: 'renamed-site', url: `${server.url}/p/renamed-site/` });
    expect((await server.call('POST', `/api/v1/projects/${a.id}/publish`)).body.published).toBe(true);
    expect((await server.call('POST', `/api/v1/projects/${a.id}/unpublish`)).body).toEqual({ published: false });

    expect((await server.call('DELETE', `/api/v1/projects/${a.id}`)).body).toEqual({ deleted: a.id });
    expectError(await server.call('GET', `/api/v1/projects/${a.id}`), 404, 'not_found');
    // The handle is free again.
    expect((await newProject('Again', { handle: 'renamed-site' })).handle).toBe('renamed-site');
  });

  it('seeds from files and templates, stores commerce credentials without returning them', async () => {
    const templates = await server.call('GET', '/api/v1/templates');
    expect(templates.body.templates.length).toBeGreaterThanOrEqual(3);
    const fromTemplate = await server.call('POST', '/api/v1/projects', { title: 'T', source: { kind: 'template', name: 'vite-react-ts' } });
    expect(fromTemplate.body.project.framework).toBe('vite');
    const files = await server.call('POST', '/api/v1/projects', {
      title: 'Shop',
      source: { kind: 'files', files: [{ path: 'index.html', content: '<p>hi</p>' }] },
      commerce: { platform: 'shopify', store_domain: 'x.myshopify.com', access_token: 'shpat_secret' },
    });
    expect(files.status).toBe(201);
    expect(files.body.project.has_commerce_credentials).toBe(true);
    expect(JSON.stringify(files.body)).not.toContain('shpat_secret');
    const log = await server.call('GET', `/api/v1/projects/${files.body.project.id}/git/log`);
    expect(log.body.commits).toHaveLength(1);
    expect(log.body.commits[0].message).toBe('Initial commit');
    expectError(await server.call('POST', '/api/v1/projects', { title: 'x', source: { kind: 'template', name: 'nope' } }), 400, 'invalid_request');
    expectError(await server.call('POST', '/api/v1/projects', { title: 'x', source: { kind: 'files', files: [{ path: '.git/config', content: '' }] } }), 400, 'invalid_request');
  });
});

describe('files', () => {
  it('writes batches, reads, lists, moves and deletes, with every error code', async () => {
    const p = await newProject('Files');
    const base = `/api/v1/projects/${p.id}`;
    const written = await server.call('POST', `${base}/files/batch`, {
      files: [
        { path: 'src/index.ts', content: 'export const a = 1;\n' },
        { path: 'img.bin', content: Buffer.from([0xff, 0xfe, 0]).toString('base64'), encoding: 'base64' },
      ],
    });
    expect(written.body).toEqual({ written: 2 });
    expect((await server.call('GET', `${base}/files`)).body.files).toEqual([
      { path: 'img.bin', size: 3, locked: false },
      { path: 'src/index.ts', size: 20, locked: false },
    ]);
    const withContent = await server.call('GET', `${base}/files?content=true&prefix=img`);
    expect(withContent.body.files).toEqual([{ path: 'img.bin', size: 3, locked: false, content: '//4A', encoding: 'base64' }]);
    const one = await server.call('GET', `${base}/files/src/index.ts`);
    expect(one.body).toMatchObject({ path: 'src/index.ts', content: 'export const a = 1;\n', locked: false, size: 20 });
    expect(one.body.oid).toMatch(/^[0-9a-f]{40}$/);

    for (const bad of ['../x', '/etc/passwd', '.git/config', 'a/.GIT/x', 'a\u0000b', 'a//b', './a']) {
      expectError(await server.call('POST', `${base}/files/batch`, { files: [{ path: bad, content: 'x' }] }), 400, 'invalid_request');
    }
    expectError(await server.call('GET', `${base}/files/a%2F..%2F..%2Fetc%2Fpasswd`), 400, 'invalid_request');
    expectError(await server.call('GET', `${base}/files/missing.txt`), 404, 'not_found');
    expectError(await server.call('GET', `${base}/files?branch=nope`), 404, 'not_found');
    expectError(await server.call('POST', `${base}/files/batch`, { files: [{ path: 'src/index.ts/x', content: '' }] }), 409, 'path_conflict');
    expectError(await server.call('POST', `${base}/files/batch`, { files: [{ path: 'big', content: 'x'.repeat(2000) }] }), 413, 'payload_too_large');
    const tooMany = Array.from({ length: 6 }, (_, i) => ({ path: `f${i}`, content: '' }));
    const overCount = await server.call('POST', `${base}/files/batch`, { files: tooMany });
    expectError(overCount, 413, 'payload_too_large');
    expect(overCount.body.error.details.limit).toBe(5);
    const overBody = await server.call('POST', `${base}/files/batch`, undefined, { raw: JSON.stringify({ files: [{ path: 'x', content: 'y'.repeat(70_000) }] }) });
    expectError(overBody, 413, 'payload_too_large');
    expectError(await server.call('POST', `${base}/files/batch`, undefined, { raw: '{"files": [' }), 400, 'invalid_request');
    expectError(await server.call('POST', `${base}/files/batch`, { files: 'nope' }), 400, 'invalid_request');
    expectError(await server.call('POST', `${base}/files/batch`, { files: [], unknown: true }), 400, 'invalid_request');
    // Nothing of the failed batches landed.
    expect((await server.call('GET', `${base}/files`)).body.files.map((f: { path: string }) => f.path)).toEqual(['img.bin', 'src/index.ts']);

    expect((await server.call('POST', `${base}/files/move`, { from: 'src', to: 'lib' })).body).toEqual({ from: 'src', to: 'lib' });
    expectError(await server.call('POST', `${base}/files/move`, { from: 'nope', to: 'x' }), 404, 'not_found');
    expectError(await server.call('POST', `${base}/files/move`, { from: 'img.bin', to: 'lib/index.ts' }), 409, 'already_exists');
    expect((await server.call('DELETE', `${base}/files/lib`)).body).toEqual({ path: 'lib' });
    expectError(await server.call('DELETE', `${base}/files/lib`), 404, 'not_found');

    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'locked.txt', content: 'v1', locked: true }] });
    expectError(await server.call('POST', `${base}/files/batch`, { files: [{ path: 'locked.txt', content: 'v2' }] }), 423, 'file_locked');
    expectError(await server.call('DELETE', `${base}/files/locked.txt`), 423, 'file_locked');
    const moveLocked = await server.call('POST', `${base}/files/move`, { from: 'locked.txt', to: 'moved.txt' });
    expectError(moveLocked, 423, 'file_locked');
    expect(moveLocked.body.error.details.paths).toEqual(['locked.txt']);
    expect((await server.call('POST', `${base}/files/batch`, { files: [{ path: 'locked.txt', content: 'v2', locked: false }] })).status).toBe(200);
  });
});

describe('git', () => {
  it('commits, logs with paging, shows, restores and manages branches', async () => {
    const p = await newProject('Git', { source: { kind: 'files', files: [{ path: 'a.txt', content: 'one\n' }] } });
    const base = `/api/v1/projects/${p.id}`;
    const initial = (await server.call('GET', `${base}/git/log`)).body.commits[0];
    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'a.txt', content: 'two\n' }] });
    const committed = await server.call('POST', `${base}/git/commit`, { message: 'Second' });
    expect(committed.status).toBe(201);
    expect(committed.body).toEqual({ commit: { oid: expect.stringMatching(/^[0-9a-f]{40}$/), branch: 'main' } });
    const noop = await server.call('POST', `${base}/git/commit`, {});
    expect(noop.status).toBe(200);
    expect(noop.body).toEqual({ commit: { oid: committed.body.commit.oid, branch: 'main', created: false } });
    const stale = await server.call('POST', `${base}/git/commit`, { expected_head: initial.oid });
    expectError(stale, 409, 'ref_changed');
    expect(stale.body.error.details.head).toBe(committed.body.commit.oid);

    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'b.txt', content: 'b' }] });
    const authored = await server.call('POST', `${base}/git/commit`, { author: { name: 'Ada', email: 'ada@example.com' }, expected_head: committed.body.commit.oid.slice(0, 7) });
    expect(authored.status).toBe(201);

    const page = await server.call('GET', `${base}/git/log?limit=2`);
    expect(page.body.commits.map((c: { message: string }) => c.message)).toEqual(['Update files', 'Second']);
    expect(page.body.commits[0].author_id).toBeNull();
    const next = await server.call('GET', `${base}/git/log?limit=2&cursor=${page.body.next_cursor}`);
    expect(next.body.commits.map((c: { oid: string }) => c.oid)).toEqual([initial.oid]);
    expect(next.body.next_cursor).toBeNull();
    expectError(await server.call('GET', `${base}/git/log?cursor=garbage`), 400, 'invalid_request');

    const shown = await server.call('GET', `${base}/git/commits/${committed.body.commit.oid}?content=false`);
    expect(shown.body.commit).toMatchObject({ oid: committed.body.commit.oid, message: 'Second', parent_oids: [initial.oid], files: [{ path: 'a.txt', size: 4 }] });
    expect(shown.body.commit.tree_oid).toMatch(/^[0-9a-f]{40}$/);
    expectError(await server.call('GET', `${base}/git/commits/0000000`), 404, 'not_found');
    expectError(await server.call('GET', `${base}/git/commits/abc`), 404, 'not_found');

    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'dirty.txt', content: 'x' }] });
    const refused = await server.call('POST', `${base}/git/restore`, { oid: initial.oid });
    expectError(refused, 409, 'uncommitted_changes');
    expect(refused.body.error.details.paths).toEqual(['dirty.txt']);
    const restored = await server.call('POST', `${base}/git/restore`, { oid: initial.oid, force: true });
    expect(restored.status).toBe(201);
    expect((await server.call('GET', `${base}/files/a.txt`)).body.content).toBe('one\n');
    const again = await server.call('POST', `${base}/git/restore`, { oid: initial.oid });
    expect(again.status).toBe(200);
    expect(again.body.commit.created).toBe(false);

    const created = await server.call('POST', `${base}/git/branches`, { name: 'feature/login', from: committed.body.commit.oid });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ branch: { name: 'feature/login', oid: committed.body.commit.oid } });
    expectError(await server.call('POST', `${base}/git/branches`, { name: 'feature/login' }), 409, 'branch_exists');
    expectError(await server.call('POST', `${base}/git/branches`, { name: 'bad name' }), 400, 'invalid_request');
    expectError(await server.call('POST', `${base}/git/branches`, { name: 'x', from: 'nope' }), 404, 'not_found');
    expect((await server.call('GET', `${base}/files/a.txt?branch=feature%2Flogin`)).body.content).toBe('two\n');
    const branches = await server.call('GET', `${base}/git/branches`);
    expect(branches.body.branches.map((b: { name: string }) => b.name)).toEqual(['feature/login', 'main']);
    expectError(await server.call('DELETE', `${base}/git/branches/main`), 409, 'protected_branch');
    expect((await server.call('DELETE', `${base}/git/branches/feature%2Flogin`)).body).toEqual({ deleted: 'feature/login' });
    expectError(await server.call('DELETE', `${base}/git/branches/feature%2Flogin`), 404, 'not_found');
  });
});

describe('input git cannot store (400, and nothing changes)', () => {
  it('refuses an author git fsck --strict would refuse, or that holds a newline, and commits nothing', async () => {
    const p = await newProject('Authors', { source: { kind: 'files', files: [{ path: 'a.txt', content: 'a' }] } });
    const base = `/api/v1/projects/${p.id}`;
    const head = (await server.call('GET', `${base}/git/log`)).body.commits[0].oid;
    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'b.txt', content: 'b' }] });
    const bad = [
      { name: 'x <evil@e>', email: 'x@example.com' },
      { name: 'Ada', email: 'a>b@a' },
      { name: 'Ada', email: 'a<b@a' },
      { name: 'x>y', email: 'x@example.com' },
      { name: 'two\nlines', email: 'x@example.com' },
      { name: 'Ada', email: 'ada@example.com\ncommitter forged <f@f> 1 +0000' },
      { name: 'nul\u0000name', email: 'x@example.com' },
      { name: 'lone \ud800 surrogate', email: 'x@example.com' },
    ];
    for (const author of bad) {
      const refused = await server.call('POST', `${base}/git/commit`, { author });
      expectError(refused, 400, 'invalid_request');
      expect(refused.body.error.details.issues[0].path).toMatch(/^author\.(name|email)$/);
    }
    expect((await server.call('GET', `${base}/git/log`)).body.commits.map((c: { oid: string }) => c.oid)).toEqual([head]);
    // The working tree is untouched: the change is still there to commit with a good author.
    const good = await server.call('POST', `${base}/git/commit`, { author: { name: 'Ada Lovelace', email: 'ada@example.com' } });
    expect(good.status).toBe(201);
    // A key's label is the author name of its commits, so it follows the same rules.
    await expect(server.th.accounts.createKey('default', 'ci <bot@example.com>')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(server.th.accounts.createKey('default', 'two\nlines')).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('refuses paths holding lone surrogates instead of writing U+FFFD', async () => {
    const p = await newProject('Surrogates');
    const base = `/api/v1/projects/${p.id}`;
    await server.call('POST', `${base}/files/batch`, { files: [{ path: 'index\ufffd.html', content: 'locked page', locked: true }] });
    const twins = await server.call('POST', `${base}/files/batch`, { files: [{ path: 'u\ud800', content: '1' }, { path: 'u\udbff', content: '2' }] });
    expectError(twins, 400, 'invalid_request');
    expect(twins.body.error.details.issues.map((issue: { path: string }) => issue.path)).toEqual(['files.0.path', 'files.1.path']);
    expectError(await server.call('POST', `${base}/files/batch`, { files: [{ path: 'index\ud800.html', content: 'overwritten' }] }), 400, 'invalid_request');
    expectError(await server.call('POST', `${base}/files/batch`, { files: [], deletes: ['index\udfff.html'] }), 400, 'invalid_request');
    expectError(await server.call('POST', `${base}/files/move`, { from: 'index\ufffd.html', to: 'x\udc80' }), 400, 'invalid_request');
    expectError(await server.call('POST', '/api/v1/projects', { title: 'S', source: { kind: 'files', files: [{ path: 'a\ud800', content: '' }] } }), 400, 'invalid_request');
    const files = (await server.call('GET', `${base}/files?content=true`)).body.files;
    expect(files).toEqual([{ path: 'index\ufffd.html', size: 11, locked: true, content: 'locked page' }]);
  });
});

describe('service endpoints', () => {
  it('answers /healthz and serves an OpenAPI document built from the schemas', async () => {
    expect((await server.call('GET', '/healthz', undefined, { key: null })).body).toMatchObject({ ok: true });
    const doc = await server.call('GET', '/api/v1/openapi.json', undefined, { key: null });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toContain('/api/v1/projects/{id}/files/batch');
    expect(doc.body.paths['/api/v1/projects'].post.requestBody.content['application/json'].schema.required).toContain('title');
    // Names that are not UTF-8: path_base64 in requests and answers, and a route that takes it.
    const batchFile = doc.body.paths['/api/v1/projects/{id}/files/batch'].post.requestBody.content['application/json'].schema.properties.files.items;
    expect(Object.keys(batchFile.properties)).toEqual(expect.arrayContaining(['path', 'path_base64']));
    const move = doc.body.paths['/api/v1/projects/{id}/files/move'].post;
    expect(Object.keys(move.requestBody.content['application/json'].schema.properties)).toEqual(expect.arrayContaining(['from_base64', 'to_base64']));
    const listed = doc.body.paths['/api/v1/projects/{id}/files'].get.responses['200'].content['application/json'].schema.properties.files.items;
    expect(Object.keys(listed.properties)).toEqual(expect.arrayContaining(['path', 'path_base64']));
    expect(doc.body.paths['/api/v1/projects/{id}/file'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['path', 'path_base64']));
    expect(doc.body.paths['/api/v1/projects/{id}/file'].delete).toBeDefined();
    expectError(await server.call('GET', '/api/v1/nope'), 404, 'not_found');
  });

  it('answers a GET whose If-None-Match names its ETag with 304 and no body, as GitHub does', async () => {
    const id = (await server.call('POST', '/api/v1/projects', { title: 'Conditional' })).body.project.id;
    const first = await server.call('GET', `/api/v1/projects/${id}/files`);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[0-9a-f]{40}"$/);
    const again = await fetch(`${server.url}/api/v1/projects/${id}/files`, { headers: { authorization: `Bearer ${server.key}`, 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    // A list of tags, or the tag without W/, matches too; another tag does not.
    expect((await server.call('GET', `/api/v1/projects/${id}/files`, undefined, { headers: { 'if-none-match': `"nope", ${etag.slice(2)}` } })).status).toBe(304);
    expect((await server.call('GET', `/api/v1/projects/${id}/files`, undefined, { headers: { 'if-none-match': '"nope"' } })).status).toBe(200);
    // A change makes a new answer with a new tag; the old tag gets the whole answer.
    expect((await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'new.txt', content: 'new\n' }] })).status).toBe(200);
    const changed = await server.call('GET', `/api/v1/projects/${id}/files`, undefined, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body.files.map((file: { path: string }) => file.path)).toContain('new.txt');
    // Errors and public routes carry none.
    expect((await server.call('GET', '/api/v1/projects/prj_nope')).headers.get('etag')).toBeNull();
    expect((await fetch(`${server.url}/healthz`)).headers.get('etag')).toBeNull();
  });

  it('rate limits per key with 429 and Retry-After, and tells every charged request where its bucket stands (X-RateLimit-*)', async () => {
    const limited = await startTestServer({ limits: { requestsPerSecondPerKey: 1, requestBurstPerKey: 3 } });
    try {
      const statuses: number[] = [];
      const remaining: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 5; i++) {
        const before = Math.floor(Date.now() / 1000);
        const response = await limited.call('GET', '/api/v1/projects');
        // Bounds taken around the request: a slow machine may cross a second boundary in between.
        const after = Math.ceil(Date.now() / 1000);
        statuses.push(response.status);
        expect(response.headers.get('x-ratelimit-limit')).toBe('3');
        remaining.push(Number(response.headers.get('x-ratelimit-remaining')));
        // Full again within the seconds its missing tokens (at most the burst, 3) take at one a second.
        const reset = Number(response.headers.get('x-ratelimit-reset'));
        expect(reset).toBeGreaterThanOrEqual(before);
        expect(reset).toBeLessThanOrEqual(after + 3);
        if (response.status === 429) {
          retryAfter = response.headers.get('retry-after');
          expect(response.body.error.code).toBe('rate_limited');
        }
      }
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      expect(remaining.slice(0, 3)).toEqual([2, 1, 0]);
      expect(statuses).toContain(429);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      // The git routes charge the same bucket and say so the same way; public routes are not charged.
      const refs = await fetch(`${limited.url}/git/nope.git/info/refs?service=git-upload-pack`, { headers: { authorization: `Bearer ${limited.key}` } });
      expect(refs.headers.get('x-ratelimit-limit')).toBe('3');
      expect((await fetch(`${limited.url}/healthz`)).headers.get('x-ratelimit-limit')).toBeNull();
    } finally {
      await limited.close();
    }
  });
});
