/**
 * Idempotency-Key (../shared/API.md "Workspace additions (v1.1)"): the first request with a key
 * stores its status and body for 24 hours per API key, in the same transaction as its effect; a
 * repeat with the same method, URL and body gets the stored answer and changes nothing; the same key
 * with another request is 422 `idempotency_key_reused`; a repeat while the first runs is 409
 * `idempotency_in_progress`.
 *
 * - **One effect, whatever the timing.** A request's claim (Claim) joins the one change that is its
 *   effect (EventLog.change's `join`), which reads the key's record in its own transaction: a live
 *   record there means another request (on this node or another) got there first, so the change
 *   throws and rolls back, and the request answers with what that one stored. Writers are
 *   serialisable (src/store/asyncTypes.ts), so of two requests racing, one commits its effect and
 *   its answer, the other neither.
 * - **In progress** is known on the node running the first request (an in-memory map, bounded);
 *   a repeat on another node runs until its change finds the record, and answers 409 when the
 *   record it collided with is not committed (yet, or ever).
 * - Requests that make no change (read-only POSTs) store their answer in a write of their own.
 * - Failures are not stored: a request that failed changed nothing, so a retry runs again.
 *
 * Records:
 * - `idempotency/<key id>/<sha256 of the Idempotency-Key, hex>` (IdempotencyRecord)
 * - `idempotency-expiry/<expires_at, epoch ms, 15 digits>/<key id>/<hash>`: the record's key, so
 *   pruning reads the expired records in time order and never scans the live ones.
 */
import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TreehouseError } from '../errors.js';
import type { AsyncStore, AsyncStoreWriteTx, ProjectReads, RecordReads } from '../store/asyncTypes.js';
import type { AfterCommit, ChangeJoin } from './eventLog.js';
import { PeriodicJob } from './periodicJob.js';
import type { Sealer } from './secrets.js';

/** The header's value: 1 to 255 printable ASCII characters (spaces included). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/**
 * A stored answer's JSON at most: write answers are a few KiB at most (paths, names and URLs are
 * bounded by the request limits), so only read-only answers (a merge preview, a lint) come near it.
 */
export const ANSWER_BYTES_MAX = 1024 * 1024;
/** Keys whose first request runs on this node, at most: past it a repeat is not told 409 here (the record check still holds). */
export const RUNNING_KEYS_MAX = 10_000;
/** Body bytes hashed per turn of the event loop. */
const FINGERPRINT_SLICE_BYTES = 1024 * 1024;
const PRUNE_BATCH = 1_000;
const PRUNE_EVERY_MS = 60 * 60_000;

const RECORD_PREFIX = 'idempotency/';
const EXPIRY_PREFIX = 'idempotency-expiry/';
const EXPIRY_DIGITS = 15;
const expiryKey = (expiresAt: number, recordKey: string) =>
  `${EXPIRY_PREFIX}${String(expiresAt).padStart(EXPIRY_DIGITS, '0')}/${recordKey.slice(RECORD_PREFIX.length)}`;

interface IdempotencyRecord {
  /** requestFingerprint() of the first request. */
  fingerprint: string;
  status: number;
  /** The answer's JSON text, sealed like credentials (a webhook's creation answer shows its secret). */
  body_sealed: string;
  created_at: string;
  /** Epoch ms after which the record counts as absent. */
  expires_at: number;
}

