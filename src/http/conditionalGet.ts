/**
 * Conditional GETs on the JSON API, as GitHub's API answers them: every 200 JSON answer of a
 * keyed GET carries a weak ETag of its bytes, and a request whose If-None-Match names it is answered
 * 304 with no body (still charged to the key's rate limit). Answers over ETAG_BYTES_MAX (and
 * streams: archives, event streams) carry none, so hashing never holds the event loop long.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { etagMatches } from './publicSite.js';

/** The largest answer given an ETag: SHA-1 of 1 MiB is about a millisecond. */
const ETAG_BYTES_MAX = 1024 * 1024;

/** An onSend hook: the ETag, and 304 when the client has this answer already. */
export async function conditionalGet(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (request.method !== 'GET' || reply.statusCode !== 200 || request.routeOptions.config?.auth !== true) return payload;
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  if (bytes.length > ETAG_BYTES_MAX) return payload;
  const tag = `"${createHash('sha1').update(bytes).digest('hex')}"`;
  reply.header('ETag', `W/${tag}`);
  if (!etagMatches(request.headers['if-none-match'], tag)) return payload;
  reply.code(304);
  reply.removeHeader('content-type');
  return '';
}
