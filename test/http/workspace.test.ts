/**
 * The workspace routes as HTTP resources: listed in the OpenAPI document, refused without a key,
 * charged against the key's rate limit, and answering errors in the envelope, like every route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let base: string;
beforeAll(async () => {
  server = await startTestServer({ limits: { requestsPerSecondPerKey: 1, requestBurstPerKey: 40 } });
  const created = await server.call('POST', '/api/v1/projects', { title: 'Workspace', source: { kind: 'files', files: [{ path: 'a.txt', content: 'hello\n' }] } });
  base = `/api/v1/projects/${created.body.project.id}`;
});
afterAll(() => server.close());

const ROUTES: Array<[string, string, string, unknown?]> = [
  ['GET', '/git/compare?base=main&head=worktree:main', '/api/v1/projects/{id}/git/compare'],
  ['GET', '/git/log?path=a.txt', '/api/v1/projects/{id}/git/log'],
  ['GET', '/git/blame/a.txt', '/api/v1/projects/{id}/git/blame/{path}'],
  ['POST', '/git/merge/preview', '/api/v1/projects/{id}/git/merge/preview', { source: 'main' }],
  ['GET', '/git/archive?format=zip', '/api/v1/projects/{id}/git/archive'],
  ['GET', '/search?q=hello', '/api/v1/projects/{id}/search'],
];

describe('workspace routes', () => {
  it('are listed in the OpenAPI document with their parameters', async () => {
    const document = (await server.call('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    for (const [method, , path] of ROUTES) {
      const operation = document.paths[path]?.[method.toLowerCase()];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(operation.security).toEqual([{ bearer: [] }]);
    }
    const names = (path: string) => document.paths[path].get.parameters.map((p: { name: string }) => p.name);
    expect(names('/api/v1/projects/{id}/git/compare')).toEqual(['id', 'base', 'head', 'paths', 'context', 'patch']);
    expect(names('/api/v1/projects/{id}/search')).toEqual(['id', 'q', 'regex', 'case', 'ref', 'paths', 'limit']);
    expect(names('/api/v1/projects/{id}/git/archive')).toEqual(['id', 'ref', 'format', 'prefix']);
    expect(names('/api/v1/projects/{id}/git/blame/{path}')).toEqual(['id', 'path', 'ref']);
    expect(names('/api/v1/projects/{id}/git/log')).toContain('path');
  });

  it.each(ROUTES)('%s %s answers with the key, 401 without it', async (method, suffix, _path, body) => {
    const ok = await server.call(method, base + suffix, body);
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
    const refused = await server.call(method, base + suffix, body, { key: null });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer');
    expect(refused.body.error.code).toBe('unauthorized');
  });

  it.each(ROUTES)('%s %s on a project of no one is a 404 in the envelope', async (method, suffix, _path, body) => {
    const response = await server.call(method, `/api/v1/projects/prj_unknown${suffix}`, body);
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });

  it('charges the rate limit like every route', async () => {
    let limited: { status: number; headers: Headers; body: { error: { code: string } } } | null = null;
    for (let i = 0; i < 60 && !limited; i++) {
      const response = await server.call('GET', `${base}/search?q=hello`);
      if (response.status === 429) limited = response;
    }
    expect(limited).not.toBeNull();
    expect(limited!.body.error.code).toBe('rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
