/**
 * Commit objects (Documentation/gitformat-loose.txt; git's commit.c): headers
 * "tree", "parent"*, "author", "committer", then any others (encoding, gpgsig, mergetag, ...),
 * a blank line, and the message. A header value continues on following lines that start with
 * one space. Unknown headers are kept in order so a decode/encode round trip is byte-identical.
 */
import { oidFromHex, oidToHex, type Oid } from './oid.js';
import { hasLoneSurrogate } from './pathBytes.js';

export interface Signature {
  name: string;
  email: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** As written by git: "+0100", "-0530". Kept as text so odd zones round-trip. */
  timezone: string;
}

export interface Commit {
  tree: Oid;
  parents: Oid[];
  author: Signature;
  committer: Signature;
  /** Headers after committer, in order; multi-line values use '\n' between lines. */
  extraHeaders: Array<[string, string]>;
  message: string;
}

export class CommitFormatError extends Error {
  override name = 'CommitFormatError';
}

const SIGNATURE_PATTERN = /^(.*) <(.*)> (\d+) ([+-]\d{4})$/s;
const TIMEZONE_PATTERN = /^[+-]\d{4}$/;

/**
 * Why `text` cannot be the name or the email of an ident line, or null. git's fsck_ident() reads
 * "name <email>" up to the first "<" or ">" and the line up to "\n", so any of those inside either
 * field makes a commit `git fsck --strict` refuses (badName, badEmail, missingSpaceBeforeEmail…),
 * and NUL is nulInCommit. A lone surrogate would be written as U+FFFD: not what was given.
 */
export function identFieldProblem(text: string): string | null {
  if (/[<>\n]/.test(text)) return 'must not contain "<", ">" or a line break (git ident rules)';
  if (text.includes('\0')) return 'must not contain NUL';
  if (hasLoneSurrogate(text)) return 'is not valid Unicode (it holds a lone surrogate)';
  return null;
}

/** `text` with what identFieldProblem refuses removed (as git strips such "crud" from names it is given). */
export function identFieldSanitised(text: string): string {
  return text.replace(/[<>\n\0]/g, '').replace(/\p{Cs}/gu, '\ufffd');
}

export function formatSignature(signature: Signature): string {
  return `${signature.name} <${signature.email}> ${signature.timestamp} ${signature.timezone}`;
}

export function parseSignature(text: string): Signature {
  const match = SIGNATURE_PATTERN.exec(text);
  if (!match) throw new CommitFormatError(`malformed signature ${JSON.stringify(text)}`);
  return { name: match[1], email: match[2], timestamp: Number(match[3]), timezone: match[4] };
}

/** Converts minutes east of UTC to git's "+hhmm". */
export function timezoneFromOffsetMinutes(offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const absolute = Math.abs(offsetMinutes);
  const hours = String(Math.floor(absolute / 60)).padStart(2, '0');
  const minutes = String(absolute % 60).padStart(2, '0');
  const zone = `${sign}${hours}${minutes}`;
  if (!TIMEZONE_PATTERN.test(zone)) throw new RangeError(`time zone offset out of range: ${offsetMinutes}`);
  return zone;
}

export function encodeCommit(commit: Commit): Buffer {
  let head = `tree ${oidToHex(commit.tree)}\n`;
  for (const parent of commit.parents) head += `parent ${oidToHex(parent)}\n`;
  head += `author ${formatSignature(commit.author)}\n`;
  head += `committer ${formatSignature(commit.committer)}\n`;
  for (const [key, value] of commit.extraHeaders) head += `${key} ${value.replace(/\n/g, '\n ')}\n`;
  return Buffer.from(`${head}\n${commit.message}`, 'utf8');
}

