/**
 * Linked repositories (../shared/API.md, "Git"): after every commit that moves a branch (commit,
 * restore, merge, push) the branch is pushed to the same-named branch of the project's linked
 * repository, asynchronously, from a durable queue.
 *
 * The queue is a set of store records, one per (project, branch), so a burst of commits on a branch
 * coalesces into one push of whatever the head is when the push runs. Each entry carries a ticket:
 * a change queued while a push is under way gets a new ticket, and the finishing push leaves that
 * newer entry in place. A failed push that may succeed later (network, 5xx, a remote that moved
 * under us) is retried with exponential backoff; the server drains the whole queue when it starts.
 * A push is never forced: a remote branch holding commits the project does not have is `diverged`.
 *
 * Several nodes of one store drain the one queue: a node claims an entry in a write transaction
 * (the claim names it and holds until a time it renews while the push runs) before pushing, and no
 * node takes an entry under another's live claim, so one push per branch runs in the cluster at a
 * time, and the claim of a node that died expires (claimTtlMs). A change queued while a push runs
 * keeps that push's claim, which the push releases when it ends, so the next push of the branch
 * waits for it. Records with a claim in a serialisable write rather than FOR UPDATE SKIP LOCKED:
 * a row lock lives as long as its transaction, and a push holds its claim for minutes, across
 * network calls no transaction should span (README "PostgreSQL").
 *
 * Records: `remote-sync/queue/<project id>/<branch>` (QueueEntry) and
 * `remote-sync/state/<project id>` (SyncState, what the API shows as `sync`).
 */
import { randomUUID } from 'node:crypto';
import { TreehouseError } from '../errors.js';
import { oidToHex, type Oid } from '../git/oid.js';
import { BRANCH_REF_PREFIX } from '../git/refname.js';
import { MAIN_BRANCH } from '../repo/repo.js';
import type { AsyncStore, AsyncStoreWriteTx, RecordReads } from '../store/asyncTypes.js';
import type { Principal } from './accounts.js';
import type { Config } from './config.js';
import { checkRemoteHost, endpointFromUrl, pushBranch, RemoteError, type RemoteEndpoint } from './gitClient.js';
import type { Announce, ChangeJoin } from './eventLog.js';
import type { ChangeEvent } from './events.js';
import { projectInTx, type GitRemoteRecord, type ProjectRecord, type Projects } from './projects.js';

export type SyncStatus = 'synced' | 'pending' | 'diverged' | 'error';

/**
 * The latest sync event of a project, over all its branches: `pending` while a push waits or is
 * being retried (`error` then holds the last attempt's failure), else the outcome of the last push.
 */
export interface SyncState {
  status: SyncStatus;
  /** The commit the event is about: queued, pushed, or refused as diverged. */
  oid: string | null;
  at: string | null;
  error: string | null;
}

export interface RemoteView {
  url: string;
  linked_at: string;
  sync: SyncState;
}

interface QueueEntry {
  project_id: string;
  team_id: string;
  branch: string;
  /** The branch head when the change was queued (the push sends the head of its own time). */
  oid: string;
  ticket: string;
  attempts: number;
  /** Milliseconds since the epoch. */
  next_attempt_at: number;
  enqueued_at: string;
  /** The push under way: the node running it holds the entry until `until` (epoch ms), renewed as it runs. */
  claim?: QueueClaim | null;
}

interface QueueClaim {
  token: string;
  node: string;
  until: number;
}

export interface RemoteSyncOptions {
  /** The first retry waits this long; each further one twice as long as the last, up to backoffMaxMs. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Attempts of one queued push before its status becomes `error`. */
  attemptsMax: number;
  /** A remote silent this long fails the attempt. */
  idleTimeoutMs: number;
  /** One push attempt, whole, may take this long. */
  pushTimeMsMax: number;
  /**
   * A claim holds this long unless renewed (a push renews its claim every third of it): the time
   * after which another node takes over the push of a node that died. Every node also looks at the
   * queue this often, for entries another node queued and did not push.
   */
  claimTtlMs: number;
}

