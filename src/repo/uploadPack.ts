/**
 * Serving fetches and clones: reference advertisements (v0 and v2), negotiation answers, and the
 * pack itself as a lazy stream of pkt-lines, so memory stays bounded by one object whatever the
 * repository's size. Object bodies are deflated as they are sent (or copied when the store keeps a
 * deflated form).
 */
import { deflateSync } from 'node:zlib';
import { oidToHex, type Oid } from '../git/oid.js';
import { PackWriter } from '../git/pack.js';
import { encodeDelim, encodeFlush, encodePktLine, encodeSideband, SIDEBAND_DATA, SIDEBAND_PROGRESS } from '../git/pktline.js';
import { branchRef } from '../git/refname.js';
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
} from '../git/smartProtocol.js';
import type { ProjectReadTx } from '../store/types.js';
import { advertisedTips, checkWants, commonHaves, planPackSteps, planShallow, UploadRequestError, type PackPlan, type ShallowPlan } from './packObjects.js';
import { MAIN_BRANCH, type Repo } from './repo.js';
import { inSlices, projectReads, Slicer } from './slices.js';

/** Objects per progress message on side-band 2. */
const PROGRESS_EVERY_OBJECTS = 10_000;
/** Largest side-band-64k packet payload. */
const SIDEBAND_CHUNK_BYTES = 65_515;
/** Pack bytes gathered per socket write. */
const WRITE_CHUNK_BYTES = 1 << 20;
/** Objects the deflate cache has not reached yet are compressed fast, while the client waits. */
const INLINE_DEFLATE_LEVEL = 1;

function headOf(tx: ProjectReadTx): { oid: Oid; target: string } | null {
  const oid = tx.getRef(branchRef(MAIN_BRANCH));
  return oid ? { oid, target: branchRef(MAIN_BRANCH) } : null;
}

export function advertise(repo: Repo, service: Service, version: 0 | 2): Buffer[] {
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    const preamble = servicePreamble(service);
    if (service === 'git-upload-pack' && version === 2) return [...preamble, ...encodeV2Advertisement()];
    const capabilities = service === 'git-upload-pack' ? UPLOAD_PACK_CAPABILITIES_V0 : RECEIVE_PACK_CAPABILITIES;
    const head = service === 'git-upload-pack' ? headOf(tx) : null;
    return [...preamble, ...encodeRefAdvertisement(advertisedTips(tx), head, capabilities)];
  });
}

export function lsRefs(repo: Repo, command: V2Command): Buffer[] {
  const args = parseLsRefsArgs(command.args);
  return repo.store.read((store) => {
    const tx = store.project(repo.project);
    return encodeLsRefs(advertisedTips(tx), headOf(tx), args);
  });
}

/** Response to a v0 upload-pack request (stateless: every request carries the whole state). */
export async function* uploadPackV0(repo: Repo, request: FetchRequest): AsyncGenerator<Buffer> {
  const sideband = request.capabilities.has('side-band-64k') || request.capabilities.has('side-band');
  const sidebandBytes = request.capabilities.has('side-band-64k') ? SIDEBAND_CHUNK_BYTES : 995;
  const progress = sideband && !request.capabilities.has('no-progress');
  const { plan, shallow, common } = await prepare(repo, request, () => request.negotiates && request.done);
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
  yield* packStream(repo, plan!, sideband ? sidebandBytes : 0, progress);
  if (sideband) yield encodeFlush();
}

/** Response to a v2 fetch command (upload-pack.c upload_pack_v2). */
export async function* fetchV2(repo: Repo, command: V2Command): AsyncGenerator<Buffer> {
  const request = parseV2FetchArgs(command.args);
  if (request.wants.length === 0) throw new ProtocolError('fetch without any want');
  const progress = !request.capabilities.has('no-progress');
  const waitsForDone = request.capabilities.has('wait-for-done');
  const { plan, shallow, common } = await prepare(repo, request, (common) => request.done || request.haves.length === 0 || (common.length > 0 && !waitsForDone));
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
  yield* packStream(repo, plan!, SIDEBAND_CHUNK_BYTES, progress);
  yield encodeFlush();
}

/**
 * Everything a response needs: the shallow lines (answered on every round) and the common haves,
 * from one read transaction, then the objects when `sendsPack` says this answer carries the pack,
 * planned in slices (src/repo/slices.ts) so a clone of a large tree never holds the event loop.
 */
async function prepare(repo: Repo, request: FetchRequest, sendsPack: (common: Oid[]) => boolean): Promise<{ plan: PackPlan | null; shallow: ShallowPlan; common: Oid[] }> {
  try {
    const { shallow, common } = repo.store.read((store) => {
      const tx = store.project(repo.project);
      checkWants(tx, request.wants);
      return { shallow: planShallow(tx, request.wants, request), common: commonHaves(tx, request.haves) };
    });
    const plan = sendsPack(common) ? await inSlices(planPackSteps(projectReads(repo), { wants: request.wants, haves: common, shallow })) : null;
    return { plan, shallow, common };
  } catch (error) {
    if (error instanceof UploadRequestError) throw new ProtocolError(error.message);
    throw error;
  }
}

/** The pack, framed in side-band packets of at most `sidebandBytes` (0: raw pack bytes). */
async function* packStream(repo: Repo, plan: PackPlan, sidebandBytes: number, progress: boolean): AsyncGenerator<Buffer> {
  const writer = new PackWriter(plan.objects.length);
  const slicer = new Slicer();
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Large writes: one socket write per megabyte or so, not one per object.
  function* flush(force: boolean): Generator<Buffer> {
    if (pendingBytes === 0 || (!force && pendingBytes < WRITE_CHUNK_BYTES)) return;
    const bytes = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    yield sidebandBytes === 0 ? bytes : Buffer.concat(encodeSideband(SIDEBAND_DATA, bytes, sidebandBytes));
  }
  const add = (bytes: Buffer) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
  };
  add(writer.start());
  let sent = 0;
  for (const { oid } of plan.objects) {
    add(repo.store.read((store) => packEntry(store.project(repo.project), writer, oid)));
    yield* flush(false);
    sent++;
    if (progress && sidebandBytes > 0 && sent % PROGRESS_EVERY_OBJECTS === 0) {
      yield* encodeSideband(SIDEBAND_PROGRESS, Buffer.from(`Counting objects: ${sent}/${plan.objects.length}\r`), sidebandBytes);
    }
    if (slicer.due) await slicer.pause();
  }
  add(writer.finish());
  yield* flush(true);
}

/** One pack entry: the cached zlib stream when there is one, else the body deflated now. */
function packEntry(tx: ProjectReadTx, writer: PackWriter, oid: Oid): Buffer {
  const packed = tx.peekDeflated(oid);
  // addDeflatedObject copies the bytes before the next read can reuse them.
  if (packed) return writer.addDeflatedObject(packed.type, packed.inflatedBytes, packed.deflated).bytes;
  const object = tx.getObject(oid);
  if (!object) throw new Error(`object ${oidToHex(oid)} vanished while packing`);
  return writer.addDeflatedObject(object.type, object.body.length, deflateSync(object.body, { level: INLINE_DEFLATE_LEVEL })).bytes;
}
