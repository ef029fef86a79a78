/**
 * Serving fetches and clones: reference advertisements (v0 and v2), negotiation answers, and the
 * pack itself as a lazy stream of pkt-lines, so memory stays bounded by one batch of objects (a few
 * megabytes, read in one call) whatever the repository's size. Objects go out in the pack-ready forms
 * the store keeps (whole or as deltas), copied; an object without one is deflated as it is sent.
 */
import { constants } from 'node:zlib';
import { Deflater } from '../../git/deflater.js';
import { createDelta } from '../../git/delta.js';
import { OID_BYTES, oidToHex, type Oid } from '../../git/oid.js';
import { OidList, OidTable } from '../../git/oidTable.js';
import { DELTA_TARGET_BYTES_MIN, type PackForm } from '../../git/packForm.js';
import { PACK_HEADER_BYTES, PACK_TRAILER_BYTES, PackWriter, type PackChunk } from '../../git/pack.js';
import { encodeDelim, encodeFlush, encodePktLine, encodeSideband, encodeSidebandPieces, SIDEBAND_DATA, SIDEBAND_PROGRESS } from '../../git/pktline.js';
import { branchRef } from '../../git/refname.js';
import {
  deepens,
  encodeLsRefs,
  encodeRefAdvertisement,
  encodeV2Advertisement,
  parseLsRefsArgs,
  parseV2FetchArgs,
  ProtocolError,
  RECEIVE_PACK_CAPABILITIES,
  servicePreamble,
  UPLOAD_PACK_CAPABILITIES_V0,
  type FetchRequest,
  type Service,
  type V2Command,
} from '../../git/smartProtocol.js';
import { filterKey } from '../../git/objectFilter.js';
import type { ProjectReads } from '../../store/asyncTypes.js';
import { deflatedWithinBySizes } from '../../store/deflatedWithin.js';
import type { DeflatedObject, StoredObject } from '../../store/types.js';
import { advertisedTips, checkWants, commonHaves, planPackSteps, planShallow, UploadRequestError, type PackPlan, type ShallowPlan } from './packObjects.js';
import { DELTA_DEPTH_MAX } from './packedForms.js';
import { commitInfo, inReadTx, MAIN_BRANCH, type ReadTx, type Repo } from '../repo.js';
import type { KeptPack, PackRecording } from './clonePacks.js';
import { inSlices, projectReads, Slicer } from '../slices.js';

/** Objects per progress message on side-band 2. */
const PROGRESS_EVERY_OBJECTS = 10_000;
/** Largest side-band-64k packet payload. */
const SIDEBAND_CHUNK_BYTES = 65_515;
/** Pack bytes gathered per socket write. */
const WRITE_CHUNK_BYTES = 1 << 20;
/** Objects larger than this get their thin delta made off the event loop (UploadPackOptions.makeForm), or none. */
const THIN_DELTA_BYTES_MAX = 1024 * 1024;
/** Objects larger than this get no thin delta at all (a delta search holds both bodies in memory). */
const THIN_DELTA_OFF_LOOP_BYTES_MAX = 64 * 1024 * 1024;
/** Bytes of objects one pack makes thin deltas for; the rest go out as stored (a client chooses how much a fetch asks). */
const THIN_DELTA_PACK_BYTES_MAX = 64 * 1024 * 1024;
/** Objects the deflate cache has not reached yet are compressed fast, while the client waits. */
const INLINE_DEFLATE_LEVEL = 1;
/**
 * Bodies and thin deltas deflated while the client waits (objects without a stored form: every
 * object on a backend without forms) go through one zlib stream each, reset between objects; each
 * call is synchronous, so requests can share them.
 */
let inlineDeflater: Deflater | null = null;
let deltaDeflater: Deflater | null = null;
const deflateInline = (body: Buffer) => (inlineDeflater ??= new Deflater(INLINE_DEFLATE_LEVEL)).deflate(body);
const deflateDelta = (delta: Buffer) => (deltaDeflater ??= new Deflater(constants.Z_DEFAULT_COMPRESSION)).deflate(delta);
/** Objects the pack stream reads in one call at most. */
export const BATCH_OBJECTS_MAX = 1024;
/** Bytes of forms (of bodies, for objects without one) the pack stream reads in one call, unless one object is larger. */
export const BATCH_BYTES = 4 * 1024 * 1024;
/** Objects offered to one read at least (batchesOf). */
const BATCH_OFFER_MIN = 16;

