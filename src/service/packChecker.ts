/**
 * Runs src/git/packCheck.ts (pack parse, delta resolution, fsck, the history each object needs) on
 * a worker thread, so a large push does not stop the event loop: a 25 MB pack of 16,000 objects
 * kept every other request waiting 1.7 s. Small packs are checked inline, where they cost less
 * than the hop to the thread.
 *
 * The check asks the store two things: a thin pack's delta bases, and whether objects the pack
 * names are there; the store answers asynchronously (src/store/asyncTypes.ts). Inline, the check
 * runs in passes, the store asked in batches between them (checkReceivedPackWithAsyncLookups); a
 * pack that needs too many passes goes to the worker. The worker asks each question on a channel
 * of its own and blocks until this thread has the store's answer (src/service/syncQuestions.ts), so
 * the check keeps its synchronous lookups and only one question is in flight at a time. Objects are never deleted,
 * so an answer stays true until the write that stores the pack.
 *
 * The worker answers twice: once the pack is parsed (its objects), then with the rest of the
 * check's verdict (fsck, special blobs, tree depth, history gaps: about half of the check), so a
 * caller that can store objects nobody sees yet (a git seed, under its reserved project number)
 * does so meanwhile (begin()); check() waits for the verdict. Both may also take the resolved
 * objects in runs while the parse goes on (`onResolved`): a seed stores them, a large push holds
 * its objects until the verdict (src/repo/wire/heldPushForms.ts).
 *
 * One worker, started on the first large pack and kept (unreferenced while idle, so it never holds
 * the process open); jobs queue on it. Pushes write one at a time anyway, and a second core is left
 * to the requests the worker no longer blocks.
 */
import { MessageChannel, type Worker } from 'node:worker_threads';
import { rebuildBodiesOnRead, type PackObject } from '../git/pack.js';
import { checkReceivedPackWithAsyncLookups, type AsyncStoreLookups, type Gap, type PackCheckResult, type PackLimits, type ParsedPack } from '../git/packCheck.js';
import { oidToHex, type ObjectType, type Oid } from '../git/oid.js';
import { OidTable } from '../git/oidTable.js';
import { Slicer } from '../repo/slices.js';
import type { ResolvedRun } from '../repo/wire/streamedRuns.js';
import { startModuleWorker } from './moduleWorker.js';
import { answerQuestions, ASK_SOURCE, questionSignal } from './syncQuestions.js';

/** How long the worker keeps a passed pack's objects for lists nobody has asked for yet. */
const LISTS_UNASKED_MS_MAX = 60_000;

/** The loops over a parsed pack's objects look at the clock once per this many plus one (a power of two, less one). */
const PAUSE_EVERY_MASK = 1023;

/** Packs up to this size are checked inline. */
export const PACK_INLINE_BYTES_MAX = 16 * 1024;

/** The worker's priority below the request thread's (src/service/moduleWorker.ts): a push waits on it, but every request waits on the event loop. */
const CHECK_NICE = 5;

/** Resolved entries the worker sends at once when asked to stream them (begin()'s `onResolved`): about a write's worth (src/repo/wire/packedForms.ts). */
const FORMS_PER_RUN = 2_048;

