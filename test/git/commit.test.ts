import { afterAll, describe, expect, it } from 'vitest';
import { commitLinks, decodeCommit, encodeCommit, type Commit } from '../../src/git/commit.js';
import { EMPTY_TREE_OID, hashObject, oidFromHex, oidToHex } from '../../src/git/oid.js';
import { decodeTag } from '../../src/git/tag.js';
import { git, gitBytes, initBareRepo, scratchDir } from '../support/git.js';

const scratch = scratchDir();
initBareRepo(scratch.path);
afterAll(() => scratch.remove());

const env = {
  GIT_AUTHOR_NAME: 'Ada Lovelace',
  GIT_AUTHOR_EMAIL: 'ada@example.com',
  GIT_AUTHOR_DATE: '1700000000 +0130',
  GIT_COMMITTER_NAME: 'Grace Hopper',
  GIT_COMMITTER_EMAIL: 'grace@example.com',
  GIT_COMMITTER_DATE: '1700000100 -0800',
};

describe('encodeCommit', () => {
  it('equals git commit-tree, with parents and a multi-line message', () => {
    git(['hash-object', '-w', '-t', 'tree', '--stdin'], { cwd: scratch.path, input: '' });
    const root = git(['commit-tree', oidToHex(EMPTY_TREE_OID), '-m', 'first'], { cwd: scratch.path, env }).trim();
    const other = git(['commit-tree', oidToHex(EMPTY_TREE_OID), '-m', 'other'], { cwd: scratch.path, env }).trim();
    const message = 'Subject line\n\nBody with ünïcode\nsecond line';
    const child = git(['commit-tree', oidToHex(EMPTY_TREE_OID), '-p', root, '-p', other, '-m', message], {
      cwd: scratch.path,
      env,
    }).trim();
    const commit: Commit = {
      tree: EMPTY_TREE_OID,
      parents: [oidFromHex(root), oidFromHex(other)],
      author: { name: 'Ada Lovelace', email: 'ada@example.com', timestamp: 1700000000, timezone: '+0130' },
      committer: { name: 'Grace Hopper', email: 'grace@example.com', timestamp: 1700000100, timezone: '-0800' },
      extraHeaders: [],
      message: `${message}\n`,
    };
    expect(oidToHex(hashObject('commit', encodeCommit(commit)))).toBe(child);
    const stored = gitBytes(['cat-file', 'commit', child], { cwd: scratch.path });
    expect(decodeCommit(stored)).toEqual(commit);
  });

  it('keeps unknown and multi-line headers through a round trip', () => {
    const raw = Buffer.from(
      `tree ${oidToHex(EMPTY_TREE_OID)}\n` +
        'author A <a@x> 1 +0000\ncommitter C <c@x> 2 +0000\nencoding ISO-8859-1\n' +
        'gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nmsg\n',
    );
    const decoded = decodeCommit(raw);
    expect(decoded.extraHeaders.map(([k]) => k)).toEqual(['encoding', 'gpgsig']);
    expect(encodeCommit(decoded).equals(raw)).toBe(true);
  });

  it('refuses malformed commits', () => {
    expect(() => decodeCommit(Buffer.from('tree nothex\n\n'))).toThrow();
    expect(() => decodeCommit(Buffer.from(`tree ${oidToHex(EMPTY_TREE_OID)}\nauthor bad\n\n`))).toThrow();
  });
});

describe('commitLinks', () => {
  const tree = oidToHex(EMPTY_TREE_OID);
  const parent = oidToHex(hashObject('blob', Buffer.from('a parent')));
  const other = oidToHex(hashObject('blob', Buffer.from('another')));
  const signed = 'author A <a@example.com> 1700000000 +0000\ncommitter C <c@example.com> 1700000000 +0000\n';

  it('gives the tree and parents decodeCommit gives, of no, one and many parents, headers after them and a gpgsig', () => {
    const bodies = [
      `tree ${tree}\n${signed}\nroot\n`,
      `tree ${tree}\nparent ${parent}\n${signed}\nchild\n`,
      `tree ${tree}\nparent ${parent}\nparent ${other}\nparent ${tree}\n${signed}encoding latin1\ngpgsig -----BEGIN\n line\n -----END\n\nmerge\n`,
      `tree ${tree}\n${signed}`,
    ];
    for (const text of bodies) {
      const body = Buffer.from(text);
      const { tree: decodedTree, parents } = decodeCommit(body);
      expect(commitLinks(body)).toEqual({ tree: decodedTree, parents });
    }
  });

  it('leaves first lines it does not read to decodeCommit, which refuses them', () => {
    const bad = [
      `tree ${tree.toUpperCase()}\n${signed}\n`,
      `tree ${tree.slice(1)}\n${signed}\n`,
      `parent ${parent}\ntree ${tree}\n${signed}\n`,
      `tree ${tree}\nparent ${parent.slice(0, 39)}g\n${signed}\n`,
      `tree ${tree}\nparent ${parent}\n continued\n${signed}\n`,
      `tree ${tree}\nparent  ${parent}\n${signed}\n`,
      `tree ${tree}\ncommitter C <c@example.com> 1700000000 +0000\n\n`,
      `tree ${tree}`,
    ];
    for (const text of bad) {
      const body = Buffer.from(text);
      expect(() => decodeCommit(body), text).toThrow();
      expect(() => commitLinks(body), text).toThrow();
    }
  });
});

describe('decodeTag', () => {
  it('reads an annotated tag written by git', () => {
    const commit = git(['commit-tree', oidToHex(EMPTY_TREE_OID), '-m', 'c'], { cwd: scratch.path, env }).trim();
    const input = `object ${commit}\ntype commit\ntag v1.0\ntagger T <t@x> 1700000000 +0000\n\nrelease\n`;
    const oid = git(['hash-object', '-t', 'tag', '-w', '--stdin'], { cwd: scratch.path, input }).trim();
    const tag = decodeTag(gitBytes(['cat-file', 'tag', oid], { cwd: scratch.path }));
    expect(oidToHex(tag.object)).toBe(commit);
    expect(tag).toMatchObject({ type: 'commit', tag: 'v1.0', message: 'release\n' });
  });
});
