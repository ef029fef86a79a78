/**
 * Background upkeep that runs now and then every `everyMs` (pruning the event log, expired
 * idempotency keys): one run at a time (a run still going when the next is due is not doubled), a
 * failure logged and retried at the next turn, timers that never hold the process open, and a stop
 * that waits for the run under way.
 */
export class PeriodicJob {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;

  constructor(
    /** Named in the log line of a failed run ("pruning the event log"). */
    private readonly what: string,
    private readonly everyMs: number,
    private readonly run: () => Promise<unknown>,
  ) {}

  start(): void {
    if (this.timer) return;
    const turn = () => {
      if (this.running) return;
      this.running = this.run()
        .catch((error: Error) => process.stderr.write(`${this.what} failed: ${error.stack ?? error.message}\n`))
        .finally(() => (this.running = null));
    };
    turn();
    this.timer = setInterval(turn, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
