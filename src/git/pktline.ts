/**
 * pkt-line framing (Documentation/gitprotocol-common.txt, "pkt-line Format"), the special
 * packets of protocol v2 (Documentation/gitprotocol-v2.txt: delim-pkt "0001" and
 * response-end-pkt "0002"), and side-band-64k multiplexing (Documentation/gitprotocol-pack.txt,
 * "Packfile Data").
 *
 * A pkt-line is a 4-digit hexadecimal length that counts itself, then that many bytes less four
 * of payload. "0000" (flush), "0001" (delim) and "0002" (response end) carry no payload; "0003"
 * is meaningless and refused, as is any length over LARGE_PACKET_MAX. Everything here is pure:
 * bytes in, packets out.
 */

/** The length prefix: four hexadecimal digits. */
export const PKT_LENGTH_BYTES = 4;
/** git's LARGE_PACKET_MAX: the longest pkt-line, length prefix included. */
export const PKT_LINE_BYTES_MAX = 65520;
/** The longest payload of a data pkt-line (65520 less the 4-byte prefix). */
export const PKT_PAYLOAD_BYTES_MAX = PKT_LINE_BYTES_MAX - PKT_LENGTH_BYTES;

/** Length values of the special packets. */
export const FLUSH_PKT_LENGTH = 0;
export const DELIM_PKT_LENGTH = 1;
export const RESPONSE_END_PKT_LENGTH = 2;
/** The smallest length of a data packet: the prefix alone, an empty payload ("0004"). */
export const DATA_PKT_LENGTH_MIN = PKT_LENGTH_BYTES;

export const FLUSH_PKT = Buffer.from('0000', 'latin1');
export const DELIM_PKT = Buffer.from('0001', 'latin1');
export const RESPONSE_END_PKT = Buffer.from('0002', 'latin1');

/** Side-band channels: 1 carries pack data, 2 progress text, 3 a fatal error message. */
export const SIDEBAND_DATA = 1;
export const SIDEBAND_PROGRESS = 2;
export const SIDEBAND_ERROR = 3;
export type SidebandChannel = typeof SIDEBAND_DATA | typeof SIDEBAND_PROGRESS | typeof SIDEBAND_ERROR;
/** One byte of every side-band payload names the channel. */
export const SIDEBAND_CHANNEL_BYTES = 1;
/** side-band-64k: the most data one packet carries (65520 - 4 length bytes - 1 channel byte). */
export const SIDEBAND_64K_DATA_BYTES_MAX = PKT_PAYLOAD_BYTES_MAX - SIDEBAND_CHANNEL_BYTES;
/** Old side-band (without -64k): packets of at most 1000 bytes, so 995 data bytes. */
export const SIDEBAND_DATA_BYTES_MAX = 1000 - PKT_LENGTH_BYTES - SIDEBAND_CHANNEL_BYTES;

const LINE_FEED = 0x0a;

export type PktLine =
  | { kind: 'data'; payload: Buffer }
  | { kind: 'flush' }
  | { kind: 'delim' }
  | { kind: 'response-end' };

export class PktLineError extends Error {
  override name = 'PktLineError';
}

/** Encodes one data pkt-line. Strings are written as UTF-8. */
export function encodePktLine(payload: Uint8Array | string): Buffer {
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  if (bytes.length > PKT_PAYLOAD_BYTES_MAX) {
    throw new PktLineError(`pkt-line payload of ${bytes.length} bytes is over ${PKT_PAYLOAD_BYTES_MAX}`);
  }
  const out = Buffer.allocUnsafe(PKT_LENGTH_BYTES + bytes.length);
  writeLength(out, PKT_LENGTH_BYTES + bytes.length);
  out.set(bytes, PKT_LENGTH_BYTES);
  return out;
}

/** Encodes a text line, adding the trailing LF the protocol asks for when it is missing. */
export function encodePktText(text: string): Buffer {
  return encodePktLine(text.endsWith('\n') ? text : `${text}\n`);
}

