/**
 * The event streams (../shared/API.md GET /events/stream): each open stream follows its team's
 * event log from a cursor, so what it sends is the log's order with no gap and no duplicate,
 * whatever order the bus delivers in.
 *
 * - An event the bus hands over that is the very next of the team (cursor + 1) is sent at once; any
 *   other wakes the stream, which reads the log from its cursor. A wake with no event at all
 *   (`wakeTeam`) does the same: on a backend of several nodes, a change made through another node
 *   reaches this node's streams through the store's signals (src/service/nodeSignals.ts, LISTEN/NOTIFY
 *   on PostgreSQL; README "Change events").
 * - Backpressure: catching up, the stream reads a page of the log only once the client took the last
 *   one; live, a client that lets more than `bufferBytesMax` pile up unsent is closed, and resumes
 *   with Last-Event-ID.
 */
import type { EventBus } from './events.js';
import { storedEvent, type EventLog, type StoredEvent } from './eventLog.js';

/** Where a stream's events go: the HTTP layer frames and writes them. */
export interface StreamSink {
  send(events: StoredEvent[]): void;
  /** Bytes written but not yet taken by the client. */
  bufferedBytes(): number;
  /** Resolves once the client took what was buffered, or the stream closed. */
  drained(): Promise<void>;
  /** Ends the stream (the client may reconnect with Last-Event-ID). */
  close(): void;
}

export interface StreamOptions {
  /** Unsent bytes a client may let pile up before its stream is closed. */
  bufferBytesMax: number;
  /** While catching up, the next page of the log waits until fewer bytes than this are unsent. */
  catchUpBytesMax: number;
}

export const DEFAULT_STREAM_OPTIONS: StreamOptions = { bufferBytesMax: 1024 * 1024, catchUpBytesMax: 64 * 1024 };

const CATCH_UP_PAGE = 500;

export class EventStreams {
  private readonly byTeam = new Map<string, Set<Subscription>>();
  private readonly options: StreamOptions;

  constructor(
    private readonly log: EventLog,
    bus: EventBus,
    options: Partial<StreamOptions> = {},
  ) {
    this.options = { ...DEFAULT_STREAM_OPTIONS, ...options };
    bus.on((event) => {
      const subscriptions = this.byTeam.get(event.project.team_id);
      if (!subscriptions) return;
      const stored = storedEvent(event);
      for (const subscription of subscriptions) subscription.offer(stored);
    });
  }

  /** Open streams, for metrics and tests. */
  get size(): number {
    let count = 0;
    for (const set of this.byTeam.values()) count += set.size;
    return count;
  }

  /**
   * Starts a stream after `after` (an event id), or after the team's newest event when null (new
   * events only). Throws events_expired for an `after` no longer kept; nothing reaches `sink` before
   * the caller calls `start` (once it has answered the request's head).
   */
  async open(team: string, after: string | null, filter: ((event: StoredEvent) => boolean) | undefined, sink: StreamSink): Promise<{ start(): void; close(): void }> {
    // Subscribed before the start is read, so an event committed meanwhile is not missed (the cursor skips what precedes it).
    const subscription = new Subscription(this.log, team, filter, sink, this.options);
    let set = this.byTeam.get(team);
    if (!set) this.byTeam.set(team, (set = new Set()));
    set.add(subscription);
    const remove = () => {
      subscription.closed = true;
      set.delete(subscription);
      if (set.size === 0 && this.byTeam.get(team) === set) this.byTeam.delete(team);
    };
    subscription.onClose = remove;
    let cursor: number;
    try {
      if (after === null) cursor = await this.log.lastId(team);
      else {
        await this.log.page(team, { after, limit: 1 });
        cursor = Number(after);
      }
    } catch (error) {
      remove();
      throw error;
    }
    return { start: () => subscription.start(cursor), close: () => subscription.close() };
  }

  /** Makes the team's streams read the log (a change made elsewhere). */
  wakeTeam(team: string): void {
    for (const subscription of this.byTeam.get(team) ?? []) subscription.wake();
  }

  /** Makes every stream read its log (changes elsewhere may have gone unheard). */
  wakeAll(): void {
    for (const team of [...this.byTeam.keys()]) this.wakeTeam(team);
  }

  closeAll(): void {
    for (const set of [...this.byTeam.values()]) for (const subscription of [...set]) subscription.close();
  }
}

class Subscription {
  closed = false;
  onClose: () => void = () => {};
  /** The last event of the team looked at (sent, or filtered out); null until started. */
  private cursor: number | null = null;
  private pumping = false;
  private again = false;

  constructor(
    private readonly log: EventLog,
    private readonly team: string,
    private readonly filter: ((event: StoredEvent) => boolean) | undefined,
    private readonly sink: StreamSink,
    private readonly options: StreamOptions,
  ) {}

  start(cursor: number): void {
    this.cursor = cursor;
    this.wake();
  }

  offer(event: StoredEvent): void {
    if (this.closed) return;
    const id = Number(event.id);
    if (this.cursor === null || this.pumping || id !== this.cursor + 1) {
      if (this.cursor !== null && id <= this.cursor) return;
      this.wake();
      return;
    }
    this.cursor = id;
    if (!this.filter || this.filter(event)) this.sink.send([event]);
    this.checkBuffer();
  }

  wake(): void {
    if (this.closed || this.cursor === null) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump().finally(() => {
      this.pumping = false;
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    this.sink.close();
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.again = false;
        for (;;) {
          const page = await this.log.page(this.team, { after: String(this.cursor), limit: CATCH_UP_PAGE, filter: this.filter, scanMax: CATCH_UP_PAGE * 4 });
          if (this.closed) return;
          const next = Number(page.next_after);
          if (next <= this.cursor!) break;
          this.cursor = next;
          if (page.events.length > 0) this.sink.send(page.events);
          if (!this.checkBuffer()) return;
          if (this.sink.bufferedBytes() > this.options.catchUpBytesMax) await this.sink.drained();
          if (this.closed) return;
        }
      } while (this.again);
    } catch {
      // The log could not be read (expired while the client lagged, or the store is closing): the client reconnects.
      this.close();
    }
  }

  /** Closes a stream whose client lets too much pile up; false when it did. */
  private checkBuffer(): boolean {
    if (this.sink.bufferedBytes() <= this.options.bufferBytesMax) return true;
    this.close();
    return false;
  }
}