/** The worker's code (src/service/moduleWorker.ts runs it; `load()` imports src/git/packCheck.ts). */
const WORKER_SOURCE = `${ASK_SOURCE}
/** Per job whose check passed: settles with whether its commits' object lists are wanted. */
const listRequests = new Map();
parentPort.on('message', async ({ warm, listsFor, wanted, id, pack, limits, clientShallow, port, signal, wholeBlobs, streamForms }) => {
  if (warm) return load().catch(() => {});
  if (listsFor !== undefined) {
    const request = listRequests.get(listsFor);
    listRequests.delete(listsFor);
    return request && request(wanted);
  }
  try {
    const { parseReceivedPack, checkParsedPack } = await load();
    const ask = questionsTo(port, signal);
    const lookups = {
      object: (oid) => {
        const found = ask({ want: 'object', oid });
        return found ? { type: found.type, body: Buffer.from(found.body.buffer, found.body.byteOffset, found.body.byteLength) } : undefined;
      },
      has: (oid) => ask({ want: 'has', oid }) === true,
      // 'unknown': stored, of a type the store does not say; null: not stored.
      typeOf: (oid) => {
        const type = ask({ want: 'type', oid });
        return type === 'unknown' ? null : type ?? undefined;
      },
    };
    const packBytes = Buffer.from(pack.buffer, pack.byteOffset, pack.byteLength);
    // Each tree, blob and commit's entry as soon as it is resolved, in runs (the receiver stores
    // them while the parse goes on): its kind (0 blob, 1 tree, 2 commit), id, zlib stream's span in
    // the pack, size and delta base; a commit's body too, all of a run's in one buffer.
    let run = null;
    let inRun = 0;
    let commitBodies = [];
    const newRun = () => ({ oids: new Uint8Array(${FORMS_PER_RUN} * 20), kinds: new Uint8Array(${FORMS_PER_RUN}), spans: new Float64Array(${FORMS_PER_RUN} * 3), sizes: new Float64Array(${FORMS_PER_RUN}), bases: new Uint8Array(${FORMS_PER_RUN} * 20), deltas: new Uint8Array(${FORMS_PER_RUN}), depths: new Uint16Array(${FORMS_PER_RUN}) });
    const sendRun = () => {
      if (inRun === 0) return;
      const { oids, kinds, spans, sizes, bases, deltas, depths } = run;
      const bodies = new Uint8Array(Buffer.concat(commitBodies));
      parentPort.postMessage({ id, forms: inRun, oids, kinds, spans, sizes, bases, deltas, depths, bodies }, [oids.buffer, kinds.buffer, spans.buffer, sizes.buffer, bases.buffer, deltas.buffer, depths.buffer, bodies.buffer]);
      run = null;
      inRun = 0;
      commitBodies = [];
    };
    const onResolved = streamForms
      ? (index, object) => {
          const kind = object.type === 'blob' ? 0 : object.type === 'tree' ? 1 : object.type === 'commit' ? 2 : -1;
          if (kind < 0 || !object.packed) return;
          run ??= newRun();
          const i = inRun++;
          run.oids.set(object.oid, i * 20);
          run.kinds[i] = kind;
          const start = object.packed.deflated.byteOffset - packBytes.byteOffset;
          run.spans[i * 3] = start;
          run.spans[i * 3 + 1] = start + object.packed.deflated.length;
          run.spans[i * 3 + 2] = object.packed.dataBytes;
          run.sizes[i] = object.body.length;
          run.depths[i] = object.deltaDepth;
          if (object.packed.base) {
            run.deltas[i] = 1;
            run.bases.set(object.packed.base, i * 20);
          }
          if (kind === 2) commitBodies.push(Buffer.from(object.body));
          if (inRun === ${FORMS_PER_RUN}) sendRun();
        }
      : undefined;
    const parsed = parseReceivedPack(packBytes, limits, lookups, onResolved);
    if (!parsed.ok) {
      port.close();
      return parentPort.postMessage({ id, ok: false, message: parsed.message });
    }
    sendRun();
    // The parsed objects first, so the receiver prepares to store them while the rest of the check
    // runs here. Every body in one buffer, moved to the other thread rather than copied.
    const objects = parsed.objects;
    // A blob that carries its pack entry goes without its body: the receiver stores the entry and
    // rebuilds the body from the pack only if it needs it (omitted[i], sizes[i]). A receiver whose
    // store keeps no entries (wholeBlobs) needs every body: they are rebuilt here, off its loop.
    const omitted = new Uint8Array(objects.length);
    const sizes = new Float64Array(objects.length);
    let total = 0;
    objects.forEach((object, i) => {
      // A body the parse dropped (bodyBytes set) is not read here: reading it would rebuild it.
      sizes[i] = object.bodyBytes ?? object.body.length;
      if (object.type === 'blob' && object.packed && !wholeBlobs) omitted[i] = 1;
      else total += object.body.length;
    });
    const bodies = new Uint8Array(total);
    const oids = new Uint8Array(objects.length * 20);
    const ends = new Float64Array(objects.length);
    const offsets = new Float64Array(objects.length);
    const depths = new Float64Array(objects.length);
    const types = new Array(objects.length);
    // Each entry's zlib stream in the pack (start, end, inflated bytes) and its delta base, if any.
    const spans = new Float64Array(objects.length * 3).fill(-1);
    const bases = new Uint8Array(objects.length * 20);
    const deltas = new Uint8Array(objects.length);
    // The thin pack's bases the store gave (the receiver reads those omitted blobs need again).
    const external = new Uint8Array(Buffer.concat(parsed.externalBases));
    let at = 0;
    objects.forEach((object, i) => {
      if (!omitted[i]) {
        bodies.set(object.body, at);
        at += object.body.length;
      }
      ends[i] = at;
      oids.set(object.oid, i * 20);
      offsets[i] = object.offset;
      depths[i] = object.deltaDepth;
      types[i] = object.type;
      if (object.packed) {
        const start = object.packed.deflated.byteOffset - packBytes.byteOffset;
        spans[i * 3] = start;
        spans[i * 3 + 1] = start + object.packed.deflated.length;
        spans[i * 3 + 2] = object.packed.dataBytes;
        if (object.packed.base) {
          deltas[i] = 1;
          bases.set(object.packed.base, i * 20);
        }
      }
    });
    parentPort.postMessage(
      { id, parsed: true, types, oids, bodies, ends, offsets, depths, spans, bases, deltas, omitted, sizes, external },
      [bodies.buffer, oids.buffer, ends.buffer, offsets.buffer, depths.buffer, spans.buffer, bases.buffer, deltas.buffer, omitted.buffer, sizes.buffer, external.buffer],
    );
    // Then the verdict: fsck, special blobs, tree depth, history gaps.
    const result = checkParsedPack(objects, lookups, new Set(clientShallow), new Set(limits.fsckTolerated));
    if (!result.ok) {
      port.close();
      return parentPort.postMessage({ id, verdict: true, ok: false, message: result.message });
    }
    parentPort.postMessage({ id, verdict: true, ok: true, gaps: [...result.gaps] });
    // Then, when the receiver asks (once it has stored the objects), the commits' object lists:
    // all in one buffer, (object index, end) per commit. The store may still be asked for a
    // parent's trees. Made beside the receiver's store, they slowed it by a fifth.
    const wanted = await new Promise((resolve) => listRequests.set(id, resolve));
    // Made a slice at a time: a pack that comes meanwhile is parsed between two slices.
    const listed = wanted ? [...(await result.commitObjects(() => new Promise((resolve) => setImmediate(resolve))))] : [];
    port.close();
    const lists = new Uint8Array(listed.reduce((sum, [, list]) => sum + list.length, 0));
    const listIndexes = new Float64Array(listed.length * 2);
    let listAt = 0;
    listed.forEach(([index, list], i) => {
      lists.set(list, listAt);
      listAt += list.length;
      listIndexes[i * 2] = index;
      listIndexes[i * 2 + 1] = listAt;
    });
    parentPort.postMessage({ id, lists, listIndexes }, [lists.buffer, listIndexes.buffer]);
  } catch (error) {
    port.close();
    parentPort.postMessage({ id, crash: String((error && error.stack) || error) });
  }
});
`;

