/**
 * The HTTP server under Fastify, built so that slow or piled-up clients cannot hold the service:
 *
 * - headers must arrive within `headersTimeoutMs` and the whole request within `requestTimeoutMs`
 *   (Node enforces both; its check runs every CHECK_INTERVAL_MS instead of every 30 s);
 * - while a request body is being received, a pause longer than `bodyIdleTimeoutMs` ends the
 *   connection; once the body is in, the answer may take as long as the work does (a seed may
 *   run minutes) and the timer is off;
 * - an idle keep-alive connection closes after `keepAliveTimeoutMs`;
 * - one client address holds at most `connectionsPerAddressMax` open connections; the next one is
 *   answered 429 and closed before any byte of its request is read.
 *
 * What is refused this way never reaches a route, so it is answered here, in the contract's envelope.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionLimits } from '../service/config.js';
import type { ErrorCode } from '../errors.js';
import { envelope, STATUS_BY_CODE } from './errors.js';

/** How often Node looks for requests over their headers or request timeout. */
const CHECK_INTERVAL_MS = 250;

/** A complete HTTP/1.1 answer written straight to a socket that has no response object (yet). */
export function rawErrorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}, details?: Record<string, unknown>): string {
  const status = STATUS_BY_CODE[code];
  const body = JSON.stringify(envelope(code, message, details));
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

export function createGuardedServer(limits: ConnectionLimits, handler: (request: IncomingMessage, response: ServerResponse) => void): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: CHECK_INTERVAL_MS,
    },
    (request, response) => {
      watchBody(request, response, limits.bodyIdleTimeoutMs);
      handler(request, response);
    },
  );
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Node closes a socket that stays silent past its timeout when nobody listens for 'timeout'.
  server.timeout = 0;

  const openByAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const open = (openByAddress.get(address) ?? 0) + 1;
    if (open > limits.connectionsPerAddressMax) {
      socket.end(rawErrorResponse('rate_limited', `Too many open connections from one address (at most ${limits.connectionsPerAddressMax}).`, { 'Retry-After': '1' }));
      socket.destroySoon();
      return;
    }
    openByAddress.set(address, open);
    socket.once('close', () => {
      const left = (openByAddress.get(address) ?? 1) - 1;
      if (left <= 0) openByAddress.delete(address);
      else openByAddress.set(address, left);
    });
  });
  return server;
}

/**
 * Whether the request says a body follows (RFC 9112 6.3: a Content-Length above 0, or a
 * Transfer-Encoding). One without a body must not arm the timer: nobody reads its empty body, so
 * its 'end' never comes to switch the timer off, and an answer that took longer than the timer
 * (a 100,000-file project's DELETE on PostgreSQL takes some 37 s) had its connection closed under it.
 */
function declaresBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) > 0);
}

/**
 * Arms the body-idle timer while the request body is still arriving. Node's own socket timeout is
 * the timer: any byte read or written restarts it, and it is switched off when the body has been
 * read, whoever reads it (a route, or Node draining an unread body after an early answer).
 */
function watchBody(request: IncomingMessage, response: ServerResponse, idleMs: number): void {
  if (idleMs <= 0 || request.complete || !declaresBody(request)) return;
  const socket = request.socket;
  // A listener on the request keeps Node from destroying the socket itself, so the client is told why.
  request.on('timeout', () => {
    if (request.complete) return;
    if (!response.headersSent) socket.end(rawErrorResponse('invalid_request', `The request body paused for more than ${idleMs} ms; the connection is closed.`));
    socket.destroySoon();
  });
  socket.setTimeout(idleMs);
  request.once('end', () => socket.setTimeout(0));
}
