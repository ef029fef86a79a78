/**
 * HTTP/1.1 spoken over a bare socket, for requests no HTTP client would send: malformed request
 * lines, encoded paths sent as written, slow or unfinished bodies, connections from other loopback
 * addresses (127.0.0.2 and up are loopback on Linux too).
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses one response from the bytes received so far; null while it is incomplete. */
export function parseResponse(bytes: Buffer, closed: boolean, bodyless = false): RawResponse | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [statusLine, ...lines] = bytes.toString('latin1', 0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = bytes.subarray(headEnd + 4);
  // The answer to HEAD has the headers of a GET and no body.
  const length = bodyless ? 0 : headers['content-length'] === undefined ? null : Number(headers['content-length']);
  if (length === null ? !closed : body.length < length) return null;
  return { status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length ?? body.length).toString('utf8') };
}

export function openSocket(url: string, localAddress?: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Sends `request` as given and resolves with the first response, or rejects after `timeoutMs`. */
export async function rawRequest(url: string, requestText: string | Buffer, options: { localAddress?: string; timeoutMs?: number } = {}): Promise<RawResponse> {
  const request = Buffer.from(requestText);
  const socket = await openSocket(url, options.localAddress);
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete response within ${options.timeoutMs ?? 5000} ms; got ${JSON.stringify(received.toString('latin1').slice(0, 200))}`));
    }, options.timeoutMs ?? 5000);
    const settle = (closed: boolean) => {
      const response = parseResponse(received, closed, request.subarray(0, 5).toString('latin1') === 'HEAD ');
      if (!response && !closed) return;
      clearTimeout(timer);
      socket.destroy();
      if (response) resolve(response);
      else reject(new Error(`connection closed without a response; got ${JSON.stringify(received.toString('latin1').slice(0, 200))}`));
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      settle(false);
    });
    socket.on('close', () => settle(true));
    socket.on('error', () => undefined);
    socket.write(request);
  });
}

/**
 * Sends each request on a connection of its own, all opened first and then written in one turn of
 * the event loop, so the server has every request before it has answered any; resolves with the
 * responses in order.
 */
export async function rawRequestsAtOnce(url: string, requests: ReadonlyArray<string | Buffer>, options: { timeoutMs?: number } = {}): Promise<RawResponse[]> {
  const sockets = await Promise.all(requests.map(() => openSocket(url)));
  const answers = sockets.map(
    (socket, index) =>
      new Promise<RawResponse>((resolve, reject) => {
        let received = Buffer.alloc(0);
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error(`request ${index}: no complete response within ${options.timeoutMs ?? 30_000} ms`));
        }, options.timeoutMs ?? 30_000);
        const settle = (closed: boolean) => {
          const response = parseResponse(received, closed);
          if (!response && !closed) return;
          clearTimeout(timer);
          socket.destroy();
          if (response) resolve(response);
          else reject(new Error(`request ${index}: connection closed without a response`));
        };
        socket.on('data', (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          settle(false);
        });
        socket.on('close', () => settle(true));
        socket.on('error', () => undefined);
      }),
  );
  requests.forEach((request, index) => sockets[index].write(Buffer.from(request)));
  return Promise.all(answers);
}

/** A raw `POST …/git/commit` with an Idempotency-Key, closing its connection: one of many sent at once (rawRequestsAtOnce). */
export function idempotentCommitRequest(url: string, key: string, project: string, idempotencyKey: string, message: string): string {
  const body = JSON.stringify({ message });
  return [
    `POST /api/v1/projects/${project}/git/commit HTTP/1.1`,
    `Host: ${new URL(url).host}`,
    `Authorization: Bearer ${key}`,
    `Idempotency-Key: ${idempotencyKey}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}