export function encodeFlush(): Buffer {
  return Buffer.from(FLUSH_PKT);
}

export function encodeDelim(): Buffer {
  return Buffer.from(DELIM_PKT);
}

export function encodeResponseEnd(): Buffer {
  return Buffer.from(RESPONSE_END_PKT);
}

/** Encodes any packet, the inverse of the decoders below. */
export function encodePacket(packet: PktLine): Buffer {
  switch (packet.kind) {
    case 'data':
      return encodePktLine(packet.payload);
    case 'flush':
      return encodeFlush();
    case 'delim':
      return encodeDelim();
    case 'response-end':
      return encodeResponseEnd();
  }
}

/** The payload as text with one trailing LF removed (receivers must accept it with or without). */
export function pktLineText(payload: Buffer): string {
  const end = payload.length > 0 && payload[payload.length - 1] === LINE_FEED ? payload.length - 1 : payload.length;
  return payload.toString('utf8', 0, end);
}

function writeLength(out: Buffer, length: number): void {
  out.write(length.toString(16).padStart(PKT_LENGTH_BYTES, '0'), 0, PKT_LENGTH_BYTES, 'latin1');
}

function hexDigitValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30; // '0'..'9'
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10; // 'a'..'f'
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10; // 'A'..'F', as git's hexval() accepts
  return -1;
}

/** Reads and checks the 4-digit length at `offset` (the caller ensures four bytes are there). */
function readLength(bytes: Uint8Array, offset: number): number {
  let length = 0;
  for (let i = 0; i < PKT_LENGTH_BYTES; i++) {
    const digit = hexDigitValue(bytes[offset + i]);
    if (digit < 0) {
      const shown = Buffer.from(bytes.subarray(offset, offset + PKT_LENGTH_BYTES)).toString('latin1');
      throw new PktLineError(`pkt-line length is not hexadecimal: ${JSON.stringify(shown)}`);
    }
    length = length * 16 + digit;
  }
  if (length > RESPONSE_END_PKT_LENGTH && length < DATA_PKT_LENGTH_MIN) {
    throw new PktLineError(`invalid pkt-line length ${length}`);
  }
  if (length > PKT_LINE_BYTES_MAX) {
    throw new PktLineError(`pkt-line length ${length} is over ${PKT_LINE_BYTES_MAX}`);
  }
  return length;
}

/**
 * Decodes the packet at `offset` when it is complete. Returns the packet and the offset after it,
 * or null when more bytes are needed. Throws PktLineError on a malformed length.
 */
export function decodePktLineAt(bytes: Buffer, offset: number): { packet: PktLine; next: number } | null {
  if (bytes.length - offset < PKT_LENGTH_BYTES) return null;
  const length = readLength(bytes, offset);
  if (length === FLUSH_PKT_LENGTH) return { packet: { kind: 'flush' }, next: offset + PKT_LENGTH_BYTES };
  if (length === DELIM_PKT_LENGTH) return { packet: { kind: 'delim' }, next: offset + PKT_LENGTH_BYTES };
  if (length === RESPONSE_END_PKT_LENGTH) return { packet: { kind: 'response-end' }, next: offset + PKT_LENGTH_BYTES };
  if (bytes.length - offset < length) return null;
  return { packet: { kind: 'data', payload: bytes.subarray(offset + PKT_LENGTH_BYTES, offset + length) }, next: offset + length };
}

/**
 * Decodes every complete packet of `bytes`. An incomplete packet at the end is left alone and
 * `bytesConsumed` says where it starts, so a caller can keep the rest for the next read.
 * Payloads are views into `bytes`, not copies.
 */
export function parsePktLines(bytes: Buffer): { packets: PktLine[]; bytesConsumed: number } {
  const packets: PktLine[] = [];
  let offset = 0;
  for (;;) {
    const decoded = decodePktLineAt(bytes, offset);
    if (!decoded) return { packets, bytesConsumed: offset };
    packets.push(decoded.packet);
    offset = decoded.next;
  }
}

