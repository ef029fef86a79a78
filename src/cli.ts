/**
 * The command-line tool (`npm run treehouse -- <verb>`, or the `treehouse` bin):
 *   treehouse teams create NAME
 *   treehouse keys create --team NAME [--name LABEL]   (prints the key alone on its last line)
 *   treehouse keys list --team NAME
 *   treehouse keys revoke KEY_ID
 *   treehouse backup DIR       (a consistent, compacted copy of the data directory; the server may run)
 *   treehouse restore DIR      (into TREEHOUSE_DATA_DIR, which must be empty; the server must not run)
 *   treehouse gc [--project ID] [--grace SECONDS]
 *                              (garbage collection of one project or all; the server may run)
 *
 * It opens the store the server's configuration names: teams and keys work on either backend;
 * backup and restore are LMDB's (a PostgreSQL database is backed up with pg_dump or its base backups).
 */
import { parseArgs } from 'node:util';
import { isTreehouseError } from './errors.js';
import { BackupError, POSTGRES_BACKUP_MESSAGE, backupDataDir, restoreDataDir } from './service/backup.js';
import { loadConfig } from './service/config.js';
import type { ProjectRecord } from './service/projects.js';
import { openTreehouse, type Treehouse } from './service/treehouse.js';
import { openStore } from './store/open.js';

const USAGE = `usage:
  treehouse teams create NAME
  treehouse keys create --team NAME [--name LABEL]
  treehouse keys list --team NAME
  treehouse keys revoke KEY_ID
  treehouse backup DIR
  treehouse restore DIR
  treehouse gc [--project ID] [--grace SECONDS]`;

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      team: { type: 'string' },
      name: { type: 'string' },
      project: { type: 'string' },
      grace: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
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
    if (noun === 'gc' && verb === undefined) {
      return await collectGarbage(th, values.project, values.grace);
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

/**
 * `treehouse gc`: one project (--project) or every project, with the configured grace period
 * unless --grace says otherwise. Prints what each collection removed; exit status 1 when one could
 * not run (another collection of the project is under way, or it was deleted meanwhile).
 */
async function collectGarbage(th: Treehouse, projectId: string | undefined, graceText: string | undefined): Promise<number> {
  if (graceText !== undefined && !/^\d+$/.test(graceText)) {
    process.stderr.write(`treehouse: --grace takes a whole number of seconds, not ${JSON.stringify(graceText)}\n`);
    return 2;
  }
  const graceMs = graceText === undefined ? undefined : Number(graceText) * 1000;
  let records: ProjectRecord[];
  if (projectId !== undefined) {
    const record = await th.projects.byId(projectId);
    if (!record) {
      process.stderr.write(`treehouse: no project ${projectId}\n`);
      return 1;
    }
    records = [record];
  } else {
    records = [];
    for (let after: string | undefined; ; ) {
      const page = await th.projects.listAll(after, 500);
      records.push(...page);
      if (page.length < 500) break;
      after = page[page.length - 1].id;
    }
  }
  let failed = 0;
  const total = { objects: 0, bytes: 0 };
  // Interrupted (Ctrl-C, a service manager's stop), the collections under way end cleanly rather
  // than leave their projects journalling until a server finds them silent.
  const interrupted = new AbortController();
  const interrupt = () => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    await th.gc.collectMany(records, {
      graceMs,
      signal: interrupted.signal,
      onGrace: (ms) => process.stdout.write(`waiting out the grace period (${ms / 1000} s) before removing anything, so reads under way finish\n`),
      onDone: (record, outcome) => {
        const name = `${record.id} (${record.handle})`;
        if (outcome instanceof Error) {
          failed++;
          process.stderr.write(`treehouse: ${name}: ${outcome.message}\n`);
          return;
        }
        total.objects += outcome.removedObjects;
        total.bytes += outcome.removedBytes;
        const compacted = outcome.compaction && outcome.compaction.freedBytes > 0 ? `, shelves compacted (${formatBytes(outcome.compaction.freedBytes)} freed)` : '';
        process.stdout.write(
          `${name}: removed ${outcome.removedObjects} objects (${formatBytes(outcome.removedBytes)}), kept ${outcome.keptObjects}` +
            `${outcome.formsRewritten > 0 ? `, ${outcome.formsRewritten} forms rewritten whole` : ''}` +
            `${outcome.newestWhole.chains > 0 ? `, ${outcome.newestWhole.chains} chains turned newest-whole` : ''}` +
            `${outcome.coldKept.rawDropped > 0 ? `, ${outcome.coldKept.rawDropped} objects kept as their forms alone` : ''}${compacted}, in ${(outcome.durationMs / 1000).toFixed(1)} s\n`,
        );
      },
    });
  } catch (error) {
    if (!interrupted.signal.aborted) throw error;
    process.stderr.write('treehouse: gc interrupted; the collections under way were ended\n');
    return 1;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
  process.stdout.write(`removed ${total.objects} objects (${formatBytes(total.bytes)}) from ${records.length - failed} of ${records.length} projects\n`);
  return failed > 0 ? 1 : 0;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
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
