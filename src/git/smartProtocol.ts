/**
 * Requests and responses of git's pack protocols over smart HTTP, as pure functions over pkt-lines:
 * - Documentation/gitprotocol-http.txt: the "# service=" preamble of info/refs.
 * - Documentation/gitprotocol-pack.txt: protocol v0/v1 reference advertisement, upload-pack
 *   want/have/shallow/deepen/done negotiation, receive-pack commands and report-status.
 * - Documentation/gitprotocol-v2.txt: capability advertisement, ls-refs, fetch.
 * - Documentation/gitprotocol-capabilities.txt: capability names.
 * Nothing here reads storage: the server (src/repo, src/http) decides what to send.
 */
import { FilterSpecError, parseObjectFilter, type ObjectFilter } from './objectFilter.js';
import { isOidHex, oidFromHex, type Oid } from './oid.js';
import { encodeFlush, encodePktLine, pktLineText, PktLineError, type PktLine } from './pktline.js';

export const ZERO_OID_HEX = '0'.repeat(40);
export const AGENT = 'treehouse/0.1';
/** A client may send this many `have` lines in one request; more is refused as endless negotiation. */
export const HAVES_PER_REQUEST_MAX = 100_000;
/** Likewise for `want` and `shallow` lines. */
export const WANTS_PER_REQUEST_MAX = 100_000;
/** `deepen-not` lines in one request; each names a ref, and a project has few. */
export const DEEPEN_NOT_PER_REQUEST_MAX = 1_000;
/** Longest ref name a `deepen-not` line may carry (git's refs are paths; 4096 is PATH_MAX). */
export const DEEPEN_NOT_NAME_BYTES_MAX = 4096;
/**
 * git's INFINITE_DEPTH (0x7fffffff, shallow.h): `fetch --unshallow` sends `deepen 2147483647`,
 * which upload-pack answers by unshallowing every shallow commit of the client. It is also the
 * largest depth: git parses the value into an int.
 */
export const INFINITE_DEPTH = 0x7fffffff;

export const UPLOAD_PACK_CAPABILITIES_V0 = [
  'multi_ack_detailed',
  'side-band-64k',
  'thin-pack',
  'ofs-delta',
  'shallow',
  'deepen-since',
  'deepen-not',
  'deepen-relative',
  'no-progress',
  'include-tag',
  'filter',
  'object-format=sha1',
  `agent=${AGENT}`,
];

export const RECEIVE_PACK_CAPABILITIES = ['report-status', 'delete-refs', 'side-band-64k', 'quiet', 'atomic', 'ofs-delta', 'push-options', 'object-format=sha1', `agent=${AGENT}`];

export const UPLOAD_PACK_CAPABILITIES_V2 = [`agent=${AGENT}`, 'ls-refs=unborn', 'fetch=shallow wait-for-done filter', 'server-option', 'object-format=sha1'];

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

export type Service = 'git-upload-pack' | 'git-receive-pack';

export interface AdvertisedRef {
  name: string;
  oid: Oid;
}

/** The smart-HTTP preamble: `# service=<name>` and a flush. */
export function servicePreamble(service: Service): Buffer[] {
  return [encodePktLine(`# service=${service}\n`), encodeFlush()];
}

/** v0 advertisement: HEAD (when it resolves) first with the capabilities, then every ref. */
export function encodeRefAdvertisement(refs: AdvertisedRef[], head: { oid: Oid; target: string } | null, capabilities: string[]): Buffer[] {
  const lines: Array<[string, string]> = [];
  if (head) lines.push([head.oid.toString('hex'), 'HEAD']);
  for (const ref of refs) lines.push([ref.oid.toString('hex'), ref.name]);
  const caps = head ? [...capabilities, `symref=HEAD:${head.target}`] : capabilities;
  const out: Buffer[] = [];
  if (lines.length === 0) {
    out.push(encodePktLine(`${ZERO_OID_HEX} capabilities^{}\0${caps.join(' ')}\n`));
  } else {
    lines.forEach(([hex, name], index) => {
      out.push(encodePktLine(index === 0 ? `${hex} ${name}\0${caps.join(' ')}\n` : `${hex} ${name}\n`));
    });
  }
  out.push(encodeFlush());
  return out;
}

export function encodeV2Advertisement(): Buffer[] {
  return [encodePktLine('version 2\n'), ...UPLOAD_PACK_CAPABILITIES_V2.map((cap) => encodePktLine(`${cap}\n`)), encodeFlush()];
}

function parseOid(text: string, what: string): Oid {
  if (!isOidHex(text)) throw new ProtocolError(`malformed object id in ${what}: ${JSON.stringify(text.slice(0, 60))}`);
  return oidFromHex(text);
}

