/**
 * The PostgreSQL backend's SQL: every statement it runs, as functions over a connection (the read
 * pool, or a write transaction's connection). Batched reads are one statement per batch of at most
 * IDS_PER_STATEMENT_MAX ids (`= ANY($ids)`); their answers come keyed by id (idKey), and the
 * callers put them in the order asked. Batched writes are multi-row statements: object bodies go
 * to the server as one bytea of concatenated bodies, cut apart there (OBJECT_BATCH_BYTES_MAX each):
 * 80-103 ms against 93-160 ms for an array of 1,000 bodies of 3.4 KB (postgres.js sends every
 * parameter as text, a bytea array escaped element by element). A large write's objects go by
 * binary COPY instead (copyObjects).
 */
import type { Writable } from 'node:stream';
import type postgres from 'postgres';
import type { ObjectType, Oid } from '../../git/oid.js';
import type { AnnexedObject, CollectionState, CommitInfo, DeflatedObject, DeltaForm, FormChange, WorkingTreeState } from '../types.js';
import { markedSignal } from './signals.js';
import { byteaArray, decodeLocks, decodeParents, encodeLocks, encodeParents, nameBytes, nameFromBytes, numberArray, prefixEnd, recordPrefixEnd, textArray, typeFromCode } from './codec.js';

export type Db = postgres.ISql;

/** Ids in one `= ANY(…)` statement; a larger batch is cut into statements that run side by side. */
export const IDS_PER_STATEMENT_MAX = 10_000;
/**
 * Bytes of object bodies (and annexes) in one insert statement. The driver turns a statement's
 * bytea into hex text and copies it into its buffer on the event loop (about 35 ms a MiB on this
 * machine, measured in a push of 8 MB); statements of 1 MiB, each awaited, give the loop a turn
 * between them where one of 16 MiB held it for a third of a second.
 */
export const OBJECT_BATCH_BYTES_MAX = 1024 * 1024;
/** Objects in one insert statement. */
export const OBJECT_BATCH_ROWS_MAX = 10_000;

/** A Map key for an id: its bytes as latin1, one character a byte (no hex conversion). */
export function idKey(oid: Oid): string {
  return oid.toString('latin1');
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < items.length; at += size) out.push(items.slice(at, at + size));
  return out;
}

/** The distinct ids of `oids`, in statements of at most IDS_PER_STATEMENT_MAX. */
function idBatches(oids: readonly Oid[]): Oid[][] {
  const distinct = new Map<string, Oid>();
  for (const oid of oids) distinct.set(idKey(oid), oid);
  return chunks([...distinct.values()], IDS_PER_STATEMENT_MAX);
}

async function byId<Row extends { oid: Buffer }, V>(oids: readonly Oid[], select: (batch: Oid[]) => Promise<readonly Row[]>, value: (row: Row) => V): Promise<Map<string, V>> {
  const found = new Map<string, V>();
  if (oids.length === 0) return found;
  await Promise.all(
    idBatches(oids).map(async (batch) => {
      for (const row of await select(batch)) found.set(idKey(row.oid), value(row));
    }),
  );
  return found;
}

// ---------------------------------------------------------------------------------------------
// Objects and the commit index (immutable).

interface ObjectRow {
  oid: Buffer;
  type: number;
  body: Buffer;
  annex: Buffer | null;
}

