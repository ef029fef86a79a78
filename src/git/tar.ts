/**
 * Tar as `git archive --format=tar` writes it (git's archive-tar.c, POSIX.1-2001 "pax" format):
 * 512-byte ustar headers (owner root:root with ids 0, `tar.umask` 002, the archive time as every
 * mtime), a pax global header first whose comment is the commit id, a pax extended header before an
 * entry whose path or link target does not fit the ustar fields, every record padded to 512 bytes,
 * and output in blocks of 10,240 bytes ending with at least two zero records.
 */
import type { Oid } from './oid.js';

export const TAR_RECORD_BYTES = 512;
/** git writes whole blocks of 20 records (BLOCKSIZE). */
export const TAR_BLOCK_BYTES = TAR_RECORD_BYTES * 20;
/** git's default tar.umask. */
const TAR_UMASK = 0o002;

const NAME_BYTES = 100;
const LINKNAME_BYTES = 100;
const PREFIX_BYTES = 155;
/** Field offsets of struct ustar_header (git's tar.h). */
const FIELD = {
  name: 0,
  mode: 100,
  uid: 108,
  gid: 116,
  size: 124,
  mtime: 136,
  checksum: 148,
  typeflag: 156,
  linkname: 157,
  magic: 257,
  version: 263,
  uname: 265,
  gname: 297,
  devmajor: 329,
  devminor: 337,
  prefix: 345,
} as const;
const CHECKSUM_BYTES = 8;
/** The largest size and mtime 11 octal digits hold; past them git uses pax records. */
const USTAR_NUMBER_MAX = 0o77777777777;

const TYPE_REGULAR = '0';
const TYPE_SYMLINK = '2';
const TYPE_DIRECTORY = '5';
const TYPE_EXTENDED = 'x';
const TYPE_GLOBAL = 'g';

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;

export interface TarEntry {
  /** The path in the archive, prefix included, UTF-8 bytes; a directory's ends with "/". */
  path: Buffer;
  /** git's mode: 040000 (or 040777 for the prefix directory), 100644, 100755, 120000. */
  mode: number;
  /** The object the entry comes from; names the pax header of a long path. */
  oid: Oid;
  /** File content, or a symlink's target. */
  content: Buffer;
}

/** "%u %s=%s\n" whose leading number counts the whole record, itself included. */
export function paxRecord(keyword: string, value: Buffer): Buffer {
  let length = 1 + 1 + Buffer.byteLength(keyword) + 1 + value.length + 1;
  for (let digits = 1; Math.floor(length / 10) >= digits; digits *= 10) length++;
  return Buffer.concat([Buffer.from(`${length} ${keyword}=`, 'latin1'), value, Buffer.from('\n')]);
}

/** prepare_header(): the numeric fields, owner, magic, and the checksum last. */
function header(name: Buffer, typeflag: string, mode: number, size: number, mtime: number): Buffer {
  const block = Buffer.alloc(TAR_RECORD_BYTES);
  name.copy(block, FIELD.name, 0, Math.min(name.length, NAME_BYTES));
  block.write(typeflag, FIELD.typeflag, 'latin1');
  block.write(`${(mode & 0o7777).toString(8).padStart(7, '0')}\0`, FIELD.mode, 'latin1');
  block.write(`${size.toString(8).padStart(11, '0')}\0`, FIELD.size, 'latin1');
  block.write(`${mtime.toString(8).padStart(11, '0')}\0`, FIELD.mtime, 'latin1');
  block.write('0000000\0', FIELD.uid, 'latin1');
  block.write('0000000\0', FIELD.gid, 'latin1');
  block.write('root', FIELD.uname, 'latin1');
  block.write('root', FIELD.gname, 'latin1');
  block.write('0000000\0', FIELD.devmajor, 'latin1');
  block.write('0000000\0', FIELD.devminor, 'latin1');
  block.write('ustar\0', FIELD.magic, 'latin1');
  block.write('00', FIELD.version, 'latin1');
  return block;
}

function sealChecksum(block: Buffer): Buffer {
  // The checksum is the byte sum with its own field read as spaces.
  block.fill(0x20, FIELD.checksum, FIELD.checksum + CHECKSUM_BYTES);
  let sum = 0;
  for (let i = 0; i < TAR_RECORD_BYTES; i++) sum += block[i];
  block.fill(0, FIELD.checksum, FIELD.checksum + CHECKSUM_BYTES);
  block.write(`${sum.toString(8).padStart(7, '0')}\0`, FIELD.checksum, 'latin1');
  return block;
}

