/**
 * Project records: handles, titles, frameworks, publication, credentials, and the project's place in
 * the store. A project of another team is indistinguishable from one that does not exist (404).
 */
import { TreehouseError } from '../errors.js';
import { initProjectInTx, type SeedFile } from '../repo/initProject.js';
import { DEFAULT_REPO_LIMITS, MAIN_BRANCH, type Repo } from '../repo/repo.js';
import type { SearchThreads } from '../repo/search/threads.js';
import type { ClonePacks } from '../repo/wire/clonePacks.js';
import type { AsyncStore, AsyncStoreWriteTx, ProjectReads, RecordReads } from '../store/asyncTypes.js';
import { LruCache } from '../store/lruCache.js';
import type { CommitAuthors } from '../repo/writeCommit.js';
import type { Principal } from './accounts.js';
import type { Config } from './config.js';
import { detectFramework, type Framework } from './framework.js';
import { commitCreated, EventLog, type Announce, type ChangeJoin } from './eventLog.js';
import { EventBus } from './events.js';
import { newId } from './ids.js';
import { ProjectDrops } from './projectDrops.js';
import type { Sealer } from './secrets.js';

export interface GitRemoteRecord {
  url: string;
  username: string | null;
  token_sealed: string | null;
  linked_at: string;
}

export interface ProjectRecord {
  id: string;
  /** The project's number in the store (its key prefix). */
  seq: number;
  team_id: string;
  handle: string;
  title: string;
  framework: Framework | null;
  /** True once a person chose the framework; detection then leaves it alone. */
  framework_chosen: boolean;
  published: boolean;
  created_at: string;
  updated_at: string;
  commerce_sealed: string | null;
  git_remote: GitRemoteRecord | null;
}

export interface CommerceCredentials {
  platform: 'shopify';
  store_domain: string;
  access_token: string;
}

export const HANDLE_PATTERN = /^[a-z0-9-]{3,63}$/;
const HANDLE_LENGTH_MAX = 63;
const HANDLE_LENGTH_MIN = 3;

const PROJECT_PREFIX = 'project/';
const projectKey = (id: string) => `${PROJECT_PREFIX}${id}`;
const handleKey = (handle: string) => `handle/${handle}`;
const teamIndexPrefix = (team: string) => `team-projects/${team}/`;
const teamIndexKey = (record: ProjectRecord) => `${teamIndexPrefix(record.team_id)}${record.created_at}/${record.id}`;
const PROJECT_SEQ_KEY = 'counter/project-seq';
/** Signals "a project's record changed or went" between the nodes of a shared store (its id). */
const PROJECTS_CHANNEL = 'treehouse_projects';
/** Project records a node keeps (some 500 bytes each). */
const RECORDS_CACHED_MAX = 10_000;
/**
 * A project number whose stored data belongs to no project: reserved for a seed that stores its
 * history before the project exists (an UnownedReservation), or left by a deleted project whose
 * data is being dropped (the time, a string). Whatever such a number still holds at start is dropped
 * (Projects.start), but a reservation only once it is older than RESERVATION_KEPT_MS: on a store
 * several nodes share, a node starting must not drop the history another node is seeding.
 */
const UNOWNED_PREFIX = 'project-unowned/';
const unownedKey = (seq: number) => `${UNOWNED_PREFIX}${seq}`;
interface UnownedReservation {
  reserved_at: string;
}
/** Longer than any seed takes from its reservation to its project's creation (storing ~100 MB takes about a minute). */
const RESERVATION_KEPT_MS = 60 * 60_000;

export interface CreateProjectInput {
  title: string;
  handle?: string;
  framework?: Framework | null;
  commerce?: CommerceCredentials;
  files: SeedFile[];
  people: CommitAuthors;
  /** Seeds that bring history (git) write it themselves inside the same transaction. */
  seedHistory?: (tx: AsyncStoreWriteTx, record: ProjectRecord) => Promise<void>;
  /** Joins the creation's transaction once the project is seeded, before its record is stored (a linked repository). */
  alsoInTx?: (tx: AsyncStoreWriteTx, record: ProjectRecord, announce: Announce) => Promise<void>;
  /** A number from reserveSeq(), whose objects were stored ahead of the project. */
  seq?: number;
  /** Joins the creation's transaction (an Idempotency-Key's answer). */
  join?: ChangeJoin;
}

