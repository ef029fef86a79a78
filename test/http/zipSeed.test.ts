import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { makeZip, type ZipEntryInput } from '../support/zip.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ limits: { zipUnpackedBytesMax: 100_000, zipEntriesMax: 10 } });
});
afterAll(() => server.close());

function createFromZip(entries: ZipEntryInput[]) {
  return server.call('POST', '/api/v1/projects', { title: 'Zip', source: { kind: 'zip', data: makeZip(entries).toString('base64') } });
}

describe('zip seeds', () => {
  it('unpacks files, strips one shared top folder, keeps the executable bit', async () => {
    const created = await createFromZip([
      { name: 'site/', mode: 0o040755 },
      { name: 'site/index.html', data: '<h1>zip</h1>', deflate: true },
      { name: 'site/bin/run.sh', data: '#!/bin/sh\n', mode: 0o100755 },
    ]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.project.id;
    const files = await server.call('GET', `/api/v1/projects/${id}/files?content=true`);
    expect(files.body.files).toEqual([
      { path: 'bin/run.sh', size: 10, locked: false, content: '#!/bin/sh\n' },
      { path: 'index.html', size: 12, locked: false, content: '<h1>zip</h1>' },
    ]);
    expect(created.body.project.framework).toBe('static');
  });

  it.each([
    ['zip-slip', [{ name: '../evil.txt', data: 'x' }]],
    ['absolute path', [{ name: '/etc/passwd', data: 'x' }]],
    ['.git entry', [{ name: '.git/config', data: 'x' }]],
    ['symbolic link', [{ name: 'link', data: '/etc/passwd', mode: 0o120777 }]],
    ['too many entries', Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, data: '' }))],
    ['a declared size over the limit', [{ name: 'big', data: 'x', declaredSize: 200_000 }]],
    ['a deflate bomb', [{ name: 'bomb', data: Buffer.alloc(150_000), deflate: true }]],
    ['a size that lies', [{ name: 'liar', data: Buffer.alloc(5000), deflate: true, declaredSize: 10 }]],
  ] as Array<[string, ZipEntryInput[]]>)('refuses %s with 400 and creates nothing', async (_label, entries) => {
    const before = (await server.call('GET', '/api/v1/projects')).body.projects.length;
    const response = await createFromZip(entries);
    expect(response.status, JSON.stringify(response.body)).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect((await server.call('GET', '/api/v1/projects')).body.projects.length).toBe(before);
  });

  it('refuses data that is not a zip archive', async () => {
    const response = await server.call('POST', '/api/v1/projects', { title: 'Zip', source: { kind: 'zip', data: Buffer.from('not a zip').toString('base64') } });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
  });
});
