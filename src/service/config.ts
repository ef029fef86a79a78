/**
 * Configuration from the environment (../shared/API.md "Running it"), read once by the entry points.
 * Every limit of the contract's "Limits" table is here, each overridable by a variable.
 */
import { join, resolve } from 'node:path';

export interface Limits {
  requestBodyBytesMax: number;
  fileBytesMax: number;
  batchFilesMax: number;
  /** Snippet edits in one batch entry. */
  editsPerFileMax: number;
  /** Bytes of text one batch's snippet edits may scan in all. */
  editScanBytesMax: number;
  zipUnpackedBytesMax: number;
  zipEntriesMax: number;
  requestsPerSecondPerKey: number;
  requestBurstPerKey: number;
  /** Ref updates (commands) in one git push; more refuses the whole push. */
  pushRefsMax: number;
}

/**
 * How long a client may take to send a request, and how many connections one address may hold, so
 * slow or idle clients cannot pile up descriptors (README "Configuration").
 */
export interface ConnectionLimits {
  /** From the connection's first byte to the end of the request headers. */
  headersTimeoutMs: number;
  /** From the first byte to the end of the whole request, body included. */
  requestTimeoutMs: number;
  /** The longest pause while a request body is being received. */
  bodyIdleTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** Open connections from one client address; more are refused at once. */
  connectionsPerAddressMax: number;
}

/** The event log, its streams and webhooks (README "Change events"). */
export interface EventsConfig {
  /** Events are kept at least this long (the contract: at least 7 days). */
  retentionMs: number;
  /** A comment line on every open stream this often. */
  streamHeartbeatMs: number;
  /** Unsent bytes a stream's client may let pile up before the stream is closed. */
  streamBufferBytesMax: number;
  webhooksPerTeamMax: number;
  /** A delivery not answered 2xx within this long failed. */
  webhookTimeoutMs: number;
  /** The first retry waits this long, each further one twice as long, up to webhookRetryMaxMs (±20 %). */
  webhookRetryBaseMs: number;
  webhookRetryMaxMs: number;
  /** A delivery still failing this long after its event is `failed`. */
  webhookGiveUpMs: number;
  /** Deliveries under way at once. */
  webhookConcurrency: number;
}

/** Idempotency-Key (README "Idempotency-Key"). */
export interface IdempotencyConfig {
  /** How long a key's first answer is kept (the contract: 24 hours). */
  ttlMs: number;
}

/** Garbage collection (README "Garbage collection"). */
export interface GcConfig {
  /** How long a collection waits after it begins before it reads or removes anything. */
  graceMs: number;
  /** A project is collected once this many objects were stored in it since its last collection (0: never for that reason). */
  newObjects: number;
  /** Every project changed since its last collection is collected this often (0: never for that reason). */
  intervalMs: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** postgres://… (TREEHOUSE_DATABASE_URL): the PostgreSQL backend; null: LMDB in dataDir. */
  databaseUrl: string | null;
  /** Connections of each of the PostgreSQL store's two pools (reads, write transactions). */
  databaseConnections: { reads: number; writes: number };
  publicBaseUrl: string;
  secret: string | undefined;
  allowPrivateGitHosts: boolean;
  /** Port of the Prometheus /metrics listener (on HOST); null: no metrics. */
  metricsPort: number | null;
  /** A linked-repository push's claim on its queue entry lapses this long after its node last renewed it. */
  syncClaimTtlMs: number;
  /** Stored entries a deleted project's background drop removes per write (src/service/projectDrops.ts). */
  dropKeysPerWrite: number;
  /** How often a node looks for deleted projects' drops that another node left (marked at least this long ago). */
  dropSweepMs: number;
  limits: Limits;
  connections: ConnectionLimits;
  events: EventsConfig;
  idempotency: IdempotencyConfig;
  gc: GcConfig;
}

