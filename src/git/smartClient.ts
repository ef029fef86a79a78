/**
 * The client side of git's pack protocols over smart HTTP, as pure functions over pkt-lines (the
 * server side is src/git/smartProtocol.ts):
 * - Documentation/gitprotocol-http.txt: the info/refs answer, with or without the "# service="
 *   preamble (git http-backend leaves it out when it answers protocol v2).
 * - Documentation/gitprotocol-pack.txt: the v0 reference advertisement, a v0 upload-pack request
 *   that wants and is done at once (no haves), the side-band answer, receive-pack commands and
 *   report-status.
 * - Documentation/gitprotocol-v2.txt: capability advertisement, ls-refs, fetch with `done`.
 * Nothing here does I/O; src/service/gitClient.ts carries these bytes over HTTP.
 */
import { isOidHex, oidFromHex, oidToHex, type Oid } from './oid.js';
import {
  decodePktLines,
  decodeSideband,
  encodeDelim,
  encodeFlush,
  encodePktLine,
  pktLineText,
  PktLineError,
  PktLineReader,
  SIDEBAND_DATA,
  SIDEBAND_ERROR,
  type PktLine,
} from './pktline.js';
import { AGENT, ProtocolError, ZERO_OID_HEX, type RefResult, type Service } from './smartProtocol.js';

/** Refs one advertisement or ls-refs answer may list; more is refused as a hostile server. */
export const REMOTE_REFS_MAX = 1_000_000;
/** Text that shows what a remote said in an error, cut to this many characters. */
const REMOTE_TEXT_SHOWN_MAX = 300;
const PEELED_SUFFIX = '^{}';
const EMPTY_REPOSITORY_REF = 'capabilities^{}';

export interface RemoteRef {
  name: string;
  oid: Oid;
  /** For an annotated tag: the object it finally points to (ls-refs `peeled:`, v0 `^{}` lines). */
  peeled: Oid | null;
  /** For a symbolic ref (HEAD): the ref it points to. */
  symrefTarget: string | null;
}

/** Capabilities as advertised: `name` or `name=value`; a name may repeat (v0 `symref=`). */
export class Capabilities {
  private readonly values = new Map<string, string[]>();

