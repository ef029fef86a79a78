/**
 * The running service: one store and the services over it, opened from a Config. The server and the
 * command-line tool both start here, so they read the same data directory the same way.
 */
import { mkdirSync } from 'node:fs';
import { LmdbStore } from '../store/lmdb.js';
import type { Store } from '../store/types.js';
import { Accounts } from './accounts.js';
import { DeflateCache } from './deflateCache.js';
import type { Config } from './config.js';
import { Linter } from './lint.js';
import { PackChecker } from './packChecker.js';
import { Projects } from './projects.js';
import { RateLimiter } from './rateLimiter.js';
import { RemoteSync } from './remoteSync.js';
import { Sealer, loadSecret } from './secrets.js';
import { Workspace } from './workspace.js';

export interface Treehouse {
  config: Config;
  store: Store;
  accounts: Accounts;
  projects: Projects;
  workspace: Workspace;
  linter: Linter;
  rateLimiter: RateLimiter;
  /** Pushes changed branches to linked repositories (src/service/remoteSync.ts). */
  remoteSync: RemoteSync;
  /** Deflates stored objects in the background so clones copy pack-ready bytes. */
  deflateCache: DeflateCache;
  /** Parses and checks pushed packs on a worker thread (src/service/packChecker.ts). */
  packChecker: PackChecker;
  /** Starts background work (the sync queue); the server calls it once it listens. */
  start(): void;
  /** Stops background work, leaving queued work for the next start; call before close(). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

export function openTreehouse(config: Config): Treehouse {
  mkdirSync(config.dataDir, { recursive: true });
  const store = new LmdbStore({ path: config.dataDir });
  const sealer = new Sealer(loadSecret(config.dataDir, config.secret));
  const accounts = new Accounts(store);
  const projects = new Projects(store, config, sealer);
  const workspace = new Workspace(projects);
  const linter = new Linter();
  const rateLimiter = new RateLimiter(config.limits.requestsPerSecondPerKey, config.limits.requestBurstPerKey);
  const remoteSync = new RemoteSync(store, projects, config);
  const deflateCache = new DeflateCache(store);
  const packChecker = new PackChecker();
  workspace.onBranchChanged((record, branch) => remoteSync.branchChanged(record, branch));
  return {
    config,
    store,
    accounts,
    projects,
    workspace,
    linter,
    rateLimiter,
    remoteSync,
    deflateCache,
    packChecker,
    start: () => {
      remoteSync.start();
      deflateCache.start();
    },
    stop: async () => {
      await remoteSync.stop();
      await deflateCache.stop();
    },
    close: async () => {
      await remoteSync.stop();
      await deflateCache.stop();
      await linter.close();
      await packChecker.close();
      await store.close();
    },
  };
}
