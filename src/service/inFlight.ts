/**
 * Background work a request started and did not wait for (a push's or a seed's commit object
 * lists), for whoever must see it finished: a server closing its store, a test reading the result.
 * The work handles its own failures; a rejection here only ends the wait.
 */
export class InFlight {
  private readonly running = new Set<Promise<unknown>>();

  add(work: Promise<unknown>): void {
    this.running.add(work);
    void work.then(
      () => this.running.delete(work),
      () => this.running.delete(work),
    );
  }

  /** Settles once every piece of work added, including any added meanwhile, has settled. */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
