import { describe, expect, it } from 'vitest';
import { ancestors, isWithin, pathProblem } from '../../src/git/path.js';
import { branchNameProblem } from '../../src/git/refname.js';

describe('pathProblem', () => {
  it.each(['a', 'src/index.ts', 'dir/ünï cödé.txt', '.gitignore', 'a/.github/x', '.gitx/y'])('accepts %s', (path) => {
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
  ])('refuses %j', (path) => {
    expect(pathProblem(path)).not.toBeNull();
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
