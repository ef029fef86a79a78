/**
 * The running service: one store and the services over it, opened from a Config. The server and the
 * command-line tool both start here, so they read the same data directory the same way.
 */
import { mkdirSync } from 'node:fs';
import { ClonePacks, type ClonePackLimits } from '../repo/wire/clonePacks.js';
import type { AsyncStore } from '../store/asyncTypes.js';
import { Accounts } from './accounts.js';
import type { EventBus } from './events.js';
import type { EventLog } from './eventLog.js';
import { EventStreams } from './eventStreams.js';
import { NodeSignals } from './nodeSignals.js';
import { Webhooks } from './webhooks.js';
import { DeflateCache } from './deflateCache.js';
import { SearchThreadPool } from './searchThreads.js';
import { EventLoopMonitor } from './eventLoopMonitor.js';
import { GarbageCollector } from './gc.js';
import { GitExport } from './gitExport.js';
import { Idempotency } from './idempotency.js';
import type { Config } from './config.js';
import { Linter } from './lint.js';
import { Metrics } from './metrics.js';
import { PackChecker } from './packChecker.js';
import { Projects } from './projects.js';
import { PublicSite } from './publicSite.js';
import { ProjectCreation } from './projectCreation.js';
import { RateLimiter } from './rateLimiter.js';
import { RemoteSync } from './remoteSync.js';
import { Sealer, checkSecret, loadSecret } from './secrets.js';
import { Workspace } from './workspace.js';

/**
 * Packs of clones kept in memory for repeat clones of the same tips: 64 MiB together, none over
 * 16 MiB (a larger clone is planned every time; its recording would hold up to this much while it
 * streams, so the 100,000-file clone's memory stays under its bound), and 32 MiB held by the
 * recordings of all clones under way.
 */
const CLONE_PACK_LIMITS: ClonePackLimits = { bytesMax: 64 * 1024 * 1024, entryBytesMax: 16 * 1024 * 1024, recordingBytesMax: 32 * 1024 * 1024 };