interface WorkerAnswer {
  id: number;
  /** The first answer of a pack that parsed: its objects (the arrays below), the verdict to come. */
  parsed?: boolean;
  /** The second: the rest of the check passed (`ok`, with `gaps`) or refused the pack (`message`). */
  verdict?: boolean;
  ok?: boolean;
  message?: string;
  crash?: string;
  types?: ObjectType[];
  oids?: Uint8Array;
  bodies?: Uint8Array;
  ends?: Float64Array;
  offsets?: Float64Array;
  /** Each object's delta depth (a streamed run's in 16 bits: a chain is at most 4,095 deep). */
  depths?: Float64Array | Uint16Array;
  spans?: Float64Array;
  bases?: Uint8Array;
  deltas?: Uint8Array;
  /** Per object: 1 when its body was left out (a blob carrying its pack entry). */
  omitted?: Uint8Array;
  /** Per object: the body's length. */
  sizes?: Float64Array;
  /** The ids of the thin pack's bases the store gave the parse, 20 bytes each. */
  external?: Uint8Array;
  gaps?: Array<[string, Gap]>;
  /** A run of resolved trees, blobs and commits (streamed: begin()'s `onResolved`), this many; `kinds` 0 blob, 1 tree, 2 commit; `bodies` the commits'. */
  forms?: number;
  kinds?: Uint8Array;
  /** The commits' object lists, concatenated; per listed commit its object index and the end of its list. */
  lists?: Uint8Array;
  listIndexes?: Float64Array;
}

