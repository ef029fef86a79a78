/**
 * Webhooks (../shared/API.md "Events and webhooks (v1.1)") against real HTTP receivers in the test:
 * signed deliveries, retries until a 2xx and never after, a hanging receiver that holds no request
 * up, deliveries that survive a restart, deliveries waiting in their line (one slot), host rules
 * at creation and at delivery, redelivery, deletion cancelling what is pending, paging, team
 * isolation, and hostile input for every field.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on 127.0.0.1 that records each request and answers with `answer(n)` (n from 1). */
class Receiver {
  readonly requests: Received[] = [];
  private server!: Server;
  url = '';
  /** Answers held open (a hanging receiver), ended by close(). */
  private readonly hung: Array<() => void> = [];

  constructor(private answer: (count: number) => number | 'hang') {}

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        this.requests.push({ headers: request.headers, body });
        const status = this.answer(this.requests.length);
        if (status === 'hang') this.hung.push(() => response.destroy());
        else response.writeHead(status).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hook`;
    return this;
  }

  setAnswer(answer: (count: number) => number | 'hang'): void {
    this.answer = answer;
  }

  async waitFor(count: number, timeoutMs = 10_000): Promise<Received[]> {
    const started = Date.now();
    while (this.requests.length < count) {
      if (Date.now() - started > timeoutMs) throw new Error(`${this.requests.length} of ${count} requests arrived`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.requests;
  }

  async close(): Promise<void> {
    for (const end of this.hung) end();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const FAST_RETRIES = {
  TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS: '1',
  TREEHOUSE_WEBHOOK_RETRY_BASE_MS: '50',
  TREEHOUSE_WEBHOOK_RETRY_MAX_MS: '200',
  TREEHOUSE_WEBHOOK_TIMEOUT_MS: '2000',
  TREEHOUSE_WEBHOOKS_PER_TEAM_MAX: '5',
  TREEHOUSE_RATE_PER_SECOND: '10000',
  TREEHOUSE_RATE_BURST: '10000',
};

let server: TestServer;
const receivers: Receiver[] = [];

async function receiver(answer: (count: number) => number | 'hang'): Promise<Receiver> {
  const made = await new Receiver(answer).start();
  receivers.push(made);
  return made;
}

beforeAll(async () => {
  server = await startTestServer({ env: FAST_RETRIES });
});
afterEach(async () => {
  // Each test leaves no webhook behind, so the per-team limit and the next test start clean.
  for (const hook of (await server.call('GET', '/api/v1/webhooks')).body.webhooks ?? []) await server.call('DELETE', `/api/v1/webhooks/${hook.id}`);
});
afterAll(async () => {
  await server?.close();
  await Promise.all(receivers.map((made) => made.close()));
});

async function ok(target: TestServer, method: string, path: string, body?: unknown, key?: string): Promise<any> {
  const response = await target.call(method, path, body, { key });
  expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
  return response.body;
}

async function newProject(target: TestServer, title: string): Promise<string> {
  return (await ok(target, 'POST', '/api/v1/projects', { title })).project.id;
}

async function write(target: TestServer, id: string, path: string): Promise<void> {
  await ok(target, 'POST', `/api/v1/projects/${id}/files/batch`, { branch: 'main', files: [{ path, content: `${path}\n` }] });
}

async function deliveries(target: TestServer, hook: string): Promise<any[]> {
  return (await ok(target, 'GET', `/api/v1/webhooks/${hook}/deliveries?limit=200`)).deliveries;
}

async function waitForDelivery(target: TestServer, hook: string, ready: (found: any[]) => boolean, timeoutMs = 10_000): Promise<any[]> {
  const started = Date.now();
  for (;;) {
    const found = await deliveries(target, hook);
    if (ready(found)) return found;
    if (Date.now() - started > timeoutMs) throw new Error(`deliveries never got there: ${JSON.stringify(found)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function verify(secret: string, received: Received): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(received.headers['treehouse-signature']));
  if (!match) return false;
  return createHmac('sha256', secret).update(`${match[1]}.${received.body}`).digest('hex') === match[2];
}

