/** The change feed and stream of the caller's team (../shared/API.md "Events and webhooks (v1.1)"). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { TreehouseError } from '../../errors.js';
import { EVENT_ID_PATTERN, type StoredEvent } from '../../service/eventLog.js';
import { CHANGE_TYPES, type ChangeType } from '../../service/events.js';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute } from '../route.js';

const eventId = z.string().regex(EVENT_ID_PATTERN, 'an event id is 1 to 16 decimal digits');
/** `types=a,b`: known types only, each at most once. */
const typesField = z
  .string()
  .max(1000)
  .transform((value, context) => {
    const names = value.split(',').filter((name) => name !== '');
    const unknown = names.filter((name) => !(CHANGE_TYPES as readonly string[]).includes(name));
    if (unknown.length > 0) context.addIssue({ code: 'custom', message: `unknown event types: ${unknown.slice(0, 10).join(', ')}` });
    if (names.length === 0) context.addIssue({ code: 'custom', message: 'name at least one event type' });
    return new Set(names as ChangeType[]);
  })
  .optional();
const filters = { project: z.string().min(1).max(100).optional(), types: typesField };

function filterOf(query: { project?: string; types?: Set<ChangeType> }): ((event: StoredEvent) => boolean) | undefined {
  const { project, types } = query;
  if (project === undefined && types === undefined) return undefined;
  return (event) => (project === undefined || event.project_id === project) && (types === undefined || types.has(event.type));
}

const eventSchema = z.object({ id: z.string(), type: z.string(), project_id: z.string(), at: z.string(), data: z.record(z.string(), z.unknown()) });

export function eventRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/events',
      summary: "The team's events in id order, from the oldest kept or after `after`",
      query: z.object({ after: eventId.optional(), limit: z.coerce.number().int().min(1).max(1000).default(100), ...filters }),
      response: z.object({ events: z.array(eventSchema), next_after: z.string() }),
    },
    async ({ query, principal }) => th.eventLog.page(principal.teamId, { after: query.after, limit: query.limit, filter: filterOf(query) }),
  );

  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/events/stream',
      summary: 'Server-sent events: resumes after Last-Event-ID (or `after`), else new events only',
      query: z.object({ after: eventId.optional(), ...filters }),
    },
    async ({ query, principal, request, reply }) => {
      const header = request.headers['last-event-id'];
      let after: string | null = query.after ?? null;
      if (header !== undefined) {
        const parsed = eventId.safeParse(Array.isArray(header) ? header[0] : header);
        if (!parsed.success) {
          throw new TreehouseError('invalid_request', 'Last-Event-ID is not an event id.', { issues: [{ path: 'Last-Event-ID', message: 'an event id is 1 to 16 decimal digits' }] });
        }
        after = parsed.data;
      }
      const raw = reply.raw;
      let waiting: Array<() => void> = [];
      const release = () => {
        const waiters = waiting;
        waiting = [];
        for (const wake of waiters) wake();
      };
      let heartbeat: NodeJS.Timeout | null = null;
      let opened = false;
      const sink = {
        send(events: StoredEvent[]) {
          if (!opened || raw.destroyed) return;
          raw.write(events.map((event) => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
        },
        bufferedBytes: () => raw.writableLength,
        drained: () => (raw.writableLength === 0 || raw.destroyed ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
        close() {
          if (heartbeat) clearInterval(heartbeat);
          release();
          if (opened) raw.end();
        },
      };
      // Throws events_expired (410) before anything is sent.
      const stream = await th.eventStreams.open(principal.teamId, after, filterOf(query), sink);
      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
      });
      opened = true;
      raw.write(': stream open\n\n');
      raw.on('drain', release);
      raw.on('close', () => {
        stream.close();
        release();
      });
      stream.start();
      heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), th.config.events.streamHeartbeatMs);
      heartbeat.unref();
    },
  );
}
