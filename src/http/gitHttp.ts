/**
 * The git smart-HTTP export (Documentation/gitprotocol-http.txt):
 *   GET  /git/{project_id}.git/info/refs?service=git-upload-pack|git-receive-pack
 *   POST /git/{project_id}.git/git-upload-pack
 *   POST /git/{project_id}.git/git-receive-pack
 * Basic auth with the API key as password (Bearer also works), checked by each route's onRequest
 * hook before the body is read. Protocol v2 when the client sends
 * `Git-Protocol: version=2`. A request that cannot be served is answered as git's http-backend
 * answers it: 200 with an `ERR <message>` pkt-line, which git shows as "remote error: <message>"
 * (an HTTP error status would only show as "RPC failed; HTTP 400").
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodePktLineAt, decodePktLines, encodeFlush, encodePktLine, encodeSideband, PktLineError, SIDEBAND_DATA, SIDEBAND_ERROR, SIDEBAND_PROGRESS } from '../git/pktline.js';
import {
  encodeReportStatus,
  parsePushCommands,
  parseUploadRequestV0,
  parseV2Command,
  ProtocolError,
  type Service,
} from '../git/smartProtocol.js';
import type { ReceivePackResult } from '../service/gitExport.js';
import type { ProjectRecord } from '../service/projects.js';
import type { Treehouse } from '../service/treehouse.js';
import { credentialOf } from './credentials.js';
import { setRateLimitHeaders } from './rateLimitHeaders.js';
import { GitBodyError, readGitBody } from './gitBody.js';

const SERVICES = new Set<Service>(['git-upload-pack', 'git-receive-pack']);
/** An upload-pack request (wants and haves) is small; a larger one is refused as endless negotiation. */
const UPLOAD_REQUEST_BYTES_MAX = 16 * 1024 * 1024;

function protocolVersion(request: FastifyRequest): 0 | 2 {
  const header = request.headers['git-protocol'];
  return typeof header === 'string' && header.split(':').includes('version=2') ? 2 : 0;
}

/** upload-pack's packet_writer_error: one `ERR` pkt-line, without LF or flush, then the end. */
function errPacket(message: string): Buffer {
  return encodePktLine(`ERR ${message.replace(/\n/g, ' ')}`);
}

/**
 * A push refused whole. send-pack reads a side-band-64k answer through its demultiplexer, which
 * takes an ERR pkt-line for a packet on band 69 ("protocol error: bad band #69"); a message on
 * band 3 it prints as "remote: <message>" and fails the push.
 */
function sidebandError(message: string): Buffer {
  return Buffer.concat([...encodeSideband(SIDEBAND_ERROR, `${message.replace(/\n/g, ' ')}\n`), encodeFlush()]);
}

export function gitHttpRoutes(app: FastifyInstance, th: Treehouse): void {
  // A context of its own: git bodies are streams the handlers read once the key is checked, and no
  // parser of the JSON API (or its limits and errors) applies to them.
  app.register(async (git) => {
    git.removeAllContentTypeParsers();
    git.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    gitRoutes(git, th);
  });
}

/** The project a request was authorized for, set by the route's onRequest hook. */
const projectOfRequest = new WeakMap<FastifyRequest, ProjectRecord>();