describe('webhook deliveries', () => {
  it('POSTs each subscribed event, signed with the secret, with its type and delivery id', async () => {
    const target = await receiver(() => 204);
    const created = await server.call('POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed', 'branch.created'] });
    expect(created.status).toBe(201);
    const { webhook } = created.body;
    expect(webhook).toEqual({ id: expect.stringMatching(/^whk_/), url: target.url, events: ['files.changed', 'branch.created'], created_at: expect.any(String), secret: expect.stringMatching(/^whsec_.{40,}$/) });
    // The secret is shown once.
    expect((await ok(server, 'GET', '/api/v1/webhooks')).webhooks).toEqual([{ id: webhook.id, url: target.url, events: webhook.events, created_at: webhook.created_at }]);

    const id = await newProject(server, 'Hooked');
    await write(server, id, 'a.txt');
    await ok(server, 'POST', `/api/v1/projects/${id}/git/branches`, { name: 'side' });
    const [first, second] = await target.waitFor(2);
    const feed = (await ok(server, 'GET', '/api/v1/events?limit=1000')).events;
    const changed = feed.filter((event: any) => event.project_id === id && ['files.changed', 'branch.created'].includes(event.type));
    expect([JSON.parse(first.body), JSON.parse(second.body)]).toEqual(changed);
    for (const got of [first, second]) {
      expect(verify(webhook.secret, got)).toBe(true);
      expect(verify('not the secret at all', got)).toBe(false);
      expect(got.headers['content-type']).toBe('application/json');
      expect(got.headers['treehouse-event']).toBe(JSON.parse(got.body).type);
    }
    const found = await waitForDelivery(server, webhook.id, (list) => list.length === 2 && list.every((one) => one.status === 'delivered'));
    expect(found.map((one) => one.id).sort()).toEqual([first, second].map((got) => got.headers['treehouse-delivery']).sort());
    expect(found[0]).toMatchObject({ event_id: changed[1].id, status: 'delivered', attempts: 1, last_status_code: 204, next_attempt_at: null });
  });

  it('retries a delivery answered 500 and stops once it is answered 200, under the same delivery id', async () => {
    const target = await receiver((count) => (count === 1 ? 500 : 200));
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed'], secret: 'a-secret-of-my-own-choosing' });
    const id = await newProject(server, 'Retried');
    await write(server, id, 'once.txt');
    // The retry is due 50-200 ms after the 500: well before the dispatcher's 10 s sweep, which
    // used to be what sent it (the wake was taken from a due listing read before it was queued).
    const [failed, succeeded] = await target.waitFor(2, 5_000);
    expect(succeeded.headers['treehouse-delivery']).toBe(failed.headers['treehouse-delivery']);
    expect(succeeded.body).toBe(failed.body);
    expect(verify('a-secret-of-my-own-choosing', succeeded)).toBe(true);
    const [delivery] = await waitForDelivery(server, webhook.id, (list) => list[0]?.status === 'delivered');
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 200 });
    // A later event is delivered after it, and the first is never sent again.
    await write(server, id, 'twice.txt');
    await target.waitFor(3);
    await waitForDelivery(server, webhook.id, (list) => list.length === 2 && list.every((one) => one.status === 'delivered'));
    expect(target.requests.map((got) => JSON.parse(got.body).data.paths[0])).toEqual(['once.txt', 'once.txt', 'twice.txt']);
  });

  it('answers every request while a receiver hangs, and counts the hung delivery failed at its timeout', async () => {
    const hanging = await receiver(() => 'hang');
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: hanging.url, events: ['files.changed'] });
    const id = await newProject(server, 'Hanging');
    await write(server, id, 'first.txt');
    await hanging.waitFor(1);
    // The receiver holds its first request; the API goes on answering writes meanwhile.
    for (let index = 0; index < 20; index++) await write(server, id, `more${index}.txt`);
    expect(hanging.requests.length).toBeGreaterThanOrEqual(1);
    const [first] = await waitForDelivery(server, webhook.id, (list) => list.some((one) => one.attempts >= 1 && one.last_error?.includes('No answer within')), 15_000).then((list) =>
      list.filter((one) => one.last_error?.includes('No answer within')),
    );
    expect(first.status).toBe('pending');
    expect(first.last_status_code).toBe(null);
  });

  it('redelivers on request, under the same id, and 404s an unknown delivery', async () => {
    const target = await receiver(() => 200);
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: target.url, events: ['project.published'] });
    const id = await newProject(server, 'Redelivered');
    await ok(server, 'POST', `/api/v1/projects/${id}/publish`);
    const [delivery] = await waitForDelivery(server, webhook.id, (list) => list[0]?.status === 'delivered');
    const again = await server.call('POST', `/api/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`);
    expect(again.status).toBe(202);
    expect(again.body.delivery).toMatchObject({ id: delivery.id, status: 'pending' });
    const [first, second] = await target.waitFor(2);
    expect(second.headers['treehouse-delivery']).toBe(delivery.id);
    expect(second.body).toBe(first.body);
    await waitForDelivery(server, webhook.id, (list) => list[0]?.status === 'delivered' && list[0].attempts === 2);
    expect((await server.call('POST', `/api/v1/webhooks/${webhook.id}/deliveries/dlv_nope/redeliver`)).status).toBe(404);
    expect((await server.call('POST', `/api/v1/webhooks/whk_nope/deliveries/${delivery.id}/redeliver`)).status).toBe(404);
  });

  it('deleting a webhook cancels its pending deliveries', async () => {
    const failing = await receiver(() => 503);
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: failing.url, events: ['files.changed'] });
    const id = await newProject(server, 'Cancelled');
    await write(server, id, 'x.txt');
    await failing.waitFor(2);
    expect(await ok(server, 'DELETE', `/api/v1/webhooks/${webhook.id}`)).toEqual({ deleted: webhook.id });
    expect((await server.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries`)).status).toBe(404);
    expect((await server.call('DELETE', `/api/v1/webhooks/${webhook.id}`)).status).toBe(404);
    // Nothing of it is left in the queue (an attempt already under way may still land once).
    const left = await server.th.store.read(async (tx) => tx.listRecords<string>('webhooks/'));
    expect(left.filter(({ key }) => key.includes(webhook.id) || key.startsWith('webhooks/due/') || key.startsWith('webhooks/delivery-id/'))).toEqual([]);
    const count = failing.requests.length;
    await write(server, id, 'y.txt');
    // A webhook made after it gets the next event; the deleted one gets nothing more.
    const witness = await receiver(() => 200);
    await ok(server, 'POST', '/api/v1/webhooks', { url: witness.url, events: ['files.changed'] });
    await write(server, id, 'z.txt');
    await witness.waitFor(1);
    expect(failing.requests.length).toBeLessThanOrEqual(count + 1);
  });

  it('pages deliveries newest first with a cursor', async () => {
    const target = await receiver(() => 200);
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed'] });
    const id = await newProject(server, 'Paged deliveries');
    for (let index = 0; index < 5; index++) await write(server, id, `p${index}.txt`);
    await waitForDelivery(server, webhook.id, (list) => list.length === 5);
    const seen: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const page: any = await ok(server, 'GET', `/api/v1/webhooks/${webhook.id}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.deliveries);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    const ids = seen.map((one) => Number(one.event_id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(ids.length).toBe(5);
    for (const query of ['limit=0', 'limit=201', 'cursor=bm9wZQ']) expect((await server.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries?${query}`)).status, query).toBe(400);
  });

  it('checks the host rules again at each delivery', async () => {
    const target = await receiver(() => 200);
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: target.url.replace('127.0.0.1', 'localhost'), events: ['files.changed'] });
    server.th.config.allowPrivateGitHosts = false;
    try {
      const id = await newProject(server, 'Refused at delivery');
      await write(server, id, 'r.txt');
      const [delivery] = await waitForDelivery(server, webhook.id, (list) => list[0]?.attempts >= 1);
      expect(delivery.last_error).toMatch(/private, loopback or link-local/);
      expect(target.requests).toEqual([]);
    } finally {
      server.th.config.allowPrivateGitHosts = true;
    }
  });
});

describe('deliveries waiting in their line (one delivery at a time)', () => {
  let single: TestServer;
  beforeAll(async () => {
    single = await startTestServer({ env: { ...FAST_RETRIES, TREEHOUSE_WEBHOOK_CONCURRENCY: '1' } });
  });
  afterEach(async () => {
    for (const hook of (await single.call('GET', '/api/v1/webhooks')).body.webhooks ?? []) await single.call('DELETE', `/api/v1/webhooks/${hook.id}`);
  });
  afterAll(async () => {
    await single?.close();
  });

  /** A webhook whose receiver holds its first request until the attempt times out (2 s), then answers 200; the writes after the first wait in the line. */
  async function queued(title: string, paths: string[]): Promise<{ webhook: any; target: Receiver; events: any[] }> {
    const target = await receiver((count) => (count === 1 ? 'hang' : 200));
    const { webhook } = await ok(single, 'POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed'] });
    const id = await newProject(single, title);
    await write(single, id, paths[0]);
    await target.waitFor(1);
    for (const path of paths.slice(1)) await write(single, id, path);
    const events = (await ok(single, 'GET', '/api/v1/events?limit=1000')).events.filter((event: any) => event.project_id === id && event.type === 'files.changed');
    return { webhook, target, events };
  }

  it('lists those not yet attempted under the ids they are sent with, pages across them, and a redelivery of one sends it once', async () => {
    const { webhook, target, events } = await queued('Line', ['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    const listed = await deliveries(single, webhook.id);
    expect(listed.map((one) => one.event_id)).toEqual(events.map((event: any) => event.id).reverse());
    for (const one of listed) expect(one).toMatchObject({ status: 'pending', attempts: 0, last_status_code: null, last_error: null, event_type: 'files.changed' });
    expect(new Set(listed.map((one) => one.id)).size).toBe(4);

    // One at a time: the same deliveries, in the same order, from the line and then the records.
    const paged: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page: any = await ok(single, 'GET', `/api/v1/webhooks/${webhook.id}/deliveries?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      paged.push(...page.deliveries);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(paged.map((one) => one.id)).toEqual(listed.map((one) => one.id));

    // Redelivering one still in its line leaves it there; ids that only look like it are unknown.
    const newest = listed[0];
    const again = await single.call('POST', `/api/v1/webhooks/${webhook.id}/deliveries/${newest.id}/redeliver`);
    expect(again.status).toBe(202);
    expect(again.body.delivery).toEqual(newest);
    const suffix = newest.id.slice(newest.id.lastIndexOf('_') + 1);
    for (const lookalike of [`dlv_${newest.event_id}_${suffix.slice(1)}x`, `dlv_0${newest.event_id}_${suffix}`, `dlv_${Number(newest.event_id) + 1}_${suffix}`, `dlv_${listed[1].event_id}_${suffix}`]) {
      expect((await single.call('POST', `/api/v1/webhooks/${webhook.id}/deliveries/${lookalike}/redeliver`)).status, lookalike).toBe(404);
    }
    expect(await deliveries(single, webhook.id)).toEqual(listed);

    // The hung attempt times out and is retried; then the line goes on, each delivery sent once.
    const done = await waitForDelivery(single, webhook.id, (list) => list.length === 4 && list.every((one) => one.status === 'delivered'), 20_000);
    expect(done.map((one) => one.id)).toEqual(listed.map((one) => one.id));
    expect(done.map((one) => one.attempts)).toEqual([1, 1, 1, 2]);
    // The retry of the first and the line take turns as they come; the line keeps its order.
    const sent = target.requests.map((got) => got.headers['treehouse-delivery']);
    expect(sent[0]).toBe(listed[3].id);
    expect(sent.filter((one) => one === listed[3].id)).toHaveLength(2);
    expect(sent.filter((one) => one !== listed[3].id)).toEqual([listed[2].id, listed[1].id, listed[0].id]);
    expect(target.requests.map((got) => JSON.parse(got.body).data.paths[0]).sort()).toEqual(['a.txt', 'a.txt', 'b.txt', 'c.txt', 'd.txt']);
  });

  it('lists each delivery once when its line moves while the page is read', async () => {
    const { webhook, events } = await queued('Moving line', ['j.txt', 'k.txt']);
    const [j, k] = events;
    const store = single.th.store;
    const lineKey = `webhooks/line/${webhook.id}`;
    const read = store.read.bind(store);
    const lineAt = () => read(async (tx) => tx.getRecord<number>(lineKey));
    expect(await lineAt()).toBe(Number(j.id));
    // The page reads the line while k waits in it, then its other reads find the line moved past k
    // (the hung attempt times out, and the one slot takes k): a PostgreSQL read is no snapshot.
    (store as any).read = (action: (tx: any) => Promise<unknown>) =>
      read((tx) =>
        action(
          new Proxy(tx, {
            get(target, name) {
              const value = Reflect.get(target, name);
              if (name !== 'getRecord') return typeof value === 'function' ? value.bind(target) : value;
              return async (key: string) => {
                const found = await target.getRecord(key);
                if (key !== lineKey) return found;
                for (const started = Date.now(); ((await lineAt()) ?? 0) < Number(k.id); ) {
                  if (Date.now() - started > 10_000) throw new Error('the line never moved');
                  await new Promise((resolve) => setTimeout(resolve, 20));
                }
                return found;
              };
            },
          }),
        ),
      );
    let listed: any[];
    try {
      listed = await deliveries(single, webhook.id);
    } finally {
      delete (store as any).read;
    }
    expect(listed.map((one) => one.event_id)).toEqual([k.id, j.id]);
  });

  it('refuses cursors it did not issue, of another webhook, or with other digits, and pages past the end to nothing', async () => {
    const { webhook } = await queued('Cursors', ['e.txt', 'f.txt']);
    const other = await ok(single, 'POST', '/api/v1/webhooks', { url: (await receiver(() => 200)).url, events: ['files.changed'] });
    const encode = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
    const prefix = `webhooks/delivery/${webhook.id}/`;
    const before = await deliveries(single, webhook.id);
    for (const cursor of [
      encode(`${prefix}${'x'.repeat(16)}`),
      encode(`${prefix}${'1'.repeat(17)}`),
      encode(`${prefix}${'1'.repeat(15)}`),
      encode(`${prefix}-000000000000001`),
      encode(`webhooks/delivery/${other.webhook.id}/0000000000000001`),
      encode(`webhooks/delivery/${webhook.id}0000000000000001`),
      encode(`${prefix}0000000000000001\u0000`),
      'not base64 at all!',
      encode('x'.repeat(5_000)),
    ]) {
      expect((await single.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries?cursor=${encodeURIComponent(cursor)}`)).status, cursor.slice(0, 80)).toBe(400);
    }
    expect(await ok(single, 'GET', `/api/v1/webhooks/${webhook.id}/deliveries?cursor=${encode(`${prefix}0000000000000001`)}`)).toEqual({ deliveries: [], next_cursor: null });
    expect(await deliveries(single, webhook.id)).toEqual(before);
  });

  it('starts the line of a webhook of before the lines after its team\'s old fan-out cursor, whose deliveries had records', async () => {
    const { webhook, target, events } = await queued('Legacy', ['g.txt', 'h.txt', 'i.txt']);
    const [, h, i] = events;
    // What the fan-out of before left: no line, the team's cursor at h (its delivery had a record: gone here, so h is never sent).
    await single.th.store.write(async (tx) => {
      const [hook] = (await tx.listRecords<{ id: string; team_id: string }>('webhooks/hook/')).filter(({ value }) => value.id === webhook.id);
      tx.deleteRecord(`webhooks/line/${webhook.id}`);
      tx.putRecord(`webhooks/cursor/${hook.value.team_id}`, Number(h.id));
    });
    expect((await deliveries(single, webhook.id)).map((one) => one.event_id)).toEqual([i.id, events[0].id]);
    const done = await waitForDelivery(single, webhook.id, (list) => list.length === 2 && list.every((one) => one.status === 'delivered'), 20_000);
    expect(done.map((one) => one.event_id)).toEqual([i.id, events[0].id]);
    expect(target.requests.map((got) => JSON.parse(got.body).data.paths[0]).sort()).toEqual(['g.txt', 'g.txt', 'i.txt']);
  });
});

describe('webhook subscriptions', () => {
  it('refuses private addresses without TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS, and creates nothing', async () => {
    const strict = await startTestServer();
    try {
      for (const url of ['http://127.0.0.1/hook', 'http://localhost:9/hook', 'http://10.1.2.3/', 'http://[::1]/', 'http://169.254.169.254/latest', 'http://[::ffff:192.168.0.1]/', 'http://0.0.0.0/']) {
        const response = await strict.call('POST', '/api/v1/webhooks', { url, events: ['files.changed'] });
        expect(response.status, url).toBe(400);
        expect(response.body.error.details.issues[0].path).toBe('url');
      }
      expect((await ok(strict, 'GET', '/api/v1/webhooks')).webhooks).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it('refuses hostile input in every field with 400, and creates nothing', async () => {
    const target = await receiver(() => 200);
    const cases: unknown[] = [
      { url: 'ftp://127.0.0.1/x', events: ['files.changed'] },
      { url: 'javascript:alert(1)', events: ['files.changed'] },
      { url: 'file:///etc/passwd', events: ['files.changed'] },
      { url: '/relative', events: ['files.changed'] },
      { url: 'http://', events: ['files.changed'] },
      { url: 'http://user:pass@127.0.0.1/x', events: ['files.changed'] },
      { url: 'http://token@127.0.0.1/x', events: ['files.changed'] },
      { url: `${target.url}#fragment`, events: ['files.changed'] },
      { url: ` ${target.url}`, events: ['files.changed'] },
      { url: `${target.url}\n`, events: ['files.changed'] },
      { url: target.url.replace('/hook', '/ho\tok'), events: ['files.changed'] },
      { url: `http://127.0.0.1/${'a'.repeat(2000)}`, events: ['files.changed'] },
      { url: 'http://[::1', events: ['files.changed'] },
      { url: 'http://no-such-host.invalid/', events: ['files.changed'] },
      { url: 42, events: ['files.changed'] },
      { url: target.url, events: [] },
      { url: target.url, events: ['files.changed', 'files.changed'] },
      { url: target.url, events: ['no.such.type'] },
      { url: target.url, events: ['*'] },
      { url: target.url, events: 'files.changed' },
      { url: target.url, events: Array(10_000).fill('files.changed') },
      { url: target.url, events: [{ type: 'files.changed' }] },
      { url: target.url, events: ['files.changed'], secret: 'short' },
      { url: target.url, events: ['files.changed'], secret: 'has spaces in the middle of it' },
      { url: target.url, events: ['files.changed'], secret: 'x'.repeat(257) },
      { url: target.url, events: ['files.changed'], secret: 'control\u0001characters-here' },
      { url: target.url, events: ['files.changed'], secret: 12345678901234567 },
      { url: target.url, events: ['files.changed'], extra: true },
      { events: ['files.changed'] },
      { url: target.url },
      [],
      null,
    ];
    for (const body of cases) {
      const response = await server.call('POST', '/api/v1/webhooks', body);
      expect(response.status, JSON.stringify(body)?.slice(0, 200)).toBe(400);
      expect(response.body.error.code).toBe('invalid_request');
    }
    expect((await server.call('POST', '/api/v1/webhooks', undefined, { raw: '{"url": ' })).status).toBe(400);
    expect((await ok(server, 'GET', '/api/v1/webhooks')).webhooks).toEqual([]);
    const left = await server.th.store.read(async (tx) => tx.listRecords('webhooks/hook/'));
    expect(left).toEqual([]);
  });

  it('limits the webhooks of a team', async () => {
    const target = await receiver(() => 200);
    for (let index = 0; index < 5; index++) await ok(server, 'POST', '/api/v1/webhooks', { url: `${target.url}${index}`, events: ['files.changed'] });
    const over = await server.call('POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed'] });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toMatch(/at most 5 webhooks/);
    expect((await ok(server, 'GET', '/api/v1/webhooks')).webhooks.length).toBe(5);
  });

  it('belongs to the key\'s team: another team neither sees nor deletes it, nor receives its events', async () => {
    const target = await receiver(() => 200);
    const { webhook } = await ok(server, 'POST', '/api/v1/webhooks', { url: target.url, events: ['project.created'] });
    await server.th.accounts.createTeam('webhook-other');
    const otherKey = (await server.th.accounts.createKey('webhook-other', 'k')).key;
    expect((await ok(server, 'GET', '/api/v1/webhooks', undefined, otherKey)).webhooks).toEqual([]);
    expect((await server.call('DELETE', `/api/v1/webhooks/${webhook.id}`, undefined, { key: otherKey })).status).toBe(404);
    expect((await server.call('GET', `/api/v1/webhooks/${webhook.id}/deliveries`, undefined, { key: otherKey })).status).toBe(404);
    await ok(server, 'POST', '/api/v1/projects', { title: 'Not ours' }, otherKey);
    const mine = await newProject(server, 'Ours');
    const [got] = await target.waitFor(1);
    expect(JSON.parse(got.body).project_id).toBe(mine);
    expect((await ok(server, 'GET', '/api/v1/webhooks')).webhooks.map((hook: any) => hook.id)).toEqual([webhook.id]);
  });
});

describe('webhook deliveries across a restart', () => {
  it('are kept in the queue and sent once the server runs again', async () => {
    const dir = scratchDir('treehouse-webhook-restart-');
    const target = await receiver(() => 500);
    try {
      const first = await startTestServer({ dataDir: dir.path, env: { ...FAST_RETRIES, TREEHOUSE_WEBHOOK_RETRY_BASE_MS: '1500', TREEHOUSE_WEBHOOK_RETRY_MAX_MS: '1500' } });
      const { webhook } = await ok(first, 'POST', '/api/v1/webhooks', { url: target.url, events: ['files.changed'] });
      const id = await newProject(first, 'Restarted');
      await write(first, id, 'kept.txt');
      await target.waitFor(1);
      await waitForDelivery(first, webhook.id, (list) => list[0]?.attempts === 1);
      await first.close();
      expect(target.requests.length).toBe(1);
      // The retry, due about 1.5 s after the failure, is made by the next run of the server.
      target.setAnswer(() => 200);
      const second = await startTestServer({ dataDir: dir.path, env: FAST_RETRIES });
      try {
        const [delivery] = await waitForDelivery(second, webhook.id, (list) => list[0]?.status === 'delivered');
        expect(delivery.attempts).toBe(2);
        expect(target.requests.map((got) => got.headers['treehouse-delivery'])).toEqual([delivery.id, delivery.id]);
      } finally {
        await second.close();
      }
    } finally {
      dir.remove();
    }
  });
});
