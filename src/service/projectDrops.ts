/**
 * Frees the stored data of deleted projects in the background, one project number at a time, in
 * the order they came. A project's DELETE is answered once the project is gone from every read
 * (its records, in one transaction); what its number still holds is dropped here, a write of a
 * bounded number of entries at a time, as GitHub answers a repository's deletion at once and frees
 * it later. The number stays marked unowned until its last entry is gone, so a process that dies
 * first leaves the rest to the next start (Projects.start), on whichever node starts.
 */

/** Wait after a failed drop (a database restarting) before the same number is tried again. */
const RETRY_MS = 1_000;

export class ProjectDrops {
  /** Numbers waiting or being dropped, in order; the first is the one under way. */
  private readonly queue: number[] = [];
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Ends the wait before a retry early, when the drops are stopped. */
  private wake: (() => void) | null = null;

  constructor(
    /**
     * One write of a drop: removes some of what `seq` holds, or its unowned mark once nothing is
     * left, and then answers true. May throw; it is then run again.
     */
    private readonly dropSome: (seq: number) => Promise<boolean>,
    private readonly onError: (seq: number, error: unknown) => void = () => undefined,
  ) {}

  /** Queues a number (once, however often it is added). */
  add(seq: number): void {
    if (this.stopped) return;
    if (!this.queue.includes(seq)) this.queue.push(seq);
    this.running ??= this.run().finally(() => {
      this.running = null;
    });
  }

  /** Numbers not yet freed (the one under way included). */
  get backlog(): number {
    return this.queue.length;
  }

  /** Resolves once every queued number is freed, or the drops are stopped (for tests and benchmarks). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Takes numbers again after stop(). */
  resume(): void {
    this.stopped = false;
  }

  /** Stops after the write under way; what is left stays marked unowned for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
    this.queue.length = 0;
  }

  private async run(): Promise<void> {
    while (!this.stopped && this.queue.length > 0) {
      const seq = this.queue[0];
      try {
        if (await this.dropSome(seq)) this.queue.shift();
      } catch (error) {
        if (this.stopped) return;
        this.onError(seq, error);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RETRY_MS);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = null;
      }
    }
  }
}
