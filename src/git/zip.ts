/**
 * Zip as `git archive --format=zip` writes it (git's archive-zip.c; PKWARE APPNOTE.TXT): per entry
 * a local header, the name, git's "extended timestamp" extra field (0x5455, the archive time), and
 * the data, deflated (raw, zlib level 6) when that is smaller, else stored; then the central
 * directory (a Unix "version made by" and the mode for symlinks and executables, the text flag from
 * git's binary test), zip64 records when sizes, offsets or the entry count pass the classic limits,
 * and the end record whose comment is the commit id. Entries are written as they come; only the
 * central directory (some 60 bytes plus the name per entry, copied into chunks of its own) is kept
 * until the end.
 */
import { crc32, deflateRawSync } from 'node:zlib';

const LOCAL_HEADER_MAGIC = 0x04034b50;
const CENTRAL_HEADER_MAGIC = 0x02014b50;
const END_MAGIC = 0x06054b50;
const ZIP64_END_MAGIC = 0x06064b50;
const ZIP64_LOCATOR_MAGIC = 0x07064b50;
const EXTRA_MTIME_TAG = 0x5455;
const EXTRA_ZIP64_TAG = 0x0001;
const METHOD_STORE = 0;
const METHOD_DEFLATE = 8;
const FLAG_UTF8 = 1 << 11;
/** git's creator_version for entries with Unix attributes: made by Unix (3), spec 2.3. */
const CREATOR_UNIX = 0x0317;
const VERSION_NEEDED = 10;
const VERSION_NEEDED_ZIP64 = 45;
const MTIME_EXTRA_BYTES = 9;
const ZIP64_EXTRA_BYTES = 20;
const U32_MAX = 0xffffffff;
const U16_MAX = 0xffff;
/** Attribute for a directory in MS-DOS terms. */
const DOS_DIRECTORY = 16;
/** git's FIRST_FEW_BYTES: a NUL within them makes content binary. */
const BINARY_PROBE_BYTES = 8000;
const ZIP64_END_RECORD_BYTES = 44;
/** The central directory is written in chunks of this size. */
const DIRECTORY_CHUNK_BYTES = 64 * 1024;

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

export interface ZipEntry {
  /** Path in the archive, prefix included, UTF-8; a directory's ends with "/". */
  path: Buffer;
  mode: number;
  content: Buffer;
}

/**
 * The archive time as an MS-DOS date and time; git uses local time, Treehouse UTC. Years before
 * 1980 wrap around in 16 bits, as git's copy_le16() lets them.
 */
export function dosDateTime(unixSeconds: number): { date: number; time: number } {
  const at = new Date(unixSeconds * 1000);
  return {
    date: (at.getUTCDate() + (at.getUTCMonth() + 1) * 32 + (at.getUTCFullYear() - 1980) * 512) & 0xffff,
    time: (Math.floor(at.getUTCSeconds() / 2) + at.getUTCMinutes() * 32 + at.getUTCHours() * 2048) & 0xffff,
  };
}

/** Writes entries one by one and keeps the central directory for finish(). */
export class ZipWriter {
  private offset = 0;
  private entries = 0;
  private maxCreatorVersion = 0;
  /** The central directory's full chunks, then `chunk`, filled up to `chunkUsed`. */
  private readonly directory: Buffer[] = [];
  private chunk = Buffer.alloc(0);
  private chunkUsed = 0;
  private directoryBytes = 0;
  private readonly dos: { date: number; time: number };

  constructor(
    private readonly mtime: number,
    private readonly commitHex: string | null,
  ) {
    this.dos = dosDateTime(mtime);
  }

