/** The OpenAPI document, generated once from the same zod schemas the routes validate with. */
import { z, type ZodType } from 'zod';
import type { RouteSpec } from './route.js';
import { STATUS_BY_CODE } from './errors.js';
import { exampleFor } from './examples.js';
import { ANSWER_BYTES_MAX, IDEMPOTENCY_KEY_HEADER } from '../service/idempotency.js';

type Routes = ReadonlyArray<RouteSpec<ZodType, ZodType, ZodType>>;

function jsonSchema(schema: ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: ZodType | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  const object = jsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name: name === '*' ? 'path' : name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: property,
  }));
}

/** The header every authenticated write takes (../shared/API.md "Workspace additions (v1.1)"). */
const idempotencyKeyParameter = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: 'header',
  required: false,
  description:
    'Makes the request safe to retry: the first answer (2xx) is kept 24 hours for this API key and a repeat with the same method, URL and body gets it again with `Idempotent-Replayed: true`, changing nothing; ' +
    `the same key with another request is 422 idempotency_key_reused, a repeat while the first runs 409 idempotency_in_progress. Failures are not kept. Answers over ${ANSWER_BYTES_MAX} bytes of a request that changes nothing are not kept.`,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
};
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function buildOpenApi(routes: Routes, serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{path}');
    const example = exampleFor(route.method, route.url);
    const success: Record<string, unknown> = { ...(route.response ? { schema: jsonSchema(route.response, 'output') } : {}), ...(example?.response !== undefined ? { example: example.response } : {}) };
    const operation: Record<string, unknown> = {
      summary: route.summary,
      parameters: [
        ...parameters(route.params, 'path'),
        ...parameters(route.query, 'query'),
        ...(route.auth !== false && WRITE_METHODS.has(route.method) ? [idempotencyKeyParameter] : []),
      ],
      responses: {
        [String(route.status ?? 200)]: example?.produces
          ? { description: 'Success', content: Object.fromEntries(example.produces.map((type) => [type, { schema: { type: 'string', format: 'binary' } }])) }
          : Object.keys(success).length > 0
            ? { description: 'Success', content: { 'application/json': success } }
            : { description: 'Success' },
        default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    };
    if (route.auth !== false) operation.security = [{ bearer: [] }];
    if (route.body) {
      const body = { schema: jsonSchema(route.body), ...(example?.body === undefined ? {} : { example: example.body }) };
      operation.requestBody = { required: true, content: { 'application/json': body } };
    }
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Treehouse', version: '1' },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { enum: Object.keys(STATUS_BY_CODE) }, message: { type: 'string' }, details: { type: 'object' } },
            },
          },
        },
      },
    },
  };
}