interface Job {
  /** The pack as this thread has it: received entries are kept as views into it. */
  pack: Buffer;
  /** Settled by the worker's last answer, the commits' object lists (after an ok check). */
  lists: Promise<Map<number, Buffer>>;
  /** Tells the worker, once, whether the lists are wanted (until then it waits, holding the objects). */
  requestLists(wanted: boolean): void;
  settleLists(lists: Map<number, Buffer> | Error): void;
  /** The store, for the bases of a thin pack's blobs rebuilt here. */
  lookups: AsyncStoreLookups;
  /** Takes the runs of resolved objects, when they are streamed. */
  onResolved: ((run: ResolvedRun) => void) | undefined;
  /** Told when the pack is parsed and its check goes on. */
  onParsed: (() => void) | undefined;
  /** The parsed objects as this thread has them, once the first answer came. */
  objects: Promise<PackObject[]> | null;
  /** Settled by the verdict (or a failure): the whole check's result. */
  verdict: Promise<PackCheckResult>;
  settleVerdict(result: PackCheckResult | Error): void;
  /** Settles begin(): a refusal, or the parsed pack with its verdict to come. */
  resolve(result: PackCheckResult | ParsedPack): void;
  reject(error: Error): void;
  done(): void;
}

export class PackChecker {
  private worker: Worker | null = null;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private closed = false;
  private readonly inlineBytesMax: number;
  private readonly wholeBlobs: boolean;

  /**
   * `wholeBlobs`: hand back every blob's body, rebuilt on the worker, for a store that keeps no
   * pack-ready forms (src/store/asyncTypes.ts packForms) and so stores every body whole: rebuilding
   * them on the request thread instead held it for most of a second per 2,000 objects.
   */
  constructor(options: { inlineBytesMax?: number; wholeBlobs?: boolean; listsUnaskedMsMax?: number } = {}) {
    this.inlineBytesMax = options.inlineBytesMax ?? PACK_INLINE_BYTES_MAX;
    this.wholeBlobs = options.wholeBlobs ?? false;
    this.listsUnaskedMsMax = options.listsUnaskedMsMax ?? LISTS_UNASKED_MS_MAX;
  }

  private readonly listsUnaskedMsMax: number;

  /** Checks on the worker not yet ended: under way, or passed and waiting to be asked for their lists. */
  get jobsPending(): number {
    return this.jobs.size;
  }

  /**
   * Parses and checks `pack`. The lookups run on this thread, one question at a time; a body
   * `object` returns must stay valid (a copy, not a view into storage). `clientShallow`: hex ids
   * of the push's shallow lines. `onResolved`, `onParsed`: as begin()'s.
   */
  async check(...args: Parameters<PackChecker['begin']>): Promise<PackCheckResult> {
    const begun = await this.begin(...args);
    return 'parsed' in begun ? begun.result : begun;
  }