export const DEFAULT_REMOTE_SYNC_OPTIONS: RemoteSyncOptions = {
  backoffBaseMs: 1_000,
  backoffMaxMs: 5 * 60_000,
  attemptsMax: 12,
  idleTimeoutMs: 30_000,
  pushTimeMsMax: 10 * 60_000,
  claimTtlMs: 60_000,
};

const QUEUE_PREFIX = 'remote-sync/queue/';
const queuePrefix = (projectId: string) => `${QUEUE_PREFIX}${projectId}/`;
const queueKey = (projectId: string, branch: string) => `${queuePrefix(projectId)}${branch}`;
const stateKey = (projectId: string) => `remote-sync/state/${projectId}`;

/** Drops a project's queued pushes and sync state (unlinked or deleted). */
async function forgetProject(tx: AsyncStoreWriteTx, projectId: string): Promise<void> {
  for (const { key } of await tx.listRecords(queuePrefix(projectId))) tx.deleteRecord(key);
  tx.deleteRecord(stateKey(projectId));
}
/** setTimeout cannot wait longer than this. */
const TIMER_DELAY_MS_MAX = 2 ** 31 - 1;
/** Retry delays are spread by up to this fraction so many failing remotes do not retry in step. */
const BACKOFF_JITTER = 0.2;

export interface LinkInput {
  url: string;
  username?: string;
  token?: string;
}

/** A RemoteError as the 400 a client sees, naming the request field it concerns. */
export function remoteRequestError(error: unknown, path: string): unknown {
  if (!(error instanceof RemoteError)) return error;
  if (error.kind === 'aborted') return new TreehouseError('unavailable', 'The server is shutting down; nothing was created.');
  return new TreehouseError('invalid_request', error.message, { issues: [{ path, message: error.message }] });
}

export class RemoteSync {
  private readonly options: RemoteSyncOptions;
  /** This process, as its claims name it. */
  private readonly node = randomUUID();
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  /** A look at the queue every claimTtlMs, for entries other nodes left. */
  private sweepTimer: NodeJS.Timeout | null = null;
  /** The drain under way, if any; stop() waits for it. */
  private drain: Promise<void> | null = null;
  private wokenWhileDraining = false;
  private abort = new AbortController();
  /** Queue entries found at start: due at once, whatever their backoff said. */
  private readonly dueAtStart = new Set<string>();
  /** Set by start(): the drain's first look at the queue fills dueAtStart. */
  private listDueAtStart = false;
  /** Push attempts since start, by outcome (metrics). */
  readonly attempts = { completed: 0, failed: 0 };

  constructor(
    private readonly store: AsyncStore,
    private readonly projects: Projects,
    private readonly config: Config,
    options: Partial<RemoteSyncOptions> = {},
  ) {
    this.options = { ...DEFAULT_REMOTE_SYNC_OPTIONS, ...options };
    projects.onDelete((tx, record) => forgetProject(tx, record.id));
    projects.outbox.onAnnounced((tx, announced, announce) => this.queueAnnounced(tx, announced, announce));
    // A push queued by a change of this node runs once that change is durable.
    projects.events.on((event) => {
      if (event.type === 'sync.status' && event.data.status === 'pending') this.wake();
    });
  }

  // -------------------------------------------------------------------------------------------
  // Linking

  /**
   * Checks a link request and makes the record to store: the URL parsed (http(s), credentials in it
   * moved out), the host resolved and allowed, the token sealed. Throws a 400 naming `path`.
   */
  async prepareLink(input: LinkInput, path: string): Promise<GitRemoteRecord> {
    try {
      const endpoint = endpointFromUrl(input.url, { username: input.username ?? null, token: input.token ?? null });
      await checkRemoteHost(endpoint, { allowPrivateHosts: this.config.allowPrivateGitHosts });
      return {
        url: endpoint.url,
        username: endpoint.username,
        token_sealed: endpoint.token === null ? null : this.projects.seal(endpoint.token),
        linked_at: new Date().toISOString(),
      };
    } catch (error) {
      throw remoteRequestError(error, path);
    }
  }

