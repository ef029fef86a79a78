/**
 * A git smart-HTTP client (Documentation/gitprotocol-http.txt), written here: fetch one ref's whole
 * history (protocol v2 when the server speaks it, else v0) and push one branch (send-pack, never
 * forced). The wire formats are in src/git/smartClient.ts; this module carries them over HTTP.
 *
 * Every request goes through the SSRF rules of ./ssrf.ts: the host is resolved once, checked, and
 * the connection is made to that checked address. As git's `http.followRedirects=initial`, redirects
 * of the first request (info/refs) are followed, each target checked the same way, and the later
 * requests go to the repository it moved to; a redirect of any other request is refused.
 * Credentials travel as HTTP Basic auth (the token is the password), only to the origin they were
 * given for, and never appear in an error message or a log.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Oid } from '../git/oid.js';
import { PackFormatError, parsePack, type PackObject } from '../git/pack.js';
import { PktLineError } from '../git/pktline.js';
import { branchRef, BRANCH_REF_PREFIX } from '../git/refname.js';
import {
  encodeFetchV2Request,
  encodeLsRefsRequest,
  encodePushCommands,
  encodeUploadRequestV0,
  FetchResponseReader,
  parseInfoRefs,
  parseLsRefsResponse,
  parseReportStatus,
  receiveCapabilities,
  uploadCapabilitiesV0,
  type Advertisement,
  type RemoteRef,
} from '../git/smartClient.js';
import { AGENT, ProtocolError, type Service } from '../git/smartProtocol.js';
import { isAncestor } from '../repo/ancestry.js';
import { planPushPack, pushPackStream } from '../repo/wire/uploadPack.js';
import { commitInfo, inReadTx, type Repo } from '../repo/repo.js';
import { parseRemoteUrl, resolveRemoteHost, RemoteUrlError, type ResolvedAddress } from './ssrf.js';

/** Where a remote is and how to sign in: `url` carries no credentials. */
export interface RemoteEndpoint {
  url: string;
  /** The Basic-auth user name; "x-access-token" when a token is given without one. */
  username: string | null;
  token: string | null;
  /** A redirect to another origin left the token behind (redirectedEndpoint). */
  tokenWithheld?: boolean;
}

export interface GitClientOptions {
  allowPrivateHosts: boolean;
  signal?: AbortSignal;
  /** No bytes for this long, or no connection: the request fails. */
  idleTimeoutMs?: number;
  packBytesMax?: number;
}

export type RemoteErrorKind = 'invalid_url' | 'refused_host' | 'unreachable' | 'auth' | 'not_found' | 'unknown_ref' | 'protocol' | 'rejected' | 'aborted';

/** A remote operation failed. `transient` failures are worth retrying later; the others are not. */
export class RemoteError extends Error {
  override name = 'RemoteError';
  constructor(
    message: string,
    readonly kind: RemoteErrorKind,
    readonly transient: boolean,
  ) {
    super(message);
  }
}

export const DEFAULT_USERNAME = 'x-access-token';
const IDLE_TIMEOUT_MS_DEFAULT = 30_000;
/** A fetched pack, whole, in memory before it is parsed: the limit of a git seed. */
const PACK_BYTES_MAX_DEFAULT = 1024 * 1024 * 1024;
/** info/refs, ls-refs and report-status answers are small; larger ones are refused. */
const SMALL_ANSWER_BYTES_MAX = 64 * 1024 * 1024;
/** Redirects of a remote's first request followed at most. */
const INITIAL_REDIRECTS_MAX = 5;
/** Remote ref tips offered as haves when planning a push pack. */
const PUSH_HAVES_MAX = 1000;
const USER_AGENT = `git/2.0 (${AGENT})`;

// ---------------------------------------------------------------------------------------------
// Transport

interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Readable;
}

function authorization(endpoint: RemoteEndpoint): Record<string, string> {
  if (endpoint.token === null) return {};
  const user = endpoint.username ?? DEFAULT_USERNAME;
  return { authorization: `Basic ${Buffer.from(`${user}:${endpoint.token}`, 'utf8').toString('base64')}` };
}

/** A lookup that answers with the addresses already checked, whatever the caller asks. */
function pinnedLookup(resolved: ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, resolved.map(({ address, family }) => ({ address, family })));
    else callback(null, resolved[0].address, resolved[0].family);
  }) as unknown as LookupFunction;
}

