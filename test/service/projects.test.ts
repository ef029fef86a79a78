/**
 * Project numbers whose data belongs to no project (a deleted project being dropped, a seed's
 * reservation): dropped a write at a time, and finished at the next start after a crash; a
 * reservation young enough to be a seed still under way (on another node) is kept.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';

describe('unowned project data', () => {
  it('is dropped when the service starts, as after a crash in the middle of a delete, or of a seed long ago; a fresh reservation is kept', async () => {
    const first = await startTestServer();
    const { th, dataDir } = first;
    const leaveData = (seq: number) =>
      th.store.write(async (tx) => {
        for (let i = 0; i < 5_000; i++) tx.project(seq).putObject('blob', Buffer.from(`left behind ${i}`));
      });
    // What a crash leaves in the middle of a delete: the project's records gone, its data still
    // there, its number marked unowned with the time of the delete.
    const deleted = await th.projects.reserveSeq();
    await leaveData(deleted);
    await th.store.write(async (tx) => tx.putRecord(`project-unowned/${deleted}`, new Date().toISOString()));
    // A seed's reservation two hours old: its seed died with its node.
    const abandoned = await th.projects.reserveSeq();
    await leaveData(abandoned);
    await th.store.write(async (tx) => tx.putRecord(`project-unowned/${abandoned}`, { reserved_at: new Date(Date.now() - 2 * 60 * 60_000).toISOString() }));
    // A seed's reservation made now: a seed under way, perhaps on another node.
    const seeding = await th.projects.reserveSeq();
    await th.store.write(async (tx) => tx.project(seeding).putObject('blob', Buffer.from('being seeded')));
    await first.app.close();
    await th.stop();
    await th.close();

    const second = await startTestServer({ dataDir });
    try {
      const unowned = async () => (await second.th.store.read(async (tx) => tx.listRecords('project-unowned/'))).map(({ key }) => key);
      for (let tries = 0; tries < 100 && (await unowned()).length > 1; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await unowned()).toEqual([`project-unowned/${seeding}`]);
      for (const seq of [deleted, abandoned]) expect(await second.th.store.read((tx) => tx.project(seq).findObjectsByPrefix('', 1))).toEqual([]);
      expect(await second.th.store.read((tx) => tx.project(seeding).findObjectsByPrefix('', 1))).toHaveLength(1);
      // Numbers are never given out twice: the next project gets a new one.
      expect(await second.th.projects.reserveSeq()).toBe(seeding + 1);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
