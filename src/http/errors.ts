/**
 * The one place that knows HTTP statuses: each code of the contract's error table maps to its status,
 * and every failure leaves as the contract's envelope `{error: {code, message, details?}}`.
 */
import type { ErrorCode } from '../errors.js';

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
  handle_taken: 409,
  payload_too_large: 413,
  file_locked: 423,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

export function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorEnvelope {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}