export class Projects {
  /** Run inside the transaction that deletes a project, so records kept by others go with it. */
  private readonly deleteHooks: Array<(tx: AsyncStoreWriteTx, record: ProjectRecord) => Promise<void>> = [];

  /** Every change of a project is announced here once it is committed (src/service/events.ts). */
  readonly events = new EventBus();
  /** Every change runs through here, so its events are written in its transaction (src/service/eventLog.ts). */
  readonly outbox: EventLog;
  /** Deleted projects' data, freed after the answer (src/service/projectDrops.ts). */
  readonly drops: ProjectDrops;
  private sweep: NodeJS.Timeout | null = null;
  /**
   * On a store several nodes share (signals), the records this node read lately, so a request
   * costs no read of its project's record (a round trip on PostgreSQL, on every request). Every
   * write of a record signals every node in its transaction, and each forgets that record; the
   * writer's own node hears it as the write commits, before the write resolves (StoreSignals), so
   * its next request reads the record as written. Nothing is served from here unless this node
   * hears that channel now (after a lost connection: once it is back and has forgotten them all). Another node serves
   * the record it had until the signal reaches it (milliseconds), as a read just before the change
   * would have; one process alone (LMDB, whose reads cost no round trip) keeps nothing.
   */
  private readonly records = new LruCache<string, ProjectRecord>(RECORDS_CACHED_MAX, 1, () => 1);
  /** +1 whenever a cached record is forgotten: a read begun before is not kept. */
  private forgotten = 0;
  private listening = false;

  constructor(
    readonly store: AsyncStore,
    private readonly config: Config,
    private readonly sealer: Sealer,
    /** Where searches read and scan blobs besides the request thread (src/service/searchThreads.ts). */
    private readonly searchThreads?: SearchThreads,
    /** Packs of clones kept for repeat clones (src/repo/wire/clonePacks.ts). */
    private readonly clonePacks?: ClonePacks,
  ) {
    this.outbox = new EventLog(store, this.events);
    this.drops = new ProjectDrops(
      (seq) => this.dropSome(seq),
      (seq, error) => process.stderr.write(`dropping project ${seq}'s data failed (tried again in a second): ${error instanceof Error ? error.message : String(error)}\n`),
    );
    if (clonePacks) this.onDelete(async (_tx, record) => clonePacks.forgetProject(record.seq));
  }

  onDelete(hook: (tx: AsyncStoreWriteTx, record: ProjectRecord) => Promise<void>): void {
    this.deleteHooks.push(hook);
  }

  repo(record: ProjectRecord): Repo {
    return {
      store: this.store,
      project: record.seq,
      limits: {
        ...DEFAULT_REPO_LIMITS,
        fileBytesMax: this.config.limits.fileBytesMax,
        batchFilesMax: this.config.limits.batchFilesMax,
        editsPerFileMax: this.config.limits.editsPerFileMax,
        editScanBytesMax: this.config.limits.editScanBytesMax,
      },
      ...(this.searchThreads ? { searchThreads: this.searchThreads } : {}),
      ...(this.clonePacks ? { clonePacks: this.clonePacks } : {}),
    };
  }

  async get(principal: Principal, id: string): Promise<ProjectRecord> {
    const record = await this.cachedOrRead(id);
    if (!record || record.team_id !== principal.teamId) throw new TreehouseError('not_found', 'Project not found.');
    return record;
  }

  /** A project's record from this node's cache (a copy), else read (and kept when nothing changed meanwhile). */
  private async cachedOrRead(id: string): Promise<ProjectRecord | undefined> {
    const hears = this.hearsChanges();
    const cached = hears ? this.records.get(id) : undefined;
    if (cached) return structuredClone(cached);
    const forgotten = this.forgotten;
    const record = await this.store.read((tx) => tx.getRecord<ProjectRecord>(projectKey(id)));
    if (record && hears && forgotten === this.forgotten && this.hearsChanges()) this.records.set(id, structuredClone(record));
    return record;
  }

