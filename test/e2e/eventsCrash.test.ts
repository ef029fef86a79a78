/**
 * The outbox under kill -9: a server process (as `npm start` runs it) takes writes and commits in a
 * loop and is killed with SIGKILL while one is in flight. Restarted on the same data directory, its
 * event log holds the events of exactly the acknowledged changes, in order, ids without gaps or
 * duplicates; the one change in flight at the kill may be there too (it may have committed before
 * its answer was sent), but only as the last. An event stream that resumes with Last-Event-ID sees
 * each event once, and goes on with new ones.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { killDuringRequests, startServerProcess, type ServerProcess } from '../support/process.js';
import { openEventStream } from '../support/sse.js';

const dataDir = scratchDir('treehouse-events-crash-');
const running: ServerProcess[] = [];
afterAll(async () => {
  for (const server of running) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  dataDir.remove();
});

const ENV = { TREEHOUSE_DATA_DIR: dataDir.path, TREEHOUSE_RATE_PER_SECOND: '100000', TREEHOUSE_RATE_BURST: '100000' };
/** Changes acknowledged before the kill (a count, not a time: the loop runs until it has this many). */
const ACKNOWLEDGED_BEFORE_KILL = 60;

async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

type Change = { kind: 'write'; path: string } | { kind: 'commit' };

/** The n-th change of the loop: writes, every fourth a commit of them. */
function changeAt(index: number): Change {
  return index % 4 === 3 ? { kind: 'commit' } : { kind: 'write', path: `w${index}.txt` };
}

function eventMatches(event: { type: string; data: any }, change: Change): boolean {
  return change.kind === 'write' ? event.type === 'files.changed' && event.data.paths[0] === change.path : event.type === 'commit.created' && event.data.source === 'api';
}

describe('the event log after kill -9', () => {
  it('holds the events of exactly the acknowledged changes, in order, and a resumed stream sees each once', async () => {
    const first = await startServerProcess(ENV);
    running.push(first);
    const key = (await first.waitFor(/API key for team default: (th_\S+)/))[1];
    const project = (await call(first.url, key, 'POST', '/api/v1/projects', { title: 'Crashed' })).body.project.id;

    // Killed while the loop's next request is under way.
    const acknowledged = await killDuringRequests(first, ACKNOWLEDGED_BEFORE_KILL, async (index) => {
      const change = changeAt(index);
      const answer =
        change.kind === 'write'
          ? await call(first.url, key, 'POST', `/api/v1/projects/${project}/files/batch`, { branch: 'main', files: [{ path: change.path, content: `${index}\n` }] })
          : await call(first.url, key, 'POST', `/api/v1/projects/${project}/git/commit`, { branch: 'main', message: `commit ${index}` });
      if (answer.status >= 300) throw new Error(`answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return change;
    });

    const second = await startServerProcess(ENV);
    running.push(second);
    const events: any[] = [];
    for (let after = '0'; ; ) {
      const page = (await call(second.url, key, 'GET', `/api/v1/events?after=${after}&limit=1000`)).body;
      events.push(...page.events);
      if (page.events.length < 1000) break;
      after = page.next_after;
    }
    expect(events.map((event) => Number(event.id))).toEqual(events.map((_, index) => index + 1));
    expect(events.slice(0, 2).map((event) => event.type)).toEqual(['project.created', 'commit.created']);
    const changes = events.slice(2);
    expect(changes.length === acknowledged.length || changes.length === acknowledged.length + 1).toBe(true);
    acknowledged.forEach((change, index) => expect(eventMatches(changes[index], change), `change ${index}: ${JSON.stringify(changes[index])}`).toBe(true));
    if (changes.length > acknowledged.length) expect(eventMatches(changes[acknowledged.length], changeAt(acknowledged.length))).toBe(true);

    // A stream resuming in the middle gets the rest once, then new events.
    const middle = events[Math.floor(events.length / 2)].id;
    const stream = await openEventStream(second.url, key, { lastEventId: middle });
    const rest = events.filter((event) => Number(event.id) > Number(middle));
    expect((await stream.waitForEvents(rest.length)).map((got) => got.data)).toEqual(rest);
    expect((await call(second.url, key, 'POST', `/api/v1/projects/${project}/files/batch`, { branch: 'main', files: [{ path: 'after.txt', content: 'a\n' }] })).status).toBe(200);
    const [fresh] = (await stream.waitForEvents(rest.length + 1)).slice(rest.length);
    expect(fresh.id).toBe(String(events.length + 1));
    stream.close();
    // Reconnecting after the last event seen: nothing again, the next new one once.
    const reconnected = await openEventStream(second.url, key, { lastEventId: fresh.id });
    await reconnected.waitForComments(1);
    expect((await call(second.url, key, 'POST', `/api/v1/projects/${project}/files/batch`, { branch: 'main', files: [{ path: 'again.txt', content: 'a\n' }] })).status).toBe(200);
    const [next] = await reconnected.waitForEvents(1);
    expect([next.id, next.data.data.paths]).toEqual([String(events.length + 2), ['again.txt']]);
    expect(stream.events.map((got) => got.id)).toEqual([...rest.map((event) => event.id), fresh.id]);
    reconnected.close();
    second.child.kill('SIGTERM');
    await second.exited;
  }, 120_000);
});
