import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCommit } from '../../src/git/commit.js';
import {
  assertFsckClean,
  assertObjectsFsckClean,
  FsckError,
  fsckCommit,
  fsckObject,
  fsckSpecialBlobs,
  fsckTag,
  fsckTree,
  isFsckFailure,
  isHfsDotGit,
  isHfsDotGitmodules,
  isNtfsDotGit,
  isNtfsDotGitmodules,
  isValidRefname,
  maySpecialFileName,
  specialEntries,
  specialFileOf,
  type FsckMessageId,
} from '../../src/git/fsck.js';
import { EMPTY_BLOB_OID, EMPTY_TREE_OID, hashObject, oidToHex, type ObjectType } from '../../src/git/oid.js';
import { decodePath, encodePath } from '../../src/git/pathBytes.js';
import { encodeTree } from '../../src/git/tree.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../support/git.js';
import { configText, writeBlobs } from '../support/gitConfigSamples.js';

const scratch = scratchDir();
afterAll(() => scratch.remove());

const BLOB = EMPTY_BLOB_OID;
const TREE = EMPTY_TREE_OID;
const TREE_HEX = oidToHex(TREE);

type RawEntry = [mode: string, name: string | Buffer, oid?: Buffer];

/** A tree body exactly as given: no sorting, no checks. */
function rawTree(entries: RawEntry[]): Buffer {
  return Buffer.concat(
    entries.map(([mode, name, oid]) =>
      Buffer.concat([Buffer.from(`${mode} `, 'latin1'), typeof name === 'string' ? Buffer.from(name, 'utf8') : name, Buffer.from([0]), oid ?? (mode.endsWith('40000') ? TREE : BLOB)]),
    ),
  );
}

const ids = (problems: Array<{ id: FsckMessageId }>) => problems.map((found) => found.id);
const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('.git look-alikes (is_hfs_dotgit, is_ntfs_dotgit)', () => {
  const dotGit = ['.git', '.GIT', '.Git', '.git ', '.git.', '.git . .', 'git~1', 'GIT~1', 'git~1 ', '.git::$INDEX_ALLOCATION', '.git:stream', '.g\u200cit', '\u200d.git', '.git\ufeff', '.GI\u206aT'];
  const notDotGit = ['.gitx', 'git', '.gi', 'git~2', 'xgit~1', '.gitignore', '.git~1', 'a.git', '.gít', '.g\u200bit'];
  for (const name of dotGit) {
    it(`flags ${JSON.stringify(name)}`, () => {
      expect(isHfsDotGit(utf8(name)) || isNtfsDotGit(utf8(name))).toBe(true);
      expect(ids(fsckTree(rawTree([['40000', name]])))).toContain('hasDotgit');
    });
  }
  for (const name of notDotGit) {
    it(`accepts ${JSON.stringify(name)}`, () => {
      expect(isHfsDotGit(utf8(name)) || isNtfsDotGit(utf8(name))).toBe(false);
    });
  }

  it('follows git on invalid UTF-8 right after ".git" (treated as the end of the name)', () => {
    expect(isHfsDotGit(Buffer.from([0x2e, 0x67, 0x69, 0x74, 0xff]))).toBe(true);
    expect(isHfsDotGit(Buffer.from([0x2e, 0x67, 0xc0, 0xaf, 0x69, 0x74]))).toBe(false);
  });

  it('knows the .gitmodules aliases, including the NTFS short names', () => {
    for (const name of ['.gitmodules', '.GITMODULES', '.gitmodules ', '.gitmodules.', 'gitmod~1', 'GITMOD~4', 'gi7eba~1', 'GI7EBA~9', '.git\u200cmodules', '.gitmodules:x']) {
      expect(isHfsDotGitmodules(utf8(name)) || isNtfsDotGitmodules(utf8(name)), name).toBe(true);
    }
    for (const name of ['.gitmodulesx', 'gitmod~5', 'gitmod~0', 'gi7eba~0', 'gi7ebb~1', 'gitmodules']) {
      expect(isHfsDotGitmodules(utf8(name)) || isNtfsDotGitmodules(utf8(name)), name).toBe(false);
    }
  });

  it('never rules out a special file by the cheap name test (maySpecialFileName)', () => {
    const aliases = ['.gitmodules', '.GITMODULES', '.gitmodules ', '.gitmodules.', 'gitmod~1', 'GITMOD~4', 'gi7eba~1', 'GI7EBA~9', '.git\u200cmodules', '.gitmodules:x', 'x\\.gitmodules', '.gitattributes', 'GITATT~1', 'gi7d29~1', '.gitattributes\u200d'];
    for (const name of aliases) {
      expect(specialFileOf(encodePath(name)), name).not.toBeNull();
      expect(maySpecialFileName(name), name).toBe(true);
    }
    // Names as trees hold them (any bytes, decoded as the store does), special or not.
    const letters = fc.constantFrom(...'.gGiItTmMoOdDuUlLeEsSaArRbB~\\ 17x'.split(''));
    const names = fc.oneof(
      fc.array(letters, { minLength: 1, maxLength: 16 }).map((chars) => Buffer.from(chars.join(''), 'latin1')),
      fc.uint8Array({ minLength: 1, maxLength: 16 }).map((bytes) => Buffer.from(bytes.filter((byte) => byte !== 0 && byte !== 0x2f))),
    );
    fc.assert(
      fc.property(names, (bytes) => {
        if (bytes.length === 0) return;
        const name = decodePath(bytes);
        if (specialFileOf(bytes) !== null) expect(maySpecialFileName(name)).toBe(true);
      }),
      { numRuns: 3000, seed: 11 },
    );
    expect(maySpecialFileName('src')).toBe(false);
    expect(maySpecialFileName('index.ts')).toBe(false);
  });
});