function parseDepth(text: string): number {
  const depth = Number(text);
  if (!/^\d{1,10}$/.test(text) || depth < 1 || depth > INFINITE_DEPTH) throw new ProtocolError(`invalid deepen value ${JSON.stringify(text.slice(0, 40))}`);
  return depth;
}

/**
 * `deepen-since <seconds>`: a commit time. 0 is taken, as git 2.39's upload-pack takes it (and
 * `git clone --shallow-since=1970-01-01` sends it): every commit is at or after it, so the whole
 * history comes, with no shallow commit.
 */
function parseSince(text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new ProtocolError(`invalid deepen-since value ${JSON.stringify(text.slice(0, 40))}`);
  return Number(text);
}

export interface FetchRequest {
  wants: Oid[];
  haves: Oid[];
  /** Commits the client has without their parents (its shallow boundary). */
  clientShallows: Oid[];
  /** `deepen <n>`: history n commits deep from the wants (INFINITE_DEPTH: all of it). */
  depth: number | null;
  /** `deepen-relative`: the depth counts from the client's shallow boundary, not from the wants. */
  deepenRelative: boolean;
  /** `deepen-since <time>`: history back to commits made at or after this time (seconds). */
  deepenSince: number | null;
  /** `deepen-not <ref>`: history down to, and without, the commits reachable from these refs. */
  deepenNot: string[];
  /** `filter <spec>`: the trees and blobs a partial clone leaves out (src/git/objectFilter.ts). */
  filter: ObjectFilter | null;
  done: boolean;
  /** v0: the request went past the wants' flush (a have block or done); else it only asked for the shallow list. */
  negotiates: boolean;
  capabilities: Set<string>;
}

function emptyFetch(): FetchRequest {
  return {
    wants: [],
    haves: [],
    clientShallows: [],
    depth: null,
    deepenRelative: false,
    deepenSince: null,
    deepenNot: [],
    filter: null,
    done: false,
    negotiates: true,
    capabilities: new Set(),
  };
}

/** Whether the client asked for a new shallow boundary (then the answer carries a shallow list). */
export function deepens(request: FetchRequest): boolean {
  return request.depth !== null || request.deepenSince !== null || request.deepenNot.length > 0;
}

/** The checks upload-pack makes once the whole request is read. */
function checkDeepen(request: FetchRequest): void {
  if (request.depth !== null && (request.deepenSince !== null || request.deepenNot.length > 0)) {
    throw new ProtocolError('deepen and deepen-since (or deepen-not) cannot be used together');
  }
}

function addLine(request: FetchRequest, line: string): boolean {
  const space = line.indexOf(' ');
  const word = space < 0 ? line : line.slice(0, space);
  const rest = space < 0 ? '' : line.slice(space + 1);
  switch (word) {
    case 'want':
      if (request.wants.length >= WANTS_PER_REQUEST_MAX) throw new ProtocolError('too many wants');
      request.wants.push(parseOid(rest, 'want'));
      return true;
    case 'have':
      if (request.haves.length >= HAVES_PER_REQUEST_MAX) throw new ProtocolError('too many haves in one request');
      request.haves.push(parseOid(rest, 'have'));
      return true;
    case 'shallow':
      if (request.clientShallows.length >= WANTS_PER_REQUEST_MAX) throw new ProtocolError('too many shallow lines');
      request.clientShallows.push(parseOid(rest, 'shallow'));
      return true;
    case 'deepen':
      request.depth = parseDepth(rest);
      return true;
    case 'deepen-since':
      request.deepenSince = parseSince(rest);
      return true;
    case 'deepen-not':
      if (request.deepenNot.length >= DEEPEN_NOT_PER_REQUEST_MAX) throw new ProtocolError('too many deepen-not lines');
      if (rest.length === 0 || Buffer.byteLength(rest) > DEEPEN_NOT_NAME_BYTES_MAX) throw new ProtocolError('invalid deepen-not ref name');
      request.deepenNot.push(rest);
      return true;
    case 'filter':
      // As git: one spec per request (upload-pack dies on a second).
      if (request.filter) throw new ProtocolError('multiple filter-specs cannot be combined');
      try {
        request.filter = parseObjectFilter(rest);
      } catch (error) {
        if (error instanceof FilterSpecError) throw new ProtocolError(error.message);
        throw error;
      }
      return true;
    case 'done':
      request.done = true;
      return true;
    default:
      return false;
  }
}