  /**
   * check(), answered in two steps when the pack goes to the worker: once its entries are parsed
   * (a ParsedPack: its objects, and the rest of the check's result to come), so the caller can
   * prepare to store them while the worker checks them (fsck, tree depth, history gaps, about half
   * of the check); a pack refused while parsing, or one checked inline, is answered whole at once.
   * `onResolved`: given the pack's trees and blobs (entries and ids) and commits (whole, with their
   * entries) in runs while the worker still parses, every delta after its base (nothing for a pack
   * checked inline); what it is given is unchecked until the verdict, and may not all be what the
   * pack's refs reach. `onParsed`: told once the worker has parsed the whole pack (no run comes
   * after it) and checks the rest, which takes a while with nothing for this thread to do.
   */
  async begin(
    pack: Buffer,
    limits: PackLimits,
    lookups: AsyncStoreLookups,
    clientShallow: ReadonlySet<string> = new Set(),
    onResolved?: (run: ResolvedRun) => void,
    onParsed?: () => void,
  ): Promise<PackCheckResult | ParsedPack> {
    if (pack.length <= this.inlineBytesMax) {
      const checked = await checkReceivedPackWithAsyncLookups(pack, limits, lookups, clientShallow);
      if (checked) return checked;
    }
    if (this.closed) throw new Error('the pack checker is closed');
    const worker = (this.worker ??= this.spawn());
    const id = this.nextId++;
    const { port1, port2 } = new MessageChannel();
    const signal = questionSignal();
    answerQuestions(port1, signal, async ({ want, oid }: { want: 'object' | 'has' | 'type'; oid: Uint8Array }) => {
      const id = Buffer.from(oid.buffer, oid.byteOffset, oid.byteLength);
      if (want === 'has') return (await lookups.has([id]))[0];
      if (want === 'type') {
        if (!lookups.types) return (await lookups.has([id]))[0] ? 'unknown' : null;
        return (await lookups.types([id]))[0] ?? null;
      }
      const [found] = await lookups.objects([id]);
      return found ? { type: found.type, body: new Uint8Array(found.body) } : null;
    });
    const copy = new Uint8Array(pack);
    let settleLists: (lists: Map<number, Buffer> | Error) => void = () => {};
    const lists = new Promise<Map<number, Buffer>>((resolve, reject) => {
      settleLists = (value) => (value instanceof Error ? reject(value) : resolve(value));
    });
    // Nobody may ask for the lists (a refused pack, a failed store): their failure is theirs to see.
    lists.catch(() => {});
    let settleVerdict: (result: PackCheckResult | Error) => void = () => {};
    const verdict = new Promise<PackCheckResult>((resolve, reject) => {
      settleVerdict = (value) => (value instanceof Error ? reject(value) : resolve(value));
    });
    // The same: a caller whose begin() failed never asks for it.
    verdict.catch(() => {});
    let listsRequested = false;
    const requestLists = (wanted: boolean) => {
      if (listsRequested) return;
      listsRequested = true;
      worker.postMessage({ listsFor: id, wanted });
    };
    return await new Promise<PackCheckResult | ParsedPack>((resolve, reject) => {
      if (this.jobs.size === 0) worker.ref();
      this.jobs.set(id, { pack, lookups, onResolved, onParsed, lists, requestLists, settleLists, objects: null, verdict, settleVerdict, resolve, reject, done: () => port1.close() });
      worker.postMessage({ id, pack: copy, limits, clientShallow: [...clientShallow], port: port2, signal, wholeBlobs: this.wholeBlobs, streamForms: onResolved !== undefined }, [copy.buffer, port2]);
    });
  }

  /** Whether the worker thread is started. */
  get started(): boolean {
    return this.worker !== null;
  }