/**
 * What the service lends upload-pack: `makeForm` makes a pack-ready form of `body` against `base`
 * (a delta when git's try_delta rule keeps it, else the body deflated) on a worker thread, for the
 * thin deltas of objects too large to diff on the event loop.
 */
export interface UploadPackOptions {
  makeForm?: (body: Buffer, base: Buffer) => Promise<PackForm>;
}

async function headOf(tx: ProjectReads): Promise<{ oid: Oid; target: string } | null> {
  const oid = await tx.getRef(branchRef(MAIN_BRANCH));
  return oid ? { oid, target: branchRef(MAIN_BRANCH) } : null;
}

export function advertise(repo: Repo, service: Service, version: 0 | 2): Promise<Buffer[]> {
  return inReadTx(repo, async (tx) => {
    const preamble = servicePreamble(service);
    if (service === 'git-upload-pack' && version === 2) return [...preamble, ...encodeV2Advertisement()];
    const capabilities = service === 'git-upload-pack' ? UPLOAD_PACK_CAPABILITIES_V0 : RECEIVE_PACK_CAPABILITIES;
    const head = service === 'git-upload-pack' ? await headOf(tx) : null;
    return [...preamble, ...encodeRefAdvertisement(await advertisedTips(tx), head, capabilities)];
  });
}

export function lsRefs(repo: Repo, command: V2Command): Promise<Buffer[]> {
  const args = parseLsRefsArgs(command.args);
  return inReadTx(repo, async (tx) => encodeLsRefs(await advertisedTips(tx), await headOf(tx), args));
}

/** Response to a v0 upload-pack request (stateless: every request carries the whole state). */
export async function* uploadPackV0(repo: Repo, request: FetchRequest, options: UploadPackOptions = {}): AsyncGenerator<Buffer> {
  const sideband = request.capabilities.has('side-band-64k') || request.capabilities.has('side-band');
  const sidebandBytes = request.capabilities.has('side-band-64k') ? SIDEBAND_CHUNK_BYTES : 995;
  const progress = sideband && !request.capabilities.has('no-progress');
  const { plan, shallow, common, kept, recording, grows } = await prepare(repo, request, () => request.negotiates && request.done, false);
  // git answers a shallow list (ended by a flush) only when a deepen was asked for; a shallow
  // client fetching without one expects the ACK/NAK lines straight away.
  if (deepens(request)) {
    for (const oid of shallow.shallow) yield encodePktLine(`shallow ${oidToHex(oid)}\n`);
    for (const oid of shallow.unshallow) yield encodePktLine(`unshallow ${oidToHex(oid)}\n`);
    yield encodeFlush();
  }
  // A stateless request that ends at the wants' flush only asks for the shallow list, as git answers it.
  if (!request.negotiates) return;
  if (!request.done) {
    for (const oid of common) yield encodePktLine(`ACK ${oidToHex(oid)} common\n`);
    if (common.length > 0) yield encodePktLine(`ACK ${oidToHex(common[common.length - 1])} ready\n`);
    yield encodePktLine('NAK\n');
    return;
  }
  yield encodePktLine(common.length > 0 ? `ACK ${oidToHex(common[common.length - 1])}\n` : 'NAK\n');
  if (kept) yield* keptPackStream(kept, sideband ? sidebandBytes : 0);
  else yield* packStream(repo, plan!, packCapabilities(request.capabilities), sideband ? sidebandBytes : 0, progress, options, recording, grows);
  if (sideband) yield encodeFlush();
}