/** Decodes a complete message; leftover bytes (a truncated packet) are an error. */
export function decodePktLines(bytes: Buffer): PktLine[] {
  const { packets, bytesConsumed } = parsePktLines(bytes);
  if (bytesConsumed !== bytes.length) {
    throw new PktLineError(`truncated pkt-line stream: ${bytes.length - bytesConsumed} bytes after the last packet`);
  }
  return packets;
}

/**
 * Incremental decoder for a stream that arrives in chunks of any size. Chunks are kept as they
 * come and joined only when a packet straddles them, so each byte is copied about once however
 * small the chunks are. Pushed chunks are kept by reference, so a caller must not reuse them
 * (node streams never do). Returned payloads are copies and do not pin the chunks.
 */
export class PktLineReader {
  private readonly chunks: Buffer[] = [];
  /** Read position inside chunks[0]. */
  private offset = 0;
  private buffered = 0;
  private ended = false;

  push(chunk: Uint8Array): void {
    if (this.ended) throw new PktLineError('pkt-line reader received data after end()');
    if (chunk.length === 0) return;
    this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
    this.buffered += chunk.length;
  }

  /** The next complete packet, or undefined when more input is needed. */
  read(): PktLine | undefined {
    if (this.buffered < PKT_LENGTH_BYTES) return undefined;
    this.makeContiguous(PKT_LENGTH_BYTES);
    const length = readLength(this.chunks[0], this.offset);
    if (length < DATA_PKT_LENGTH_MIN) {
      this.consume(PKT_LENGTH_BYTES);
      if (length === FLUSH_PKT_LENGTH) return { kind: 'flush' };
      return length === DELIM_PKT_LENGTH ? { kind: 'delim' } : { kind: 'response-end' };
    }
    if (this.buffered < length) return undefined;
    this.makeContiguous(length);
    const payload = Buffer.from(this.chunks[0].subarray(this.offset + PKT_LENGTH_BYTES, this.offset + length));
    this.consume(length);
    return { kind: 'data', payload };
  }

  /** Every packet available now. */
  readAll(): PktLine[] {
    const packets: PktLine[] = [];
    for (let packet = this.read(); packet; packet = this.read()) packets.push(packet);
    return packets;
  }

  /** Bytes received but not yet returned as packets. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /**
   * Bytes after the packets read so far, handed over raw; used when a pkt-line section is
   * followed by unframed data (a pack after the commands of a push).
   */
  takeRemainder(): Buffer {
    const rest = Buffer.concat([this.chunks[0]?.subarray(this.offset) ?? Buffer.alloc(0), ...this.chunks.slice(1)]);
    this.chunks.length = 0;
    this.offset = 0;
    this.buffered = 0;
    return rest;
  }

  /** Declares the stream finished: anything still buffered is a truncated packet. */
  end(): void {
    this.ended = true;
    if (this.buffered === 0) return;
    const unread = this.read();
    throw new PktLineError(
      unread ? 'pkt-line stream ended with unread packets' : `truncated pkt-line stream: ${this.buffered} bytes of an incomplete packet`,
    );
  }

  /** Joins the buffered chunks when the first one holds fewer than `bytes` unread bytes. */
  private makeContiguous(bytes: number): void {
    if (this.chunks[0].length - this.offset >= bytes) return;
    const joined = Buffer.concat([this.chunks[0].subarray(this.offset), ...this.chunks.slice(1)]);
    this.chunks.length = 0;
    this.chunks.push(joined);
    this.offset = 0;
  }

  private consume(bytes: number): void {
    this.offset += bytes;
    this.buffered -= bytes;
    if (this.offset === this.chunks[0].length) {
      this.chunks.shift();
      this.offset = 0;
    }
  }
}

