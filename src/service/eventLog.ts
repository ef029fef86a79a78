/**
 * The transactional outbox (../shared/API.md "Events and webhooks (v1.1)"): every change runs in one
 * write transaction that also appends the change's events to its team's event log, so an
 * acknowledged change always has its events and a change that failed has none. Once the
 * transaction is durable the events, with their ids, go on the in-process bus (src/service/events.ts),
 * which wakes the event streams and the webhook dispatcher.
 *
 * Records:
 * - `events/counter/<team>`: the team's last event id (a number). Read and bumped in the change's
 *   transaction: on a backend whose writers run concurrently (PostgreSQL), this row serialises the
 *   team's changes, so ids commit in id order and a reader tailing the log never sees a later id
 *   before an earlier one.
 * - `events/log/<team>/<id, 16 digits>`: the event as the API shows it (StoredEvent); a listing in
 *   key order is id order.
 * - `events/pruned/<team>`: the highest id pruned (retention): an `after` below it is 410.
 */
import { TreehouseError } from '../errors.js';
import { oidFromHex } from '../git/oid.js';
import type { WriteTx } from '../repo/repo.js';
import type { AsyncStore, AsyncStoreWriteTx, ProjectReads, RecordReads } from '../store/asyncTypes.js';
import type { ChangeData, ChangeEvent, ChangeType, CommitSource, EventBus } from './events.js';
import { PeriodicJob } from './periodicJob.js';
import type { ProjectRecord } from './projects.js';

/** An event as the feed, the stream and webhooks show it. */
export interface StoredEvent {
  id: string;
  type: ChangeType;
  project_id: string;
  at: string;
  data: unknown;
}

/** Adds an event to the change under way; it is written with the change, or not at all. */
export type Announce = <T extends ChangeType>(type: T, project: ProjectRecord, data: ChangeData[T]) => void;

/**
 * Work that joins every change's transaction after its events were appended: it sees the events
 * with their ids, and a throw undoes the whole change.
 */
export type ChangeHook = (tx: AsyncStoreWriteTx, events: readonly ChangeEvent[]) => Promise<void> | void;

/**
 * Adds to a change, in its transaction, what its announced events call for (writes, and events of
 * its own through `announce`), before the events are appended.
 */
export type AnnouncedHook = (tx: AsyncStoreWriteTx, announced: ReadonlyArray<Omit<ChangeEvent, 'id' | 'at'>>, announce: Announce) => Promise<void>;

/** Runs once the change it belongs to is durable (never for a change that failed or ran again). */
export type AfterCommit = () => void;

/**
 * A caller's work that must commit with one particular change (an idempotency key's stored answer,
 * src/service/idempotency.ts): it runs in that change's transaction, after its events and hooks,
 * with the change's result; a throw undoes the change. It runs again whenever the transaction's
 * callback does, and only the last run's AfterCommit is called.
 */
export interface ChangeJoin {
  inTx(tx: AsyncStoreWriteTx, result: unknown): Promise<AfterCommit | void>;
}

const ID_DIGITS = 16;
export const EVENT_ID_PATTERN = /^\d{1,16}$/;
const COUNTER_PREFIX = 'events/counter/';
const counterKey = (team: string) => `${COUNTER_PREFIX}${team}`;
const logPrefix = (team: string) => `events/log/${team}/`;
const logKey = (team: string, id: number) => `${logPrefix(team)}${String(id).padStart(ID_DIGITS, '0')}`;
const prunedKey = (team: string) => `events/pruned/${team}`;
/** Events removed per pruning transaction. */
const PRUNE_BATCH = 1_000;

export function storedEvent(event: ChangeEvent): StoredEvent {
  return { id: event.id, type: event.type, project_id: event.project.id, at: event.at, data: event.data };
}

/** `commit.created` data for a head that moved to `oid`, its parents read in the change's own transaction. */
export async function commitCreated(tx: ProjectReads, branch: string, oid: string, source: CommitSource): Promise<ChangeData['commit.created']> {
  const [info] = await tx.getCommitInfos([oidFromHex(oid)]);
  return { branch, oid, parent_oids: (info?.parents ?? []).map((parent) => parent.toString('hex')), source };
}

/** One event of the team's log, undefined once pruned. */
export function readEvent(tx: RecordReads, team: string, id: number): Promise<StoredEvent | undefined> {
  return tx.getRecord<StoredEvent>(logKey(team, id));
}