  /**
   * Links a project being created, inside Projects.create's transaction: `record` is the new
   * project's record, which create() stores after its seed hook returns, so the link, the first
   * sync of every branch and the project itself land together.
   */
  async linkInTx(tx: AsyncStoreWriteTx, record: ProjectRecord, remote: GitRemoteRecord, announce: Announce): Promise<void> {
    record.git_remote = remote;
    const queued = await this.enqueueAllInTx(tx, record);
    if (queued) announceState(announce, record, queued.branch, queued.state);
  }

  /**
   * Links (or re-links) the repository and queues a push of every branch, in one change; answers
   * the link as it stands after it. `join` joins that change (an Idempotency-Key's answer).
   */
  async link(principal: Principal, id: string, input: LinkInput, join?: ChangeJoin): Promise<RemoteView> {
    await this.projects.get(principal, id);
    const remote = await this.prepareLink(input, 'url');
    const view = await this.projects.outbox.change(async (tx, announce) => {
      const { after } = await this.projects.changeInTx(tx, announce, principal, id, async (_tx, record) => ({ ...record, git_remote: remote }));
      await this.enqueueAllAnnounced(tx, after, announce);
      return (await this.view(after, tx))!;
    }, join);
    this.wake();
    return view;
  }

  /** Unlinks the repository and drops its queued pushes, in one change; answers the link as it was. */
  async unlink(principal: Principal, id: string, join?: ChangeJoin): Promise<RemoteView> {
    await this.get(principal, id);
    return this.projects.outbox.change(async (tx, announce) => {
      let before: RemoteView | null = null;
      await this.projects.changeInTx(tx, announce, principal, id, async (_tx, record) => {
        before = await this.view(record, tx);
        if (!before) throw notLinked();
        return { ...record, git_remote: null };
      });
      await forgetProject(tx, id);
      return before!;
    }, join);
  }

  /** Queues a push of every branch now (POST …/git/remote/sync). */
  async requestSync(principal: Principal, id: string, join?: ChangeJoin): Promise<RemoteView> {
    const record = await this.projects.get(principal, id);
    if (!record.git_remote) throw notLinked();
    const view = await this.projects.outbox.change(async (tx, announce) => {
      await this.enqueueAllAnnounced(tx, record, announce);
      return (await this.view(record, tx))!;
    }, join);
    this.wake();
    return view;
  }

  async get(principal: Principal, id: string): Promise<RemoteView> {
    const view = await this.view(await this.projects.get(principal, id));
    if (!view) throw notLinked();
    return view;
  }

  /** The project's `git_remote`: null when it has no linked repository. Read through `reads` when given (a change's own transaction). */
  async view(record: ProjectRecord, reads?: RecordReads): Promise<RemoteView | null> {
    if (!record.git_remote) return null;
    const state = await (reads ? reads.getRecord<SyncState>(stateKey(record.id)) : this.store.read((tx) => tx.getRecord<SyncState>(stateKey(record.id))));
    const sync = state ?? { status: 'pending', oid: null, at: null, error: null };
    return {
      url: record.git_remote.url,
      linked_at: record.git_remote.linked_at,
      sync: { status: sync.status, oid: sync.oid, at: sync.at, error: sync.error },
    };
  }

  /**
   * The commits queued to be pushed for a project (a branch's head when its change was queued):
   * garbage collection keeps them, though the push sends whatever the head is when it runs.
   */
  async queuedCommits(record: ProjectRecord): Promise<Oid[]> {
    const entries = await this.store.read((tx) => tx.listRecords<QueueEntry>(queuePrefix(record.id)));
    return entries.map(({ value }) => Buffer.from(value.oid, 'hex'));
  }

