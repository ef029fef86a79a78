/**
 * Idempotency-Key under kill -9: a server process (as `npm start` runs it) takes writes and commits,
 * each with a key of its own, and is killed with SIGKILL while one is in flight. Restarted on the
 * same data directory, every request sent again with its key gets the answer it got before
 * (`Idempotent-Replayed: true`); the one in flight at the kill either replays (it committed before
 * the kill) or runs now (it never committed). Either way each change is made exactly once: each
 * file's write has one event and each commit message is in the history once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { killDuringRequests, startServerProcess, type ServerProcess } from '../support/process.js';

const dataDir = scratchDir('treehouse-idempotency-crash-');
const running: ServerProcess[] = [];
afterAll(async () => {
  for (const server of running) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  dataDir.remove();
});

const ENV = { TREEHOUSE_DATA_DIR: dataDir.path, TREEHOUSE_RATE_PER_SECOND: '100000', TREEHOUSE_RATE_BURST: '100000' };
/** Changes acknowledged before the kill (a count, not a time: the loop runs until it has this many). */
const ACKNOWLEDGED_BEFORE_KILL = 60;

interface Answer {
  status: number;
  body: any;
  replayed: string | null;
}

async function call(base: string, key: string, method: string, path: string, body?: unknown, idempotencyKey?: string): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json(), replayed: response.headers.get('idempotent-replayed') };
}

/** The n-th request of the loop, with its key: writes, every fourth a commit of them. */
function requestAt(project: string, index: number): { path: string; body: unknown; key: string } {
  const key = `crash-${index}`;
  if (index % 4 === 3) return { path: `/api/v1/projects/${project}/git/commit`, body: { branch: 'main', message: `commit ${index}` }, key };
  return { path: `/api/v1/projects/${project}/files/batch`, body: { branch: 'main', files: [{ path: `w${index}.txt`, content: `${index}\n` }] }, key };
}

describe('Idempotency-Key after kill -9', () => {
  it('replays every acknowledged answer, and the request in flight at the kill takes effect at most once', async () => {
    const first = await startServerProcess(ENV);
    running.push(first);
    const key = (await first.waitFor(/API key for team default: (th_\S+)/))[1];
    const project = (await call(first.url, key, 'POST', '/api/v1/projects', { title: 'Crashed with keys' })).body.project.id;

    // Killed while the loop's next request is under way.
    const acknowledged = await killDuringRequests(first, ACKNOWLEDGED_BEFORE_KILL, async (index) => {
      const request = requestAt(project, index);
      const answer = await call(first.url, key, 'POST', request.path, request.body, request.key);
      if (answer.status >= 300 || answer.replayed !== null) throw new Error(`answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer;
    });

    const second = await startServerProcess(ENV);
    running.push(second);
    const inFlight = acknowledged.length;
    for (let index = 0; index < inFlight; index++) {
      const request = requestAt(project, index);
      const again = await call(second.url, key, 'POST', request.path, request.body, request.key);
      expect([index, again.status, again.body, again.replayed]).toEqual([index, acknowledged[index].status, acknowledged[index].body, 'true']);
    }
    const pending = requestAt(project, inFlight);
    const retried = await call(second.url, key, 'POST', pending.path, pending.body, pending.key);
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    expect(retried.replayed === 'true' || retried.replayed === null).toBe(true);
    // And from now on it replays, whichever way it went.
    const thrice = await call(second.url, key, 'POST', pending.path, pending.body, pending.key);
    expect([thrice.status, thrice.body, thrice.replayed]).toEqual([retried.status, retried.body, 'true']);

    const events: any[] = [];
    for (let after = '0'; ;) {
      const page = (await call(second.url, key, 'GET', `/api/v1/events?after=${after}&limit=1000`)).body;
      events.push(...page.events);
      if (page.events.length < 1000) break;
      after = page.next_after;
    }
    const written = events.filter((event) => event.type === 'files.changed').map((event) => event.data.paths[0]);
    const writes = Array.from({ length: inFlight + 1 }, (_, index) => index).filter((index) => index % 4 !== 3);
    expect(written).toEqual(writes.map((index) => `w${index}.txt`));
    const { commits } = (await call(second.url, key, 'GET', `/api/v1/projects/${project}/git/log?limit=200`)).body;
    const commitIndexes = Array.from({ length: inFlight + 1 }, (_, index) => index).filter((index) => index % 4 === 3);
    expect(commits.map((commit: { message: string }) => commit.message).reverse()).toEqual([
      'Initial commit',
      ...commitIndexes.map((index) => `commit ${index}`),
    ]);
    second.child.kill('SIGTERM');
    await second.exited;
  }, 120_000);
});
