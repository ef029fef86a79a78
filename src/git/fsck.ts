/**
 * Checks of received objects, after git's fsck.c (`git fsck --strict`, `receive.fsckObjects`):
 * fsck_tree(), fsck_commit(), fsck_tag_standalone() and fsck_ident(), with the message ids and
 * default severities of git's fsck.h (documented in Documentation/fsck-msgids.txt), and the
 * ".git" look-alike rules of is_hfs_dotgit() (utf8.c) and is_ntfs_dotgit() (path.c).
 *
 * Each check returns every problem it finds as data; assertFsckClean() turns the first problem
 * that counts as a failure into an FsckError. Like `git fsck --strict`, warnings count as
 * failures; Treehouse also refuses badFilemode (git only reports it), because it stores no mode
 * besides the five standard ones.
 *
 * Blobs are checked by what trees call them, as git's fsck_finish() does: every entry named
 * .gitmodules (in any spelling HFS+ or NTFS would equate) that is not a symlink must be a blob
 * git's config parser reads without disallowed submodule names, URLs, paths or update commands
 * (fsck_gitmodules_fn()), and every .gitattributes one a blob of lines git can read
 * (gitattributesLineLength). See fsckSpecialBlobs().
 */
import { parseGitConfig } from './gitConfig.js';
import type { ObjectType, Oid } from './oid.js';
import { OID_BYTES, oidToHex } from './oid.js';

/** git's severities: fatal and error always fail; warn fails under --strict; info is reported. */
export type FsckSeverity = 'fatal' | 'error' | 'warn' | 'info' | 'ignore';

/** The message ids used here, in git's camelCase spelling, with git's default severity. */
export const FSCK_SEVERITIES = {
  nulInHeader: 'fatal',
  unterminatedHeader: 'fatal',
  badDate: 'error',
  badDateOverflow: 'error',
  badEmail: 'error',
  badName: 'error',
  badObjectSha1: 'error',
  badParentSha1: 'error',
  badTimezone: 'error',
  badTree: 'error',
  badTreeSha1: 'error',
  badType: 'error',
  duplicateEntries: 'error',
  gitmodulesSymlink: 'error',
  gitmodulesBlob: 'error',
  gitmodulesMissing: 'error',
  gitmodulesLarge: 'error',
  gitmodulesName: 'error',
  gitmodulesUrl: 'error',
  gitmodulesPath: 'error',
  gitmodulesUpdate: 'error',
  gitattributesBlob: 'error',
  gitattributesMissing: 'error',
  gitattributesLarge: 'error',
  gitattributesLineLength: 'error',
  missingAuthor: 'error',
  missingCommitter: 'error',
  missingEmail: 'error',
  missingNameBeforeEmail: 'error',
  missingObject: 'error',
  missingSpaceBeforeDate: 'error',
  missingSpaceBeforeEmail: 'error',
  missingTag: 'error',
  missingTagEntry: 'error',
  missingTree: 'error',
  missingType: 'error',
  missingTypeEntry: 'error',
  multipleAuthors: 'error',
  treeNotSorted: 'error',
  zeroPaddedDate: 'error',
  fullPathname: 'warn',
  hasDot: 'warn',
  hasDotdot: 'warn',
  hasDotgit: 'warn',
  largePathname: 'warn',
  nullSha1: 'warn',
  nulInCommit: 'warn',
  zeroPaddedFilemode: 'warn',
  badFilemode: 'info',
  badTagName: 'info',
  gitmodulesParse: 'info',
  gitattributesSymlink: 'info',
  gitignoreSymlink: 'info',
  mailmapSymlink: 'info',
  missingTaggerEntry: 'info',
  extraHeaderEntry: 'ignore',
} as const satisfies Record<string, FsckSeverity>;

export type FsckMessageId = keyof typeof FSCK_SEVERITIES;

/** Message ids Treehouse refuses although git only reports them. */
const REFUSED_BEYOND_GIT = new Set<FsckMessageId>(['badFilemode']);

/** git's fsck.largePathname default: a tree entry name longer than this is reported. */
export const TREE_ENTRY_NAME_BYTES_MAX = 4096;

export interface FsckProblem {
  id: FsckMessageId;
  severity: FsckSeverity;
  /** "<id>: <text>", as git prints it. */
  message: string;
}

export class FsckError extends Error {
  override name = 'FsckError';
  constructor(
    readonly id: FsckMessageId,
    readonly problems: FsckProblem[],
    message: string,
  ) {
    super(message);
  }
}

function problem(id: FsckMessageId, text: string): FsckProblem {
  return { id, severity: FSCK_SEVERITIES[id], message: `${id}: ${text}` };
}

/** Whether a problem makes Treehouse refuse the object (git --strict, plus REFUSED_BEYOND_GIT). */
export function isFsckFailure(found: FsckProblem): boolean {
  if (REFUSED_BEYOND_GIT.has(found.id)) return true;
  return found.severity === 'fatal' || found.severity === 'error' || found.severity === 'warn';
}

export function fsckObject(type: ObjectType, body: Buffer): FsckProblem[] {
  switch (type) {
    case 'tree':
      return fsckTree(body);
    case 'commit':
      return fsckCommit(body);
    case 'tag':
      return fsckTag(body);
    case 'blob':
      return [];
  }
}

/** Throws FsckError naming the first failing message id. `label` (an id, a path) goes in the message. */
export function assertFsckClean(type: ObjectType, body: Buffer, label: string = type): void {
  const problems = fsckObject(type, body);
  const failure = problems.find(isFsckFailure);
  if (failure) throw new FsckError(failure.id, problems, `error in ${type} ${label}: ${failure.message}`);
}

// ---------------------------------------------------------------------------------------------
// ".git" and its look-alikes on case-insensitive, HFS+ and NTFS file systems

const DOT = 0x2e;
const SPACE = 0x20;
const TAB = 0x09;
const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const TILDE = 0x7e;
const NUL = 0x00;
const LINE_FEED = 0x0a;
const DIGIT_ZERO = 0x30;
const DIGIT_ONE = 0x31;
const DIGIT_FOUR = 0x34;
const DIGIT_SEVEN = 0x37;
const DIGIT_NINE = 0x39;
const ASCII_MAX = 0x7f;
const NON_ASCII_BIT = 0x80;

