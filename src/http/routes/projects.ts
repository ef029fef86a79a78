import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import type { ProjectRecord } from '../../service/projects.js';
import { filesSeed, templateSeed, zipSeed } from '../../service/seed.js';
import { detectionFiles, fetchGitSeed } from '../../service/gitSeed.js';
import { startMainAt, storeHistoryObjects } from '../../repo/importHistory.js';
import { seedMainBranch } from '../../repo/initProject.js';
import { peopleFor } from '../../service/workspace.js';
import { defineRoute } from '../route.js';
import { remoteLinkBody } from './remote.js';
import { cursorField, frameworkField, limitField, projectIdParams, seedFileEntry } from '../schemas.js';
import type { Framework } from '../../service/framework.js';
import type { StoreWriteTx } from '../../store/types.js';

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
  const detailView = (record: ProjectRecord) => ({
    ...listView(record),
    version: th.projects.version(record),
    last_deployed_at: null,
    default_branch: 'main',
    has_commerce_credentials: th.projects.hasCommerceCredentials(record),
    git_remote: th.remoteSync.view(record),
  });

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects', summary: 'List projects', query: z.object({ q: z.string().max(200).optional(), limit: limitField, cursor: cursorField }) },
    ({ query, principal }) => {
      const page = th.projects.list(principal, query);
      return { projects: page.projects.map(listView), next_cursor: page.next_cursor };
    },
  );

  defineRoute(app, { method: 'GET', url: '/api/v1/projects/:id', summary: 'Read a project', params: projectIdParams }, ({ params, principal }) => ({
    project: detailView(th.projects.get(principal, params.id)),
  }));

  defineRoute(
    app,
    { method: 'POST', url: '/api/v1/projects', summary: 'Create a project', body: createBody, status: 201 },
    async ({ body, principal }) => {
      const limits = th.config.limits;
      const people = peopleFor(principal);
      const common = { title: body.title, handle: body.handle, framework: body.framework as Framework | null | undefined, commerce: body.commerce, people };
      let record: ProjectRecord;
      const source = body.source;
      // A linked repository is checked first and linked in the creation's own transaction.
      const remote = body.git_remote ? await th.remoteSync.prepareLink(body.git_remote, 'git_remote.url') : null;
      if (source?.kind === 'git') {
        const history = await fetchGitSeed(th.config, source, th.packChecker);
        // The objects go in first, a write at a time, under a number reserved for the project;
        // the project appears only in the transaction that points main at them.
        const seq = await th.projects.reserveSeq();
        try {
          await storeHistoryObjects({ store: th.store, project: seq }, history);
          record = await th.projects.create(principal, {
            ...common,
            seq,
            files: detectionFiles(history),
            seedHistory: (tx, created) => {
              startMainAt(tx.project(created.seq), history);
              if (remote) th.remoteSync.linkInTx(tx, created, remote);
            },
          });
        } catch (error) {
          await th.projects.releaseSeq(seq);
          throw error;
        }
      } else {
        const files =
          source === undefined ? [] : source.kind === 'files' ? filesSeed(source.files, limits) : source.kind === 'zip' ? await zipSeed(source.data, limits) : templateSeed(source.name);
        const seedHistory = remote
          ? (tx: StoreWriteTx, created: ProjectRecord) => {
              seedMainBranch(tx.project(created.seq), { files, people });
              th.remoteSync.linkInTx(tx, created, remote);
            }
          : undefined;
        record = await th.projects.create(principal, { ...common, files, seedHistory });
      }
      if (remote) th.remoteSync.kick();
      return { project: detailView(record) };
    },
  );

  defineRoute(
    app,
    { method: 'PATCH', url: '/api/v1/projects/:id', summary: 'Change a project', params: projectIdParams, body: patchBody },
    async ({ params, body, principal }) => ({
      project: detailView(await th.projects.update(principal, params.id, { ...body, framework: body.framework as Framework | null | undefined })),
    }),
  );

  defineRoute(app, { method: 'DELETE', url: '/api/v1/projects/:id', summary: 'Delete a project', params: projectIdParams }, async ({ params, principal }) => {
    await th.projects.delete(principal, params.id);
    return { deleted: params.id };
  });

  defineRoute(app, { method: 'POST', url: '/api/v1/projects/:id/publish', summary: 'Publish a project', params: projectIdParams }, async ({ params, principal }) => {
    const record = await th.projects.setPublished(principal, params.id, true);
    return { published: true, handle: record.handle, url: `${th.config.publicBaseUrl}/p/${record.handle}/` };
  });

  defineRoute(app, { method: 'POST', url: '/api/v1/projects/:id/unpublish', summary: 'Unpublish a project', params: projectIdParams }, async ({ params, principal }) => {
    await th.projects.setPublished(principal, params.id, false);
    return { published: false };
  });

}
