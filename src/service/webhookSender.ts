/**
 * One webhook attempt on the wire: a POST of a signed body to an address already checked against the
 * host rules, with a timeout over the whole exchange, no redirects followed, and at most a little
 * of the answer read. `sendWebhook` runs on a worker thread of lowered priority (WebhookSender),
 * so the HTTP work of many deliveries takes the cores the request thread leaves instead of taking
 * turns with it; this module imports nothing of ours for that reason.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from './moduleWorker.js';

export interface SendRequest {
  /** Keeps one pool of kept-alive connections per webhook. */
  webhookId: string;
  url: string;
  /** The addresses the host resolved to when it was checked; the connection goes to one of them. */
  addresses: Array<{ address: string; family: 4 | 6 }>;
  headers: Record<string, string>;
  body: string;
  /** Signs the body (the `treehouse-signature` header), here rather than on the request thread. */
  secret: string;
  timeoutMs: number;
  /** Connections kept alive per webhook. */
  socketsMax: number;
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

/** The signature header's value: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export function signature(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
}

/** Bytes of a receiver's answer read (and dropped) before the connection is closed. */
const ANSWER_BYTES_MAX = 64 * 1024;
const agents = new Map<string, http.Agent>();
const inFlight = new Set<http.ClientRequest>();

export function sendWebhook(input: SendRequest): Promise<AttemptOutcome> {
  const url = new URL(input.url);
  return new Promise<AttemptOutcome>((resolve) => {
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'POST',
      headers: {
        ...input.headers,
        'treehouse-signature': signature(input.secret, Math.floor(Date.now() / 1000), input.body),
        'content-length': String(Buffer.byteLength(input.body)),
      },
      lookup: pinnedLookup(input.addresses),
      agent: agentFor(input),
    });
    inFlight.add(request);
    let settled = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new Error('timed out'));
    }, input.timeoutMs);
    const settle = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      inFlight.delete(request);
      resolve(outcome);
    };
    const fail = (error: Error) =>
      settle({ ok: false, statusCode: null, error: timedOut ? `No answer within ${input.timeoutMs} ms.` : `The receiver could not be reached (${(error as { code?: string }).code ?? error.message}).` });
    request.on('error', fail);
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > ANSWER_BYTES_MAX) response.destroy();
      });
      response.on('error', () => {});
      const done = () => {
        if (timedOut) return fail(new Error('timed out'));
        if (status >= 200 && status < 300) return settle({ ok: true, statusCode: status, error: null });
        settle({ ok: false, statusCode: status, error: status >= 300 && status < 400 ? 'Redirects are not followed.' : `Answered ${status}.` });
      };
      response.on('end', done);
      response.on('close', done);
    });
    request.end(input.body);
  });
}

/** Drops a webhook's kept-alive connections (it was deleted). */
export function forgetWebhook(webhookId: string): void {
  agents.get(webhookId)?.destroy();
  agents.delete(webhookId);
}

/** Cuts every attempt short and closes every connection (the server stops). */
export function stopAll(): void {
  for (const request of inFlight) request.destroy(new Error('the server is stopping'));
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

function agentFor(input: SendRequest): http.Agent {
  let agent = agents.get(input.webhookId);
  if (!agent) {
    const options = { keepAlive: true, maxSockets: input.socketsMax, maxFreeSockets: 4, timeout: input.timeoutMs };
    agent = input.url.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
    agents.set(input.webhookId, agent);
  }
  return agent;
}

/** A lookup that answers with the addresses already checked, whatever the caller asks. */
function pinnedLookup(resolved: SendRequest['addresses']): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, resolved.map(({ address, family }) => ({ address, family })));
    else callback(null, resolved[0].address, resolved[0].family);
  }) as unknown as LookupFunction;
}

// Sends and outcomes cross between the threads in batches, one message per turn of each loop.
const WORKER_SOURCE = `
let outcomes = [];
const answer = (id, outcome) => {
  if (outcomes.length === 0) setImmediate(() => {
    const batch = outcomes;
    outcomes = [];
    parentPort.postMessage({ outcomes: batch });
  });
  outcomes.push([id, outcome]);
};
parentPort.on('message', async (message) => {
  const sender = await load();
  if (message.kind === 'send') for (const { id, request } of message.batch) sender.sendWebhook(request).then((outcome) => answer(id, outcome));
  else if (message.kind === 'forget') sender.forgetWebhook(message.webhookId);
  else if (message.kind === 'stop') { sender.stopAll(); parentPort.postMessage({ stopped: true }); }
});
`;
/** Like the deflate cache's worker: below the request thread, above nothing else of ours. */
const SENDER_NICE = 10;

/** The worker thread that sends deliveries, started on first use. */
export class WebhookSender {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, (outcome: AttemptOutcome) => void>();
  /** Sends of this turn of the loop, posted together at its end. */
  private batch: Array<{ id: number; request: SendRequest }> = [];

  send(request: SendRequest): Promise<AttemptOutcome> {
    this.started();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      if (this.batch.length === 0) setImmediate(() => this.post());
      this.batch.push({ id, request });
    });
  }

  private post(): void {
    const batch = this.batch;
    this.batch = [];
    if (batch.length > 0) this.worker?.postMessage({ kind: 'send', batch });
  }

  forget(webhookId: string): void {
    this.worker?.postMessage({ kind: 'forget', webhookId });
  }

  /** Cuts the attempts under way short (their outcome: an error) and ends the worker. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    await worker.terminate();
    this.failAll('the server is stopping');
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = startModuleWorker('./webhookSender', WORKER_SOURCE, { nice: SENDER_NICE });
    worker.on('message', (message: { outcomes?: Array<[number, AttemptOutcome]> }) => {
      for (const [id, outcome] of message.outcomes ?? []) {
        const resolve = this.pending.get(id);
        this.pending.delete(id);
        resolve?.(outcome);
      }
    });
    worker.on('error', (error) => {
      if (this.worker === worker) this.worker = null;
      this.failAll(`the sender failed: ${error.message}`);
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll('the sender stopped');
    });
    // Held while deliveries are under way, so a process waiting on them is not ended early.
    this.worker = worker;
    return worker;
  }

  private failAll(reason: string): void {
    // Not posted yet: answered here, never sent.
    this.batch = [];
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const resolve of waiting) resolve({ ok: false, statusCode: null, error: reason });
  }
}
