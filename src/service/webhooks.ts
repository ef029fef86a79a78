/**
 * Webhooks (../shared/API.md "Events and webhooks (v1.1)"): a team's subscriptions, and a durable
 * queue of deliveries, each a signed POST of one event, retried with backoff until it is answered
 * 2xx or its give-up time passes.
 *
 * - Fan-out: the dispatcher follows each team's event log from a cursor of its own (never the
 *   request's transaction: a write costs the same with or without webhooks) and, in one
 *   transaction, adds a delivery per matching webhook and moves the cursor; a crash in between
 *   leaves the cursor where it was, so nothing is lost or doubled. A webhook gets the events after
 *   the one that was newest when it was created.
 * - Delivery: a worker claims due deliveries in a transaction that marks each claimed until a
 *   time (the attempt's timeout and a margin) and moves its due entry there, so a claim of a node
 *   that died runs again once it expires, and two nodes of one database never claim the same
 *   delivery. The attempt's outcome is written only if the claim is still the one taken (a
 *   redelivery or a deleted webhook meanwhile wins).
 * - Host rules (src/service/ssrf.ts) are checked when a webhook is created and again at each
 *   attempt, against the address then connected to; redirects are not followed (a 3xx fails).
 * - Secrets are sealed at rest (src/service/secrets.ts), as they must be read again to sign.
 *
 * Records:
 * - `webhooks/hook/<team>/<webhook id>` (WebhookRecord)
 * - `webhooks/cursor/<team>`: the last event fanned out
 * - `webhooks/delivery/<webhook id>/<event id, 16 digits>` (DeliveryRecord)
 * - `webhooks/due/<epoch ms, 15 digits>/<delivery id>`: the delivery's key, while it is pending
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { TreehouseError } from '../errors.js';
import type { AsyncStore, AsyncStoreWriteTx, RecordReads } from '../store/asyncTypes.js';
import type { Principal } from './accounts.js';
import type { Config } from './config.js';
import { eventsAfter, lastEventId, readEvent, type ChangeJoin, type EventLog, type StoredEvent } from './eventLog.js';
import type { ChangeType, EventBus } from './events.js';
import { newId } from './ids.js';
import type { Sealer } from './secrets.js';
import { RemoteUrlError, resolveRemoteHost, type ResolvedAddress } from './ssrf.js';
import { WebhookSender, type AttemptOutcome } from './webhookSender.js';

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
/** Events fanned out per transaction. */
const FAN_OUT_PAGE = 100;
/** Deliveries removed per transaction when a webhook is deleted. */
const DELETE_BATCH = 1_000;
/** A claim outlives its attempt's timeout by this much. */
const CLAIM_MARGIN_MS = 30_000;
/** The fan-out of every team with webhooks runs this often too (webhooks made through another node). */
const SWEEP_MS = 10_000;
const BACKOFF_JITTER = 0.2;
const USER_AGENT = 'Treehouse-Webhooks/1';
/** Event bodies kept in memory for the deliveries that follow their fan-out. */
const BODIES_KEPT = 2_000;
const TIMER_DELAY_MS_MAX = 2 ** 31 - 1;

const HOOK_PREFIX = 'webhooks/hook/';
const hookPrefix = (team: string) => `${HOOK_PREFIX}${team}/`;
const hookKey = (team: string, id: string) => `${hookPrefix(team)}${id}`;
const cursorKey = (team: string) => `webhooks/cursor/${team}`;
const deliveryPrefix = (webhook: string) => `webhooks/delivery/${webhook}/`;
const deliveryKey = (webhook: string, eventId: string) => `${deliveryPrefix(webhook)}${eventId.padStart(16, '0')}`;
/** A delivery id names its event, so the id alone finds the record under its webhook. */
const newDeliveryId = (eventId: string) => `dlv_${eventId}_${randomBytes(9).toString('base64url')}`;
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

