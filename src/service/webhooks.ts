/**
 * Webhooks (../shared/API.md "Events and webhooks (v1.1)"): a team's subscriptions, and a durable
 * queue of deliveries, each a signed POST of one event, retried with backoff until it is answered
 * 2xx or its give-up time passes.
 *
 * - The line: a webhook's deliveries not yet attempted are the events of its team's log after a
 *   cursor of its own (`webhooks/line/<webhook>`) that it subscribes to; they have no record (a
 *   write costs the same with or without webhooks, and an event costs the queue nothing until a
 *   slot is free to send it). The dispatcher, in one write transaction, records the outcomes of
 *   finished attempts, claims due deliveries (retries, redeliveries, expired claims), and takes
 *   the next events off the lines for the slots left, adding each delivery's record already
 *   claimed and moving the cursors; a crash in between leaves the cursors where they were, so
 *   nothing is lost or doubled, and two nodes never take one event twice. A webhook gets the
 *   events after the one that was newest when it was created.
 * - Delivery: a claim marks a delivery until a time (the attempt's timeout and a margin) and moves
 *   its due entry there, so a claim of a node that died runs again once it expires, and two nodes
 *   of one database never claim the same delivery. The attempt's outcome is written only if the
 *   claim is still the one taken (a redelivery or a deleted webhook meanwhile wins).
 * - Host rules (src/service/ssrf.ts) are checked when a webhook is created and again at each
 *   attempt, against the address then connected to; redirects are not followed (a 3xx fails).
 * - Secrets are sealed at rest (src/service/secrets.ts), as they must be read again to sign; the
 *   sender's thread signs.
 *
 * Records:
 * - `webhooks/hook/<team>/<webhook id>` (WebhookRecord)
 * - `webhooks/line/<webhook id>`: the last event of the team's log its line has passed
 * - `webhooks/delivery/<webhook id>/<event id, 16 digits>` (DeliveryRecord), from its first claim
 * - `webhooks/due/<epoch ms, 15 digits>/<delivery id>`: the delivery's key, while it is pending
 * - `webhooks/cursor/<team>`: written by the fan-out of before the lines (every event up to it
 *   has its deliveries' records); where the line of a webhook of then starts
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { TreehouseError } from '../errors.js';
import type { AsyncStore, AsyncStoreWriteTx, RecordReads } from '../store/asyncTypes.js';
import type { Principal } from './accounts.js';
import type { Config } from './config.js';
import { eventsAfter, eventsBefore, lastEventId, readEvent, storedEvent, type ChangeJoin, type EventLog, type StoredEvent } from './eventLog.js';
import type { ChangeType, EventBus } from './events.js';
import { newId } from './ids.js';
import type { Sealer } from './secrets.js';
import { RemoteUrlError, resolveRemoteHost, type ResolvedAddress } from './ssrf.js';
import { WebhookSender, type AttemptOutcome } from './webhookSender.js';

export { signature } from './webhookSender.js';

export interface WebhookRecord {
  id: string;
  team_id: string;
  url: string;
  events: ChangeType[];
  secret_sealed: string;
  created_at: string;
  /** The team's newest event when the webhook was made: it is sent the events after this one. */
  after_event: number;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

interface DeliveryRecord {
  id: string;
  webhook_id: string;
  team_id: string;
  event_id: string;
  event_type: ChangeType;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  /** Epoch ms of the next attempt while pending, else null. */
  next_attempt_at: number | null;
  /** Epoch ms after which a failing delivery is `failed`. */
  give_up_at: number;
  /** The due entry that names this delivery (while pending). */
  due_key: string | null;
  claim: { token: string; until: number } | null;
}

export interface WebhookView {
  id: string;
  url: string;
  events: ChangeType[];
  created_at: string;
  secret?: string;
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: ChangeType;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  next_attempt_at: string | null;
}

export const WEBHOOK_URL_LENGTH_MAX = 2000;
export const WEBHOOK_SECRET_PATTERN = /^[\x21-\x7e]{16,256}$/;
/** Events of a team's log read per dispatch for its webhooks' lines. */
const LINE_PAGE = 100;
/** Events a page of a webhook's deliveries looks at for those not yet attempted (it may end short, with a cursor). */
const LINE_SCAN_MAX = 10_000;
/** Deliveries removed per transaction when a webhook is deleted. */
const DELETE_BATCH = 1_000;
/**
 * Dispatcher transactions under way at once: a second gathers what finished while the first
 * waits for its commit to be durable (with one, every slot waited for a whole commit more).
 */
const DISPATCHES_MAX = 2;
/** A claim outlives its attempt's timeout by this much. */
const CLAIM_MARGIN_MS = 30_000;
/** The lines of every team with webhooks are looked at this often too (webhooks made through another node). */
const SWEEP_MS = 10_000;
const BACKOFF_JITTER = 0.2;
const USER_AGENT = 'Treehouse-Webhooks/1';
/** Recent events kept in memory for the lines (each is sent to several webhooks). */
const EVENTS_KEPT = 2_000;
const TIMER_DELAY_MS_MAX = 2 ** 31 - 1;