  /** Whether changes of project records reach this node now (listening from the first call on). */
  private hearsChanges(): boolean {
    const signals = this.store.signals;
    if (!signals) return false;
    if (!this.listening) {
      this.listening = true;
      signals.listen(PROJECTS_CHANNEL, (id) => {
        // null: signals may have been missed.
        if (id === null) this.records.clear();
        this.forgetRecord(id ?? '');
      });
    }
    return signals.hears(PROJECTS_CHANNEL);
  }

  /** Forgets this node's copy of a project's record (a signal said it changed): see `records`. */
  private forgetRecord(id: string): void {
    this.records.delete(id);
    this.forgotten++;
  }

  /** Puts or deletes a project's record in `tx`, and tells every node once it commits: every write of one goes through here. */
  private writeRecord(tx: AsyncStoreWriteTx, id: string, record: ProjectRecord | null): void {
    if (record) tx.putRecord(projectKey(id), record);
    else tx.deleteRecord(projectKey(id));
    tx.signal?.(PROJECTS_CHANNEL, id);
  }

  /** Whether `record`'s project still exists (with its number), as `tx` reads it. */
  async stillExists(tx: RecordReads, record: ProjectRecord): Promise<boolean> {
    const current = await tx.getRecord<ProjectRecord>(projectKey(record.id));
    return current !== undefined && current.seq === record.seq;
  }

  /** A project by id, whatever its team (the command-line tool and background work). */
  async byId(id: string): Promise<ProjectRecord | undefined> {
    return this.store.read((tx) => tx.getRecord<ProjectRecord>(projectKey(id)));
  }

  /** Every project, a page at a time in id order (background work). */
  async listAll(after: string | undefined, limit: number): Promise<ProjectRecord[]> {
    const page = await this.store.read((tx) => tx.listRecords<ProjectRecord>(PROJECT_PREFIX, { after: after === undefined ? undefined : projectKey(after), limit }));
    return page.map(({ value }) => value);
  }

  async byHandle(handle: string): Promise<ProjectRecord | undefined> {
    return this.store.read(async (tx) => {
      const id = await tx.getRecord<string>(handleKey(handle));
      return id ? tx.getRecord<ProjectRecord>(projectKey(id)) : undefined;
    });
  }

  /** The project's version, read through `reads` when given (a change's own transaction). */
  async version(record: ProjectRecord, reads?: { project(project: number): ProjectReads }): Promise<number> {
    return reads ? reads.project(record.seq).getVersion() : this.store.read((tx) => tx.project(record.seq).getVersion());
  }

  async list(principal: Principal, input: { q?: string; limit: number; cursor?: string }): Promise<{ projects: ProjectRecord[]; next_cursor: string | null }> {
    const needle = input.q?.toLowerCase();
    const prefix = teamIndexPrefix(principal.teamId);
    let after = input.cursor === undefined ? undefined : decodeCursor(input.cursor, prefix);
    // Without a filter a page needs one record past the limit (to know there is a next page), so no more are read.
    const chunkSize = needle ? 200 : Math.min(200, input.limit + 1);
    return this.store.read(async (tx) => {
      const found: ProjectRecord[] = [];
      let lastKey: string | null = null;
      for (;;) {
        const chunk = await tx.listRecords<string>(prefix, { reverse: true, after, limit: chunkSize });
        // A chunk's records at once, so a networked backend pays its round trips concurrently.
        const records = await Promise.all(chunk.map(({ value }) => tx.getRecord<ProjectRecord>(projectKey(value))));
        for (const [index, { key }] of chunk.entries()) {
          after = key;
          const record = records[index];
          if (!record) continue;
          if (needle && !record.handle.includes(needle) && !record.title.toLowerCase().includes(needle)) continue;
          if (found.length === input.limit) return { projects: found, next_cursor: encodeCursor(lastKey!) };
          found.push(record);
          lastKey = key;
        }
        if (chunk.length < chunkSize) return { projects: found, next_cursor: null };
      }
    });
  }

