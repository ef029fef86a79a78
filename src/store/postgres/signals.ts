/**
 * Signals between the nodes of one database (src/store/asyncTypes.ts StoreSignals) on PostgreSQL's
 * LISTEN/NOTIFY: a write transaction sends its signals with pg_notify in the transaction, which the
 * server delivers to every listening session once it commits (never when it rolls back), in commit
 * order.
 *
 * The node listens on one connection of its own. postgres.js's `listen` re-listens once when its
 * connection closes and gives up if the server is still down at that moment, so this keeps its own:
 * when the connection is lost it tries again every RETRY_MS until LISTEN succeeds. Each time
 * listening starts (the first time too) every listener is told "messages may have been missed"
 * (null), so they look again at what they follow: a server restart costs the listeners one look,
 * not their signals from then on. `hears` says whether a channel is listened to now.
 *
 * A node hears its own writes' signals when each write commits, before the write resolves
 * (deliverOwn), not when the database echoes them: a cache a node keeps on the word of signals
 * is then never stale to that node's own next request. Every message goes out marked with the
 * sending node (markedSignal), and the echo of this node's is dropped.
 */
import postgres from 'postgres';

/** Between attempts to listen again after the connection was lost. */
const RETRY_MS = 500;
/** What pg_notify takes (8,000 bytes, less than that by the channel's name): kept well under. */
export const SIGNAL_MESSAGE_BYTES_MAX = 7_000;
export const SIGNAL_CHANNEL_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;

/** A message as pg_notify sends it: the sending node's mark (no space in it), a space, the message. */
export function markedSignal(node: string, message: string): string {
  return `${node} ${message}`;
}

export class SignalListener {
  private readonly sql: postgres.Sql;
  private readonly listeners = new Map<string, Set<(message: string | null) => void>>();
  /** Channels LISTENed to on the present connection. */
  private readonly listening = new Set<string>();
  /** Channels whose listeners were told (null) that listening started on the present connection. */
  private readonly told = new Set<string>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** The LISTEN statements under way, if any (one run at a time). */
  private subscribing: Promise<void> | null = null;
  private closed = false;

  /** `node`: this node's mark (markedSignal); its echoed signals are not delivered again. */
  constructor(
    url: string,
    options: postgres.Options<{}>,
    private readonly node: string,
  ) {
    this.sql = postgres(url, {
      ...options,
      max: 1,
      // Kept open: a recycled connection would cost every listener a look.
      max_lifetime: null,
      onclose: () => this.connectionLost(),
      // Passed through to the connection by postgres.js, though its types do not name it.
      ...({ onnotify: (channel: string, message: string) => this.deliver(channel, message) } as object),
    });
  }

  listen(channel: string, listener: (message: string | null) => void): () => void {
    if (!SIGNAL_CHANNEL_PATTERN.test(channel)) throw new RangeError(`signal channel ${JSON.stringify(channel)} is not lowercase letters, digits and "_"`);
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    this.subscribe();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(channel) === set) this.listeners.delete(channel);
    };
  }

  /** Whether `channel` is listened to on a connection that is up, and its listeners were told so. */
  hears(channel: string): boolean {
    return !this.closed && this.told.has(channel);
  }

  /** Resolves once every channel asked for is listened to (tests). */
  async ready(): Promise<void> {
    while (!this.closed && [...this.listeners.keys()].some((channel) => !this.told.has(channel))) {
      this.subscribe();
      await (this.subscribing ?? new Promise((resolve) => setTimeout(resolve, RETRY_MS)));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.sql.end({ timeout: 1 });
  }

  /** A signal of this node's own write, at its commit. */
  deliverOwn(channel: string, message: string): void {
    for (const listener of this.listeners.get(channel) ?? []) listener(message);
  }

  private deliver(channel: string, marked: string): void {
    const space = marked.indexOf(' ');
    // This node's own: its listeners heard it at the commit. A message without a mark comes from a
    // node of a build before marks (a rolling upgrade): delivered as it came.
    if (space >= 0 && marked.slice(0, space) === this.node) return;
    const message = space >= 0 ? marked.slice(space + 1) : marked;
    for (const listener of this.listeners.get(channel) ?? []) listener(message);
  }

  private connectionLost(): void {
    if (this.closed) return;
    this.listening.clear();
    this.told.clear();
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.subscribe();
    }, RETRY_MS);
    this.retryTimer.unref();
  }

  /** LISTENs to the channels not yet listened to on this connection; on failure, tries again later. */
  private subscribe(): void {
    if (this.closed || this.subscribing) return;
    this.subscribing = (async () => {
      try {
        for (const channel of [...this.listeners.keys()]) {
          if (this.listening.has(channel)) continue;
          await this.sql.unsafe(`LISTEN "${channel}"`);
          this.listening.add(channel);
        }
        // Listening (again): whatever was sent before may have gone unheard.
        for (const channel of this.listening) {
          if (this.closed || this.told.has(channel)) continue;
          this.told.add(channel);
          for (const listener of this.listeners.get(channel) ?? []) listener(null);
        }
      } catch {
        // The server is down or restarting: the connection's close (or this) schedules the next try.
        this.listening.clear();
        this.told.clear();
        this.scheduleRetry();
      } finally {
        this.subscribing = null;
      }
      // A channel asked for while this ran.
      if (!this.retryTimer && [...this.listeners.keys()].some((channel) => !this.listening.has(channel))) this.subscribe();
    })();
  }
}
