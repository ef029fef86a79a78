/**
 * The one place that knows HTTP statuses: each code of the contract's error table maps to its status,
 * and every failure leaves as the contract's envelope `{error: {code, message, details?}}`.
 */
import type { ErrorCode } from '../errors.js';
import { displayPath } from '../git/pathBytes.js';
import { pathsDetail, pathView } from './apiPath.js';

export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  branch_exists: 409,
  protected_branch: 409,
  merge_conflict: 409,
  uncommitted_changes: 409,
  path_conflict: 409,
  already_exists: 409,
  ref_changed: 409,
  edit_mismatch: 409,
  handle_taken: 409,
  idempotency_in_progress: 409,
  events_expired: 410,
  payload_too_large: 413,
  idempotency_key_reused: 422,
  file_locked: 423,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

export function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorEnvelope {
  const text = displayPath(message);
  return { error: details === undefined ? { code, message: text } : { code, message: text, details: pathDetails(details) } };
}

/**
 * File paths in details as answers show them (README "File names are bytes"): `paths` for display
 * with `paths_base64` beside it when a name is not UTF-8, a conflict's or a file's `path` with its
 * `path_base64`. A message names paths for display only.
 */
function pathDetails(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...details };
  if (Array.isArray(details.paths) && details.paths.every((path) => typeof path === 'string')) Object.assign(out, pathsDetail(details.paths));
  if (typeof details.path === 'string') Object.assign(out, pathView(details.path));
  if (Array.isArray(details.conflicts)) {
    out.conflicts = details.conflicts.map((conflict: Record<string, unknown>) =>
      typeof conflict?.path === 'string' ? { ...conflict, ...pathView(conflict.path) } : conflict,
    );
  }
  return out;
}