  async create(principal: Principal, input: CreateProjectInput): Promise<ProjectRecord> {
    if (input.handle !== undefined) requireHandle(input.handle);
    const detected = input.framework === undefined ? detectFrameworkOf(input.files) : input.framework;
    return this.outbox.change(async (tx, announce) => {
      const handle = input.handle ?? (await uniqueHandle(tx, input.title));
      if (await tx.getRecord(handleKey(handle))) throw new TreehouseError('handle_taken', `Handle ${handle} is in use.`);
      const seq = input.seq ?? (await nextSeq(tx));
      if (input.seq !== undefined) {
        if (!(await tx.getRecord(unownedKey(input.seq)))) throw new Error(`project number ${input.seq} is not reserved`);
        tx.deleteRecord(unownedKey(input.seq));
      }
      const now = new Date().toISOString();
      const record: ProjectRecord = {
        id: newId('prj'),
        seq,
        team_id: principal.teamId,
        handle,
        title: input.title,
        framework: detected,
        framework_chosen: input.framework !== undefined,
        published: false,
        created_at: now,
        updated_at: now,
        commerce_sealed: input.commerce ? this.sealer.seal(JSON.stringify(input.commerce)) : null,
        git_remote: null,
      };
      announce('project.created', record, {});
      if (input.seedHistory) await input.seedHistory(tx, record);
      else await initProjectInTx(tx.project(seq), { files: input.files, people: input.people });
      const main = await tx.project(seq).getRef(`refs/heads/${MAIN_BRANCH}`);
      if (main) announce('commit.created', record, await commitCreated(tx.project(seq), MAIN_BRANCH, main.toString('hex'), 'seed'));
      if (input.alsoInTx) await input.alsoInTx(tx, record, announce);
      this.writeRecord(tx, record.id, record);
      tx.putRecord(handleKey(handle), record.id);
      tx.putRecord(teamIndexKey(record), record.id);
      return record;
    }, input.join);
  }

  async update(
    principal: Principal,
    id: string,
    patch: { title?: string; handle?: string; framework?: Framework | null },
    join?: ChangeJoin,
  ): Promise<ProjectRecord> {
    if (patch.handle !== undefined) requireHandle(patch.handle);
    return this.change(principal, id, join, async (tx, record) => {
      const next = { ...record };
      if (patch.title !== undefined) next.title = patch.title;
      if (patch.framework !== undefined) {
        next.framework = patch.framework;
        next.framework_chosen = true;
      }
      if (patch.handle !== undefined && patch.handle !== record.handle) {
        if (await tx.getRecord(handleKey(patch.handle))) throw new TreehouseError('handle_taken', `Handle ${patch.handle} is in use.`);
        tx.deleteRecord(handleKey(record.handle));
        tx.putRecord(handleKey(patch.handle), record.id);
        next.handle = patch.handle;
      }
      return next;
    });
  }

  async setPublished(principal: Principal, id: string, published: boolean, join?: ChangeJoin): Promise<ProjectRecord> {
    return this.change(principal, id, join, async (_tx, record) => (record.published === published ? record : { ...record, published }));
  }

  /**
   * The project is gone in one transaction (its records, and those its hooks name), and that is
   * the answer; its stored data is then dropped in the background a transaction at a time
   * (ProjectDrops), so a large project neither holds the event loop nor its client (a 100,000-file
   * project on PostgreSQL took 34-37 s). A crash in between leaves the number marked unowned, and
   * the next start finishes the drop.
   */
  async delete(principal: Principal, id: string, join?: ChangeJoin): Promise<void> {
    const record = await this.get(principal, id);
    await this.outbox.change(async (tx, announce) => {
      // Read again in the transaction: a delete racing this one finds nothing and announces nothing.
      if (!(await tx.getRecord(projectKey(record.id)))) throw new TreehouseError('not_found', 'Project not found.');
      this.writeRecord(tx, record.id, null);
      tx.deleteRecord(handleKey(record.handle));
      tx.deleteRecord(teamIndexKey(record));
      tx.putRecord(unownedKey(record.seq), new Date().toISOString());
      for (const hook of this.deleteHooks) await hook(tx, record);
      announce('project.deleted', record, {});
    }, join);
    this.drops.add(record.seq);
  }