  /** The bytes of one entry: local header, name, extra fields and data. */
  add(entry: ZipEntry): Buffer[] {
    const { path, mode } = entry;
    let flags = 0;
    if (!isAscii(path)) flags |= FLAG_UTF8;
    if (path.length > U16_MAX) throw new RangeError('zip entry path is longer than 65535 bytes');
    let method = METHOD_STORE;
    let externalAttributes = 0;
    let creatorVersion = 0;
    let data: Buffer = Buffer.alloc(0);
    let size = 0;
    let crc = 0;
    let text = 0;
    if ((mode & S_IFMT) === S_IFDIR) {
      externalAttributes = DOS_DIRECTORY;
    } else {
      const isLink = (mode & S_IFMT) === S_IFLNK;
      externalAttributes = isLink ? ((mode | 0o777) * 0x10000) >>> 0 : mode & 0o111 ? (mode * 0x10000) >>> 0 : 0;
      if (isLink || mode & 0o111) creatorVersion = CREATOR_UNIX;
      size = entry.content.length;
      crc = crc32(entry.content);
      text = isBinary(entry.content) ? 0 : 1;
      data = entry.content;
      if (!isLink && size > 0) {
        const deflated = deflateRawSync(entry.content, { level: 6 });
        if (deflated.length < size) {
          method = METHOD_DEFLATE;
          data = deflated;
        }
      }
    }
    this.maxCreatorVersion = Math.max(this.maxCreatorVersion, creatorVersion);
    const compressedSize = data.length;
    const zip64 = size > U32_MAX || compressedSize > U32_MAX;
    const versionNeeded = zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED;
    const extra = this.mtimeExtra();
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOCAL_HEADER_MAGIC, 0);
    local.writeUInt16LE(versionNeeded, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(this.dos.time, 10);
    local.writeUInt16LE(this.dos.date, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(zip64 ? U32_MAX : compressedSize, 18);
    local.writeUInt32LE(zip64 ? U32_MAX : size, 22);
    local.writeUInt16LE(path.length, 26);
    local.writeUInt16LE(MTIME_EXTRA_BYTES + (zip64 ? ZIP64_EXTRA_BYTES : 0), 28);
    const out = [local, path, extra];
    if (zip64) {
      const extra64 = Buffer.alloc(ZIP64_EXTRA_BYTES);
      extra64.writeUInt16LE(EXTRA_ZIP64_TAG, 0);
      extra64.writeUInt16LE(16, 2);
      extra64.writeBigUInt64LE(BigInt(size), 4);
      extra64.writeBigUInt64LE(BigInt(compressedSize), 12);
      out.push(extra64);
    }
    if (compressedSize > 0) out.push(data);
    const entryOffset = this.offset;
    for (const part of out) this.offset += part.length;
    this.addToDirectory({ path, flags, method, crc, compressedSize, size, versionNeeded, creatorVersion, text, externalAttributes, entryOffset, extra });
    return out;
  }

  /** The central directory, zip64 records if needed, and the end record with the commit id. */
  finish(): Buffer {
    const out: Buffer[] = [Buffer.concat([...this.directory, this.chunk.subarray(0, this.chunkUsed)])];
    const directoryStart = this.offset;
    const clamped = this.entries > U16_MAX || directoryStart > U32_MAX;
    if (clamped) {
      const record = Buffer.alloc(56);
      record.writeUInt32LE(ZIP64_END_MAGIC, 0);
      record.writeBigUInt64LE(BigInt(ZIP64_END_RECORD_BYTES), 4);
      record.writeUInt16LE(this.maxCreatorVersion, 12);
      record.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
      record.writeUInt32LE(0, 16);
      record.writeUInt32LE(0, 20);
      record.writeBigUInt64LE(BigInt(this.entries), 24);
      record.writeBigUInt64LE(BigInt(this.entries), 32);
      record.writeBigUInt64LE(BigInt(this.directoryBytes), 40);
      record.writeBigUInt64LE(BigInt(directoryStart), 48);
      const locator = Buffer.alloc(20);
      locator.writeUInt32LE(ZIP64_LOCATOR_MAGIC, 0);
      locator.writeUInt32LE(0, 4);
      locator.writeBigUInt64LE(BigInt(directoryStart + this.directoryBytes), 8);
      locator.writeUInt32LE(1, 16);
      out.push(record, locator);
    }
    const comment = this.commitHex === null ? Buffer.alloc(0) : Buffer.from(this.commitHex, 'latin1');
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END_MAGIC, 0);
    end.writeUInt16LE(Math.min(this.entries, U16_MAX), 8);
    end.writeUInt16LE(Math.min(this.entries, U16_MAX), 10);
    end.writeUInt32LE(this.directoryBytes, 12);
    end.writeUInt32LE(Math.min(directoryStart, U32_MAX), 16);
    end.writeUInt16LE(comment.length, 20);
    out.push(end, comment);
    return Buffer.concat(out);
  }