function networkError(error: unknown, options: GitClientOptions): RemoteError {
  if (error instanceof RemoteError) return error;
  if (options.signal?.aborted) {
    if ((options.signal.reason as Error | undefined)?.name === 'TimeoutError') {
      return new RemoteError('The remote did not finish in time.', 'unreachable', true);
    }
    return new RemoteError('The operation was stopped.', 'aborted', true);
  }
  const code = (error as { code?: string }).code;
  return new RemoteError(`The remote could not be reached (${code ?? (error as Error).message}).`, 'unreachable', true);
}

/** One HTTP exchange with the remote, to the checked address, refusing non-200 answers (but a redirect, when `redirects`). */
async function exchange(
  endpoint: RemoteEndpoint,
  path: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer | Iterable<Buffer> | AsyncIterable<Buffer> },
  options: GitClientOptions,
  redirects = false,
): Promise<HttpAnswer> {
  const target = new URL(endpoint.url + path);
  const resolved = await checkedAddress(target.hostname, options);
  const client = target.protocol === 'https:' ? https : http;
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS_DEFAULT;
  const answer = await new Promise<HttpAnswer>((resolve, reject) => {
    const requestOptions: http.RequestOptions & { autoSelectFamily: boolean } = {
      method: init.method,
      headers: { 'user-agent': USER_AGENT, ...authorization(endpoint), ...init.headers },
      lookup: pinnedLookup(resolved),
      // Every checked address is tried in turn (a name may resolve to ::1 and 127.0.0.1); the
      // option passes through to net.connect.
      autoSelectFamily: true,
      agent: false,
      signal: options.signal,
      timeout: idleTimeoutMs,
    };
    const request = client.request(target, requestOptions);
    request.on('timeout', () => request.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    request.on('error', (error) => reject(networkError(error, options)));
    request.on('response', (response) => {
      response.setTimeout(idleTimeoutMs, () => response.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
      const encoding = response.headers['content-encoding'];
      const body = encoding === 'gzip' ? response.pipe(createGunzip()) : response;
      if (encoding === 'gzip') response.on('error', (error) => body.destroy(error));
      resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
    });
    if (init.body === undefined) request.end();
    else if (Buffer.isBuffer(init.body)) request.end(init.body);
    else {
      const source = Readable.from(init.body);
      source.on('error', (error) => request.destroy(error));
      source.pipe(request);
    }
  });
  if (answer.status === 200 || (redirects && isRedirect(answer))) return answer;
  answer.body.resume();
  throw statusError(answer, endpoint);
}

const isRedirect = (answer: HttpAnswer) => answer.status >= 300 && answer.status < 400 && typeof answer.headers.location === 'string';

/**
 * The repository a redirect of `path` (the first request) moved to, as git takes it: the target
 * must end with the same path, and what comes before is the new URL. Credentials go along only to
 * the same origin; an https remote is not followed to http.
 */
function redirectedEndpoint(endpoint: RemoteEndpoint, path: string, location: string): RemoteEndpoint {
  const from = new URL(endpoint.url + path);
  let to: URL;
  try {
    to = new URL(location, from);
  } catch {
    throw new RemoteError('The remote redirects to an address that is not a URL.', 'protocol', false);
  }
  to.hash = '';
  const shown = redactUrl(to.href);
  if (to.protocol !== 'http:' && to.protocol !== 'https:') throw new RemoteError(`The remote redirects to ${shown}, which is not http or https.`, 'protocol', false);
  if (from.protocol === 'https:' && to.protocol === 'http:') throw new RemoteError(`The remote redirects from https to http (${shown}); give an https URL that does not.`, 'protocol', false);
  if (to.username !== '' || to.password !== '') throw new RemoteError('The remote redirects to an address with credentials in it.', 'protocol', false);
  if (!to.href.endsWith(path) || to.href.length === path.length) {
    throw new RemoteError(`The remote redirects to ${shown}, which is not the same repository moved; give the repository's URL instead.`, 'protocol', false);
  }
  const moved = endpointFromUrl(to.href.slice(0, -path.length), {});
  if (to.origin === from.origin) return { ...endpoint, url: moved.url };
  return { url: moved.url, username: null, token: null, tokenWithheld: endpoint.token !== null || endpoint.tokenWithheld };
}

function statusError(answer: HttpAnswer, endpoint: RemoteEndpoint): RemoteError {
  const status = answer.status;
  if (status === 401 || status === 403) {
    const message = endpoint.tokenWithheld
      ? `The remote redirected to ${endpoint.url}, which requires authentication (HTTP ${status}); a token is not sent to another origin, so give that URL instead.`
      : endpoint.token === null
        ? `The remote requires authentication (HTTP ${status}); give a token.`
        : `The remote refused the credentials (HTTP ${status}).`;
    return new RemoteError(message, 'auth', false);
  }
  if (status === 404) return new RemoteError(`No git repository was found at ${endpoint.url} (HTTP 404).`, 'not_found', false);
  if (status >= 300 && status < 400) {
    const location = typeof answer.headers.location === 'string' ? redactUrl(answer.headers.location) : 'another address';
    return new RemoteError(`The remote redirects to ${location}; give that URL instead (only the redirects of the first request are followed).`, 'protocol', false);
  }
  const transient = status === 408 || status === 429 || status >= 500;
  return new RemoteError(`The remote answered HTTP ${status}.`, transient ? 'unreachable' : 'protocol', transient);
}

/** A URL from the remote, shown without any credentials it may carry. */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return 'another address';
  }
}