describe('fsckTree', () => {
  it('finds nothing wrong with a tree encodeTree wrote', () => {
    const tree = encodeTree([
      { name: 'a', mode: '40000', oid: TREE },
      { name: 'a.b', mode: '100644', oid: BLOB },
      { name: 'exec', mode: '100755', oid: BLOB },
      { name: 'link', mode: '120000', oid: BLOB },
      { name: 'module', mode: '160000', oid: BLOB },
      { name: '.gitmodules', mode: '100644', oid: BLOB },
    ]);
    expect(fsckTree(tree)).toEqual([]);
    expect(fsckTree(Buffer.alloc(0))).toEqual([]);
  });

  const cases: Array<[string, RawEntry[], FsckMessageId]> = [
    ['adjacent duplicates', [['100644', 'a'], ['100644', 'a']], 'duplicateEntries'],
    ['a file and a directory of the same name, apart', [['100644', 'foo'], ['100644', 'foo.bar'], ['40000', 'foo']], 'duplicateEntries'],
    ['names out of order', [['100644', 'b'], ['100644', 'a']], 'treeNotSorted'],
    ['a directory sorted as if it had no slash', [['40000', 'a'], ['100644', 'a.b']], 'treeNotSorted'],
    ['"."', [['40000', '.']], 'hasDot'],
    ['".."', [['40000', '..']], 'hasDotdot'],
    ['".git"', [['40000', '.git']], 'hasDotgit'],
    ['".git" after a backslash', [['100644', 'a\\.git']], 'hasDotgit'],
    ['a slash in a name', [['100644', 'a/b']], 'fullPathname'],
    ['a zero-padded mode', [['040000', 'dir']], 'zeroPaddedFilemode'],
    ['mode 100664', [['100664', 'file']], 'badFilemode'],
    ['an unknown mode', [['100600', 'file']], 'badFilemode'],
    ['a .gitmodules symlink', [['120000', '.gitmodules']], 'gitmodulesSymlink'],
    ['a .gitmodules symlink by its NTFS short name', [['120000', 'GITMOD~1']], 'gitmodulesSymlink'],
    ['a .gitmodules symlink with an HFS+-ignored character', [['120000', '.git\u200cmodules']], 'gitmodulesSymlink'],
    ['a .gitmodules symlink after a backslash', [['120000', 'x\\.gitmodules']], 'gitmodulesSymlink'],
    ['an entry pointing at the null id', [['100644', 'file', Buffer.alloc(20)]], 'nullSha1'],
    ['a name over 4096 bytes', [['100644', 'n'.repeat(4097)]], 'largePathname'],
    ['an empty name', [['100644', '']], 'badTree'],
    ['a malformed mode', [['10064x', 'file']], 'badTree'],
    ['a missing mode', [['', 'file']], 'badTree'],
  ];
  for (const [label, entries, id] of cases) {
    it(`reports ${id} for ${label}`, () => {
      expect(ids(fsckTree(rawTree(entries)))).toContain(id);
    });
  }

  it('reports badTree for truncated bodies, never throwing', () => {
    const body = rawTree([['100644', 'file']]);
    for (let length = 1; length < body.length; length++) {
      expect(ids(fsckTree(body.subarray(0, length))), String(length)).toEqual(['badTree']);
    }
  });

  it('does not mind a .gitmodules that is a file, or other symlinks', () => {
    expect(fsckTree(rawTree([['100644', '.gitmodules'], ['120000', 'link']]))).toEqual([]);
    expect(ids(fsckTree(rawTree([['120000', '.gitignore']])))).toEqual(['gitignoreSymlink']);
    expect(fsckTree(rawTree([['120000', '.gitignore']])).some(isFsckFailure)).toBe(false);
  });
});

