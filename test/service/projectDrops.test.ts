/**
 * A project's DELETE is answered once the project is gone from every read; its stored data is
 * freed after the answer, in the background, and what a stop leaves is finished at the next start.
 * One stored entry per write (TREEHOUSE_DROP_KEYS_PER_WRITE=1), so a drop of a few hundred files
 * takes hundreds of writes and is still under way when the answer arrives.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

const SLOW_DROPS = { TREEHOUSE_DROP_KEYS_PER_WRITE: '1' };

async function projectWithFiles(server: TestServer, handle: string, files: number): Promise<{ id: string; seq: number }> {
  const created = await server.call('POST', '/api/v1/projects', { title: handle, handle });
  expect(created.status).toBe(201);
  const id: string = created.body.project.id;
  const batch = Array.from({ length: files }, (_, i) => ({ path: `src/file${i}.txt`, content: `file ${i} of ${handle}\n` }));
  expect((await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: batch })).status).toBe(200);
  expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'files' })).status).toBe(201);
  const record = await server.th.store.read((tx) => tx.getRecord<{ seq: number }>(`project/${id}`));
  return { id, seq: record!.seq };
}

const storedObjects = (server: TestServer, seq: number) => server.th.store.read((tx) => tx.project(seq).findObjectsByPrefix('', 1));
const unownedKeys = async (server: TestServer) => (await server.th.store.read((tx) => tx.listRecords('project-unowned/'))).map(({ key }) => key);

describe('deleting a project', () => {
  it('answers before the data is freed, frees it in the background, and gives the handle back at once', async () => {
    const server = await startTestServer({ env: SLOW_DROPS });
    try {
      const kept = await projectWithFiles(server, 'kept', 20);
      const doomed = await projectWithFiles(server, 'doomed', 300);

      const deleted = await server.call('DELETE', `/api/v1/projects/${doomed.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ deleted: doomed.id });
      // Gone from every read at once; its data is still being dropped.
      expect((await server.call('GET', `/api/v1/projects/${doomed.id}`)).status).toBe(404);
      expect((await server.call('GET', '/healthz', undefined, { key: null })).body.drop_backlog).toBe(1);
      expect(await storedObjects(server, doomed.seq)).toHaveLength(1);
      expect(await unownedKeys(server)).toEqual([`project-unowned/${doomed.seq}`]);
      // The handle is free for a new project, whose data lives under a number of its own.
      const again = await projectWithFiles(server, 'doomed', 3);
      expect(again.seq).not.toBe(doomed.seq);

      await server.th.projects.drops.idle();
      expect((await server.call('GET', '/healthz', undefined, { key: null })).body.drop_backlog).toBe(0);
      expect(await storedObjects(server, doomed.seq)).toEqual([]);
      expect(await unownedKeys(server)).toEqual([]);
      // Nothing of the others went with it.
      for (const [project, count] of [
        [kept, 20],
        [again, 3],
      ] as const) {
        const listing = await server.call('GET', `/api/v1/projects/${project.id}/files`);
        expect(listing.status).toBe(200);
        expect(listing.body.files).toHaveLength(count);
      }
    } finally {
      await server.close();
    }
  });

  it('takes up, without a restart, a drop another node left (a deleted project marked a sweep ago), and keeps a seed’s fresh reservation', async () => {
    const server = await startTestServer({ env: { TREEHOUSE_DROP_SWEEP_SECONDS: '1' } });
    try {
      const { th } = server;
      // What a node that died mid-drop leaves: the records gone, the data there, the number marked.
      const left = await th.projects.reserveSeq();
      await th.store.write(async (tx) => {
        for (let i = 0; i < 500; i++) tx.project(left).putObject('blob', Buffer.from(`left by another node ${i}`));
        tx.putRecord(`project-unowned/${left}`, new Date(Date.now() - 5_000).toISOString());
      });
      const seeding = await th.projects.reserveSeq();
      await th.store.write(async (tx) => tx.project(seeding).putObject('blob', Buffer.from('being seeded')));
      expect(th.projects.drops.backlog).toBe(0);
      for (let tries = 0; tries < 200 && (await unownedKeys(server)).length > 1; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await unownedKeys(server)).toEqual([`project-unowned/${seeding}`]);
      expect(await storedObjects(server, left)).toEqual([]);
      expect(await storedObjects(server, seeding)).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('leaves what a stop interrupts for the next start, which finishes it', async () => {
    const first = await startTestServer({ env: SLOW_DROPS });
    const { dataDir } = first;
    const doomed = await projectWithFiles(first, 'doomed', 300);
    expect((await first.call('DELETE', `/api/v1/projects/${doomed.id}`)).status).toBe(200);
    // Stopped after the write under way (the service's stop does this first): most of the data is
    // left, still marked unowned.
    await first.th.projects.drops.stop();
    expect(first.th.projects.drops.backlog).toBe(0);
    expect(await storedObjects(first, doomed.seq)).toHaveLength(1);
    expect(await unownedKeys(first)).toEqual([`project-unowned/${doomed.seq}`]);
    await first.app.close();
    await first.th.stop();
    await first.th.close();

    const second = await startTestServer({ dataDir, env: SLOW_DROPS });
    try {
      for (let tries = 0; tries < 600 && (await unownedKeys(second)).length > 0; tries++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await unownedKeys(second)).toEqual([]);
      expect(await storedObjects(second, doomed.seq)).toEqual([]);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