/** Response to a v2 fetch command (upload-pack.c upload_pack_v2). */
export async function* fetchV2(repo: Repo, command: V2Command, options: UploadPackOptions = {}): AsyncGenerator<Buffer> {
  const request = parseV2FetchArgs(command.args);
  const waitsForDone = request.capabilities.has('wait-for-done');
  // As git: haves without wants are a negotiation alone (`git fetch --negotiate-only`, which a
  // push with push.negotiate runs), answered with the common commits and never a pack.
  if (request.wants.length === 0 && !waitsForDone) throw new ProtocolError('fetch without any want');
  const progress = !request.capabilities.has('no-progress');
  const { plan, shallow, common, kept, recording, grows } = await prepare(repo, request, (common) => request.done || request.haves.length === 0 || (common.length > 0 && !waitsForDone), true);
  // Without haves there is nothing to acknowledge: the pack follows at once.
  if (!request.done && request.haves.length > 0) {
    yield encodePktLine('acknowledgments\n');
    if (common.length === 0) yield encodePktLine('NAK\n');
    for (const oid of common) yield encodePktLine(`ACK ${oidToHex(oid)}\n`);
    if (common.length === 0 || waitsForDone) {
      yield encodeFlush();
      return;
    }
    yield encodePktLine('ready\n');
    yield encodeDelim();
  }
  // As git: the section comes whenever the client is shallow or deepens, even when it is empty.
  if (deepens(request) || request.clientShallows.length > 0) {
    yield encodePktLine('shallow-info\n');
    for (const oid of shallow.shallow) yield encodePktLine(`shallow ${oidToHex(oid)}\n`);
    for (const oid of shallow.unshallow) yield encodePktLine(`unshallow ${oidToHex(oid)}\n`);
    yield encodeDelim();
  }
  yield encodePktLine('packfile\n');
  if (kept) yield* keptPackStream(kept, SIDEBAND_CHUNK_BYTES);
  else yield* packStream(repo, plan!, packCapabilities(request.capabilities), SIDEBAND_CHUNK_BYTES, progress, options, recording, grows);
  yield encodeFlush();
}

/**
 * Everything a response needs: the shallow lines (answered on every round) and the common haves,
 * from one read of the project, then the objects when `sendsPack` says this answer carries the pack,
 * planned in slices (src/repo/slices.ts) so a clone of a large tree never holds the event loop.
 * A clone (no common haves, no shallow commits on the client's side; shallow by `deepen <n>` or
 * `deepen-since` or not at all) is answered with the pack kept for its wants and depth when there
 * is one (src/repo/wire/clonePacks.ts), else planned and recorded for the next.
 */
async function prepare(
  repo: Repo,
  request: FetchRequest,
  sendsPack: (common: Oid[]) => boolean,
  anyObject: boolean,
): Promise<{ plan: PackPlan | null; shallow: ShallowPlan; common: Oid[]; kept?: readonly Buffer[]; recording?: PackRecording; grows?: KeptPack }> {
  try {
    const { shallow, common, provided, commits } = await inReadTx(repo, async (tx) => {
      const { commits, provided } = await checkWants(tx, request.wants, anyObject);
      return { shallow: await planShallow(tx, commits, request), common: await commonHaves(tx, request.haves), provided, commits };
    });
    if (!sendsPack(common)) return { plan: null, shallow, common };
    if (provided.length > 0) {
      // What a partial clone fetches by id: planned every time, never kept.
      const plan = await inSlices(planPackSteps(projectReads(repo), { wants: commits, haves: common, shallow, filter: request.filter, provided }));
      return { plan, shallow, common };
    }
    const filter = request.filter;
    // deepen-not names refs, which move; deepen-relative counts from the client's shallow commits.
    const clone = common.length === 0 && request.clientShallows.length === 0 && request.deepenNot.length === 0 && !request.deepenRelative;
    const shape = { ofsDelta: packCapabilities(request.capabilities).ofsDelta, depth: request.depth, deepenSince: request.deepenSince, filter: filterKey(filter) };
    const found = clone ? repo.clonePacks?.find(repo.project, request.wants, shape) : undefined;
    if (found && 'pack' in found) return { plan: null, shallow, common, kept: found.pack };
    if (found?.grows && (await inReadTx(repo, (tx) => tipsReached(tx, found.grows!.tips, request.wants)))) {
      repo.clonePacks!.grew();
      const increment = await inSlices(planPackSteps(projectReads(repo), { wants: request.wants, haves: [...found.grows.tips], shallow, filter }));
      return { plan: await beyondKept(increment, found.grows), shallow, common, recording: found.recording, grows: found.grows };
    }
    const plan = await inSlices(planPackSteps(projectReads(repo), { wants: request.wants, haves: common, shallow, filter }));
    return { plan, shallow, common, ...(found ? { recording: found.recording } : {}) };
  } catch (error) {
    if (error instanceof UploadRequestError) throw new ProtocolError(error.message);
    throw error;
  }
}

/** Commits read at most to find a kept pack's tips below a clone's wants (tipsReached). */
const GROW_ANCESTRY_READS_MAX = 4096;

/**
 * Whether every tip of a kept pack is reached by a want, so everything the kept pack holds is
 * something the clone asks for: a tip a deleted branch left behind must not bring its objects to a
 * cloner through a kept pack. One walk down from the wants that are not kept tips, over the commit
 * index, cut at the lowest generation of the tips it looks for and given up on (the clone is
 * planned whole) after GROW_ANCESTRY_READS_MAX commits.
 */
