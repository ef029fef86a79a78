/**
 * git's own `git http-backend` behind a small Node HTTP-to-CGI adapter on 127.0.0.1, serving every
 * bare repository under `root`: the upstream that seeding and linked-repository sync talk to.
 * Optional Basic auth: when `password` is set, requests without it get 401. `port` listens on a given
 * port (to bring a closed backend back at the same URL); `protocolV2: false` hides the client's
 * Git-Protocol header from git, so it answers protocol v0 as an old server would; `beforeGit` sees
 * each request first, and may answer it instead of git.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface GitHttpBackend {
  url: string;
  /** Requests served so far, as "METHOD path". */
  log: string[];
  close(): Promise<void>;
}

export interface GitHttpBackendOptions {
  password?: string;
  port?: number;
  protocolV2?: boolean;
  /** Awaited before git runs for a request (to watch or slow requests down); 'answered' when it answered the request itself. */
  beforeGit?: (request: IncomingMessage, response: ServerResponse) => Promise<void | 'answered'> | void | 'answered';
}

export async function startGitHttpBackend(root: string, options: GitHttpBackendOptions = {}): Promise<GitHttpBackend> {
  const log: string[] = [];
  const server = createServer(async (request, response) => {
    log.push(`${request.method} ${request.url}`);
    if ((await options.beforeGit?.(request, response)) === 'answered') return;
    if (options.password !== undefined) {
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8').split(':').slice(1).join(':') : null;
      if (given !== options.password) {
        response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="upstream"' }).end();
        return;
      }
    }
    runCgi(root, request, response, options.protocolV2 ?? true);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function runCgi(root: string, request: IncomingMessage, response: ServerResponse, protocolV2: boolean): void {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      REMOTE_USER: 'upstream-user',
      REMOTE_ADDR: '127.0.0.1',
      GIT_PROTOCOL: protocolV2 ? String(request.headers['git-protocol'] ?? '') : '',
      HTTP_CONTENT_ENCODING: String(request.headers['content-encoding'] ?? ''),
      // Pushes over HTTP need receive-pack enabled for an authenticated user.
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.receivepack',
      GIT_CONFIG_VALUE_0: 'true',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  request.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
    if (end < 0) return;
    const separator = end === crlf ? 4 : 2;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    response.writeHead(status, headers);
    headersDone = true;
    response.write(head.subarray(end + separator));
  });
  child.on('close', () => response.end());
}