const HOOK_PREFIX = 'webhooks/hook/';
const hookPrefix = (team: string) => `${HOOK_PREFIX}${team}/`;
const hookKey = (team: string, id: string) => `${hookPrefix(team)}${id}`;
const lineKey = (webhook: string) => `webhooks/line/${webhook}`;
const legacyCursorKey = (team: string) => `webhooks/cursor/${team}`;
const deliveryPrefix = (webhook: string) => `webhooks/delivery/${webhook}/`;
const deliveryKey = (webhook: string, eventId: string) => `${deliveryPrefix(webhook)}${eventId.padStart(16, '0')}`;
/**
 * A delivery id names its event, so the id alone finds the record under its webhook; the rest is
 * derived from the webhook and the event, so a delivery not yet attempted (no record) has its id
 * already, the same one its record takes.
 */
const deliveryIdFor = (webhook: string, eventId: string) => `dlv_${eventId}_${createHash('sha256').update(`${webhook}/${eventId}`).digest('base64url').slice(0, 16)}`;
const DELIVERY_ID_PATTERN = /^dlv_(\d{1,16})_[A-Za-z0-9_-]{1,32}$/;
const DUE_PREFIX = 'webhooks/due/';
const dueKey = (at: number, id: string) => `${DUE_PREFIX}${String(Math.max(0, Math.floor(at))).padStart(15, '0')}/${id}`;

function view(record: WebhookRecord): WebhookView {
  return { id: record.id, url: record.url, events: record.events, created_at: record.created_at };
}

function deliveryView(record: DeliveryRecord): DeliveryView {
  return {
    id: record.id,
    event_id: record.event_id,
    event_type: record.event_type,
    status: record.status,
    attempts: record.attempts,
    last_status_code: record.last_status_code,
    last_error: record.last_error,
    created_at: record.created_at,
    next_attempt_at: record.next_attempt_at === null ? null : new Date(record.next_attempt_at).toISOString(),
  };
}

/** A delivery not yet attempted: it has no record, and is due since its event. */
function freshView(hook: WebhookRecord, event: StoredEvent): DeliveryView {
  return {
    id: deliveryIdFor(hook.id, event.id),
    event_id: event.id,
    event_type: event.type,
    status: 'pending',
    attempts: 0,
    last_status_code: null,
    last_error: null,
    created_at: event.at,
    next_attempt_at: event.at,
  };
}

/** Whether `event` is one of `hook`'s deliveries (its line holds it until passed). */
function subscribes(hook: WebhookRecord, event: StoredEvent): boolean {
  return Number(event.id) > hook.after_event && hook.events.includes(event.type);
}

/** The last event `hook`'s line has passed. */
async function lineCursor(tx: RecordReads, hook: WebhookRecord): Promise<number> {
  const at = await tx.getRecord<number>(lineKey(hook.id));
  if (at !== undefined) return at;
  // A webhook of before the lines: its fan-out made the records of the events up to the team's cursor.
  return Math.max(hook.after_event, (await tx.getRecord<number>(legacyCursorKey(hook.team_id))) ?? 0);
}

function invalid(path: string, message: string): TreehouseError {
  return new TreehouseError('invalid_request', message, { issues: [{ path, message }] });
}

/** A webhook URL: absolute http(s), no credentials, no fragment, nothing a parser would quietly drop. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > WEBHOOK_URL_LENGTH_MAX) throw invalid('url', `The URL is longer than ${WEBHOOK_URL_LENGTH_MAX} characters.`);
  // URL parsing strips surrounding spaces and removes tabs and newlines inside: refuse them instead.
  if (/[\u0000-\u0020\u007f]/.test(raw)) throw invalid('url', 'The URL holds spaces or control characters.');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('url', 'The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('url', `Only http and https URLs are accepted, not ${url.protocol.replace(/:$/, '')}.`);
  if (url.hostname === '') throw invalid('url', 'The URL has no host.');
  if (url.username !== '' || url.password !== '') throw invalid('url', 'The URL must not hold credentials (user:password@); sign with the secret instead.');
  if (url.hash !== '' || raw.includes('#')) throw invalid('url', 'The URL must not have a fragment.');
  return url;
}

function backoffMs(config: Config['events'], attempts: number): number {
  const plain = Math.min(config.webhookRetryMaxMs, config.webhookRetryBaseMs * 2 ** Math.min(attempts - 1, 40));
  return Math.round(plain * (1 + BACKOFF_JITTER * (2 * Math.random() - 1)));
}


interface Claimed {
  key: string;
  record: DeliveryRecord;
  hook: WebhookRecord;
  /** The event, when the claim read it already. */
  event?: StoredEvent;
}

