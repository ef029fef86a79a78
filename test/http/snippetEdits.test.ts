/**
 * Snippet edits in POST files/batch (../shared/API.md "Workspace additions", README "Snippet
 * edits"): each `old` must occur exactly once in the text the previous edits left; anything else is
 * 409 edit_mismatch and the batch writes nothing. Every refusal is checked to leave the project as
 * it was (files, locks, version, heads).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/service/events.js';
import { projectState } from '../support/projectState.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 0 } });
});
afterAll(() => server.close());

type Files = Record<string, string>;

async function newProject(files: Files): Promise<string> {
  const created = await server.call('POST', '/api/v1/projects', {
    title: 'Edits',
    source: { kind: 'files', files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return `/api/v1/projects/${created.body.project.id}`;
}

const batch = (base: string, body: unknown) => server.call('POST', `${base}/files/batch`, body);
const read = async (base: string, path: string, branch = 'main') => (await server.call('GET', `${base}/files/${path}?branch=${branch}`)).body;

/** Sends a batch that must be refused with `status`, checks that nothing changed, and returns the error. */
async function refused(base: string, body: unknown, status: number): Promise<{ code: string; message: string; details?: any }> {
  const before = await projectState(server, base);
  const response = await batch(base, body);
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(await projectState(server, base)).toEqual(before);
  return response.body.error;
}