  /**
   * Starts the worker and loads its modules ahead of a large pack (compiling them takes ~0.2 s
   * under tsx), when one is about to come: a receive-pack advertisement, a seed's fetch. Idle
   * servers that are only cloned from never start it.
   */
  prepare(): void {
    if (this.closed || this.worker) return;
    this.worker = this.spawn();
    this.worker.postMessage({ warm: true });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private spawn(): Worker {
    const worker = startModuleWorker('../git/packCheck', WORKER_SOURCE, { nice: CHECK_NICE });
    worker.on('message', (answer: WorkerAnswer) => this.settle(answer));
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const [id, job] of this.jobs) {
        this.jobs.delete(id);
        job.done();
        job.reject(error);
        job.settleVerdict(error);
        job.settleLists(error);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the pack checker's worker exited (code ${code})`)));
    return worker;
  }

  /**
   * A job's answers: the parsed objects (or a refusal), the verdict of the rest of the check, then
   * (when it passed) the commits' object lists, which end the job.
   */
  private settle(answer: WorkerAnswer): void {
    const job = this.jobs.get(answer.id);
    if (!job) return;
    const finish = () => {
      this.jobs.delete(answer.id);
      job.done();
      if (this.jobs.size === 0) this.worker?.unref();
    };
    if (answer.forms !== undefined) {
      job.onResolved?.(resolvedRunOf(answer, job.pack));
      return;
    }
    if (answer.lists) {
      finish();
      return job.settleLists(commitObjectsOf(answer));
    }
    if (answer.crash !== undefined) {
      finish();
      const error = new Error(`pack check failed in its worker: ${answer.crash}`);
      job.settleLists(error);
      job.settleVerdict(error);
      return job.reject(error);
    }
    if (answer.parsed) {
      job.onParsed?.();
      const objects = externalBasesOf(answer, job.lookups).then((externalBases) => objectsOf(answer, job.pack, externalBases));
      job.objects = objects;
      objects.then(
        (parsed) => job.resolve({ parsed: true, objects: parsed, result: job.verdict }),
        (error: Error) => job.reject(error),
      );
      return;
    }
    if (!answer.ok) {
      finish();
      const refused = { ok: false as const, message: answer.message ?? 'pack refused' };
      job.settleVerdict(refused);
      job.settleLists(new Error('the pack was refused'));
      return job.resolve(refused);
    }
    // A verdict that passed: the objects of the first answer, whose making may still be under way.
    const gaps = new Map(answer.gaps);
    // A receiver that never says whether it wants the lists does not hold the worker's objects for good.
    const unasked = setTimeout(() => job.requestLists(false), this.listsUnaskedMsMax);
    unasked.unref();
    const request = (wanted: boolean) => {
      clearTimeout(unasked);
      job.requestLists(wanted);
    };
    job.objects!.then(
      (objects) =>
        job.settleVerdict({
          ok: true,
          objects,
          gaps,
          commitObjects: () => {
            request(true);
            return job.lists;
          },
          forgetCommitObjects: () => request(false),
        }),
      (error: Error) => job.settleVerdict(error),
    );
  }
}

/**
 * The store's copies of a thin pack's delta bases that blobs sent without their bodies may need
 * to be rebuilt here (bases the parse had from the store), read ahead so the rebuild can be
 * synchronous. The worker names those bases: a table of every received id, to find them, held
 * the event loop some 50 ms for a history's 43,000 objects, in every large push and seed.
 */
async function externalBasesOf(answer: WorkerAnswer, lookups: AsyncStoreLookups): Promise<Map<string, Buffer>> {
  const { bases, deltas, omitted, external } = answer as Required<WorkerAnswer>;
  const found = new Map<string, Buffer>();
  if (external.length === 0) return found;
  const given = new OidTable(external.length / 20);
  for (let at = 0; at < external.length; at += 20) given.add(external, at);
  // Ids stay bytes: only the bases an omitted blob names are turned into hex. In slices.
  const slicer = new Slicer();
  const wanted = new Map<string, Oid>();
  for (let i = 0; i < omitted.length; i++) {
    if ((i & PAUSE_EVERY_MASK) === PAUSE_EVERY_MASK) await slicer.pause();
    if (!omitted[i] || !deltas[i] || !given.has(bases, i * 20)) continue;
    const base = Buffer.from(bases.buffer, bases.byteOffset + i * 20, 20);
    wanted.set(oidToHex(base), base);
  }
  if (wanted.size === 0) return found;
  const objects = await lookups.objects([...wanted.values()]);
  [...wanted.keys()].forEach((hex, i) => {
    const object = objects[i];
    if (object) found.set(hex, object.body);
  });
  return found;
}

/**
 * PackObjects over the one transferred buffer of bodies and the pack itself (views, no copies).
 * A blob sent without its body gets it on first use, rebuilt from its entry in the pack (and its
 * delta base: another received object, or for a thin pack the store's copy); storing a received
 * pack needs only its length (`bodyBytes`) unless its entry cannot be kept as a form.
 */
async function objectsOf(answer: WorkerAnswer, pack: Buffer, externalBases: Map<string, Buffer>): Promise<PackObject[]> {
  const { types, oids, bodies, ends, offsets, depths, spans, bases, deltas, omitted, sizes } = answer as Required<WorkerAnswer>;
  const all = Buffer.from(bodies.buffer, bodies.byteOffset, bodies.byteLength);
  const ids = Buffer.from(oids.buffer, oids.byteOffset, oids.byteLength);
  const baseIds = Buffer.from(bases.buffer, bases.byteOffset, bases.byteLength);
  const objects: PackObject[] = [];
  // In slices too: some 120 ms in one piece for 40,000 objects.
  const slicer = new Slicer();
  let start = 0;
  for (let i = 0; i < types.length; i++) {
    if ((i & PAUSE_EVERY_MASK) === PAUSE_EVERY_MASK) await slicer.pause();
    const object: PackObject = { type: types[i], body: all.subarray(start, ends[i]), oid: ids.subarray(i * 20, i * 20 + 20), offset: offsets[i], deltaDepth: depths[i] };
    if (spans[i * 3] >= 0) {
      object.packed = { deflated: pack.subarray(spans[i * 3], spans[i * 3 + 1]), dataBytes: spans[i * 3 + 2], base: deltas[i] ? baseIds.subarray(i * 20, i * 20 + 20) : null };
    }
    if (omitted[i]) object.bodyBytes = sizes[i];
    objects.push(object);
    start = ends[i];
  }
  rebuildBodiesOnRead(objects, (index) => omitted[index] === 1, (oid) => externalBases.get(oidToHex(oid)));
  return objects;
}

/** A streamed run as the store takes it, over the transferred arrays and the pack (views): trees and blobs as forms, commits whole with their entries. */
function resolvedRunOf(answer: WorkerAnswer, pack: Buffer): ResolvedRun {
  const { forms: count, oids, kinds, spans, sizes, bases, deltas, bodies, depths } = answer as Required<WorkerAnswer>;
  const ids = Buffer.from(oids.buffer, oids.byteOffset, oids.byteLength);
  const baseIds = Buffer.from(bases.buffer, bases.byteOffset, bases.byteLength);
  const commitBodies = Buffer.from(bodies.buffer, bodies.byteOffset, bodies.byteLength);
  const run: ResolvedRun = { forms: [], commits: [] };
  let bodyAt = 0;
  for (let i = 0; i < count; i++) {
    const oid = ids.subarray(i * 20, i * 20 + 20);
    const deflated = pack.subarray(spans[i * 3], spans[i * 3 + 1]);
    const base = deltas[i] ? baseIds.subarray(i * 20, i * 20 + 20) : null;
    if (kinds[i] === 2) {
      const body = commitBodies.subarray(bodyAt, bodyAt + sizes[i]);
      bodyAt += sizes[i];
      run.commits.push({ type: 'commit', body, oid, offset: spans[i * 3], deltaDepth: depths[i], packed: { deflated, dataBytes: spans[i * 3 + 2], base } });
      continue;
    }
    run.forms.push({ oid, type: kinds[i] === 1 ? 'tree' : 'blob', inflatedBytes: sizes[i], deflated, delta: base ? { base, bytes: spans[i * 3 + 2] } : null });
  }
  return run;
}

function commitObjectsOf(answer: WorkerAnswer): Map<number, Buffer> {
  const { lists, listIndexes } = answer as Required<WorkerAnswer>;
  const all = Buffer.from(lists.buffer, lists.byteOffset, lists.byteLength);
  const out = new Map<number, Buffer>();
  let start = 0;
  for (let i = 0; i < listIndexes.length; i += 2) {
    out.set(listIndexes[i], all.subarray(start, listIndexes[i + 1]));
    start = listIndexes[i + 1];
  }
  return out;
}