/** A team's webhooks and the events after the line furthest behind, read before the dispatcher's write. */
interface Lines {
  team: string;
  hooks: WebhookRecord[];
  events: StoredEvent[];
  /** The team's wake count when read: a wake after it means events may have come meanwhile. */
  wakes: number;
}

interface FinishedAttempt {
  key: string;
  claimed: DeliveryRecord;
  outcome: AttemptOutcome;
  /** Whether the event was still kept (if not, the delivery cannot succeed). */
  eventKept: boolean;
  at: number;
}

export class Webhooks {
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private abort = new AbortController();
  /** Teams whose lines may hold events not yet taken, with how often each was woken (a counter). */
  private readonly waiting = new Map<string, number>();
  /**
   * Webhooks by team, as this node last listed them (the sweep lists them again; this node's
   * changes drop its team's list). A webhook deleted meanwhile is found gone in the dispatcher's
   * transaction (its line record is gone with it); one made through another node joins at the sweep,
   * and that node takes from its line meanwhile.
   */
  private readonly hooksOf = new Map<string, WebhookRecord[]>();
  /** Counts this node's webhook changes: a listing that a change overtook is not kept in hooksOf. */
  private hooksChanged = 0;
  /** Where each line was when this node last moved or read it (lines only move on). */
  private readonly lineAt = new Map<string, number>();
  /** Teams known to have webhooks (this node's view; the sweep corrects it). */
  private readonly teamsWithHooks = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Finished attempts whose outcome the next claiming transaction writes (one transaction for many). */
  private outcomes: FinishedAttempt[] = [];
  /** Recent events of teams with webhooks, `<team>/<id>` (the lines read them from here first). */
  private readonly recent = new Map<string, StoredEvent>();
  /** Secrets opened, by webhook: each is opened once, not per delivery. */
  private readonly secrets = new Map<string, string>();
  /** Sends on a worker thread of lowered priority (src/service/webhookSender.ts). */
  private readonly sender = new WebhookSender();
  /** Dispatcher transactions under way (the next may start while one waits for its commit to be durable). */
  private readonly dispatching = new Set<Promise<void>>();
  private dispatchAgain = false;
  /** Slots the dispatcher transactions under way may fill. */
  private reserved = 0;
  /** When the next due entry is (epoch ms), as the dispatcher transactions under way last saw. */
  private wakeAt: number | null = null;
  /** Attempts since start, by outcome (metrics, tests). */
  readonly attempts = { delivered: 0, failed: 0 };

  constructor(
    private readonly store: AsyncStore,
    /** Subscriptions change through the outbox (they announce nothing), so a request's Idempotency-Key joins them. */
    private readonly outbox: EventLog,
    bus: EventBus,
    private readonly sealer: Sealer,
    private readonly config: Config,
  ) {
    bus.on((event) => {
      const team = event.project.team_id;
      if (!this.teamsWithHooks.has(team)) return;
      this.remember(team, storedEvent(event));
      this.wake(team);
    });
  }

  // -------------------------------------------------------------------------------------------
  // Subscriptions

  async create(principal: Principal, input: { url: string; events: ChangeType[]; secret?: string }, join?: ChangeJoin): Promise<WebhookView> {
    const url = parseWebhookUrl(input.url);
    if (new Set(input.events).size !== input.events.length) throw invalid('events', 'An event type is named twice.');
    if (input.secret !== undefined && !WEBHOOK_SECRET_PATTERN.test(input.secret)) {
      throw invalid('secret', 'A secret is 16 to 256 printable ASCII characters, without spaces.');
    }
    await this.checkHost(url, 'url');
    const secret = input.secret ?? `whsec_${randomBytes(32).toString('base64url')}`;
    const team = principal.teamId;
    const created = await this.outbox.change(async (tx) => {
      const existing = await tx.listRecords(hookPrefix(team), { limit: this.config.events.webhooksPerTeamMax + 1 });
      if (existing.length >= this.config.events.webhooksPerTeamMax) {
        throw invalid('url', `A team may have at most ${this.config.events.webhooksPerTeamMax} webhooks; delete one first.`);
      }
      const record: WebhookRecord = {
        id: newId('whk'),
        team_id: team,
        url: url.href,
        events: input.events,
        secret_sealed: this.sealer.seal(secret),
        created_at: new Date().toISOString(),
        after_event: await lastEventId(tx, team),
      };
      tx.putRecord(hookKey(team, record.id), record);
      tx.putRecord(lineKey(record.id), record.after_event);
      return { ...view(record), secret };
    }, join);
    this.hooksChanged++;
    this.hooksOf.delete(team);
    this.teamsWithHooks.add(team);
    return created;
  }