describe('snippet edits', () => {
  it('replace text that occurs once, in order, on the text the previous edits left', async () => {
    const base = await newProject({ 'app.ts': 'const a = 1;\nconst b = 2;\nexport { a, b };\n' });
    const written = await batch(base, {
      files: [
        {
          path: 'app.ts',
          edits: [
            { old: 'const a = 1;', new: 'const a = 10;' },
            // Overlaps the first edit's result: it sees the text that edit left.
            { old: '10;\nconst b', new: '10;\nlet b' },
            { old: 'export { a, b };\n', new: '' },
          ],
        },
      ],
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    expect(written.body).toEqual({ written: 1 });
    expect((await read(base, 'app.ts')).content).toBe('const a = 10;\nlet b = 2;\n');
  });

  it('refuse an old text that occurs nowhere, or more than once (overlapping occurrences count), naming the edit', async () => {
    const base = await newProject({ 'a.txt': 'one two one\naaa\n', 'b.txt': 'b\n' });
    const nowhere = await refused(base, { files: [{ path: 'a.txt', edits: [{ old: 'one two', new: 'x' }, { old: 'three', new: '3' }] }] }, 409);
    expect(nowhere).toMatchObject({ code: 'edit_mismatch', details: { path: 'a.txt', index: 1, occurrences: 0 } });
    const twice = await refused(base, { files: [{ path: 'b.txt', content: 'changed\n' }, { path: 'a.txt', edits: [{ old: 'one', new: '1' }] }] }, 409);
    expect(twice).toMatchObject({ code: 'edit_mismatch', details: { path: 'a.txt', index: 0, occurrences: 2 } });
    const overlapping = await refused(base, { files: [{ path: 'a.txt', edits: [{ old: 'aa', new: 'b' }] }] }, 409);
    expect(overlapping.details).toEqual({ path: 'a.txt', index: 0, occurrences: 2 });
    // An earlier edit can remove what a later one looks for, or make it appear twice.
    const removed = await refused(base, { files: [{ path: 'a.txt', edits: [{ old: 'two', new: 'three' }, { old: 'one two', new: 'x' }] }] }, 409);
    expect(removed.details).toEqual({ path: 'a.txt', index: 1, occurrences: 0 });
    const doubled = await refused(base, { files: [{ path: 'a.txt', edits: [{ old: 'two', new: 'aaa' }, { old: 'aaa', new: 'x' }] }] }, 409);
    expect(doubled.details).toEqual({ path: 'a.txt', index: 1, occurrences: 2 });
  });

  it('apply with the writes and deletes of the same batch, all or nothing', async () => {
    const base = await newProject({ 'a.txt': 'alpha\n', 'gone.txt': 'g\n', 'dir/x.txt': 'x\n' });
    const ok = await batch(base, {
      files: [
        { path: 'new.txt', content: 'new\n' },
        { path: 'a.txt', edits: [{ old: 'alpha', new: 'beta' }] },
      ],
      deletes: ['gone.txt'],
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.written).toBe(2);
    expect((await read(base, 'a.txt')).content).toBe('beta\n');
    expect((await server.call('GET', `${base}/files/gone.txt`)).status).toBe(404);

    const mismatch = await refused(
      base,
      { files: [{ path: 'other.txt', content: 'o\n' }, { path: 'new.txt', content: 'changed\n' }, { path: 'a.txt', edits: [{ old: 'alpha', new: 'gamma' }] }], deletes: ['dir'] },
      409,
    );
    expect(mismatch.details).toEqual({ path: 'a.txt', index: 0, occurrences: 0 });
    // Deletes apply first: edits of a file the same batch deletes find nothing.
    const deleted = await refused(base, { files: [{ path: 'new.txt', edits: [{ old: 'new', new: 'x' }] }], deletes: ['new.txt'] }, 404);
    expect(deleted).toMatchObject({ code: 'not_found', details: { paths: ['new.txt'] } });
  });

  it('need an existing file: a missing path, a directory or a path below a file is a 404', async () => {
    const base = await newProject({ 'dir/x.txt': 'x\n', 'f.txt': 'f\n' });
    for (const path of ['nope.txt', 'dir', 'f.txt/below']) {
      const error = await refused(base, { files: [{ path, edits: [{ old: 'x', new: 'y' }] }, { path: 'ok.txt', content: 'ok\n' }] }, 404);
      expect(error).toMatchObject({ code: 'not_found', details: { paths: [path] } });
    }
  });

  it('follow the lock rules of content writes', async () => {
    const base = await newProject({ 'l.txt': 'locked text\n' });
    expect((await batch(base, { files: [{ path: 'l.txt', edits: [], locked: true }] })).status).toBe(200);
    expect((await read(base, 'l.txt')).locked).toBe(true);
    const error = await refused(base, { files: [{ path: 'l.txt', edits: [{ old: 'locked', new: 'changed' }] }] }, 423);
    expect(error).toMatchObject({ code: 'file_locked', details: { paths: ['l.txt'] } });
    // An edit that leaves the text as it was is not a change.
    expect((await batch(base, { files: [{ path: 'l.txt', edits: [{ old: 'locked', new: 'locked' }] }] })).status).toBe(200);
    const unlocked = await batch(base, { files: [{ path: 'l.txt', edits: [{ old: 'locked', new: 'free' }], locked: false }] });
    expect(unlocked.status).toBe(200);
    expect(await read(base, 'l.txt')).toMatchObject({ content: 'free text\n', locked: false });
  });

  it('match UTF-8 text exactly: code points, no normalisation, no line-ending conversion', async () => {
    const text = 'smile \u{1F600} caf\u00e9 cafe\u0301\r\nline two\r\n';
    const base = await newProject({ 'u.txt': text });
    // Precomposed é and e + combining acute look alike but are different text.
    expect((await refused(base, { files: [{ path: 'u.txt', edits: [{ old: 'caf', new: 'x' }] }] }, 409)).details.occurrences).toBe(2);
    const edited = await batch(base, {
      files: [
        {
          path: 'u.txt',
          edits: [
            { old: '\u00e9', new: 'E1' },
            { old: 'e\u0301', new: 'E2' },
            { old: '\ud83d\ude00', new: '\u{1F642}' },
            { old: 'E2\r\nline', new: 'E2\nline' },
          ],
        },
      ],
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await read(base, 'u.txt')).content).toBe('smile \u{1F642} cafE1 cafE2\nline two\r\n');
    const lf = await refused(base, { files: [{ path: 'u.txt', edits: [{ old: 'two\n', new: '2\n' }] }] }, 409);
    expect(lf.details).toEqual({ path: 'u.txt', index: 0, occurrences: 0 });
    // The combining mark alone is text of its own and can be matched.
    const mark = await batch(base, { files: [{ path: 'u.txt', content: 'e\u0301\n' }] });
    expect(mark.status).toBe(200);
    expect((await batch(base, { files: [{ path: 'u.txt', edits: [{ old: '\u0301', new: '\u0300' }] }] })).status).toBe(200);
    expect((await read(base, 'u.txt')).content).toBe('e\u0300\n');
  });

  it('refuse a file that is not UTF-8 (400); valid UTF-8 with NUL bytes is text', async () => {
    const base = await newProject({ 'a.txt': 'a\n' });
    await batch(base, { files: [{ path: 'latin1.txt', content: Buffer.from('caf\xe9 x\n', 'latin1').toString('base64'), encoding: 'base64' }, { path: 'nul.bin', content: 'a\u0000b\n' }] });
    const error = await refused(base, { files: [{ path: 'latin1.txt', edits: [{ old: 'x', new: 'y' }] }] }, 400);
    expect(error).toMatchObject({ code: 'invalid_request', details: { path: 'latin1.txt', issues: [{ path: 'files.0.edits' }] } });
    expect((await batch(base, { files: [{ path: 'nul.bin', edits: [{ old: '\u0000', new: '-' }] }] })).status).toBe(200);
    expect((await read(base, 'nul.bin')).content).toBe('a-b\n');
  });

  it('refuse hostile shapes with 400 and change nothing', async () => {
    const base = await newProject({ 'a.txt': 'a\n' });
    const bodies: unknown[] = [
      { files: [{ path: 'a.txt', content: 'x', edits: [{ old: 'a', new: 'b' }] }] },
      { files: [{ path: 'a.txt' }] },
      { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'b' }], encoding: 'utf8' }] },
      { files: [{ path: 'a.txt', edits: [{ old: '', new: 'b' }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: 1, new: 'b' }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: 'a', new: null }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: 'a' }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: ['a'], new: 'b' }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'b', all: true }] }] },
      { files: [{ path: 'a.txt', edits: { old: 'a', new: 'b' } }] },
      { files: [{ path: 'a.txt', edits: ['a'] }] },
      { files: [{ path: 'a.txt', edits: [{ old: '\ud83d', new: 'b' }] }] },
      { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'b\udc00' }] }] },
      { files: [{ path: '../a.txt', edits: [{ old: 'a', new: 'b' }] }] },
      // One path twice: several edits of a file go in one entry.
      { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'b' }] }, { path: 'a.txt', edits: [{ old: 'b', new: 'c' }] }] },
      { files: [{ path: 'a.txt', content: 'x' }, { path: 'a.txt', edits: [{ old: 'a', new: 'b' }] }] },
    ];
    for (const body of bodies) {
      const error = await refused(base, body, 400);
      expect(error.code, JSON.stringify(body)).toBe('invalid_request');
      expect(error.details.issues.length, JSON.stringify(body)).toBeGreaterThan(0);
    }
    // A raw body with a lone surrogate escape, as a client would send it.
    const before = await projectState(server, base);
    const raw = await server.call('POST', `${base}/files/batch`, undefined, { raw: '{"files":[{"path":"a.txt","edits":[{"old":"a\\ud800","new":"b"}]}]}' });
    expect(raw.status).toBe(400);
    expect(raw.body.error.details.issues[0].path).toBe('files.0.edits.0.old');
    expect(await projectState(server, base)).toEqual(before);
  });

  it('check .gitmodules and .gitattributes as git fsck does, on the edited text', async () => {
    const base = await newProject({ '.gitmodules': '[submodule "lib"]\n\tpath = lib\n\turl = https://example.com/lib.git\n', '.gitattributes': '*.txt text\n' });
    const url = await refused(base, { files: [{ path: '.gitmodules', edits: [{ old: 'https://example.com/lib.git', new: '--upload-pack=evil' }] }] }, 400);
    expect(url.details.issues).toEqual([{ path: 'files.0.edits', message: expect.stringMatching(/gitmodulesUrl/) }]);
    const long = await refused(base, { files: [{ path: '.gitattributes', edits: [{ old: 'text', new: 'x'.repeat(2100) }] }] }, 400);
    expect(long.details.issues[0].message).toMatch(/gitattributesLineLength/);
  });

  it('hold at most 1,000 edits per entry (413), and exactly 1,000 apply', async () => {
    const lines = Array.from({ length: 1001 }, (_, i) => `line ${i};`).join('\n') + '\n';
    const base = await newProject({ 'many.txt': lines });
    const edits = (n: number) => Array.from({ length: n }, (_, i) => ({ old: `line ${i};`, new: `LINE ${i};` }));
    const error = await refused(base, { files: [{ path: 'many.txt', edits: edits(1001) }] }, 413);
    expect(error).toMatchObject({ code: 'payload_too_large', details: { limit: 1000, path: 'many.txt' } });
    const huge = await refused(base, { files: [{ path: 'many.txt', edits: Array.from({ length: 100_000 }, () => ({ old: 'x', new: 'y' })) }] }, 413);
    expect(huge.details.limit).toBe(1000);
    const applied = await batch(base, { files: [{ path: 'many.txt', edits: edits(1000) }] });
    expect(applied.status, JSON.stringify(applied.body).slice(0, 300)).toBe(200);
    expect((await read(base, 'many.txt')).content).toBe(lines.replace(/line (\d+);/g, (match, n) => (Number(n) < 1000 ? `LINE ${n};` : match)));
  });

  it('lose nothing when concurrent batches edit one file: each reads the text in its own write', async () => {
    const slots = 24;
    const base = await newProject({ 'slots.txt': Array.from({ length: slots }, (_, i) => `slot ${i}: empty`).join('\n') + '\n' });
    const results = await Promise.all(Array.from({ length: slots }, (_, i) => batch(base, { files: [{ path: 'slots.txt', edits: [{ old: `slot ${i}: empty`, new: `slot ${i}: filled` }] }] })));
    expect(results.map((result) => result.status)).toEqual(Array(slots).fill(200));
    expect((await read(base, 'slots.txt')).content).toBe(Array.from({ length: slots }, (_, i) => `slot ${i}: filled`).join('\n') + '\n');
    // Racing for the same text: exactly one wins, the others find it gone.
    const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => batch(base, { files: [{ path: 'slots.txt', edits: [{ old: 'slot 0: filled', new: `slot 0: won by ${i}` }] }] })));
    expect(racing.filter((result) => result.status === 200)).toHaveLength(1);
    expect(racing.filter((result) => result.status === 409).map((result) => result.body.error.details)).toEqual(Array(7).fill({ path: 'slots.txt', index: 0, occurrences: 0 }));
  });

  it('announce files.changed with the edited paths, and nothing for a refused batch', async () => {
    const base = await newProject({ 'a.txt': 'a\n' });
    const events: ChangeEvent[] = [];
    const stop = server.th.events.on((event) => events.push(event));
    try {
      await batch(base, { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'b' }] }] });
      await batch(base, { files: [{ path: 'a.txt', edits: [{ old: 'a', new: 'c' }] }] });
    } finally {
      stop();
    }
    const version = (await server.call('GET', base)).body.project.version;
    expect(events.map((event) => [event.type, event.data])).toEqual([['files.changed', { branch: 'main', paths: ['a.txt'], version }]]);
  });
});