async function tipsReached(tx: ProjectReads, tips: readonly Oid[], wants: readonly Oid[]): Promise<boolean> {
  const wanted = new Set(wants.map(oidToHex));
  const sought = new Set<string>();
  let floor = Infinity;
  // One read for the tips' entries (a statement on PostgreSQL, where one per tip was a round trip each).
  const moved = tips.filter((tip) => !wanted.has(oidToHex(tip)));
  const infos = await tx.getCommitInfos(moved);
  for (const [index, tip] of moved.entries()) {
    const generation = infos[index]?.generation;
    if (generation === undefined) return false;
    sought.add(oidToHex(tip));
    floor = Math.min(floor, generation);
  }
  const kept = new Set(tips.map(oidToHex));
  const stack = wants.filter((want) => !kept.has(oidToHex(want)));
  const seen = new Set<string>();
  while (sought.size > 0 && stack.length > 0) {
    const oid = stack.pop()!;
    const hex = oidToHex(oid);
    if (seen.has(hex)) continue;
    if (seen.size >= GROW_ANCESTRY_READS_MAX) return false;
    seen.add(hex);
    sought.delete(hex);
    const info = await commitInfo(tx, oid);
    // A commit's ancestors all have smaller generations: none at or below the floor leads to a tip sought.
    // A loop, not a spread: a pushed commit may name more parents than a call takes arguments.
    if (info && info.generation > floor) for (const parent of info.parents) stack.push(parent);
  }
  return sought.size === 0;
}

/**
 * The plan of a fetch with the kept pack's tips as haves, less what the kept pack holds (a fetch
 * plan may list an object older commits reach, a file changed back): the objects the grown pack
 * adds. The kept pack's objects are what its deltas may name, as a thin pack's name the client's;
 * no delta is made while the client waits (no thin bases).
 */
async function beyondKept(increment: PackPlan, kept: KeptPack): Promise<PackPlan> {
  const held = new OidTable(kept.ids.length / OID_BYTES);
  const slicer = new Slicer();
  for (let at = 0; at < kept.ids.length; at += OID_BYTES) {
    held.add(kept.ids, at);
    if (slicer.due) await slicer.pause();
  }
  const objects = new OidList();
  for (let index = 0; index < increment.objects.length; index++) if (!held.has(increment.objects.oidView(index))) objects.push(increment.objects.oidView(index), increment.objects.type(index));
  return { objects, clientHas: held, thinBases: new Map() };
}

/** A kept pack, in the writes and side-band packets packStream would have sent it in (no progress: it takes no time). */
function* keptPackStream(pack: readonly Buffer[], sidebandBytes: number): Generator<Buffer> {
  for (const piece of pack) yield sidebandBytes === 0 ? piece : encodeSidebandPieces(SIDEBAND_DATA, [piece], piece.length, sidebandBytes);
}

/**
 * A push to another repository (src/service/gitClient.ts, linked-repository sync) uses the same
 * planner and pack stream as a fetch from us: planned in slices, objects in their stored forms
 * (git's deltas included), raw pack bytes. `haves`: the receiver's ref tips that we hold.
 */
export async function planPushPack(repo: Repo, wants: Oid[], haves: Oid[]): Promise<PackPlan> {
  const common = await inReadTx(repo, (tx) => commonHaves(tx, haves));
  return inSlices(planPackSteps(projectReads(repo), { wants, haves: common }));
}

/**
 * The pack of planPushPack's plan for a receiver that advertised `capabilities`: OFS_DELTA when it
 * takes `ofs-delta`, and thin (deltas against objects it holds) unless it says `no-thin`, as git's
 * send-pack decides (receive-pack completes a thin pack from its own objects).
 */
export function pushPackStream(repo: Repo, plan: PackPlan, capabilities: { has(name: string): boolean }): AsyncGenerator<Buffer> {
  return packStream(repo, plan, { ofsDelta: capabilities.has('ofs-delta'), thin: !capabilities.has('no-thin') }, 0, false, {});
}

/** What the client said it can take: OFS_DELTA entries, and deltas against objects it holds (a thin pack). */
interface PackCapabilities {
  ofsDelta: boolean;
  thin: boolean;
}