/** Code points HFS+ ignores in file names (git's next_hfs_char). */
const HFS_IGNORED_CODE_POINTS = new Set([
  0x200c, // ZERO WIDTH NON-JOINER
  0x200d, // ZERO WIDTH JOINER
  0x200e, // LEFT-TO-RIGHT MARK
  0x200f, // RIGHT-TO-LEFT MARK
  0x202a, // LEFT-TO-RIGHT EMBEDDING
  0x202b, // RIGHT-TO-LEFT EMBEDDING
  0x202c, // POP DIRECTIONAL FORMATTING
  0x202d, // LEFT-TO-RIGHT OVERRIDE
  0x202e, // RIGHT-TO-LEFT OVERRIDE
  0x206a, // INHIBIT SYMMETRIC SWAPPING
  0x206b, // ACTIVATE SYMMETRIC SWAPPING
  0x206c, // INHIBIT ARABIC FORM SHAPING
  0x206d, // ACTIVATE ARABIC FORM SHAPING
  0x206e, // NATIONAL DIGIT SHAPES
  0x206f, // NOMINAL DIGIT SHAPES
  0xfeff, // ZERO WIDTH NO-BREAK SPACE
]);

/**
 * Decodes one UTF-8 character at cursor.at with git's pick_one_utf8_char() rules (no overlongs,
 * surrogates, U+FFFE/U+FFFF or values past U+10FFFF). Returns 0 at the end or on invalid input,
 * which then stops the scan, as git does.
 */
function nextUtf8(name: Uint8Array, cursor: { at: number }): number {
  // No closures here: this runs for every byte of every name a push or seed brings.
  const at = cursor.at;
  const b0 = byteAt(name, at);
  let code: number;
  let length: number;
  if (b0 < NON_ASCII_BIT) {
    code = b0;
    length = 1;
  } else if ((b0 & 0xe0) === 0xc0) {
    if ((byteAt(name, at + 1) & 0xc0) !== 0x80 || (b0 & 0xfe) === 0xc0) return stop(name, cursor);
    code = ((b0 & 0x1f) << 6) | (byteAt(name, at + 1) & 0x3f);
    length = 2;
  } else if ((b0 & 0xf0) === 0xe0) {
    if (
      (byteAt(name, at + 1) & 0xc0) !== 0x80 ||
      (byteAt(name, at + 2) & 0xc0) !== 0x80 ||
      (b0 === 0xe0 && (byteAt(name, at + 1) & 0xe0) === 0x80) || // overlong
      (b0 === 0xed && (byteAt(name, at + 1) & 0xe0) === 0xa0) || // surrogate
      (b0 === 0xef && byteAt(name, at + 1) === 0xbf && (byteAt(name, at + 2) & 0xfe) === 0xbe) // U+FFFE, U+FFFF
    ) {
      return stop(name, cursor);
    }
    code = ((b0 & 0x0f) << 12) | ((byteAt(name, at + 1) & 0x3f) << 6) | (byteAt(name, at + 2) & 0x3f);
    length = 3;
  } else if ((b0 & 0xf8) === 0xf0) {
    if (
      (byteAt(name, at + 1) & 0xc0) !== 0x80 ||
      (byteAt(name, at + 2) & 0xc0) !== 0x80 ||
      (byteAt(name, at + 3) & 0xc0) !== 0x80 ||
      (b0 === 0xf0 && (byteAt(name, at + 1) & 0xf0) === 0x80) || // overlong
      (b0 === 0xf4 && byteAt(name, at + 1) > 0x8f) ||
      b0 > 0xf4 // past U+10FFFF
    ) {
      return stop(name, cursor);
    }
    code = ((b0 & 0x07) << 18) | ((byteAt(name, at + 1) & 0x3f) << 12) | ((byteAt(name, at + 2) & 0x3f) << 6) | (byteAt(name, at + 3) & 0x3f);
    length = 4;
  } else {
    return stop(name, cursor);
  }
  cursor.at += length;
  return code;
}

function stop(name: Uint8Array, cursor: { at: number }): number {
  cursor.at = name.length;
  return 0;
}

function nextHfsCharacter(name: Uint8Array, cursor: { at: number }): number {
  for (;;) {
    const code = nextUtf8(name, cursor);
    if (!HFS_IGNORED_CODE_POINTS.has(code)) return code;
  }
}

function toLowerAscii(byte: number): number {
  return byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte;
}

/** git's is_hfs_dot_generic(): "." + needle, ignoring case and HFS+-ignored code points. */
function isHfsDot(name: Uint8Array, needle: string): boolean {
  const cursor = { at: 0 };
  if (nextHfsCharacter(name, cursor) !== DOT) return false;
  for (let i = 0; i < needle.length; i++) {
    const code = nextHfsCharacter(name, cursor);
    if (code > ASCII_MAX) return false;
    if (toLowerAscii(code) !== needle.charCodeAt(i)) return false;
  }
  const after = nextHfsCharacter(name, cursor);
  return after === 0 || after === SLASH;
}

export const isHfsDotGit = (name: Uint8Array): boolean => isHfsDot(name, 'git');
export const isHfsDotGitmodules = (name: Uint8Array): boolean => isHfsDot(name, 'gitmodules');
export const isHfsDotGitattributes = (name: Uint8Array): boolean => isHfsDot(name, 'gitattributes');
export const isHfsDotGitignore = (name: Uint8Array): boolean => isHfsDot(name, 'gitignore');
export const isHfsDotMailmap = (name: Uint8Array): boolean => isHfsDot(name, 'mailmap');

/** Byte `i` of a name, or NUL past its end (the names are C strings in git). */
function byteAt(name: Uint8Array, i: number): number {
  return i < name.length ? name[i] : NUL;
}

/** Rest of the name is only spaces and periods, up to its end or an NTFS stream (":"). */
function onlySpacesAndPeriods(name: Uint8Array, from: number): boolean {
  for (let i = from; ; i++) {
    const c = byteAt(name, i);
    if (c === NUL || c === COLON) return true;
    if (c !== SPACE && c !== DOT) return false;
  }
}

/**
 * git's is_ntfs_dotgit(): ".git" or its 8.3 short name "git~1", in any case, followed by spaces
 * and periods (which NTFS drops), an alternate data stream (":..."), or a separator.
 */
