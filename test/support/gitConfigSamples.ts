/**
 * Generated git config texts for differential tests against git (test/git/gitConfig.test.ts and
 * the .gitmodules checks in test/git/fsck.test.ts), and a bulk blob writer for them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { gitBytes } from './git.js';

/** Pieces of config text, many of them at the edges of git's grammar. */
export const CONFIG_TOKENS = [
  '[submodule "x"]',
  '[submodule "a b"]',
  '[submodule "../../x"]',
  '[submodule ".."]',
  '[submodule "a\\\\..\\\\b"]',
  '[submodule "q\\"uote"]',
  '[submodule.Dotted]',
  '[Submodule "Upper"]',
  '[submodule]',
  '[core]',
  '[',
  ']',
  '"',
  '\n',
  '\r\n',
  '\r',
  ' ',
  '\t',
  '\v',
  '#c',
  ';c',
  'url',
  'path',
  'update',
  'URL',
  'u-rl',
  '=',
  ' = ',
  '--upload-pack=x',
  '-x',
  './a',
  '../a',
  '../../:x',
  'git://h/%0a',
  'http://h/',
  'https::foo',
  'http:///x',
  'http://u%0a@h/',
  '!cmd',
  '\\',
  '\\n',
  '\\t',
  '\\q',
  '\\\n',
  'a',
  '.',
  '/',
  '\xff',
  '\x00',
  '\xef\xbb\xbf',
  '\xe9',
];

const tokenSoup = fc.array(fc.constantFrom(...CONFIG_TOKENS), { maxLength: 14 }).map((tokens) => tokens.join(''));

/** Mostly well-formed configs (sections, keys, values, comments), so that variables get through. */
const section = fc.constantFrom(
  '[submodule "x"]',
  '[submodule "../../x"]',
  '[submodule "a/../b"]',
  '[submodule "a\\\\..\\\\b"]',
  '[submodule ".."]',
  '[submodule "..x"]',
  '[submodule ""]',
  '[submodule.Dotted]',
  '[submodule.../x]',
  '[ submodule "sp" ]',
  '[submodule "x"] ',
  '[core]',
);
const valueToken = fc.constantFrom(
  '--upload-pack=evil',
  '-x',
  './a',
  '../a',
  '../../:x',
  '.././/x',
  '..\\x:y',
  'git://h/%0a',
  'git://h/x',
  'http://h/',
  'https://u:p@h:1/p?q#f',
  'https::foo',
  'http::https://h/',
  'http:///x',
  'http://u%0a@h/',
  'http://h%0a.com:80/',
  'http://h/%0a',
  'ftp://%0A/',
  'file:///x',
  '!cmd',
  'none',
  'x',
  ' ',
  '"',
  '\\n',
  '\\t',
  '\\"',
  '#c',
  ';c',
  '\x00',
);
const keyLine = fc
  .tuple(fc.constantFrom('', '\t', ' '), fc.constantFrom('url', 'path', 'update', 'URL', 'Path', 'bare', 'u-rl'), fc.constantFrom(' = ', '=', '\t=\t', ''), fc.array(valueToken, { maxLength: 4 }))
  .map(([indent, key, separator, value]) => `${indent}${key}${separator}${separator === '' ? '' : value.join('')}`);
const structured = fc
  .array(fc.tuple(fc.oneof(section, keyLine, keyLine), fc.constantFrom('\n', '\r\n', '\n\n')), { maxLength: 8 })
  .map((lines) => lines.map(([line, end]) => line + end).join(''));

export const configText = fc.oneof(structured, structured, tokenSoup).map((text) => Buffer.from(text, 'latin1'));

/** Writes blobs into the scratch repository with one git process; returns their ids. */
export function writeBlobs(dir: string, repoPath: string, blobs: Buffer[]): string[] {
  mkdirSync(dir, { recursive: true });
  const paths = blobs.map((blob, i) => {
    const path = join(dir, `blob-${i}`);
    writeFileSync(path, blob);
    return path;
  });
  return gitBytes(['hash-object', '-w', '--stdin-paths'], { cwd: repoPath, input: paths.join('\n') })
    .toString('latin1')
    .trim()
    .split('\n');
}

