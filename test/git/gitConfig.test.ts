/**
 * parseGitConfig against git itself: `git config --blob=<id> --list -z` reads a blob with the same
 * in-memory parser fsck uses for .gitmodules, so for every input it must report the same variables
 * and values, in order, and fail exactly when git fails.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { parseGitConfig } from '../../src/git/gitConfig.js';
import { initBareRepo, scratchDir } from '../support/git.js';
import { configText, writeBlobs } from '../support/gitConfigSamples.js';

const scratch = scratchDir('treehouse-config-');
afterAll(() => scratch.remove());
const repo = join(scratch.path, 'config.git');
initBareRepo(repo);

/** What git's parser reports for a blob: `name\nvalue\0` per variable (`name\0` for a bare key). */
function gitParse(oid: string): Promise<{ variables: Array<[string, string | null]>; ok: boolean }> {
  return new Promise((resolve) => {
    execFile('git', ['config', `--blob=${oid}`, '--list', '-z'], { cwd: repo, encoding: 'buffer', env: isolatedGitEnv() }, (error, stdout) => {
      const variables: Array<[string, string | null]> = [];
      for (const record of stdout.toString('latin1').split('\0')) {
        if (record === '') continue;
        const newline = record.indexOf('\n');
        variables.push(newline < 0 ? [record, null] : [record.slice(0, newline), record.slice(newline + 1)]);
      }
      resolve({ variables, ok: !error });
    });
  });
}

const ours = (blob: Buffer) => {
  const parsed = parseGitConfig(blob);
  return { variables: parsed.variables.map(({ name, value }) => [name.toString('latin1'), value === null ? null : value.toString('latin1')]), ok: parsed.ok };
};

describe('parseGitConfig', () => {
  it('reads sections, subsections, bare keys, quotes, escapes and comments as git does', () => {
    const text = '[core]\n\tbare\n[Submodule "Name.With.Dots"]\n\tURL = " spaced " value ; comment\n\tpath=a\\tb\\\\c\n[sub.Old]\nkey = x # c\n';
    expect(ours(Buffer.from(text))).toEqual({
      variables: [
        ['core.bare', null],
        ['submodule.Name.With.Dots.url', ' spaced  value'],
        ['submodule.Name.With.Dots.path', 'a\tb\\c'],
        ['sub.old.key', 'x'],
      ],
      ok: true,
    });
    // A parse error stops the reading; what came before was reported.
    expect(ours(Buffer.from('[a]\nk = 1\n[b\nk = 2\n'))).toEqual({ variables: [['a.k', '1']], ok: false });
    // From memory, 0xFF is EOF and the UTF-8 BOM is not skipped (git reads a signed char).
    expect(ours(Buffer.from('[a]\nk = 1\xff\n', 'latin1'))).toEqual({ variables: [['a.k', '1']], ok: true });
    expect(ours(Buffer.from('\xef\xbb\xbf[a]\nk = 1\n', 'latin1')).ok).toBe(false);
  });

  it('agrees with git config --blob on hand-picked and generated inputs', async () => {
    const inputs = [
      Buffer.from('[submodule "x"]\n\turl = --upload-pack=evil\n'),
      Buffer.from('[a]\nk = 1\xff\nk = 2\n', 'latin1'),
      Buffer.from('\xef\xbb\xbf[a]\nk = 1\n', 'latin1'),
      Buffer.from('[a "b\0c"]\nk = v\0w\n', 'latin1'),
      Buffer.from('[a]\nk = "unterminated\n'),
      Buffer.from('[a]\nk = \\q\n'),
      Buffer.from('[a]\nk\r\n = v\r\n'),
      Buffer.from('[a]\nk = v\\\n continued\n'),
      Buffer.from('[a]\n\vk = v\n'),
      ...fc.sample(configText, { numRuns: 150, seed: 20241112 }),
    ];
    const oids = writeBlobs(join(scratch.path, 'blobs'), repo, inputs);
    // Four git processes at a time.
    for (let start = 0; start < inputs.length; start += 4) {
      const batch = inputs.slice(start, start + 4);
      const theirs = await Promise.all(batch.map((_, i) => gitParse(oids[start + i])));
      batch.forEach((input, i) => expect(ours(input), JSON.stringify(input.toString('latin1'))).toEqual(theirs[i]));
    }
  }, 120_000);
});
