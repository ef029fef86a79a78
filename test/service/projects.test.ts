/**
 * Project numbers whose data belongs to no project (a deleted project being dropped, a seed's
 * reservation): dropped a write at a time, and finished at the next start after a crash.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';

describe('unowned project data', () => {
  it('is dropped when the service starts, as after a crash in the middle of a delete', async () => {
    const first = await startTestServer();
    const { th, dataDir } = first;
    // What a crash leaves: the project's records gone, its data still there, its number marked unowned.
    const seq = await th.projects.reserveSeq();
    await th.store.write(async (tx) => {
      for (let i = 0; i < 5_000; i++) tx.project(seq).putObject('blob', Buffer.from(`left behind ${i}`));
    });
    await first.app.close();
    await th.stop();
    await th.close();

    const second = await startTestServer({ dataDir });
    try {
      const unowned = () => second.th.store.read(async (tx) => tx.listRecords('project-unowned/'));
      for (let tries = 0; tries < 100 && (await unowned()).length > 0; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(await unowned()).toEqual([]);
      expect(await second.th.store.read((tx) => tx.project(seq).findObjectsByPrefix('', 1))).toEqual([]);
      // Numbers are never given out twice: the next project gets a new one.
      expect(await second.th.projects.reserveSeq()).toBe(seq + 1);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
