/** The linked repository of a project (../shared/API.md, "Git": remote endpoints). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { defineRoute, defineWriteRoute } from '../route.js';
import { projectIdParams } from '../schemas.js';

/** `{url, username?, token?}`, shared with `git_remote` on project creation. */
export const remoteLinkBody = z.strictObject({
  url: z.string().min(1).max(2000),
  username: z.string().min(1).max(200).optional(),
  token: z.string().min(1).max(1000).optional(),
});

export function remoteRoutes(app: FastifyInstance, th: Treehouse): void {
  const url = '/api/v1/projects/:id/git/remote';

  defineRoute(app, { method: 'GET', url, summary: 'The linked repository and its sync status', params: projectIdParams }, async ({ params, principal }) => ({
    remote: await th.remoteSync.get(principal, params.id),
  }));

  const remoteAnswer = (remote: unknown) => ({ body: { remote } });

  defineWriteRoute(
    app,
    { method: 'PUT', url, summary: 'Link (or re-link) a repository; every branch is pushed to it', params: projectIdParams, body: remoteLinkBody },
    { run: ({ params, body, principal }, join) => th.remoteSync.link(principal, params.id, body, join), answer: remoteAnswer },
  );

  defineWriteRoute(
    app,
    { method: 'DELETE', url, summary: 'Unlink the repository (the remote is left as it is)', params: projectIdParams },
    { run: ({ params, principal }, join) => th.remoteSync.unlink(principal, params.id, join), answer: remoteAnswer },
  );

  defineWriteRoute(
    app,
    { method: 'POST', url: `${url}/sync`, summary: 'Queue a push of every branch to the linked repository', params: projectIdParams, status: 202 },
    { run: ({ params, principal }, join) => th.remoteSync.requestSync(principal, params.id, join), answer: remoteAnswer },
  );
}