  /** A project number for data stored before its project exists (a git seed); create() takes it over. */
  async reserveSeq(): Promise<number> {
    return this.store.write(async (tx) => {
      const seq = await nextSeq(tx);
      tx.putRecord<UnownedReservation>(unownedKey(seq), { reserved_at: new Date().toISOString() });
      return seq;
    });
  }

  /** Drops what a reserved number holds, when the project it was reserved for was not created. */
  async releaseSeq(seq: number): Promise<void> {
    await this.dropUnowned(seq);
  }

  /**
   * Queues the drops a crash or a failed seed left (numbers still marked unowned): those of
   * deleted projects, and reservations too old to belong to a seed still under way. Then sweeps
   * every `dropSweepMs` for deleted projects marked at least that long ago: on several nodes, the
   * drop of a node that died is taken up by the others without waiting for a node to start (a
   * drop still under way on a live node is then run twice, which removes nothing twice).
   */
  async start(): Promise<void> {
    this.drops.resume();
    await this.queueUnowned(0);
    if (this.sweep) return;
    this.sweep = setInterval(() => {
      this.queueUnowned(this.config.dropSweepMs).catch(() => undefined);
    }, this.config.dropSweepMs);
    // The marks stay: a process that ends meanwhile leaves them to the next start or sweep.
    this.sweep.unref();
  }

  /** Stops the sweep and the drops after the write under way; what is left stays marked. */
  async stopDrops(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    await this.drops.stop();
  }

  /** Queues the deleted projects marked at least `minAgeMs` ago, and the reservations too old to belong to a seed under way. */
  private async queueUnowned(minAgeMs: number): Promise<void> {
    const unowned = await this.store.read((tx) => tx.listRecords<string | UnownedReservation>(UNOWNED_PREFIX));
    const now = Date.now();
    const staleBefore = new Date(now - RESERVATION_KEPT_MS).toISOString();
    const deletedBefore = new Date(now - minAgeMs).toISOString();
    for (const { key, value } of unowned) {
      if (typeof value === 'object' ? value.reserved_at > staleBefore : value > deletedBefore) continue;
      this.drops.add(Number(key.slice(UNOWNED_PREFIX.length)));
    }
  }

  private async dropUnowned(seq: number): Promise<void> {
    while (!(await this.dropSome(seq)));
  }

  /** One write of a drop (ProjectDrops): true once nothing is left and the number's mark is gone. */
  private async dropSome(seq: number): Promise<boolean> {
    if ((await this.store.dropProjectKeys(seq, this.config.dropKeysPerWrite)) > 0) return false;
    await this.store.write(async (tx) => tx.deleteRecord(unownedKey(seq)));
    return true;
  }

  /** Re-detects the framework from main's files unless a person chose it. */
  async refreshFramework(record: ProjectRecord, rootNames: string[], packageJson: string | undefined): Promise<void> {
    if (record.framework_chosen) return;
    const framework = detectFramework(rootNames, packageJson);
    if (framework === record.framework) return;
    await this.outbox.change(async (tx, announce) => {
      const current = await tx.getRecord<ProjectRecord>(projectKey(record.id));
      if (!current || current.framework_chosen || current.framework === framework) return;
      const next = { ...current, framework };
      this.writeRecord(tx, next.id, next);
      announce('project.updated', next, { framework });
    });
  }

  hasCommerceCredentials(record: ProjectRecord): boolean {
    return record.commerce_sealed !== null;
  }

  unsealToken(sealed: string): string {
    return this.sealer.open(sealed);
  }

  seal(plain: string): string {
    return this.sealer.seal(plain);
  }