describe('snippet edit limits', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ limits: { fileBytesMax: 1000, editScanBytesMax: 5000, requestsPerSecondPerKey: 0 } });
  });
  afterAll(() => limited.close());

  it('refuse a result over the one-file limit, and edits that would scan more than the budget (413)', async () => {
    const created = await limited.call('POST', '/api/v1/projects', { title: 'Limits', source: { kind: 'files', files: [{ path: 'a.txt', content: 'x'.repeat(900) + '\nEND\n' }] } });
    const base = `/api/v1/projects/${created.body.project.id}`;
    const send = (body: unknown) => limited.call('POST', `${base}/files/batch`, body);
    const before = await projectState(limited, base);
    const tooBig = await send({ files: [{ path: 'a.txt', edits: [{ old: 'END', new: 'y'.repeat(200) }] }] });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.details).toEqual({ limit: 1000, path: 'a.txt' });
    // Growing past the limit and shrinking back is fine: only the result counts.
    const back = await send({ files: [{ path: 'a.txt', edits: [{ old: 'END', new: 'y'.repeat(200) }, { old: 'y'.repeat(200), new: 'END' }] }] });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    // Six edits of a 905-byte file scan 5,430 bytes.
    const edits = (n: number) => Array.from({ length: n }, (_, i) => ({ old: i % 2 === 0 ? 'END' : 'FIN', new: i % 2 === 0 ? 'FIN' : 'END' }));
    const scanned = await send({ files: [{ path: 'a.txt', edits: edits(6) }] });
    expect(scanned.status).toBe(413);
    expect(scanned.body.error).toMatchObject({ code: 'payload_too_large', details: { limit: 5000 } });
    expect(await projectState(limited, base)).toEqual({ ...before, version: before.version + 1 });
    expect((await send({ files: [{ path: 'a.txt', edits: edits(5) }] })).status).toBe(200);
  });
});
