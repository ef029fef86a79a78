/**
 * The rate-limit headers GitHub's API sends, on every request charged to a key (the JSON API and
 * the git routes share its bucket): X-RateLimit-Limit is the bucket's size (the burst), Remaining
 * the whole tokens left after this request, Reset the Unix time (seconds) by which the bucket is
 * full again. A client that paces itself by them is never refused. None when the limit is off.
 */
import type { FastifyReply } from 'fastify';
import type { RateDecision } from '../service/rateLimiter.js';

export function setRateLimitHeaders(reply: FastifyReply, decision: RateDecision, nowMs = Date.now()): void {
  if (decision.limit === 0 && decision.retryAfterSeconds === 0) return;
  reply.header('X-RateLimit-Limit', String(decision.limit));
  reply.header('X-RateLimit-Remaining', String(decision.remaining));
  reply.header('X-RateLimit-Reset', String(Math.ceil(nowMs / 1000) + decision.fullInSeconds));
  if (decision.retryAfterSeconds > 0) reply.header('Retry-After', String(decision.retryAfterSeconds));
}