/** `data` padded with zeros to whole records. */
function padded(data: Buffer): Buffer {
  const tail = data.length % TAR_RECORD_BYTES;
  return tail === 0 ? data : Buffer.concat([data, Buffer.alloc(TAR_RECORD_BYTES - tail)]);
}

/** The pax global header git writes first: the commit id as comment (nothing without a commit). */
export function tarGlobalHeader(commitHex: string | null, mtime: number): Buffer {
  if (commitHex === null) return Buffer.alloc(0);
  const records = paxRecord('comment', Buffer.from(commitHex, 'latin1'));
  const block = header(Buffer.from('pax_global_header'), TYPE_GLOBAL, 0o100666, records.length, Math.min(mtime, USTAR_NUMBER_MAX));
  return Buffer.concat([sealChecksum(block), padded(records)]);
}

/** get_path_prefix(): where to cut a long path so the tail fits the name field. */
function pathPrefixLength(path: Buffer): number {
  let i = path.length;
  if (i > 1 && path[i - 1] === 0x2f) i--;
  if (i > PREFIX_BYTES) i = PREFIX_BYTES;
  do {
    i--;
  } while (i > 0 && path[i] !== 0x2f);
  return i;
}

/** write_tar_entry(): the headers (a pax one if need be) and the padded content of one entry. */
export function tarEntry(entry: TarEntry, mtime: number): Buffer[] {
  const { path, oid } = entry;
  const hex = oid.toString('hex');
  let mode = entry.mode;
  let typeflag: string;
  if ((mode & S_IFMT) === S_IFDIR) {
    typeflag = TYPE_DIRECTORY;
    mode = (mode | 0o777) & ~TAR_UMASK;
  } else if ((mode & S_IFMT) === S_IFLNK) {
    typeflag = TYPE_SYMLINK;
    mode |= 0o777;
  } else if ((mode & S_IFMT) === S_IFREG) {
    typeflag = TYPE_REGULAR;
    mode = (mode | (mode & 0o100 ? 0o777 : 0o666)) & ~TAR_UMASK;
  } else {
    throw new RangeError(`no tar entry for mode ${mode.toString(8)}`);
  }
  const extended: Buffer[] = [];
  let name: Buffer;
  let prefix: Buffer | null = null;
  if (path.length > NAME_BYTES) {
    const cut = pathPrefixLength(path);
    const rest = path.length - cut - 1;
    if (cut > 0 && rest <= NAME_BYTES) {
      prefix = path.subarray(0, cut);
      name = path.subarray(cut + 1);
    } else {
      name = Buffer.from(`${hex}.data`, 'latin1');
      extended.push(paxRecord('path', path));
    }
  } else {
    name = path;
  }
  let linkname: Buffer | null = null;
  if (typeflag === TYPE_SYMLINK) {
    if (entry.content.length > LINKNAME_BYTES) {
      linkname = Buffer.from(`see ${hex}.paxheader`, 'latin1');
      extended.push(paxRecord('linkpath', entry.content));
    } else {
      linkname = entry.content;
    }
  }
  const isRegular = typeflag === TYPE_REGULAR;
  let size = isRegular ? entry.content.length : 0;
  if (isRegular && size > USTAR_NUMBER_MAX) {
    extended.push(paxRecord('size', Buffer.from(String(size), 'latin1')));
    size = 0;
  }
  const block = header(name, typeflag, mode, size, Math.min(mtime, USTAR_NUMBER_MAX));
  if (prefix) prefix.copy(block, FIELD.prefix);
  if (linkname) linkname.copy(block, FIELD.linkname, 0, Math.min(linkname.length, LINKNAME_BYTES));
  const out: Buffer[] = [];
  if (extended.length > 0) {
    const records = Buffer.concat(extended);
    out.push(sealChecksum(header(Buffer.from(`${hex}.paxheader`, 'latin1'), TYPE_EXTENDED, 0o100666, records.length, Math.min(mtime, USTAR_NUMBER_MAX))), padded(records));
  }
  out.push(sealChecksum(block));
  if (isRegular && entry.content.length > 0) out.push(padded(entry.content));
  return out;
}

/** write_trailer(): zeros to the end of the current block, and a whole block more if that is under two records. */
export function tarTrailer(bytesWritten: number): Buffer {
  const tail = TAR_BLOCK_BYTES - (bytesWritten % TAR_BLOCK_BYTES);
  return Buffer.alloc(tail + (tail < 2 * TAR_RECORD_BYTES ? TAR_BLOCK_BYTES : 0));
}
