/**
 * Reads a zip as written, field by field (local headers, central directory, zip64 records and the
 * end record), so tests can compare Treehouse's archives with git's entry by entry.
 */
import { inflateRawSync } from 'node:zlib';

export interface ZipRecord {
  name: string;
  local: { version: number; flags: number; method: number; time: number; date: number; crc: number; compressedSize: number; size: number; extra: string };
  central: {
    creator: number;
    version: number;
    flags: number;
    method: number;
    time: number;
    date: number;
    crc: number;
    compressedSize: number;
    size: number;
    extra: string;
    internal: number;
    external: number;
    offset: number;
  };
  content: Buffer;
}

export interface ZipFile {
  records: ZipRecord[];
  comment: string;
  zip64: boolean;
}

export function readZip(zip: Buffer): ZipFile {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('no end record');
  let entries = zip.readUInt16LE(end + 10);
  let directoryStart = zip.readUInt32LE(end + 16);
  const comment = zip.toString('latin1', end + 22, end + 22 + zip.readUInt16LE(end + 20));
  const locator = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x06, 0x07]), end);
  const zip64 = locator >= 0 && locator === end - 20;
  if (zip64) {
    const record = Number(zip.readBigUInt64LE(locator + 8));
    entries = Number(zip.readBigUInt64LE(record + 32));
    directoryStart = Number(zip.readBigUInt64LE(record + 48));
  }
  const records: ZipRecord[] = [];
  let at = directoryStart;
  for (let i = 0; i < entries; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central header at ${at}`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const central = {
      creator: zip.readUInt16LE(at + 4),
      version: zip.readUInt16LE(at + 6),
      flags: zip.readUInt16LE(at + 8),
      method: zip.readUInt16LE(at + 10),
      time: zip.readUInt16LE(at + 12),
      date: zip.readUInt16LE(at + 14),
      crc: zip.readUInt32LE(at + 16),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      extra: zip.toString('hex', at + 46 + nameLength, at + 46 + nameLength + extraLength),
      internal: zip.readUInt16LE(at + 36),
      external: zip.readUInt32LE(at + 38),
      offset: zip.readUInt32LE(at + 42),
    };
    at += 46 + nameLength + extraLength + commentLength;
    const l = central.offset;
    if (zip.readUInt32LE(l) !== 0x04034b50) throw new Error(`bad local header at ${l}`);
    const localNameLength = zip.readUInt16LE(l + 26);
    const localExtraLength = zip.readUInt16LE(l + 28);
    const local = {
      version: zip.readUInt16LE(l + 4),
      flags: zip.readUInt16LE(l + 6),
      method: zip.readUInt16LE(l + 8),
      time: zip.readUInt16LE(l + 10),
      date: zip.readUInt16LE(l + 12),
      crc: zip.readUInt32LE(l + 14),
      compressedSize: zip.readUInt32LE(l + 18),
      size: zip.readUInt32LE(l + 22),
      extra: zip.toString('hex', l + 30 + localNameLength, l + 30 + localNameLength + localExtraLength),
    };
    const dataStart = l + 30 + localNameLength + localExtraLength;
    const data = zip.subarray(dataStart, dataStart + central.compressedSize);
    records.push({ name, local, central, content: central.method === 8 ? inflateRawSync(data) : Buffer.from(data) });
  }
  return { records, comment, zip64 };
}