  /**
   * `bytes` of the central directory to write, in a chunk of its own: the records are copied, not
   * kept as the caller's buffers (a path kept alive would keep the 8 KB pool slab it was cut from,
   * with whatever else was cut from it: hundreds of MB over 100,000 entries).
   */
  private directorySpace(bytes: number): Buffer {
    if (this.chunkUsed + bytes > this.chunk.length) {
      if (this.chunkUsed > 0) this.directory.push(this.chunk.subarray(0, this.chunkUsed));
      this.chunk = Buffer.allocUnsafeSlow(Math.max(DIRECTORY_CHUNK_BYTES, bytes));
      this.chunkUsed = 0;
    }
    const space = this.chunk.subarray(this.chunkUsed, this.chunkUsed + bytes);
    this.chunkUsed += bytes;
    return space;
  }

  private mtimeExtra(): Buffer {
    const extra = Buffer.alloc(MTIME_EXTRA_BYTES);
    extra.writeUInt16LE(EXTRA_MTIME_TAG, 0);
    extra.writeUInt16LE(5, 2);
    extra[4] = 1; // only the modification time
    extra.writeUInt32LE(this.mtime >>> 0, 5);
    return extra;
  }

  private addToDirectory(e: {
    path: Buffer;
    flags: number;
    method: number;
    crc: number;
    compressedSize: number;
    size: number;
    versionNeeded: number;
    creatorVersion: number;
    text: number;
    externalAttributes: number;
    entryOffset: number;
    extra: Buffer;
  }): void {
    const wide: bigint[] = [];
    if (e.compressedSize > U32_MAX || e.size > U32_MAX || e.entryOffset > U32_MAX) {
      // git lists the wide values in this order: size, compressed size, offset.
      if (e.size >= U32_MAX) wide.push(BigInt(e.size));
      if (e.compressedSize >= U32_MAX) wide.push(BigInt(e.compressedSize));
      if (e.entryOffset >= U32_MAX) wide.push(BigInt(e.entryOffset));
    }
    const extraLength = MTIME_EXTRA_BYTES + (wide.length > 0 ? 4 + 8 * wide.length : 0);
    const header = this.directorySpace(46 + e.path.length + extraLength);
    header.writeUInt32LE(CENTRAL_HEADER_MAGIC, 0);
    header.writeUInt16LE(e.creatorVersion, 4);
    header.writeUInt16LE(e.versionNeeded, 6);
    header.writeUInt16LE(e.flags, 8);
    header.writeUInt16LE(e.method, 10);
    header.writeUInt16LE(this.dos.time, 12);
    header.writeUInt16LE(this.dos.date, 14);
    header.writeUInt32LE(e.crc, 16);
    header.writeUInt32LE(Math.min(e.compressedSize, U32_MAX), 20);
    header.writeUInt32LE(Math.min(e.size, U32_MAX), 24);
    header.writeUInt16LE(e.path.length, 28);
    header.writeUInt16LE(extraLength, 30);
    header.writeUInt16LE(0, 32);
    header.writeUInt16LE(0, 34);
    header.writeUInt16LE(e.text, 36);
    header.writeUInt32LE(e.externalAttributes, 38);
    header.writeUInt32LE(Math.min(e.entryOffset, U32_MAX), 42);
    let at = 46 + e.path.copy(header, 46);
    at += e.extra.copy(header, at);
    if (wide.length > 0) {
      header.writeUInt16LE(EXTRA_ZIP64_TAG, at);
      header.writeUInt16LE(8 * wide.length, at + 2);
      wide.forEach((value, i) => header.writeBigUInt64LE(value, at + 4 + 8 * i));
    }
    this.directoryBytes += header.length;
    this.entries++;
  }
}

function isAscii(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] > 0x7f) return false;
  return true;
}

function isBinary(content: Buffer): boolean {
  return content.subarray(0, BINARY_PROBE_BYTES).includes(0);
}