/** A v0 upload-pack request: wants (capabilities on the first), shallows, deepen, flush, haves, done. */
export function parseUploadRequestV0(packets: PktLine[]): FetchRequest {
  const request = emptyFetch();
  let first = true;
  let flushes = 0;
  for (const packet of packets) {
    if (packet.kind === 'flush') flushes++;
    if (packet.kind !== 'data') continue;
    let line = pktLineText(packet.payload);
    if (first && line.startsWith('want ')) {
      // The first want carries the capabilities after the id: "want <oid> cap1 cap2".
      const parts = line.split(' ');
      line = `want ${parts[1] ?? ''}`;
      for (const cap of parts.slice(2)) if (cap) request.capabilities.add(cap);
      first = false;
    }
    if (!addLine(request, line)) throw new ProtocolError(`unexpected line in upload-pack request: ${JSON.stringify(line.slice(0, 80))}`);
  }
  if (request.wants.length === 0) throw new ProtocolError('no wants in request');
  // v0 asks for a relative depth with a capability on the first want; v2 with an argument.
  request.deepenRelative = request.capabilities.has('deepen-relative');
  checkDeepen(request);
  request.negotiates = flushes > 1 || request.haves.length > 0 || request.done;
  return request;
}

export interface V2Command {
  command: string;
  capabilities: string[];
  args: string[];
}

/** A v2 request: "command=<name>", capability lines, a delim, argument lines, a flush. */
export function parseV2Command(packets: PktLine[]): V2Command {
  let index = 0;
  const first = packets[index];
  if (!first || first.kind !== 'data') throw new ProtocolError('v2 request does not start with a command');
  const commandLine = pktLineText(first.payload);
  if (!commandLine.startsWith('command=')) throw new ProtocolError(`expected command=, got ${JSON.stringify(commandLine.slice(0, 40))}`);
  index++;
  const capabilities: string[] = [];
  while (index < packets.length && packets[index].kind === 'data') {
    capabilities.push(pktLineText((packets[index] as { payload: Buffer }).payload));
    index++;
  }
  const args: string[] = [];
  if (packets[index]?.kind === 'delim') {
    index++;
    while (index < packets.length && packets[index].kind === 'data') {
      args.push(pktLineText((packets[index] as { payload: Buffer }).payload));
      index++;
    }
  }
  if (packets[index]?.kind !== 'flush') throw new ProtocolError('v2 request not terminated by a flush');
  return { command: commandLine.slice('command='.length), capabilities, args };
}

export interface LsRefsArgs {
  symrefs: boolean;
  peel: boolean;
  unborn: boolean;
  prefixes: string[];
}

export function parseLsRefsArgs(args: string[]): LsRefsArgs {
  const parsed: LsRefsArgs = { symrefs: false, peel: false, unborn: false, prefixes: [] };
  for (const arg of args) {
    if (arg === 'symrefs') parsed.symrefs = true;
    else if (arg === 'peel') parsed.peel = true;
    else if (arg === 'unborn') parsed.unborn = true;
    else if (arg.startsWith('ref-prefix ')) parsed.prefixes.push(arg.slice('ref-prefix '.length));
    else throw new ProtocolError(`unknown ls-refs argument ${JSON.stringify(arg.slice(0, 40))}`);
  }
  return parsed;
}

// Not `sideband-all`: it is not advertised, so as git's upload-pack (without uploadpack.allowSidebandAll)
// a request naming it is refused rather than answered in a framing the client did not ask for.
const V2_FETCH_FLAGS = new Set(['thin-pack', 'no-progress', 'include-tag', 'ofs-delta', 'deepen-relative', 'wait-for-done']);

export function parseV2FetchArgs(args: string[]): FetchRequest {
  const request = emptyFetch();
  for (const arg of args) {
    if (V2_FETCH_FLAGS.has(arg)) {
      request.capabilities.add(arg);
      continue;
    }
    if (!addLine(request, arg)) throw new ProtocolError(`unsupported fetch argument ${JSON.stringify(arg.slice(0, 40))}`);
  }
  request.deepenRelative = request.capabilities.has('deepen-relative');
  checkDeepen(request);
  return request;
}

export function encodeLsRefs(refs: AdvertisedRef[], head: { oid: Oid; target: string } | null, args: LsRefsArgs): Buffer[] {
  const matches = (name: string) => args.prefixes.length === 0 || args.prefixes.some((prefix) => name.startsWith(prefix));
  const out: Buffer[] = [];
  if (head && matches('HEAD')) {
    out.push(encodePktLine(`${head.oid.toString('hex')} HEAD${args.symrefs ? ` symref-target:${head.target}` : ''}\n`));
  }
  for (const ref of refs) if (matches(ref.name)) out.push(encodePktLine(`${ref.oid.toString('hex')} ${ref.name}\n`));
  out.push(encodeFlush());
  return out;
}

