/**
 * Run only in the `postgres` project of vitest.config.ts: its test servers are on PostgreSQL (a
 * fresh database each), so the suites that project repeats do run on that backend.
 */
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { applyDelta } from '../../src/git/delta.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { startTestServer, TEST_BACKEND } from '../support/server.js';

describe('the postgres test project', () => {
  it('starts its test servers on PostgreSQL, whose deflate cache gives every object a pack-ready form that rebuilds it', async () => {
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
      // The deflate cache gives every stored object a pack-ready form after the writes, off the requests.
      expect(server.th.store.packForms).toBe(true);
      await server.th.deflateCache.idle();
      expect((await server.call('GET', '/healthz')).body.deflate_backlog).toBe(0);
      expect(server.th.deflateCache.backlog).toBe(0);
      const store = server.th.store;
      expect((await store.listUndeflated!(null, 100_000)).undeflated).toEqual([]);
      // Each form rebuilds its object: whole, or as a delta on its base's body.
      const seq = (await store.read((tx) => tx.getRecord<{ seq: number }>(`project/${id}`)))!.seq;
      const checked = await store.read(async (tx) => {
        const p = tx.project(seq);
        const listed = await p.listStored!(null, 1000);
        const oids = listed.filter((entry) => entry.form).map((entry) => entry.oid);
        const [objects, forms] = await Promise.all([p.getObjects(oids), p.getDeflated!(oids)]);
        for (const [index, form] of forms.entries()) {
          const data = inflateSync(form!.deflated);
          const body = form!.delta ? applyDelta((await p.getObject(form!.delta.base))!.body, data) : data;
          expect([form!.type, form!.inflatedBytes, body.equals(objects[index]!.body)]).toEqual([objects[index]!.type, objects[index]!.body.length, true]);
        }
        return { listed: listed.filter((entry) => !entry.commit || entry.raw).length, forms: oids.length };
      });
      expect(checked.forms).toBe(checked.listed);
      expect(checked.forms).toBeGreaterThanOrEqual(6);
    } finally {
      await server.close();
    }
  });
});