const ident = 'A U Thor <author@example.com> 1700000000 +0100';

function commitText(...headerLines: string[]): Buffer {
  return Buffer.from(`${headerLines.join('\n')}\n\nmessage\n`, 'latin1');
}

describe('fsckCommit', () => {
  it('finds nothing wrong with a commit encodeCommit wrote', () => {
    const signature = { name: 'A U Thor', email: 'a@example.com', timestamp: 0, timezone: '-0530' };
    const body = encodeCommit({ tree: TREE, parents: [TREE, BLOB], author: signature, committer: signature, extraHeaders: [['encoding', 'UTF-8']], message: 'm\n' });
    expect(fsckCommit(body)).toEqual([]);
    // No message at all is fine as long as the last header ends with a newline.
    expect(fsckCommit(Buffer.from(`tree ${TREE_HEX}\nauthor ${ident}\ncommitter ${ident}\n`))).toEqual([]);
  });

  const tree = `tree ${TREE_HEX}`;
  const cases: Array<[string, Buffer, FsckMessageId]> = [
    ['no tree line', commitText(`author ${ident}`, `committer ${ident}`), 'missingTree'],
    ['a short tree id', commitText(`tree ${TREE_HEX.slice(1)}`, `author ${ident}`, `committer ${ident}`), 'badTreeSha1'],
    ['a bad parent id', commitText(tree, `parent ${'g'.repeat(40)}`, `author ${ident}`, `committer ${ident}`), 'badParentSha1'],
    ['committer before author', commitText(tree, `committer ${ident}`, `author ${ident}`), 'missingAuthor'],
    ['a parent after the author', commitText(tree, `author ${ident}`, `parent ${TREE_HEX}`, `committer ${ident}`), 'missingCommitter'],
    ['two authors', commitText(tree, `author ${ident}`, `author ${ident}`, `committer ${ident}`), 'multipleAuthors'],
    ['no committer', commitText(tree, `author ${ident}`), 'missingCommitter'],
    ['no name', commitText(tree, 'author <a@b> 1 +0000', `committer ${ident}`), 'missingNameBeforeEmail'],
    ['no email', commitText(tree, 'author Name 1 +0000', `committer ${ident}`), 'missingEmail'],
    ['a ">" in the name', commitText(tree, 'author Na>me <a@b> 1 +0000', `committer ${ident}`), 'badName'],
    ['no space before the email', commitText(tree, 'author Name<a@b> 1 +0000', `committer ${ident}`), 'missingSpaceBeforeEmail'],
    ['an unclosed email', commitText(tree, 'author Name <a@b 1 +0000', `committer ${ident}`), 'badEmail'],
    ['no space before the date', commitText(tree, 'author Name <a@b>1 +0000', `committer ${ident}`), 'missingSpaceBeforeDate'],
    ['a date that is not a number', commitText(tree, 'author Name <a@b> x +0000', `committer ${ident}`), 'badDate'],
    ['no time zone', commitText(tree, 'author Name <a@b> 1', `committer ${ident}`), 'badDate'],
    ['a zero-padded date', commitText(tree, 'author Name <a@b> 0123 +0000', `committer ${ident}`), 'zeroPaddedDate'],
    ['a date past 2^63', commitText(tree, 'author Name <a@b> 9223372036854775808 +0000', `committer ${ident}`), 'badDateOverflow'],
    ['a three-digit zone', commitText(tree, 'author Name <a@b> 1 +010', `committer ${ident}`), 'badTimezone'],
    ['a zone without sign', commitText(tree, 'author Name <a@b> 1 0100', `committer ${ident}`), 'badTimezone'],
    ['a five-digit zone', commitText(tree, `author ${ident}`, 'committer Name <a@b> 1 +01000'), 'badTimezone'],
    ['a NUL in the headers', Buffer.from(`${tree}\nauthor ${ident}\0\ncommitter ${ident}\n\nm`, 'latin1'), 'nulInHeader'],
    ['headers without a final newline', Buffer.from(`${tree}\nauthor ${ident}\ncommitter ${ident}`, 'latin1'), 'unterminatedHeader'],
    ['an empty body', Buffer.alloc(0), 'unterminatedHeader'],
    ['a NUL in the message', Buffer.from(`${tree}\nauthor ${ident}\ncommitter ${ident}\n\nm\0m`, 'latin1'), 'nulInCommit'],
  ];
  for (const [label, body, id] of cases) {
    it(`reports ${id} for ${label}`, () => {
      expect(ids(fsckCommit(body))).toEqual([id]);
    });
  }

  it('accepts the zero date and extra spaces before the date, as git does', () => {
    expect(fsckCommit(commitText(`tree ${TREE_HEX}`, 'author N <a@b> 0 +0000', 'committer N <a@b>   \t5 -1200'))).toEqual([]);
  });
});