  constructor(words: Iterable<string>) {
    for (const word of words) {
      if (!word) continue;
      const equals = word.indexOf('=');
      const name = equals < 0 ? word : word.slice(0, equals);
      const value = equals < 0 ? '' : word.slice(equals + 1);
      const list = this.values.get(name);
      if (list) list.push(value);
      else this.values.set(name, [value]);
    }
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  /** Every value given for `name` (empty strings for a bare name). */
  all(name: string): string[] {
    return this.values.get(name) ?? [];
  }
}

export type Advertisement =
  | { version: 2; capabilities: Capabilities }
  | { version: 0; refs: RemoteRef[]; capabilities: Capabilities };

function remoteText(text: string): string {
  return text.length > REMOTE_TEXT_SHOWN_MAX ? `${text.slice(0, REMOTE_TEXT_SHOWN_MAX)}…` : text;
}

function parseOid(text: string, what: string): Oid {
  if (!isOidHex(text)) throw new ProtocolError(`malformed object id in ${what}: ${JSON.stringify(remoteText(text))}`);
  return oidFromHex(text.toLowerCase());
}

function decodeAll(bytes: Buffer): PktLine[] {
  try {
    return decodePktLines(bytes);
  } catch (error) {
    if (error instanceof PktLineError) throw new ProtocolError(`malformed answer from the remote: ${error.message}`);
    throw error;
  }
}

/** Throws the remote's own message when a packet is an `ERR` line. */
function throwIfErr(text: string): void {
  if (text.startsWith('ERR ')) throw new ProtocolError(`the remote reported an error: ${remoteText(text.slice(4))}`);
}

/**
 * The answer to GET info/refs?service=…: a v2 capability advertisement or a v0 ref advertisement.
 * The "# service=" preamble and its flush are skipped when present; a "version 1" line too.
 */
export function parseInfoRefs(body: Buffer, service: Service): Advertisement {
  const packets = decodeAll(body);
  let index = 0;
  const textAt = (at: number): string | null => {
    const packet = packets[at];
    return packet?.kind === 'data' ? pktLineText(packet.payload) : null;
  };
  const first = textAt(0);
  if (first !== null && first.startsWith('# service=')) {
    if (first !== `# service=${service}`) throw new ProtocolError(`the remote answered for ${JSON.stringify(remoteText(first.slice(10)))}, not ${service}`);
    if (packets[1]?.kind !== 'flush') throw new ProtocolError('the service line is not followed by a flush');
    index = 2;
  }
  const line = textAt(index);
  if (line !== null) throwIfErr(line);
  if (line === 'version 2') return { version: 2, capabilities: new Capabilities(dataLinesUntilFlush(packets, index + 1, 'capability advertisement')) };
  if (line === 'version 1') index++;
  return { version: 0, ...parseRefAdvertisement(packets, index) };
}

function dataLinesUntilFlush(packets: PktLine[], start: number, what: string): string[] {
  const lines: string[] = [];
  for (let at = start; at < packets.length; at++) {
    const packet = packets[at];
    if (packet.kind === 'flush') return lines;
    if (packet.kind !== 'data') throw new ProtocolError(`unexpected special packet in the ${what}`);
    lines.push(pktLineText(packet.payload));
  }
  throw new ProtocolError(`the ${what} is not terminated by a flush`);
}

/** v0: "<oid> <name>\0<caps>" first, then "<oid> <name>" and "<oid> <name>^{}" lines, a flush. */
function parseRefAdvertisement(packets: PktLine[], start: number): { refs: RemoteRef[]; capabilities: Capabilities } {
  const lines = dataLinesUntilFlush(packets, start, 'reference advertisement');
  const refs: RemoteRef[] = [];
  const byName = new Map<string, RemoteRef>();
  let capabilities = new Capabilities([]);
  lines.forEach((raw, index) => {
    let line = raw;
    if (index === 0) {
      const nul = line.indexOf('\0');
      if (nul >= 0) {
        capabilities = new Capabilities(line.slice(nul + 1).split(' '));
        line = line.slice(0, nul);
      }
    }
    throwIfErr(line);
    if (line.startsWith('shallow ')) return;
    const space = line.indexOf(' ');
    if (space < 0) throw new ProtocolError(`malformed advertisement line ${JSON.stringify(remoteText(line))}`);
    const hex = line.slice(0, space);
    const name = line.slice(space + 1);
    if (name === EMPTY_REPOSITORY_REF && hex === ZERO_OID_HEX) return;
    const oid = parseOid(hex, 'the reference advertisement');
    if (name.endsWith(PEELED_SUFFIX)) {
      const tag = byName.get(name.slice(0, -PEELED_SUFFIX.length));
      if (tag) tag.peeled = oid;
      return;
    }
    if (refs.length >= REMOTE_REFS_MAX) throw new ProtocolError('the remote advertises too many refs');
    const ref: RemoteRef = { name, oid, peeled: null, symrefTarget: null };
    refs.push(ref);
    byName.set(name, ref);
  });
  for (const symref of capabilities.all('symref')) {
    const colon = symref.indexOf(':');
    const ref = colon > 0 ? byName.get(symref.slice(0, colon)) : undefined;
    if (ref) ref.symrefTarget = symref.slice(colon + 1);
  }
  return { refs, capabilities };
}

/** The capability lines a v2 command carries: our agent, and the object format when the server names one. */
function v2CommandCapabilities(server: Capabilities): Buffer[] {
  const lines = [encodePktLine(`agent=${AGENT}\n`)];
  if (server.has('object-format')) lines.push(encodePktLine('object-format=sha1\n'));
  return lines;
}

/** v2 `ls-refs` asking for symrefs and peeled tags, limited to the given ref prefixes. */
export function encodeLsRefsRequest(server: Capabilities, prefixes: string[]): Buffer {
  return Buffer.concat([
    encodePktLine('command=ls-refs\n'),
    ...v2CommandCapabilities(server),
    encodeDelim(),
    encodePktLine('symrefs\n'),
    encodePktLine('peel\n'),
    ...prefixes.map((prefix) => encodePktLine(`ref-prefix ${prefix}\n`)),
    encodeFlush(),
  ]);
}

/** "<oid> <name>[ symref-target:<ref>][ peeled:<oid>]" lines and a flush. */
export function parseLsRefsResponse(body: Buffer): RemoteRef[] {
  const packets = decodeAll(body);
  const refs: RemoteRef[] = [];
  for (const line of dataLinesUntilFlush(packets, 0, 'ls-refs answer')) {
    throwIfErr(line);
    const [hex, name, ...attributes] = line.split(' ');
    if (!hex || !name) throw new ProtocolError(`malformed ls-refs line ${JSON.stringify(remoteText(line))}`);
    if (hex === 'unborn') continue;
    if (refs.length >= REMOTE_REFS_MAX) throw new ProtocolError('the remote lists too many refs');
    const ref: RemoteRef = { name, oid: parseOid(hex, 'the ls-refs answer'), peeled: null, symrefTarget: null };
    for (const attribute of attributes) {
      if (attribute.startsWith('symref-target:')) ref.symrefTarget = attribute.slice('symref-target:'.length);
      else if (attribute.startsWith('peeled:')) ref.peeled = parseOid(attribute.slice('peeled:'.length), 'the ls-refs answer');
    }
    refs.push(ref);
  }
  return refs;
}

/** v2 `fetch` of whole history: the wants and `done` at once, so the server answers with the pack. */
export function encodeFetchV2Request(server: Capabilities, wants: Oid[]): Buffer {
  if (wants.length === 0) throw new ProtocolError('a fetch needs at least one want');
  return Buffer.concat([
    encodePktLine('command=fetch\n'),
    ...v2CommandCapabilities(server),
    encodeDelim(),
    encodePktLine('ofs-delta\n'),
    encodePktLine('no-progress\n'),
    ...wants.map((want) => encodePktLine(`want ${oidToHex(want)}\n`)),
    encodePktLine('done\n'),
    encodeFlush(),
  ]);
}

/** The v0 capabilities we ask for, among those the server offers. */
export function uploadCapabilitiesV0(server: Capabilities): string[] {
  const chosen: string[] = [];
  if (server.has('side-band-64k')) chosen.push('side-band-64k');
  else if (server.has('side-band')) chosen.push('side-band');
  for (const name of ['ofs-delta', 'no-progress']) if (server.has(name)) chosen.push(name);
  if (server.has('object-format')) chosen.push('object-format=sha1');
  chosen.push(`agent=${AGENT}`);
  return chosen;
}

/** v0 upload-pack request: wants (capabilities on the first), a flush, then `done`. */
export function encodeUploadRequestV0(capabilities: string[], wants: Oid[]): Buffer {
  if (wants.length === 0) throw new ProtocolError('a fetch needs at least one want');
  return Buffer.concat([
    ...wants.map((want, index) => encodePktLine(index === 0 ? `want ${oidToHex(want)} ${capabilities.join(' ')}\n` : `want ${oidToHex(want)}\n`)),
    encodeFlush(),
    encodePktLine('done\n'),
  ]);
}

type FetchState = 'preamble' | 'section' | 'pack' | 'raw-pack' | 'done';

/**
 * Reads the answer to a fetch as it arrives and keeps the pack: v0 (NAK or ACK, then the pack in
 * side-band packets or raw) or v2 (sections, the `packfile` one in side-band packets). Progress
 * (channel 2) is dropped; an error on channel 3 or an ERR line throws ProtocolError.
 */
export class FetchResponseReader {
  private readonly reader = new PktLineReader();
  private readonly chunks: Buffer[] = [];
  private packBytes = 0;
  private state: FetchState = 'preamble';