export function selectObjects(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, AnnexedObject>> {
  return byId(
    oids,
    (batch) => db<ObjectRow[]>`SELECT oid, type, body, annex FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    (row) => ({ type: typeFromCode(row.type), body: row.body, annex: row.annex }),
  );
}

export function selectObjectTypes(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, ObjectType>> {
  return byId(
    oids,
    (batch) => db<Array<{ oid: Buffer; type: number }>>`SELECT oid, type FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    (row) => typeFromCode(row.type),
  );
}

export function selectObjectSizes(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, number>> {
  // octet_length of a bytea reads its size from the TOAST pointer, without fetching the body.
  return byId(
    oids,
    (batch) => db<Array<{ oid: Buffer; size: number }>>`SELECT oid, octet_length(body) AS size FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    (row) => row.size,
  );
}

export async function selectObjectIdsInRange(db: Db, project: number, start: Buffer, end: Buffer | null, limit: number): Promise<Oid[]> {
  const rows = end
    ? await db<Array<{ oid: Buffer }>>`SELECT oid FROM treehouse_objects WHERE project_id = ${project} AND oid >= ${start} AND oid < ${end} ORDER BY oid LIMIT ${limit}`.execute()
    : await db<Array<{ oid: Buffer }>>`SELECT oid FROM treehouse_objects WHERE project_id = ${project} AND oid >= ${start} ORDER BY oid LIMIT ${limit}`.execute();
  return rows.map((row) => row.oid);
}

interface CommitRow {
  oid: Buffer;
  tree: Buffer;
  parents: Buffer;
  commit_time: number;
  generation: number;
}

export function selectCommitInfos(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, CommitInfo>> {
  return byId(
    oids,
    (batch) => db<CommitRow[]>`SELECT oid, tree, parents, commit_time, generation FROM treehouse_commits WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    (row) => ({ tree: row.tree, parents: decodeParents(row.parents), commitTime: row.commit_time, generation: row.generation }),
  );
}

export async function selectCommitObjects(db: Db, project: number, commit: Oid): Promise<Buffer | undefined> {
  const [row] = await db<Array<{ records: Buffer }>>`SELECT records FROM treehouse_commit_objects WHERE project_id = ${project} AND oid = ${commit}`.execute();
  return row?.records;
}

export interface ObjectToInsert {
  oid: Oid;
  type: number;
  body: Buffer;
  annex: Buffer | null;
}

/** Objects in insert statements of at most OBJECT_BATCH_BYTES_MAX bytes and OBJECT_BATCH_ROWS_MAX rows each. */
export function objectInsertBatches(objects: readonly ObjectToInsert[]): ObjectToInsert[][] {
  const out: ObjectToInsert[][] = [];
  let batch: ObjectToInsert[] = [];
  let bytes = 0;
  for (const object of objects) {
    const size = object.body.length + (object.annex?.length ?? 0);
    if (batch.length > 0 && (bytes + size > OBJECT_BATCH_BYTES_MAX || batch.length >= OBJECT_BATCH_ROWS_MAX)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(object);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/**
 * Inserts the objects that are not stored yet (a stored id keeps its first copy) and answers the
 * ids it inserted. Bodies and annexes travel concatenated, with 1-based offsets and lengths (-1: no
 * annex), and are cut apart by the server.
 */
export async function insertObjects(db: Db, project: number, batch: readonly ObjectToInsert[]): Promise<Oid[]> {
  const ids = Buffer.concat(batch.map((object) => object.oid));
  const bodies = Buffer.concat(batch.map((object) => object.body));
  const annexes = Buffer.concat(batch.flatMap((object) => (object.annex ? [object.annex] : [])));
  const bodyAt: number[] = [];
  const bodyBytes: number[] = [];
  const annexAt: number[] = [];
  const annexBytes: number[] = [];
  let bodyOffset = 1;
  let annexOffset = 1;
  for (const object of batch) {
    bodyAt.push(bodyOffset);
    bodyBytes.push(object.body.length);
    bodyOffset += object.body.length;
    annexAt.push(annexOffset);
    annexBytes.push(object.annex ? object.annex.length : -1);
    annexOffset += object.annex?.length ?? 0;
  }
  const rows = await db<Array<{ oid: Buffer }>>`
    INSERT INTO treehouse_objects (project_id, oid, type, body, annex)
    SELECT ${project}::bigint, substring(${ids}::bytea FROM (n::int - 1) * 20 + 1 FOR 20), type,
           substring(${bodies}::bytea FROM body_at FOR body_bytes),
           CASE WHEN annex_bytes < 0 THEN NULL ELSE substring(${annexes}::bytea FROM annex_at FOR annex_bytes) END
    FROM unnest(${numberArray(batch.map((object) => object.type))}::int2[], ${numberArray(bodyAt)}::int[], ${numberArray(bodyBytes)}::int[],
                ${numberArray(annexAt)}::int[], ${numberArray(annexBytes)}::int[]) WITH ORDINALITY AS t(type, body_at, body_bytes, annex_at, annex_bytes, n)
    ORDER BY 2
    ON CONFLICT DO NOTHING
    RETURNING oid`.execute();
  return rows.map((row) => row.oid);
}

/**
 * Objects at least this many bytes (bodies and annexes) or rows go through COPY (copyObjects); smaller
 * writes through insertObjects, whose one statement costs fewer round trips.
 */
export const COPY_BYTES_MIN = 1024 * 1024;
export const COPY_ROWS_MIN = 2_000;

/** Bytes of one COPY data message: the event loop gets a turn between them. */
const COPY_CHUNK_BYTES = 256 * 1024;

/** The binary COPY format's header: its signature, no flags, no header extension (PostgreSQL "COPY", File Formats). */
const COPY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const COPY_TRAILER = Buffer.from([0xff, 0xff]);

/**
 * The rows of `objects` in the binary COPY format, in chunks of about COPY_CHUNK_BYTES: (project_id,
 * oid, type, body, annex), or without project_id when `project` is null.
 */
export function* copyChunks(project: number | null, objects: readonly ObjectToInsert[]): Generator<Buffer> {
  let parts: Buffer[] = [COPY_HEADER];
  let bytes = COPY_HEADER.length;
  const projectBytes = project === null ? 0 : 4 + 8;
  for (const object of objects) {
    const head = Buffer.allocUnsafe(2 + projectBytes + 4 + object.oid.length + 4 + 2 + 4);
    let at = head.writeInt16BE(project === null ? 4 : 5, 0);
    if (project !== null) {
      at = head.writeInt32BE(8, at);
      at = head.writeBigInt64BE(BigInt(project), at);
    }
    at = head.writeInt32BE(object.oid.length, at);
    at += object.oid.copy(head, at);
    at = head.writeInt32BE(2, at);
    at = head.writeInt16BE(object.type, at);
    head.writeInt32BE(object.body.length, at);
    const annexLength = Buffer.allocUnsafe(4);
    annexLength.writeInt32BE(object.annex ? object.annex.length : -1, 0);
    parts.push(head, object.body, annexLength);
    bytes += head.length + object.body.length + 4;
    if (object.annex) {
      parts.push(object.annex);
      bytes += object.annex.length;
    }
    if (bytes >= COPY_CHUNK_BYTES) {
      yield Buffer.concat(parts, bytes);
      parts = [];
      bytes = 0;
    }
  }
  parts.push(COPY_TRAILER);
  yield Buffer.concat(parts, bytes + COPY_TRAILER.length);
}

/** A direct COPY of objects failed: one of them was stored by another write meanwhile, or the reason was lost (copyObjectsDirect). */
export class CopyFailedError extends Error {
  override name = 'CopyFailedError';
}

const UNIQUE_VIOLATION = '23505';
const IN_FAILED_TRANSACTION = '25P02';

/**
 * Sends `chunks` on a COPY … FROM STDIN that `start` opened. Nothing else may go out on the
 * connection while a COPY is under way (the server would end it; postgres.js refuses statements
 * while its stream is open): this resolves once the COPY's end is sent, and what the caller sends
 * next follows it. An error the server reports while the rows are being sent is thrown here; one it
 * reports after their end postgres.js drops, but the transaction is then aborted, so the next
 * statement fails ("current transaction is aborted").
 */
async function sendCopy(start: Promise<Writable>, chunks: Iterable<Buffer>): Promise<void> {
  const copy = await start;
  let failure: unknown = null;
  copy.on('error', (error: unknown) => (failure ??= error));
  const closed = new Promise<void>((resolve) => copy.once('close', () => resolve()));
  try {
    for (const chunk of chunks) {
      // Each chunk once the connection's socket took the one before: the loop is free meanwhile.
      await Promise.race([new Promise<void>((resolve) => copy.write(chunk, () => resolve())), closed]);
      if (failure) throw failure;
    }
  } catch (error) {
    // The server ends the COPY (CopyFail), so the connection takes statements again (a rollback).
    if (!failure) copy.destroy(error as Error);
    throw error;
  }
  // Every write is done, so the stream sends the COPY's end now and lets the connection go on.
  copy.end();
  if (failure) throw failure;
}

/**
 * Inserts objects none of which the project stored when the transaction looked (the caller read
 * that on this connection after the project's collection lock): their rows go straight into
 * treehouse_objects by binary COPY, bodies as they are (a statement's parameters travel as hex
 * text the driver builds on the event loop and the server parses). Answers their ids.
 *
 * COPY cannot skip a stored id: when another write stored one of them since the transaction
 * looked, the COPY fails (PostgreSQL reports a unique violation, or postgres.js dropped the error
 * and the statement sent after it finds the transaction aborted) and this throws
 * CopyFailedError; the write runs again, and copies through copyObjects, which skips stored ids.
 */
export async function copyObjectsDirect(db: postgres.TransactionSql, project: number, objects: readonly ObjectToInsert[]): Promise<Oid[]> {
  if (objects.length === 0) return [];
  try {
    await sendCopy(db`COPY treehouse_objects (project_id, oid, type, body, annex) FROM STDIN (FORMAT binary)`.writable(), copyChunks(project, objects));
    await db`SELECT 1`.execute();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === UNIQUE_VIOLATION || code === IN_FAILED_TRANSACTION) throw new CopyFailedError(`the COPY of ${objects.length} objects into project ${project} failed: ${String((error as Error).message)}`, { cause: error });
    throw error;
  }
  return objects.map((object) => object.oid);
}

/**
 * Inserts the objects that are not stored yet, as insertObjects does, for a large write run again
 * after its direct COPY failed: the rows go by binary COPY into a temporary table of the
 * connection's session, then into treehouse_objects in one `INSERT … SELECT … ON CONFLICT DO
 * NOTHING RETURNING oid` that empties the temporary table. Resolves once the COPY is sent and the
 * insert after it (sendCopy); `inserted` is the insert's answer.
 */
export async function copyObjects(db: postgres.TransactionSql, project: number, objects: readonly ObjectToInsert[]): Promise<{ inserted: Promise<Oid[]> }> {
  // The session's table, made by the first such write on the connection (rolled back with it if
  // that write is); rows left by a write that rolled back are gone at the next one's commit.
  const created = db`CREATE TEMP TABLE IF NOT EXISTS treehouse_objects_in (oid bytea NOT NULL, type int2 NOT NULL, body bytea NOT NULL, annex bytea) ON COMMIT DELETE ROWS`.execute();
  created.catch(() => undefined);
  try {
    await sendCopy(db`COPY treehouse_objects_in (oid, type, body, annex) FROM STDIN (FORMAT binary)`.writable(), copyChunks(null, objects));
  } catch (error) {
    // The table's creation failing is the reason the COPY failed.
    await created;
    throw error;
  }
  const inserted = db<Array<{ oid: Buffer }>>`
    WITH staged AS (DELETE FROM treehouse_objects_in RETURNING oid, type, body, annex)
    INSERT INTO treehouse_objects (project_id, oid, type, body, annex)
    SELECT ${project}::bigint, oid, type, body, annex FROM staged
    ORDER BY 2
    ON CONFLICT DO NOTHING
    RETURNING oid`
    .execute()
    .then((rows) => rows.map((row) => row.oid));
  return { inserted };
}

export async function insertCommits(db: Db, project: number, commits: ReadonlyArray<{ oid: Oid; info: CommitInfo }>): Promise<void> {
  for (const batch of chunks(commits, IDS_PER_STATEMENT_MAX)) {
    await db`
      INSERT INTO treehouse_commits (project_id, oid, tree, parents, commit_time, generation)
      SELECT ${project}::bigint, * FROM unnest(${byteaArray(batch.map((c) => c.oid))}::bytea[], ${byteaArray(batch.map((c) => c.info.tree))}::bytea[],
                                               ${byteaArray(batch.map((c) => encodeParents(c.info.parents)))}::bytea[],
                                               ${numberArray(batch.map((c) => c.info.commitTime))}::float8[], ${numberArray(batch.map((c) => c.info.generation))}::int[])
      ORDER BY 2
      ON CONFLICT DO NOTHING`.execute();
  }
}

/** Indexes object lists of stored commits; answers the commits it found stored (the others got nothing). */
export async function upsertCommitObjects(db: Db, project: number, lists: ReadonlyArray<{ oid: Oid; records: Buffer }>): Promise<Set<string>> {
  const stored = new Set<string>();
  for (const batch of chunks(lists, IDS_PER_STATEMENT_MAX)) {
    const rows = await db<Array<{ oid: Buffer }>>`
      INSERT INTO treehouse_commit_objects (project_id, oid, records)
      SELECT ${project}::bigint, l.oid, l.records FROM unnest(${byteaArray(batch.map((list) => list.oid))}::bytea[], ${byteaArray(batch.map((list) => list.records))}::bytea[]) AS l(oid, records)
      WHERE EXISTS (SELECT 1 FROM treehouse_commits c WHERE c.project_id = ${project} AND c.oid = l.oid)
      ORDER BY 1
      ON CONFLICT (project_id, oid) DO UPDATE SET records = EXCLUDED.records
      RETURNING oid`.execute();
    for (const row of rows) stored.add(idKey(row.oid));
  }
  return stored;
}

// ---------------------------------------------------------------------------------------------
// Refs, working trees, versions (moved in write transactions that hold the project's lock).

export async function selectRef(db: Db, project: number, name: string): Promise<Oid | undefined> {
  const [row] = await db<Array<{ oid: Buffer }>>`SELECT oid FROM treehouse_refs WHERE project_id = ${project} AND name = ${nameBytes(name)}`.execute();
  return row?.oid;
}

export async function selectRefs(db: Db, project: number, prefix: string): Promise<Array<{ name: string; oid: Oid }>> {
  const start = nameBytes(prefix);
  const end = prefixEnd(start);
  const rows = end
    ? await db<Array<{ name: Buffer; oid: Buffer }>>`SELECT name, oid FROM treehouse_refs WHERE project_id = ${project} AND name >= ${start} AND name < ${end} ORDER BY name`.execute()
    : await db<Array<{ name: Buffer; oid: Buffer }>>`SELECT name, oid FROM treehouse_refs WHERE project_id = ${project} AND name >= ${start} ORDER BY name`.execute();
  return rows.map((row) => ({ name: nameFromBytes(row.name), oid: row.oid }));
}

/** A ref's compare-and-swap: true when the ref was at `from` and now is at `to`. */
export async function swapRef(db: Db, project: number, name: string, from: Oid | null, to: Oid | null): Promise<boolean> {
  const key = nameBytes(name);
  if (from === null && to === null) {
    const [row] = await db`SELECT 1 FROM treehouse_refs WHERE project_id = ${project} AND name = ${key}`.execute();
    return row === undefined;
  }
  const rows =
    from === null
      ? await db`INSERT INTO treehouse_refs (project_id, name, oid) VALUES (${project}, ${key}, ${to}) ON CONFLICT DO NOTHING RETURNING 1`.execute()
      : to === null
        ? await db`DELETE FROM treehouse_refs WHERE project_id = ${project} AND name = ${key} AND oid = ${from} RETURNING 1`.execute()
        : await db`UPDATE treehouse_refs SET oid = ${to} WHERE project_id = ${project} AND name = ${key} AND oid = ${from} RETURNING 1`.execute();
  return rows.length === 1;
}

interface WorkingTreeRow {
  tree: Buffer;
  locks: Buffer;
}

export async function selectWorkingTree(db: Db, project: number, branch: string): Promise<WorkingTreeState | undefined> {
  const [row] = await db<WorkingTreeRow[]>`SELECT tree, locks FROM treehouse_worktrees WHERE project_id = ${project} AND branch = ${nameBytes(branch)}`.execute();
  return row && { tree: row.tree, locks: decodeLocks(row.locks) };
}

/**
 * A working tree's compare-and-swap: `from` is what the transaction read (null: absent), or
 * 'unread' for a blind write (the project's lock alone guards it). True when it moved.
 */
export async function swapWorkingTree(db: Db, project: number, branch: string, from: WorkingTreeState | null | 'unread', to: WorkingTreeState | null): Promise<boolean> {
  const key = nameBytes(branch);
  const locks = to && encodeLocks(to.locks);
  if (from === 'unread') {
    if (to === null) await db`DELETE FROM treehouse_worktrees WHERE project_id = ${project} AND branch = ${key}`.execute();
    else await db`INSERT INTO treehouse_worktrees (project_id, branch, tree, locks) VALUES (${project}, ${key}, ${to.tree}, ${locks!}) ON CONFLICT (project_id, branch) DO UPDATE SET tree = EXCLUDED.tree, locks = EXCLUDED.locks`.execute();
    return true;
  }
  if (from === null && to === null) {
    const [row] = await db`SELECT 1 FROM treehouse_worktrees WHERE project_id = ${project} AND branch = ${key}`.execute();
    return row === undefined;
  }
  const was = from && encodeLocks(from.locks);
  const rows =
    from === null
      ? await db`INSERT INTO treehouse_worktrees (project_id, branch, tree, locks) VALUES (${project}, ${key}, ${to!.tree}, ${locks!}) ON CONFLICT DO NOTHING RETURNING 1`.execute()
      : to === null
        ? await db`DELETE FROM treehouse_worktrees WHERE project_id = ${project} AND branch = ${key} AND tree = ${from.tree} AND locks = ${was!} RETURNING 1`.execute()
        : await db`UPDATE treehouse_worktrees SET tree = ${to.tree}, locks = ${locks!} WHERE project_id = ${project} AND branch = ${key} AND tree = ${from.tree} AND locks = ${was!} RETURNING 1`.execute();
  return rows.length === 1;
}

export async function selectVersion(db: Db, project: number): Promise<number> {
  const [row] = await db<Array<{ version: string }>>`SELECT version FROM treehouse_versions WHERE project_id = ${project}`.execute();
  return row ? Number(row.version) : 0;
}

/**
 * The project's lock: its version row, created when missing, locked FOR UPDATE until the
 * transaction ends; answers the version. Two statements on one connection, sent together.
 */
export async function lockProject(db: Db, project: number): Promise<number> {
  const [, rows] = await Promise.all([
    db`INSERT INTO treehouse_versions (project_id, version) VALUES (${project}, 0) ON CONFLICT DO NOTHING`.execute(),
    db<Array<{ version: string }>>`SELECT version FROM treehouse_versions WHERE project_id = ${project} FOR UPDATE`.execute(),
  ]);
  if (rows.length !== 1) throw new Error(`project ${project}'s version row vanished while it was being locked`);
  return Number(rows[0].version);
}

/** The advisory lock class (the first key of pg_advisory_xact_lock(int, int)) of projects' collections. */
const COLLECTION_LOCK = 0x7ee_4012;

/**
 * A project's collection lock, held until the transaction ends (README "Garbage collection"):
 * `shared` by every write of the project at its commit, before it reads whether a collection runs;
 * `exclusive` by a write that begins or ends a collection (and by a collector's write run again
 * after its read of the journal changed). So a writer sees the collection's row, or its absence,
 * from its lock to its commit. An advisory lock, as records' are: it needs no row (a project whose
 * writes only stored objects has none in treehouse_versions). Project numbers are taken modulo
 * 2^32 for the lock's key: two projects that share one only wait for each other.
 */
export async function lockCollection(db: Db, project: number, exclusive: boolean): Promise<void> {
  const key = project | 0;
  if (exclusive) await db`SELECT pg_advisory_xact_lock(${COLLECTION_LOCK}::int, ${key}::int)`.execute();
  else await db`SELECT pg_advisory_xact_lock_shared(${COLLECTION_LOCK}::int, ${key}::int)`.execute();
}

/** The version's compare-and-swap, under the project's lock. */
export async function swapVersion(db: Db, project: number, from: number, to: number): Promise<boolean> {
  const rows = await db`UPDATE treehouse_versions SET version = ${to} WHERE project_id = ${project} AND version = ${from} RETURNING 1`.execute();
  return rows.length === 1;
}

/** Tables of project data, in the order a drop empties them (the version row, the project's lock, last). */
const PROJECT_TABLES = [
  'treehouse_forms',
  'treehouse_objects',
  'treehouse_commit_objects',
  'treehouse_commits',
  'treehouse_refs',
  'treehouse_worktrees',
  'treehouse_collection_journal',
  'treehouse_collections',
  'treehouse_versions',
] as const;
const PROJECT_TABLE_KEYS: Record<(typeof PROJECT_TABLES)[number], string> = {
  treehouse_forms: 'oid',
  treehouse_objects: 'oid',
  treehouse_commit_objects: 'oid',
  treehouse_commits: 'oid',
  treehouse_refs: 'name',
  treehouse_worktrees: 'branch',
  treehouse_collection_journal: 'oid',
  treehouse_collections: 'project_id',
  treehouse_versions: 'project_id',
};

/** Deletes at most `rowsMax` rows of the project's data; answers how many it deleted. */
export async function deleteProjectRows(db: Db, project: number, rowsMax: number): Promise<number> {
  let removed = 0;
  for (const table of PROJECT_TABLES) {
    if (removed >= rowsMax) break;
    const key = PROJECT_TABLE_KEYS[table];
    const rows = await db.unsafe(
      `DELETE FROM ${table} WHERE project_id = $1 AND ${key} IN (SELECT ${key} FROM ${table} WHERE project_id = $1 LIMIT $2) RETURNING 1`,
      [project, rowsMax - removed],
    );
    removed += rows.length;
  }
  return removed;
}

// ---------------------------------------------------------------------------------------------
// Garbage collection (README "Garbage collection", src/store/postgres/writeTx.ts).

/** Below every id: a listing "after nothing" starts here. */
const BEFORE_EVERY_ID = Buffer.alloc(0);

/**
 * The ids of `oids` the project stores (a raw copy). `lock`: each found row is locked FOR KEY SHARE
 * (in id order, so two lockers take them in one order) until the transaction ends, so a
 * collection's removal of it waits for this transaction's commit.
 */
export async function selectPresentIds(db: Db, project: number, oids: readonly Oid[], lock: boolean): Promise<Set<string>> {
  const found = await byId(
    oids,
    (batch) =>
      lock
        ? db<Array<{ oid: Buffer }>>`SELECT oid FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[]) ORDER BY oid FOR KEY SHARE`.execute()
        : db<Array<{ oid: Buffer }>>`SELECT oid FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    () => true,
  );
  return new Set(found.keys());
}

export async function selectCollection(db: Db, project: number): Promise<CollectionState | undefined> {
  const [row] = await db<Array<{ id: string; started_at: string }>>`SELECT id, started_at FROM treehouse_collections WHERE project_id = ${project}`.execute();
  return row && { id: row.id, startedAt: row.started_at };
}

/** Records the project's collection, replacing any. */
export async function upsertCollection(db: Db, project: number, state: CollectionState): Promise<void> {
  await db`
    INSERT INTO treehouse_collections (project_id, id, started_at) VALUES (${project}, ${state.id}, ${state.startedAt})
    ON CONFLICT (project_id) DO UPDATE SET id = EXCLUDED.id, started_at = EXCLUDED.started_at`.execute();
}

/** Ends the project's collection and empties its journal. */
export async function deleteCollection(db: Db, project: number): Promise<void> {
  await Promise.all([
    db`DELETE FROM treehouse_collections WHERE project_id = ${project}`.execute(),
    db`DELETE FROM treehouse_collection_journal WHERE project_id = ${project}`.execute(),
  ]);
}

export async function selectJournal(db: Db, project: number, after: Oid | null, limit: number): Promise<Oid[]> {
  const rows = await db<Array<{ oid: Buffer }>>`
    SELECT oid FROM treehouse_collection_journal WHERE project_id = ${project} AND oid > ${after ?? BEFORE_EVERY_ID} ORDER BY oid LIMIT ${limit}`.execute();
  return rows.map((row) => row.oid);
}

/** Journals ids (an id journalled already stays once). */
export async function insertJournal(db: Db, project: number, oids: readonly Oid[]): Promise<void> {
  for (const batch of idBatches(oids)) {
    batch.sort(Buffer.compare);
    await db`
      INSERT INTO treehouse_collection_journal (project_id, oid)
      SELECT ${project}::bigint, oid FROM unnest(${byteaArray(batch)}::bytea[]) AS j(oid)
      ON CONFLICT DO NOTHING`.execute();
  }
}

export async function deleteJournal(db: Db, project: number, oids: readonly Oid[]): Promise<void> {
  for (const batch of idBatches(oids)) {
    await db`DELETE FROM treehouse_collection_journal WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute();
  }
}

export async function selectWorkingTrees(db: Db, project: number): Promise<Array<{ branch: string; state: WorkingTreeState }>> {
  const rows = await db<Array<WorkingTreeRow & { branch: Buffer }>>`SELECT branch, tree, locks FROM treehouse_worktrees WHERE project_id = ${project} ORDER BY branch`.execute();
  return rows.map((row) => ({ branch: nameFromBytes(row.branch), state: { tree: row.tree, locks: decodeLocks(row.locks) } }));
}

/**
 * The ids the project keeps anything under after `after`, in id order, at most `limit`: the union
 * of the object, commit index and object list tables' keys, each read from its primary key's index
 * (the first `limit` of the union are among the first `limit` of each table). No body is read.
 */
export interface StoredListRow {
  oid: Buffer;
  raw: boolean;
  indexed: boolean;
  /** Whether the id has a pack-ready form, its base (null: whole or none) and depth. */
  form: boolean;
  base: Buffer | null;
  depth: number | null;
}

export async function selectStored(db: Db, project: number, after: Oid | null, limit: number): Promise<StoredListRow[]> {
  const from = after ?? BEFORE_EVERY_ID;
  return db<StoredListRow[]>`
    SELECT k.oid, k.raw, k.indexed, f.oid IS NOT NULL AS form, f.base, f.depth FROM (
      SELECT oid, bool_or(raw) AS raw, bool_or(indexed) AS indexed FROM (
        (SELECT oid, true AS raw, false AS indexed FROM treehouse_objects WHERE project_id = ${project} AND oid > ${from} ORDER BY oid LIMIT ${limit})
        UNION ALL
        (SELECT oid, false AS raw, true AS indexed FROM treehouse_commits WHERE project_id = ${project} AND oid > ${from} ORDER BY oid LIMIT ${limit})
        UNION ALL
        (SELECT oid, false AS raw, false AS indexed FROM treehouse_commit_objects WHERE project_id = ${project} AND oid > ${from} ORDER BY oid LIMIT ${limit})
      ) AS kept
      GROUP BY oid ORDER BY oid LIMIT ${limit}
    ) AS k
    LEFT JOIN treehouse_forms f ON f.project_id = ${project} AND f.oid = k.oid
    ORDER BY k.oid`.execute();
}

export interface StoredRow {
  oid: Buffer;
  /** Null when only index entries are kept. */
  type: number | null;
  raw_bytes: number;
  index_bytes: number;
  form_bytes: number;
  base: Buffer | null;
  depth: number | null;
}

/**
 * What the project keeps under each id: its type, the bytes of its body and annex (octet_length
 * reads a TOASTed value's size from its pointer, without fetching it), and of its commit index
 * entry (tree, parents, time and generation) and object list. Ids under which nothing is kept are
 * left out.
 */
export function selectStoredEntries(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, StoredRow>> {
  return byId(
    oids,
    (batch) => db<StoredRow[]>`
      SELECT i.oid, o.type,
             coalesce(octet_length(o.body) + coalesce(octet_length(o.annex), 0), 0)::float8 AS raw_bytes,
             (coalesce(octet_length(c.tree) + octet_length(c.parents) + 12, 0) + coalesce(octet_length(l.records), 0))::float8 AS index_bytes,
             coalesce(octet_length(f.deflated), 0)::float8 AS form_bytes, f.base, f.depth
      FROM unnest(${byteaArray(batch)}::bytea[]) AS i(oid)
      LEFT JOIN treehouse_objects o ON o.project_id = ${project} AND o.oid = i.oid
      LEFT JOIN treehouse_forms f ON f.project_id = ${project} AND f.oid = i.oid
      LEFT JOIN treehouse_commits c ON c.project_id = ${project} AND c.oid = i.oid
      LEFT JOIN treehouse_commit_objects l ON l.project_id = ${project} AND l.oid = i.oid
      WHERE o.oid IS NOT NULL OR c.oid IS NOT NULL OR l.oid IS NOT NULL`.execute(),
    (row) => row,
  );
}

/** Removes everything the project keeps under each id: object, commit index entry, object list, pack-ready form. */
export async function deleteStored(db: Db, project: number, oids: readonly Oid[]): Promise<void> {
  for (const batch of idBatches(oids)) {
    batch.sort(Buffer.compare);
    const ids = byteaArray(batch);
    await Promise.all([
      db`DELETE FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${ids}::bytea[])`.execute(),
      db`DELETE FROM treehouse_commit_objects WHERE project_id = ${project} AND oid = ANY(${ids}::bytea[])`.execute(),
      db`DELETE FROM treehouse_commits WHERE project_id = ${project} AND oid = ANY(${ids}::bytea[])`.execute(),
      // After the objects' rows, whose removal waited for writers that locked them to put a form (insertForms).
      db`DELETE FROM treehouse_forms WHERE project_id = ${project} AND oid = ANY(${ids}::bytea[])`.execute(),
    ]);
  }
}

// ---------------------------------------------------------------------------------------------
// Pack-ready forms (src/store/types.ts DeflatedObject), beside the objects' raw copies.

interface FormRow {
  oid: Buffer;
  type: number;
  inflated_bytes: number;
  deflated: Buffer;
  base: Buffer | null;
  delta_bytes: number | null;
  depth: number;
}

function formFromRow(row: FormRow): DeflatedObject {
  const form: DeflatedObject = { type: typeFromCode(row.type), inflatedBytes: Number(row.inflated_bytes), deflated: row.deflated };
  if (row.base) form.delta = { base: row.base, bytes: Number(row.delta_bytes), depth: row.depth };
  return form;
}

/** The forms of `oids` that have one, keyed by id: one statement per IDS_PER_STATEMENT_MAX ids. */
export function selectForms(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, DeflatedObject>> {
  return byId(
    oids,
    (batch) =>
      db<FormRow[]>`
        SELECT oid, type, inflated_bytes::float8 AS inflated_bytes, deflated, base, delta_bytes::float8 AS delta_bytes, depth
        FROM treehouse_forms WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    formFromRow,
  );
}

/** Type and body size of the stored objects of `oids`, without their bodies. */
export function selectObjectKinds(db: Db, project: number, oids: readonly Oid[]): Promise<Map<string, { type: number; size: number }>> {
  return byId(
    oids,
    (batch) => db<Array<{ oid: Buffer; type: number; size: number }>>`SELECT oid, type, octet_length(body) AS size FROM treehouse_objects WHERE project_id = ${project} AND oid = ANY(${byteaArray(batch)}::bytea[])`.execute(),
    (row) => ({ type: row.type, size: row.size }),
  );
}

export interface FormToInsert {
  oid: Oid;
  deflated: Buffer;
  delta: DeltaForm | null;
}

/** Forms in insert statements of at most OBJECT_BATCH_BYTES_MAX bytes and OBJECT_BATCH_ROWS_MAX rows, each of one depth. */
export function formInsertBatches(forms: readonly FormToInsert[]): FormToInsert[][] {
  const byDepth = new Map<number, FormToInsert[]>();
  for (const form of forms) {
    const depth = form.delta?.depth ?? 0;
    const level = byDepth.get(depth);
    if (level) level.push(form);
    else byDepth.set(depth, [form]);
  }
  const out: FormToInsert[][] = [];
  for (const depth of [...byDepth.keys()].sort((a, b) => a - b)) {
    let batch: FormToInsert[] = [];
    let bytes = 0;
    for (const form of byDepth.get(depth)!.sort((a, b) => Buffer.compare(a.oid, b.oid))) {
      if (batch.length > 0 && (bytes + form.deflated.length > OBJECT_BATCH_BYTES_MAX || batch.length >= OBJECT_BATCH_ROWS_MAX)) {
        out.push(batch);
        batch = [];
        bytes = 0;
      }
      batch.push(form);
      bytes += form.deflated.length;
    }
    if (batch.length > 0) out.push(batch);
  }
  return out;
}

/**
 * Inserts the forms of one depth (formInsertBatches) for stored objects that have none, and answers
 * the ids given one. Type and size come from the object's row, which is locked FOR KEY SHARE, so a
 * collection's removal of it waits for this transaction (and then removes the form too: deleteStored),
 * or, done first, leaves nothing to insert a form for. A delta goes in only while its base's form is
 * at the depth below (locked FOR SHARE against a collection replacing it meanwhile); deltas come in
 * statements after their bases', so a base put in the same transaction counts.
 */
export async function insertForms(db: Db, project: number, batch: readonly FormToInsert[]): Promise<Oid[]> {
  const ids = Buffer.concat(batch.map((form) => form.oid));
  const streams = Buffer.concat(batch.map((form) => form.deflated));
  const at: number[] = [];
  let offset = 1;
  for (const form of batch) {
    at.push(offset);
    offset += form.deflated.length;
  }
  const lengths = numberArray(batch.map((form) => form.deflated.length));
  const bases = byteaArray(batch.map((form) => form.delta?.base ?? null));
  const deltaBytes = numberArray(batch.map((form) => form.delta?.bytes ?? 0));
  const depths = numberArray(batch.map((form) => form.delta?.depth ?? 0));
  const rows = batch[0].delta
    ? await db<Array<{ oid: Buffer }>>`
        INSERT INTO treehouse_forms (project_id, oid, type, inflated_bytes, deflated, base, delta_bytes, depth)
        SELECT o.project_id, o.oid, o.type, octet_length(o.body), substring(${streams}::bytea FROM t.at FOR t.bytes), t.base, t.delta_bytes, t.depth
        FROM unnest(${numberArray(at)}::int[], ${lengths}::int[], ${bases}::bytea[], ${deltaBytes}::bigint[], ${depths}::int[]) WITH ORDINALITY AS t(at, bytes, base, delta_bytes, depth, n)
        JOIN treehouse_objects o ON o.project_id = ${project} AND o.oid = substring(${ids}::bytea FROM (t.n::int - 1) * 20 + 1 FOR 20)
        JOIN treehouse_forms b ON b.project_id = ${project} AND b.oid = t.base
        WHERE b.depth = t.depth - 1 AND t.base <> o.oid
        ORDER BY o.oid
        FOR KEY SHARE OF o FOR SHARE OF b
        ON CONFLICT DO NOTHING
        RETURNING oid`.execute()
    : await db<Array<{ oid: Buffer }>>`
        INSERT INTO treehouse_forms (project_id, oid, type, inflated_bytes, deflated, base, delta_bytes, depth)
        SELECT o.project_id, o.oid, o.type, octet_length(o.body), substring(${streams}::bytea FROM t.at FOR t.bytes), NULL, NULL, 0
        FROM unnest(${numberArray(at)}::int[], ${lengths}::int[]) WITH ORDINALITY AS t(at, bytes, n)
        JOIN treehouse_objects o ON o.project_id = ${project} AND o.oid = substring(${ids}::bytea FROM (t.n::int - 1) * 20 + 1 FOR 20)
        ORDER BY o.oid
        FOR KEY SHARE OF o
        ON CONFLICT DO NOTHING
        RETURNING oid`.execute();
  return rows.map((row) => row.oid);
}

/** Rewrites each delta form whole, where it is still a delta on the base given. */
export async function replaceFormsWhole(db: Db, project: number, forms: ReadonlyArray<{ oid: Oid; base: Oid; deflated: Buffer }>): Promise<void> {
  for (const form of [...forms].sort((a, b) => Buffer.compare(a.oid, b.oid))) {
    await db`
      UPDATE treehouse_forms SET deflated = ${form.deflated}, base = NULL, delta_bytes = NULL, depth = 0
      WHERE project_id = ${project} AND oid = ${form.oid} AND base = ${form.base}`.execute();
  }
}

/**
 * Replaces the forms of `changes` together, only when every one is still what its `was` says (the
 * rows are locked first, in id order); else nothing changes. Answers whether they were replaced.
 */
export async function replaceFormsTogether(db: Db, project: number, changes: readonly FormChange[]): Promise<boolean> {
  if (changes.length === 0) return true;
  const sorted = [...changes].sort((a, b) => Buffer.compare(a.oid, b.oid));
  const streams = Buffer.concat(sorted.map((change) => change.form.deflated));
  const at: number[] = [];
  let offset = 1;
  for (const change of sorted) {
    at.push(offset);
    offset += change.form.deflated.length;
  }
  const rows = await db<Array<{ oid: Buffer }>>`
    WITH c AS (
      SELECT * FROM unnest(${byteaArray(sorted.map((change) => change.oid))}::bytea[], ${byteaArray(sorted.map((change) => change.was.base))}::bytea[],
                           ${numberArray(sorted.map((change) => change.was.depth))}::int[], ${numberArray(at)}::int[],
                           ${numberArray(sorted.map((change) => change.form.deflated.length))}::int[], ${byteaArray(sorted.map((change) => change.form.delta?.base ?? null))}::bytea[],
                           ${numberArray(sorted.map((change) => change.form.delta?.bytes ?? -1))}::bigint[], ${numberArray(sorted.map((change) => change.form.delta?.depth ?? 0))}::int[])
        AS c(oid, was_base, was_depth, at, bytes, base, delta_bytes, depth)
    ),
    current AS (
      SELECT f.oid FROM treehouse_forms f JOIN c ON f.project_id = ${project} AND f.oid = c.oid
      WHERE f.base IS NOT DISTINCT FROM c.was_base AND f.depth = c.was_depth
      ORDER BY f.oid FOR UPDATE OF f
    )
    UPDATE treehouse_forms f
    SET deflated = substring(${streams}::bytea FROM c.at FOR c.bytes), base = c.base,
        delta_bytes = CASE WHEN c.base IS NULL THEN NULL ELSE c.delta_bytes END, depth = c.depth
    FROM c
    WHERE f.project_id = ${project} AND f.oid = c.oid AND (SELECT count(*) FROM current) = ${sorted.length}
    RETURNING f.oid`.execute();
  return rows.length === sorted.length;
}

/**
 * A page of the backlog (src/store/asyncTypes.ts listUndeflated): at most `limit` stored objects in
 * (project, id) order after the cursor, each with whether it has a form. An index scan of the
 * objects' key and one probe of the forms' key per object: no index of objects without a form,
 * which every insert would have to keep.
 */
export async function selectUndeflatedPage(db: Db, after: { project: number; oid: Oid } | null, limit: number): Promise<Array<{ project_id: number; oid: Buffer; formed: boolean }>> {
  const rows = after
    ? await db<Array<{ project_id: string; oid: Buffer; formed: boolean }>>`
        SELECT o.project_id, o.oid, EXISTS (SELECT 1 FROM treehouse_forms f WHERE f.project_id = o.project_id AND f.oid = o.oid) AS formed
        FROM (SELECT project_id, oid FROM treehouse_objects WHERE (project_id, oid) > (${after.project}::bigint, ${after.oid}::bytea) ORDER BY project_id, oid LIMIT ${limit}) AS o
        ORDER BY o.project_id, o.oid`.execute()
    : await db<Array<{ project_id: string; oid: Buffer; formed: boolean }>>`
        SELECT o.project_id, o.oid, EXISTS (SELECT 1 FROM treehouse_forms f WHERE f.project_id = o.project_id AND f.oid = o.oid) AS formed
        FROM (SELECT project_id, oid FROM treehouse_objects ORDER BY project_id, oid LIMIT ${limit}) AS o
        ORDER BY o.project_id, o.oid`.execute();
  return rows.map((row) => ({ project_id: Number(row.project_id), oid: row.oid, formed: row.formed }));
}

// ---------------------------------------------------------------------------------------------
// Records.

export async function selectRecord(db: Db, key: string): Promise<Buffer | undefined> {
  const [row] = await db<Array<{ value: Buffer }>>`SELECT value FROM treehouse_records WHERE key = ${key}`.execute();
  return row?.value;
}

export interface RecordRange {
  reverse?: boolean;
  after?: string;
  limit?: number;
}

export async function selectRecords(db: Db, prefix: string, range: RecordRange): Promise<Array<{ key: string; value: Buffer }>> {
  const end = recordPrefixEnd(prefix);
  const limit = range.limit ?? null;
  const after = range.after;
  if (range.reverse) {
    return after === undefined
      ? db<Array<{ key: string; value: Buffer }>>`SELECT key, value FROM treehouse_records WHERE key >= ${prefix} AND key < ${end} ORDER BY key DESC LIMIT ${limit}`.execute()
      : db<Array<{ key: string; value: Buffer }>>`SELECT key, value FROM treehouse_records WHERE key >= ${prefix} AND key < ${end} AND key < ${after} ORDER BY key DESC LIMIT ${limit}`.execute();
  }
  return after === undefined
    ? db<Array<{ key: string; value: Buffer }>>`SELECT key, value FROM treehouse_records WHERE key >= ${prefix} AND key < ${end} ORDER BY key LIMIT ${limit}`.execute()
    : db<Array<{ key: string; value: Buffer }>>`SELECT key, value FROM treehouse_records WHERE key >= ${prefix} AND key < ${end} AND key > ${after} ORDER BY key LIMIT ${limit}`.execute();
}

export async function upsertRecords(db: Db, records: ReadonlyArray<{ key: string; value: Buffer }>): Promise<void> {
  if (records.length === 0) return;
  await db`
    INSERT INTO treehouse_records (key, value)
    SELECT * FROM unnest(${textArray(records.map((record) => record.key))}::text[], ${byteaArray(records.map((record) => record.value))}::bytea[])
    ORDER BY 1
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`.execute();
}

export async function deleteRecords(db: Db, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await db`DELETE FROM treehouse_records WHERE key = ANY(${textArray(keys)}::text[])`.execute();
}

/** Bytes the backend's tables take (with their TOAST and indexes). */
export async function selectStorageBytes(db: Db): Promise<number> {
  const [row] = await db<Array<{ bytes: number }>>`
    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::float8 AS bytes
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND c.relname LIKE 'treehouse\\_%' AND n.nspname = current_schema()`.execute();
  return row.bytes;
}


// ---------------------------------------------------------------------------------------------
// Rate limits.

/**
 * Takes a token from `key`'s bucket, refilled at `ratePerSecond` up to `burst` by the server's clock
 * (the nodes' clocks never meet), in one statement: 0 when taken, else the seconds until one is free.
 */
export async function takeRateToken(db: Db, key: string, ratePerSecond: number, burst: number): Promise<{ waitSeconds: number; tokens: number }> {
  const [row] = await db<Array<{ tokens: number; taken: boolean }>>`
    WITH asked AS (SELECT ${ratePerSecond}::float8 AS rate, ${burst}::float8 AS burst)
    INSERT INTO treehouse_rate_buckets AS b (key, tokens, taken, updated_at)
    SELECT ${key}, greatest(asked.burst - 1, 0), asked.burst >= 1, now() FROM asked
    ON CONFLICT (key) DO UPDATE SET
      taken = least((SELECT burst FROM asked), b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)::float8) * (SELECT rate FROM asked)) >= 1,
      tokens = least((SELECT burst FROM asked), b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)::float8) * (SELECT rate FROM asked))
               - CASE WHEN least((SELECT burst FROM asked), b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)::float8) * (SELECT rate FROM asked)) >= 1 THEN 1 ELSE 0 END,
      updated_at = now()
    RETURNING tokens, taken`.execute();
  return { waitSeconds: row.taken ? 0 : Math.max(0, 1 - row.tokens) / ratePerSecond, tokens: row.tokens };
}

// ---------------------------------------------------------------------------------------------
// Signals between nodes.

/** Each message goes out as `<node> <message>` (signals.ts markedSignal). */
export async function sendSignals(db: Db, node: string, signals: ReadonlyArray<{ channel: string; message: string }>): Promise<void> {
  if (signals.length === 0) return;
  await db`SELECT pg_notify(channel, message) FROM unnest(${textArray(signals.map((signal) => signal.channel))}::text[], ${textArray(signals.map((signal) => markedSignal(node, signal.message)))}::text[]) AS s(channel, message)`.execute();
}