describe('fsckTag', () => {
  const head = `object ${TREE_HEX}\ntype tree\ntag v1.0\n`;
  it('accepts a well-formed tag, with or without a signature header', () => {
    expect(fsckTag(Buffer.from(`${head}tagger ${ident}\n\nrelease\n`))).toEqual([]);
    expect(fsckTag(Buffer.from(`${head}tagger ${ident}\ngpgsig-sha256 -----BEGIN-----\n line\n -----END-----\n\nrelease\n`))).toEqual([]);
  });

  const cases: Array<[string, string, FsckMessageId]> = [
    ['no object line', `type tree\ntag v1\ntagger ${ident}\n\n`, 'missingObject'],
    ['a bad object id', `object ${TREE_HEX.slice(2)}\ntype tree\ntag v1\ntagger ${ident}\n\n`, 'badObjectSha1'],
    ['no type line', `object ${TREE_HEX}\ntag v1\ntagger ${ident}\n\n`, 'missingTypeEntry'],
    ['an unknown type', `object ${TREE_HEX}\ntype dir\ntag v1\ntagger ${ident}\n\n`, 'badType'],
    ['no tag line', `object ${TREE_HEX}\ntype tree\ntagger ${ident}\n\n`, 'missingTagEntry'],
    ['a bad tagger', `${head}tagger Name <a@b> 1 +00\n\n`, 'badTimezone'],
  ];
  for (const [label, text, id] of cases) {
    it(`reports ${id} for ${label}`, () => {
      expect(ids(fsckTag(Buffer.from(text, 'latin1')))).toContain(id);
    });
  }

  it('reports, without failing, what git only mentions: bad tag names, no tagger, extra headers', () => {
    const problems = [
      ...fsckTag(Buffer.from(`object ${TREE_HEX}\ntype tree\ntag bad..name\ntagger ${ident}\n\n`)),
      ...fsckTag(Buffer.from(`${head}\nold tag without tagger\n`)),
      ...fsckTag(Buffer.from(`${head}tagger ${ident}\nextra header\n\n`)),
    ];
    expect(ids(problems)).toEqual(['badTagName', 'missingTaggerEntry', 'extraHeaderEntry']);
    expect(problems.some(isFsckFailure)).toBe(false);
  });

  it('checks tag names as git check-ref-format does', () => {
    for (const good of ['refs/tags/v1.0', 'refs/tags/a/b', 'refs/tags/-x']) expect(isValidRefname(good), good).toBe(true);
    for (const bad of ['refs/tags/', 'refs/tags/a..b', 'refs/tags/.x', 'refs/tags/x.lock', 'refs/tags/a b', 'refs/tags/a~', 'refs/tags/x.', 'refs/tags/a@{b']) {
      expect(isValidRefname(bad), bad).toBe(false);
    }
  });
});