function packCapabilities(capabilities: ReadonlySet<string>): PackCapabilities {
  return { ofsDelta: capabilities.has('ofs-delta'), thin: capabilities.has('thin-pack') };
}

/**
 * The pack, framed in side-band packets of at most `sidebandBytes` (0: raw pack bytes).
 *
 * Each object goes out in its pack-ready form (src/store/types.ts DeflatedObject), copied as
 * stored: whole, or as a delta when its base is in this pack (written first if it is not yet, as
 * git's write_one does; OFS_DELTA when the client takes it) or, in a thin pack, held by the client.
 * A delta whose base the client will not have goes out whole, rebuilt and deflated here.
 *
 * The forms (and the bodies of objects sent without one) are read a batch of objects at a time,
 * a batch sized to about BATCH_BYTES, so memory stays bounded by a batch whatever the pack's size.
 */
async function* packStream(
  repo: Repo,
  plan: PackPlan,
  capabilities: PackCapabilities,
  sidebandBytes: number,
  progress: boolean,
  options: UploadPackOptions,
  recording?: PackRecording,
  grows?: KeptPack,
): AsyncGenerator<Buffer> {
  try {
    const reads = projectReads(repo);
    // A pack that grows a kept one: its entries first, then the plan's, which may be deltas on them (as on a thin pack's bases).
    if (grows) capabilities = { ...capabilities, thin: true };
    const keptObjects = grows ? grows.ids.length / OID_BYTES : 0;
    const writer = new PackWriter(keptObjects + plan.objects.length);
    const slicer = new Slicer();
    // Built at the first delta: a pack of whole objects (a tree written through the API) never needs it.
    let indexById: OidTable | null = null;
    const indexOf = (oid: Oid): number | undefined => {
      if (!indexById) {
        indexById = new OidTable(plan.objects.length);
        for (let index = 0; index < plan.objects.length; index++) indexById.add(plan.objects.oidView(index), 0, index);
      }
      const index = indexById.get(oid);
      return index < 0 ? undefined : index;
    };
    // Where each object was written (-1: not yet), for OFS_DELTA distances and to skip bases written early.
    const offsets = new Float64Array(plan.objects.length).fill(-1);
    const entries: PackEntries = { writer, plan, capabilities, indexOf, offsets, thinBytesLeft: THIN_DELTA_PACK_BYTES_MAX, madeOffLoop: new Map(), unformed: false };
    if (capabilities.thin && options.makeForm && plan.thinBases.size > 0) await makeLargeThinDeltas(reads, entries, options.makeForm);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    // Large writes: one socket write per megabyte or so, not one per object.
    const take = (): Buffer => {
      let pieces = pending;
      const bytes = pendingBytes;
      pending = [];
      pendingBytes = 0;
      if (recording?.recording) {
        // One copy for the recording, framed from there.
        const raw = Buffer.concat(pieces, bytes);
        recording.add(raw);
        pieces = [raw];
        if (sidebandBytes === 0) return raw;
      }
      return sidebandBytes === 0 ? Buffer.concat(pieces, bytes) : encodeSidebandPieces(SIDEBAND_DATA, pieces, bytes, sidebandBytes);
    };
    const add = (bytes: Buffer) => {
      pending.push(bytes);
      pendingBytes += bytes.length;
    };
    add(writer.start());
    let sent = 0;
    if (grows) {
      // The whole count goes with the first piece: the writer checks it against the header's.
      let uncounted = keptObjects;
      for (const piece of keptEntries(grows.pieces)) {
        add(writer.addEntriesVerbatim(piece, uncounted));
        uncounted = 0;
        if (pendingBytes >= WRITE_CHUNK_BYTES) yield take();
      }
      sent = keptObjects;
    }
    for await (const { start, end, batch } of batchesOf(reads, entries)) {
      for (let index = start; index < end; index++) {
        if (offsets[index] >= 0) continue;
        const before = sent;
        for (const at of chainOf(entries, batch, index)) {
          // The store is asked again only for what the batch could not foresee (a thin delta, a chain cut short).
          add(entryFromBatch(entries, batch, at) ?? (await entryFromStore(reads, entries, batch, at)));
          sent++;
        }
        if (pendingBytes >= WRITE_CHUNK_BYTES) yield take();
        if (progress && sidebandBytes > 0 && Math.floor(sent / PROGRESS_EVERY_OBJECTS) > Math.floor(before / PROGRESS_EVERY_OBJECTS)) {
          yield* encodeSideband(SIDEBAND_PROGRESS, Buffer.from(`Counting objects: ${sent}/${plan.objects.length}\r`), sidebandBytes);
        }
        if (slicer.due) await slicer.pause();
      }
    }
    add(writer.finish());
    if (entries.unformed) recording?.abandon();
    const last = take();
    recording?.finish(() => (grows ? Buffer.concat([grows.ids, plan.objects.idsBytes()]) : plan.objects.idsBytes()));
    yield last;
  } finally {
    // A stream that ended early (the client went away, a read failed) keeps nothing; after finish() this does nothing.
    recording?.abandon();
  }
}