/** A request that carries an Idempotency-Key. */
export interface IdempotentRequest {
  /** The API key that sent it: keys are per API key. */
  keyId: string;
  /** The header's value, checked by idempotencyKeyOf(). */
  key: string;
  /** requestFingerprint() of its method, URL and body. */
  fingerprint: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

/** An answer as sent and kept: its JSON text, so a replay is byte for byte the first answer. */
export interface KeptAnswer {
  status: number;
  json: string;
}

export interface IdempotentOutcome extends KeptAnswer {
  replayed: boolean;
  /** Work after the effect failed (the answer is still the effect's, stored and committed). */
  failedAfterEffect?: unknown;
}

/** What an answer may read: a read transaction, or the effect's own write transaction. */
export type AnswerReads = RecordReads & { project(project: number): ProjectReads };

export interface IdempotentWork<R> {
  /** The request's work; it passes `join` to the change that is its effect. */
  run(join: ChangeJoin): Promise<R>;
  /** The answer to `result`; with `reads` inside the effect's transaction, without them outside any. */
  render(result: R, reads?: AnswerReads): Answer | Promise<Answer>;
  /** The work makes no change (a merge preview, a lint): its answer is stored in a write of its own. */
  readOnly: boolean;
}

export interface IdempotencyOptions {
  /** How long an answer is kept (the contract: 24 hours). */
  ttlMs: number;
}

/** Thrown in the effect's transaction when the key's record is already there: the change rolls back. */
class AnsweredElsewhere extends Error {
  override name = 'AnsweredElsewhere';
}

/**
 * The header's values (each occurrence, as received) checked: undefined when absent; a 400 naming
 * the header when given twice or not 1 to 255 printable ASCII characters.
 */
export function idempotencyKeyOf(values: readonly string[]): string | undefined {
  if (values.length === 0) return undefined;
  const refuse = (message: string) =>
    new TreehouseError('invalid_request', `${IDEMPOTENCY_KEY_HEADER}: ${message}.`, { issues: [{ path: IDEMPOTENCY_KEY_HEADER, message }] });
  if (values.length > 1) throw refuse('give the header once');
  const [value] = values;
  if (value.length === 0) throw refuse('must not be empty');
  if (value.length > 255) throw refuse('at most 255 characters');
  if (!IDEMPOTENCY_KEY_PATTERN.test(value)) throw refuse('printable ASCII characters only (0x20 to 0x7E)');
  return value;
}

/**
 * What makes two requests "the same": SHA-256 over the method, the URL as sent (path and query) and
 * the body's exact bytes. Bytes, not a canonical form of the JSON: a retry resends what it sent,
 * and bytes cannot be equal by accident. Hashed a slice per turn, so a 100 MiB body never holds the
 * event loop.
 */
export async function requestFingerprint(method: string, url: string, body: Buffer | undefined): Promise<string> {
  const hash = createHash('sha256').update(method).update('\0').update(url).update('\0');
  if (body) {
    for (let at = 0; at < body.length; at += FINGERPRINT_SLICE_BYTES) {
      if (at > 0) await nextTurn();
      hash.update(body.subarray(at, at + FINGERPRINT_SLICE_BYTES));
    }
  }
  return hash.digest('hex');
}

function recordKeyOf(request: IdempotentRequest): string {
  return `${RECORD_PREFIX}${request.keyId}/${createHash('sha256').update(request.key).digest('hex')}`;
}

function kept(answer: Answer): KeptAnswer {
  return { status: answer.status, json: JSON.stringify(answer.body) };
}

function tooLarge(answer: KeptAnswer): boolean {
  return Buffer.byteLength(answer.json) > ANSWER_BYTES_MAX;
}

function inProgress(): TreehouseError {
  return new TreehouseError('idempotency_in_progress');
}

function reused(): TreehouseError {
  return new TreehouseError('idempotency_key_reused');
}

/** A request's claim on its key: joins its effect's change and stores the answer there. */
class Claim<R> implements ChangeJoin {
  /** Set once the change that stored the answer is durable. */
  stored: { answer: KeptAnswer; result: unknown } | null = null;
  private render: IdempotentWork<R>['render'] | null;

  constructor(
    private readonly owner: Idempotency,
    readonly recordKey: string,
    readonly fingerprint: string,
    render: IdempotentWork<R>['render'],
  ) {
    this.render = render;
  }

  async inTx(tx: AsyncStoreWriteTx, result: unknown): Promise<AfterCommit> {
    if (this.stored || !this.render) throw new Error('an idempotency claim joins one change, while its request runs');
    const now = this.owner.now();
    const existing = await tx.getRecord<IdempotencyRecord>(this.recordKey);
    if (existing && existing.expires_at > now) throw new AnsweredElsewhere();
    if (existing) tx.deleteRecord(expiryKey(existing.expires_at, this.recordKey));
    const answer = kept(await this.render(result as R, tx));
    // Write answers are far below the cap (ANSWER_BYTES_MAX); past it is a fault, and the change is undone rather than made unanswerable.
    if (tooLarge(answer))
      throw new Error(`a write's answer of ${Buffer.byteLength(answer.json)} bytes is over the ${ANSWER_BYTES_MAX} bytes an idempotency key keeps`);
    this.owner.putRecord(tx, this.recordKey, this.fingerprint, answer, now);
    return () => {
      this.stored = { answer, result };
    };
  }

  /** The request is over: nothing may join any more, and what the render held is let go. */
  close(): void {
    this.render = null;
  }
}

export class Idempotency {
  /** Record key → fingerprint of the request running with it on this node. */
  private readonly running = new Map<string, string>();
  private readonly pruning = new PeriodicJob('pruning idempotency keys', PRUNE_EVERY_MS, () => this.prune(this.now()));
  /** The clock records expire by (Date.now; a test may move it). */
  now: () => number = Date.now;

  constructor(
    private readonly store: AsyncStore,
    private readonly sealer: Sealer,
    private readonly options: IdempotencyOptions,
  ) {}

  /**
   * Answers `request`: the stored answer when one is kept for its key (422 when it was another
   * request's), 409 while the key's first request runs on this node, else runs `work` with the key
   * claimed and keeps its answer. An error of `work` is thrown and nothing is kept.
   */
  async answer<R>(request: IdempotentRequest, work: IdempotentWork<R>): Promise<IdempotentOutcome> {
    const recordKey = recordKeyOf(request);
    const found = await this.store.read((tx) => this.liveRecord(tx, recordKey));
    if (found) return this.replay(found, request.fingerprint);
    // Checked and registered with no await between, so of two repeats only one runs here. One that
    // looked before the first finished and looks here after it is caught by the record check of
    // its change (Claim.inTx).
    const runningFingerprint = this.running.get(recordKey);
    if (runningFingerprint !== undefined) throw runningFingerprint === request.fingerprint ? inProgress() : reused();
    const tracked = this.running.size < RUNNING_KEYS_MAX;
    if (tracked) this.running.set(recordKey, request.fingerprint);
    try {
      return await this.runClaimed(recordKey, request.fingerprint, work);
    } finally {
      if (tracked) this.running.delete(recordKey);
    }
  }

