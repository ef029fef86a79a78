/**
 * A broken invariant (src/errors.ts MissingObjectError): a stored object that a working tree or a
 * commit names is gone. The client gets the contract's `internal` envelope, which names nothing of
 * the store; the server's log line names the object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashObject } from '../../src/git/oid.js';
import { buildApp } from '../../src/http/app.js';
import { scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

const dir = scratchDir('treehouse-internal-');
let server: TestServer;
afterAll(async () => {
  await server?.close();
  dir.remove();
});

describe('a stored object that is gone', () => {
  let id = '';
  const content = 'kept until the test removes it\n';
  const blob = hashObject('blob', Buffer.from(content));

  beforeAll(async () => {
    // Written and committed, then removed from the store, and read by a server started afterwards
    // (nothing of it in a cache).
    const writer = await startTestServer({ dataDir: dir.path });
    id = (await writer.call('POST', '/api/v1/projects', { title: 'Broken' })).body.project.id;
    expect((await writer.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'a.txt', content }] })).status).toBe(200);
    expect((await writer.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'One file' })).status).toBe(201);
    const record = (await writer.th.projects.byId(id))!;
    await writer.th.store.write(async (tx) => tx.project(record.seq).removeStored!([blob]));
    await writer.app.close();
    await writer.th.stop();
    await writer.th.close();
    server = await startTestServer({ dataDir: dir.path });
  });

  it('is answered 500 internal with the contract envelope, and the log line names the object', async () => {
    const lines: string[] = [];
    const app = buildApp(server.th, { logLevel: 'error', logStream: { write: (line) => lines.push(line) } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as { port: number };
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/projects/${id}/files/a.txt`, { headers: { authorization: `Bearer ${server.key}` } });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: { code: 'internal', message: 'Internal error.' } });
      const logged = lines.map((line) => JSON.parse(line));
      expect(logged).toHaveLength(1);
      expect(logged[0].err.type).toBe('MissingObjectError');
      expect(logged[0].err.message).toBe(`blob ${blob.toString('hex')} is missing`);
      // Other files of the project still answer.
      expect((await server.call('GET', `/api/v1/projects/${id}/files`)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
