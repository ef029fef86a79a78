/**
 * File names are bytes in git (a tree entry's name is any bytes but NUL and "/"), and strings here.
 * This module is the one place where the two meet, and the mapping is lossless both ways:
 *
 * - bytes that are valid UTF-8 decode as usual;
 * - every byte that is not part of a valid UTF-8 sequence decodes to the lone surrogate
 *   U+DC00 + byte (U+DC80..U+DCFF), as Python's "surrogateescape" error handler does.
 *
 * Valid UTF-8 never decodes to a lone surrogate (encoded surrogates, ED A0..BF xx, are not valid
 * UTF-8 and are escaped byte by byte), so no two byte strings decode to the same string, and
 * encoding a decoded string gives back the exact bytes. A string holding a lone surrogate outside
 * U+DC80..U+DCFF, or any lone surrogate that a client sent us, is not a name we made: encodePath
 * refuses the first, and the API refuses the second (src/http/apiPath.ts) before it gets here.
 *
 * JavaScript compares strings by UTF-16 code units, which is byte order only for text without
 * surrogates; comparePathBytes gives git's byte order for any of these strings.
 */
import { isUtf8 } from 'node:buffer';

/** The first escape: byte 0x80 decodes to U+DC80, byte 0xFF to U+DCFF. */
const ESCAPE_BASE = 0xdc00;
const ESCAPE_FIRST = 0xdc80;
const ESCAPE_LAST = 0xdcff;
const REPLACEMENT_CHARACTER = '\ufffd';
const ASCII_END = 0x80;
/** A surrogate code unit that is not half of a pair (with the u flag, pairs are one code point). */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;
/** Any surrogate code unit, paired or not: where UTF-16 order and byte order may differ. */
const ANY_SURROGATE = /[\ud800-\udfff]/;

/** The string a name's bytes stand for: UTF-8 where valid, each other byte as U+DC00 + byte. */
export function decodePath(bytes: Buffer, start = 0, end = bytes.length): string {
  const text = bytes.toString('utf8', start, end);
  // Node's decoder writes U+FFFD for every invalid sequence; a literal U+FFFD is valid UTF-8.
  if (!text.includes(REPLACEMENT_CHARACTER) || isUtf8(bytes.subarray(start, end))) return text;
  return decodeWithEscapes(bytes, start, end);
}

function decodeWithEscapes(bytes: Buffer, start: number, end: number): string {
  let out = '';
  let runStart = start;
  let at = start;
  while (at < end) {
    const length = utf8SequenceLength(bytes, at, end);
    if (length > 0) {
      at += length;
      continue;
    }
    out += bytes.toString('utf8', runStart, at) + String.fromCharCode(ESCAPE_BASE + bytes[at]);
    at++;
    runStart = at;
  }
  return out + bytes.toString('utf8', runStart, end);
}

/**
 * The length of the well-formed UTF-8 sequence at `at` (The Unicode Standard, table 3-7: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0 when the byte there starts none.
 */
function utf8SequenceLength(bytes: Buffer, at: number, end: number): number {
  const lead = bytes[at];
  if (lead < ASCII_END) return 1;
  const continuation = (offset: number, low = 0x80, high = 0xbf) => at + offset < end && bytes[at + offset] >= low && bytes[at + offset] <= high;
  if (lead >= 0xc2 && lead <= 0xdf) return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    const low = lead === 0xe0 ? 0xa0 : 0x80;
    const high = lead === 0xed ? 0x9f : 0xbf;
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const low = lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xf4 ? 0x8f : 0xbf;
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

/** The bytes a decoded name stands for. Throws on a lone surrogate that is not an escape. */
export function encodePath(path: string): Buffer {
  if (!LONE_SURROGATE.test(path)) return Buffer.from(path, 'utf8');
  const parts: Buffer[] = [];
  let run = '';
  for (const character of path) {
    const code = character.codePointAt(0)!;
    if (code >= ESCAPE_FIRST && code <= ESCAPE_LAST) {
      parts.push(Buffer.from(run, 'utf8'), Buffer.of(code - ESCAPE_BASE));
      run = '';
    } else if (code >= 0xd800 && code <= 0xdfff) {
      throw new RangeError(`name holds a lone surrogate U+${code.toString(16).toUpperCase()} that stands for no byte`);
    } else {
      run += character;
    }
  }
  parts.push(Buffer.from(run, 'utf8'));
  return Buffer.concat(parts);
}

export function pathByteLength(path: string): number {
  return LONE_SURROGATE.test(path) ? encodePath(path).length : Buffer.byteLength(path, 'utf8');
}

/** True when the name's bytes are valid UTF-8 (the string holds no escape). */
export function isUtf8Path(path: string): boolean {
  return !LONE_SURROGATE.test(path);
}

/** True when every lone surrogate in the string is an escape (it stands for bytes, so encodePath takes it). */
export function isEncodablePath(path: string): boolean {
  if (!LONE_SURROGATE.test(path)) return true;
  for (const character of path) {
    const code = character.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff && (code < ESCAPE_FIRST || code > ESCAPE_LAST)) return false;
  }
  return true;
}

/** True when a string from outside (a JSON request) holds a lone surrogate: it names no bytes. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** The name for display: each byte that is not UTF-8 shown as U+FFFD (lossy; never a key). */
export function displayPath(path: string): string {
  return LONE_SURROGATE.test(path) ? path.replace(LONE_SURROGATES, REPLACEMENT_CHARACTER) : path;
}

/** git's order of two names or paths: by their bytes. */
export function comparePathBytes(a: string, b: string): number {
  if (!ANY_SURROGATE.test(a) && !ANY_SURROGATE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(encodePath(a), encodePath(b));
}

/** A string whose UTF-16 order is the byte order of the name: the name itself when ASCII, else its bytes as latin1. */
export function byteOrderKey(path: string): string {
  return /^[\x00-\x7f]*$/.test(path) ? path : encodePath(path).toString('latin1');
}
