/**
 * The public site of a published project (../shared/API.md "Projects"): `/p/{handle}/…` serves the
 * files of main's head commit (never the working tree) as a static site, without an API key.
 *
 * - `/p/{handle}` redirects to `/p/{handle}/`; a path naming a directory redirects to the same path
 *   with a trailing "/", and a directory is served by its index.html (there are no listings).
 * - Content-Type comes from the file's extension (charset=utf-8 for text), ETag is the blob id in
 *   quotes, and a matching If-None-Match is answered 304 without reading the file.
 * - The path is decoded one component at a time from the raw URL, so an encoded "/" cannot join
 *   components; a component that is empty, "." or ".." (in any encoding) or holds a backslash or NUL
 *   is a 404, malformed percent-encoding a 400. The tree lookup itself can only walk down. Escapes
 *   decode to bytes, so `caf%E9.html` names the file whose name has the byte 0xE9 (Fastify's router
 *   answers such URLs with its own 400 before they reach here today; see the README).
 * - An unknown or unpublished handle is a 404 before anything else is looked at. A published
 *   project's missing file is a 404 with the project's own 404.html when it has one.
 * Responses are plain text or the project's files, never the API's JSON envelope.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodePath } from '../git/pathBytes.js';
import type { ProjectRecord } from '../service/projects.js';
import type { PublicSite } from '../service/publicSite.js';
import type { Treehouse } from '../service/treehouse.js';

const TEXT = '; charset=utf-8';
const CONTENT_TYPES: Record<string, string> = {
  html: `text/html${TEXT}`,
  htm: `text/html${TEXT}`,
  css: `text/css${TEXT}`,
  js: `text/javascript${TEXT}`,
  mjs: `text/javascript${TEXT}`,
  cjs: `text/javascript${TEXT}`,
  json: `application/json${TEXT}`,
  map: `application/json${TEXT}`,
  webmanifest: `application/manifest+json${TEXT}`,
  txt: `text/plain${TEXT}`,
  md: `text/markdown${TEXT}`,
  csv: `text/csv${TEXT}`,
  xml: `application/xml${TEXT}`,
  svg: `image/svg+xml${TEXT}`,
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/x-icon',
  bmp: 'image/bmp',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  wasm: 'application/wasm',
  pdf: 'application/pdf',
  mp4: 'video/mp4',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  zip: 'application/zip',
};
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';
const NOT_FOUND_PAGE = '404.html';

export function contentTypeOf(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot < 0 ? DEFAULT_CONTENT_TYPE : (CONTENT_TYPES[base.slice(dot + 1).toLowerCase()] ?? DEFAULT_CONTENT_TYPE);
}

/** True when an If-None-Match header names `etag` (or is "*"); weak tags compare by their value. */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

type SitePath = { kind: 'path'; path: string; directory: boolean } | { kind: 'bad'; status: 400 | 404 };

/** The project path a raw URL path (after `/p/{handle}/`) names. */
export function sitePath(raw: string): SitePath {
  const components = raw.split('/');
  const directory = components[components.length - 1] === '';
  if (directory) components.pop();
  const decoded: string[] = [];
  for (const component of components) {
    const name = percentDecoded(component);
    if (name === null) return { kind: 'bad', status: 400 };
    if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) return { kind: 'bad', status: 404 };
    decoded.push(name);
  }
  return { kind: 'path', path: decoded.join('/'), directory };
}

/**
 * A URL path component's bytes (percent-escapes decoded), as the name they spell
 * (src/git/pathBytes.ts): bytes that are not UTF-8 name the file with those bytes. Null when an
 * escape is malformed.
 */
function percentDecoded(component: string): string | null {
  if (!component.includes('%')) return component;
  const bytes: number[] = [];
  for (let i = 0; i < component.length; i++) {
    if (component[i] !== '%') {
      for (const byte of Buffer.from(component[i], 'utf8')) bytes.push(byte);
      continue;
    }
    const hex = component.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
    bytes.push(Number.parseInt(hex, 16));
    i += 2;
  }
  return decodePath(Buffer.from(bytes));
}

export function publicSiteRoutes(app: FastifyInstance, th: Treehouse): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const url = request.raw.url ?? request.url;
    const queryAt = url.indexOf('?');
    const query = queryAt < 0 ? '' : url.slice(queryAt);
    const match = /^\/p\/([^/]*)(?:\/(.*))?$/s.exec(queryAt < 0 ? url : url.slice(0, queryAt));
    const handle = match?.[1] ?? '';
    const record = await th.site.published(handle);
    if (!match || !record) return plain(reply, 404, 'Not found');
    if (match[2] === undefined) return redirect(reply, `${handle}/${query}`);

    const wanted = sitePath(match[2]);
    if (wanted.kind === 'bad') return plain(reply, wanted.status, wanted.status === 400 ? 'Bad request' : 'Not found');
    const ifNoneMatch = request.headers['if-none-match'];
    const wantContent = (oid: string) => !etagMatches(ifNoneMatch, `"${oid}"`);
    let path = wanted.path;
    if (!wanted.directory && path !== '') {
      const found = await th.site.read(record, path, wantContent);
      if (found.kind === 'directory') return redirect(reply, `${match[2].slice(match[2].lastIndexOf('/') + 1)}/${query}`);
      if (found.kind === 'file') return serve(reply, path, found.oid, found.body);
      return notFound(reply, record, th.site);
    }
    path = path === '' ? 'index.html' : `${path}/index.html`;
    const index = await th.site.read(record, path, wantContent);
    if (index.kind === 'file') return serve(reply, path, index.oid, index.body);
    return notFound(reply, record, th.site);
  };
  app.get('/p/:handle', handler);
  app.get('/p/:handle/*', handler);
}

function serve(reply: FastifyReply, path: string, oid: string, body: Buffer | undefined) {
  reply.header('ETag', `"${oid}"`).header('Cache-Control', 'no-cache').header('X-Content-Type-Options', 'nosniff');
  if (body === undefined) return reply.code(304).send();
  return reply.code(200).type(contentTypeOf(path)).send(body);
}

async function notFound(reply: FastifyReply, record: ProjectRecord, site: PublicSite) {
  const page = await site.read(record, NOT_FOUND_PAGE);
  if (page.kind === 'file' && page.body) return reply.code(404).type(contentTypeOf(NOT_FOUND_PAGE)).header('Cache-Control', 'no-cache').send(page.body);
  return plain(reply, 404, 'Not found');
}

function redirect(reply: FastifyReply, location: string) {
  return reply.code(301).header('Location', location).header('Cache-Control', 'no-cache').type(`text/plain${TEXT}`).send(`Moved to ${location}\n`);
}

function plain(reply: FastifyReply, status: number, text: string) {
  return reply.code(status).type(`text/plain${TEXT}`).header('Cache-Control', 'no-cache').send(`${text}\n`);
}
