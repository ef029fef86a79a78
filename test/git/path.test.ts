import { describe, expect, it } from 'vitest';
import { ancestors, isWithin, pathProblem } from '../../src/git/path.js';
import { branchNameProblem } from '../../src/git/refname.js';

describe('pathProblem', () => {
  it.each(['a', 'src/index.ts', 'dir/ünï cödé.txt', '.gitignore', 'a/.github/x', '.gitx/y', '.gitmodules', 'a/.gitattributes', '.gitmodulesx/y'])('accepts %s', (path) => {
    expect(pathProblem(path)).toBeNull();
  });
  it.each([
    '',
    '/etc/passwd',
    '../x',
    'a/../b',
    'a/./b',
    'a//b',
    'a/',
    '.git/config',
    '.GIT/x',
    'x/.Git',
    'nul\0byte',
    'a\\b',
    'x'.repeat(256),
    `${'d/'.repeat(2048)}f`,
    '.gitmodules/x',
    'a/.GITMODULES/x',
    'gitmod~1/x',
    '.gitattributes/x',
  ])('refuses %j', (path) => {
    expect(pathProblem(path)).not.toBeNull();
  });
  it('counts the bytes a name stands for, and takes escapes of bytes that are not UTF-8 but no other lone surrogate', () => {
    expect(pathProblem('caf\udce9.txt')).toBeNull();
    expect(pathProblem('\udcff'.repeat(255))).toBeNull();
    expect(pathProblem('\udcff'.repeat(256))).toMatch(/255 bytes/);
    expect(pathProblem('\u00e9'.repeat(128))).toMatch(/255 bytes/);
    expect(pathProblem('u\ud800')).toMatch(/lone surrogate/);
    expect(pathProblem('u\udc7f')).toMatch(/lone surrogate/);
  });
  it('refuses paths deeper than git\'s core.maxTreeDepth (4,096 components), naming that before the byte limit', () => {
    expect(pathProblem(`${'d/'.repeat(4096)}f`)).toMatch(/deeper than 4096 components/);
    expect(pathProblem(`${'d/'.repeat(2047)}f`)).toBeNull();
  });
  it('lists ancestors and containment', () => {
    expect(ancestors('a/b/c')).toEqual(['a/b', 'a', '']);
    expect(isWithin('a/b', 'a')).toBe(true);
    expect(isWithin('ab', 'a')).toBe(false);
  });
});

describe('branchNameProblem', () => {
  it.each(['main', 'feature/login', 'v1.2', 'fix-123_x'])('accepts %s', (name) => {
    expect(branchNameProblem(name)).toBeNull();
  });
  it.each(['', '-x', 'a..b', 'a b', 'a~1', 'a^', 'a:b', 'a?', 'a*', 'a[', 'a\\b', '/a', 'a/', 'a//b', 'a.', '.a', 'a/.b', 'x.lock', 'a@{b', '@', 'HEAD'])(
    'refuses %j',
    (name) => {
      expect(branchNameProblem(name)).not.toBeNull();
    },
  );
});
