/**
 * The API's own documentation: the OpenAPI document with an example for every route (and every
 * example valid against the route's own schemas), rendered by Swagger UI at /docs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_EXAMPLES } from '../../src/http/examples.js';
import { registeredRoutes } from '../../src/http/route.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('route examples', () => {
  it('exist for every route, and for no route that does not exist', () => {
    const keys = registeredRoutes(server.app).map((route) => `${route.method} ${route.url}`);
    expect(keys.filter((key) => !(key in ROUTE_EXAMPLES)), 'routes without an example').toEqual([]);
    expect(Object.keys(ROUTE_EXAMPLES).filter((key) => !keys.includes(key)), 'examples of no route').toEqual([]);
  });

  it('pass the schemas of their routes', () => {
    for (const route of registeredRoutes(server.app)) {
      const key = `${route.method} ${route.url}`;
      const example = ROUTE_EXAMPLES[key];
      if (route.body) {
        const parsed = route.body.safeParse(example.body);
        expect(parsed.success, `${key} body: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      } else {
        expect(example.body, `${key} takes no body`).toBeUndefined();
      }
      expect(example.response !== undefined || example.produces !== undefined, `${key} shows an answer or says what it produces`).toBe(true);
      if (route.response) {
        const parsed = route.response.safeParse(example.response);
        expect(parsed.success, `${key} answer: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      }
    }
  });
});

describe('/docs', () => {
  it('serves Swagger UI over the OpenAPI document, examples included, without a key', async () => {
    const page = await fetch(`${server.url}/docs`, { redirect: 'follow' });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/swagger/i);
    const rendered = await (await fetch(`${server.url}/docs/json`)).json();
    const served = (await server.call('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    expect(rendered.paths).toEqual(served.paths);
    const create = rendered.paths['/api/v1/projects'].post;
    expect(create.requestBody.content['application/json'].example).toEqual(ROUTE_EXAMPLES['POST /api/v1/projects'].body);
    expect(create.responses['201'].content['application/json'].example).toEqual(ROUTE_EXAMPLES['POST /api/v1/projects'].response);
  });
});
