/**
 * A pushed object named as another type than it is (a file entry naming a tree, a directory naming
 * a blob, a commit whose tree or parent is not one, a tag whose type header lies): git's
 * receive-pack with receive.fsckObjects refuses each (index-pack --strict walks every link), and so
 * does Treehouse, the same pack sent to both; neither moves a ref.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashObject, type Oid } from '../../src/git/oid.js';
import { PackWriter } from '../../src/git/pack.js';
import { encodeFlush, encodePktLine } from '../../src/git/pktline.js';
import { encodeTree, MODE_FILE, MODE_TREE } from '../../src/git/tree.js';
import { git, initBareRepo, scratchDir } from '../support/git.js';
import { startGitHttpBackend, type GitHttpBackend } from '../support/httpBackend.js';
import { startTestServer, type TestServer } from '../support/server.js';

const work = scratchDir('treehouse-object-types-');
let server: TestServer;
let backend: GitHttpBackend;
beforeAll(async () => {
  initBareRepo(join(work.path, 'upstream.git'));
  git(['config', 'receive.fsckObjects', 'true'], { cwd: join(work.path, 'upstream.git') });
  server = await startTestServer();
  backend = await startGitHttpBackend(work.path);
});
afterAll(async () => {
  await Promise.all([server?.close(), backend?.close()]);
  work.remove();
});

const blob = Buffer.from('hello\n');
const blobId = hashObject('blob', blob);
const tree = encodeTree([{ name: 'a.txt', mode: MODE_FILE, oid: blobId }]);
const treeId = hashObject('tree', tree);
const commitOf = (treeOid: Oid, parents: Oid[] = []) =>
  Buffer.from(`tree ${treeOid.toString('hex')}\n${parents.map((parent) => `parent ${parent.toString('hex')}\n`).join('')}author A <a@example.com> 1700000000 +0000\ncommitter A <a@example.com> 1700000000 +0000\n\ntyped\n`);

/** Each case: the objects of its pack (a commit last but for the tag's), the ref it pushes, and what git's refusal says. */
const CASES: Array<{ name: string; objects: Array<['blob' | 'tree' | 'commit' | 'tag', Buffer]>; ref: string; git: RegExp; ours: RegExp }> = (() => {
  const fileIsTree = encodeTree([{ name: 'f', mode: MODE_FILE, oid: treeId }]);
  const dirIsBlob = encodeTree([{ name: 'd', mode: MODE_TREE, oid: blobId }]);
  const good = commitOf(treeId);
  const tag = Buffer.from(`object ${blobId.toString('hex')}\ntype commit\ntag v1\ntagger A <a@example.com> 1700000000 +0000\n\nlying\n`);
  return [
    { name: 'a file entry naming a tree', objects: [['blob', blob], ['tree', tree], ['tree', fileIsTree], ['commit', commitOf(hashObject('tree', fileIsTree))]], ref: 'refs/heads/file-is-tree', git: /is a tree, not a blob/, ours: /is a tree, not a blob/ },
    { name: 'a directory entry naming a blob', objects: [['blob', blob], ['tree', dirIsBlob], ['commit', commitOf(hashObject('tree', dirIsBlob))]], ref: 'refs/heads/dir-is-blob', git: /is a blob, not a tree/, ours: /is a blob, not a tree/ },
    { name: "a commit whose tree is a blob", objects: [['blob', blob], ['commit', commitOf(blobId)]], ref: 'refs/heads/tree-is-blob', git: /bad tree pointer/, ours: /bad tree pointer/ },
    { name: 'a commit whose parent is a tree', objects: [['blob', blob], ['tree', tree], ['commit', commitOf(treeId, [treeId])]], ref: 'refs/heads/parent-is-tree', git: /bad parent/, ours: /bad parent/ },
    { name: 'a tag whose type header is not its object’s', objects: [['blob', blob], ['tree', tree], ['commit', good], ['tag', tag]], ref: 'refs/tags/v1', git: /bad tag pointer/, ours: /bad tag pointer/ },
  ];
})();

/** A receive-pack request creating `ref` at the last object of `objects` (the tag, or the commit). */
function pushBody(objects: Array<['blob' | 'tree' | 'commit' | 'tag', Buffer]>, ref: string): { body: Buffer; tip: string } {
  const writer = new PackWriter(objects.length);
  const pack = Buffer.concat([writer.start(), ...objects.map(([type, body]) => writer.addObject(type, body).bytes), writer.finish()]);
  const [type, body] = objects[objects.length - 1];
  const tip = hashObject(type, body).toString('hex');
  const commands = encodePktLine(`${'0'.repeat(40)} ${tip} ${ref}\0report-status\n`);
  return { body: Buffer.concat([commands, encodeFlush(), pack]), tip };
}

async function receivePack(url: string, body: Buffer, authorization?: string): Promise<string> {
  const headers: Record<string, string> = { 'content-type': 'application/x-git-receive-pack-request' };
  if (authorization) headers.authorization = authorization;
  const response = await fetch(`${url}/git-receive-pack`, { method: 'POST', headers, body: new Uint8Array(body) });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer()).toString('latin1');
}

