/**
 * How long the event loop was late, in windows of fixed length: Node's own delay histogram
 * (perf_hooks.monitorEventLoopDelay), read and reset once per window, so `/healthz` can show the
 * latest whole window without any caller being able to reset it.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** Sampling resolution of Node's histogram; delays shorter than this are not seen. */
const RESOLUTION_MS = 10;
const NS_PER_MS = 1e6;

export interface LoopDelayWindow {
  /** End of the window, ISO 8601. */
  at: string;
  windowMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export class EventLoopMonitor {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private timer: NodeJS.Timeout | null = null;
  private last: LoopDelayWindow | null = null;

  constructor(private readonly windowMs = 10_000) {}

  start(): void {
    if (this.timer) return;
    this.histogram.enable();
    this.timer = setInterval(() => this.rotate(), this.windowMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.histogram.disable();
  }

  /** The latest complete window, or null before the first one ends. */
  latest(): LoopDelayWindow | null {
    return this.last;
  }

  private rotate(): void {
    // As Node reports them: each sample is the time between two ticks of a RESOLUTION_MS timer, so an
    // idle loop shows about RESOLUTION_MS and a stall of s ms shows as at most s + RESOLUTION_MS.
    const late = (ns: number) => Math.round((ns / NS_PER_MS) * 10) / 10;
    this.last = {
      at: new Date().toISOString(),
      windowMs: this.windowMs,
      p50Ms: late(this.histogram.percentile(50)),
      p99Ms: late(this.histogram.percentile(99)),
      maxMs: late(this.histogram.max),
    };
    this.histogram.reset();
  }
}