  constructor(
    private readonly version: 0 | 2,
    private readonly sideband: boolean,
    private readonly packBytesMax: number,
  ) {}

  push(chunk: Buffer): void {
    if (this.state === 'raw-pack') return this.addPack(chunk);
    if (this.state === 'done') {
      if (chunk.length > 0) throw new ProtocolError('the remote sent data after the end of the pack');
      return;
    }
    try {
      this.reader.push(chunk);
      for (let packet = this.reader.read(); packet; packet = this.framed() ? this.reader.read() : undefined) this.take(packet);
      if (this.current() === 'raw-pack') this.addPack(this.reader.takeRemainder());
      else if (this.current() === 'done' && this.reader.bufferedBytes > 0) throw new ProtocolError('the remote sent data after the end of the pack');
    } catch (error) {
      if (error instanceof PktLineError) throw new ProtocolError(`malformed answer from the remote: ${error.message}`);
      throw error;
    }
  }

  /** The pack, once the whole answer has arrived. */
  end(): Buffer {
    if (this.state === 'done' || this.state === 'raw-pack') return Buffer.concat(this.chunks, this.packBytes);
    throw new ProtocolError(this.state === 'pack' ? 'the answer ended in the middle of the pack' : 'the answer ended before a pack was sent');
  }

  /** The state, read through a call so the compiler does not narrow it across take(). */
  private current(): FetchState {
    return this.state;
  }

  /** True while the answer is still pkt-lines to read one by one. */
  private framed(): boolean {
    return this.state !== 'raw-pack' && this.state !== 'done';
  }

  private take(packet: PktLine): void {
    if (this.state === 'pack') return this.takeSideband(packet);
    if (packet.kind !== 'data') {
      if (this.version === 2 && packet.kind === 'delim') return;
      throw new ProtocolError(this.version === 2 ? 'the fetch answer has no packfile section' : 'unexpected special packet before the pack');
    }
    const text = pktLineText(packet.payload);
    throwIfErr(text);
    if (this.version === 0) {
      if (text === 'NAK' || text.startsWith('ACK ')) this.state = this.sideband ? 'pack' : 'raw-pack';
      else if (!text.startsWith('shallow ') && !text.startsWith('unshallow ')) throw new ProtocolError(`unexpected line before the pack: ${JSON.stringify(remoteText(text))}`);
      return;
    }
    // v2: section headers and their lines until "packfile"; acknowledgments, shallow-info and
    // wanted-refs carry nothing a fresh full fetch needs.
    if (text === 'packfile') this.state = 'pack';
    else if (text === 'packfile-uris') throw new ProtocolError('the remote sent packfile URIs, which are not supported');
    else this.state = 'section';
  }

