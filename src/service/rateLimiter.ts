/**
 * Per-key token buckets: `ratePerSecond` tokens a second up to `burst`. Buckets idle long enough to
 * be full again are dropped, so memory follows the number of active keys.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; updatedMs: number }>();
  private checks = 0;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
  ) {}

  /** Takes one token; returns 0 when allowed, else the seconds to wait before a token is free. */
  take(key: string, nowMs: number = Date.now()): number {
    if (this.ratePerSecond <= 0) return 0;
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
}
