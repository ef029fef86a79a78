/**
 * Fills the store's deflate cache after every write, on a worker thread, so that serving a clone
 * copies pack-ready zlib streams instead of compressing each object while the client waits
 * (bench/RESULTS.md measures the difference). At start it also picks up whatever an earlier run
 * stored but did not get to. The cache is only an optimisation: packs deflate inline what it lacks.
 */
import { Worker } from 'node:worker_threads';
import type { Oid } from '../git/oid.js';
import type { Store } from '../store/types.js';

/** git's default pack compression (core.compression -1 is zlib's default, level 6). */
const DEFLATE_LEVEL = 6;
/** Objects per round trip to the worker and per write transaction of results. */
const BATCH_OBJECTS = 512;

/** The worker is plain JavaScript evaluated from a string, so it runs the same under tsx and vitest. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { deflateSync } = require('node:zlib');
parentPort.on('message', ({ id, bodies, level }) => {
  const out = bodies.map((body) => deflateSync(body, { level }));
  parentPort.postMessage({ id, out }, out.map((b) => b.buffer));
});
`;

interface Pending {
  project: number;
  oid: Oid;
}

export class DeflateCache {
  private readonly queue: Pending[] = [];
  private worker: Worker | null = null;
  private running = false;
  private stopped = false;
  private batchId = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly store: Store) {
    store.onObjectsStored((project, oids) => {
      if (this.stopped) return;
      for (const oid of oids) this.queue.push({ project, oid });
      this.kick();
    });
  }

  /** Queues what earlier runs left without a deflated form, then works in the background. */
  start(): void {
    this.stopped = false;
    for (const pending of this.store.listUndeflated(Number.MAX_SAFE_INTEGER)) this.queue.push(pending);
    this.kick();
  }

  get backlog(): number {
    return this.queue.length;
  }

  /** Resolves when the queue is empty (for benchmarks and tests). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && !this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    while (this.running) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.worker?.terminate();
    this.worker = null;
  }

  private kick(): void {
    if (this.running || this.stopped || this.queue.length === 0) return;
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.queue.length > 0 && !this.stopped) this.kick();
      else for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      const batch = this.queue.splice(0, BATCH_OBJECTS);
      const bodies: Buffer[] = [];
      const kept: Pending[] = [];
      this.store.read((tx) => {
        for (const item of batch) {
          const project = tx.project(item.project);
          if (project.peekDeflated(item.oid)) continue;
          const object = project.getObject(item.oid);
          if (!object) continue;
          bodies.push(object.body);
          kept.push(item);
        }
      });
      if (kept.length === 0) continue;
      const deflated = await this.deflate(bodies);
      if (this.stopped) return;
      try {
        await this.store.write((tx) => {
          kept.forEach((item, index) => tx.project(item.project).putDeflated(item.oid, deflated[index]));
        });
      } catch {
        // A full disk or a closing store: the cache is optional, and start() picks the rest up later.
        return;
      }
    }
  }

  private deflate(bodies: Buffer[]): Promise<Buffer[]> {
    this.worker ??= new Worker(WORKER_SOURCE, { eval: true });
    this.worker.unref();
    const id = ++this.batchId;
    const worker = this.worker;
    return new Promise((resolve, reject) => {
      const onMessage = (message: { id: number; out: Uint8Array[] }) => {
        if (message.id !== id) return;
        worker.off('message', onMessage);
        worker.off('error', reject);
        resolve(message.out.map((bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.postMessage({ id, bodies, level: DEFLATE_LEVEL });
    });
  }
}