/** Splits "key value\n( continuation\n)*" headers up to the blank line. */
export function parseHeaders(text: string): { headers: Array<[string, string]>; message: string } {
  const headers: Array<[string, string]> = [];
  let offset = 0;
  while (offset < text.length) {
    const end = text.indexOf('\n', offset);
    if (end < 0) throw new CommitFormatError('headers not terminated by a blank line');
    if (end === offset) return { headers, message: text.slice(end + 1) };
    const line = text.slice(offset, end);
    if (line.startsWith(' ')) {
      if (headers.length === 0) throw new CommitFormatError('continuation line before any header');
      headers[headers.length - 1][1] += `\n${line.slice(1)}`;
    } else {
      const space = line.indexOf(' ');
      if (space <= 0) throw new CommitFormatError(`malformed header line ${JSON.stringify(line)}`);
      headers.push([line.slice(0, space), line.slice(space + 1)]);
    }
    offset = end + 1;
  }
  // A commit may end right after its headers with no message separator.
  return { headers, message: '' };
}

export function decodeCommit(body: Buffer): Commit {
  const { headers, message } = parseHeaders(body.toString('utf8'));
  const tree = oidFromHexChecked(headerValue(headers, 0, 'tree'));
  let index = 1;
  const parents: Oid[] = [];
  for (; headers[index]?.[0] === 'parent'; index++) parents.push(oidFromHexChecked(headers[index][1]));
  const author = parseSignature(headerValue(headers, index, 'author'));
  const committer = parseSignature(headerValue(headers, index + 1, 'committer'));
  return { tree, parents, author, committer, extraHeaders: headers.slice(index + 2), message };
}

const TREE_PREFIX = Buffer.from('tree ', 'latin1');
const PARENT_PREFIX = Buffer.from('parent ', 'latin1');
const HEX_ID_CHARS = 40;

/**
 * A commit's tree and parents, as decodeCommit gives them, read off the bytes of the header lines
 * they take (walks of thousands of commits need no more; decoding the signatures cost them most of
 * their time). Lines other than decodeCommit expects there (up to the author line) are left to
 * decodeCommit, errors included; the signatures and the rest are not read, so this is for commits
 * fsck checks or checked.
 */
export function commitLinks(body: Buffer): { tree: Oid; parents: Oid[] } {
  let at = idLineEnd(body, 0, TREE_PREFIX);
  if (at < 0) return decodeCommit(body);
  const tree = Buffer.from(body.toString('latin1', TREE_PREFIX.length, TREE_PREFIX.length + HEX_ID_CHARS), 'hex');
  const parents: Oid[] = [];
  for (let next = idLineEnd(body, at, PARENT_PREFIX); next >= 0; next = idLineEnd(body, at, PARENT_PREFIX)) {
    parents.push(Buffer.from(body.toString('latin1', at + PARENT_PREFIX.length, at + PARENT_PREFIX.length + HEX_ID_CHARS), 'hex'));
    at = next;
  }
  // The author line comes next; anything else (a parent line that is not one exactly): decodeCommit says what is wrong.
  if (!body.subarray(at, at + AUTHOR_PREFIX.length).equals(AUTHOR_PREFIX)) return decodeCommit(body);
  return { tree, parents };
}

const AUTHOR_PREFIX = Buffer.from('author ', 'latin1');

/** The end of a line `prefix` + 40 lowercase hex digits + newline starting at `at`, or -1. */
function idLineEnd(body: Buffer, at: number, prefix: Buffer): number {
  const end = at + prefix.length + HEX_ID_CHARS;
  if (end >= body.length || body[end] !== 0x0a) return -1;
  for (let i = 0; i < prefix.length; i++) if (body[at + i] !== prefix[i]) return -1;
  for (let i = at + prefix.length; i < end; i++) {
    const c = body[i];
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return -1;
  }
  return end + 1;
}

function headerValue(headers: Array<[string, string]>, index: number, key: string): string {
  const header = headers[index];
  if (!header || header[0] !== key) throw new CommitFormatError(`expected header "${key}"`);
  return header[1];
}

function oidFromHexChecked(hex: string): Oid {
  try {
    return oidFromHex(hex);
  } catch {
    throw new CommitFormatError(`malformed object id ${JSON.stringify(hex)}`);
  }
}