const MIB = 1024 * 1024;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** TREEHOUSE_DATABASE_URL: a postgres:// or postgresql:// URL, or unset for LMDB. */
function databaseUrl(env: NodeJS.ProcessEnv): string | null {
  const raw = env.TREEHOUSE_DATABASE_URL;
  if (raw === undefined || raw === '') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('TREEHOUSE_DATABASE_URL must be a URL such as postgres://user:password@host:5432/treehouse');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(`TREEHOUSE_DATABASE_URL must start with postgres:// or postgresql://, not ${url.protocol}//`);
  }
  // Several nodes share the database, and what one seals (linked-repository tokens, commerce
  // credentials, webhook secrets) another must open: a secret generated into one node's data
  // directory would make them unreadable elsewhere, so it must be configured, the same everywhere.
  if (!env.TREEHOUSE_SECRET) {
    throw new Error('TREEHOUSE_DATABASE_URL needs TREEHOUSE_SECRET: every node of one database must seal credentials with the same secret (README "PostgreSQL").');
  }
  return raw;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080);
  const host = env.HOST || '127.0.0.1';
  return {
    port,
    host,
    dataDir: resolve(env.TREEHOUSE_DATA_DIR || join(process.cwd(), 'data')),
    databaseUrl: databaseUrl(env),
    databaseConnections: {
      reads: Math.max(1, integer(env, 'TREEHOUSE_DATABASE_READ_CONNECTIONS', 8)),
      writes: Math.max(1, integer(env, 'TREEHOUSE_DATABASE_WRITE_CONNECTIONS', 8)),
    },
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
    secret: env.TREEHOUSE_SECRET || undefined,
    allowPrivateGitHosts: env.TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS === '1',
    metricsPort: env.TREEHOUSE_METRICS_PORT ? integer(env, 'TREEHOUSE_METRICS_PORT', 0) : null,
    syncClaimTtlMs: Math.max(1_000, integer(env, 'TREEHOUSE_SYNC_CLAIM_TTL_MS', 60_000)),
    dropKeysPerWrite: Math.max(1, integer(env, 'TREEHOUSE_DROP_KEYS_PER_WRITE', 2_000)),
    dropSweepMs: Math.max(1, integer(env, 'TREEHOUSE_DROP_SWEEP_SECONDS', 300)) * 1000,
    limits: {
      requestBodyBytesMax: integer(env, 'TREEHOUSE_REQUEST_BODY_BYTES_MAX', 100 * MIB),
      fileBytesMax: integer(env, 'TREEHOUSE_FILE_BYTES_MAX', 25 * MIB),
      batchFilesMax: integer(env, 'TREEHOUSE_BATCH_FILES_MAX', 10_000),
      editsPerFileMax: integer(env, 'TREEHOUSE_EDITS_PER_FILE_MAX', 1000),
      editScanBytesMax: integer(env, 'TREEHOUSE_EDIT_SCAN_BYTES_MAX', 256 * MIB),
      zipUnpackedBytesMax: integer(env, 'TREEHOUSE_ZIP_UNPACKED_BYTES_MAX', 200 * MIB),
      zipEntriesMax: integer(env, 'TREEHOUSE_ZIP_ENTRIES_MAX', 20_000),
      requestsPerSecondPerKey: integer(env, 'TREEHOUSE_RATE_PER_SECOND', 50),
      requestBurstPerKey: integer(env, 'TREEHOUSE_RATE_BURST', 200),
      pushRefsMax: integer(env, 'TREEHOUSE_PUSH_REFS_MAX', 1000),
    },
    gc: {
      graceMs: integer(env, 'TREEHOUSE_GC_GRACE_SECONDS', 900) * 1000,
      newObjects: integer(env, 'TREEHOUSE_GC_NEW_OBJECTS', 20_000),
      intervalMs: integer(env, 'TREEHOUSE_GC_INTERVAL_SECONDS', 86_400) * 1000,
    },
    connections: {
      headersTimeoutMs: integer(env, 'TREEHOUSE_HEADERS_TIMEOUT_MS', 10_000),
      requestTimeoutMs: integer(env, 'TREEHOUSE_REQUEST_TIMEOUT_MS', 300_000),
      bodyIdleTimeoutMs: integer(env, 'TREEHOUSE_BODY_IDLE_TIMEOUT_MS', 30_000),
      keepAliveTimeoutMs: integer(env, 'TREEHOUSE_KEEP_ALIVE_TIMEOUT_MS', 5_000),
      connectionsPerAddressMax: integer(env, 'TREEHOUSE_CONNECTIONS_PER_ADDRESS_MAX', 256),
    },
    events: {
      retentionMs: integer(env, 'TREEHOUSE_EVENT_RETENTION_HOURS', 7 * 24) * HOUR_MS,
      streamHeartbeatMs: integer(env, 'TREEHOUSE_EVENT_STREAM_HEARTBEAT_MS', 15_000),
      streamBufferBytesMax: integer(env, 'TREEHOUSE_EVENT_STREAM_BUFFER_BYTES_MAX', MIB),
      webhooksPerTeamMax: integer(env, 'TREEHOUSE_WEBHOOKS_PER_TEAM_MAX', 20),
      webhookTimeoutMs: integer(env, 'TREEHOUSE_WEBHOOK_TIMEOUT_MS', 10_000),
      webhookRetryBaseMs: integer(env, 'TREEHOUSE_WEBHOOK_RETRY_BASE_MS', MINUTE_MS),
      webhookRetryMaxMs: integer(env, 'TREEHOUSE_WEBHOOK_RETRY_MAX_MS', 6 * HOUR_MS),
      webhookGiveUpMs: integer(env, 'TREEHOUSE_WEBHOOK_GIVE_UP_MS', 24 * HOUR_MS),
      webhookConcurrency: Math.max(1, integer(env, 'TREEHOUSE_WEBHOOK_CONCURRENCY', 16)),
    },
    idempotency: {
      ttlMs: integer(env, 'TREEHOUSE_IDEMPOTENCY_TTL_SECONDS', 24 * 60 * 60) * 1000,
    },
  };
}
