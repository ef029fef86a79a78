/** Webhooks of the caller's team (../shared/API.md "Events and webhooks (v1.1)"). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CHANGE_TYPES, type ChangeType } from '../../service/events.js';
import type { Treehouse } from '../../service/treehouse.js';
import { WEBHOOK_URL_LENGTH_MAX } from '../../service/webhooks.js';
import { defineRoute, defineWriteRoute } from '../route.js';
import { cursorField, limitField } from '../schemas.js';

const webhookBody = z.strictObject({
  url: z.string().min(1).max(WEBHOOK_URL_LENGTH_MAX),
  events: z
    .array(z.enum(CHANGE_TYPES as [ChangeType, ...ChangeType[]]))
    .min(1)
    .max(CHANGE_TYPES.length),
  secret: z.string().min(1).max(256).optional(),
});
const webhookParams = z.object({ id: z.string().min(1).max(100) });
const deliveryParams = z.object({ id: z.string().min(1).max(100), delivery_id: z.string().min(1).max(100) });
const webhookView = z.object({ id: z.string(), url: z.string(), events: z.array(z.string()), created_at: z.string(), secret: z.string().optional() });
const deliveryView = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  next_attempt_at: z.string().nullable(),
});

export function webhookRoutes(app: FastifyInstance, th: Treehouse): void {
  defineWriteRoute(
    app,
    { method: 'POST', url: '/api/v1/webhooks', summary: 'Subscribe a URL to event types (the secret is shown once)', body: webhookBody, status: 201, response: z.object({ webhook: webhookView }) },
    { run: ({ body, principal }, join) => th.webhooks.create(principal, body, join), answer: (webhook) => ({ body: { webhook } }) },
  );

  defineRoute(app, { method: 'GET', url: '/api/v1/webhooks', summary: "The team's webhooks", response: z.object({ webhooks: z.array(webhookView) }) }, async ({ principal }) => ({
    webhooks: await th.webhooks.list(principal),
  }));

  defineWriteRoute(app, { method: 'DELETE', url: '/api/v1/webhooks/:id', summary: 'Delete a webhook; its pending deliveries are cancelled', params: webhookParams }, {
    run: ({ params, principal }, join) => th.webhooks.delete(principal, params.id, join),
    answer: (_deleted, { params }) => ({ body: { deleted: params.id } }),
  });

  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/webhooks/:id/deliveries',
      summary: "A webhook's deliveries, newest first",
      params: webhookParams,
      query: z.object({ limit: limitField, cursor: cursorField }),
      response: z.object({ deliveries: z.array(deliveryView), next_cursor: z.string().nullable() }),
    },
    async ({ params, query, principal }) => th.webhooks.deliveries(principal, params.id, query),
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
      summary: 'Send a delivery again now, under the same id',
      params: deliveryParams,
      status: 202,
      response: z.object({ delivery: deliveryView }),
    },
    {
      run: ({ params, principal }, join) => th.webhooks.redeliver(principal, params.id, params.delivery_id, join),
      answer: (delivery) => ({ body: { delivery } }),
    },
  );
}