  async list(principal: Principal): Promise<WebhookView[]> {
    const hooks = await this.store.read((tx) => tx.listRecords<WebhookRecord>(hookPrefix(principal.teamId)));
    return hooks.map(({ value }) => view(value));
  }

  /** Deletes the webhook and every delivery of it: those pending are never sent. */
  async delete(principal: Principal, id: string, join?: ChangeJoin): Promise<void> {
    const team = principal.teamId;
    await this.outbox.change(async (tx) => {
      if (!(await tx.getRecord(hookKey(team, id)))) throw new TreehouseError('not_found', 'Webhook not found.');
      tx.deleteRecord(hookKey(team, id));
      tx.deleteRecord(lineKey(id));
      await deleteDeliveries(tx, id);
    }, join);
    this.hooksChanged++;
    this.hooksOf.delete(team);
    this.lineAt.delete(id);
    this.sender.forget(id);
    this.secrets.delete(id);
    // The webhook is gone already (a worker that finds a delivery of it drops it); the rest goes a batch at a time.
    while ((await this.store.write((tx) => deleteDeliveries(tx, id))) === DELETE_BATCH);
  }

  /**
   * Newest first: those not yet attempted (the line, read from the log: they are all newer than
   * every record, as the line passes events in order), then the records. A page looks at no more
   * than LINE_SCAN_MAX events of the line, so it can end short of `limit` with a cursor.
   */
  async deliveries(principal: Principal, id: string, input: { limit: number; cursor?: string }): Promise<{ deliveries: DeliveryView[]; next_cursor: string | null }> {
    return this.store.read(async (tx) => {
      const hook = await requireHook(tx, principal.teamId, id);
      const prefix = deliveryPrefix(id);
      // The page holds the deliveries of events before this one (all when null).
      let before: number | null = null;
      if (input.cursor !== undefined) {
        const after = Buffer.from(input.cursor, 'base64url').toString('utf8');
        const digits = after.slice(prefix.length);
        if (!after.startsWith(prefix) || !/^\d{16}$/.test(digits)) throw invalid('cursor', 'The cursor is not one this endpoint issued.');
        before = Number(digits);
      }
      const page: DeliveryView[] = [];
      const cursorAt = (eventId: string | number) => Buffer.from(deliveryKey(id, String(eventId)), 'utf8').toString('base64url');
      const passed = await lineCursor(tx, hook);
      if (before === null || before > passed + 1) {
        let scanned = 0;
        let from = before;
        scan: for (;;) {
          const wanted = Math.min(1_000, LINE_SCAN_MAX - scanned);
          const chunk = await eventsBefore(tx, hook.team_id, from, wanted);
          for (const event of chunk) {
            if (Number(event.id) <= passed) break scan;
            if (subscribes(hook, event)) {
              if (page.length === input.limit) return { deliveries: page, next_cursor: cursorAt(page[page.length - 1].event_id) };
              page.push(freshView(hook, event));
            }
            scanned++;
            from = Number(event.id);
          }
          if (chunk.length < wanted) break;
          // Looked at as many as a page may: the rest of the line is on the next page.
          if (scanned >= LINE_SCAN_MAX) return { deliveries: page, next_cursor: cursorAt(from!) };
        }
      }
      // Records of events past `passed` were made after it was read (a read is not one snapshot):
      // the scan above listed those events already, so the records start at `passed`.
      const recordsBefore = before === null ? passed + 1 : Math.min(before, passed + 1);
      const found = await tx.listRecords<DeliveryRecord>(prefix, {
        reverse: true,
        after: deliveryKey(id, String(recordsBefore)),
        limit: input.limit - page.length + 1,
      });
      const records = found.slice(0, input.limit - page.length);
      page.push(...records.map(({ value }) => deliveryView(value)));
      const more = found.length > records.length;
      return { deliveries: page, next_cursor: more ? cursorAt(page[page.length - 1].event_id) : null };
    });
  }