  /** Applies a change to a record in a change of its own; see changeInTx. */
  private async change(
    principal: Principal,
    id: string,
    join: ChangeJoin | undefined,
    apply: (tx: AsyncStoreWriteTx, record: ProjectRecord) => Promise<ProjectRecord>,
  ): Promise<ProjectRecord> {
    await this.get(principal, id);
    return this.outbox.change(async (tx, announce) => (await this.changeInTx(tx, announce, principal, id, apply)).after, join);
  }

  /**
   * Applies a change to a record, in the caller's change (so a linked repository's queue joins it);
   * an unchanged record writes nothing and keeps its version. 404 for a project of another team.
   */
  async changeInTx(
    tx: AsyncStoreWriteTx,
    announce: Announce,
    principal: Principal,
    id: string,
    apply: (tx: AsyncStoreWriteTx, record: ProjectRecord) => Promise<ProjectRecord>,
  ): Promise<{ before: ProjectRecord; after: ProjectRecord }> {
    const record = await tx.getRecord<ProjectRecord>(projectKey(id));
    if (!record || record.team_id !== principal.teamId) throw new TreehouseError('not_found', 'Project not found.');
    const next = await apply(tx, record);
    if (next === record) return { before: record, after: record };
    next.updated_at = new Date().toISOString();
    this.writeRecord(tx, next.id, next);
    await tx.project(record.seq).bumpVersion();
    announceChange(record, next, announce);
    return { before: record, after: next };
  }
}

/** A project record read in the caller's transaction (undefined once deleted). */
export function projectInTx(tx: RecordReads, id: string): Promise<ProjectRecord | undefined> {
  return tx.getRecord<ProjectRecord>(projectKey(id));
}

/** project.published / project.unpublished, and project.updated with the public fields that changed. */
function announceChange(before: ProjectRecord, after: ProjectRecord, announce: Announce): void {
  if (before.published !== after.published) announce(after.published ? 'project.published' : 'project.unpublished', after, {});
  const changed: Record<string, unknown> = {};
  if (before.title !== after.title) changed.title = after.title;
  if (before.handle !== after.handle) changed.handle = after.handle;
  if (before.framework !== after.framework) changed.framework = after.framework;
  if (JSON.stringify(before.git_remote) !== JSON.stringify(after.git_remote)) {
    // The link as the API shows it: never its credentials.
    changed.git_remote = after.git_remote && { url: after.git_remote.url, linked_at: after.git_remote.linked_at };
  }
  if (Object.keys(changed).length > 0) announce('project.updated', after, changed);
}

function requireHandle(handle: string): void {
  if (!HANDLE_PATTERN.test(handle)) {
    throw new TreehouseError('invalid_request', 'A handle is 3 to 63 of a-z, 0-9 and "-".', {
      issues: [{ path: 'handle', message: 'must match ^[a-z0-9-]{3,63}$' }],
    });
  }
}

/** A handle made from the title, with "-2", "-3", ... appended until it is free. */
async function uniqueHandle(tx: RecordReads, title: string): Promise<string> {
  let base = title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, HANDLE_LENGTH_MAX - 8)
    .replace(/-+$/, '');
  if (base.length < HANDLE_LENGTH_MIN) base = base ? `${base}-project` : 'project';
  if (!(await tx.getRecord(handleKey(base)))) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!(await tx.getRecord(handleKey(candidate)))) return candidate;
  }
}

function detectFrameworkOf(files: SeedFile[]): Framework | null {
  const rootNames = files.map((file) => file.path.split('/')[0]);
  const packageJson = files.find((file) => file.path === 'package.json')?.bytes.toString('utf8');
  return detectFramework(rootNames, packageJson);
}

function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string, prefix: string): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!key.startsWith(prefix)) {
    throw new TreehouseError('invalid_request', 'The cursor is not valid.', { issues: [{ path: 'cursor', message: 'not a cursor this endpoint issued' }] });
  }
  return key;
}

async function nextSeq(tx: AsyncStoreWriteTx): Promise<number> {
  const seq = ((await tx.getRecord<number>(PROJECT_SEQ_KEY)) ?? 0) + 1;
  tx.putRecord(PROJECT_SEQ_KEY, seq);
  return seq;
}