describe('assertFsckClean', () => {
  it('throws an FsckError naming the message id', () => {
    const tree = rawTree([['100644', 'b'], ['100644', 'a']]);
    expect(() => assertFsckClean('tree', tree, 'abc123')).toThrow(FsckError);
    try {
      assertFsckClean('tree', tree, 'abc123');
    } catch (error) {
      expect(error).toBeInstanceOf(FsckError);
      expect((error as FsckError).id).toBe('treeNotSorted');
      expect((error as FsckError).message).toBe('error in tree abc123: treeNotSorted: not properly sorted');
    }
    // Warnings fail as under --strict; Treehouse also refuses badFilemode.
    expect(() => assertFsckClean('tree', rawTree([['040000', 'd']]))).toThrow(/zeroPaddedFilemode/);
    expect(() => assertFsckClean('tree', rawTree([['100664', 'f']]))).toThrow(/badFilemode/);
    expect(() => assertFsckClean('blob', Buffer.from('anything'))).not.toThrow();
    expect(fsckObject('blob', Buffer.from('\0'))).toEqual([]);
  });
});

describe('assertObjectsFsckClean: every object, then the special blobs its trees name, in one read of each tree', () => {
  const NAMES = ['.gitmodules', '.GITMODULES', '.gitmodules .', 'gitmod~1', 'GI7EBA~1', '.git\u200cmodules', 'x\\.gitmodules', '.gitattributes', '.GitAttributes', '.gitignore', 'a~b', 'caf\u00e9', '.hidden', 'plain'];
  const MODES = ['100644', '100755', '120000', '40000', '160000'];

  it('notes, while checking a tree, exactly the entries specialEntries() finds', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.record({ name: fc.constantFrom(...NAMES), mode: fc.constantFrom(...MODES), id: fc.uint8Array({ minLength: 20, maxLength: 20 }) }), { selector: (entry) => entry.name, maxLength: 8 }), (entries) => {
        const body = rawTree(entries.map(({ name, mode, id }) => [mode, name, Buffer.from(id)]));
        const noted: string[] = [];
        fsckTree(body, (file, oid) => noted.push(`${file} ${oidToHex(oid)}`));
        expect(noted).toEqual(specialEntries(body).map(({ file, oid }) => `${file} ${oidToHex(oid)}`));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a tree before the blobs it names, and a bad .gitmodules blob in or beside the objects', () => {
    const url = Buffer.from('[submodule "x"]\n\tpath = x\n\turl = --upload-pack=evil\n');
    const urlId = hashObject('blob', url);
    const good = Buffer.from('[submodule "x"]\n\tpath = x\n\turl = https://example.com/x\n');
    const goodId = hashObject('blob', good);
    const tree = (blob: Buffer) => encodeTree([{ mode: '100644', name: '.gitmodules', oid: blob }]);
    const object = (type: ObjectType, body: Buffer) => ({ type, body, oid: hashObject(type, body) });
    const stored = new Map([[oidToHex(urlId), { type: 'blob' as const, body: url }]]);
    const read = (oid: Buffer) => stored.get(oidToHex(oid));
    // The bad blob is stored, not among the objects: still found through the trees.
    expect(() => assertObjectsFsckClean([object('tree', tree(urlId))], read)).toThrow(/gitmodulesUrl/);
    expect(() => assertObjectsFsckClean([object('tree', tree(goodId)), object('blob', good)], read)).toThrow(/gitmodulesMissing/);
    stored.set(oidToHex(goodId), { type: 'blob', body: good });
    expect(() => assertObjectsFsckClean([object('tree', tree(goodId))], read)).not.toThrow();
    // An object's own failure comes first, whatever the special blobs hold.
    const unsorted = object('tree', rawTree([['100644', 'b'], ['100644', 'a']]));
    expect(() => assertObjectsFsckClean([object('tree', tree(urlId)), unsorted], read)).toThrow(`error in tree ${oidToHex(unsorted.oid)}: treeNotSorted`);
  });
});