/** The signature header's value: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export function signature(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
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
  /** Teams whose fan-out is under way, and those woken meanwhile (run again when it ends). */
  private readonly fanning = new Map<string, Promise<void>>();
  private readonly fanAgain = new Set<string>();
  /** Teams known to have webhooks (this node's view; the sweep corrects it). */
  private readonly teamsWithHooks = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Finished attempts whose outcome the next claiming transaction writes (one transaction for many). */
  private outcomes: FinishedAttempt[] = [];
  /** Bodies of recently fanned-out events (each is sent to several webhooks): `<team>/<id>` to its JSON. */
  private readonly bodies = new Map<string, { type: ChangeType; body: string }>();
  /** Secrets opened, by webhook: each is opened once, not per delivery. */
  private readonly secrets = new Map<string, string>();
  /** Sends on a worker thread of lowered priority (src/service/webhookSender.ts). */
  private readonly sender = new WebhookSender();
  private dispatching: Promise<void> | null = null;
  private dispatchAgain = false;
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
      if (this.teamsWithHooks.has(event.project.team_id)) this.fanOut(event.project.team_id);
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
      return { ...view(record), secret };
    }, join);
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
      await deleteDeliveries(tx, id);
    }, join);
    this.sender.forget(id);
    this.secrets.delete(id);
    // The webhook is gone already (a worker that finds a delivery of it drops it); the rest goes a batch at a time.
    while ((await this.store.write((tx) => deleteDeliveries(tx, id))) === DELETE_BATCH);
  }

  async deliveries(principal: Principal, id: string, input: { limit: number; cursor?: string }): Promise<{ deliveries: DeliveryView[]; next_cursor: string | null }> {
    return this.store.read(async (tx) => {
      await requireHook(tx, principal.teamId, id);
      const prefix = deliveryPrefix(id);
      let after: string | undefined;
      if (input.cursor !== undefined) {
        after = Buffer.from(input.cursor, 'base64url').toString('utf8');
        if (!after.startsWith(prefix)) throw invalid('cursor', 'The cursor is not one this endpoint issued.');
      }
      const found = await tx.listRecords<DeliveryRecord>(prefix, { reverse: true, after, limit: input.limit + 1 });
      const page = found.slice(0, input.limit);
      const more = found.length > input.limit;
      return {
        deliveries: page.map(({ value }) => deliveryView(value)),
        next_cursor: more ? Buffer.from(page[page.length - 1].key, 'utf8').toString('base64url') : null,
      };
    });
  }

  /** Sends the delivery again, now, under the same id; its give-up time starts over. */
  async redeliver(principal: Principal, webhookId: string, deliveryId: string, join?: ChangeJoin): Promise<DeliveryView> {
    const now = Date.now();
    const delivery = await this.outbox.change(async (tx) => {
      await requireHook(tx, principal.teamId, webhookId);
      const eventId = DELIVERY_ID_PATTERN.exec(deliveryId)?.[1];
      const key = eventId === undefined ? undefined : deliveryKey(webhookId, eventId);
      const record = key === undefined ? undefined : await tx.getRecord<DeliveryRecord>(key);
      if (!key || !record || record.id !== deliveryId) throw new TreehouseError('not_found', 'Delivery not found.');
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
      return deliveryView(next);
    }, join);
    this.dispatch();
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
    await Promise.allSettled([...this.fanning.values(), ...this.inFlight.values(), this.dispatching]);
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

  /** Another node appended events to `team`'s log (src/service/nodeSignals.ts): fan them out here too. */
  teamChanged(team: string): void {
    if (this.teamsWithHooks.has(team)) this.fanOut(team);
  }

  /** Changes elsewhere may have gone unheard: fan out every team with webhooks now. */
  everythingChanged(): void {
    if (this.running) void this.sweep();
  }

  /**
   * Fans out every team with webhooks (at start, and every SWEEP_MS: a webhook made through another
   * node is learnt of here, and a change no signal told of is found).
   */
  private async sweep(): Promise<void> {
    try {
      const hooks = await this.store.read((tx) => tx.listRecords<WebhookRecord>(HOOK_PREFIX));
      const teams = new Set(hooks.map(({ value }) => value.team_id));
      for (const team of [...this.teamsWithHooks]) if (!teams.has(team)) this.teamsWithHooks.delete(team);
      for (const team of teams) {
        this.teamsWithHooks.add(team);
        this.fanOut(team);
      }
      this.dispatch();
    } catch {
      // The store is closing; the next sweep looks again.
    }
  }

  private fanOut(team: string): void {
    if (!this.running) return;
    if (this.fanning.has(team)) {
      this.fanAgain.add(team);
      return;
    }
    const run = this.fanOutTeam(team)
      .catch(() => {
        // The store is closing or full: the cursor did not move, and the next sweep goes on from it.
      })
      .finally(() => {
        this.fanning.delete(team);
        if (this.fanAgain.delete(team)) this.fanOut(team);
      });
    this.fanning.set(team, run);
  }

  private async fanOutTeam(team: string): Promise<void> {
    while (this.running) {
      // Events never change once written, so they are read before the write: the write itself reads
      // only the cursor and the hooks, and the log growing meanwhile does not make it run again.
      const { hooks, stored } = await this.store.read(async (tx) => ({
        hooks: (await tx.listRecords<WebhookRecord>(hookPrefix(team))).map(({ value }) => value),
        stored: (await tx.getRecord<number>(cursorKey(team))) ?? 0,
      }));
      if (hooks.length === 0) return;
      const from = Math.max(stored, Math.min(...hooks.map((hook) => hook.after_event)));
      const events = await this.store.read((tx) => eventsAfter(tx, team, from, FAN_OUT_PAGE));
      if (events.length === 0) return;
      const added = await this.store.write(async (tx) => {
        // Another node fanned these out meanwhile: read again from where it left the cursor.
        if (((await tx.getRecord<number>(cursorKey(team))) ?? 0) !== stored) return null;
        const current = (await tx.listRecords<WebhookRecord>(hookPrefix(team))).map(({ value }) => value);
        const now = Date.now();
        // Deliveries that free slots can take are claimed here, saving each a claiming transaction.
        let slots = this.config.events.webhookConcurrency - this.inFlight.size;
        const claimed: Claimed[] = [];
        let count = 0;
        for (const event of events) {
          for (const hook of current) {
            if (Number(event.id) <= hook.after_event || !hook.events.includes(event.type)) continue;
            const made = this.enqueueInTx(tx, hook, event, now, slots > 0);
            if (slots-- > 0) claimed.push({ ...made, hook });
            count++;
          }
        }
        tx.putRecord(cursorKey(team), Number(events[events.length - 1].id));
        return { count, claimed };
      });
      if (added?.count) {
        for (const event of events) this.rememberBody(team, event);
        this.startAttempts(added.claimed);
        if (added.count > added.claimed.length) this.dispatch();
      }
      if (added !== null && events.length < FAN_OUT_PAGE) return;
    }
  }

  /** A new delivery, claimed at once when `claim` (a slot is free to send it right after the commit). */
  private enqueueInTx(tx: AsyncStoreWriteTx, hook: WebhookRecord, event: StoredEvent, now: number, claim: boolean): { key: string; record: DeliveryRecord } {
    const key = deliveryKey(hook.id, event.id);
    const id = newDeliveryId(event.id);
    const until = now + this.config.events.webhookTimeoutMs + CLAIM_MARGIN_MS;
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
      created_at: new Date(now).toISOString(),
      next_attempt_at: now,
      give_up_at: now + this.config.events.webhookGiveUpMs,
      due_key: claim ? dueKey(until, id) : dueKey(now, id),
      claim: claim ? { token: randomUUID(), until } : null,
    };
    tx.putRecord(key, record);
    tx.putRecord(record.due_key!, key);
    return { key, record };
  }

  /** Claims and starts due deliveries, up to the concurrency; then waits for the next due one. */
  private dispatch(): void {
    if (!this.running) return;
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.dispatching = this.claimDue()
      .catch(() => 1_000)
      .then((waitMs) => {
        this.dispatching = null;
        if (!this.running) return;
        if (this.dispatchAgain) {
          this.dispatchAgain = false;
          this.dispatch();
        } else if (waitMs !== null) {
          this.timer = setTimeout(() => {
            this.timer = null;
            this.dispatch();
          }, Math.min(TIMER_DELAY_MS_MAX, Math.max(0, waitMs)));
          this.timer.unref();
        }
      });
  }

  /** Claims what is due and free slots allow; returns how long until the next due entry (null: none). */
  private async claimDue(): Promise<number | null> {
    const free = this.config.events.webhookConcurrency - this.inFlight.size;
    const finished = this.outcomes;
    this.outcomes = [];
    if (free <= 0 && finished.length === 0) return null;
    const now = Date.now();
    // Listed before the write, which then reads each delivery it claims: the queue growing meanwhile
    // does not make the claim run again.
    const due = free <= 0 ? [] : await this.store.read((tx) => tx.listRecords<string>(DUE_PREFIX, { limit: free + this.inFlight.size }));
    const claimed = await this.store.write(async (tx) => {
      for (const done of finished) await this.recordOutcomeInTx(tx, done);
      if (free <= 0) return { out: [], nextAt: null };
      const out: Claimed[] = [];
      let nextAt: number | null = null;
      for (const { key: due_key, value: key } of due) {
        const at = Number(due_key.slice(DUE_PREFIX.length, DUE_PREFIX.length + 15));
        if (at > now) {
          nextAt = at;
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
      return { out, nextAt };
    });
    this.startAttempts(claimed.out);
    if (claimed.out.length === free || free <= 0) return null;
    return claimed.nextAt === null ? null : claimed.nextAt - Date.now();
  }

  private startAttempts(claimed: Claimed[]): void {
    for (const { key, record, hook } of claimed) {
      const attempt = this.attempt(key, record, hook).finally(() => {
        this.inFlight.delete(record.id);
        this.dispatch();
      });
      this.inFlight.set(record.id, attempt);
    }
  }

  /** Writes an attempt's outcome, unless the claim it ran under was replaced (a redelivery, a deleted webhook). */
  private async recordOutcomeInTx(tx: AsyncStoreWriteTx, { key, claimed, outcome, eventKept, at }: FinishedAttempt): Promise<void> {
    const current = await tx.getRecord<DeliveryRecord>(key);
    if (!current || current.claim?.token !== claimed.claim!.token) return;
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
  }

  private async attempt(key: string, claimed: DeliveryRecord, hook: WebhookRecord): Promise<void> {
    let outcome: AttemptOutcome;
    let event = this.bodies.get(`${claimed.team_id}/${claimed.event_id}`);
    if (!event) {
      const stored = await this.store.read((tx) => readEvent(tx, claimed.team_id, Number(claimed.event_id)));
      event = stored && { type: stored.type, body: JSON.stringify(stored) };
    }
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
  private rememberBody(team: string, event: StoredEvent): void {
    this.bodies.set(`${team}/${event.id}`, { type: event.type, body: JSON.stringify(event) });
    // Oldest first (a Map keeps insertion order).
    for (const key of this.bodies.keys()) {
      if (this.bodies.size <= BODIES_KEPT) break;
      this.bodies.delete(key);
    }
  }

  private async post(hook: WebhookRecord, delivery: DeliveryRecord, event: { type: ChangeType; body: string }): Promise<AttemptOutcome> {
    const url = new URL(hook.url);
    let addresses: ResolvedAddress[];
    try {
      addresses = await resolveRemoteHost(url.hostname, this.config.allowPrivateGitHosts);
    } catch (error) {
      return { ok: false, statusCode: null, error: error instanceof RemoteUrlError ? error.message : String(error) };
    }
    const { body } = event;
    let secret = this.secrets.get(hook.id);
    if (secret === undefined) {
      try {
        secret = this.sealer.open(hook.secret_sealed);
      } catch {
        return { ok: false, statusCode: null, error: 'The secret could not be read (was the server secret changed?).' };
      }
      this.secrets.set(hook.id, secret);
    }
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'treehouse-event': event.type,
      'treehouse-delivery': delivery.id,
      'treehouse-signature': signature(secret, Math.floor(Date.now() / 1000), body),
    };
    return this.sender.send({
      webhookId: hook.id,
      url: hook.url,
      addresses,
      headers,
      body,
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
