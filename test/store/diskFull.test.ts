import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/repo/listFiles.js';
import { writeFiles } from '../../src/repo/writeFiles.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { StorageFullError } from '../../src/store/types.js';
import { newTestRepo } from '../support/store.js';
import { startTestServer } from '../support/server.js';

// A real full disk: a small tmpfs mounted for this test (the test machines run as root).
const mountPoint = mkdtempSync(join(tmpdir(), 'treehouse-full-'));
const FILESYSTEM_BYTES = 48 * 1024 * 1024;
/** How long one step of the HTTP test may take (the test's own timeout is 60 s). */
const STEP_MS_MAX = 15_000;

/** Fills the file system until only `freeBytes` are left. */
function fillLeaving(freeBytes: number): void {
  const stats = statfsSync(mountPoint);
  writeFileSync(join(mountPoint, 'filler'), Buffer.alloc(Math.max(0, stats.bavail * stats.bsize - freeBytes)));
}

beforeAll(() => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${FILESYSTEM_BYTES}`, 'tmpfs', mountPoint]);
});
afterAll(() => {
  execFileSync('umount', ['-l', mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

describe('a full disk', () => {
  it('fails the write cleanly, leaves nothing partial, and works again once space is freed', async () => {
    const store = new LmdbStore({ path: join(mountPoint, 'data'), mapSizeBytes: 256 * 1024 * 1024 });
    try {
      const repo = await newTestRepo(store);
      await writeFiles(repo, { branch: 'main', files: [{ path: 'before.txt', content: 'kept' }] });
      // Leave 2 MiB free, then try to write 8 MiB.
      fillLeaving(2 * 1024 * 1024);
      const big = Array.from({ length: 8 }, (_, i) => ({ path: `big/${i}.bin`, content: Buffer.alloc(1024 * 1024, i + 1).toString('base64'), encoding: 'base64' as const }));
      let failure: unknown = null;
      try {
        await writeFiles(repo, { branch: 'main', files: big });
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(StorageFullError);
      expect((await listFiles(repo, { branch: 'main' })).map((f) => f.path)).toEqual(['before.txt']);

      rmSync(join(mountPoint, 'filler'));
      await writeFiles(repo, { branch: 'main', files: big });
      expect((await listFiles(repo, { branch: 'main' })).map((f) => f.path)).toHaveLength(9);
    } finally {
      await store.close();
    }
  });

  it('answers 503 unavailable over HTTP and nothing is written', async () => {
    // Each step under a deadline of its own: this test hung once in a few full runs under load
    // (2026-11-29) and could not be made to again, so a hang names the step it happened in.
    const steps: string[] = [];
    const step = async <T>(label: string, work: Promise<T>): Promise<T> => {
      steps.push(label);
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${STEP_MS_MAX} ms at: ${steps.join(' > ')}`)), STEP_MS_MAX);
      });
      try {
        return await Promise.race([work, deadline]);
      } finally {
        clearTimeout(timer);
      }
    };
    const server = await step('start the server', startTestServer({ dataDir: join(mountPoint, 'server') }));
    try {
      const id = (await step('create a project', server.call('POST', '/api/v1/projects', { title: 'Full' }))).body.project.id;
      fillLeaving(2 * 1024 * 1024);
      const files = Array.from({ length: 8 }, (_, i) => ({ path: `big/${i}.bin`, content: Buffer.alloc(1024 * 1024, i + 1).toString('base64'), encoding: 'base64' }));
      const refused = await step('write 8 MiB to the full disk', server.call('POST', `/api/v1/projects/${id}/files/batch`, { files }));
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('unavailable');
      expect((await step('list the files', server.call('GET', `/api/v1/projects/${id}/files`))).body.files).toEqual([]);
      rmSync(join(mountPoint, 'filler'));
      expect((await step('write them again once space is freed', server.call('POST', `/api/v1/projects/${id}/files/batch`, { files }))).status).toBe(200);
    } finally {
      await step('close the server', server.close());
    }
  });
});