async function readAll(body: Readable, limit: number, options: GitClientOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > limit) throw new RemoteError(`The remote's answer is larger than ${limit} bytes.`, 'protocol', false);
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    body.destroy();
    throw networkError(error, options);
  }
  return Buffer.concat(chunks, bytes);
}

function expectContentType(answer: HttpAnswer, expected: string): void {
  const type = String(answer.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== expected) {
    answer.body.resume();
    throw new RemoteError(`The remote is not a git smart-HTTP server (content type ${JSON.stringify(type)}).`, 'protocol', false);
  }
}

/** Runs `action`, turning wire-format failures into RemoteError. */
async function speaking<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ProtocolError || error instanceof PktLineError || error instanceof PackFormatError) {
      throw new RemoteError(`The remote's answer could not be understood: ${error.message}`, 'protocol', false);
    }
    throw error;
  }
}

/** The advertisement, and the endpoint that gave it: the repository a redirect moved to, if one did. */
async function infoRefs(endpoint: RemoteEndpoint, service: Service, askV2: boolean, options: GitClientOptions): Promise<{ advertisement: Advertisement; endpoint: RemoteEndpoint }> {
  const headers: Record<string, string> = { accept: '*/*', pragma: 'no-cache' };
  if (askV2) headers['git-protocol'] = 'version=2';
  const path = `/info/refs?service=${service}`;
  for (let redirected = 0; ; redirected++) {
    const answer = await exchange(endpoint, path, { method: 'GET', headers }, options, true);
    if (answer.status !== 200) {
      answer.body.resume();
      if (redirected === INITIAL_REDIRECTS_MAX) throw new RemoteError(`The remote redirected more than ${INITIAL_REDIRECTS_MAX} times.`, 'protocol', false);
      endpoint = redirectedEndpoint(endpoint, path, answer.headers.location as string);
      continue;
    }
    expectContentType(answer, `application/x-${service}-advertisement`);
    const body = await readAll(answer.body, SMALL_ANSWER_BYTES_MAX, options);
    return { advertisement: await speaking(async () => parseInfoRefs(body, service)), endpoint };
  }
}

async function post(endpoint: RemoteEndpoint, service: Service, body: Buffer | Iterable<Buffer> | AsyncIterable<Buffer>, v2: boolean, options: GitClientOptions): Promise<HttpAnswer> {
  const headers: Record<string, string> = {
    'content-type': `application/x-${service}-request`,
    accept: `application/x-${service}-result`,
  };
  if (v2) headers['git-protocol'] = 'version=2';
  const answer = await exchange(endpoint, `/${service}`, { method: 'POST', headers, body }, options);
  expectContentType(answer, `application/x-${service}-result`);
  return answer;
}

// ---------------------------------------------------------------------------------------------
// Fetch

export interface FetchedRef {
  /** The full name of the ref that was fetched ("HEAD" when none was asked for and HEAD is detached). */
  refName: string;
  /** The ref's value: a commit, or an annotated tag. */
  tip: Oid;
  objects: PackObject[];
}