/** The team's events after `after`, in id order, at most `limit` (the webhook dispatcher's lines). */
export async function eventsAfter(tx: RecordReads, team: string, after: number, limit: number): Promise<StoredEvent[]> {
  return (await tx.listRecords<StoredEvent>(logPrefix(team), { after: logKey(team, after), limit })).map(({ value }) => value);
}

/** The team's events before `before` (all of them when null), newest first, at most `limit` (a webhook's deliveries not yet attempted). */
export async function eventsBefore(tx: RecordReads, team: string, before: number | null, limit: number): Promise<StoredEvent[]> {
  const found = await tx.listRecords<StoredEvent>(logPrefix(team), { reverse: true, after: before === null ? undefined : logKey(team, before), limit });
  return found.map(({ value }) => value);
}

/** The team's last event id, in the caller's transaction. */
export async function lastEventId(tx: RecordReads, team: string): Promise<number> {
  return (await tx.getRecord<number>(counterKey(team))) ?? 0;
}

export interface EventPage {
  events: StoredEvent[];
  /** The id to pass as `after` for the next page: the last event looked at, or where the page started. */
  next_after: string;
}

/** A change waiting to run (EventLog.changeOfProject), and how its caller is answered. */
interface PendingChange {
  action: (tx: AsyncStoreWriteTx, announce: Announce) => Promise<unknown>;
  join?: ChangeJoin;
  resolve?: (value: unknown) => void;
  reject?: (error: unknown) => void;
}

/** Changes of one project run together in one transaction at most. */
const COMBINED_CHANGES_MAX = 16;

/** How often the pruning job runs. */
const PRUNE_EVERY_MS = 60 * 60_000;

export class EventLog {
  private readonly hooks: ChangeHook[] = [];
  private readonly announcedHooks: AnnouncedHook[] = [];
  private pruning: PeriodicJob | null = null;

  constructor(
    private readonly store: AsyncStore,
    private readonly bus: EventBus,
  ) {}

  /** Runs `hook` in every change's transaction, on the events its action announced. */
  onAnnounced(hook: AnnouncedHook): void {
    this.announcedHooks.push(hook);
  }

  /** Runs `hook` in every change's transaction, after its events are appended. */
  onChange(hook: ChangeHook): void {
    this.hooks.push(hook);
  }

  /**
   * One change: `action` writes through `tx` and announces its events; they are appended to their
   * teams' logs in the same transaction, then published on the bus once it is durable. `action` may
   * run more than once (src/store/asyncTypes.ts): only the last run's events count. `join` joins
   * this change's transaction (ChangeJoin).
   */
  async change<T>(action: (tx: AsyncStoreWriteTx, announce: Announce) => Promise<T>, join?: ChangeJoin): Promise<T> {
    const [result] = await this.changes([{ action, join }]);
    return result as T;
  }

  /**
   * Changes in one transaction, each after the one before it (each sees what those made), with
   * their events and joins; each result, or the first error (then none of them is made). The
   * results may be fewer than the changes: those past them were not run (AsyncStore.writeObjectsMax).
   * With `joining`, changes queued there join at the end of `members` (which then holds them) while
   * the transaction runs, up to COMBINED_CHANGES_MAX: on PostgreSQL its first read of the project
   * may wait for another node's transaction to let go of the project's lock, and what arrived
   * meanwhile goes in with it rather than waiting for one more.
   */
  private async changes(members: PendingChange[], failed?: { at: number }, joining?: PendingChange[]): Promise<unknown[]> {
    let made: Array<{ appended: ChangeEvent[]; afterCommit: AfterCommit | void }> = [];
    const results = await this.store.write(async (tx) => {
      made = [];
      if (failed) failed.at = -1;
      const outs: unknown[] = [];
      const bufferedMax = this.store.writeObjectsMax;
      // A run again (a conflict) runs every member taken so far, then may take more.
      for (let index = 0; index < members.length || (joining && joining.length > 0 && members.length < COMBINED_CHANGES_MAX); index++) {
        // A group ends once it has buffered a write's worth for a store that replays a write in one
        // piece on the event loop (LMDB): sixteen large batch writes would hold the loop sixteen
        // times as long. The rest are given back (the result is shorter than `members`).
        if (index > 0 && bufferedMax !== undefined && (tx.bufferedWrites ?? 0) >= bufferedMax) break;
        if (index === members.length) members.push(joining!.shift()!);
        const { action, join } = members[index];
        const drafts: Array<Omit<ChangeEvent, 'id' | 'at'>> = [];
        const announce: Announce = (type, project, data) => drafts.push({ type, project, data } as Omit<ChangeEvent, 'id' | 'at'>);
        let out: unknown;
        try {
          out = await action(tx, announce);
        } catch (error) {
          if (failed) failed.at = index;
          throw error;
        }
        if (drafts.length > 0) for (const hook of this.announcedHooks) await hook(tx, drafts.slice(), announce);
        const appended = await appendInTx(tx, drafts);
        for (const hook of this.hooks) await hook(tx, appended);
        made.push({ appended, afterCommit: join ? await join.inTx(tx, out) : undefined });
        outs.push(out);
      }
      return outs;
    });
    for (const { appended, afterCommit } of made) {
      // Before the events go out: a listener's own change must already see this one as made.
      afterCommit?.();
      for (const event of appended) this.bus.publish(event);
    }
    return results;
  }

