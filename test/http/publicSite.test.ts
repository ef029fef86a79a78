import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sitePath } from '../../src/http/publicSite.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A request with the path sent exactly as written (fetch would normalise "..", "%2e%2e" and "\\"). */
function raw(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawResponse> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: hostname, port, path, method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

async function publishedProject(handle: string, extra: Array<{ path: string; content: string; encoding?: string }> = []) {
  const created = await server.call('POST', '/api/v1/projects', {
    title: handle,
    handle,
    source: {
      kind: 'files',
      files: [
        { path: 'index.html', content: '<h1>Home</h1>\n' },
        { path: 'styles.css', content: 'body { color: green; }\n' },
        { path: 'app.js', content: 'console.log("hi");\n' },
        { path: 'data.json', content: '{"a":1}\n' },
        { path: 'notes.txt', content: 'plain\n' },
        { path: 'img/logo.png', content: PNG.toString('base64'), encoding: 'base64' },
        { path: 'img/icon.svg', content: '<svg xmlns="http://www.w3.org/2000/svg"/>\n' },
        { path: 'fonts/a.woff2', content: 'woff2' },
        { path: 'blob.xyz', content: 'x' },
        { path: 'LICENSE', content: 'MIT\n' },
        { path: 'docs/index.html', content: '<h1>Docs</h1>\n' },
        { path: 'docs/guide.html', content: '<h1>Guide</h1>\n' },
        { path: 'empty-dir/readme.md', content: '# no index here\n' },
        ...extra,
      ],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.project.id as string;
  const published = await server.call('POST', `/api/v1/projects/${id}/publish`);
  expect(published.body.url).toBe(`${server.url}/p/${handle}/`);
  return id;
}

async function blobId(id: string, path: string): Promise<string> {
  const file = await server.call('GET', `/api/v1/projects/${id}/files/${path}`);
  return file.body.oid;
}

describe('public site', () => {
  it('serves files with their content type and no API key', async () => {
    const deep = `${'a-long-directory-name/'.repeat(12)}deep.txt`;
    await publishedProject('site-types', [{ path: deep, content: 'deep\n' }]);
    const expected: Array<[string, string]> = [
      ['index.html', 'text/html; charset=utf-8'],
      ['styles.css', 'text/css; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
      ['data.json', 'application/json; charset=utf-8'],
      ['notes.txt', 'text/plain; charset=utf-8'],
      ['img/logo.png', 'image/png'],
      ['img/icon.svg', 'image/svg+xml; charset=utf-8'],
      ['fonts/a.woff2', 'font/woff2'],
      ['blob.xyz', 'application/octet-stream'],
      ['LICENSE', 'application/octet-stream'],
    ];
    for (const [path, type] of expected) {
      const response = await raw(`/p/site-types/${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers['content-type'], path).toBe(type);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
    }
    expect((await raw('/p/site-types/img/logo.png')).body.equals(PNG)).toBe(true);
    // Paths longer than the router's parameter limit are served too.
    expect((await raw(`/p/site-types/${deep}`)).body.toString()).toBe('deep\n');
    expect((await raw('/p/site-types/styles.css', { authorization: 'Bearer not-a-key' })).status).toBe(200);
    const head = await raw('/p/site-types/styles.css', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
  });

  it('answers index.html for a directory and redirects to the trailing slash', async () => {
    await publishedProject('site-index');
    const root = await raw('/p/site-index/');
    expect(root.status).toBe(200);
    expect(root.body.toString()).toBe('<h1>Home</h1>\n');
    const bare = await raw('/p/site-index?x=1');
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('site-index/?x=1');
    expect(new URL(bare.headers.location as string, `${server.url}/p/site-index?x=1`).pathname).toBe('/p/site-index/');
    const docs = await raw('/p/site-index/docs');
    expect(docs.status).toBe(301);
    expect(docs.headers.location).toBe('docs/');
    expect((await raw('/p/site-index/docs/')).body.toString()).toBe('<h1>Docs</h1>\n');
    expect((await raw('/p/site-index/docs/guide.html')).body.toString()).toBe('<h1>Guide</h1>\n');
    // A directory without index.html has no listing.
    expect((await raw('/p/site-index/empty-dir/')).status).toBe(404);
    expect((await raw('/p/site-index/missing.html')).status).toBe(404);
    expect((await raw('/p/site-index/index.html/')).status).toBe(404);
  });

  it('uses the blob id as ETag and answers 304 to a matching If-None-Match', async () => {
    const id = await publishedProject('site-etag');
    const oid = await blobId(id, 'styles.css');
    const first = await raw('/p/site-etag/styles.css');
    expect(first.headers.etag).toBe(`"${oid}"`);
    for (const header of [`"${oid}"`, `W/"${oid}"`, `"other", "${oid}"`, '*']) {
      const again = await raw('/p/site-etag/styles.css', { 'if-none-match': header });
      expect(again.status, header).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(`"${oid}"`);
    }
    expect((await raw('/p/site-etag/styles.css', { 'if-none-match': '"0000"' })).status).toBe(200);
    // The directory index has its own file's ETag.
    expect((await raw('/p/site-etag/', { 'if-none-match': `"${await blobId(id, 'index.html')}"` })).status).toBe(304);
  });

  it('never leaves the project: dot segments, encoded slashes, backslashes and NUL', async () => {
    await publishedProject('site-escape');
    await publishedProject('site-neighbour');
    const refused: Array<[string, number]> = [
      ['/p/site-escape/../site-neighbour/index.html', 404],
      ['/p/site-escape/docs/../index.html', 404],
      ['/p/site-escape/%2e%2e/site-neighbour/index.html', 404],
      ['/p/site-escape/%2E%2E/%2e%2e/etc/passwd', 404],
      ['/p/site-escape/docs/..%2findex.html', 404],
      ['/p/site-escape/docs%2fguide.html', 404],
      ['/p/site-escape/..%5c..%5cetc%5cpasswd', 404],
      ['/p/site-escape/docs\\guide.html', 404],
      ['/p/site-escape/index.html%00.txt', 404],
      ['/p/site-escape/./index.html', 404],
      ['/p/site-escape/docs//guide.html', 404],
      ['/p/site-escape/%zz', 400],
      ['/p/..%2fsite-neighbour/index.html', 404],
    ];
    for (const [path, status] of refused) {
      const response = await raw(path);
      expect(response.status, path).toBe(status);
      expect(response.body.toString(), path).not.toContain('<h1>');
    }
  });

  it('serves the committed version of main, not the working tree', async () => {
    const id = await publishedProject('site-commits');
    const before = await raw('/p/site-commits/');
    await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'index.html', content: '<h1>Draft</h1>\n' }, { path: 'new.html', content: 'new\n' }] });
    const draft = await raw('/p/site-commits/');
    expect(draft.body.toString()).toBe('<h1>Home</h1>\n');
    expect(draft.headers.etag).toBe(before.headers.etag);
    expect((await raw('/p/site-commits/new.html')).status).toBe(404);
    // Other branches are never served either.
    await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'preview', from: 'main' });
    expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'Publish draft' })).status).toBe(201);
    const after = await raw('/p/site-commits/', { 'if-none-match': before.headers.etag as string });
    expect(after.status).toBe(200);
    expect(after.body.toString()).toBe('<h1>Draft</h1>\n');
    expect(after.headers.etag).toBe(`"${await blobId(id, 'index.html')}"`);
    expect((await raw('/p/site-commits/new.html')).status).toBe(200);
  });

  it('is a 404 at once for unknown and unpublished handles, and follows a handle change', async () => {
    expect((await raw('/p/no-such-handle/')).status).toBe(404);
    expect((await raw('/p/no-such-handle')).status).toBe(404);
    expect((await raw('/p/NOT_A_HANDLE/')).status).toBe(404);
    expect((await raw('/p/')).status).toBe(404);
    const created = await server.call('POST', '/api/v1/projects', { title: 'Private', handle: 'site-private', source: { kind: 'files', files: [{ path: 'index.html', content: 'secret\n' }] } });
    const id = created.body.project.id;
    expect((await raw('/p/site-private/')).status).toBe(404);
    expect((await raw('/p/site-private')).status).toBe(404);
    await server.call('POST', `/api/v1/projects/${id}/publish`);
    expect((await raw('/p/site-private/')).body.toString()).toBe('secret\n');
    await server.call('PATCH', `/api/v1/projects/${id}`, { handle: 'site-renamed' });
    expect((await raw('/p/site-private/')).status).toBe(404);
    expect((await raw('/p/site-renamed/')).status).toBe(200);
    await server.call('POST', `/api/v1/projects/${id}/unpublish`);
    const gone = await raw('/p/site-renamed/');
    expect(gone.status).toBe(404);
    expect(gone.body.toString()).not.toContain('secret');
  });

  it("answers a published project's missing files with its own 404.html", async () => {
    await publishedProject('site-custom-404', [{ path: '404.html', content: '<h1>Lost</h1>\n' }]);
    const missing = await raw('/p/site-custom-404/nowhere');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(missing.body.toString()).toBe('<h1>Lost</h1>\n');
  });
});

describe('sitePath', () => {
  it('decodes escapes to bytes, so a name that is not UTF-8 keeps them', () => {
    expect(sitePath('caf%E9.html')).toEqual({ kind: 'path', path: 'caf\udce9.html', directory: false });
    expect(sitePath('caf%C3%A9/')).toEqual({ kind: 'path', path: 'caf\u00e9', directory: true });
    expect(sitePath('%ED%A0%80')).toEqual({ kind: 'path', path: '\udced\udca0\udc80', directory: false });
    expect(sitePath('a/%zz')).toEqual({ kind: 'bad', status: 400 });
    expect(sitePath('a%2F..')).toEqual({ kind: 'bad', status: 404 });
  });
});