/**
 * encodeSideband over data given in pieces (`totalBytes` in all), as one buffer: the pieces are
 * copied once, straight into their packets.
 */
export function encodeSidebandPieces(channel: SidebandChannel, pieces: readonly Uint8Array[], totalBytes: number, dataBytesMax: number = SIDEBAND_64K_DATA_BYTES_MAX): Buffer {
  if (!Number.isInteger(dataBytesMax) || dataBytesMax < 1 || dataBytesMax > SIDEBAND_64K_DATA_BYTES_MAX) {
    throw new PktLineError(`side-band packet data limit must be 1..${SIDEBAND_64K_DATA_BYTES_MAX}`);
  }
  const framing = PKT_LENGTH_BYTES + SIDEBAND_CHANNEL_BYTES;
  const packets = Math.ceil(totalBytes / dataBytesMax);
  const out = Buffer.allocUnsafe(totalBytes + packets * framing);
  let at = 0;
  let dataDone = 0;
  let packetLeft = 0;
  for (const piece of pieces) {
    let from = 0;
    while (from < piece.length) {
      if (packetLeft === 0) {
        const dataBytes = Math.min(dataBytesMax, totalBytes - dataDone);
        out.write((framing + dataBytes).toString(16).padStart(PKT_LENGTH_BYTES, '0'), at, PKT_LENGTH_BYTES, 'latin1');
        out[at + PKT_LENGTH_BYTES] = channel;
        at += framing;
        packetLeft = dataBytes;
      }
      const take = Math.min(packetLeft, piece.length - from);
      out.set(piece.subarray(from, from + take), at);
      at += take;
      from += take;
      dataDone += take;
      packetLeft -= take;
    }
  }
  if (at !== out.length) throw new PktLineError(`side-band pieces hold ${at} bytes with framing, not ${out.length}`);
  return out;
}

/**
 * Frames `data` for one side-band channel, splitting it into as many packets as needed.
 * `dataBytesMax` defaults to side-band-64k; pass SIDEBAND_DATA_BYTES_MAX for old side-band.
 */
export function encodeSideband(
  channel: SidebandChannel,
  data: Uint8Array | string,
  dataBytesMax: number = SIDEBAND_64K_DATA_BYTES_MAX,
): Buffer[] {
  if (channel !== SIDEBAND_DATA && channel !== SIDEBAND_PROGRESS && channel !== SIDEBAND_ERROR) {
    throw new PktLineError(`unknown side-band channel ${String(channel)}`);
  }
  if (!Number.isInteger(dataBytesMax) || dataBytesMax < 1 || dataBytesMax > SIDEBAND_64K_DATA_BYTES_MAX) {
    throw new PktLineError(`side-band packet data limit must be 1..${SIDEBAND_64K_DATA_BYTES_MAX}`);
  }
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const packets: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += dataBytesMax) {
    const piece = bytes.subarray(start, Math.min(bytes.length, start + dataBytesMax));
    const out = Buffer.allocUnsafe(PKT_LENGTH_BYTES + SIDEBAND_CHANNEL_BYTES + piece.length);
    writeLength(out, out.length);
    out[PKT_LENGTH_BYTES] = channel;
    out.set(piece, PKT_LENGTH_BYTES + SIDEBAND_CHANNEL_BYTES);
    packets.push(out);
  }
  return packets;
}

/** Splits a side-band data packet's payload into its channel and data. */
export function decodeSideband(payload: Buffer): { channel: SidebandChannel; data: Buffer } {
  if (payload.length < SIDEBAND_CHANNEL_BYTES) throw new PktLineError('side-band packet has no channel byte');
  const channel = payload[0];
  if (channel !== SIDEBAND_DATA && channel !== SIDEBAND_PROGRESS && channel !== SIDEBAND_ERROR) {
    throw new PktLineError(`unknown side-band channel ${channel}`);
  }
  return { channel, data: payload.subarray(SIDEBAND_CHANNEL_BYTES) };
}