/** The entries of a kept pack as views into its pieces: its bytes without the pack header and the trailing checksum. */
function* keptEntries(pieces: readonly Buffer[]): Generator<Buffer> {
  const total = pieces.reduce((bytes, piece) => bytes + piece.length, 0);
  const end = total - PACK_TRAILER_BYTES;
  let at = 0;
  for (const piece of pieces) {
    const from = Math.max(at, PACK_HEADER_BYTES);
    const to = Math.min(at + piece.length, end);
    if (to > from) yield piece.subarray(from - at, to - at);
    at += piece.length;
  }
}

interface PackEntries {
  /** What is left of THIN_DELTA_PACK_BYTES_MAX. */
  thinBytesLeft: number;
  /** Thin deltas of large objects (by index in the plan), made on a worker before the pack started. */
  madeOffLoop: Map<number, PackForm>;
  /**
   * Whether an object with no pack-ready form yet went out (deflated here): the deflate cache had
   * not reached it, so the pack is larger than later ones, and is not kept (clonePacks.ts).
   */
  unformed: boolean;
  writer: PackWriter;
  plan: PackPlan;
  capabilities: PackCapabilities;
  /** The index in the plan of an object, if the pack sends it. */
  indexOf: (oid: Oid) => number | undefined;
  offsets: Float64Array;
}

/**
 * The plan's objects as batches of consecutive objects, read as the stream goes: at most
 * BATCH_OBJECTS_MAX objects, and about BATCH_BYTES of their forms (of their bodies, for those
 * without one), so a batch of large files is short. The store stops reading at the bound
 * (getDeflatedWithin), so no object is looked up twice to be weighed.
 */
async function* batchesOf(reads: ReadTx, entries: PackEntries): AsyncGenerator<{ start: number; end: number; batch: Batch }> {
  const { plan, offsets } = entries;
  // Objects offered to one read: about twice what the last batch took, so a reader that weighs
  // what it is offered first (deflatedWithinBySizes) is not offered a window per few large files.
  let offered = BATCH_OBJECTS_MAX;
  for (let start = 0; start < plan.objects.length; ) {
    const limit = Math.min(plan.objects.length, start + offered);
    const asked: number[] = [];
    for (let index = start; index < limit; index++) if (offsets[index] < 0) asked.push(index);
    if (asked.length === 0) {
      start = limit;
      continue;
    }
    const forms = await formsWithin(reads, asked.map((index) => plan.objects.oidView(index)), BATCH_BYTES);
    const taken = asked.slice(0, Math.max(1, forms.length));
    const end = taken[taken.length - 1] + 1;
    yield { start, end, batch: await readBatch(reads, entries, taken, forms) };
    offered = Math.min(BATCH_OBJECTS_MAX, Math.max(BATCH_OFFER_MIN, 2 * taken.length));
    start = end;
  }
}

/** The first of `oids` whose forms (bodies, where none) come to about `bytesMax`, with their forms. */
function formsWithin(reads: ReadTx, oids: Oid[], bytesMax: number): Promise<Array<DeflatedObject | undefined>> {
  if (reads.getDeflatedWithin) return reads.getDeflatedWithin(oids, bytesMax);
  // A backend without forms: every object's body is read and deflated here.
  return deflatedWithinBySizes({ objectSizes: (some) => reads.objectSizes(some), getDeflated: async (some) => some.map(() => undefined) }, oids, bytesMax);
}

/** What one read of a batch gave, by index in the plan. */
interface Batch {
  /** The forms of the batch's objects and of the bases their delta chains lead through in this pack; undefined: none. */
  forms: Map<number, DeflatedObject | undefined>;
  /** Bodies of the objects that go out deflated here (no form, or a delta on a base the client will not have). */
  bodies: Map<number, StoredObject>;
}

