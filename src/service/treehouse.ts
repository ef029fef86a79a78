/**
 * The running service: one store and the services over it, opened from a Config. The server and the
 * command-line tool both start here, so they read the same data directory the same way.
 */
import { mkdirSync } from 'node:fs';
import { LmdbStore } from '../store/lmdb.js';
import type { Store } from '../store/types.js';
import { Accounts } from './accounts.js';
import type { Config } from './config.js';
import { Projects } from './projects.js';
import { RateLimiter } from './rateLimiter.js';
import { Sealer, loadSecret } from './secrets.js';
import { Workspace } from './workspace.js';

export interface Treehouse {
  config: Config;
  store: Store;
  accounts: Accounts;
  projects: Projects;
  workspace: Workspace;
  rateLimiter: RateLimiter;
  close(): Promise<void>;
}

export function openTreehouse(config: Config): Treehouse {
  mkdirSync(config.dataDir, { recursive: true });
  const store = new LmdbStore({ path: config.dataDir });
  const sealer = new Sealer(loadSecret(config.dataDir, config.secret));
  const accounts = new Accounts(store);
  const projects = new Projects(store, config, sealer);
  const workspace = new Workspace(projects);
  const rateLimiter = new RateLimiter(config.limits.requestsPerSecondPerKey, config.limits.requestBurstPerKey);
  return {
    config,
    store,
    accounts,
    projects,
    workspace,
    rateLimiter,
    close: () => store.close(),
  };
}