  private takeSideband(packet: PktLine): void {
    if (packet.kind === 'flush') {
      this.state = 'done';
      return;
    }
    if (packet.kind !== 'data') throw new ProtocolError('unexpected special packet inside the pack');
    const { channel, data } = decodeSideband(packet.payload);
    if (channel === SIDEBAND_DATA) this.addPack(data);
    else if (channel === SIDEBAND_ERROR) throw new ProtocolError(`the remote reported an error: ${remoteText(data.toString('utf8').trim())}`);
  }

  private addPack(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.packBytes += bytes.length;
    if (this.packBytes > this.packBytesMax) throw new ProtocolError(`the pack is larger than the limit of ${this.packBytesMax} bytes`);
    this.chunks.push(Buffer.from(bytes));
  }
}

export interface PushCommand {
  old: Oid | null;
  new: Oid | null;
  ref: string;
}

/** The receive-pack capabilities we ask for; report-status is required to learn the outcome. */
export function receiveCapabilities(server: Capabilities): string[] {
  if (!server.has('report-status')) throw new ProtocolError('the remote does not offer report-status, so a push result could not be known');
  const chosen = ['report-status'];
  if (server.has('side-band-64k')) chosen.push('side-band-64k');
  if (server.has('quiet')) chosen.push('quiet');
  if (server.has('object-format')) chosen.push('object-format=sha1');
  chosen.push(`agent=${AGENT}`);
  return chosen;
}

/** Push commands ("<old> <new> <ref>", capabilities after NUL on the first) and their flush. */
export function encodePushCommands(commands: PushCommand[], capabilities: string[]): Buffer {
  if (commands.length === 0) throw new ProtocolError('a push needs at least one command');
  const hex = (oid: Oid | null) => (oid === null ? ZERO_OID_HEX : oidToHex(oid));
  return Buffer.concat([
    ...commands.map((command, index) => {
      const line = `${hex(command.old)} ${hex(command.new)} ${command.ref}`;
      return encodePktLine(index === 0 ? `${line}\0${capabilities.join(' ')}\n` : `${line}\n`);
    }),
    encodeFlush(),
  ]);
}

export interface ReportStatus {
  /** "ok", or the remote's reason the pack was not unpacked. */
  unpack: string;
  results: RefResult[];
}

/** report-status ("unpack ok", "ok <ref>" / "ng <ref> <reason>", a flush), inside side-band or not. */
export function parseReportStatus(body: Buffer, sideband: boolean): ReportStatus {
  let inner = body;
  if (sideband) {
    const data: Buffer[] = [];
    for (const packet of decodeAll(body)) {
      if (packet.kind === 'flush') break;
      if (packet.kind !== 'data') throw new ProtocolError('unexpected special packet in the push answer');
      const text = pktLineText(packet.payload);
      if (text.startsWith('ERR ')) throwIfErr(text);
      const { channel, data: bytes } = decodeSideband(packet.payload);
      if (channel === SIDEBAND_DATA) data.push(bytes);
      else if (channel === SIDEBAND_ERROR) throw new ProtocolError(`the remote reported an error: ${remoteText(bytes.toString('utf8').trim())}`);
    }
    inner = Buffer.concat(data);
  }
  const lines = dataLinesUntilFlush(decodeAll(inner), 0, 'report-status');
  const first = lines[0];
  if (first === undefined) throw new ProtocolError('the push answer has no report');
  throwIfErr(first);
  if (!first.startsWith('unpack ')) throw new ProtocolError(`the push report does not start with unpack: ${JSON.stringify(remoteText(first))}`);
  const results: RefResult[] = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith('ok ')) results.push({ ref: line.slice(3), ok: true });
    else if (line.startsWith('ng ')) {
      const rest = line.slice(3);
      const space = rest.indexOf(' ');
      results.push(space < 0 ? { ref: rest, ok: false, reason: 'rejected' } : { ref: rest.slice(0, space), ok: false, reason: remoteText(rest.slice(space + 1)) });
    } else throw new ProtocolError(`unexpected line in the push report: ${JSON.stringify(remoteText(line))}`);
  }
  return { unpack: first.slice('unpack '.length), results };
}