/**
 * The rest of what the objects `asked` need, beside their `forms` (as formsWithin read them): the
 * forms of the unwritten bases in this pack their delta chains lead through (a level of the chains
 * per read), and the bodies of those that cannot go out in their form.
 */
async function readBatch(reads: ReadTx, entries: PackEntries, asked: number[], forms: Array<DeflatedObject | undefined>): Promise<Batch> {
  const { plan, offsets, indexOf, capabilities } = entries;
  const batch: Batch = { forms: new Map(), bodies: new Map() };
  // Chains are acyclic and short (README "Pack-ready forms and deltas"); the bound is a guard. A
  // collection turning a chain around between two of these reads can show a base on a form read
  // before: chainOf stops there, and the object goes out whole.
  for (let depth = 0; asked.length > 0 && depth <= DELTA_DEPTH_MAX; depth++) {
    const bases = new Set<number>();
    asked.forEach((index, i) => {
      const form = forms[i];
      batch.forms.set(index, form);
      const base = form?.delta ? indexOf(form.delta.base) : undefined;
      if (base !== undefined && offsets[base] < 0) bases.add(base);
    });
    asked = [...bases].filter((base) => !batch.forms.has(base));
    if (asked.length > 0) forms = reads.getDeflated ? await reads.getDeflated(asked.map((index) => plan.objects.oidView(index))) : [];
  }
  const whole = [...batch.forms].filter(([index, form]) => {
    if (capabilities.thin && plan.thinBases.has(index)) return false;
    if (!form) return true;
    return form.delta !== undefined && indexOf(form.delta.base) === undefined && !(capabilities.thin && plan.clientHas.has(form.delta.base));
  });
  if (whole.length > 0) {
    const objects = await reads.getObjects(whole.map(([index]) => plan.objects.oidView(index)));
    whole.forEach(([index], i) => {
      const object = objects[i];
      if (object) batch.bodies.set(index, object);
    });
  }
  return batch;
}

/**
 * Object `index` after the unwritten bases in this pack its delta chain leads through (bases
 * first, so every OFS_DELTA points back), as the batch's forms tell them.
 */
function chainOf(entries: PackEntries, batch: Batch, index: number): number[] {
  // Most objects are whole or have their base written already.
  const own = batch.forms.get(index);
  const baseIndex = own?.delta ? entries.indexOf(own.delta.base) : undefined;
  if (baseIndex === undefined || entries.offsets[baseIndex] >= 0) return [index];
  const chain = [index, baseIndex];
  // Chains are acyclic and short; the bound and the check for a base met twice are guards (readBatch).
  while (chain.length <= DELTA_DEPTH_MAX) {
    const form = batch.forms.get(chain[chain.length - 1]);
    if (!form?.delta) break;
    const base = entries.indexOf(form.delta.base);
    if (base === undefined || entries.offsets[base] >= 0 || chain.includes(base)) break;
    chain.push(base);
  }
  return chain.reverse();
}

/** A delta from `base` to `oid` worth sending (git's try_delta rule), or null. */
async function thinDelta(reads: ReadTx, entries: PackEntries, oid: Oid, base: Oid): Promise<Buffer | null> {
  const size = (await reads.objectSizes([oid]))[0] ?? Infinity;
  if (size > THIN_DELTA_BYTES_MAX || size > entries.thinBytesLeft) return null;
  entries.thinBytesLeft -= size;
  const [target, source] = await reads.getObjects([oid, base]);
  if (!target || !source || target.body.length < DELTA_TARGET_BYTES_MIN || source.body.length === 0) return null;
  return createDelta(source.body, target.body, Math.floor(target.body.length / 2) - OID_BYTES);
}

/**
 * git's --thin for objects over THIN_DELTA_BYTES_MAX (a large file edited between the client's
 * commit and the one it fetches): each delta is made on a worker, one at a time, before the pack
 * starts, for the objects whose stored form the client cannot take as it is.
 */