  /**
   * Sends the delivery again, now, under the same id; its give-up time starts over. One not yet
   * attempted is left in its line, which sends it in its turn (a free slot would have taken it).
   */
  async redeliver(principal: Principal, webhookId: string, deliveryId: string, join?: ChangeJoin): Promise<DeliveryView> {
    const now = Date.now();
    const notFound = () => new TreehouseError('not_found', 'Delivery not found.');
    // Whether the last run of the transaction queued an attempt (it may run more than once).
    let queued = false;
    const delivery = await this.outbox.change(async (tx) => {
      queued = false;
      const hook = await requireHook(tx, principal.teamId, webhookId);
      const eventId = DELIVERY_ID_PATTERN.exec(deliveryId)?.[1];
      if (eventId === undefined) throw notFound();
      const key = deliveryKey(webhookId, eventId);
      const record = await tx.getRecord<DeliveryRecord>(key);
      if (!record) {
        const event = Number(eventId) > (await lineCursor(tx, hook)) ? await readEvent(tx, hook.team_id, Number(eventId)) : undefined;
        if (event && subscribes(hook, event) && deliveryIdFor(hook.id, event.id) === deliveryId) return freshView(hook, event);
        throw notFound();
      }
      if (record.id !== deliveryId) throw notFound();
      if (!(await readEvent(tx, record.team_id, Number(record.event_id)))) {
        throw new TreehouseError('events_expired', `Event ${record.event_id} is no longer kept, so it cannot be sent again.`);
      }
      if (record.due_key) tx.deleteRecord(record.due_key);
      const next: DeliveryRecord = {
        ...record,
        status: 'pending',
        next_attempt_at: now,
        give_up_at: now + this.config.events.webhookGiveUpMs,
        due_key: dueKey(now, record.id),
        claim: null,
      };
      tx.putRecord(next.due_key!, key);
      tx.putRecord(key, next);
      queued = true;
      return deliveryView(next);
    }, join);
    if (queued) this.dispatch();
    return delivery;
  }

  // -------------------------------------------------------------------------------------------
  // The dispatcher

  /** Starts fanning out and delivering: what was queued before a restart is sent when due. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    void this.sweep();
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
  }

  /** Stops: attempts under way are cut short and run again later; the queue stays. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.timer = this.sweepTimer = null;
    this.abort.abort();
    // The sender's end answers the attempts under way (cut short), so waiting for them is short.
    await this.sender.stop();
    await Promise.allSettled([...this.inFlight.values(), ...this.dispatching]);
    // Outcomes not yet written (a delivery answered just before the stop is not sent again after it).
    const finished = this.outcomes;
    this.outcomes = [];
    if (finished.length > 0) {
      await this.store
        .write(async (tx) => {
          for (const done of finished) await this.recordOutcomeInTx(tx, done);
        })
        .catch(() => {
          // The store is closing: their claims expire and they are sent again after the restart.
        });
    }
  }

  /** Another node appended events to `team`'s log (src/service/nodeSignals.ts): take them off the lines here too. */
  teamChanged(team: string): void {
    if (this.teamsWithHooks.has(team)) this.wake(team);
  }

  /** Changes elsewhere may have gone unheard: look at every team with webhooks now. */
  everythingChanged(): void {
    if (this.running) void this.sweep();
  }

  /**
   * Looks at the lines of every team with webhooks (at start, and every SWEEP_MS: a webhook made
   * through another node is learnt of here, and a change no signal told of is found).
   */
  private async sweep(): Promise<void> {
    try {
      const changes = this.hooksChanged;
      const hooks = await this.store.read((tx) => tx.listRecords<WebhookRecord>(HOOK_PREFIX));
      const teams = new Set(hooks.map(({ value }) => value.team_id));
      this.hooksOf.clear();
      // A webhook made or deleted through this node while the listing ran may be missing from it
      // (or still in it): then keep and forget nothing (the team just made was added already).
      if (changes === this.hooksChanged) {
        for (const { value } of hooks) {
          const list = this.hooksOf.get(value.team_id) ?? [];
          list.push(value);
          this.hooksOf.set(value.team_id, list);
        }
        const ids = new Set(hooks.map(({ value }) => value.id));
        for (const id of [...this.lineAt.keys()]) if (!ids.has(id)) this.lineAt.delete(id);
        for (const team of [...this.teamsWithHooks]) if (!teams.has(team)) this.teamsWithHooks.delete(team);
      }
      for (const team of teams) {
        this.teamsWithHooks.add(team);
        this.waiting.set(team, (this.waiting.get(team) ?? 0) + 1);
      }
      this.dispatch();
    } catch {
      // The store is closing; the next sweep looks again.
    }
  }

  /** `team`'s log may have grown: its lines are looked at by the next dispatch. */
  private wake(team: string): void {
    this.waiting.set(team, (this.waiting.get(team) ?? 0) + 1);
    this.dispatch();
  }