  /** Per project: whether a change of it is under way on this node, and the changes waiting for it. */
  private readonly projectChanges = new Map<number, PendingChange[]>();

  /**
   * A change of project `seq`: started at once when none is under way, else queued behind it. The
   * changes queued while a transaction runs join it (changes() with `joining`), up to
   * COMBINED_CHANGES_MAX; those that come later start the next. Writers of one project wait for each
   * other anyway (its lock), so a transaction, its commit and its fsync, and on PostgreSQL the
   * lock's handoff, are paid once for all of them. When one of them fails, so does that
   * transaction, and each then runs alone, in order, for its own outcome.
   */
  private changeOfProject<T>(seq: number, action: (tx: AsyncStoreWriteTx, announce: Announce) => Promise<T>, join?: ChangeJoin): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: PendingChange = { action, join, resolve: resolve as (value: unknown) => void, reject };
      const waiting = this.projectChanges.get(seq);
      if (waiting) {
        waiting.push(pending);
        return;
      }
      const queue = [pending];
      this.projectChanges.set(seq, queue);
      void this.runQueued(seq, queue);
    });
  }

  private async runQueued(seq: number, queue: PendingChange[]): Promise<void> {
    const alone = (member: PendingChange) => this.change(member.action, member.join).then(member.resolve, member.reject);
    while (queue.length > 0) {
      const batch = [queue.shift()!];
      const failed = { at: -1 };
      let error: unknown;
      const results = await this.changes(batch, failed, queue).catch((reason: unknown) => {
        error = reason;
        return null;
      });
      if (!results && (batch.length === 1 || failed.at === 0)) {
        // It failed first in its transaction, with nothing before it: that is its outcome alone, and
        // the ones after it (not run) go back to the front of the queue.
        queue.unshift(...batch.slice(1));
        batch[0].reject!(error);
        continue;
      }
      if (results) {
        results.forEach((result, index) => batch[index].resolve!(result));
        queue.unshift(...batch.slice(results.length));
        continue;
      }
      if (failed.at < 0) {
        // The transaction failed, not a change in it (a conflict, the store): each alone.
        for (const member of batch) await alone(member);
        continue;
      }
      // A change refused (an expected head that moved, a path that is not there): the ones before
      // it together again, it alone for its own answer, and the ones after it back in the queue.
      queue.unshift(...batch.slice(failed.at + 1));
      const before = batch.slice(0, failed.at);
      if (before.length > 0) {
        const again = await this.changes(before).catch(() => null);
        if (!again) {
          for (const member of before) await alone(member);
        } else {
          again.forEach((result, index) => before[index].resolve!(result));
          // The group did not get to all of them this time: they, then the refused one, go first.
          if (again.length < before.length) {
            queue.unshift(...before.slice(again.length), batch[failed.at]);
            continue;
          }
        }
      }
      await alone(batch[failed.at]);
    }
    this.projectChanges.delete(seq);
  }

  /**
   * A verb's transaction-level core on `record`'s project, and the events its result means, in one
   * transaction; `join` joins it as in change().
   */
  runChange<T>(
    record: ProjectRecord,
    core: (tx: WriteTx) => Promise<T>,
    eventsOf: (result: T, tx: WriteTx, announce: Announce) => Promise<void> | void,
    join?: ChangeJoin,
  ): Promise<T> {
    return this.changeOfProject(
      record.seq,
      async (tx, announce) => {
        const project = tx.project(record.seq);
        const result = await core(project);
        await eventsOf(result, project, announce);
        return result;
      },
      join,
    );
  }

  /** The team's last event id (0 before its first). */
  async lastId(team: string): Promise<number> {
    return this.store.read((tx) => lastEventId(tx, team));
  }

  /**
   * Up to `limit` events of the team after `after` (id order) that pass `filter`, looking at no more
   * than `scanMax` events: a filter that matches rarely ends the page early, and `next_after` then
   * names the last event looked at so the next call goes on from there. 410 when `after` is older
   * than the oldest kept event.
   */
  async page(team: string, input: { after?: string; limit: number; filter?: (event: StoredEvent) => boolean; scanMax?: number }): Promise<EventPage> {
    return this.store.read(async (tx) => {
      const pruned = (await tx.getRecord<number>(prunedKey(team))) ?? 0;
      const after = input.after === undefined ? pruned : Number(input.after);
      if (after < pruned) {
        throw new TreehouseError('events_expired', `Events after ${after} are no longer kept; the oldest kept event follows ${pruned}.`, { oldest_after: String(pruned) });
      }
      return readPage(tx, team, after, input.limit, input.filter, input.scanMax ?? Math.max(input.limit, 10_000));
    });
  }

  /** Prunes events older than `retentionMs` now, then every hour. */
  startPruning(retentionMs: number): void {
    this.pruning ??= new PeriodicJob('pruning the event log', PRUNE_EVERY_MS, () => this.prune(new Date(Date.now() - retentionMs)));
    this.pruning.start();
  }

  async stopPruning(): Promise<void> {
    await this.pruning?.stop();
  }

  /** Removes events older than `cutoff` from every team's log, a batch per transaction. */
  async prune(cutoff: Date): Promise<number> {
    const before = cutoff.toISOString();
    const teams = await this.store.read((tx) => tx.listRecords<number>(COUNTER_PREFIX));
    let removed = 0;
    for (const { key } of teams) {
      const team = key.slice(COUNTER_PREFIX.length);
      for (;;) {
        const count = await this.store.write(async (tx) => {
          const oldest = await tx.listRecords<StoredEvent>(logPrefix(team), { limit: PRUNE_BATCH });
          // Ids and times rise together, so the expired events are a prefix of the log.
          const cut = oldest.findIndex(({ value }) => value.at >= before);
          const taken = cut < 0 ? oldest : oldest.slice(0, cut);
          for (const { key: eventKey } of taken) tx.deleteRecord(eventKey);
          if (taken.length > 0) tx.putRecord(prunedKey(team), Number(taken[taken.length - 1].value.id));
          return taken.length;
        });
        removed += count;
        if (count < PRUNE_BATCH) break;
      }
    }
    return removed;
  }
}