async function makeLargeThinDeltas(reads: ReadTx, entries: PackEntries, makeForm: NonNullable<UploadPackOptions['makeForm']>): Promise<void> {
  const thin = [...entries.plan.thinBases];
  const sizes = await reads.objectSizes(thin.map(([index]) => entries.plan.objects.oidView(index)));
  for (let i = 0; i < thin.length; i++) {
    const [index, base] = thin[i];
    const size = sizes[i] ?? Infinity;
    if (size <= THIN_DELTA_BYTES_MAX || size > THIN_DELTA_OFF_LOOP_BYTES_MAX || size > entries.thinBytesLeft) continue;
    const oid = entries.plan.objects.oid(index);
    const [form] = reads.getDeflated ? await reads.getDeflated([oid]) : [undefined];
    if (form?.delta && storedDeltaGoesOut(entries, form.delta.base)) continue;
    entries.thinBytesLeft -= size;
    const [target, source] = await reads.getObjects([oid, base]);
    if (!target || !source) continue;
    try {
      const made = await makeForm(target.body, source.body);
      if (made.deltaBytes !== null) entries.madeOffLoop.set(index, made);
    } catch {
      // No worker (it failed, or the service is stopping): the object goes out as stored.
    }
  }
}

/** Whether an entry sends a stored delta on `base` as it is: the base is in this pack, or (thin) the client holds it. */
function storedDeltaGoesOut(entries: PackEntries, base: Oid): boolean {
  return entries.indexOf(base) !== undefined || (entries.capabilities.thin && entries.plan.clientHas.has(base));
}

/**
 * One pack entry from what the batch read: the stored form when the client can take it, a thin
 * delta made on a worker, or the body deflated now. Null when the entry needs the store: a thin
 * delta to try now (entryFromStore), or a body the batch did not foresee.
 */
function entryFromBatch(entries: PackEntries, batch: Batch, index: number): Buffer | null {
  const { writer, plan, capabilities, indexOf, offsets } = entries;
  const form = batch.forms.get(index);
  let chunk: PackChunk | null = null;
  if (form?.delta) {
    const base = indexOf(form.delta.base);
    if (base !== undefined && offsets[base] >= 0) {
      chunk = capabilities.ofsDelta
        ? writer.addDeflatedOfsDelta(offsets[base], form.delta.bytes, form.deflated)
        : writer.addDeflatedRefDelta(form.delta.base, form.delta.bytes, form.deflated);
    } else if (base === undefined && capabilities.thin && plan.clientHas.has(form.delta.base)) {
      chunk = writer.addDeflatedRefDelta(form.delta.base, form.delta.bytes, form.deflated);
    }
  }
  const thinBase = capabilities.thin ? plan.thinBases.get(index) : undefined;
  const made = chunk ? undefined : entries.madeOffLoop.get(index);
  if (made && thinBase) chunk = writer.addDeflatedRefDelta(thinBase, made.deltaBytes!, made.deflated);
  // git's --thin: a delta against the version at the same path that the client holds, made now.
  if (!chunk && thinBase) return null;
  if (!chunk && form && !form.delta) chunk = writer.addDeflatedObject(form.type, form.inflatedBytes, form.deflated);
  if (!chunk) {
    const object = batch.bodies.get(index);
    if (!object) return null;
    chunk = writer.addDeflatedObject(object.type, object.body.length, deflateInline(object.body));
    // Rebuilt whole because its delta's base is not sent (a shallow cut) is what any later pack does too.
    if (!form) entries.unformed = true;
  }
  offsets[index] = chunk.offset;
  return chunk.bytes;
}

/** The rest of an entry entryFromBatch left: a thin delta tried now, else the stored whole form, else the body deflated now. */
async function entryFromStore(reads: ReadTx, entries: PackEntries, batch: Batch, index: number): Promise<Buffer> {
  const { writer, plan, capabilities, offsets } = entries;
  const oid = plan.objects.oidView(index);
  const form = batch.forms.get(index);
  let chunk: PackChunk | null = null;
  const thinBase = capabilities.thin ? plan.thinBases.get(index) : undefined;
  if (thinBase) {
    const delta = await thinDelta(reads, entries, oid, thinBase);
    if (delta) chunk = writer.addDeflatedRefDelta(thinBase, delta.length, deflateDelta(delta));
  }
  if (!chunk && form && !form.delta) chunk = writer.addDeflatedObject(form.type, form.inflatedBytes, form.deflated);
  if (!chunk) {
    const object = batch.bodies.get(index) ?? (await reads.getObject(oid));
    if (!object) throw new Error(`object ${oidToHex(oid)} vanished while packing`);
    chunk = writer.addDeflatedObject(object.type, object.body.length, deflateInline(object.body));
    // Rebuilt whole because its delta's base is not sent (a shallow cut) is what any later pack does too.
    if (!form) entries.unformed = true;
  }
  offsets[index] = chunk.offset;
  return chunk.bytes;
}
