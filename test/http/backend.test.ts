/**
 * Run only in the `postgres` project of vitest.config.ts: its test servers are on PostgreSQL (a
 * fresh database each), so the suites that project repeats do run on that backend.
 */
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { startTestServer, TEST_BACKEND } from '../support/server.js';

describe('the postgres test project', () => {
  it('starts its test servers on PostgreSQL, which keeps no pack-ready forms and lets nothing pile up for the deflate cache', async () => {
    expect(TEST_BACKEND).toBe('postgres');
    const server = await startTestServer();
    try {
      expect(server.th.store).toBeInstanceOf(PostgresStore);
      expect(server.th.config.databaseUrl).toMatch(/^postgres:\/\//);
      const created = await server.call('POST', '/api/v1/projects', { title: 'Backend', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
      expect(created.status).toBe(201);
      const id = created.body.project.id;
      expect((await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'b.txt', content: 'b\n' }] })).status).toBe(200);
      expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'b' })).status).toBe(201);
      // The deflate cache stays off on a store without pack-ready forms.
      expect(server.th.store.packForms).toBe(false);
      expect((await server.call('GET', '/healthz')).body.deflate_backlog).toBe(0);
      expect(server.th.deflateCache.backlog).toBe(0);
    } finally {
      await server.close();
    }
  });
});
