/**
 * Merge resolutions and expected heads in POST git/merge (../shared/API.md "Workspace additions",
 * README "Merge resolutions"): one resolution per conflicted path makes a conflicted merge a merge
 * commit; a missing, extra or repeated resolution is a 400 naming the paths, an expected head that
 * moved is 409 ref_changed with the current head, and every refusal leaves heads, working trees and
 * the version as they were. The trees are compared with git's in test/interop/mergeResolutions.test.ts.
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

interface Entry {
  path?: string;
  path_base64?: string;
  content: string;
  encoding?: 'base64';
}

/** A project whose main and `topic` branches both changed `files` since they parted. */
async function diverged(base: Record<string, string>, main: Record<string, string | null>, topic: Record<string, string | null>) {
  const created = await server.call('POST', '/api/v1/projects', {
    title: 'Resolutions',
    source: { kind: 'files', files: Object.entries(base).map(([path, content]) => ({ path, content })) },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const url = `/api/v1/projects/${created.body.project.id}`;
  expect((await server.call('POST', `${url}/git/branches`, { name: 'topic' })).status).toBe(201);
  const change = async (branch: string, files: Record<string, string | null>) => {
    const writes: Entry[] = Object.entries(files)
      .filter(([, content]) => content !== null)
      .map(([path, content]) => ({ path, content: content! }));
    const deletes = Object.keys(files).filter((path) => files[path] === null);
    const written = await server.call('POST', `${url}/files/batch`, { branch, files: writes, deletes });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    expect((await server.call('POST', `${url}/git/commit`, { branch })).status).toBe(201);
  };
  await change('main', main);
  await change('topic', topic);
  const heads = async () => Object.fromEntries(((await server.call('GET', `${url}/git/branches`)).body.branches as Array<{ name: string; oid: string }>).map((b) => [b.name, b.oid]));
  return { url, heads, state: () => projectState(server, url, ['main', 'topic']) };
}

const merge = (url: string, body: Record<string, unknown>) => server.call('POST', `${url}/git/merge`, { source: 'topic', ...body });

/** A merge that must be refused with `status`; checks that nothing changed and returns the error. */
async function refused(project: { url: string; state: () => Promise<unknown> }, body: Record<string, unknown>, status: number) {
  const before = await project.state();
  const response = await merge(project.url, body);
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(await project.state()).toEqual(before);
  return response.body.error as { code: string; message: string; details: any };
}

const lines = (...text: string[]) => text.map((line) => `${line}\n`).join('');

/** Three conflicts: content (doc.txt), add/add (both.txt), modify/delete (gone.txt). */
const threeConflicts = () =>
  diverged(
    { 'doc.txt': lines('1', '2', '3'), 'gone.txt': 'g\n', 'keep.txt': 'k\n' },
    { 'doc.txt': lines('1', 'main', '3'), 'both.txt': 'main\n', 'gone.txt': 'changed\n', 'main.txt': 'm\n' },
    { 'doc.txt': lines('1', 'topic', '3'), 'both.txt': 'topic\n', 'gone.txt': null, 'topic.txt': 't\n' },
  );
const allResolved = [
  { path: 'doc.txt', content: lines('1', 'both', '3') },
  { path: 'both.txt', delete: true },
  { path: 'gone.txt', content: 'kept\n' },
];

describe('POST git/merge with resolutions', () => {
  it('turns a conflicted merge into a merge commit of the resolved tree, announced as a merge', async () => {
    const project = await threeConflicts();
    const heads = await project.heads();
    const events: ChangeEvent[] = [];
    const stop = server.th.events.on((event) => events.push(event));
    let merged;
    try {
      merged = await merge(project.url, { resolutions: allResolved, expected_target_head: heads.main, expected_source_head: heads.topic.slice(0, 7) });
    } finally {
      stop();
    }
    expect(merged.status, JSON.stringify(merged.body)).toBe(201);
    expect(merged.body).toEqual({ merge: { oid: expect.stringMatching(/^[0-9a-f]{40}$/), fastForward: false } });
    const oid = merged.body.merge.oid;
    const shown = (await server.call('GET', `${project.url}/git/commits/${oid}`)).body.commit;
    expect(shown.parent_oids).toEqual([heads.main, heads.topic]);
    expect(shown.message).toBe("Merge branch 'topic' into main");
    const committed = Object.fromEntries(shown.files.map((file: { path: string; content: string }) => [file.path, file.content]));
    expect(committed).toEqual({ 'doc.txt': lines('1', 'both', '3'), 'gone.txt': 'kept\n', 'keep.txt': 'k\n', 'main.txt': 'm\n', 'topic.txt': 't\n' });
    // The working tree follows the new head.
    const worktree = (await project.state()).files.main as Array<{ path: string; content: string }>;
    expect(Object.fromEntries(worktree.map((file) => [file.path, file.content]))).toEqual(committed);
    expect((await project.heads()).main).toBe(oid);
    expect(events.map((event) => [event.type, event.data])).toEqual([['commit.created', { branch: 'main', oid, parent_oids: [heads.main, heads.topic], source: 'merge' }]]);
  });

  it('needs one resolution for every conflicted path: missing ones are a 400 naming them', async () => {
    const project = await threeConflicts();
    const missing = await refused(project, { resolutions: [allResolved[0]] }, 400);
    expect(missing).toMatchObject({ code: 'invalid_request', details: { paths: ['both.txt', 'gone.txt'] } });
    const none = await refused(project, { resolutions: [] }, 400);
    expect(none.details.paths).toEqual(['both.txt', 'doc.txt', 'gone.txt']);
    // Without resolutions the merge reports its conflicts as before.
    const conflict = await refused(project, {}, 409);
    expect(conflict).toMatchObject({ code: 'merge_conflict', details: { conflicts: [{ path: 'both.txt', kind: 'add/add' }, { path: 'doc.txt', kind: 'content' }, { path: 'gone.txt', kind: 'modify/delete' }] } });
  });

  it('refuses a resolution of a path that did not conflict, and two for one path (400 naming them)', async () => {
    const project = await threeConflicts();
    const extra = await refused(project, { resolutions: [...allResolved, { path: 'keep.txt', content: 'x\n' }, { path: 'nowhere.txt', delete: true }] }, 400);
    expect(extra).toMatchObject({ code: 'invalid_request', details: { paths: ['keep.txt', 'nowhere.txt'] } });
    expect(extra.details.issues).toEqual([
      { path: 'resolutions.3.path', message: 'did not conflict' },
      { path: 'resolutions.4.path', message: 'did not conflict' },
    ]);
    const twice = await refused(project, { resolutions: [...allResolved, { path: 'doc.txt', delete: true }] }, 400);
    expect(twice).toMatchObject({ code: 'invalid_request', details: { paths: ['doc.txt'], issues: [{ path: 'resolutions.3.path' }] } });
    // A wrong path for one conflict is both: the conflict's path is missing, the other is extra.
    const typo = await refused(project, { resolutions: [allResolved[0], allResolved[1], { path: 'Gone.txt', content: 'x' }] }, 400);
    expect(typo.details.paths).toEqual(['gone.txt']);
    expect(typo.details.issues).toEqual([
      { path: 'resolutions', message: 'no resolution for the conflicted path gone.txt' },
      { path: 'resolutions.2.path', message: 'did not conflict' },
    ]);
  });

  it('refuses resolutions when nothing conflicts: up to date, fast-forward, clean merge', async () => {
    const clean = await diverged({ 'a.txt': 'a\n' }, { 'main.txt': 'm\n' }, { 'topic.txt': 't\n' });
    const resolutions = [{ path: 'a.txt', content: 'x\n' }];
    expect((await refused(clean, { resolutions }, 400)).details.paths).toEqual(['a.txt']);
    expect((await merge(clean.url, { resolutions: [] })).status).toBe(201);
    // topic is now merged into main: up to date.
    expect((await refused(clean, { resolutions }, 400)).details.paths).toEqual(['a.txt']);
    expect((await merge(clean.url, { resolutions: [] })).body.merge.upToDate).toBe(true);
    // main into topic is a fast-forward.
    const forward = await refused(clean, { source: 'main', target: 'topic', resolutions }, 400);
    expect(forward).toMatchObject({ code: 'invalid_request', details: { paths: ['a.txt'] } });
    expect(forward.message).toMatch(/fast-forward/);
  });

  it('refuses a moved target or source head with 409 ref_changed and the current head', async () => {
    const project = await threeConflicts();
    const heads = await project.heads();
    const stale = '0'.repeat(40);
    for (const [field, branch] of [['expected_target_head', 'main'], ['expected_source_head', 'topic']] as const) {
      for (const expected of [stale, heads[branch === 'main' ? 'topic' : 'main'], 'not-an-oid']) {
        const error = await refused(project, { resolutions: allResolved, [field]: expected }, 409);
        expect(error).toMatchObject({ code: 'ref_changed', details: { head: heads[branch] } });
      }
    }
    // A fast-forward and a conflicted merge without resolutions are checked the same way.
    expect((await refused(project, { [`expected_target_head`]: stale }, 409)).details.head).toBe(heads.main);
    expect((await refused(project, { source: 'main', target: 'topic', expected_source_head: stale }, 409)).details.head).toBe(heads.main);
  });

  it('refuses once a head the caller saw has moved on, for each of the two branches', async () => {
    for (const branch of ['main', 'topic']) {
      const project = await threeConflicts();
      const seen = await project.heads();
      // Someone commits on the branch after the caller read its head.
      expect((await server.call('POST', `${project.url}/files/batch`, { branch, files: [{ path: 'later.txt', content: 'later\n' }] })).status).toBe(200);
      expect((await server.call('POST', `${project.url}/git/commit`, { branch })).status).toBe(201);
      const now = await project.heads();
      expect(now[branch]).not.toBe(seen[branch]);
      const error = await refused(project, { resolutions: allResolved, expected_target_head: seen.main, expected_source_head: seen.topic }, 409);
      expect(error).toMatchObject({ code: 'ref_changed', details: { head: now[branch], branch } });
      expect((await merge(project.url, { resolutions: allResolved, expected_target_head: now.main, expected_source_head: now.topic })).status).toBe(201);
    }
  });

  it('checks the resolved result like a clean one: locked files, dirty target, .gitmodules and .gitattributes', async () => {
    const project = await threeConflicts();
    const lock = await server.call('POST', `${project.url}/files/batch`, { files: [{ path: 'doc.txt', content: lines('1', 'main', '3'), locked: true }] });
    expect(lock.status).toBe(200);
    const locked = await refused(project, { resolutions: allResolved }, 423);
    expect(locked).toMatchObject({ code: 'file_locked', details: { paths: ['doc.txt'] } });
    // A resolution that keeps the locked file as it is changes nothing there.
    const keep = [{ path: 'doc.txt', content: lines('1', 'main', '3') }, allResolved[1], allResolved[2]];
    const dirty = await server.call('POST', `${project.url}/files/batch`, { files: [{ path: 'dirty.txt', content: 'd\n' }] });
    expect(dirty.status).toBe(200);
    expect((await refused(project, { resolutions: keep }, 409)).code).toBe('uncommitted_changes');
    expect((await server.call('DELETE', `${project.url}/files/dirty.txt`)).status).toBe(200);
    expect((await merge(project.url, { resolutions: keep })).status).toBe(201);

    const special = await diverged(
      { '.gitmodules': '[submodule "a"]\n\tpath = a\n\turl = https://example.com/a.git\n', '.gitattributes': '*.txt text\n' },
      { '.gitmodules': '[submodule "a"]\n\tpath = a\n\turl = https://example.com/main.git\n', '.gitattributes': '*.md text\n' },
      { '.gitmodules': '[submodule "a"]\n\tpath = a\n\turl = https://example.com/topic.git\n', '.gitattributes': '*.js text\n' },
    );
    const good = { path: '.gitattributes', content: '*.md text\n*.js text\n' };
    const url = await refused(special, { resolutions: [{ path: '.gitmodules', content: '[submodule "a"]\n\tpath = a\n\turl = -evil\n' }, good] }, 400);
    expect(url.details.issues).toEqual([{ path: 'resolutions.0.content', message: expect.stringMatching(/gitmodulesUrl/) }]);
    const long = await refused(special, { resolutions: [{ path: '.gitmodules', delete: true }, { path: '.gitattributes', content: `${'x'.repeat(2048)} text\n` }] }, 400);
    expect(long.details.issues).toEqual([{ path: 'resolutions.1.content', message: expect.stringMatching(/gitattributesLineLength/) }]);
    expect((await merge(special.url, { resolutions: [{ path: '.gitmodules', delete: true }, good] })).status).toBe(201);
  });

  it('takes base64 content and path_base64 for names that are not UTF-8', async () => {
    const name = Buffer.from('caf\xe9.bin', 'latin1');
    const created = await server.call('POST', '/api/v1/projects', { title: 'Bytes', source: { kind: 'files', files: [{ path_base64: name.toString('base64'), content: 'AAEC', encoding: 'base64' }] } });
    const url = `/api/v1/projects/${created.body.project.id}`;
    await server.call('POST', `${url}/git/branches`, { name: 'topic' });
    for (const [branch, byte] of [['main', 'AAED'], ['topic', 'AAEE']]) {
      expect((await server.call('POST', `${url}/files/batch`, { branch, files: [{ path_base64: name.toString('base64'), content: byte, encoding: 'base64' }] })).status).toBe(200);
      expect((await server.call('POST', `${url}/git/commit`, { branch })).status).toBe(201);
    }
    const conflict = await server.call('POST', `${url}/git/merge`, { source: 'topic' });
    expect(conflict.body.error.details.conflicts).toEqual([{ path: 'caf\ufffd.bin', path_base64: name.toString('base64'), kind: 'binary' }]);
    // The display form names no file: it did not conflict, and the real name is missing.
    const display = await server.call('POST', `${url}/git/merge`, { source: 'topic', resolutions: [{ path: 'caf\ufffd.bin', delete: true }] });
    expect(display.status).toBe(400);
    expect(display.body.error.details.paths_base64).toEqual([name.toString('base64')]);
    const merged = await server.call('POST', `${url}/git/merge`, { source: 'topic', resolutions: [{ path_base64: name.toString('base64'), content: '/wA=', encoding: 'base64' }] });
    expect(merged.status, JSON.stringify(merged.body)).toBe(201);
    const read = await server.call('GET', `${url}/file?path_base64=${encodeURIComponent(name.toString('base64'))}`);
    expect(read.body).toMatchObject({ content: '/wA=', encoding: 'base64' });
  });

  it('refuses hostile shapes with 400 and changes nothing', async () => {
    const project = await threeConflicts();
    const others = allResolved.slice(1);
    const shapes: unknown[] = [
      { path: 'doc.txt', delete: false },
      { path: 'doc.txt', content: 'x', delete: true },
      { path: 'doc.txt' },
      { content: 'x' },
      { path: 'doc.txt', path_base64: Buffer.from('doc.txt').toString('base64'), content: 'x' },
      { path: 'doc.txt', content: 7 },
      { path: 'doc.txt', content: 'x', mode: '100755' },
      { path: 'doc.txt', content: '%%%', encoding: 'base64' },
      { path: '../doc.txt', content: 'x' },
      { path: 'doc\ud800.txt', content: 'x' },
      { path: '', content: 'x' },
      'doc.txt',
    ];
    for (const shape of shapes) {
      const error = await refused(project, { resolutions: [shape, ...others] }, 400);
      expect(error.code, JSON.stringify(shape)).toBe('invalid_request');
    }
    expect((await refused(project, { resolutions: { path: 'doc.txt', delete: true } }, 400)).code).toBe('invalid_request');
    expect((await refused(project, { resolutions: allResolved, expected_target_head: '' }, 400)).code).toBe('invalid_request');
    expect((await refused(project, { resolutions: allResolved, expected_source_head: 42 }, 400)).code).toBe('invalid_request');
  });
});

describe('merge resolution limits', () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({ limits: { fileBytesMax: 100, batchFilesMax: 3, requestsPerSecondPerKey: 0 } });
  });
  afterAll(() => limited.close());

  it('refuses a resolution over the one-file limit and more resolutions than a batch holds (413)', async () => {
    const created = await limited.call('POST', '/api/v1/projects', { title: 'Limits', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
    const url = `/api/v1/projects/${created.body.project.id}`;
    await limited.call('POST', `${url}/git/branches`, { name: 'topic' });
    for (const branch of ['main', 'topic']) {
      await limited.call('POST', `${url}/files/batch`, { branch, files: [{ path: 'a.txt', content: `${branch}\n` }] });
      await limited.call('POST', `${url}/git/commit`, { branch });
    }
    const before = await projectState(limited, url, ['main', 'topic']);
    const big = await limited.call('POST', `${url}/git/merge`, { source: 'topic', resolutions: [{ path: 'a.txt', content: 'x'.repeat(101) }] });
    expect(big.status).toBe(413);
    expect(big.body.error.details).toEqual({ limit: 100, path: 'a.txt' });
    const many = await limited.call('POST', `${url}/git/merge`, { source: 'topic', resolutions: ['a', 'b', 'c', 'd'].map((path) => ({ path, delete: true })) });
    expect(many.status).toBe(413);
    expect(many.body.error.details).toEqual({ limit: 3 });
    expect(await projectState(limited, url, ['main', 'topic'])).toEqual(before);
    expect((await limited.call('POST', `${url}/git/merge`, { source: 'topic', resolutions: [{ path: 'a.txt', content: 'x'.repeat(100) }] })).status).toBe(201);
  });
});