  // -------------------------------------------------------------------------------------------
  // Queueing

  /**
   * In every change's transaction: a branch that moved or appeared (commit.created other than a
   * seed's, whose push its link queues; branch.created) is queued for a push when its project has a
   * linked repository, so an acknowledged commit is queued with it (a crash cannot drop its push, and
   * the sync state never shows an older push as the latest once the commit is answered).
   */
  private async queueAnnounced(tx: AsyncStoreWriteTx, announced: ReadonlyArray<Omit<ChangeEvent, 'id' | 'at'>>, announce: Announce): Promise<void> {
    const branchesOf = new Map<string, Set<string>>();
    for (const event of announced) {
      // (Both types' data name the branch; a commit's also its source.)
      const data = event.data as { branch: string; source?: string };
      const moved = event.type === 'branch.created' || (event.type === 'commit.created' && data.source !== 'seed');
      if (!moved) continue;
      const branches = branchesOf.get(event.project.id) ?? new Set<string>();
      branches.add(data.branch);
      branchesOf.set(event.project.id, branches);
    }
    for (const [projectId, branches] of branchesOf) {
      // The record the verb was given may be older than a link made since: the one this change commits over.
      const record = await projectInTx(tx, projectId);
      if (!record?.git_remote) continue;
      const heads: Array<{ branch: string; oid: Oid }> = [];
      const queued = new Map<string, QueueEntry>();
      for (const branch of branches) {
        const head = await tx.project(record.seq).getRef(`${BRANCH_REF_PREFIX}${branch}`);
        if (!head) continue;
        heads.push({ branch, oid: head });
        const entry = await tx.getRecord<QueueEntry>(queueKey(record.id, branch));
        if (entry) queued.set(branch, entry);
      }
      const state = this.enqueueInTx(tx, record, heads, queued);
      if (state) announceState(announce, record, state.branch, state.state);
    }
  }

  private async enqueueAllAnnounced(tx: AsyncStoreWriteTx, record: ProjectRecord, announce: Announce): Promise<void> {
    const queued = await this.enqueueAllInTx(tx, record);
    if (queued) announceState(announce, record, queued.branch, queued.state);
  }

  private async enqueueAllInTx(tx: AsyncStoreWriteTx, record: ProjectRecord): Promise<{ branch: string; state: SyncState } | null> {
    const branches = (await tx.project(record.seq).listRefs(BRANCH_REF_PREFIX)).map((ref) => ({ branch: ref.name.slice(BRANCH_REF_PREFIX.length), oid: ref.oid }));
    // Main first, so the state names main's head when several branches are queued.
    branches.sort((a, b) => Number(b.branch === MAIN_BRANCH) - Number(a.branch === MAIN_BRANCH));
    const prefix = queuePrefix(record.id);
    const queued = new Map((await tx.listRecords<QueueEntry>(prefix)).map(({ key, value }) => [key.slice(prefix.length), value]));
    return this.enqueueInTx(tx, record, branches, queued);
  }

  /**
   * Queues pushes of `branches` (`queued`: their entries now, by branch, whose claims a new entry
   * keeps); the state written (named after the first branch), or null when there were none.
   */
  private enqueueInTx(tx: AsyncStoreWriteTx, record: ProjectRecord, branches: Array<{ branch: string; oid: Oid }>, queued: ReadonlyMap<string, QueueEntry>): { branch: string; state: SyncState } | null {
    if (branches.length === 0) return null;
    const now = new Date();
    for (const { branch, oid } of branches) {
      const entry: QueueEntry = {
        project_id: record.id,
        team_id: record.team_id,
        branch,
        oid: oidToHex(oid),
        ticket: randomUUID(),
        attempts: 0,
        next_attempt_at: now.getTime(),
        enqueued_at: now.toISOString(),
        // A push of this branch under way keeps it: the next one waits until that one ends.
        claim: queued.get(branch)?.claim ?? null,
      };
      tx.putRecord(queueKey(record.id, branch), entry);
    }
    const state: SyncState = { status: 'pending', oid: oidToHex(branches[0].oid), at: now.toISOString(), error: null };
    tx.putRecord<SyncState>(stateKey(record.id), state);
    return { branch: branches[0].branch, state };
  }