/** Message ids `git fsck --strict` prints for each object of `repo` it finds fault with, by id. */
function gitFsckMessageIds(repo: string): Map<string, Set<string>> {
  let output = '';
  try {
    output = git(['fsck', '--strict', '--no-dangling'], { cwd: repo });
  } catch (error) {
    const failed = error as { stdout?: Buffer; stderr?: Buffer };
    output = `${failed.stdout?.toString() ?? ''}${failed.stderr?.toString() ?? ''}`;
  }
  const found = new Map<string, Set<string>>();
  for (const match of output.matchAll(/(?:error|warning) in \w+ ([0-9a-f]{40}): (\w+):/g)) {
    const set = found.get(match[1]) ?? new Set<string>();
    set.add(match[2]);
    found.set(match[1], set);
  }
  return found;
}

/** gitFsckMessageIds() once `objects` are written into `repo`. */
function gitFsckIds(repo: string, objects: Array<{ type: ObjectType; body: Buffer }>): Map<string, Set<string>> {
  for (const { type, body } of objects) {
    const written = git(['hash-object', '-t', type, '--literally', '-w', '--stdin'], { cwd: repo, input: body }).trim();
    expect(written).toBe(oidToHex(hashObject(type, body)));
  }
  return gitFsckMessageIds(repo);
}

describe('agreement with git fsck --strict', () => {
  const repo = `${scratch.path}/cross.git`;
  initBareRepo(repo);


  it('flags the same problems as git on hand-made trees, commits and tags', () => {
    const objects: Array<{ type: ObjectType; body: Buffer }> = [
      { type: 'tree', body: rawTree([['100644', 'a'], ['100644', 'a']]) },
      { type: 'tree', body: rawTree([['100644', 'foo'], ['100644', 'foo.bar'], ['40000', 'foo']]) },
      { type: 'tree', body: rawTree([['100644', 'b'], ['100644', 'a']]) },
      { type: 'tree', body: rawTree([['40000', '.git']]) },
      { type: 'tree', body: rawTree([['40000', 'GIT~1']]) },
      { type: 'tree', body: rawTree([['40000', '.g\u200cit']]) },
      { type: 'tree', body: rawTree([['40000', '.git . ']]) },
      { type: 'tree', body: rawTree([['40000', '..']]) },
      { type: 'tree', body: rawTree([['040000', 'dir']]) },
      { type: 'tree', body: rawTree([['100664', 'file']]) },
      { type: 'tree', body: rawTree([['120000', '.gitmodules']]) },
      { type: 'tree', body: rawTree([['120000', 'gi7eba~1']]) },
      { type: 'tree', body: rawTree([['100644', 'a/b']]) },
      { type: 'tree', body: rawTree([['100644', 'fine'], ['100644', 'fine.txt']]) },
      { type: 'commit', body: commitText(`tree ${TREE_HEX}`, 'author Name <a@b> 1 +010', `committer ${ident}`) },
      { type: 'commit', body: commitText(`tree ${TREE_HEX}`, `committer ${ident}`, `author ${ident}`) },
      { type: 'commit', body: commitText(`tree ${TREE_HEX}`, 'author Name <a@b> 0123 +0000', `committer ${ident}`) },
      { type: 'commit', body: commitText(`tree ${TREE_HEX}`, 'author Name<a@b> 1 +0000', `committer ${ident}`) },
      { type: 'commit', body: commitText(`tree ${TREE_HEX}`, `author ${ident}`, `author ${ident}`, `committer ${ident}`) },
      { type: 'tree', body: rawTree([['100644', '']]) },
      { type: 'commit', body: Buffer.from(`tree ${TREE_HEX}\nauthor ${ident}\ncommitter ${ident}\n\nm\0x`, 'latin1') },
      { type: 'tag', body: Buffer.from(`object ${TREE_HEX}\ntype tree\ntag v1\ntagger Name <a@b> 1 0000\n\n`) },
      { type: 'tag', body: Buffer.from(`object ${TREE_HEX}\ntype tree\ntag v1\n\nno tagger\n`) },
      { type: 'tag', body: Buffer.from(`object ${TREE_HEX}\ntype tree\ntag a..b\ntagger ${ident}\nextra header\n\nm\n`) },
    ];
    const theirs = gitFsckIds(repo, objects);
    for (const { type, body } of objects) {
      const hex = oidToHex(hashObject(type, body));
      // git does not print the messages it ignores by default (extraHeaderEntry).
      const ours = new Set(ids(fsckObject(type, body).filter((found) => found.severity !== 'ignore')));
      expect([...ours].sort(), `${type} ${JSON.stringify(body.toString('latin1'))}`).toEqual([...(theirs.get(hex) ?? [])].sort());
    }
  });
});

