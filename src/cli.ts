/**
 * The command-line tool (`npm run treehouse -- <verb>`, or the `treehouse` bin):
 *   treehouse teams create NAME
 *   treehouse keys create --team NAME [--name LABEL]   (prints the key alone on its last line)
 *   treehouse keys list --team NAME
 *   treehouse keys revoke KEY_ID
 *   treehouse backup DIR       (a consistent, compacted copy of the data directory; the server may run)
 *   treehouse restore DIR      (into TREEHOUSE_DATA_DIR, which must be empty; the server must not run)
 *
 * It opens the store the server's configuration names: teams and keys work on either backend;
 * backup and restore are LMDB's (a PostgreSQL database is backed up with pg_dump or its base backups).
 */
import { parseArgs } from 'node:util';
import { isTreehouseError } from './errors.js';
import { BackupError, POSTGRES_BACKUP_MESSAGE, backupDataDir, restoreDataDir } from './service/backup.js';
import { loadConfig } from './service/config.js';
import { openTreehouse } from './service/treehouse.js';
import { openStore } from './store/open.js';

const USAGE = `usage:
  treehouse teams create NAME
  treehouse keys create --team NAME [--name LABEL]
  treehouse keys list --team NAME
  treehouse keys revoke KEY_ID
  treehouse backup DIR
  treehouse restore DIR`;

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { team: { type: 'string' }, name: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [noun, verb, argument] = positionals;
  if (values.help || !noun) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  if ((noun === 'backup' || noun === 'restore') && verb && config.databaseUrl) {
    process.stderr.write(`treehouse: ${POSTGRES_BACKUP_MESSAGE}\n`);
    return 1;
  }
  if (noun === 'restore' && verb) {
    // The data directory is written, not opened: it must not be in use.
    const manifest = await withBackupErrors(() => restoreDataDir(verb, config.dataDir));
    if (!manifest) return 1;
    process.stdout.write(`restored the backup of ${manifest.created_at} into ${config.dataDir}\n`);
    return 0;
  }
  const th = openTreehouse(config, await openStore(config));
  try {
    if (noun === 'backup' && verb) {
      const manifest = await withBackupErrors(() => backupDataDir(th.store, config.dataDir, verb));
      if (!manifest) return 1;
      process.stdout.write(`backed up ${config.dataDir} into ${verb} (${manifest.created_at})\n`);
      return 0;
    }
    if (noun === 'teams' && verb === 'create' && argument) {
      const team = await th.accounts.createTeam(argument);
      process.stdout.write(`created team ${team.name} (${team.id})\n`);
    } else if (noun === 'keys' && verb === 'create' && values.team) {
      const { record, key } = await th.accounts.createKey(values.team, values.name);
      process.stdout.write(`created key ${record.id} (${record.name}) for team ${values.team}; it is shown only once:\n${key}\n`);
    } else if (noun === 'keys' && verb === 'list' && values.team) {
      for (const key of await th.accounts.listKeys(values.team)) {
        process.stdout.write(`${key.id}\t${key.name}\t${key.created_at}\t${key.revoked_at ? `revoked ${key.revoked_at}` : 'active'}\n`);
      }
    } else if (noun === 'keys' && verb === 'revoke' && argument) {
      const key = await th.accounts.revokeKey(argument);
      process.stdout.write(`revoked key ${key.id}\n`);
    } else {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    return 0;
  } catch (error) {
    if (isTreehouseError(error)) {
      process.stderr.write(`treehouse: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await th.close();
  }
}

/** Runs a backup or restore step; a refusal is printed and gives undefined. */
async function withBackupErrors<T>(action: () => Promise<T>): Promise<T | undefined> {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof BackupError)) throw error;
    process.stderr.write(`treehouse: ${error.message}\n`);
    return undefined;
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
