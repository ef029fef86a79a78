import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const packageJson = (dependencies: Record<string, string>) => JSON.stringify({ name: 'app', private: true, dependencies }, null, 2) + '\n';

async function framework(id: string): Promise<string | null> {
  const response = await server.call('GET', `/api/v1/projects/${id}`);
  expect(response.status).toBe(200);
  return response.body.project.framework;
}

async function writeAndCommit(id: string, files: Array<{ path: string; content: string }>, branch = 'main') {
  expect((await server.call('POST', `/api/v1/projects/${id}/files/batch`, { branch, files })).status).toBe(200);
  const committed = await server.call('POST', `/api/v1/projects/${id}/git/commit`, { branch, message: 'Change' });
  expect(committed.status, JSON.stringify(committed.body)).toBe(201);
  return committed.body.commit.oid as string;
}

describe('framework detection', () => {
  it('detects on creation and again on every commit to main, not on writes or other branches', async () => {
    const created = await server.call('POST', '/api/v1/projects', {
      title: 'Detect',
      source: { kind: 'files', files: [{ path: 'package.json', content: packageJson({ next: '^15.0.0', react: '^19.0.0' }) }] },
    });
    expect(created.status).toBe(201);
    expect(created.body.project.framework).toBe('next');
    const id = created.body.project.id;
    const first = (await server.call('GET', `/api/v1/projects/${id}/git/log`)).body.commits[0].oid;

    // Writing is not committing: the framework follows main's commits only.
    await server.call('POST', `/api/v1/projects/${id}/files/batch`, { files: [{ path: 'package.json', content: packageJson({ vite: '^6.0.0' }) }] });
    expect(await framework(id)).toBe('next');
    expect((await server.call('POST', `/api/v1/projects/${id}/git/commit`, { message: 'Move to Vite' })).status).toBe(201);
    expect(await framework(id)).toBe('vite');

    // A commit on another branch leaves it alone.
    await server.call('POST', `/api/v1/projects/${id}/git/branches`, { name: 'astro-experiment' });
    await writeAndCommit(id, [{ path: 'package.json', content: packageJson({ astro: '^5.0.0' }) }], 'astro-experiment');
    expect(await framework(id)).toBe('vite');

    // Restore is a commit on main too.
    const restored = await server.call('POST', `/api/v1/projects/${id}/git/restore`, { oid: first });
    expect(restored.status).toBe(201);
    expect(await framework(id)).toBe('next');
  });

  it('stops detecting once a PATCH sets the framework', async () => {
    const created = await server.call('POST', '/api/v1/projects', {
      title: 'Chosen later',
      source: { kind: 'files', files: [{ path: 'package.json', content: packageJson({ next: '^15.0.0' }) }] },
    });
    const id = created.body.project.id;
    expect(created.body.project.framework).toBe('next');
    const patched = await server.call('PATCH', `/api/v1/projects/${id}`, { framework: 'remix' });
    expect(patched.body.project.framework).toBe('remix');
    await writeAndCommit(id, [{ path: 'package.json', content: packageJson({ vite: '^6.0.0' }) }]);
    expect(await framework(id)).toBe('remix');
    // null is a choice too.
    await server.call('PATCH', `/api/v1/projects/${id}`, { framework: null });
    await writeAndCommit(id, [{ path: 'package.json', content: packageJson({ astro: '^5.0.0' }) }]);
    expect(await framework(id)).toBeNull();
  });

  it('keeps the framework the creator chose, and detects from nothing to static', async () => {
    const chosen = await server.call('POST', '/api/v1/projects', {
      title: 'Chosen at creation',
      framework: 'astro',
      source: { kind: 'files', files: [{ path: 'package.json', content: packageJson({ next: '^15.0.0' }) }] },
    });
    expect(chosen.body.project.framework).toBe('astro');
    await writeAndCommit(chosen.body.project.id, [{ path: 'package.json', content: packageJson({ vite: '^6.0.0' }) }]);
    expect(await framework(chosen.body.project.id)).toBe('astro');

    const empty = await server.call('POST', '/api/v1/projects', { title: 'Empty' });
    expect(empty.body.project.framework).toBeNull();
    await writeAndCommit(empty.body.project.id, [{ path: 'index.html', content: '<p>hi</p>\n' }]);
    expect(await framework(empty.body.project.id)).toBe('static');
  });
});