describe('agreement with git fsck --strict on random trees', () => {
  const repo = `${scratch.path}/random-trees.git`;
  initBareRepo(repo);

  it('flags the same problems as git on 200 trees of hostile names, modes and orders', () => {
    // Names that exercise every rule: order and duplicates ("foo", "foo.bar", "foo/"), '.git' and
    // its look-alikes, separators, special files, non-ASCII bytes.
    const names = ['a', 'a.b', 'a-b', 'a/b', 'a\\b', 'a\\.git', '.', '..', '.git', '.GIT', 'git~1', 'GIT~1 ', '.git.', '.g\u200cit', '\u200d.git', 'g', 'foo', 'foo.bar', 'foo-bar', 'foo bar', '.gitmodules', 'gitmod~1', '.gitattributes', '.gitignore', '.mailmap', 'x~y', 'caf\u00e9', 'B', 'b', 'z'];
    const modes = ['100644', '100755', '120000', '40000', '040000', '160000', '100664'];
    const entry = fc.tuple(fc.constantFrom(...modes), fc.constantFrom(...names), fc.boolean());
    const trees = fc.sample(fc.array(entry, { minLength: 1, maxLength: 6 }), { numRuns: 200, seed: 27 }).map((entries) =>
      rawTree(entries.map(([mode, name, nullId]) => [mode, name, nullId ? Buffer.alloc(20) : Buffer.from(EMPTY_BLOB_OID)])),
    );
    const theirs = gitFsckIds(repo, trees.map((body) => ({ type: 'tree' as const, body })));
    let flagged = 0;
    for (const body of trees) {
      const hex = oidToHex(hashObject('tree', body));
      const ours = new Set(ids(fsckTree(body)));
      if (ours.size > 0) flagged++;
      expect([...ours].sort(), JSON.stringify(body.toString('latin1'))).toEqual([...(theirs.get(hex) ?? [])].sort());
    }
    // Not a vacuous agreement: most of these trees break some rule, and some break none.
    expect(flagged).toBeGreaterThan(100);
    expect(flagged).toBeLessThan(trees.length);
  });
});

