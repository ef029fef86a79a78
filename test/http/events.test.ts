/**
 * The change feed and stream (../shared/API.md "Events and webhooks (v1.1)") on a real server: the
 * feed's paging, filters and validation, 410 once events are pruned, teams kept apart; the stream's
 * framing, new-events-only start, resumption after Last-Event-ID with no gap and no duplicate,
 * filters, heartbeat comments, and a client that stops reading being closed rather than buffered
 * without bound.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventStream } from '../support/sse.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let otherKey: string;

beforeAll(async () => {
  server = await startTestServer({
    env: { TREEHOUSE_EVENT_STREAM_HEARTBEAT_MS: '100', TREEHOUSE_EVENT_STREAM_BUFFER_BYTES_MAX: String(256 * 1024), TREEHOUSE_RATE_PER_SECOND: '10000', TREEHOUSE_RATE_BURST: '10000' },
  });
  await server.th.accounts.createTeam('other');
  otherKey = (await server.th.accounts.createKey('other', 'other')).key;
});
afterAll(async () => {
  await server?.close();
});

async function ok(method: string, path: string, body?: unknown, key?: string): Promise<any> {
  const response = await server.call(method, path, body, { key });
  expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
  return response.body;
}

async function newProject(title: string, key?: string): Promise<string> {
  return (await ok('POST', '/api/v1/projects', { title }, key)).project.id;
}

async function write(id: string, path: string, key?: string): Promise<void> {
  await ok('POST', `/api/v1/projects/${id}/files/batch`, { branch: 'main', files: [{ path, content: `${path}\n` }] }, key);
}

async function feed(query: string, key?: string): Promise<{ events: any[]; next_after: string }> {
  return ok('GET', `/api/v1/events?${query}`, undefined, key);
}

async function lastId(): Promise<string> {
  return String(await server.th.eventLog.lastId((await server.th.accounts.teamByName('default'))!.id));
}

describe('GET /api/v1/events', () => {
  it('pages through the log in id order and goes on from next_after', async () => {
    const start = await lastId();
    const id = await newProject('Paged');
    for (let index = 0; index < 5; index++) await write(id, `f${index}.txt`);
    const all = await feed(`after=${start}&limit=1000`);
    // project.created, commit.created of the initial commit, then five files.changed.
    expect(all.events.map((event) => event.type)).toEqual(['project.created', 'commit.created', ...Array(5).fill('files.changed')]);
    expect(all.events.map((event) => Number(event.id))).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => Number(start) + n));
    expect(all.next_after).toBe(all.events[6].id);
    const seen: any[] = [];
    let after = start;
    for (let pages = 0; pages < 10; pages++) {
      const page = await feed(`after=${after}&limit=2`);
      seen.push(...page.events);
      after = page.next_after;
      if (page.events.length < 2) break;
    }
    expect(seen).toEqual(all.events);
    expect(all.events[2]).toEqual({ id: all.events[2].id, type: 'files.changed', project_id: id, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), data: { branch: 'main', paths: ['f0.txt'], version: expect.any(Number) } });
    // Caught up: an empty page that keeps the cursor.
    expect(await feed(`after=${all.next_after}`)).toEqual({ events: [], next_after: all.next_after });
  });

  it('filters by project and types, and starts at the oldest kept event without after', async () => {
    const start = await lastId();
    const a = await newProject('Filter A');
    const b = await newProject('Filter B');
    await write(a, 'a.txt');
    await write(b, 'b.txt');
    await ok('POST', `/api/v1/projects/${b}/publish`);
    const ofB = await feed(`after=${start}&project=${b}`);
    expect(ofB.events.map((event) => [event.type, event.project_id])).toEqual([
      ['project.created', b],
      ['commit.created', b],
      ['files.changed', b],
      ['project.published', b],
    ]);
    const typed = await feed(`after=${start}&types=project.published,files.changed`);
    expect(typed.events.map((event) => event.type)).toEqual(['files.changed', 'files.changed', 'project.published']);
    const fromOldest = await feed('limit=1');
    expect(fromOldest.events[0].id).toBe('1');
  });

  it('refuses bad parameters with 400 and changes nothing', async () => {
    const before = await lastId();
    for (const query of ['after=-1', 'after=abc', 'after=1e3', `after=${'9'.repeat(17)}`, 'limit=0', 'limit=1001', 'limit=x', 'types=nope', 'types=files.changed,unknown', 'types=,', `types=${'a'.repeat(2000)}`]) {
      const response = await server.call('GET', `/api/v1/events?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.error.code).toBe('invalid_request');
    }
    expect((await server.call('GET', '/api/v1/events', undefined, { key: null })).status).toBe(401);
    expect(await lastId()).toBe(before);
  });

  it("keeps teams apart: a team sees only its own events, numbered on their own", async () => {
    const mine = await newProject('Mine');
    const theirs = await newProject('Theirs', otherKey);
    await write(theirs, 'x.txt', otherKey);
    const other = await feed('limit=1000', otherKey);
    expect(other.events.map((event) => [event.id, event.type, event.project_id])).toEqual([
      ['1', 'project.created', theirs],
      ['2', 'commit.created', theirs],
      ['3', 'files.changed', theirs],
    ]);
    const own = await feed('limit=1000');
    expect(own.events.some((event) => event.project_id === theirs)).toBe(false);
    expect(own.events.some((event) => event.project_id === mine)).toBe(true);
  });

  it('answers 410 events_expired for an after older than the oldest kept event', async () => {
    const team = (await server.th.accounts.teamByName('other'))!.id;
    const theirs = await newProject('Pruned', otherKey);
    const before = (await feed('limit=1000', otherKey)).events;
    // Everything so far is older than this cutoff.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const removed = await server.th.eventLog.prune(new Date());
    expect(removed).toBeGreaterThanOrEqual(before.length);
    await write(theirs, 'after-prune.txt', otherKey);
    const expired = await server.call('GET', '/api/v1/events?after=1', undefined, { key: otherKey });
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('events_expired');
    const stream = await openEventStream(server.url, otherKey, { lastEventId: '0' });
    expect(stream.status).toBe(410);
    stream.close();
    // From the last pruned id on, and without after, the feed goes on.
    const last = before[before.length - 1].id;
    const kept = await feed(`after=${last}`, otherKey);
    expect(kept.events.map((event) => event.type)).toEqual(['files.changed']);
    expect((await feed('', otherKey)).events).toEqual(kept.events);
    expect(await server.th.eventLog.lastId(team)).toBe(Number(last) + 1);
  });
});

describe('GET /api/v1/events/stream', () => {
  it('sends new events only, framed as id, event and data, then resumes after Last-Event-ID with no gap and no duplicate', async () => {
    const id = await newProject('Streamed');
    const stream = await openEventStream(server.url, server.key);
    expect(stream.status).toBe(200);
    await stream.waitForComments(1);
    await write(id, 'one.txt');
    await write(id, 'two.txt');
    const [first, second] = await stream.waitForEvents(2);
    expect(first.event).toBe('files.changed');
    expect(first.data).toEqual({ id: first.id, type: 'files.changed', project_id: id, at: expect.any(String), data: { branch: 'main', paths: ['one.txt'], version: expect.any(Number) } });
    expect(Number(second.id)).toBe(Number(first.id) + 1);
    stream.close();
    await stream.ended;

    // Written while no stream was open; one resumes after the first event.
    for (let index = 0; index < 30; index++) await write(id, `gap${index}.txt`);
    const resumed = await openEventStream(server.url, server.key, { lastEventId: first.id });
    const live = resumed.waitForEvents(32);
    await write(id, 'live.txt');
    const got = await live;
    const ids = got.map((event) => Number(event.id));
    expect(ids).toEqual(ids.map((_, index) => Number(first.id) + 1 + index));
    expect(got.map((event) => event.data.data.paths[0])).toEqual(['two.txt', ...Array.from({ length: 30 }, (_, index) => `gap${index}.txt`), 'live.txt']);
    // `after` works as Last-Event-ID does, and the header wins over it.
    const viaQuery = await openEventStream(server.url, server.key, { query: `after=${got[29].id}`, lastEventId: got[30].id });
    expect((await viaQuery.waitForEvents(1))[0].id).toBe(got[31].id);
    for (const client of [resumed, viaQuery]) client.close();
  });

  it('filters by project and types', async () => {
    const a = await newProject('Stream A');
    const b = await newProject('Stream B');
    const onlyB = await openEventStream(server.url, server.key, { query: `project=${b}&types=branch.created` });
    await onlyB.waitForComments(1);
    await write(b, 'b.txt');
    await ok('POST', `/api/v1/projects/${a}/git/branches`, { name: 'side-a' });
    await ok('POST', `/api/v1/projects/${b}/git/branches`, { name: 'side-b' });
    const [event] = await onlyB.waitForEvents(1);
    expect([event.event, event.data.project_id, event.data.data.branch]).toEqual(['branch.created', b, 'side-b']);
    // A later event proves nothing else was sent in between.
    await ok('POST', `/api/v1/projects/${b}/git/branches`, { name: 'side-b2' });
    expect((await onlyB.waitForEvents(2)).map((got) => got.data.data.branch)).toEqual(['side-b', 'side-b2']);
    onlyB.close();
  });

  it('sends a comment line while idle', async () => {
    const stream = await openEventStream(server.url, server.key);
    await stream.waitForComments(3);
    expect(stream.comments.slice(1, 3)).toEqual(['keep-alive', 'keep-alive']);
    stream.close();
  });

  it('refuses a malformed Last-Event-ID or filter with 400', async () => {
    for (const options of [{ lastEventId: 'abc' }, { lastEventId: '-5' }, { query: 'types=bogus' }, { query: 'after=1.5' }]) {
      const stream = await openEventStream(server.url, server.key, options);
      expect(stream.status, JSON.stringify(options)).toBe(400);
      stream.close();
    }
  });

  it('closes the stream of a client that stops reading instead of buffering without bound; it resumes with Last-Event-ID', async () => {
    const id = await newProject('Slow reader');
    const start = await lastId();
    const streamsBefore = server.th.eventStreams.size;
    // A raw connection that sends the request and never reads the answer.
    const port = new URL(server.url).port;
    const socket = connect(Number(port), '127.0.0.1');
    socket.pause();
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET /api/v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n\r\n`);
    for (let tries = 0; tries < 500 && server.th.eventStreams.size === streamsBefore; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.th.eventStreams.size).toBe(streamsBefore + 1);
    // Events of about 40 KiB each (long paths), until the server gives up on the reader.
    const paths = Array.from({ length: 200 }, (_, index) => `${'p'.repeat(180)}/${index}.txt`);
    let written = 0;
    for (; written < 400 && server.th.eventStreams.size > streamsBefore; written++) {
      await ok('POST', `/api/v1/projects/${id}/files/batch`, { branch: 'main', files: paths.map((path) => ({ path, content: `${written}\n` })) });
    }
    expect(server.th.eventStreams.size).toBe(streamsBefore);
    expect(written).toBeLessThan(400);
    socket.destroy();
    // Resuming, a client gets every one of them, once.
    const resumed = await openEventStream(server.url, server.key, { lastEventId: start });
    const got = await resumed.waitForEvents(written);
    expect(got.map((event) => Number(event.id))).toEqual(got.map((_, index) => Number(start) + 1 + index));
    resumed.close();
  });
});
