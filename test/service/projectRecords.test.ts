/**
 * Project records on a store several nodes share (PostgreSQL): each node keeps the records it read,
 * so a request costs no read of its project's record, and forgets one when any node changes it.
 * Two nodes in this process over one database, each with its own pools and listening connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import { freshDatabase } from '../support/postgres.js';
import { startTestServer, type TestServer } from '../support/server.js';

let drop: () => Promise<void>;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  const database = await freshDatabase('records');
  drop = database.drop;
  const env = { TREEHOUSE_DATABASE_URL: database.url, TREEHOUSE_SECRET: 'records-test-secret', TREEHOUSE_DATABASE_READ_CONNECTIONS: '2', TREEHOUSE_DATABASE_WRITE_CONNECTIONS: '2' };
  a = await startTestServer({ env });
  b = await startTestServer({ env });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await drop?.();
});

/** Asks `ask` until `done` holds of its answer (a signal between nodes takes milliseconds), at most 5 s. */
async function eventually<T>(ask: () => Promise<T>, done: (answer: T) => boolean): Promise<T> {
  let answer = await ask();
  for (let tries = 0; !done(answer) && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    answer = await ask();
  }
  return answer;
}

describe('project records across nodes', () => {
  it('are served from a node’s cache, and read again once another node changes or deletes them', async () => {
    const created = await a.call('POST', '/api/v1/projects', { title: 'Shared' });
    expect(created.status).toBe(201);
    const id: string = created.body.project.id;
    const path = `/api/v1/projects/${id}`;
    const title = async (server: TestServer) => (await server.call('GET', path)).body.project?.title;

    // B listens from its first look on; once it hears, what it reads it keeps.
    expect(await title(b)).toBe('Shared');
    await (b.th.store as PostgresStore).signalsReady();
    expect(await title(b)).toBe('Shared');
    // A change that signals nobody (not one the service makes) is not seen: B answers from its cache.
    await b.th.store.write(async (tx) => {
      const record = await tx.getRecord<Record<string, unknown>>(`project/${id}`);
      tx.putRecord(`project/${id}`, { ...record, title: 'Changed quietly' });
    });
    expect(await title(b)).toBe('Shared');

    // A's change reaches B; A itself reads it as written at once (its write forgot its copy).
    expect(await title(a)).toBe('Changed quietly');
    await (a.th.store as PostgresStore).signalsReady();
    expect(await title(a)).toBe('Changed quietly');
    expect((await a.call('PATCH', path, { title: 'Renamed' })).status).toBe(200);
    expect(await title(a)).toBe('Renamed');
    expect(await eventually(() => title(b), (seen) => seen === 'Renamed')).toBe('Renamed');

    // A delete through A: B answers 404, and refuses a write, once it has heard.
    expect((await a.call('DELETE', path)).status).toBe(200);
    expect((await a.call('GET', path)).status).toBe(404);
    expect(await eventually(async () => (await b.call('GET', path)).status, (status) => status === 404)).toBe(404);
    const write = await b.call('POST', `${path}/files/batch`, { files: [{ path: 'late.txt', content: 'too late' }] });
    expect(write.status).toBe(404);
  });
});
