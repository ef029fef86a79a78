/**
 * Route definition with zod: params, query and body are parsed before the handler runs (a failure is
 * 400 invalid_request listing every issue), and each definition is kept for the OpenAPI document.
 *
 * Reads (GET) have a handler; every write (POST, PUT, PATCH, DELETE) is a WriteRoute, split in two
 * so that an Idempotency-Key works the same on all of them (src/service/idempotency.ts): `run` calls
 * the service and passes it the key's ChangeJoin, and `answer` makes the status and body from what
 * `run` returned, which with a key happens inside the effect's own transaction, where the answer is
 * kept.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z, type ZodType } from 'zod';
import { TreehouseError } from '../errors.js';
import type { Principal } from '../service/accounts.js';
import type { ChangeJoin } from '../service/eventLog.js';
import { requestFingerprint, type AnswerReads, type Idempotency } from '../service/idempotency.js';

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

export interface RouteAnswer {
  /** Default: the spec's status, else 200. */
  status?: number;
  body: unknown;
}

export interface WriteRoute<P, Q, B, R> {
  /** The work, through the service; `join` goes to the change that is the request's effect. */
  run(input: RouteInput<P, Q, B>, join: ChangeJoin | undefined): Promise<R>;
  /**
   * The answer to `result`, which must be the value the effect's change returned. No other work:
   * with `reads` it runs inside that change's transaction and reads only through them.
   */
  answer(result: R, input: RouteInput<P, Q, B>, reads?: AnswerReads): RouteAnswer | Promise<RouteAnswer>;
  /** Makes no change (merge preview, lint): with a key, its answer is kept in a write of its own. */
  readOnly?: boolean;
}

const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

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

/** The request's params, query and body parsed by the spec's schemas (400 listing every issue). */
function parseInput<P extends ZodType, Q extends ZodType, B extends ZodType>(
  spec: RouteSpec<P, Q, B>,
  request: FastifyRequest,
  reply: FastifyReply,
): RouteInput<z.output<P>, z.output<Q>, z.output<B>> {
  // The onRequest hook of src/http/app.ts sets the principal on every route marked auth; a route
  // reached without one is a wiring fault, and it fails closed.
  if (spec.auth !== false && !request.principal) throw new Error(`route ${spec.method} ${spec.url} reached without authentication`);
  const params = parseWith(spec.params ?? emptyObject, request.params, 'params');
  const query = parseWith(spec.query ?? emptyObject, request.query, 'query');
  const body = spec.body ? parseWith(spec.body, request.body, 'body') : undefined;
  return {
    params: params as z.output<P>,
    query: query as z.output<Q>,
    body: body as z.output<B>,
    principal: request.principal as Principal,
    request,
    reply,
  };
}

/** A read (GET) route. */
export function defineRoute<P extends ZodType = typeof emptyObject, Q extends ZodType = typeof emptyObject, B extends ZodType = z.ZodUndefined>(
  app: FastifyInstance,
  spec: RouteSpec<P, Q, B>,
  handler: (input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>) => Promise<unknown> | unknown,
): void {
  if (WRITE_METHODS.has(spec.method)) throw new Error(`${spec.method} ${spec.url} is a write: define it with defineWriteRoute`);
  registeredRoutes(app).push(spec as unknown as RouteSpec<ZodType, ZodType, ZodType>);
  app.route({
    method: spec.method,
    url: spec.url,
    config: { auth: spec.auth ?? true },
    handler: async (request, reply) => {
      const result = await handler(parseInput(spec, request, reply));
      if (!reply.sent && reply.statusCode === 200 && spec.status) reply.code(spec.status);
      return result;
    },
  });
}

/**
 * A write route. Without an Idempotency-Key: `run`, then `answer`. With one (checked by the
 * onRequest hook of src/http/app.ts, kept as `request.idempotencyKey`), the service answers: the
 * kept answer of an earlier request, or `run` with the key claimed and its answer kept with the
 * effect; a kept answer is sent as the very JSON text kept, and a replay says so in
 * `Idempotent-Replayed: true`.
 */
export function defineWriteRoute<
  P extends ZodType = typeof emptyObject,
  Q extends ZodType = typeof emptyObject,
  B extends ZodType = z.ZodUndefined,
  R = unknown,
>(app: FastifyInstance, spec: RouteSpec<P, Q, B>, write: WriteRoute<z.output<P>, z.output<Q>, z.output<B>, R>): void {
  if (!WRITE_METHODS.has(spec.method)) throw new Error(`${spec.method} ${spec.url} is not a write: define it with defineRoute`);
  registeredRoutes(app).push(spec as unknown as RouteSpec<ZodType, ZodType, ZodType>);
  const statusOf = (answer: RouteAnswer) => answer.status ?? spec.status ?? 200;
  app.route({
    method: spec.method,
    url: spec.url,
    config: { auth: spec.auth ?? true },
    handler: async (request, reply) => {
      const input = parseInput(spec, request, reply);
      const key = request.idempotencyKey;
      if (key === undefined) {
        const answer = await write.answer(await write.run(input, undefined), input);
        reply.code(statusOf(answer));
        return answer.body;
      }
      const fingerprint = await requestFingerprint(request.method, request.raw.url ?? request.url, request.bodyBytes);
      const outcome = await request.server.idempotency.answer(
        { keyId: input.principal.keyId, key, fingerprint },
        {
          run: (join) => write.run(input, join),
          render: async (result, reads) => {
            const answer = await write.answer(result, input, reads);
            return { status: statusOf(answer), body: answer.body };
          },
          readOnly: write.readOnly === true,
        },
      );
      if (outcome.failedAfterEffect !== undefined)
        request.log.error({ err: outcome.failedAfterEffect }, 'work after the effect of a request with an Idempotency-Key failed');
      reply.code(outcome.status).header('content-type', 'application/json; charset=utf-8');
      if (outcome.replayed) reply.header('idempotent-replayed', 'true');
      return reply.send(outcome.json);
    },
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Idempotency-Key (src/service/idempotency.ts), for defineWriteRoute. */
    idempotency: Idempotency;
  }
  interface FastifyRequest {
    principal?: Principal;
    /** The checked Idempotency-Key of a write to /api/v1, when one was given. */
    idempotencyKey?: string;
    /** The body's bytes as received, kept only when an Idempotency-Key was given (its fingerprint). */
    bodyBytes?: Buffer;
  }
  interface FastifyContextConfig {
    auth?: boolean;
  }
}
