/**
 * The Fastify application: authentication, rate limiting, the error envelope, and the routes of
 * ../shared/API.md. It translates between HTTP and the services and holds no logic of its own.
 */
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { maxHeaderSize } from 'node:http';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { randomUUID } from 'node:crypto';
import { TreehouseError } from '../errors.js';
import { contractError } from '../service/domainErrors.js';
import type { Treehouse } from '../service/treehouse.js';
import type { Principal } from '../service/accounts.js';
import { idempotencyKeyOf } from '../service/idempotency.js';
import { envelope, STATUS_BY_CODE } from './errors.js';
import { buildOpenApi } from './openapi.js';
import { defineRoute, registeredRoutes } from './route.js';
import { credentialOf } from './credentials.js';
import { setRateLimitHeaders } from './rateLimitHeaders.js';
import { conditionalGet } from './conditionalGet.js';
import { createGuardedServer, rawErrorResponse } from './connectionGuard.js';
import { gitHttpRoutes } from './gitHttp.js';
import { eventRoutes } from './routes/events.js';
import { fileRoutes } from './routes/files.js';
import { gitRoutes } from './routes/git.js';
import { lintRoutes } from './routes/lint.js';
import { publicSiteRoutes } from './publicSite.js';
import { projectRoutes } from './routes/projects.js';
import { remoteRoutes } from './routes/remote.js';
import { searchRoutes } from './routes/search.js';
import { templateRoutes } from './routes/templates.js';
import { webhookRoutes } from './routes/webhooks.js';

/** Node's limit on the request head (its default; Treehouse does not change it). */
const HEADER_BYTES_MAX = maxHeaderSize;
/** Methods an Idempotency-Key applies to (on GET it is ignored). */
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface AppOptions {
  logLevel?: string;
  /** Where log lines go (pino's destination; stdout by default). */
  logStream?: { write(line: string): void };
}

