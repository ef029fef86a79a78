import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedServer } from '../../src/http/connectionGuard.js';

/**
 * The guard's body-idle timer on a real listening server whose handler answers after SLOW_MS,
 * longer than the timer: a request without a body must be answered, one whose body stalls must not.
 */
const IDLE_MS = 400;
const SLOW_MS = 1_500;

describe('connection guard', () => {
  let server: ReturnType<typeof createGuardedServer>;
  let port = 0;
  beforeAll(async () => {
    server = createGuardedServer(
      { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, bodyIdleTimeoutMs: IDLE_MS, keepAliveTimeoutMs: 5_000, connectionsPerAddressMax: 100 },
      (request, response) => {
        // Works for longer than the timer; reads a body first, as a route does, and leaves alone a
        // request that has none (as Fastify does: nothing reads it, so its 'end' never comes).
        if (request.method === 'DELETE' || request.method === 'GET') {
          setTimeout(() => response.end('done'), SLOW_MS);
          return;
        }
        request.resume();
        request.once('end', () => setTimeout(() => response.end('done'), SLOW_MS));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function send(method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string } | { error: string }> {
    return new Promise((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path: '/', headers }, (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      });
      req.on('error', (error) => resolve({ error: error.message }));
      if (body === undefined) req.end();
      else req.write(body);
    });
  }

  it('answers a request without a body however long the answer takes', async () => {
    expect(await send('DELETE', {})).toEqual({ status: 200, text: 'done' });
    expect(await send('GET', { 'content-length': '0' })).toEqual({ status: 200, text: 'done' });
  });

  it('still closes a connection whose declared body stops arriving', async () => {
    const answer = await send('POST', { 'content-type': 'application/json', 'content-length': '100' }, '{"partial":');
    expect(answer).not.toEqual({ status: 200, text: 'done' });
    if ('text' in answer) expect(answer.text).toContain('paused for more than');
    // A body declared by Transfer-Encoding alone, whose chunks stop after the first.
    const chunked = await send('POST', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, '{"partial":');
    expect(chunked).not.toEqual({ status: 200, text: 'done' });
    if ('text' in chunked) expect(chunked.text).toContain('paused for more than');
  });
});