  // -------------------------------------------------------------------------------------------
  // The worker

  /** Starts pushing: everything already queued (from before a restart) is due at once. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    this.listDueAtStart = true;
    this.wake();
    this.sweepTimer = setInterval(() => this.wake(), this.options.claimTtlMs);
    this.sweepTimer.unref();
  }

  /** Stops pushing and waits for the push under way (cut short); the queue stays. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.timer = this.sweepTimer = null;
    this.abort.abort();
    await this.drain;
  }

  /** Looks at the queue now (after a write outside this class queued work, as a linked creation does). */
  /** Queued pushes (one per project and branch), due or waiting for a retry. */
  async queueDepth(): Promise<number> {
    return this.store.read(async (tx) => (await tx.listRecords(QUEUE_PREFIX)).length);
  }

  kick(): void {
    this.wake();
  }

  /** Runs due pushes now, or notes that the running drain should look again. */
  private wake(): void {
    if (!this.running) return;
    if (this.drain) {
      this.wokenWhileDraining = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let failed = false;
    this.drain = this.runDue()
      .catch(() => {
        // runDue records every failure it can; an error here comes from the store itself (full or
        // closing), so the next look waits a little instead of spinning.
        failed = true;
      })
      .finally(() => {
        this.drain = null;
        if (!this.running) return;
        if (this.wokenWhileDraining && !failed) this.wake();
        else void this.scheduleNext(failed ? this.options.backoffBaseMs : 0);
      });
  }

  private async runDue(): Promise<void> {
    while (this.running) {
      this.wokenWhileDraining = false;
      const entries = await this.store.read((tx) => tx.listRecords<QueueEntry>(QUEUE_PREFIX));
      if (this.listDueAtStart) {
        this.listDueAtStart = false;
        for (const { key } of entries) this.dueAtStart.add(key);
      }
      const now = Date.now();
      const due = entries
        .filter(({ key, value }) => !claimHeld(value, now) && (value.next_attempt_at <= now || this.dueAtStart.has(key)))
        .sort((a, b) => a.value.next_attempt_at - b.value.next_attempt_at)[0];
      if (!due) return;
      const dueAtStart = this.dueAtStart.delete(due.key);
      const claimed = await this.claim(due.key, dueAtStart);
      // Another node took it, or it is no longer due: look at the queue again.
      if (!claimed) continue;
      await this.runClaimed(due.key, claimed);
    }
  }

  /** Claims the entry for this node if it is still due and no live claim holds it; the entry as claimed, or null. */
  private async claim(key: string, dueAtStart: boolean): Promise<QueueEntry | null> {
    const now = Date.now();
    return this.store.write(async (tx) => {
      const current = await tx.getRecord<QueueEntry>(key);
      if (!current || claimHeld(current, now) || (current.next_attempt_at > now && !dueAtStart)) return null;
      const claimed: QueueEntry = { ...current, claim: { token: randomUUID(), node: this.node, until: now + this.options.claimTtlMs } };
      tx.putRecord(key, claimed);
      return claimed;
    });
  }

  /**
   * Runs a claimed entry's push, renewing the claim every third of its time to live; a renewal that
   * finds the claim gone (this node was cut off long enough for another to take over) stops the push.
   */
  private async runClaimed(key: string, entry: QueueEntry): Promise<void> {
    const token = entry.claim!.token;
    const lost = new AbortController();
    const renew = setInterval(() => {
      void this.store
        .write(async (tx) => {
          const current = await tx.getRecord<QueueEntry>(key);
          if (current?.claim?.token !== token) return false;
          tx.putRecord<QueueEntry>(key, { ...current, claim: { ...current.claim, until: Date.now() + this.options.claimTtlMs } });
          return true;
        })
        .then(
          (held) => {
            if (!held) lost.abort(new RemoteError('another node took this push over', 'aborted', true));
          },
          () => {
            // The store is unavailable: the claim lapses unless a later renewal gets through.
          },
        );
    }, Math.max(1, Math.floor(this.options.claimTtlMs / 3)));
    renew.unref();
    try {
      await this.runEntry(key, entry, lost.signal);
    } finally {
      clearInterval(renew);
    }
  }

  private async scheduleNext(delayMsMin: number): Promise<void> {
    let delay: number;
    try {
      const entries = await this.store.read((tx) => tx.listRecords<QueueEntry>(QUEUE_PREFIX));
      if (entries.length === 0) return;
      // An entry under another node's claim is looked at again when the claim would lapse.
      const earliest = Math.min(...entries.map(({ value }) => Math.max(value.next_attempt_at, value.claim?.until ?? 0)));
      delay = Math.min(TIMER_DELAY_MS_MAX, Math.max(delayMsMin, earliest - Date.now()));
    } catch {
      // The store is closing or failing: look again after a pause rather than never.
      delay = this.options.backoffBaseMs;
    }
    // Stopped, or woken meanwhile (that drain schedules its own look) while the queue was read.
    if (!this.running || this.drain) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, delay);
    this.timer.unref();
  }

