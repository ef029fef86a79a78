/**
 * Route definition with zod: params, query and body are parsed before the handler runs (a failure is
 * 400 invalid_request listing every issue), and each definition is kept for the OpenAPI document.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z, type ZodType } from 'zod';
import { TreehouseError } from '../errors.js';
import type { Principal } from '../service/accounts.js';

export interface RouteSpec<P extends ZodType, Q extends ZodType, B extends ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify path; OpenAPI gets the same with `{name}` parameters. */
  url: string;
  summary: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Status of a plain success (default 200). */
  status?: number;
  /** The success body, for the OpenAPI document only (answers are not checked against it). */
  response?: ZodType;
  auth?: boolean;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  request: FastifyRequest;
  reply: FastifyReply;
}

const routesByApp = new WeakMap<FastifyInstance, Array<RouteSpec<ZodType, ZodType, ZodType>>>();

/** The routes defined on `app`, for its OpenAPI document. */
export function registeredRoutes(app: FastifyInstance): Array<RouteSpec<ZodType, ZodType, ZodType>> {
  let routes = routesByApp.get(app);
  if (!routes) routesByApp.set(app, (routes = []));
  return routes;
}

export function parseWith<T extends ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    path: issue.path.length > 0 ? issue.path.join('.') : where,
    message: issue.message,
  }));
  throw new TreehouseError('invalid_request', `The request ${where} is invalid.`, { issues });
}

const emptyObject = z.object({});

export function defineRoute<P extends ZodType = typeof emptyObject, Q extends ZodType = typeof emptyObject, B extends ZodType = z.ZodUndefined>(
  app: FastifyInstance,
  spec: RouteSpec<P, Q, B>,
  handler: (input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>) => Promise<unknown> | unknown,
): void {
  registeredRoutes(app).push(spec as unknown as RouteSpec<ZodType, ZodType, ZodType>);
  app.route({
    method: spec.method,
    url: spec.url,
    config: { auth: spec.auth ?? true },
    handler: async (request, reply) => {
      // The onRequest hook of src/http/app.ts sets the principal on every route marked auth; a route
      // reached without one is a wiring fault, and it fails closed.
      if (spec.auth !== false && !request.principal) throw new Error(`route ${spec.method} ${spec.url} reached without authentication`);
      const params = parseWith(spec.params ?? emptyObject, request.params, 'params');
      const query = parseWith(spec.query ?? emptyObject, request.query, 'query');
      const body = spec.body ? parseWith(spec.body, request.body, 'body') : undefined;
      const result = await handler({
        params: params as z.output<P>,
        query: query as z.output<Q>,
        body: body as z.output<B>,
        principal: request.principal as Principal,
        request,
        reply,
      });
      if (!reply.sent && reply.statusCode === 200 && spec.status) reply.code(spec.status);
      return result;
    },
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    auth?: boolean;
  }
}
