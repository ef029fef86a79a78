/** Opaque, URL-safe ids and API keys. */
import { randomBytes } from 'node:crypto';

export function newId(prefix: 'prj' | 'key' | 'team' | 'whk'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

/** `th_` and 43 URL-safe characters (32 random bytes). */
export function newApiKey(): string {
  return `th_${randomBytes(32).toString('base64url')}`;
}

export const API_KEY_PATTERN = /^th_[A-Za-z0-9_-]{32,}$/;
