/**
 * Per-key token buckets: `ratePerSecond` tokens a second up to `burst`.
 *
 * On a store of one process (LMDB) the buckets are in memory; buckets idle long enough to be full
 * again are dropped, so memory follows the number of active keys. On a store several nodes share
 * (PostgreSQL, src/store/asyncTypes.ts SharedRateLimits) a key's one bucket is in the database, so
 * the limit holds whichever nodes its requests reach: one statement per request. A key refused
 * there is refused by this node, without asking, until the store said a token would be free, so a
 * flood from one key costs the database about `ratePerSecond` statements a second, not one per
 * request (README "PostgreSQL").
 */
import type { SharedRateLimits } from '../store/asyncTypes.js';
import { contractError } from './domainErrors.js';

/** One request's charge: how long to wait when refused (0: allowed), and the bucket as it stands after it. */
export interface RateDecision {
  /** Whole seconds until a token is free; 0 when this request took one. */
  retryAfterSeconds: number;
  /** The bucket's size (the burst). */
  limit: number;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the bucket is full again (whole, rounded up). */
  fullInSeconds: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; updatedMs: number }>();
  /** Shared buckets: keys refused lately, and when the store said a token would be free. */
  private readonly refusedUntil = new Map<string, number>();
  private checks = 0;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly shared?: SharedRateLimits,
  ) {}

  /**
   * Takes one token: `retryAfterSeconds` 0 when allowed, else the whole seconds to wait before one is
   * free; and the bucket as it stands afterwards (src/http/rateLimitHeaders.ts). All zero when the
   * limit is off (a rate of 0).
   */
  async charge(key: string, nowMs: number = Date.now()): Promise<RateDecision> {
    if (this.ratePerSecond <= 0) return { retryAfterSeconds: 0, limit: 0, remaining: 0, fullInSeconds: 0 };
    if (!this.shared) return this.takeHere(key, nowMs);
    if (++this.checks % 1024 === 0) this.sweepRefusals(nowMs);
    const until = this.refusedUntil.get(key);
    if (until !== undefined && nowMs < until) return this.decision(Math.max(1, Math.ceil((until - nowMs) / 1000)), 0);
    let taken: { waitSeconds: number; tokens: number };
    try {
      taken = await this.shared.takeToken(key, this.ratePerSecond, this.burst);
    } catch (error) {
      throw contractError(error) ?? error;
    }
    if (taken.waitSeconds === 0) {
      this.refusedUntil.delete(key);
      return this.decision(0, taken.tokens);
    }
    this.refusedUntil.set(key, nowMs + taken.waitSeconds * 1000);
    return this.decision(Math.max(1, Math.ceil(taken.waitSeconds)), taken.tokens);
  }

  private takeHere(key: string, nowMs: number): RateDecision {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, updatedMs: nowMs };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * this.ratePerSecond);
    bucket.updatedMs = nowMs;
    this.buckets.set(key, bucket);
    if (++this.checks % 1024 === 0) this.sweep(nowMs);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return this.decision(0, bucket.tokens);
    }
    return this.decision(Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond)), bucket.tokens);
  }

  private decision(retryAfterSeconds: number, tokens: number): RateDecision {
    const left = Math.max(0, Math.min(this.burst, tokens));
    return { retryAfterSeconds, limit: this.burst, remaining: Math.floor(left), fullInSeconds: Math.ceil((this.burst - left) / this.ratePerSecond) };
  }

  private sweep(nowMs: number): void {
    const fullAfterMs = (this.burst / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (nowMs - bucket.updatedMs > fullAfterMs) this.buckets.delete(key);
  }

  private sweepRefusals(nowMs: number): void {
    for (const [key, until] of this.refusedUntil) if (until <= nowMs) this.refusedUntil.delete(key);
  }
}
