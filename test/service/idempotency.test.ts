/**
 * The Idempotency service (src/service/idempotency.ts) over a real server's store: what HTTP alone
 * cannot time. Two nodes of one store (two services, each with its own in-memory map of running
 * keys) that both pass the lookup make one effect: the record check inside the effect's transaction
 * rolls the second back and it replays the first's answer. Work after a committed effect that fails
 * still answers the kept answer; a write that keeps its answer nowhere is a fault; fingerprints
 * cover every byte; pruning removes exactly the expired records, in batches.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/service/accounts.js';
import { Idempotency, requestFingerprint, type IdempotentRequest } from '../../src/service/idempotency.js';
import { loadSecret, Sealer } from '../../src/service/secrets.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let principal: Principal;
beforeAll(async () => {
  server = await startTestServer();
  principal = (await server.th.accounts.authenticate(server.key))!;
});
afterAll(() => server.close());

let keyCount = 0;

async function newProject(title: string): Promise<string> {
  const created = await server.call('POST', '/api/v1/projects', { title });
  const id = created.body.project.id;
  await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'a.txt', content: `${title}\n` }] });
  return id;
}

async function request(body: string): Promise<IdempotentRequest> {
  return { keyId: principal.keyId, key: `service-key-${++keyCount}`, fingerprint: await requestFingerprint('POST', '/api/v1/x', Buffer.from(body)) };
}

async function messages(id: string): Promise<string[]> {
  return (await server.call('GET', `/api/v1/projects/${id}/git/log?limit=200`)).body.commits.map((commit: { message: string }) => commit.message);
}

const commitAnswer = (result: { created: boolean }) => ({ status: result.created ? 201 : 200, body: { commit: result } });

describe('two nodes of one store', () => {
  it('both past the lookup with one key: one effect, and the other node replays its answer', async () => {
    const id = await newProject('Two nodes');
    const otherNode = new Idempotency(server.th.store, new Sealer(loadSecret(server.dataDir, undefined)), server.th.config.idempotency);
    const nodes = [server.th.idempotency, otherNode];
    const raced = await request('{"message":"raced"}');
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let claimed = 0;
    let bothClaimed!: () => void;
    const claims = new Promise<void>((resolve) => (bothClaimed = resolve));
    const outcomes = nodes.map((node) =>
      node.answer(raced, {
        run: async (join) => {
          // Both nodes looked and found nothing before either makes its change.
          if (++claimed === nodes.length) bothClaimed();
          await gate;
          return server.th.workspace.commit(principal, id, { branch: 'main', message: 'raced' }, join);
        },
        render: commitAnswer,
        readOnly: false,
      }),
    );
    await claims;
    expect([server.th.idempotency.runningCount, otherNode.runningCount]).toEqual([1, 1]);
    open();
    const answered = await Promise.all(outcomes);
    expect(answered.map((outcome) => outcome.replayed).sort()).toEqual([false, true]);
    expect(answered[1].json).toBe(answered[0].json);
    expect(answered[0].status).toBe(201);
    expect((await messages(id)).filter((message) => message === 'raced')).toHaveLength(1);
    // Either node now replays it from the store.
    for (const node of nodes)
      expect(await node.answer(raced, { run: () => Promise.reject(new Error('must not run')), render: commitAnswer, readOnly: false })).toEqual({
        ...answered[0],
        replayed: true,
      });
  });
});

describe('answers', () => {
  it('are the effect’s, kept with it, when work after the effect fails', async () => {
    const id = await newProject('Later failure');
    const once = await request('{"later":"failure"}');
    const later = new Error('framework detection failed');
    const outcome = await server.th.idempotency.answer(once, {
      run: async (join) => {
        await server.th.workspace.commit(principal, id, { branch: 'main', message: 'then a failure' }, join);
        throw later;
      },
      render: commitAnswer,
      readOnly: false,
    });
    expect([outcome.status, outcome.replayed, outcome.failedAfterEffect]).toEqual([201, false, later]);
    const replay = await server.th.idempotency.answer(once, { run: () => Promise.reject(new Error('must not run')), render: commitAnswer, readOnly: false });
    expect([replay.json, replay.replayed]).toEqual([outcome.json, true]);
  });

  it('must be kept by a change: a write that joins none, or answers from another value, is a fault', async () => {
    const id = await newProject('Faults');
    const unjoined = await request('{"unjoined":1}');
    await expect(
      server.th.idempotency.answer(unjoined, {
        run: () => server.th.workspace.commit(principal, id, { branch: 'main', message: 'unjoined' }),
        render: commitAnswer,
        readOnly: false,
      }),
    ).rejects.toThrow(/made no change that kept its answer/);
    await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'b.txt', content: 'b\n' }] });
    const copied = await request('{"copied":1}');
    await expect(
      server.th.idempotency.answer(copied, {
        run: async (join) => ({ ...(await server.th.workspace.commit(principal, id, { branch: 'main', message: 'copied' }, join)) }),
        render: commitAnswer,
        readOnly: false,
      }),
    ).rejects.toThrow(/another value than the request's result/);
  });

  it('are not kept for a read-only request over the cap; one under it is kept in a write of its own', async () => {
    const small = await request('{"small":1}');
    const big = await request('{"big":1}');
    const run = async () => 'x'.repeat(2 * 1024 * 1024);
    const first = await server.th.idempotency.answer(big, { run, render: (text) => ({ status: 200, body: { text } }), readOnly: true });
    const second = await server.th.idempotency.answer(big, { run, render: (text) => ({ status: 200, body: { text } }), readOnly: true });
    expect([first.replayed, second.replayed, second.json === first.json]).toEqual([false, false, true]);
    const kept = await server.th.idempotency.answer(small, { run: async () => 'small', render: (text) => ({ status: 200, body: { text } }), readOnly: true });
    const replayed = await server.th.idempotency.answer(small, {
      run: () => Promise.reject(new Error('must not run')),
      render: (text: string) => ({ status: 200, body: { text } }),
      readOnly: true,
    });
    expect([kept.replayed, replayed.replayed, replayed.json]).toEqual([false, true, kept.json]);
  });
});

describe('fingerprints', () => {
  it('are SHA-256 of method, URL and every byte of the body, hashed in slices', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    body[body.length - 1] = 9;
    const whole = createHash('sha256').update('POST\0/api/v1/u?a=1\0').update(body).digest('hex');
    expect(await requestFingerprint('POST', '/api/v1/u?a=1', body)).toBe(whole);
    const changedAtTheEnd = Buffer.from(body);
    changedAtTheEnd[changedAtTheEnd.length - 1] = 8;
    expect(await requestFingerprint('POST', '/api/v1/u?a=1', changedAtTheEnd)).not.toBe(whole);
    // The parts cannot run into each other: NUL separates them and URLs hold none.
    expect(await requestFingerprint('POST', '/a', Buffer.from('b'))).not.toBe(await requestFingerprint('POST', '/ab', Buffer.alloc(0)));
    expect(await requestFingerprint('DELETE', '/a', undefined)).toBe(await requestFingerprint('DELETE', '/a', Buffer.alloc(0)));
  });
});

describe('pruning', () => {
  it('removes exactly the records expired by then, a batch of 1,000 per transaction', async () => {
    const idempotency = server.th.idempotency;
    const store = server.th.store;
    const records = async (prefix: string) => store.read(async (tx) => (await tx.listRecords(prefix)).length);
    await idempotency.prune(Number.MAX_SAFE_INTEGER);
    const now = Date.now();
    const ttl = server.th.config.idempotency.ttlMs;
    const answer = { status: 200, json: '{}' };
    // 2,500 made now (expired a TTL from now) and 10 made an hour later (still kept then).
    await store.write(async (tx) => {
      for (let index = 0; index < 2_500; index++) idempotency.putRecord(tx, `idempotency/key_prune/${String(index).padStart(64, '0')}`, 'f', answer, now);
      for (let index = 0; index < 10; index++) idempotency.putRecord(tx, `idempotency/key_prune/later${index}`, 'f', answer, now + 3_600_000);
    });
    expect(await idempotency.prune(now + ttl - 1)).toBe(0);
    expect(await idempotency.prune(now + ttl)).toBe(2_500);
    expect([await records('idempotency/'), await records('idempotency-expiry/')]).toEqual([10, 10]);
    expect(await idempotency.prune(now + ttl + 3_600_000)).toBe(10);
    expect([await records('idempotency/'), await records('idempotency-expiry/')]).toEqual([0, 0]);
  });
});
