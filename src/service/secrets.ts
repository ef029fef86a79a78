/**
 * Credentials at rest (commerce tokens, linked-repository tokens) are sealed with AES-256-GCM under a
 * key derived from the configured secret, or from one generated into the data directory (mode 0600).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The generated secret's file in the data directory (backups carry it too). */
export const SECRET_FILE = 'secret';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED_PREFIX = 'v1:';

export class Sealer {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHash('sha256').update(`treehouse-credentials:${secret}`).digest();
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  open(sealed: string): string {
    if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('not a sealed value');
    const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** The configured secret, or the one kept in the data directory (created on first use). */
export function loadSecret(dataDir: string, configured: string | undefined): string {
  if (configured) return configured;
  const path = join(dataDir, SECRET_FILE);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  return secret;
}