describe('objects named as another type', () => {
  it.each(CASES)('are refused by git and by Treehouse alike: $name', async ({ objects, ref, git: gitSays, ours: oursSays }) => {
    const created = await server.call('POST', '/api/v1/projects', { title: 'Types', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    const { body } = pushBody(objects, ref);
    const theirs = await receivePack(`${backend.url}/upstream.git`, body);
    expect(theirs).not.toContain('unpack ok');
    expect(theirs).toMatch(/ng refs\//);
    expect(git(['for-each-ref', '--format=%(refname)'], { cwd: join(work.path, 'upstream.git') }).trim()).toBe('');
    // Over HTTP git's receive-pack says only that its index-pack failed; what it found is what
    // index-pack --strict says of the same pack, run here (indexPackSays, below).
    const ours = await receivePack(`${server.url}/git/${id}.git`, body, `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`);
    expect(ours).not.toContain('unpack ok');
    expect(ours).toMatch(oursSays);
    expect(ours).toMatch(/ng refs\//);
    const branches = (await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches.map((branch: { name: string }) => branch.name);
    expect(branches).toEqual(['main']);
    expect(indexPackSays(body)).toMatch(gitSays);
  });
});

/**
 * The same links to objects the receiver holds already, not in the pack: git's index-pack looks up
 * each one's type (check_object: "expected type …, found …"), and so does Treehouse's check
 * (the store's objectTypes). Before, a stored object was only checked for presence.
 */
describe('links to stored objects of another type', () => {
  const base: Array<['blob' | 'tree' | 'commit' | 'tag', Buffer]> = [['blob', blob], ['tree', tree], ['commit', commitOf(treeId)]];
  const fileIsTree = encodeTree([{ name: 'f', mode: MODE_FILE, oid: treeId }]);
  const dirIsBlob = encodeTree([{ name: 'd', mode: MODE_TREE, oid: blobId }]);
  const other = encodeTree([{ name: 'b.txt', mode: MODE_FILE, oid: blobId }]);
  const STORED: Array<{ name: string; objects: Array<['blob' | 'tree' | 'commit' | 'tag', Buffer]>; ref: string; says: RegExp }> = [
    { name: 'a file entry naming a stored tree', objects: [['tree', fileIsTree], ['commit', commitOf(hashObject('tree', fileIsTree))]], ref: 'refs/heads/stored-file-is-tree', says: /expected type blob, found tree/ },
    { name: 'a directory entry naming a stored blob', objects: [['tree', dirIsBlob], ['commit', commitOf(hashObject('tree', dirIsBlob))]], ref: 'refs/heads/stored-dir-is-blob', says: /expected type tree, found blob/ },
    { name: 'a commit whose tree is a stored blob', objects: [['commit', commitOf(blobId)]], ref: 'refs/heads/stored-tree-is-blob', says: /expected type tree, found blob/ },
    // (Its tree is another: with the same id as tree and parent, git finds the mismatch in memory first.)
    { name: 'a commit whose parent is a stored tree', objects: [['tree', other], ['commit', commitOf(hashObject('tree', other), [treeId])]], ref: 'refs/heads/stored-parent-is-tree', says: /expected type commit, found tree/ },
  ];
  const upstream = () => join(work.path, 'upstream.git');
  const basic = () => `Basic ${Buffer.from(`git:${server.key}`).toString('base64')}`;

  beforeAll(async () => {
    expect(await receivePack(`${backend.url}/upstream.git`, pushBody(base, 'refs/heads/base').body)).toContain('ok refs/heads/base');
  });

  it.each(STORED)('are refused by git and by Treehouse alike: $name', async ({ objects, ref, says }) => {
    const created = await server.call('POST', '/api/v1/projects', { title: 'Stored types', source: { kind: 'files', files: [{ path: 'a.txt', content: 'a\n' }] } });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    expect(await receivePack(`${server.url}/git/${id}.git`, pushBody(base, 'refs/heads/base').body, basic())).toContain('ok refs/heads/base');
    const { body } = pushBody(objects, ref);
    const theirs = await receivePack(`${backend.url}/upstream.git`, body);
    expect(theirs).not.toContain('unpack ok');
    expect(git(['for-each-ref', '--format=%(refname)'], { cwd: upstream() }).trim()).toBe('refs/heads/base');
    const ours = await receivePack(`${server.url}/git/${id}.git`, body, basic());
    expect(ours).not.toContain('unpack ok');
    expect(ours).toMatch(says);
    expect(ours).toMatch(/ng refs\//);
    const branches = (await server.call('GET', `/api/v1/projects/${id}/git/branches`)).body.branches.map((branch: { name: string }) => branch.name).sort();
    expect(branches).toEqual(['base', 'main']);
    expect(indexPackSays(body, upstream())).toMatch(says);
  });
});

/** What git index-pack --strict says of the request's pack (in a copy of `holding`, when given: a repository with the objects it links to). */
function indexPackSays(body: Buffer, holding?: string): string {
  const pack = body.subarray(body.indexOf('PACK'));
  const scratch = join(work.path, `index-${Math.random().toString(36).slice(2)}.git`);
  if (holding) git(['clone', '--quiet', '--bare', holding, scratch]);
  else initBareRepo(scratch);
  try {
    git(['index-pack', '--strict', '--stdin'], { cwd: scratch, input: pack });
    return 'accepted';
  } catch (error) {
    return String(error);
  }
}
