/**
 * Credentials at rest (commerce tokens, linked-repository tokens) are sealed with AES-256-GCM under a
 * key derived from the configured secret, or from one generated into the data directory (mode 0600).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AsyncStore } from '../store/asyncTypes.js';

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

/** A value sealed under the secret the store's credentials are sealed with, to recognise it again. */
const SECRET_CHECK_KEY = 'secret/check';
const SECRET_CHECK_PLAIN = 'treehouse credentials';

export class SecretMismatchError extends Error {
  override name = 'SecretMismatchError';
}

/**
 * Refuses a secret other than the one the store's credentials were sealed with: on a database
 * shared by several nodes, a node started with another TREEHOUSE_SECRET would seal what the others
 * cannot open, and fail to open what they sealed. The first start records a value sealed under
 * its secret (nodes starting together: one writes it, the others check against it).
 */
export async function checkSecret(store: AsyncStore, sealer: Sealer): Promise<void> {
  const opens = (sealed: string) => {
    try {
      return sealer.open(sealed) === SECRET_CHECK_PLAIN;
    } catch {
      return false;
    }
  };
  let sealed = await store.read((tx) => tx.getRecord<string>(SECRET_CHECK_KEY));
  sealed ??= await store.write(async (tx) => {
    const stored = await tx.getRecord<string>(SECRET_CHECK_KEY);
    if (stored !== undefined) return stored;
    const made = sealer.seal(SECRET_CHECK_PLAIN);
    tx.putRecord(SECRET_CHECK_KEY, made);
    return made;
  });
  if (!opens(sealed)) {
    throw new SecretMismatchError(
      "The store's credentials were sealed with another secret: start every node with the TREEHOUSE_SECRET (or the data directory's generated secret) the store was first used with.",
    );
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
