/**
 * A client of GET /api/v1/events/stream for tests: parses server-sent events as they arrive (id,
 * event, data; comment lines apart) and waits for a number of them.
 */
import http from 'node:http';

export interface SseEvent {
  id: string;
  event: string;
  data: any;
}

export interface SseClient {
  status: number;
  events: SseEvent[];
  comments: string[];
  /** Resolves once `count` events in all have arrived; rejects if the stream ends first or after `timeoutMs`. */
  waitForEvents(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves once `count` comment lines have arrived. */
  waitForComments(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openEventStream(base: string, key: string, options: { query?: string; lastEventId?: string } = {}): Promise<SseClient> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const url = `${base}/api/v1/events/stream${options.query ? `?${options.query}` : ''}`;
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent: false }, (response) => {
      const client: SseClient = {
        status: response.statusCode ?? 0,
        events: [],
        comments: [],
        waitForEvents: (count, timeoutMs = 10_000) => waitUntil(() => client.events.length >= count, timeoutMs, () => `${client.events.length} of ${count} events`).then(() => client.events.slice(0, count)),
        waitForComments: (count, timeoutMs = 10_000) => waitUntil(() => client.comments.length >= count, timeoutMs, () => `${client.comments.length} of ${count} comments`),
        ended: new Promise((done) => response.on('close', () => done())),
        close: () => request.destroy(),
      };
      let ended = false;
      response.on('close', () => (ended = true));
      const waitUntil = (ready: () => boolean, timeoutMs: number, what: () => string) =>
        new Promise<void>((done, fail) => {
          const started = Date.now();
          const poll = () => {
            if (ready()) return done();
            if (ended) return fail(new Error(`the stream ended with ${what()}`));
            if (Date.now() - started > timeoutMs) return fail(new Error(`timed out with ${what()}`));
            setTimeout(poll, 5);
          };
          poll();
        });
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) client.comments.push(line.slice(1).trim());
            else {
              const colon = line.indexOf(':');
              fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
            }
          }
          if (fields.data !== undefined) client.events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data) });
        }
      });
      response.on('error', () => {});
      if (response.statusCode !== 200) {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => {
          try {
            (client as { body?: unknown }).body = JSON.parse(text);
          } catch {
            // not JSON
          }
        });
      }
      resolve(client);
    });
    request.on('error', reject);
  });
}