async function readPage(
  tx: RecordReads,
  team: string,
  after: number,
  limit: number,
  filter: ((event: StoredEvent) => boolean) | undefined,
  scanMax: number,
): Promise<EventPage> {
  const events: StoredEvent[] = [];
  let last = after;
  let scanned = 0;
  let cursor = logKey(team, after);
  while (events.length < limit && scanned < scanMax) {
    const wanted = Math.min(1_000, scanMax - scanned);
    const chunk = await tx.listRecords<StoredEvent>(logPrefix(team), { after: cursor, limit: wanted });
    for (const { key, value } of chunk) {
      cursor = key;
      scanned++;
      last = Number(value.id);
      if (!filter || filter(value)) {
        events.push(value);
        if (events.length === limit) break;
      }
    }
    if (chunk.length < wanted) break;
  }
  return { events, next_after: String(last) };
}

/** Gives each draft its team's next id and writes it to the log, in the caller's transaction. */
async function appendInTx(tx: AsyncStoreWriteTx, drafts: Array<Omit<ChangeEvent, 'id' | 'at'>>): Promise<ChangeEvent[]> {
  if (drafts.length === 0) return [];
  const at = new Date().toISOString();
  const next = new Map<string, number>();
  const out: ChangeEvent[] = [];
  for (const draft of drafts) {
    const team = draft.project.team_id;
    let last = next.get(team);
    if (last === undefined) last = (await tx.getRecord<number>(counterKey(team))) ?? 0;
    const id = last + 1;
    next.set(team, id);
    const event = { ...draft, id: String(id), at } as ChangeEvent;
    tx.putRecord<StoredEvent>(logKey(team, id), storedEvent(event));
    out.push(event);
  }
  for (const [team, last] of next) tx.putRecord(counterKey(team), last);
  return out;
}