export function isNtfsDotGit(name: Uint8Array): boolean {
  let i = 0;
  const first = byteAt(name, i++);
  if (first === DOT) {
    if (toLowerAscii(byteAt(name, i++)) !== 0x67 || toLowerAscii(byteAt(name, i++)) !== 0x69 || toLowerAscii(byteAt(name, i++)) !== 0x74) return false;
  } else if (toLowerAscii(first) === 0x67) {
    if (toLowerAscii(byteAt(name, i++)) !== 0x69 || toLowerAscii(byteAt(name, i++)) !== 0x74 || byteAt(name, i++) !== TILDE || byteAt(name, i++) !== DIGIT_ONE) {
      return false;
    }
  } else {
    return false;
  }
  for (;;) {
    const c = byteAt(name, i++);
    if (c === NUL || c === SLASH || c === BACKSLASH || c === COLON) return true;
    if (c !== DOT && c !== SPACE) return false;
  }
}

function startsWithIgnoringCase(name: Uint8Array, from: number, needle: string, length: number): boolean {
  for (let i = 0; i < length; i++) {
    if (toLowerAscii(byteAt(name, from + i)) !== needle.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * git's is_ntfs_dot_generic(): ".<needle>" with trailing spaces and periods, its regular short
 * name (first six letters, "~1".."~4"), or the hashed fall-back short name whose first letters
 * are `shortPrefix` ("gi7eba~N" for .gitmodules).
 */
function isNtfsDot(name: Uint8Array, needle: string, shortPrefix: string): boolean {
  if (byteAt(name, 0) === DOT && startsWithIgnoringCase(name, 1, needle, needle.length)) {
    return onlySpacesAndPeriods(name, needle.length + 1);
  }
  const shortNameLetters = 6;
  if (
    startsWithIgnoringCase(name, 0, needle, shortNameLetters) &&
    byteAt(name, shortNameLetters) === TILDE &&
    byteAt(name, shortNameLetters + 1) >= DIGIT_ONE &&
    byteAt(name, shortNameLetters + 1) <= DIGIT_FOUR
  ) {
    return onlySpacesAndPeriods(name, shortNameLetters + 2);
  }
  const shortNameBytes = 8;
  let sawTilde = false;
  let i = 0;
  for (; i < shortNameBytes; i++) {
    const c = byteAt(name, i);
    if (c === NUL) return false;
    if (sawTilde) {
      if (c < DIGIT_ZERO || c > DIGIT_NINE) return false;
    } else if (c === TILDE) {
      i++;
      const digit = byteAt(name, i);
      if (digit < DIGIT_ONE || digit > DIGIT_NINE) return false;
      sawTilde = true;
    } else if (i >= shortNameLetters) {
      return false;
    } else if (c & NON_ASCII_BIT) {
      return false;
    } else if (toLowerAscii(c) !== shortPrefix.charCodeAt(i)) {
      return false;
    }
  }
  return onlySpacesAndPeriods(name, i);
}

export const isNtfsDotGitmodules = (name: Uint8Array): boolean => isNtfsDot(name, 'gitmodules', 'gi7eba');
export const isNtfsDotGitignore = (name: Uint8Array): boolean => isNtfsDot(name, 'gitignore', 'gi250a');
export const isNtfsDotGitattributes = (name: Uint8Array): boolean => isNtfsDot(name, 'gitattributes', 'gi7d29');
export const isNtfsDotMailmap = (name: Uint8Array): boolean => isNtfsDot(name, 'mailmap', 'maba30');

/** A name git will not check out: ".git" in any spelling a file system would equate with it. */
export function isDotGitName(name: Uint8Array): boolean {
  return isHfsDotGit(name) || isNtfsDotGit(name);
}

// ---------------------------------------------------------------------------------------------
// Trees

/** File type bits of a mode (S_IFMT) and the types git stores. */
const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_IFGITLINK = 0o160000;
const STANDARD_MODES = new Set([0o100755, 0o100644, S_IFLNK, S_IFDIR, S_IFGITLINK]);

const isDirectoryMode = (mode: number) => (mode & S_IFMT) === S_IFDIR;
const isSymlinkMode = (mode: number) => (mode & S_IFMT) === S_IFLNK;

/**
 * One tree entry as offsets into its tree's body: fsckTree() reads hundreds of thousands of them
 * per pushed history, so one cursor is filled in place rather than an object and views per entry.
 * Not src/git/tree.ts's TreeCursor: that one refuses what it does not store (modes other than the
 * five), where fsck must read any octal mode, as git's decode_tree_entry() does, to report it.
 */
class FsckTreeCursor {
  mode = 0;
  modeStartsWithZero = false;
  nameStart = 0;
  nameEnd = 0;
  oidStart = 0;
  next = 0;

  constructor(readonly body: Buffer) {}

  /**
   * Reads the entry at `start` as git's decode_tree_entry() does; why the tree cannot be parsed, or
   * null. An empty name is a parse failure there (so git reports badTree, never its older emptyName).
   */
  read(start: number): string | null {
    const body = this.body;
    let at = start;
    let mode = 0;
    if (at >= body.length || body[at] === SPACE) return 'malformed mode in tree entry';
    for (; at < body.length && body[at] !== SPACE; at++) {
      const c = body[at];
      if (c < DIGIT_ZERO || c > DIGIT_SEVEN) return 'malformed mode in tree entry';
      mode = (mode * 8 + (c - DIGIT_ZERO)) >>> 0;
    }
    if (at >= body.length) return 'too-short tree object';
    const nameStart = at + 1;
    const nul = body.indexOf(NUL, nameStart);
    if (nul < 0 || nul + 1 + OID_BYTES > body.length) return 'too-short tree object';
    if (nul === nameStart) return 'empty filename in tree entry';
    this.mode = mode;
    this.modeStartsWithZero = body[start] === DIGIT_ZERO;
    this.nameStart = nameStart;
    this.nameEnd = nul;
    this.oidStart = nul + 1;
    this.next = nul + 1 + OID_BYTES;
    return null;
  }

  name(): Buffer {
    return this.body.subarray(this.nameStart, this.nameEnd);
  }

  oid(): Buffer {
    return this.body.subarray(this.oidStart, this.oidStart + OID_BYTES);
  }
}

const ORDERED = 0;
const UNORDERED = -1;
const HAS_DUPLICATES = -2;

/** True for the bytes that sort between the end of a name and the '/' a directory adds. */
const isLessThanSlash = (c: number) => c > NUL && c < SLASH;

/**
 * git's verify_ordered(): names must ascend in tree order (a directory as if it ended in '/').
 * The previous entry's name is body[aStart, aEnd), the current one's the cursor's. `candidates`
 * remembers file names that a later directory of the same name could duplicate though not
 * adjacent ("foo", "foo.bar", "foo/").
 */
function verifyOrdered(body: Buffer, aStart: number, aEnd: number, aMode: number, current: FsckTreeCursor, candidates: Buffer[]): number {
  const bStart = current.nameStart;
  const aLength = aEnd - aStart;
  const bLength = current.nameEnd - bStart;
  const common = Math.min(aLength, bLength);
  let i = 0;
  while (i < common && body[aStart + i] === body[bStart + i]) i++;
  if (i < common) return body[aStart + i] < body[bStart + i] ? ORDERED : UNORDERED;
  let c1 = i < aLength ? body[aStart + i] : NUL;
  let c2 = i < bLength ? body[bStart + i] : NUL;
  if (c1 === NUL && c2 === NUL) return HAS_DUPLICATES;
  if (c1 === NUL && isDirectoryMode(aMode)) c1 = SLASH;
  if (c2 === NUL && isDirectoryMode(current.mode)) c2 = SLASH;
  if (c1 === NUL && isLessThanSlash(c2)) {
    candidates.push(body.subarray(aStart, aEnd));
  } else if (c2 === SLASH && isLessThanSlash(c1)) {
    const b = current.name();
    for (let file = candidates.pop(); file; file = candidates.pop()) {
      if (b.length < file.length || !b.subarray(0, file.length).equals(file)) continue;
      if (b.length === file.length) return HAS_DUPLICATES;
      if (isLessThanSlash(b[file.length])) {
        candidates.push(file);
        break;
      }
    }
  }
  return c1 < c2 ? ORDERED : UNORDERED;
}

/** The symlink checks of special files ("gitmodulesSymlink" and its relatives). */
function specialFileProblems(name: Buffer): FsckProblem[] {
  const found: FsckProblem[] = [];
  if (isHfsDotGitmodules(name) || isNtfsDotGitmodules(name)) found.push(problem('gitmodulesSymlink', '.gitmodules is a symbolic link'));
  if (isHfsDotGitattributes(name) || isNtfsDotGitattributes(name)) found.push(problem('gitattributesSymlink', '.gitattributes is a symlink'));
  if (isHfsDotGitignore(name) || isNtfsDotGitignore(name)) found.push(problem('gitignoreSymlink', '.gitignore is a symlink'));
  if (isHfsDotMailmap(name) || isNtfsDotMailmap(name)) found.push(problem('mailmapSymlink', '.mailmap is a symlink'));
  // git reads a backslash as a directory separator here, for checkouts on Windows.
  for (let slash = name.indexOf(BACKSLASH); slash >= 0; slash = name.indexOf(BACKSLASH, slash + 1)) {
    if (isNtfsDotGitmodules(name.subarray(slash + 1))) found.push(problem('gitmodulesSymlink', '.gitmodules is a symbolic link'));
  }
  return found;
}

function isNullOid(body: Buffer, start: number): boolean {
  for (let i = start; i < start + OID_BYTES; i++) if (body[i] !== 0) return false;
  return true;
}

function hasBackslashDotGit(name: Buffer): boolean {
  for (let slash = name.indexOf(BACKSLASH); slash >= 0; slash = name.indexOf(BACKSLASH, slash + 1)) {
    if (isNtfsDotGit(name.subarray(slash + 1))) return true;
  }
  return false;
}

/** The flags fsckTree() raises, one bit each, in the order git prints them. */
const TREE_FLAGS: ReadonlyArray<readonly [FsckMessageId, string]> = [
  ['nullSha1', 'contains entries pointing to null sha1'],
  ['fullPathname', 'contains full pathnames'],
  ['hasDot', "contains '.'"],
  ['hasDotdot', "contains '..'"],
  ['hasDotgit', "contains '.git'"],
  ['zeroPaddedFilemode', 'contains zero-padded file modes'],
  ['badFilemode', 'contains bad file modes'],
  ['duplicateEntries', 'contains duplicate file entries'],
  ['treeNotSorted', 'not properly sorted'],
  ['largePathname', 'contains excessively large pathname'],
];
const flagBit = (id: FsckMessageId): number => 1 << TREE_FLAGS.findIndex(([flag]) => flag === id);
const NULL_SHA1 = flagBit('nullSha1');
const FULL_PATHNAME = flagBit('fullPathname');
const HAS_DOT = flagBit('hasDot');
const HAS_DOTDOT = flagBit('hasDotdot');
const HAS_DOTGIT = flagBit('hasDotgit');
const ZERO_PADDED_FILEMODE = flagBit('zeroPaddedFilemode');
const BAD_FILEMODE = flagBit('badFilemode');
const DUPLICATE_ENTRIES = flagBit('duplicateEntries');
const TREE_NOT_SORTED = flagBit('treeNotSorted');
const LARGE_PATHNAME = flagBit('largePathname');
const LOWER_G = 0x67;
const ASCII_CASE_BIT = 0x20;

/**
 * `special`, when given, is called for each entry fsck_finish() checks afterwards (see
 * specialEntries()): fsck_tree() notes them in the same loop, so a pack's trees are read once.
 */
export function fsckTree(body: Buffer, special?: (file: SpecialFile, oid: Oid) => void): FsckProblem[] {
  const found: FsckProblem[] = [];
  let flags = 0;
  const candidates: Buffer[] = [];
  const entry = new FsckTreeCursor(body);
  let previousStart = -1;
  let previousEnd = -1;
  let previousMode = 0;
  for (let at = 0; at < body.length; ) {
    const unreadable = entry.read(at);
    if (unreadable !== null) {
      found.push(problem('badTree', `cannot be parsed as a tree (${unreadable})`));
      break;
    }
    const { nameStart, nameEnd, mode } = entry;
    const length = nameEnd - nameStart;
    if (isNullOid(body, entry.oidStart)) flags |= NULL_SHA1;
    // One pass over the name's bytes for the separators (tree entries number in the hundreds of thousands in a history).
    let slashes = false;
    let backslashes = false;
    // A tilde or a byte past ASCII: the name may be an NTFS short name or hold HFS's ignored characters.
    let unusual = false;
    for (let i = nameStart; i < nameEnd; i++) {
      const c = body[i];
      if (c === SLASH) slashes = true;
      else if (c === BACKSLASH) backslashes = true;
      else if (c === TILDE || c > ASCII_MAX) unusual = true;
    }
    const first = body[nameStart];
    if (slashes) flags |= FULL_PATHNAME;
    if (length === 1 && first === DOT) flags |= HAS_DOT;
    if (length === 2 && first === DOT && body[nameStart + 1] === DOT) flags |= HAS_DOTDOT;
    // isDotGitName() holds only for names starting with '.', 'g' or 'G' (NTFS), or with a character HFS ignores.
    if ((first === DOT || (first | ASCII_CASE_BIT) === LOWER_G || first > ASCII_MAX) && isDotGitName(entry.name())) flags |= HAS_DOTGIT;
    else if (backslashes && hasBackslashDotGit(entry.name())) flags |= HAS_DOTGIT;
    if (entry.modeStartsWithZero) flags |= ZERO_PADDED_FILEMODE;
    if (length > TREE_ENTRY_NAME_BYTES_MAX) flags |= LARGE_PATHNAME;
    if (!STANDARD_MODES.has(mode)) flags |= BAD_FILEMODE;
    if (isSymlinkMode(mode)) found.push(...specialFileProblems(entry.name()));
    else if (special && (first === DOT || backslashes || unusual)) {
      // The same test as maySpecialFileName(), on bytes.
      const file = specialFileOf(entry.name());
      if (file) special(file, entry.oid());
    }
    if (previousStart >= 0) {
      const order = verifyOrdered(body, previousStart, previousEnd, previousMode, entry, candidates);
      if (order === UNORDERED) flags |= TREE_NOT_SORTED;
      if (order === HAS_DUPLICATES) flags |= DUPLICATE_ENTRIES;
    }
    previousStart = nameStart;
    previousEnd = nameEnd;
    previousMode = mode;
    at = entry.next;
  }
  TREE_FLAGS.forEach(([id, text], bit) => {
    if (flags & (1 << bit)) found.push(problem(id, text));
  });
  return found;
}

// ---------------------------------------------------------------------------------------------
// Commits and tags (bytes read as latin1 so that string offsets are byte offsets)

/** timestamp_t overflow as git's date_overflows() sees it: past the largest signed 64-bit time. */
const TIMESTAMP_MAX = 2n ** 63n - 1n;
/** git gives up reading digits past this many (its buffer is sized for 2^64). */
const TIMESTAMP_DIGITS_MAX = 23;
const OID_HEX_PATTERN = /^[0-9a-fA-F]{40}\n/;
const TAG_OBJECT_TYPES = new Set(['blob', 'tree', 'commit', 'tag']);

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** git's verify_headers(): no NUL before the blank line, and the headers end with a newline. */
function verifyHeaders(text: string): FsckProblem | null {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === NUL) return problem('nulInHeader', `unterminated header: NUL at offset ${i}`);
    if (c === LINE_FEED && text.charCodeAt(i + 1) === LINE_FEED) return null;
  }
  if (text.length > 0 && text.charCodeAt(text.length - 1) === LINE_FEED) return null;
  return problem('unterminatedHeader', 'unterminated header');
}

/** git's fsck_ident(): "Name <email> 1234567890 +0000\n" starting at `start`. */
function checkIdent(text: string, start: number): { problem: FsckProblem | null; next: number } {
  const lineEnd = text.indexOf('\n', start);
  const next = lineEnd < 0 ? text.length : lineEnd + 1;
  const fail = (id: FsckMessageId, what: string) => ({ problem: problem(id, `invalid author/committer line - ${what}`), next });
  let p = start;
  if (text[p] === '<') return fail('missingNameBeforeEmail', 'missing space before email');
  for (;;) {
    if (p >= text.length || text[p] === '\n') return fail('missingEmail', 'missing email');
    if (text[p] === '>') return fail('badName', 'bad name');
    if (text[p] === '<') break;
    p++;
  }
  if (text[p - 1] !== ' ') return fail('missingSpaceBeforeEmail', 'missing space before email');
  p++;
  for (;;) {
    if (p >= text.length || text[p] === '<' || text[p] === '\n') return fail('badEmail', 'bad email');
    if (text[p] === '>') break;
    p++;
  }
  p++;
  if (text[p] !== ' ') return fail('missingSpaceBeforeDate', 'missing space before date');
  p++;
  while (text[p] === ' ' || text.charCodeAt(p) === TAB) p++;
  if (!isDigit(text[p])) return fail('badDate', 'bad date');
  if (text[p] === '0' && text[p + 1] !== ' ') return fail('zeroPaddedDate', 'zero-padded date');
  const digitsStart = p;
  while (isDigit(text[p])) p++;
  const digits = text.slice(digitsStart, p);
  if (digits.length > TIMESTAMP_DIGITS_MAX || BigInt(digits) > TIMESTAMP_MAX) {
    return fail('badDateOverflow', 'date causes integer overflow');
  }
  if (text[p] !== ' ') return fail('badDate', 'bad date');
  p++;
  const sign = text[p];
  if (
    (sign !== '+' && sign !== '-') ||
    !isDigit(text[p + 1]) ||
    !isDigit(text[p + 2]) ||
    !isDigit(text[p + 3]) ||
    !isDigit(text[p + 4]) ||
    text[p + 5] !== '\n'
  ) {
    return fail('badTimezone', 'bad time zone');
  }
  return { problem: null, next };
}

/** Reads "<key> <40 hex>\n" at `at`; null when the key is absent, -1 when the id is malformed. */
function readIdLine(text: string, at: number, key: string): number | null {
  if (!text.startsWith(`${key} `, at)) return null;
  const idStart = at + key.length + 1;
  return OID_HEX_PATTERN.test(text.slice(idStart, idStart + 41)) ? idStart + 41 : -1;
}

export function fsckCommit(body: Buffer): FsckProblem[] {
  const text = body.toString('latin1');
  const headerProblem = verifyHeaders(text);
  if (headerProblem) return [headerProblem];
  let at = readIdLine(text, 0, 'tree');
  if (at === null) return [problem('missingTree', "invalid format - expected 'tree' line")];
  if (at < 0) return [problem('badTreeSha1', "invalid 'tree' line format - bad sha1")];
  for (let parent = readIdLine(text, at, 'parent'); parent !== null; parent = readIdLine(text, at, 'parent')) {
    if (parent < 0) return [problem('badParentSha1', "invalid 'parent' line format - bad sha1")];
    at = parent;
  }
  let authors = 0;
  while (at < text.length && text.startsWith('author ', at)) {
    authors++;
    const ident = checkIdent(text, at + 'author '.length);
    if (ident.problem) return [ident.problem];
    at = ident.next;
  }
  if (authors === 0) return [problem('missingAuthor', "invalid format - expected 'author' line")];
  if (authors > 1) return [problem('multipleAuthors', "invalid format - multiple 'author' lines")];
  if (!text.startsWith('committer ', at)) return [problem('missingCommitter', "invalid format - expected 'committer' line")];
  const committer = checkIdent(text, at + 'committer '.length);
  if (committer.problem) return [committer.problem];
  if (body.includes(NUL)) return [problem('nulInCommit', 'NUL byte in the commit object body')];
  return [];
}

/** Forbidden in any ref name component (git-check-ref-format rules 3-5). */
const REFNAME_FORBIDDEN = /[\x00-\x20\x7f~^:?*[\\]/;

/** `git check-ref-format` without options, as fsck applies it to "refs/tags/<tag name>". */
export function isValidRefname(refname: string): boolean {
  if (refname === '@' || refname.endsWith('/') || refname.endsWith('.')) return false;
  if (refname.includes('..') || refname.includes('@{') || REFNAME_FORBIDDEN.test(refname)) return false;
  return refname.split('/').every((part) => part.length > 0 && !part.startsWith('.') && !part.endsWith('.lock'));
}

export function fsckTag(body: Buffer): FsckProblem[] {
  const text = body.toString('latin1');
  const headerProblem = verifyHeaders(text);
  if (headerProblem) return [headerProblem];
  const found: FsckProblem[] = [];
  let at = readIdLine(text, 0, 'object');
  if (at === null) return [problem('missingObject', "invalid format - expected 'object' line")];
  if (at < 0) return [problem('badObjectSha1', "invalid 'object' line format - bad sha1")];
  if (!text.startsWith('type ', at)) return [problem('missingTypeEntry', "invalid format - expected 'type' line")];
  let lineEnd = text.indexOf('\n', at);
  if (lineEnd < 0) return [problem('missingType', "invalid format - unexpected end after 'type' line")];
  if (!TAG_OBJECT_TYPES.has(text.slice(at + 'type '.length, lineEnd))) return [problem('badType', "invalid 'type' value")];
  at = lineEnd + 1;
  if (!text.startsWith('tag ', at)) return [problem('missingTagEntry', "invalid format - expected 'tag' line")];
  lineEnd = text.indexOf('\n', at);
  if (lineEnd < 0) return [problem('missingTag', "invalid format - unexpected end after 'type' line")];
  const tagName = text.slice(at + 'tag '.length, lineEnd);
  if (!isValidRefname(`refs/tags/${tagName}`)) found.push(problem('badTagName', `invalid 'tag' name: ${tagName}`));
  at = lineEnd + 1;
  if (text.startsWith('tagger ', at)) {
    const ident = checkIdent(text, at + 'tagger '.length);
    if (ident.problem) return [...found, ident.problem];
    at = ident.next;
  } else {
    found.push(problem('missingTaggerEntry', "invalid format - expected 'tagger' line"));
  }
  // A signature header after the tagger (gpgsig, gpgsig-sha256) and its continuation lines.
  if (text.startsWith('gpgsig ', at) || text.startsWith('gpgsig-sha256 ', at)) {
    do {
      lineEnd = text.indexOf('\n', at);
      at = lineEnd < 0 ? text.length : lineEnd + 1;
    } while (at < text.length && text[at] === ' ');
  }
  if (at < text.length && text[at] !== '\n') {
    found.push(problem('extraHeaderEntry', "invalid format - extra header(s) after 'tagger'"));
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// .gitmodules and .gitattributes blobs (fsck_blob(), fsck_finish())

/** A file whose blob git checks by its name. */
export type SpecialFile = 'gitmodules' | 'gitattributes';

/** git's ATTR_MAX_LINE_LENGTH and ATTR_MAX_FILE_SIZE (attr.h). */
const ATTRIBUTES_LINE_BYTES_MAX = 2048;
const ATTRIBUTES_FILE_BYTES_MAX = 100 * 1024 * 1024;
const PERCENT = 0x25;
const AT = 0x40;
const QUESTION = 0x3f;
const HASH = 0x23;
const EXCLAMATION = 0x21;
const DASH = 0x2d;

/** Which special file a tree entry name is, whatever the entry's type (fsck_tree()). */
/**
 * False when a decoded name (src/git/pathBytes.ts) cannot be one specialFileOf() finds: every form
 * git checks starts with '.' (after characters HFS ignores, none of them ASCII), or is an NTFS short
 * name with '~', or holds a backslash. A cheap test before encoding the name to bytes.
 */
export function maySpecialFileName(name: string): boolean {
  return name.charCodeAt(0) === 0x2e || /[~\\\u0080-\uffff]/.test(name);
}

export function specialFileOf(name: Uint8Array): SpecialFile | null {
  if (isHfsDotGitmodules(name) || isNtfsDotGitmodules(name)) return 'gitmodules';
  if (isHfsDotGitattributes(name) || isNtfsDotGitattributes(name)) return 'gitattributes';
  // git reads a backslash as a directory separator here, for checkouts on Windows.
  for (let slash = name.indexOf(BACKSLASH); slash >= 0; slash = name.indexOf(BACKSLASH, slash + 1)) {
    if (isNtfsDotGitmodules(name.subarray(slash + 1))) return 'gitmodules';
  }
  return null;
}

/**
 * The entries of a tree whose objects git checks as special files: named so and not symlinks
 * (a symlink is gitmodulesSymlink already). A directory or a submodule so named counts too, and
 * fails as gitmodulesBlob or gitmodulesMissing, as it does in git.
 */
export function specialEntries(treeBody: Buffer): Array<{ file: SpecialFile; oid: Oid }> {
  const found: Array<{ file: SpecialFile; oid: Oid }> = [];
  const entry = new FsckTreeCursor(treeBody);
  for (let at = 0; at < treeBody.length; at = entry.next) {
    if (entry.read(at) !== null) break;
    const file = isSymlinkMode(entry.mode) ? null : specialFileOf(entry.name());
    if (file) found.push({ file, oid: entry.oid() });
  }
  return found;
}

type ReadObject = (oid: Oid) => { type: ObjectType; body: Buffer } | undefined;

/** The special files trees name, each (file, object) once: what fsck_finish() checks. */
class SpecialEntries {
  readonly entries = new Map<string, { file: SpecialFile; oid: Oid }>();
  readonly note = (file: SpecialFile, oid: Oid): void => {
    const key = `${file} ${oidToHex(oid)}`;
    if (!this.entries.has(key)) this.entries.set(key, { file, oid });
  };

  problems(readObject: ReadObject): Array<{ oid: string; problem: FsckProblem }> {
    const out: Array<{ oid: string; problem: FsckProblem }> = [];
    for (const { file, oid } of this.entries.values()) {
      for (const found of fsckSpecialObject(file, readObject(oid))) out.push({ oid: oidToHex(oid), problem: found });
    }
    return out;
  }
}

/**
 * Checks of the objects the given trees name as special files, as fsck_finish() makes them:
 * each object once, missing ones and ones that are not blobs included.
 */
export function fsckSpecialBlobs(treeBodies: Iterable<Buffer>, readObject: ReadObject): Array<{ oid: string; problem: FsckProblem }> {
  const specials = new SpecialEntries();
  for (const body of treeBodies) for (const { file, oid } of specialEntries(body)) specials.note(file, oid);
  return specials.problems(readObject);
}

/**
 * What a clone of an existing history lets pass although `git fsck --strict` refuses it, as `git
 * clone` does (it checks nothing unless transfer.fsckObjects is set): zero-padded tree modes
 * ("040000"), which old gits wrote and which real histories keep (lodash's, on GitHub). Their trees
 * are kept byte for byte; every reader takes the mode as git does (src/git/tree.ts), and a tree
 * Treehouse writes spells it "40000". A push is still refused for one, as a strict receive-pack
 * refuses it.
 */
export const CLONE_TOLERATED_FSCK: ReadonlySet<FsckMessageId> = new Set<FsckMessageId>(['zeroPaddedFilemode']);

const NONE_TOLERATED: ReadonlySet<FsckMessageId> = new Set();

/**
 * Every object as `git fsck --strict` checks it (assertFsckClean, labelled with its id), then the
 * .gitmodules and .gitattributes objects its trees name (fsck_finish(); `readObject` finds them
 * among the objects or elsewhere). Each tree's entries are read once for both. Throws FsckError
 * for the first failure, in that order. `tolerated`: message ids that pass here although they
 * would fail (CLONE_TOLERATED_FSCK, for a seed).
 */
export function assertObjectsFsckClean(objects: Iterable<{ type: ObjectType; body: Buffer; oid: Oid }>, readObject: ReadObject, tolerated: ReadonlySet<FsckMessageId> = NONE_TOLERATED): void {
  const fails = (found: FsckProblem) => isFsckFailure(found) && !tolerated.has(found.id);
  const specials = new SpecialEntries();
  for (const object of objects) {
    // git fsck finds nothing to say about a blob's content by itself (special blobs are checked
    // below), and a received blob's body may be one that reading would rebuild (src/git/pack.ts).
    const type = object.type;
    if (type === 'blob') continue;
    const problems = type === 'tree' ? fsckTree(object.body, specials.note) : fsckObject(type, object.body);
    const failure = problems.find(fails);
    if (failure) throw new FsckError(failure.id, problems, `error in ${type} ${oidToHex(object.oid)}: ${failure.message}`);
  }
  const problems = specials.problems(readObject);
  const failure = problems.find((found) => fails(found.problem));
  if (failure) {
    throw new FsckError(
      failure.problem.id,
      problems.map((found) => found.problem),
      `error in blob ${failure.oid}: ${failure.problem.message}`,
    );
  }
}

/** The checks of one special file's object (`undefined`: not in the repository). */
export function fsckSpecialObject(file: SpecialFile, object: { type: ObjectType; body: Buffer } | undefined): FsckProblem[] {
  if (file === 'gitmodules') {
    if (!object) return [problem('gitmodulesMissing', 'unable to read .gitmodules blob')];
    if (object.type !== 'blob') return [problem('gitmodulesBlob', 'non-blob found at .gitmodules')];
    return fsckGitmodules(object.body);
  }
  if (!object) return [problem('gitattributesMissing', 'unable to read .gitattributes blob')];
  if (object.type !== 'blob') return [problem('gitattributesBlob', 'non-blob found at .gitattributes')];
  return fsckGitattributes(object.body);
}

/** fsck_gitmodules_fn() over every variable git's config parser reads from the blob. */
export function fsckGitmodules(body: Buffer): FsckProblem[] {
  const found: FsckProblem[] = [];
  const { variables, ok } = parseGitConfig(body);
  for (const { name, value } of variables) {
    const parsed = submoduleKey(name);
    if (!parsed) continue;
    const text = (bytes: Buffer) => bytes.toString('utf8');
    if (!isValidSubmoduleName(parsed.subsection)) found.push(problem('gitmodulesName', `disallowed submodule name: ${text(parsed.subsection)}`));
    if (parsed.key === 'url' && value && !isValidSubmoduleUrl(value)) found.push(problem('gitmodulesUrl', `disallowed submodule url: ${text(value)}`));
    if (parsed.key === 'path' && value && value[0] === DASH) found.push(problem('gitmodulesPath', `disallowed submodule path: ${text(value)}`));
    // parse_submodule_update_type(): "!command" is SM_UPDATE_COMMAND, which .gitmodules may not set.
    if (parsed.key === 'update' && value && value[0] === EXCLAMATION) {
      found.push(problem('gitmodulesUpdate', `disallowed submodule update setting: ${text(value)}`));
    }
  }
  if (!ok) found.push(problem('gitmodulesParse', 'could not parse gitmodules blob'));
  return found;
}

/** The .gitattributes checks of git 2.39.1+: no line git's attribute reader would drop. */
export function fsckGitattributes(body: Buffer): FsckProblem[] {
  if (body.length > ATTRIBUTES_FILE_BYTES_MAX) return [problem('gitattributesLarge', '.gitattributes too large to parse')];
  // git scans the blob as a C string: up to the first NUL.
  const nul = body.indexOf(NUL);
  const end = nul < 0 ? body.length : nul;
  for (let at = 0; at < end; ) {
    const newline = body.indexOf(LINE_FEED, at);
    const lineEnd = newline < 0 || newline > end ? end : newline;
    if (lineEnd - at >= ATTRIBUTES_LINE_BYTES_MAX) return [problem('gitattributesLineLength', '.gitattributes has too long lines to parse')];
    at = lineEnd < end ? lineEnd + 1 : end;
  }
  return [];
}

/** parse_config_key(var, "submodule", …): the subsection and key of "submodule.<name>.<key>", or null. */
function submoduleKey(name: Buffer): { subsection: Buffer; key: string } | null {
  const section = Buffer.from('submodule');
  if (name.length <= section.length || !name.subarray(0, section.length).equals(section) || name[section.length] !== DOT) return null;
  const rest = name.subarray(section.length);
  const dot = rest.lastIndexOf(DOT);
  if (dot === 0) return null; // no subsection: not about one submodule
  return { subsection: rest.subarray(1, dot), key: rest.subarray(dot + 1).toString('latin1') };
}

const isCrossPlatformSeparator = (c: number) => c === SLASH || c === BACKSLASH;

/** check_submodule_name(): not empty, and no ".." component ("/" and "\\" both separate). */
export function isValidSubmoduleName(name: Uint8Array): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i <= name.length; i++) {
    const componentStart = i === 0 || isCrossPlatformSeparator(name[i - 1]);
    if (componentStart && byteAt(name, i) === DOT && byteAt(name, i + 1) === DOT && (i + 2 >= name.length || isCrossPlatformSeparator(name[i + 2]))) {
      return false;
    }
  }
  return true;
}

const startsWithDotSlash = (url: Uint8Array, at = 0) => byteAt(url, at) === DOT && isCrossPlatformSeparator(byteAt(url, at + 1));
const startsWithDotDotSlash = (url: Uint8Array, at = 0) => byteAt(url, at) === DOT && startsWithDotSlash(url, at + 1);

function startsWithText(bytes: Uint8Array, text: string, at = 0): boolean {
  if (bytes.length - at < text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
}

/**
 * check_submodule_url() (fsck.c): no leading "-"; a relative or git:// URL must not carry a
 * newline once %-decoded nor climb out with "../" into ":" or "/"; an http(s)/ftp(s) URL (also
 * as "http::…") must parse as git's credential code parses it, with a host and no newline.
 */
export function isValidSubmoduleUrl(url: Buffer): boolean {
  if (url[0] === DASH) return false;
  if (startsWithDotSlash(url) || startsWithDotDotSlash(url) || startsWithText(url, 'git://')) {
    if (urlDecode(url).includes(LINE_FEED)) return false;
    let at = 0;
    let dotdots = 0;
    for (;;) {
      if (startsWithDotDotSlash(url, at)) {
        dotdots++;
        at += 3;
      } else if (startsWithDotSlash(url, at)) {
        at += 2;
      } else {
        break;
      }
    }
    return !(dotdots > 0 && (byteAt(url, at) === COLON || byteAt(url, at) === SLASH));
  }
  const curl = curlUrl(url);
  if (curl === null) return true;
  const host = credentialHost(curl);
  return host !== null && host.length > 0;
}

/** url_to_curl_url(): the URL git-remote-curl would get, or null for other transports. */
function curlUrl(url: Buffer): Buffer | null {
  for (const prefix of ['http::', 'https::', 'ftp::', 'ftps::']) if (startsWithText(url, prefix)) return url.subarray(prefix.length);
  for (const scheme of ['http://', 'https://', 'ftp://', 'ftps://']) if (startsWithText(url, scheme)) return url;
  return null;
}

/**
 * credential_from_url_gently() as fsck calls it: the decoded host, or null when the URL has no
 * scheme or a part (user, password, protocol, host, path) holds a newline once decoded.
 */
function credentialHost(url: Buffer): Buffer | null {
  const protocolEnd = url.indexOf('://');
  if (protocolEnd <= 0) return null;
  const start = protocolEnd + 3;
  const at = url.indexOf(AT, start);
  const colon = url.indexOf(COLON, start);
  let slash = start;
  while (slash < url.length && url[slash] !== SLASH && url[slash] !== QUESTION && url[slash] !== HASH) slash++;
  const parts: Buffer[] = [url.subarray(0, protocolEnd)];
  let hostStart = start;
  if (at >= 0 && slash > at) {
    if (colon < 0 || at <= colon) {
      parts.push(urlDecode(url.subarray(start, at)));
    } else {
      parts.push(urlDecode(url.subarray(start, colon)), urlDecode(url.subarray(colon + 1, at)));
    }
    hostStart = at + 1;
  }
  const host = urlDecode(url.subarray(hostStart, slash));
  parts.push(host);
  let pathStart = slash;
  while (url[pathStart] === SLASH) pathStart++;
  if (pathStart < url.length) parts.push(urlDecode(url.subarray(pathStart)));
  return parts.some((part) => part.includes(LINE_FEED)) ? null : host;
}

/**
 * url_decode_mem(): "%XY" decoded (not "%00"), after an undecoded part up to the first ":" (git
 * skips a protocol that way, wherever the colon is). Stops at a NUL.
 */
function urlDecode(bytes: Buffer): Buffer {
  const out: number[] = [];
  const colon = bytes.indexOf(COLON);
  let at = 0;
  if (colon > 0) {
    for (; at < colon; at++) out.push(bytes[at]);
  }
  while (at < bytes.length) {
    const c = bytes[at];
    if (c === NUL) break;
    if (c === PERCENT && bytes.length - at >= 3) {
      const value = hexValue(bytes[at + 1]) * 16 + hexValue(bytes[at + 2]);
      if (hexValue(bytes[at + 1]) >= 0 && hexValue(bytes[at + 2]) >= 0 && value > 0) {
        out.push(value);
        at += 3;
        continue;
      }
    }
    out.push(c);
    at++;
  }
  return Buffer.from(out);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}