  /** Events of `team` after `after` in id order, at most `limit`: from memory while it has them, then the log. */
  private async eventsAfter(tx: RecordReads, team: string, after: number, limit: number): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    for (let id = after + 1; out.length < limit; id++) {
      const event = this.recent.get(`${team}/${id}`);
      if (!event) break;
      out.push(event);
    }
    if (out.length < limit) {
      const read = await eventsAfter(tx, team, after + out.length, limit - out.length);
      for (const event of read) this.remember(team, event);
      out.push(...read);
    }
    return out;
  }

  private remember(team: string, event: StoredEvent): void {
    this.recent.set(`${team}/${event.id}`, event);
    // Oldest first (a Map keeps insertion order).
    for (const key of this.recent.keys()) {
      if (this.recent.size <= EVENTS_KEPT) break;
      this.recent.delete(key);
    }
  }

  /** Claims and starts due deliveries, up to the concurrency; then waits for the next due one. */
  private dispatch(): void {
    if (!this.running) return;
    // A second run only for slots the one under way did not take, or outcomes to write (the
    // slots it holds may come back unused: it looks again once it ends).
    const free = this.config.events.webhookConcurrency - this.inFlight.size - this.reserved;
    if (this.dispatching.size >= DISPATCHES_MAX || (this.dispatching.size > 0 && free <= 0 && this.outcomes.length === 0)) {
      this.dispatchAgain = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const run: Promise<void> = this.claimDue()
      .catch(() => 1_000)
      .then((waitMs) => {
        this.dispatching.delete(run);
        if (!this.running) return;
        // The earliest wake any run asked for: a run's listing may have missed what another committed.
        if (waitMs !== null) this.wakeAt = Math.min(this.wakeAt ?? Infinity, Date.now() + waitMs);
        if (this.dispatchAgain) {
          this.dispatchAgain = false;
          this.dispatch();
        } else if (this.wakeAt !== null && this.dispatching.size === 0) {
          const wait = this.wakeAt - Date.now();
          this.wakeAt = null;
          this.timer = setTimeout(() => {
            this.timer = null;
            this.dispatch();
          }, Math.min(TIMER_DELAY_MS_MAX, Math.max(0, wait)));
          this.timer.unref();
        }
      });
    this.dispatching.add(run);
  }

  /**
   * One write transaction for everything the dispatcher has to record: the outcomes of finished
   * attempts, then claims of due deliveries, then the next events of the lines for the slots left.
   * Returns how long until the next due entry (null: none, or no slot free).
   */
  private async claimDue(): Promise<number | null> {
    const free = this.config.events.webhookConcurrency - this.inFlight.size - this.reserved;
    const finished = this.outcomes;
    this.outcomes = [];
    if (free <= 0 && finished.length === 0) return null;
    const reserved = Math.max(0, free);
    this.reserved += reserved;
    try {
      return await this.claimDueReserved(free, finished);
    } finally {
      this.reserved -= reserved;
    }
  }

  private async claimDueReserved(free: number, finished: FinishedAttempt[]): Promise<number | null> {
    const now = Date.now();
    // Read before the write, which then reads each delivery it claims and each line's cursor: the
    // queue and the log growing meanwhile do not make it run again (events never change).
    const { due, lines } =
      free <= 0
        ? { due: [], lines: [] }
        : await this.store.read(async (tx) => ({
            due: await tx.listRecords<string>(DUE_PREFIX, { limit: free + this.inFlight.size + this.reserved }),
            lines: await this.readLines(tx),
          }));
    const claimed = await this.store.write(async (tx) => {
      // A retry is due before the entries listed above (read before it was queued): it sets the wake too.
      let nextAt: number | null = null;
      for (const done of finished) {
        const retryAt = await this.recordOutcomeInTx(tx, done);
        if (retryAt !== null) nextAt = Math.min(nextAt ?? Infinity, retryAt);
      }
      const out: Claimed[] = [];
      const caughtUp: Lines[] = [];
      const moved = new Map<string, number>();
      const gone = new Set<string>();
      if (free <= 0) return { out, nextAt, caughtUp, more: false, moved, gone };
      for (const { key: due_key, value: key } of due) {
        const at = Number(due_key.slice(DUE_PREFIX.length, DUE_PREFIX.length + 15));
        if (at > now) {
          nextAt = Math.min(nextAt ?? Infinity, at);
          break;
        }
        const record = await tx.getRecord<DeliveryRecord>(key);
        if (!record || record.due_key !== due_key || record.status !== 'pending') {
          tx.deleteRecord(due_key);
          continue;
        }
        if (this.inFlight.has(record.id)) continue;
        const hook = await tx.getRecord<WebhookRecord>(hookKey(record.team_id, record.webhook_id));
        if (!hook) {
          // Its webhook was deleted: never sent.
          tx.deleteRecord(due_key);
          tx.deleteRecord(key);
          continue;
        }
        const until = now + this.config.events.webhookTimeoutMs + CLAIM_MARGIN_MS;
        const next: DeliveryRecord = { ...record, claim: { token: randomUUID(), until }, due_key: dueKey(until, record.id) };
        tx.deleteRecord(due_key);
        tx.putRecord(next.due_key!, key);
        tx.putRecord(key, next);
        out.push({ key, record: next, hook });
        if (out.length === free) break;
      }
      let more = false;
      for (const line of lines) {
        if (out.length === free) {
          more = true;
          break;
        }
        const taken = await this.takeFromLinesInTx(tx, line, free - out.length, now);
        out.push(...taken.claimed);
        for (const [hook, at] of taken.passed) moved.set(hook, at);
        if (taken.gone) gone.add(line.team);
        if (taken.passedAll && line.events.length < LINE_PAGE) caughtUp.push(line);
        else more = true;
      }
      return { out, nextAt, caughtUp, more, moved, gone };
    });
    for (const [hook, at] of claimed.moved) this.lineAt.set(hook, at);
    for (const team of claimed.gone) this.hooksOf.delete(team);
    for (const line of claimed.caughtUp) if (this.waiting.get(line.team) === line.wakes) this.waiting.delete(line.team);
    this.startAttempts(claimed.out);
    if (claimed.out.length === free || free <= 0) return null;
    // Slots are left and a line has more events than were read: go on at once.
    if (claimed.more) return 0;
    return claimed.nextAt === null ? null : claimed.nextAt - Date.now();
  }

  /** The teams whose lines may hold events, with the events after their line furthest behind. */
  private async readLines(tx: RecordReads): Promise<Lines[]> {
    const lines: Lines[] = [];
    for (const [team, wakes] of this.waiting) {
      let hooks = this.hooksOf.get(team);
      if (!hooks) {
        const changes = this.hooksChanged;
        hooks = (await tx.listRecords<WebhookRecord>(hookPrefix(team))).map(({ value }) => value);
        if (changes === this.hooksChanged) this.hooksOf.set(team, hooks);
      }
      let from = Infinity;
      for (const hook of hooks) {
        let at = this.lineAt.get(hook.id);
        if (at === undefined) this.lineAt.set(hook.id, (at = await lineCursor(tx, hook)));
        from = Math.min(from, at);
      }
      lines.push({ team, hooks, wakes, events: hooks.length === 0 ? [] : await this.eventsAfter(tx, team, from, LINE_PAGE) });
    }
    return lines;
  }

  /**
   * Takes up to `slots` deliveries off the lines of `line.team`'s webhooks, event by event, each
   * added claimed, and moves every line past the events it took or does not subscribe to. A line
   * is read here, in the transaction; a webhook whose line and record are gone was deleted.
   */
  private async takeFromLinesInTx(
    tx: AsyncStoreWriteTx,
    line: Lines,
    slots: number,
    now: number,
  ): Promise<{ claimed: Claimed[]; passedAll: boolean; passed: Map<string, number>; gone: boolean }> {
    const hooks: WebhookRecord[] = [];
    const start = new Map<string, number>();
    let gone = false;
    for (const hook of line.hooks) {
      let at = await tx.getRecord<number>(lineKey(hook.id));
      if (at === undefined) {
        if (!(await tx.getRecord<WebhookRecord>(hookKey(hook.team_id, hook.id)))) {
          gone = true;
          continue;
        }
        at = await lineCursor(tx, hook);
      }
      hooks.push(hook);
      start.set(hook.id, at);
    }
    const passed = new Map(start);
    const claimed: Claimed[] = [];
    let passedAll = true;
    events: for (const event of line.events) {
      const id = Number(event.id);
      for (const hook of hooks) {
        if (id <= passed.get(hook.id)!) continue;
        if (subscribes(hook, event)) {
          if (claimed.length === slots) {
            passedAll = false;
            break events;
          }
          claimed.push({ ...this.addClaimedInTx(tx, hook, event, now), hook, event });
        }
        passed.set(hook.id, id);
      }
    }
    for (const [hook, at] of passed) if (at !== start.get(hook)) tx.putRecord(lineKey(hook), at);
    return { claimed, passedAll, passed, gone };
  }

  /** A delivery's record, at its first claim (a slot is free to send it right after the commit). */
  private addClaimedInTx(tx: AsyncStoreWriteTx, hook: WebhookRecord, event: StoredEvent, now: number): { key: string; record: DeliveryRecord } {
    const key = deliveryKey(hook.id, event.id);
    const id = deliveryIdFor(hook.id, event.id);
    const until = now + this.config.events.webhookTimeoutMs + CLAIM_MARGIN_MS;
    const eventAt = Date.parse(event.at);
    const record: DeliveryRecord = {
      id,
      webhook_id: hook.id,
      team_id: hook.team_id,
      event_id: event.id,
      event_type: event.type,
      status: 'pending',
      attempts: 0,
      last_status_code: null,
      last_error: null,
      created_at: event.at,
      next_attempt_at: now,
      // Retried until 24 h after the event, however long it waited in its line.
      give_up_at: (Number.isFinite(eventAt) ? eventAt : now) + this.config.events.webhookGiveUpMs,
      due_key: dueKey(until, id),
      claim: { token: randomUUID(), until },
    };
    tx.putRecord(key, record);
    tx.putRecord(record.due_key!, key);
    return { key, record };
  }

  private startAttempts(claimed: Claimed[]): void {
    for (const { key, record, hook, event } of claimed) {
      const attempt = this.attempt(key, record, hook, event).finally(() => {
        this.inFlight.delete(record.id);
        this.dispatch();
      });
      this.inFlight.set(record.id, attempt);
    }
  }

  /**
   * Writes an attempt's outcome, unless the claim it ran under was replaced (a redelivery, a deleted
   * webhook). Returns when the retry it queued is due (null: none).
   */
  private async recordOutcomeInTx(tx: AsyncStoreWriteTx, { key, claimed, outcome, eventKept, at }: FinishedAttempt): Promise<number | null> {
    const current = await tx.getRecord<DeliveryRecord>(key);
    if (!current || current.claim?.token !== claimed.claim!.token) return null;
    if (current.due_key) tx.deleteRecord(current.due_key);
    const attempts = current.attempts + 1;
    const base = { ...current, attempts, last_status_code: outcome.statusCode, last_error: outcome.error, claim: null };
    let next: DeliveryRecord;
    if (outcome.ok) next = { ...base, status: 'delivered', next_attempt_at: null, due_key: null };
    else {
      const retryAt = at + backoffMs(this.config.events, attempts);
      if (retryAt > current.give_up_at || !eventKept) next = { ...base, status: 'failed', next_attempt_at: null, due_key: null };
      else {
        next = { ...base, status: 'pending', next_attempt_at: retryAt, due_key: dueKey(retryAt, current.id) };
        tx.putRecord(next.due_key!, key);
      }
    }
    tx.putRecord(key, next);
    return next.next_attempt_at;
  }

  private async attempt(key: string, claimed: DeliveryRecord, hook: WebhookRecord, known: StoredEvent | undefined): Promise<void> {
    let outcome: AttemptOutcome;
    const event =
      known ?? this.recent.get(`${claimed.team_id}/${claimed.event_id}`) ?? (await this.store.read((tx) => readEvent(tx, claimed.team_id, Number(claimed.event_id))));
    if (!event) outcome = { ok: false, statusCode: null, error: 'The event is no longer kept.' };
    else outcome = await this.post(hook, claimed, event);
    if (this.abort.signal.aborted) {
      // Stopped mid-attempt: the claim expires and the delivery is sent again after the restart.
      return;
    }
    if (outcome.ok) this.attempts.delivered++;
    else this.attempts.failed++;
    // Written by the next claiming transaction (dispatch runs once this attempt leaves inFlight); if
    // that never commits (the store closing), the claim expires and the attempt runs again.
    this.outcomes.push({ key, claimed, outcome, eventKept: event !== undefined, at: Date.now() });
  }

  /** One signed POST, to an address checked now (DNS may have changed since the webhook was made). */
  private async post(hook: WebhookRecord, delivery: DeliveryRecord, event: StoredEvent): Promise<AttemptOutcome> {
    const url = new URL(hook.url);
    let addresses: ResolvedAddress[];
    try {
      addresses = await resolveRemoteHost(url.hostname, this.config.allowPrivateGitHosts);
    } catch (error) {
      return { ok: false, statusCode: null, error: error instanceof RemoteUrlError ? error.message : String(error) };
    }
    let secret = this.secrets.get(hook.id);
    if (secret === undefined) {
      try {
        secret = this.sealer.open(hook.secret_sealed);
      } catch {
        return { ok: false, statusCode: null, error: 'The secret could not be read (was the server secret changed?).' };
      }
      this.secrets.set(hook.id, secret);
    }
    return this.sender.send({
      webhookId: hook.id,
      url: hook.url,
      addresses,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'treehouse-event': event.type,
        'treehouse-delivery': delivery.id,
      },
      // The same bytes at every attempt: the log's fields in the log's order.
      body: JSON.stringify(event),
      secret,
      timeoutMs: this.config.events.webhookTimeoutMs,
      socketsMax: this.config.events.webhookConcurrency,
    });
  }

  private async checkHost(url: URL, path: string): Promise<void> {
    try {
      await resolveRemoteHost(url.hostname, this.config.allowPrivateGitHosts);
    } catch (error) {
      if (error instanceof RemoteUrlError) throw invalid(path, error.message);
      throw error;
    }
  }
}

async function requireHook(tx: RecordReads, team: string, id: string): Promise<WebhookRecord> {
  const hook = await tx.getRecord<WebhookRecord>(hookKey(team, id));
  if (!hook) throw new TreehouseError('not_found', 'Webhook not found.');
  return hook;
}

/** Removes up to DELETE_BATCH deliveries of a webhook; returns how many. */
async function deleteDeliveries(tx: AsyncStoreWriteTx, webhookId: string): Promise<number> {
  const found = await tx.listRecords<DeliveryRecord>(deliveryPrefix(webhookId), { limit: DELETE_BATCH });
  for (const { key, value } of found) {
    tx.deleteRecord(key);
    if (value.due_key) tx.deleteRecord(value.due_key);
  }
  return found.length;
}