describe('.gitmodules and .gitattributes blobs, against git fsck --strict', () => {
  const repo = `${scratch.path}/special.git`;
  initBareRepo(repo);


  const GITMODULES_CASES = [
    '[submodule "x"]\n\tpath = x\n\turl = https://example.com/x.git\n',
    '[submodule "x"]\n\turl = --upload-pack=evil\n',
    '[submodule "../../x"]\n\tpath = x\n',
    '[submodule "a\\\\..\\\\b"]\n\tpath = x\n',
    '[submodule "x"]\n\tpath = --evil\n',
    '[submodule "x"]\n\tupdate = !rm -rf /\n',
    '[submodule "x"]\n\tupdate = rebase\n',
    '[submodule "x"]\n\turl = ../../:evil\n',
    '[submodule "x"]\n\turl = ./%0aevil\n',
    '[submodule "x"]\n\turl = http::https:///nohost\n',
    '[submodule "x"]\n\turl = https://u%0a@example.com/\n',
    '[submodule "x"]\n\turl = https://example.com/%0a\n',
    '[submodule "x"]\n\turl = https://ex%0aample.com:443/\n',
    '[submodule "x"]\n\turl = file:///anything\n',
    '[submodule "x"\n\turl = --not-read\n',
    '\xef\xbb\xbf[submodule "x"]\n\tpath = x\n',
    '[submodule "x"]\n\turl = ok\xff\n[submodule ".."]\n\tpath = after-eof\n',
    '[core]\n\turl = --not-a-submodule\n',
  ];

  it('flags the same problems as git for every special name and content', () => {
    const blobs = [...GITMODULES_CASES.map((text) => Buffer.from(text, 'latin1')), ...fc.sample(configText, { numRuns: 120, seed: 7 })];
    const blobIds = writeBlobs(`${scratch.path}/special-blobs`, repo, blobs);
    const attributes = [Buffer.from(`*.txt ${'x'.repeat(2100)}\n`), Buffer.from(`*.txt ${'x'.repeat(2000)}\n`), Buffer.from(`a\n\0${'x'.repeat(3000)}\n`)];
    const attributeIds = writeBlobs(`${scratch.path}/attribute-blobs`, repo, attributes);
    const objects = new Map<string, { type: ObjectType; body: Buffer }>();
    blobs.forEach((body, i) => objects.set(blobIds[i], { type: 'blob', body }));
    attributes.forEach((body, i) => objects.set(attributeIds[i], { type: 'blob', body }));
    const subtree = git(['mktree'], { cwd: repo, input: `100644 blob ${blobIds[0]}\tfile\n` }).trim();
    objects.set(subtree, { type: 'tree', body: rawTree([['100644', 'file', Buffer.from(blobIds[0], 'hex')]]) });

    // One tree per case: content cases under ".gitmodules"; names git equates with it; a directory
    // and a submodule so named; .gitattributes cases.
    const trees: string[][] = blobIds.map((oid) => [`100644 blob ${oid}\t.gitmodules`]);
    for (const name of ['.GITMODULES', '.gitmodules .', 'gitmod~1', 'GI7EBA~1', '.git\u200cmodules', 'x\\.gitmodules']) trees.push([`100644 blob ${blobIds[1]}\t${name}`]);
    trees.push([`040000 tree ${subtree}\t.gitmodules`]);
    trees.push([`160000 commit ${'ab'.repeat(20)}\t.gitmodules`]);
    trees.push([`120000 blob ${blobIds[1]}\t.gitmodules`]);
    attributeIds.forEach((oid) => trees.push([`100644 blob ${oid}\t.gitattributes`]));
    trees.push([`100644 blob ${attributeIds[0]}\t.GitAttributes`]);
    const treeIds = git(['mktree', '--batch', '--missing'], { cwd: repo, input: trees.map((lines) => `${lines.join('\n')}\n`).join('\n') })
      .trim()
      .split('\n');
    expect(treeIds).toHaveLength(trees.length);

    const theirs = gitFsckMessageIds(repo);
    const ours = new Map<string, Set<string>>();
    for (const treeId of treeIds) {
      const raw = gitBytes(['cat-file', 'tree', treeId], { cwd: repo });
      for (const found of fsckSpecialBlobs([raw], (oid) => objects.get(oidToHex(oid)))) {
        const set = ours.get(found.oid) ?? new Set<string>();
        set.add(found.problem.id);
        ours.set(found.oid, set);
      }
    }
    // Tree-level problems (gitmodulesSymlink) are fsckTree's; compare the objects the trees name.
    for (const oid of new Set([...blobIds, ...attributeIds, subtree, 'ab'.repeat(20)])) {
      expect([...(ours.get(oid) ?? [])].sort(), `object ${oid}: ${JSON.stringify(objects.get(oid)?.body.toString('latin1') ?? '(missing)')}`).toEqual(
        [...(theirs.get(oid) ?? [])].sort(),
      );
    }
    // Not a vacuous agreement: git did flag these.
    expect(theirs.get(blobIds[1])).toEqual(new Set(['gitmodulesUrl']));
    expect(theirs.get(blobIds[2])).toEqual(new Set(['gitmodulesName']));
    expect(theirs.get(subtree)).toEqual(new Set(['gitmodulesBlob']));
    expect(theirs.get('ab'.repeat(20))).toEqual(new Set(['gitmodulesMissing']));
    expect(theirs.get(attributeIds[0])).toEqual(new Set(['gitattributesLineLength']));
    // What counts as a failure: every error above, never gitmodulesParse alone (git only reports it).
    expect(isFsckFailure({ id: 'gitmodulesParse', severity: 'info', message: '' })).toBe(false);
  });
});