  /** One push attempt of one claimed queue entry, and its outcome recorded in one transaction. */
  private async runEntry(key: string, entry: QueueEntry, claimLost: AbortSignal): Promise<void> {
    const record = await this.projectOf(entry);
    if (!record?.git_remote) {
      await this.store.write(async (tx) => {
        await removeIfUnchanged(tx, key, entry);
        if (!record) tx.deleteRecord(stateKey(entry.project_id));
      });
      return;
    }
    const remote = record.git_remote;
    const at = () => new Date().toISOString();
    try {
      const endpoint: RemoteEndpoint = {
        url: remote.url,
        username: remote.username,
        token: remote.token_sealed === null ? null : this.projects.unsealToken(remote.token_sealed),
      };
      const outcome = await pushBranch(endpoint, this.projects.repo(record), entry.branch, {
        allowPrivateHosts: this.config.allowPrivateGitHosts,
        signal: AbortSignal.any([this.abort.signal, claimLost, AbortSignal.timeout(this.options.pushTimeMsMax)]),
        idleTimeoutMs: this.options.idleTimeoutMs,
      });
      this.attempts.completed++;
      await this.projects.outbox.change(async (tx, announce): Promise<void> => {
        const current = await removeIfUnchanged(tx, key, entry);
        // A newer change of this branch is queued: its `pending` stays until that push runs.
        if (!current) return;
        let state: SyncState | null = null;
        if (outcome.status === 'pushed') {
          state = { status: 'synced', oid: oidToHex(outcome.oid), at: at(), error: null };
        } else if (outcome.status === 'diverged') {
          const error = `The remote branch ${entry.branch} is at ${oidToHex(outcome.remoteOid)}, which is not in this branch's history; nothing was pushed (pushes are never forced).`;
          state = { status: 'diverged', oid: oidToHex(outcome.oid), at: at(), error };
        } else {
          // The branch is gone: nothing left to push for it.
          const before = await tx.getRecord<SyncState>(stateKey(entry.project_id));
          if (before?.status === 'pending' && (await tx.listRecords(queuePrefix(entry.project_id), { limit: 1 })).length === 0) state = { ...before, status: 'synced', at: at() };
        }
        if (!state) return;
        tx.putRecord<SyncState>(stateKey(entry.project_id), state);
        announceState(announce, record, entry.branch, state);
      });
    } catch (error) {
      // Another node holds the entry now: its push records the outcome.
      if (claimLost.aborted) return;
      if (!this.running && error instanceof RemoteError && error.kind === 'aborted') {
        // Stopping: the claim is let go, so another node (or the next start) pushes at once.
        await this.store.write((tx) => releaseClaim(tx, key, entry)).catch(() => undefined);
        return;
      }
      await this.recordFailure(key, entry, error);
    }
  }

