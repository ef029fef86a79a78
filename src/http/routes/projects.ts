import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ProjectRecord } from '../../service/projects.js';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute, defineWriteRoute } from '../route.js';
import type { AnswerReads } from '../../service/idempotency.js';
import { remoteLinkBody } from './remote.js';
import { cursorField, frameworkField, limitField, projectIdParams, seedFileEntry } from '../schemas.js';
import type { Framework } from '../../service/framework.js';

const handleField = z.string().regex(/^[a-z0-9-]{3,63}$/, 'must be 3 to 63 of a-z, 0-9 and "-"');
const titleField = z.string().min(1).max(200);

const sourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('files'),
    files: z.array(seedFileEntry),
  }),
  z.strictObject({ kind: z.literal('zip'), data: z.string().min(1) }),
  z.strictObject({ kind: z.literal('git'), url: z.string().min(1).max(2000), ref: z.string().min(1).max(255).optional(), token: z.string().max(1000).optional() }),
  z.strictObject({ kind: z.literal('template'), name: z.string().min(1).max(100) }),
]);

const createBody = z.strictObject({
  title: titleField,
  handle: handleField.optional(),
  framework: frameworkField.optional(),
  source: sourceSchema.optional(),
  commerce: z
    .strictObject({ platform: z.literal('shopify'), store_domain: z.string().min(1).max(255), access_token: z.string().min(1).max(1000) })
    .optional(),
  git_remote: remoteLinkBody.optional(),
});

const patchBody = z.strictObject({ title: titleField.optional(), handle: handleField.optional(), framework: frameworkField.optional() });

export function listView(record: ProjectRecord) {
  const { id, handle, title, framework, published, created_at, updated_at } = record;
  return { id, handle, title, framework, published, created_at, updated_at };
}

export function projectRoutes(app: FastifyInstance, th: Treehouse): void {
  /** `reads`: inside the change that made `record` (an Idempotency-Key's answer), else outside any. */
  const detailView = async (record: ProjectRecord, reads?: AnswerReads) => {
    // Independent reads: a networked store answers them in one wait.
    const [version, gitRemote] = await Promise.all([th.projects.version(record, reads), th.remoteSync.view(record, reads)]);
    return {
      ...listView(record),
      version,
      last_deployed_at: null,
      default_branch: 'main',
      has_commerce_credentials: th.projects.hasCommerceCredentials(record),
      git_remote: gitRemote,
    };
  };

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects', summary: 'List projects', query: z.object({ q: z.string().max(200).optional(), limit: limitField, cursor: cursorField }) },
    async ({ query, principal }) => {
      const page = await th.projects.list(principal, query);
      return { projects: page.projects.map(listView), next_cursor: page.next_cursor };
    },
  );

  defineRoute(app, { method: 'GET', url: '/api/v1/projects/:id', summary: 'Read a project', params: projectIdParams }, async ({ params, principal }) => ({
    project: await detailView(await th.projects.get(principal, params.id)),
  }));

  defineWriteRoute(app, { method: 'POST', url: '/api/v1/projects', summary: 'Create a project', body: createBody, status: 201 }, {
    run: ({ body, principal }, join) => th.creation.create(principal, { ...body, framework: body.framework as Framework | null | undefined }, join),
    answer: async (record, _input, reads) => ({ body: { project: await detailView(record, reads) } }),
  });

  defineWriteRoute(app, { method: 'PATCH', url: '/api/v1/projects/:id', summary: 'Change a project', params: projectIdParams, body: patchBody }, {
    run: ({ params, body, principal }, join) => th.projects.update(principal, params.id, { ...body, framework: body.framework as Framework | null | undefined }, join),
    answer: async (record, _input, reads) => ({ body: { project: await detailView(record, reads) } }),
  });

  defineWriteRoute(app, { method: 'DELETE', url: '/api/v1/projects/:id', summary: 'Delete a project', params: projectIdParams }, {
    run: ({ params, principal }, join) => th.projects.delete(principal, params.id, join),
    answer: (_deleted, { params }) => ({ body: { deleted: params.id } }),
  });

  defineWriteRoute(app, { method: 'POST', url: '/api/v1/projects/:id/publish', summary: 'Publish a project', params: projectIdParams }, {
    run: ({ params, principal }, join) => th.projects.setPublished(principal, params.id, true, join),
    answer: (record) => ({ body: { published: true, handle: record.handle, url: `${th.config.publicBaseUrl}/p/${record.handle}/` } }),
  });

  defineWriteRoute(app, { method: 'POST', url: '/api/v1/projects/:id/unpublish', summary: 'Unpublish a project', params: projectIdParams }, {
    run: ({ params, principal }, join) => th.projects.setPublished(principal, params.id, false, join),
    answer: () => ({ body: { published: false } }),
  });

}
