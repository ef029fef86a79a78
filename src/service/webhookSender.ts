/**
 * One webhook attempt on the wire: a POST of a signed body to an address already checked against the
 * host rules, with a timeout over the whole exchange, no redirects followed, and at most a little
 * of the answer read. `sendWebhook` runs on a worker thread of lowered priority (WebhookSender),
 * so the HTTP work of many deliveries takes the cores the request thread leaves instead of taking
 * turns with it; this module imports nothing of ours for that reason.
 */
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
  timeoutMs: number;
  /** Connections kept alive per webhook. */
  socketsMax: number;
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
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
      headers: { ...input.headers, 'content-length': String(Buffer.byteLength(input.body)) },
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

const WORKER_SOURCE = `
parentPort.on('message', async (message) => {
  const sender = await load();
  if (message.kind === 'send') parentPort.postMessage({ id: message.id, outcome: await sender.sendWebhook(message.request) });
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

  send(request: SendRequest): Promise<AttemptOutcome> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      worker.postMessage({ kind: 'send', id, request });
    });
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
    worker.on('message', (message: { id?: number; outcome?: AttemptOutcome }) => {
      if (message.id === undefined) return;
      const resolve = this.pending.get(message.id);
      this.pending.delete(message.id);
      resolve?.(message.outcome!);
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
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const resolve of waiting) resolve({ ok: false, statusCode: null, error: reason });
  }
}
