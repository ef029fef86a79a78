/**
 * The Fastify application: authentication, rate limiting, the error envelope, and the routes of
 * ../shared/API.md. It translates between HTTP and the services and holds no logic of its own.
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { isTreehouseError, TreehouseError } from '../errors.js';
import { StorageFullError } from '../store/types.js';
import type { Treehouse } from '../service/treehouse.js';
import { envelope, STATUS_BY_CODE } from './errors.js';
import { buildOpenApi } from './openapi.js';
import { defineRoute, registeredRoutes } from './route.js';
import { credentialOf } from './credentials.js';
import { gitHttpRoutes } from './gitHttp.js';
import { fileRoutes } from './routes/files.js';
import { gitRoutes } from './routes/git.js';
import { lintRoutes } from './routes/lint.js';
import { publicSiteRoutes } from './publicSite.js';
import { projectRoutes } from './routes/projects.js';
import { remoteRoutes } from './routes/remote.js';
import { templateRoutes } from './routes/templates.js';

export interface AppOptions {
  logLevel?: string;
}

export function buildApp(th: Treehouse, options: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: { level: options.logLevel ?? 'info' },
    bodyLimit: th.config.limits.requestBodyBytesMax,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
  });

  // On shutdown, answers still in flight close their connection, so a keep-alive socket cannot hold
  // the server open until its idle timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (!request.url.startsWith('/api/v1/') || request.routeOptions.config?.auth === false) return;
    const principal = th.accounts.authenticate(credentialOf(request.headers.authorization) ?? '');
    if (!principal) {
      reply.header('WWW-Authenticate', 'Bearer');
      throw new TreehouseError('unauthorized', 'A valid API key is required (Authorization: Bearer <key>).');
    }
    const retryAfterSeconds = th.rateLimiter.take(principal.keyId);
    if (retryAfterSeconds > 0) {
      reply.header('Retry-After', String(retryAfterSeconds));
      throw new TreehouseError('rate_limited', `Too many requests; retry in ${retryAfterSeconds} s.`);
    }
    request.principal = principal;
  });

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (isTreehouseError(error)) {
      return reply.code(STATUS_BY_CODE[error.code]).send(envelope(error.code, error.message, error.details));
    }
    if (error instanceof StorageFullError) {
      request.log.error({ err: error }, 'storage full');
      return reply.code(503).send(envelope('unavailable', 'Storage is full; nothing was written.'));
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

  app.get('/healthz', { config: { auth: false } }, async () => ({ ok: true, deflate_backlog: th.deflateCache.backlog }));

  projectRoutes(app, th);
  fileRoutes(app, th);
  gitRoutes(app, th);
  remoteRoutes(app, th);
  templateRoutes(app);
  gitHttpRoutes(app, th);
  lintRoutes(app, th);
  publicSiteRoutes(app, th);

  let openApi: Record<string, unknown> | null = null;
  defineRoute(app, { method: 'GET', url: '/api/v1/openapi.json', summary: 'This document', auth: false }, () => {
    openApi ??= buildOpenApi(registeredRoutes(app), `${th.config.publicBaseUrl}`);
    return openApi;
  });
  return app;
}
