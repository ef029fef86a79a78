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

  /** Takes one token; resolves 0 when allowed, else the whole seconds to wait before a token is free. */
  async take(key: string, nowMs: number = Date.now()): Promise<number> {
    if (this.ratePerSecond <= 0) return 0;
    if (!this.shared) return this.takeHere(key, nowMs);
    if (++this.checks % 1024 === 0) this.sweepRefusals(nowMs);
    const until = this.refusedUntil.get(key);
    if (until !== undefined && nowMs < until) return Math.max(1, Math.ceil((until - nowMs) / 1000));
    let waitSeconds: number;
    try {
      waitSeconds = await this.shared.takeToken(key, this.ratePerSecond, this.burst);
    } catch (error) {
      throw contractError(error) ?? error;
    }
    if (waitSeconds === 0) {
      this.refusedUntil.delete(key);
      return 0;
    }
    this.refusedUntil.set(key, nowMs + waitSeconds * 1000);
    return Math.max(1, Math.ceil(waitSeconds));
  }

  private takeHere(key: string, nowMs: number): number {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, updatedMs: nowMs };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * this.ratePerSecond);
    bucket.updatedMs = nowMs;
    this.buckets.set(key, bucket);
    if (++this.checks % 1024 === 0) this.sweep(nowMs);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond));
  }

  private sweep(nowMs: number): void {
    const fullAfterMs = (this.burst / this.ratePerSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (nowMs - bucket.updatedMs > fullAfterMs) this.buckets.delete(key);
  }

  private sweepRefusals(nowMs: number): void {
    for (const [key, until] of this.refusedUntil) if (until <= nowMs) this.refusedUntil.delete(key);
  }
}