/** Parses a URL given by a client into an endpoint: credentials in the URL move out of it. */
export function endpointFromUrl(raw: string, credentials: { username?: string | null; token?: string | null }): RemoteEndpoint {
  let parsed;
  try {
    parsed = parseRemoteUrl(raw);
  } catch (error) {
    if (error instanceof RemoteUrlError) throw new RemoteError(error.message, 'invalid_url', false);
    throw error;
  }
  const given = { username: credentials.username ?? null, token: credentials.token ?? null };
  if (parsed.username !== null && given.username !== null) {
    throw new RemoteError('Give the user name either in the URL or as username, not both.', 'invalid_url', false);
  }
  if (parsed.password !== null && given.token !== null) {
    throw new RemoteError('Give the token either in the URL or as token, not both.', 'invalid_url', false);
  }
  const username = given.username ?? parsed.username;
  let token = given.token ?? parsed.password;
  if (token === '') token = null;
  return { url: parsed.url, username: username === '' ? null : username, token };
}

/** Checks that the remote's host is one the server may talk to, without connecting. */
export async function checkRemoteHost(endpoint: RemoteEndpoint, options: GitClientOptions): Promise<void> {
  await checkedAddress(new URL(endpoint.url).hostname, options);
}

async function checkedAddress(hostname: string, options: GitClientOptions): Promise<ResolvedAddress[]> {
  try {
    return await resolveRemoteHost(hostname, options.allowPrivateHosts);
  } catch (error) {
    if (!(error instanceof RemoteUrlError)) throw error;
    if (error.reason === 'refused') throw new RemoteError(error.message, 'refused_host', false);
    if (error.reason === 'unresolvable') throw new RemoteError(error.message, 'unreachable', true);
    throw new RemoteError(error.message, 'invalid_url', false);
  }
}

/** The ref a client named: a branch, then a tag, or a full ref name; HEAD when none is named. */
function chooseRef(refs: RemoteRef[], wanted: string | undefined): RemoteRef {
  if (wanted === undefined) {
    const head = refs.find((ref) => ref.name === 'HEAD');
    if (!head) throw new RemoteError('The remote repository is empty (it has no HEAD).', 'unknown_ref', false);
    return head;
  }
  const names = wanted.startsWith('refs/') ? [wanted] : [`refs/heads/${wanted}`, `refs/tags/${wanted}`];
  for (const name of names) {
    const found = refs.find((ref) => ref.name === name);
    if (found) return found;
  }
  throw new RemoteError(`The remote has no branch or tag named ${JSON.stringify(wanted)}.`, 'unknown_ref', false);
}

function refPrefixes(wanted: string | undefined): string[] {
  if (wanted === undefined) return ['HEAD'];
  return wanted.startsWith('refs/') ? [wanted] : [`refs/heads/${wanted}`, `refs/tags/${wanted}`];
}

/**
 * Fetches the whole history of one ref (no haves: a fresh clone) and returns its objects, parsed
 * here or by `readPack` (which may parse and check the pack elsewhere, off the event loop).
 */
export async function fetchRef(
  given: RemoteEndpoint,
  wanted: string | undefined,
  options: GitClientOptions,
  readPack?: (pack: Buffer) => Promise<PackObject[]>,
): Promise<FetchedRef> {
  // Later requests go where a redirect of the first one moved the repository.
  const { advertisement, endpoint } = await infoRefs(given, 'git-upload-pack', true, options);
  const packBytesMax = options.packBytesMax ?? PACK_BYTES_MAX_DEFAULT;
  let ref: RemoteRef;
  let reader: FetchResponseReader;
  let request: Buffer;
  if (advertisement.version === 2) {
    const capabilities = advertisement.capabilities;
    if (!capabilities.has('ls-refs') || !capabilities.has('fetch')) {
      throw new RemoteError('The remote speaks protocol v2 without ls-refs and fetch.', 'protocol', false);
    }
    const listed = await post(endpoint, 'git-upload-pack', encodeLsRefsRequest(capabilities, refPrefixes(wanted)), true, options);
    const refs = await speaking(async () => parseLsRefsResponse(await readAll(listed.body, SMALL_ANSWER_BYTES_MAX, options)));
    ref = chooseRef(refs, wanted);
    request = encodeFetchV2Request(capabilities, [ref.oid]);
    reader = new FetchResponseReader(2, true, packBytesMax);
  } else {
    ref = chooseRef(advertisement.refs, wanted);
    const capabilities = uploadCapabilitiesV0(advertisement.capabilities);
    request = encodeUploadRequestV0(capabilities, [ref.oid]);
    reader = new FetchResponseReader(0, capabilities.some((name) => name.startsWith('side-band')), packBytesMax);
  }
  const answer = await post(endpoint, 'git-upload-pack', request, advertisement.version === 2, options);
  const pack = await speaking(async () => {
    try {
      for await (const chunk of answer.body) reader.push(chunk as Buffer);
    } catch (error) {
      answer.body.destroy();
      if (error instanceof ProtocolError) throw error;
      throw networkError(error, options);
    }
    return reader.end();
  });
  const objects = readPack ? await readPack(pack) : (await speaking(async () => parsePack(pack))).objects;
  const refName = ref.name === 'HEAD' && ref.symrefTarget ? ref.symrefTarget : ref.name;
  return { refName, tip: ref.oid, objects };
}

