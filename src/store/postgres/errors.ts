/**
 * What the driver's errors mean to the store: a database that cannot be reached (down, restarting,
 * refusing connections, the connection dropped) is StoreUnavailableError, a full disk is
 * StorageFullError, a deadlock or serialization failure means the write runs again, and anything
 * else is a bug or a broken invariant and goes up as it is.
 */
import { StorageFullError, StoreUnavailableError } from '../types.js';

/** Errors of the socket or of postgres.js's connection handling (its `code` is not a SQLSTATE). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
]);

/**
 * SQLSTATEs that say the server cannot serve us now (PostgreSQL, appendix A): connection exceptions
 * (class 08) are matched by class; these besides.
 */
const UNAVAILABLE_STATES = new Set([
  '57P01', // admin_shutdown: the server is stopping, or pg_terminate_backend
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, in recovery
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
  '53300', // too_many_connections
  '53200', // out_of_memory
  '3D000', // invalid_catalog_name: the database does not exist (dropped, or a wrong URL)
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
]);

const DISK_FULL_STATE = '53100';

/**
 * The errors a server sends as it ends a session. postgres.js 3.4 keeps such an error when it cuts
 * off a statement under way, and gives it to the first statement of the next session on that
 * connection, which the server ran or would have run: a read or a rolled-back write that fails with
 * one of these may simply run again (once: a server that keeps ending sessions is unavailable).
 */
const SESSION_END_STATES = new Set(['57P01', '57P02', '57P05', '25P03']);

/** Serialization failure and deadlock: the transaction was rolled back and may simply run again. */
const RETRYABLE_STATES = new Set(['40001', '40P01']);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isRetryable(error: unknown): boolean {
  const code = codeOf(error);
  return code !== undefined && RETRYABLE_STATES.has(code);
}

/** An error that may be another session's, handed on by the driver (SESSION_END_STATES). */
export function isStale(error: unknown): boolean {
  const cause = error instanceof StoreUnavailableError ? error.cause : error;
  const code = codeOf(cause);
  return code !== undefined && SESSION_END_STATES.has(code);
}

export function isUnavailable(error: unknown): boolean {
  const code = codeOf(error);
  if (code === undefined) return false;
  return CONNECTION_CODES.has(code) || UNAVAILABLE_STATES.has(code) || (code.length === 5 && code.startsWith('08'));
}

/**
 * The error a caller of the store sees for a driver error. `duringCommit`: the connection may
 * have been lost after COMMIT was sent, so the write's outcome is unknown.
 */
export function storeError(error: unknown, duringCommit = false): unknown {
  if (error instanceof StoreUnavailableError || error instanceof StorageFullError) return error;
  if (codeOf(error) === DISK_FULL_STATE) return new StorageFullError(String((error as Error).message));
  if (isUnavailable(error)) {
    const message = `PostgreSQL is unavailable: ${String((error as Error).message ?? error)}`;
    return new StoreUnavailableError(message, duringCommit, { cause: error });
  }
  return error;
}
