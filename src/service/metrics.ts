/**
 * Prometheus metrics (prom-client): Node's own (event-loop lag, heap, GC, handles), request latency
 * by route template and status, store write times, the pack cache's backlog, the sync queue and its
 * outcomes, and storage used and free. Served on a port of their own (src/server.ts), never on the
 * API's, so they need no key and are off unless TREEHOUSE_METRICS_PORT is set.
 */
import { statfsSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AsyncStore } from '../store/asyncTypes.js';

/** Seconds; from a cached read (~1 ms) to a big clone or seed (~minutes). */
const REQUEST_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const WRITE_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

export interface MetricSources {
  store: AsyncStore;
  /** The data directory whose file system's free space is reported; null on a database server (not ours to watch). */
  dataDir: string | null;
  packCacheBacklog(): number;
  /** Deleted projects whose data this node has not freed yet (src/service/projectDrops.ts). */
  projectDropsPending(): number;
  syncQueueDepth(): Promise<number>;
  syncAttempts(): { completed: number; failed: number };
  /** Clones answered from a kept pack or planned, and the bytes the kept packs take (src/repo/wire/clonePacks.ts). */
  clonePacks(): { hits: number; grown: number; misses: number; bytes: number };
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requestSeconds: Histogram<'method' | 'route' | 'status'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'treehouse_' });
    this.requestSeconds = new Histogram({
      name: 'treehouse_http_request_duration_seconds',
      help: 'HTTP requests by method, route template (not the raw URL) and status',
      labelNames: ['method', 'route', 'status'],
      buckets: REQUEST_BUCKETS_SECONDS,
      registers,
    });
    const writeSeconds = new Histogram({
      name: 'treehouse_store_write_duration_seconds',
      help: 'Store write transactions, from queueing to durable commit (or failure)',
      labelNames: ['outcome'],
      buckets: WRITE_BUCKETS_SECONDS,
      registers,
    });
    sources.store.onWriteDone((durationMs, committed) => writeSeconds.observe({ outcome: committed ? 'committed' : 'failed' }, durationMs / 1000));
    new Gauge({
      name: 'treehouse_pack_cache_backlog_objects',
      help: 'Stored objects the pack cache has not prepared yet',
      registers,
      collect() {
        this.set(sources.packCacheBacklog());
      },
    });
    new Gauge({
      name: 'treehouse_project_drops_pending',
      help: 'Deleted projects whose stored data this node is still freeing',
      registers,
      collect() {
        this.set(sources.projectDropsPending());
      },
    });
    new Gauge({
      name: 'treehouse_sync_queue_depth',
      help: 'Pushes to linked repositories queued or waiting to retry',
      registers,
      async collect() {
        this.set(await sources.syncQueueDepth());
      },
    });
    new Counter({
      name: 'treehouse_sync_attempts_total',
      help: 'Push attempts to linked repositories since start, by outcome',
      labelNames: ['outcome'],
      registers,
      collect() {
        const attempts = sources.syncAttempts();
        this.reset();
        this.inc({ outcome: 'completed' }, attempts.completed);
        this.inc({ outcome: 'failed' }, attempts.failed);
      },
    });
    new Counter({
      name: 'treehouse_clone_packs_total',
      help: 'Clones since start, by whether a kept pack answered them (hit), a kept pack grew by the objects of newer commits (grown) or the pack was planned whole (miss)',
      labelNames: ['outcome'],
      registers,
      collect() {
        const packs = sources.clonePacks();
        this.reset();
        this.inc({ outcome: 'hit' }, packs.hits);
        this.inc({ outcome: 'grown' }, packs.grown);
        this.inc({ outcome: 'miss' }, packs.misses);
      },
    });
    new Gauge({
      name: 'treehouse_clone_packs_bytes',
      help: 'Bytes the packs kept for repeat clones take in memory',
      registers,
      collect() {
        this.set(sources.clonePacks().bytes);
      },
    });
    new Gauge({
      name: 'treehouse_storage_used_bytes',
      help: "Bytes the store's data takes",
      registers,
      async collect() {
        this.set(await sources.store.storageUsedBytes());
      },
    });
    const dataDir = sources.dataDir;
    if (dataDir !== null) {
      new Gauge({
        name: 'treehouse_storage_free_bytes',
        help: 'Bytes free on the file system of the data directory',
        registers,
        collect() {
          const stats = statfsSync(dataDir);
          this.set(stats.bavail * stats.bsize);
        },
      });
    }
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requestSeconds.observe({ method, route, status: String(status) }, seconds);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