  private async runClaimed<R>(recordKey: string, fingerprint: string, work: IdempotentWork<R>): Promise<IdempotentOutcome> {
    const claim = new Claim(this, recordKey, fingerprint, work.render);
    let result: R;
    try {
      result = await work.run(claim);
    } catch (error) {
      if (error instanceof AnsweredElsewhere) return this.afterCollision(recordKey, fingerprint);
      // The effect and its answer committed, then later work failed (a framework check, freeing a
      // deleted project's storage): the answer is the effect's, as every replay will be.
      if (claim.stored) return { ...claim.stored.answer, replayed: false, failedAfterEffect: error };
      throw error;
    } finally {
      claim.close();
    }
    if (claim.stored) {
      // The answer was rendered from the change's result; the request's own must be that very value.
      if (claim.stored.result !== result) throw new Error(`the answer kept for ${recordKey} was made from another value than the request's result`);
      return { ...claim.stored.answer, replayed: false };
    }
    if (!work.readOnly) throw new Error(`a write request with ${IDEMPOTENCY_KEY_HEADER} made no change that kept its answer`);
    const answer = kept(await work.render(result));
    // A read-only answer over the cap is not kept: a retry reads again, which changes nothing.
    if (tooLarge(answer)) return { ...answer, replayed: false };
    const earlier = await this.store.write(async (tx) => {
      const existing = await tx.getRecord<IdempotencyRecord>(recordKey);
      const now = this.now();
      if (existing && existing.expires_at > now) return existing;
      if (existing) tx.deleteRecord(expiryKey(existing.expires_at, recordKey));
      this.putRecord(tx, recordKey, fingerprint, answer, now);
      return undefined;
    });
    return earlier ? this.replay(earlier, fingerprint) : { ...answer, replayed: false };
  }

  /**
   * The effect's change met the key's record of another request and rolled back. Read again in a
   * write transaction (it runs after the writes queued before it, and is checked against them), so
   * a record seen there is committed: replay it; none means the other request's change did not
   * commit, or not yet, so this one is still in progress as far as anyone knows.
   */
  private async afterCollision(recordKey: string, fingerprint: string): Promise<IdempotentOutcome> {
    const found = await this.store.write((tx) => this.liveRecord(tx, recordKey));
    if (!found) throw inProgress();
    return this.replay(found, fingerprint);
  }

  private replay(record: IdempotencyRecord, fingerprint: string): IdempotentOutcome {
    if (record.fingerprint !== fingerprint) throw reused();
    return { status: record.status, json: this.sealer.open(record.body_sealed), replayed: true };
  }

  private async liveRecord(tx: RecordReads, recordKey: string): Promise<IdempotencyRecord | undefined> {
    const record = await tx.getRecord<IdempotencyRecord>(recordKey);
    return record && record.expires_at > this.now() ? record : undefined;
  }

  /** Writes the key's record and its expiry entry in `tx`. */
  putRecord(tx: AsyncStoreWriteTx, recordKey: string, fingerprint: string, answer: KeptAnswer, now: number): void {
    const expiresAt = now + this.options.ttlMs;
    const record: IdempotencyRecord = {
      fingerprint,
      status: answer.status,
      body_sealed: this.sealer.seal(answer.json),
      created_at: new Date(now).toISOString(),
      expires_at: expiresAt,
    };
    tx.putRecord(recordKey, record);
    tx.putRecord(expiryKey(expiresAt, recordKey), recordKey);
  }

  /** Keys whose first request runs on this node now. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Prunes expired records now, then every hour. */
  startPruning(): void {
    this.pruning.start();
  }

  async stopPruning(): Promise<void> {
    await this.pruning.stop();
  }

  /** Removes the records expired at `now`, a batch per transaction, oldest first; returns how many expiry entries it removed. */
  async prune(now: number): Promise<number> {
    // Entries of expiry times up to `now` sort before this key (the times have a fixed width).
    const cut = `${EXPIRY_PREFIX}${String(now + 1).padStart(EXPIRY_DIGITS, '0')}/`;
    let removed = 0;
    for (;;) {
      const count = await this.store.write(async (tx) => {
        const due = (await tx.listRecords<string>(EXPIRY_PREFIX, { limit: PRUNE_BATCH })).filter(({ key }) => key < cut);
        const records = await Promise.all(due.map(({ value }) => tx.getRecord<IdempotencyRecord>(value)));
        due.forEach(({ key, value }, index) => {
          tx.deleteRecord(key);
          // A key used again after expiring has a new record (and expiry entry) under the same key.
          const record = records[index];
          if (record && record.expires_at <= now) tx.deleteRecord(value);
        });
        return due.length;
      });
      removed += count;
      if (count < PRUNE_BATCH) return removed;
    }
  }
}
