/**
 * git's config syntax as git 2.39's config.c reads a blob (git_config_from_mem(), the way fsck
 * reads .gitmodules): git_parse_source(), get_base_var(), get_extended_base_var(), get_value(),
 * parse_value() and get_next_char(), step for step, so that every variable git would see is seen
 * here, in the same order, and parsing stops where git's does.
 *
 * Two quirks of reading from memory are kept on purpose, because fsck's verdict depends on them:
 * bytes come from a `const char *`, which is signed on the platforms git is built for, so byte
 * 0xFF reads as EOF (and the BOM is never recognised: 0xEF compares as -17), and the variable and
 * value reach the callback as C strings, cut at the first NUL.
 */

/** One variable as git's parser hands it to a config callback. */
export interface ConfigVariable {
  /** "section.subsection.key": section and key lower-cased, as git gives them. */
  name: Buffer;
  /** Null for a bare key ("[core] bare" means true). */
  value: Buffer | null;
}

const EOF = -1;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const TAB = 0x09;
const SPACE = 0x20;
const QUOTE = 0x22;
const HASH = 0x23;
const DOT = 0x2e;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const BRACKET_OPEN = 0x5b;
const BACKSLASH = 0x5c;
const BRACKET_CLOSE = 0x5d;
const DASH = 0x2d;
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/** git's sane_ctype: only these are spaces (not \v or \f). */
const isSpace = (c: number) => c === SPACE || c === TAB || c === NEWLINE || c === CARRIAGE_RETURN;
const isAlpha = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isKeyChar = (c: number) => isAlpha(c) || isDigit(c) || c === DASH;
const toLower = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 0x20 : c & 0xff);

class Source {
  private at = 0;
  eof = false;

  constructor(private readonly bytes: Uint8Array) {}

  /** config_buf_fgetc(): the next byte as a signed char, or EOF. */
  private fgetc(): number {
    if (this.at >= this.bytes.length) return EOF;
    const byte = this.bytes[this.at++];
    return byte >= 0x80 ? byte - 0x100 : byte;
  }

  private ungetc(): void {
    if (this.at > 0) this.at--;
  }

  /** get_next_char(): CRLF as LF, EOF as a final LF that sets the eof flag (which stays set). */
  next(): number {
    let c = this.fgetc();
    if (c === CARRIAGE_RETURN) {
      c = this.fgetc();
      if (c !== NEWLINE) {
        if (c !== EOF) this.ungetc();
        c = CARRIAGE_RETURN;
      }
    }
    if (c === EOF) {
      this.eof = true;
      c = NEWLINE;
    }
    return c;
  }
}

/** Bytes collected like a strbuf: strbuf_addch() stores (char)c. */
class Bytes {
  readonly out: number[] = [];
  add(c: number): void {
    this.out.push(c & 0xff);
  }
  get length(): number {
    return this.out.length;
  }
  /** The bytes up to the first NUL: what a callback taking `const char *` sees. */
  cString(): Buffer {
    const nul = this.out.indexOf(0);
    return Buffer.from(nul < 0 ? this.out : this.out.slice(0, nul));
  }
}

/**
 * The variables of a config blob in the order git's parser reports them, and whether it parsed
 * to the end (`ok: false` is git's "bad config line"; the variables before it were reported).
 */
export function parseGitConfig(bytes: Uint8Array): { variables: ConfigVariable[]; ok: boolean } {
  const source = new Source(bytes);
  const variables: ConfigVariable[] = [];
  let comment = false;
  let stem: number[] = [];
  let bom = 0;
  let bomChecked = false;
  for (;;) {
    const c = source.next();
    if (!bomChecked) {
      if (bom < UTF8_BOM.length && c === (UTF8_BOM[bom] & 0xff)) {
        bom++;
        continue;
      }
      // A partial BOM is an error; a whole one is skipped (from memory, neither happens: see above).
      if (bom !== 0 && bom < UTF8_BOM.length) break;
      bomChecked = true;
    }
    if (c === NEWLINE) {
      if (source.eof) return { variables, ok: true };
      comment = false;
      continue;
    }
    if (comment) continue;
    if (isSpace(c)) continue;
    if (c === HASH || c === SEMICOLON) {
      comment = true;
      continue;
    }
    if (c === BRACKET_OPEN) {
      const name = new Bytes();
      if (!baseVariable(source, name) || name.length < 1) break;
      name.add(DOT);
      stem = name.out;
      continue;
    }
    if (!isAlpha(c)) break;
    const name = new Bytes();
    for (const byte of stem) name.add(byte);
    name.add(toLower(c));
    const variable = valueOf(source, name);
    if (!variable) break;
    variables.push(variable);
  }
  return { variables, ok: false };
}

/** get_base_var(): "[section]", "[section.sub]" or, after a space, `[section "subsection"]`. */
function baseVariable(source: Source, name: Bytes): boolean {
  for (;;) {
    const c = source.next();
    if (source.eof) return false;
    if (c === BRACKET_CLOSE) return true;
    if (isSpace(c)) return extendedBaseVariable(source, name, c);
    if (!isKeyChar(c) && c !== DOT) return false;
    name.add(toLower(c));
  }
}

/** get_extended_base_var(): the quoted subsection, kept as written (backslash takes the next byte). */
function extendedBaseVariable(source: Source, name: Bytes, first: number): boolean {
  let c = first;
  do {
    if (c === NEWLINE) return false;
    c = source.next();
  } while (isSpace(c));
  if (c !== QUOTE) return false;
  name.add(DOT);
  for (;;) {
    let d = source.next();
    if (d === NEWLINE) return false;
    if (d === QUOTE) break;
    if (d === BACKSLASH) {
      d = source.next();
      if (d === NEWLINE) return false;
    }
    name.add(d);
  }
  return source.next() === BRACKET_CLOSE;
}

/** get_value(): the rest of the key, then nothing (a bare key) or "=" and a value. */
function valueOf(source: Source, name: Bytes): ConfigVariable | null {
  let c: number;
  for (;;) {
    c = source.next();
    if (source.eof) break;
    if (!isKeyChar(c)) break;
    name.add(toLower(c));
  }
  while (c === SPACE || c === TAB) c = source.next();
  let value: Buffer | null = null;
  if (c !== NEWLINE) {
    if (c !== EQUALS) return null;
    value = parseValue(source);
    if (!value) return null;
  }
  return { name: name.cString(), value };
}

/** parse_value(): quotes, escapes (\t \b \n \\ \"), comments and the spaces git keeps or drops. */
function parseValue(source: Source): Buffer | null {
  const value = new Bytes();
  let quote = false;
  let comment = false;
  let spaces = 0;
  for (;;) {
    let c = source.next();
    if (c === NEWLINE) return quote ? null : value.cString();
    if (comment) continue;
    if (isSpace(c) && !quote) {
      if (value.length > 0) spaces++;
      continue;
    }
    if (!quote && (c === SEMICOLON || c === HASH)) {
      comment = true;
      continue;
    }
    for (; spaces > 0; spaces--) value.add(SPACE);
    if (c === BACKSLASH) {
      c = source.next();
      if (c === NEWLINE) continue;
      else if (c === 0x74) c = TAB;
      else if (c === 0x62) c = 0x08;
      else if (c === 0x6e) c = NEWLINE;
      else if (c !== BACKSLASH && c !== QUOTE) return null;
      value.add(c);
      continue;
    }
    if (c === QUOTE) {
      quote = !quote;
      continue;
    }
    value.add(c);
  }
}