export interface Treehouse {
  config: Config;
  store: AsyncStore;
  accounts: Accounts;
  projects: Projects;
  /** Every change of every project, once committed (src/service/events.ts). */
  events: EventBus;
  /** The per-team event log every change is written to (src/service/eventLog.ts). */
  eventLog: EventLog;
  /** GET /events/stream (src/service/eventStreams.ts). */
  eventStreams: EventStreams;
  /** Subscriptions and the delivery queue (src/service/webhooks.ts). */
  webhooks: Webhooks;
  workspace: Workspace;
  linter: Linter;
  rateLimiter: RateLimiter;
  /** Pushes changed branches to linked repositories (src/service/remoteSync.ts). */
  remoteSync: RemoteSync;
  /** Deflates stored objects in the background so clones copy pack-ready bytes. */
  deflateCache: DeflateCache;
  /** Packs of clones kept for the next clone of the same tips and depth (src/repo/wire/clonePacks.ts). */
  clonePacks: ClonePacks;
  /** Removes what no ref, working tree or queued sync reaches (src/service/gc.ts). */
  gc: GarbageCollector;
  /** Event-loop delay per 10-second window, for /healthz. */
  eventLoop: EventLoopMonitor;
  /** Prometheus metrics, when TREEHOUSE_METRICS_PORT asks for them. */
  metrics: Metrics | null;
  /** Parses and checks pushed packs on a worker thread (src/service/packChecker.ts). */
  packChecker: PackChecker;
  /** The smart-HTTP export: advertisements, fetches and pushes. */
  git: GitExport;
  /** What /p/{handle}/ may read. */
  site: PublicSite;
  /** POST /projects: seeds, linked repository, initial commit. */
  creation: ProjectCreation;
  /** Idempotency-Key: answers kept with their effects (src/service/idempotency.ts). */
  idempotency: Idempotency;
  /**
   * Refuses to serve with a secret other than the one the store's credentials were sealed with
   * (SecretMismatchError); the server calls it before it listens.
   */
  checkSecret(): Promise<void>;
  /** Starts background work (the sync queue); the server calls it once it listens. */
  start(): void;
  /** Stops background work, leaving queued work for the next start; call before close(). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** The service over `store` (src/store/open.ts opens the one a configuration names). */
export function openTreehouse(config: Config, store: AsyncStore): Treehouse {
  // A node of a database keeps nothing on disk (its secret is configured): no data directory.
  if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
  const sealer = new Sealer(loadSecret(config.dataDir, config.secret));
  const accounts = new Accounts(store);
  const searchThreads = new SearchThreadPool();
  const clonePacks = new ClonePacks(CLONE_PACK_LIMITS);
  const projects = new Projects(store, config, sealer, searchThreads, clonePacks);
  const workspace = new Workspace(projects);
  const linter = new Linter();
  const rateLimiter = new RateLimiter(config.limits.requestsPerSecondPerKey, config.limits.requestBurstPerKey, store.rateLimits);
  const remoteSync = new RemoteSync(store, projects, config, { claimTtlMs: config.syncClaimTtlMs });
  const deflateCache = new DeflateCache(store);
  const gc = new GarbageCollector(store, projects, remoteSync, config, (body, base) => deflateCache.formOffLoop(body, base));
  const eventLoop = new EventLoopMonitor();
  const metrics =
    config.metricsPort === null
      ? null
      : new Metrics({
          store: store,
          dataDir: config.databaseUrl ? null : config.dataDir,
          packCacheBacklog: () => deflateCache.backlog,
          projectDropsPending: () => projects.drops.backlog,
          syncQueueDepth: () => remoteSync.queueDepth(),
          syncAttempts: () => remoteSync.attempts,
          clonePacks: () => ({ hits: clonePacks.hits, grown: clonePacks.grown, misses: clonePacks.misses, bytes: clonePacks.bytesUsed }),
        });
  // A store that keeps every raw copy (formsAlone false: PostgreSQL) needs the pushed blobs whole.
  const packChecker = new PackChecker({ wholeBlobs: !store.formsAlone });
  const eventStreams = new EventStreams(projects.outbox, projects.events, { bufferBytesMax: config.events.streamBufferBytesMax });
  const webhooks = new Webhooks(store, projects.outbox, projects.events, sealer, config);
  const idempotency = new Idempotency(store, sealer, config.idempotency);
  const git = new GitExport(projects, workspace, packChecker, config, deflateCache);
  const creation = new ProjectCreation(projects, remoteSync, packChecker, config);
  // Other nodes' changes (a store several nodes share): their streams and webhooks' lines run here too.
  const nodeSignals = new NodeSignals(store, projects.outbox);
  return {
    config,
    store,
    accounts,
    projects,
    events: projects.events,
    eventLog: projects.outbox,
    eventStreams,
    webhooks,
    workspace,
    linter,
    rateLimiter,
    remoteSync,
    deflateCache,
    clonePacks,
    gc,
    eventLoop,
    metrics,
    packChecker,
    git,
    site: new PublicSite(projects),
    creation,
    idempotency,
    checkSecret: () => checkSecret(store, sealer),
    start: () => {
      projects.start().catch((error: Error) => process.stderr.write(`finishing project drops failed: ${error.stack ?? error.message}\n`));
      remoteSync.start();
      webhooks.start();
      projects.outbox.startPruning(config.events.retentionMs);
      idempotency.startPruning();
      deflateCache.start();
      gc.start();
      eventLoop.start();
      nodeSignals.start({
        teamChanged: (team) => {
          eventStreams.wakeTeam(team);
          webhooks.teamChanged(team);
        },
        everythingChanged: () => {
          eventStreams.wakeAll();
          webhooks.everythingChanged();
        },
      });
    },
    stop: async () => {
      await projects.stopDrops();
      nodeSignals.stop();
      eventLoop.stop();
      eventStreams.closeAll();
      await webhooks.stop();
      await projects.outbox.stopPruning();
      await idempotency.stopPruning();
      await gc.stop();
      await remoteSync.stop();
      await deflateCache.stop();
    },
    close: async () => {
      await projects.stopDrops();
      nodeSignals.stop();
      eventLoop.stop();
      eventStreams.closeAll();
      await webhooks.stop();
      await projects.outbox.stopPruning();
      await idempotency.stopPruning();
      await gc.stop();
      await remoteSync.stop();
      await deflateCache.stop();
      // A push or a seed answered moments ago may still be storing its commits' object lists.
      await git.idle();
      await creation.idle();
      await linter.close();
      await packChecker.close();
      await searchThreads.close();
      await store.close();
    },
  };
}