// ---------------------------------------------------------------------------------------------
// Push

export type PushOutcome =
  /** The remote branch is at `oid` now (`objects` sent; 0 when it already was). */
  | { status: 'pushed'; oid: Oid; objects: number }
  /** The remote branch holds commits ours does not: nothing was pushed. */
  | { status: 'diverged'; oid: Oid; remoteOid: Oid }
  /** The branch no longer exists here. */
  | { status: 'gone' };

/** Pushes `branch` to the same-named branch of the remote, as a fast-forward only. */
export async function pushBranch(given: RemoteEndpoint, repo: Repo, branch: string, options: GitClientOptions): Promise<PushOutcome> {
  const { advertisement, endpoint } = await infoRefs(given, 'git-receive-pack', false, options);
  if (advertisement.version !== 0) throw new RemoteError('The remote answered receive-pack with protocol v2, which has no push.', 'protocol', false);
  const refName = branchRef(branch);
  const remote = advertisement.refs.find((ref) => ref.name === refName)?.oid ?? null;
  const decision = await inReadTx(repo, async (tx) => {
    const head = await tx.getRef(refName);
    if (!head) return { kind: 'gone' as const };
    if (remote && remote.equals(head)) return { kind: 'current' as const, head };
    if (remote && (!(await commitInfo(tx, remote)) || !(await isAncestor(tx, remote, head)))) return { kind: 'diverged' as const, head, remote };
    const haves = advertisement.refs
      .filter((ref) => ref.name.startsWith(BRANCH_REF_PREFIX) || ref.name.startsWith('refs/tags/'))
      .map((ref) => ref.oid)
      .slice(0, PUSH_HAVES_MAX);
    return { kind: 'push' as const, head, haves };
  });
  if (decision.kind === 'gone') return { status: 'gone' };
  if (decision.kind === 'current') return { status: 'pushed', oid: decision.head, objects: 0 };
  if (decision.kind === 'diverged') return { status: 'diverged', oid: decision.head, remoteOid: decision.remote };

  const capabilities = await speaking(async () => receiveCapabilities(advertisement.capabilities));
  // Planned and streamed as a fetch from us is (src/repo/wire/uploadPack.ts): the event loop is given
  // turns, and objects go out in their stored forms, deltas included.
  const plan = await planPushPack(repo, [decision.head], decision.haves);
  const commands = encodePushCommands([{ old: remote, new: decision.head, ref: refName }], capabilities);
  const body = (async function* () {
    yield commands;
    yield* pushPackStream(repo, plan, advertisement.capabilities);
  })();
  const answer = await post(endpoint, 'git-receive-pack', body, false, options);
  const report = await speaking(async () => parseReportStatus(await readAll(answer.body, SMALL_ANSWER_BYTES_MAX, options), capabilities.includes('side-band-64k')));
  if (report.unpack !== 'ok') throw new RemoteError(`The remote could not unpack the pushed objects: ${report.unpack}`, 'rejected', false);
  const result = report.results.find((found) => found.ref === refName);
  if (!result) throw new RemoteError(`The remote did not report on ${refName}.`, 'protocol', false);
  if (!result.ok) {
    // The remote moved between its advertisement and our update: the next attempt re-reads it.
    const raced = /stale info|fetch first|non-fast-forward|cannot lock|failed to lock|failed to update|but expected/i.test(result.reason);
    throw new RemoteError(`The remote refused the update of ${refName}: ${result.reason}`, 'rejected', raced);
  }
  return { status: 'pushed', oid: decision.head, objects: plan.objects.length };
}