function gitRoutes(app: FastifyInstance, th: Treehouse): void {
  /**
   * Runs as the matched route's onRequest hook, before any byte of the body is read: the key, its
   * rate limit, then the project. Answers are text/plain, which git prints after "remote:".
   */
  const authorize = async (request: FastifyRequest, reply: FastifyReply) => {
    // An answer given before the body was read closes the connection rather than read what is left.
    const refuse = (status: number, text: string) => {
      if (!request.raw.complete) reply.header('Connection', 'close');
      return reply.code(status).type('text/plain; charset=utf-8').send(text);
    };
    const principal = await th.accounts.authenticate(credentialOf(request.headers.authorization) ?? '');
    if (!principal) {
      reply.header('WWW-Authenticate', 'Basic realm="Treehouse"');
      return refuse(401, 'A valid API key is required (as the password, or as the user name with a password that is not a key).\n');
    }
    // The key's one token bucket, shared with the JSON API. git prints a text/plain body of a failed
    // info/refs after "remote:"; Retry-After is whole seconds, as on the API.
    const decision = await th.rateLimiter.charge(principal.keyId);
    setRateLimitHeaders(reply, decision);
    if (decision.retryAfterSeconds > 0) return refuse(429, `Too many requests for this API key (rate limit); retry in ${decision.retryAfterSeconds} s.\n`);
    const { project } = request.params as { project: string };
    const id = project.endsWith('.git') ? project.slice(0, -4) : project;
    let record: ProjectRecord;
    try {
      record = await th.projects.get(principal, id);
    } catch {
      return refuse(404, 'Repository not found.\n');
    }
    request.principal = principal;
    projectOfRequest.set(request, record);
  };
  const authorized = (request: FastifyRequest): ProjectRecord => {
    const record = projectOfRequest.get(request);
    // Every git route has the hook; reaching a handler without it is a wiring fault, and it fails closed.
    if (!record) throw new Error(`git route ${request.routeOptions.url} reached without authorization`);
    return record;
  };

  const protocolFailure = (reply: FastifyReply, service: Service, error: unknown, pushSideband = false) => {
    if (error instanceof ProtocolError || error instanceof PktLineError || error instanceof GitBodyError) {
      const answer = pushSideband ? sidebandError(error.message) : errPacket(error.message);
      if (error instanceof GitBodyError) reply.header('Connection', 'close');
      return reply.code(200).header('Cache-Control', 'no-cache').type(`application/x-${service}-result`).send(answer);
    }
    throw error;
  };
  const bodyOf = (request: FastifyRequest, bytesMax: number): Promise<Buffer> => {
    const encoding = request.headers['content-encoding'];
    return readGitBody(request.body as Readable | undefined, typeof encoding === 'string' ? encoding : undefined, bytesMax);
  };

  app.get('/git/:project/info/refs', { onRequest: authorize }, async (request, reply) => {
    const record = authorized(request);
    const service = (request.query as { service?: string }).service as Service;
    if (!SERVICES.has(service)) return reply.code(403).type('text/plain').send('Only the smart protocol is served.\n');
    const lines = await th.git.advertise(record, service, service === 'git-upload-pack' ? protocolVersion(request) : 0);
    return reply
      .header('Cache-Control', 'no-cache')
      .type(`application/x-${service}-advertisement`)
      .send(Buffer.concat(lines));
  });

  app.post('/git/:project/git-upload-pack', { onRequest: authorize }, async (request, reply) => {
    const record = authorized(request);
    const service: Service = 'git-upload-pack';
    try {
      const packets = decodePktLines(await bodyOf(request, UPLOAD_REQUEST_BYTES_MAX));
      let stream: Iterable<Buffer> | AsyncIterable<Buffer>;
      if (protocolVersion(request) === 2) {
        const command = parseV2Command(packets);
        if (command.command === 'ls-refs') stream = await th.git.lsRefs(record, command);
        else if (command.command === 'fetch') stream = th.git.fetchV2(record, command);
        else throw new ProtocolError(`unknown command ${JSON.stringify(command.command)}`);
      } else {
        stream = th.git.uploadPackV0(record, parseUploadRequestV0(packets));
      }
      // Pull the first chunk now, so a refused request becomes an ERR answer rather than a broken stream.
      const iterator = Symbol.asyncIterator in stream ? stream[Symbol.asyncIterator]() : stream[Symbol.iterator]();
      const first = await iterator.next();
      const rest = Readable.from(
        (async function* () {
          if (!first.done) yield first.value;
          for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
        })(),
      );
      return reply.header('Cache-Control', 'no-cache').type(`application/x-${service}-result`).send(rest);
    } catch (error) {
      return protocolFailure(reply, service, error);
    }
  });

  app.post('/git/:project/git-receive-pack', { onRequest: authorize }, async (request, reply) => {
    const record = authorized(request);
    const service: Service = 'git-receive-pack';
    // Until the commands say otherwise, assume side-band-64k: git asks for it whenever it is offered.
    let sideband = true;
    try {
      const body = await bodyOf(request, th.config.limits.requestBodyBytesMax);
      const push = parsePushCommands(body, decodePktLineAt);
      sideband = push.capabilities.has('side-band-64k');
      const answer = reply.header('Cache-Control', 'no-cache').type(`application/x-${service}-result`);
      // As git's receive-pack: no commands, nothing to unpack and nothing to report.
      if (push.commands.length === 0) return answer.send(Buffer.alloc(0));
      const result = await th.git.receivePack(record, {
        commands: push.commands,
        pack: body.subarray(push.packOffset),
        atomic: push.capabilities.has('atomic'),
        shallow: push.shallow,
      });
      return answer.send(encodePushAnswer(push.capabilities, result));
    } catch (error) {
      return protocolFailure(reply, service, error, sideband);
    }
  });
}

/**
 * The report (only when the client asked for report-status), inside side-band-64k when it was
 * negotiated, preceded there by the hints on channel 2, which git prints as "remote: …" lines.
 */
function encodePushAnswer(capabilities: Set<string>, result: ReceivePackResult): Buffer {
  const report = capabilities.has('report-status') ? Buffer.concat(encodeReportStatus(result.unpackError, result.results)) : Buffer.alloc(0);
  if (!capabilities.has('side-band-64k')) return report;
  const out: Buffer[] = [];
  for (const hint of result.hints) out.push(...encodeSideband(SIDEBAND_PROGRESS, Buffer.from(`${hint}\n`)));
  if (report.length > 0) out.push(...encodeSideband(SIDEBAND_DATA, report));
  out.push(encodeFlush());
  return Buffer.concat(out);
}