  private async recordFailure(key: string, entry: QueueEntry, error: unknown): Promise<void> {
    this.attempts.failed++;
    const message = error instanceof RemoteError ? error.message : `Internal error while pushing: ${(error as Error).message}`;
    const transient = error instanceof RemoteError ? error.transient : true;
    const attempts = entry.attempts + 1;
    const retry = transient && attempts < this.options.attemptsMax;
    const now = new Date();
    await this.projects.outbox.change(async (tx, announce): Promise<void> => {
      const current = await tx.getRecord<QueueEntry>(key);
      const unchanged = current?.ticket === entry.ticket;
      if (unchanged && retry) {
        tx.putRecord<QueueEntry>(key, { ...entry, attempts, next_attempt_at: now.getTime() + this.backoffMs(attempts), claim: null });
      } else if (unchanged) {
        tx.deleteRecord(key);
      } else {
        await releaseClaim(tx, key, entry);
      }
      const status: SyncStatus = retry || !unchanged ? 'pending' : 'error';
      const error = retry || !unchanged ? message : attempts >= this.options.attemptsMax && transient ? `${message} (gave up after ${attempts} attempts)` : message;
      const state: SyncState = { status, oid: entry.oid, at: now.toISOString(), error };
      tx.putRecord<SyncState>(stateKey(entry.project_id), state);
      // The project as it is now (deleted meanwhile: nothing to announce it on).
      const record = await projectInTx(tx, entry.project_id);
      if (record) announceState(announce, record, entry.branch, state);
    });
  }

  private backoffMs(attempts: number): number {
    const plain = Math.min(this.options.backoffMaxMs, this.options.backoffBaseMs * 2 ** (attempts - 1));
    return Math.round(plain * (1 + BACKOFF_JITTER * Math.random()));
  }

  /** The entry's project as its own team sees it; undefined once the project is deleted. */
  private async projectOf(entry: Pick<QueueEntry, 'project_id' | 'team_id'>): Promise<ProjectRecord | undefined> {
    const team: Principal = { teamId: entry.team_id, keyId: '', keyName: 'remote sync' };
    try {
      return await this.projects.get(team, entry.project_id);
    } catch (error) {
      if (error instanceof TreehouseError && error.code === 'not_found') return undefined;
      throw error;
    }
  }
}

/** sync.status, in the transaction that wrote the state. */
function announceState(announce: Announce, record: ProjectRecord, branch: string, state: SyncState): void {
  announce('sync.status', record, { branch, status: state.status, oid: state.oid, error: state.error });
}

function notLinked(): TreehouseError {
  return new TreehouseError('not_found', 'The project has no linked repository.');
}

/**
 * Deletes the entry unless a newer change replaced it; returns whether it was still the same. A
 * newer entry that kept this push's claim is released, so its push may run.
 */
async function removeIfUnchanged(tx: AsyncStoreWriteTx, key: string, entry: QueueEntry): Promise<boolean> {
  const current = await tx.getRecord<QueueEntry>(key);
  if (current?.ticket !== entry.ticket) {
    await releaseClaim(tx, key, entry);
    return false;
  }
  tx.deleteRecord(key);
  return true;
}

/** Lets go of the claim `entry`'s push holds on its key's entry (whichever change it now is), if it still does. */
async function releaseClaim(tx: AsyncStoreWriteTx, key: string, entry: QueueEntry): Promise<void> {
  const current = await tx.getRecord<QueueEntry>(key);
  if (current && entry.claim && current.claim?.token === entry.claim.token) tx.putRecord<QueueEntry>(key, { ...current, claim: null });
}

/** Whether a live claim (of any node) holds the entry. */
function claimHeld(entry: QueueEntry, now: number): boolean {
  return entry.claim != null && entry.claim.until > now;
}
