/**
 * Hot backup and restore of a data directory (`treehouse backup DIR`, `treehouse restore DIR`).
 *
 * A backup is a directory holding the store's compacted snapshot (the writes committed when the
 * backup began, none after; writers and readers go on meanwhile), the generated secret when there
 * is one (without it, sealed credentials could not be opened), and a manifest saying what it is. A
 * restore copies those into an empty data directory and opens the result once, so a backup that
 * cannot be read is refused before anything depends on it.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import type { AsyncStore } from '../store/asyncTypes.js';
import { SECRET_FILE } from './secrets.js';

const MANIFEST_FILE = 'treehouse-backup.json';
/** The store's files in a data directory (LMDB: data.mdb; lock.mdb is recreated on open). */
const STORE_FILES = ['data.mdb'];

interface Manifest {
  kind: 'treehouse-backup';
  created_at: string;
  store: 'lmdb';
  secret: boolean;
}

/** Why backup and restore refuse a configuration whose store is PostgreSQL. */
export const POSTGRES_BACKUP_MESSAGE =
  'The store is the PostgreSQL database of TREEHOUSE_DATABASE_URL: back it up and restore it with its own tools (pg_dump and pg_restore, or base backups with WAL archiving; README "Backup and restore"); nothing was written.';

export class BackupError extends Error {
  override name = 'BackupError';
}

function copySecret(from: string, to: string): void {
  copyFileSync(from, to);
  chmodSync(to, 0o600);
}

function requireEmptyDirectory(dir: string, what: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new BackupError(`${what} ${dir} is not empty; nothing was written.`);
  mkdirSync(dir, { recursive: true });
}

/** Backs up the open store and the data directory's secret into `dir` (new or empty). */
export async function backupDataDir(store: AsyncStore, dataDir: string, dir: string): Promise<Manifest> {
  if (!store.backup) throw new BackupError(POSTGRES_BACKUP_MESSAGE);
  requireEmptyDirectory(dir, 'The backup directory');
  try {
    await store.backup(dir);
    const secret = existsSync(join(dataDir, SECRET_FILE));
    if (secret) copySecret(join(dataDir, SECRET_FILE), join(dir, SECRET_FILE));
    const manifest: Manifest = { kind: 'treehouse-backup', created_at: new Date().toISOString(), store: 'lmdb', secret };
    // Written last: a directory without a manifest is an unfinished backup and is refused by restore.
    writeFileSync(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Restores the backup in `backupDir` into `dataDir` (new or empty), and checks that it opens. */
export async function restoreDataDir(backupDir: string, dataDir: string): Promise<Manifest> {
  const manifestPath = join(backupDir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new BackupError(`${backupDir} holds no finished Treehouse backup (no ${MANIFEST_FILE}).`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
  if (manifest.kind !== 'treehouse-backup' || manifest.store !== 'lmdb') throw new BackupError(`${backupDir} is not a backup this build restores.`);
  requireEmptyDirectory(dataDir, 'The data directory');
  try {
    for (const file of STORE_FILES) copyFileSync(join(backupDir, file), join(dataDir, file));
    if (manifest.secret) copySecret(join(backupDir, SECRET_FILE), join(dataDir, SECRET_FILE));
    // Opening checks the store's format; a backup this build cannot read fails here.
    await (await openStore({ dataDir })).close();
    return manifest;
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}
