/**
 * The one error type of Treehouse. `code` is a code of the contract's error table
 * (../shared/API.md); only src/http knows which HTTP status each code maps to.
 */
export const errorCodes = [
  'invalid_request',
  'unauthorized',
  'not_found',
  'branch_exists',
  'protected_branch',
  'merge_conflict',
  'uncommitted_changes',
  'path_conflict',
  'already_exists',
  'ref_changed',
  'edit_mismatch',
  'handle_taken',
  'idempotency_in_progress',
  'events_expired',
  'payload_too_large',
  'idempotency_key_reused',
  'file_locked',
  'rate_limited',
  'internal',
  'unavailable',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/** Default human-readable message per code; a thrower may give a more specific one. */
export const defaultMessages: Record<ErrorCode, string> = {
  invalid_request: 'The request is invalid.',
  unauthorized: 'A valid API key is required.',
  not_found: 'Not found.',
  branch_exists: 'The branch already exists.',
  protected_branch: 'The branch is protected.',
  merge_conflict: 'The merge has conflicts; nothing was changed.',
  uncommitted_changes: 'The working tree has uncommitted changes.',
  path_conflict: 'A file would sit where a directory is, or the reverse.',
  already_exists: 'The target already exists.',
  ref_changed: 'The branch head is not the expected one.',
  edit_mismatch: "An edit's old text does not occur exactly once; nothing was written.",
  handle_taken: 'The handle is already in use.',
  idempotency_in_progress: 'A request with this Idempotency-Key is still running; retry once it has finished.',
  events_expired: 'The events after that id are no longer kept.',
  payload_too_large: 'The payload is over its limit.',
  idempotency_key_reused: 'This Idempotency-Key was used with another request (method, path or body); use a new key.',
  file_locked: 'A locked file would be changed.',
  rate_limited: 'Too many requests.',
  internal: 'Internal error.',
  unavailable: 'The service is unavailable; nothing was written.',
};

export class TreehouseError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>) {
    super(message ?? defaultMessages[code]);
    this.name = 'TreehouseError';
    this.code = code;
    this.details = details;
  }
}

export function isTreehouseError(error: unknown): error is TreehouseError {
  return error instanceof TreehouseError;
}

/**
 * An object that must be stored is not: a ref, a tree or an index names it. A broken invariant, not
 * a client's mistake: the HTTP layer answers it `internal`, and its log line names the object
 * (`type` is what it should have been: tree, blob, commit; `context` says where it was named).
 */
export class MissingObjectError extends Error {
  readonly type: string;
  readonly oid: string;

  constructor(type: string, oid: string | Uint8Array, context?: string) {
    const hex = typeof oid === 'string' ? oid : Buffer.from(oid.buffer, oid.byteOffset, oid.byteLength).toString('hex');
    super(`${type} ${hex}${context ? ` ${context}` : ''} is missing`);
    this.name = 'MissingObjectError';
    this.type = type;
    this.oid = hex;
  }
}