export function buildApp(th: Treehouse, options: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: { level: options.logLevel ?? 'info', ...(options.logStream ? { stream: options.logStream } : {}) },
    bodyLimit: th.config.limits.requestBodyBytesMax,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    serverFactory: (handler) => createGuardedServer(th.config.connections, handler),
    frameworkErrors: (error, _request, reply) => answerFrameworkError(error, reply as unknown as FastifyReply),
    // Requests Node's HTTP parser refuses (bad syntax, headers too large, timeouts) never become requests.
    clientErrorHandler: (error: NodeJS.ErrnoException & { bytesParsed?: number }, socket) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      if (socket.writable) socket.end(clientErrorResponse(error.code));
      socket.destroySoon();
    },
  });

  // On shutdown, answers still in flight close their connection, so a keep-alive socket cannot hold
  // the server open until its idle timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // Open event streams end, so the server can close; their clients resume with Last-Event-ID.
    th.eventStreams.closeAll();
  });
  app.addHook('onSend', conditionalGet);
  app.addHook('onSend', async (request, reply) => {
    // An answer given before the body was read (401, 404, 413) closes the connection: keeping it
    // would mean reading the rest of a body nobody wants, at whatever pace the client sends it.
    if (closing || !request.raw.complete) reply.header('connection', 'close');
  });

  // Authentication belongs to the route Fastify matched (defineRoute marks it), never to a string
  // test of the raw URL: the router decodes percent-encoding that such a test would not see.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (request.routeOptions.config?.auth !== true) return;
    request.principal = await authenticateKey(th, request.headers.authorization, reply);
    // Checked before the body is read, so a refused key costs no body.
    if (WRITE_METHODS.has(request.method)) request.idempotencyKey = idempotencyKeyOf(headerValues(request.raw.rawHeaders, 'idempotency-key'));
  });
  app.decorate('idempotency', th.idempotency);

  // JSON is UTF-8 (RFC 8259); a body labelled with another charset would be read as something it is not.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(new TreehouseError('invalid_request', `JSON bodies are UTF-8; charset ${JSON.stringify(charset)} is not accepted.`), undefined);
      return;
    }
    // The bytes as sent make an Idempotency-Key's fingerprint; without a key they are not kept.
    if (request.idempotencyKey !== undefined) request.bodyBytes = body as Buffer;
    // The default parser decodes a Buffer as UTF-8 itself (secure-json-parse), as it would have the string.
    parseJson(request, body as unknown as string, done);
  });

  const metrics = th.metrics;
  if (metrics) {
    // By route template, never the raw URL: ids and paths would make a series per request.
    app.addHook('onResponse', async (request, reply) => {
      metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });
  }

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    const translated = contractError(error);
    if (translated) {
      if (translated.code === 'unavailable') request.log.error({ err: error }, 'storage unavailable');
      return reply.code(STATUS_BY_CODE[translated.code]).send(envelope(translated.code, translated.message, translated.details));
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send(envelope('payload_too_large', 'The request body is over its limit.', { limit: th.config.limits.requestBodyBytesMax }));
    }
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const message = fastifyError.code?.startsWith('FST_ERR_CTP') ? `The request body is not valid JSON: ${error.message}` : error.message;
      return reply.code(400).send(envelope('invalid_request', message, { issues: [{ path: 'body', message: error.message }] }));
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send(envelope('internal', 'Internal error.'));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(envelope('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`));
  });

  app.get('/healthz', async () => {
    const loop = th.eventLoop.latest();
    return {
      ok: true,
      deflate_backlog: th.deflateCache.backlog,
      drop_backlog: th.projects.drops.backlog,
      event_loop_delay_ms: loop && { window_ms: loop.windowMs, at: loop.at, p50: loop.p50Ms, p99: loop.p99Ms, max: loop.maxMs },
    };
  });

  projectRoutes(app, th);
  fileRoutes(app, th);
  gitRoutes(app, th);
  remoteRoutes(app, th);
  searchRoutes(app, th);
  templateRoutes(app);
  eventRoutes(app, th);
  webhookRoutes(app, th);
  gitHttpRoutes(app, th);
  lintRoutes(app, th);
  publicSiteRoutes(app, th);

  let openApi: Record<string, unknown> | null = null;
  defineRoute(app, { method: 'GET', url: '/api/v1/openapi.json', summary: 'This document', auth: false }, () => {
    openApi ??= buildOpenApi(registeredRoutes(app), `${th.config.publicBaseUrl}`);
    return openApi;
  });
  // The same document rendered by Swagger UI at /docs (public, like openapi.json). The plugin runs when
  // the app starts, after every route above is defined, so the document it is given is complete.
  app.register(async (docs) => {
    await docs.register(swagger, { mode: 'static', specification: { document: buildOpenApi(registeredRoutes(app), th.config.publicBaseUrl) as never } });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
  return app;
}

/** The caller's key, checked and charged against its rate limit; throws unauthorized or rate_limited. */
async function authenticateKey(th: Treehouse, authorization: string | undefined, reply: FastifyReply): Promise<Principal> {
  const principal = await th.accounts.authenticate(credentialOf(authorization) ?? '');
  if (!principal) {
    reply.header('WWW-Authenticate', 'Bearer');
    throw new TreehouseError('unauthorized', 'A valid API key is required (Authorization: Bearer <key>).');
  }
  const decision = await th.rateLimiter.charge(principal.keyId);
  setRateLimitHeaders(reply, decision);
  if (decision.retryAfterSeconds > 0) throw new TreehouseError('rate_limited', `Too many requests; retry in ${decision.retryAfterSeconds} s.`);
  return principal;
}

/** Every value of a header as received, one per occurrence (Node joins repeated headers into one). */
function headerValues(rawHeaders: readonly string[], lowerCaseName: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) if (rawHeaders[i].toLowerCase() === lowerCaseName) values.push(rawHeaders[i + 1]);
  return values;
}

/**
 * Errors of the router itself, before any route matched: malformed percent-encoding, an over-long
 * path parameter. Neither can name anything that exists.
 */
function answerFrameworkError(error: FastifyError, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return reply.code(404).send(envelope('not_found', 'Not found: a path parameter is longer than any id.'));
  }
  const message = error.code === 'FST_ERR_BAD_URL' ? 'The URL holds malformed percent-encoding.' : 'The request could not be routed.';
  return reply.code(400).send(envelope('invalid_request', message, { issues: [{ path: 'url', message: error.message }] }));
}

/** Node's parser errors, in the envelope. */
function clientErrorResponse(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return rawErrorResponse('payload_too_large', `The request headers are over ${HEADER_BYTES_MAX} bytes.`, {}, { limit: HEADER_BYTES_MAX });
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return rawErrorResponse('invalid_request', 'The request was not received in time; the connection is closed.');
  return rawErrorResponse('invalid_request', 'The request is not valid HTTP/1.1.');
}