export interface RefUpdateCommand {
  old: Oid | null;
  new: Oid | null;
  ref: string;
}

export interface PushRequest {
  commands: RefUpdateCommand[];
  /** `shallow <oid>` lines: send-pack of a shallow repository names its shallow commits. */
  shallow: Oid[];
  capabilities: Set<string>;
  /**
   * `git push -o <option>`, sent after the commands when the client asked for `push-options`:
   * accepted and not acted on, as by a git server whose hooks ignore them.
   */
  options: string[];
  /** Offset in the body where the pack starts (after the flush that ends the commands, or the options). */
  packOffset: number;
}

/** Push options one push may carry; git sets no bound, so ours keeps a hostile push's list small. */
export const PUSH_OPTIONS_MAX = 100;
/** Bytes one push option may have. */
export const PUSH_OPTION_BYTES_MAX = 1024;

/**
 * Receive-pack commands: `shallow <oid>` lines from a shallow client, then "<old> <new> <ref>"
 * lines (capabilities after NUL on the first), a flush; with `push-options`, option lines and a flush.
 */
export function parsePushCommands(body: Buffer, decodeAt: (bytes: Buffer, offset: number) => { packet: PktLine; next: number } | null): PushRequest {
  const request: PushRequest = { commands: [], shallow: [], capabilities: new Set(), options: [], packOffset: 0 };
  let offset = 0;
  const next = (what: string) => {
    let decoded;
    try {
      decoded = decodeAt(body, offset);
    } catch (error) {
      throw new ProtocolError((error as PktLineError).message);
    }
    if (!decoded) throw new ProtocolError(`${what} are truncated`);
    offset = decoded.next;
    return decoded;
  };
  for (;;) {
    const decoded = next('push commands');
    if (decoded.packet.kind === 'flush') break;
    if (decoded.packet.kind !== 'data') throw new ProtocolError('unexpected special packet in push commands');
    let line = pktLineText(decoded.packet.payload);
    const nul = line.indexOf('\0');
    if (nul >= 0) {
      for (const cap of line.slice(nul + 1).split(' ')) if (cap) request.capabilities.add(cap);
      line = line.slice(0, nul);
    }
    if (line.startsWith('shallow ')) {
      if (request.shallow.length >= WANTS_PER_REQUEST_MAX) throw new ProtocolError('too many shallow lines');
      request.shallow.push(parseOid(line.slice('shallow '.length), 'shallow'));
      continue;
    }
    const [oldHex, newHex, ref, extra] = line.split(' ');
    if (!oldHex || !newHex || !ref || extra !== undefined) throw new ProtocolError(`malformed push command ${JSON.stringify(line.slice(0, 100))}`);
    if (request.commands.length >= WANTS_PER_REQUEST_MAX) throw new ProtocolError('too many push commands');
    request.commands.push({
      old: oldHex === ZERO_OID_HEX ? null : parseOid(oldHex, 'push command'),
      new: newHex === ZERO_OID_HEX ? null : parseOid(newHex, 'push command'),
      ref,
    });
  }
  // As git's receive-pack (read_push_options): a block of its own, only after commands.
  if (request.capabilities.has('push-options') && request.commands.length > 0) {
    for (;;) {
      const decoded = next('push options');
      if (decoded.packet.kind === 'flush') break;
      if (decoded.packet.kind !== 'data') throw new ProtocolError('unexpected special packet in push options');
      if (request.options.length >= PUSH_OPTIONS_MAX) throw new ProtocolError(`too many push options (at most ${PUSH_OPTIONS_MAX})`);
      if (decoded.packet.payload.length > PUSH_OPTION_BYTES_MAX) throw new ProtocolError(`a push option is longer than ${PUSH_OPTION_BYTES_MAX} bytes`);
      request.options.push(pktLineText(decoded.packet.payload));
    }
  }
  request.packOffset = offset;
  return request;
}

export type RefResult = { ref: string; ok: true } | { ref: string; ok: false; reason: string };

export function encodeReportStatus(unpackError: string | null, results: RefResult[]): Buffer[] {
  const out = [encodePktLine(`unpack ${unpackError ?? 'ok'}\n`)];
  for (const result of results) {
    out.push(encodePktLine(result.ok ? `ok ${result.ref}\n` : `ng ${result.ref} ${result.reason.replace(/\n/g, ' ')}\n`));
  }
  out.push(encodeFlush());
  return out;
}

