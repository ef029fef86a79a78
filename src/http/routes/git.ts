import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Treehouse } from '../../service/treehouse.js';
import { pathView } from '../apiPath.js';
import { defineRoute, defineWriteRoute } from '../route.js';
import { branchField, cursorField, limitField, mergeResolution, personField, projectIdParams, queryBoolean, refField, repeatedQuery } from '../schemas.js';

export function gitRoutes(app: FastifyInstance, th: Treehouse): void {
  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/git/log',
      summary: 'Commit history of a branch, or of one path in it (git log -- <path>)',
      params: projectIdParams,
      query: z.object({ branch: branchField, limit: limitField, cursor: cursorField, path: z.string().min(1).max(4096).optional() }),
    },
    ({ params, query, principal }) => th.workspace.log(principal, params.id, query),
  );

  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/git/compare',
      summary: 'Files, hunks and counts between two refs, as git diff --histogram -M shows them',
      params: projectIdParams,
      query: z.object({
        base: refField,
        head: refField,
        paths: repeatedQuery.optional(),
        context: z.coerce.number().int().min(0).max(20).default(3),
        patch: queryBoolean.default(true),
      }),
    },
    ({ params, query, principal }) => th.workspace.compare(principal, params.id, query),
  );

  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/git/blame/*',
      summary: 'The commit that last changed each line of a file, as git blame finds it',
      params: projectIdParams.extend({ '*': z.string().min(1).max(4096) }),
      query: z.object({ ref: refField.default('main') }),
    },
    ({ params, query, principal }) => th.workspace.blame(principal, params.id, { path: params['*'], ref: query.ref }),
  );

  defineRoute(
    app,
    {
      method: 'GET',
      url: '/api/v1/projects/:id/git/archive',
      summary: "A ref's tree as a streamed zip or tar.gz, as git archive writes it",
      params: projectIdParams,
      query: z.object({ ref: refField.default('main'), format: z.enum(['zip', 'tar.gz']), prefix: z.string().min(1).max(4096).optional() }),
    },
    async ({ params, query, principal, reply }) => {
      const archive = await th.workspace.archive(principal, params.id, query);
      reply.header('content-type', archive.contentType).header('content-disposition', `attachment; filename="${archive.filename}"`);
      return reply.send(archive.stream);
    },
  );

  /** Commit and restore: 201 with the new commit, or 200 saying none was made. */
  const commitAnswer = (result: { created: boolean; oid: string; branch: string }) => ({
    status: result.created ? 201 : 200,
    body: { commit: result.created ? { oid: result.oid, branch: result.branch } : result },
  });

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/git/commit',
      summary: "Commit a branch's working tree",
      params: projectIdParams,
      body: z.strictObject({
        message: z.string().min(1).max(100_000).optional(),
        branch: branchField,
        expected_head: z.string().min(1).max(64).optional(),
        author: personField.optional(),
      }),
    },
    {
      run: ({ params, body, principal }, join) =>
        th.workspace.commit(principal, params.id, { branch: body.branch, message: body.message, expectedHead: body.expected_head, author: body.author }, join),
      answer: commitAnswer,
    },
  );

  defineRoute(
    app,
    { method: 'GET', url: '/api/v1/projects/:id/git/commits/:oid', summary: 'One commit with its files', params: projectIdParams.extend({ oid: z.string().min(1).max(64) }), query: z.object({ content: queryBoolean.default(true) }) },
    async ({ params, query, principal }) => {
      const { files, ...commit } = await th.workspace.showCommit(principal, params.id, { oid: params.oid, content: query.content });
      return { commit: { ...commit, files: files.map(({ path, ...file }) => ({ ...pathView(path), ...file })) } };
    },
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/git/restore',
      summary: 'Restore a branch to an earlier commit, as a new commit',
      params: projectIdParams,
      body: z.strictObject({ oid: z.string().min(1).max(64), branch: branchField, force: z.boolean().optional() }),
    },
    {
      run: ({ params, body, principal }, join) => th.workspace.restore(principal, params.id, body, join),
      answer: commitAnswer,
    },
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/git/merge',
      summary: 'Merge one branch into another',
      params: projectIdParams,
      body: z.strictObject({
        source: z.string().min(1).max(255),
        target: branchField,
        message: z.string().min(1).max(100_000).optional(),
        resolutions: z
          .array(mergeResolution)
          .optional()
          .describe('One per conflicted path (as merge_conflict or merge preview name them): the merge then becomes a merge commit of the resolved tree. README "Merge resolutions".'),
        expected_target_head: z.string().min(1).max(64).optional().describe("The target's head the caller merged against (full id or unique prefix); another is 409 ref_changed."),
        expected_source_head: z.string().min(1).max(64).optional().describe("The source's head the caller merged against (full id or unique prefix); another is 409 ref_changed."),
      }),
    },
    {
      run: ({ params, body, principal }, join) => {
        const { expected_target_head, expected_source_head, ...request } = body;
        return th.workspace.merge(principal, params.id, { ...request, expectedTargetHead: expected_target_head, expectedSourceHead: expected_source_head }, join);
      },
      answer: ({ created, ...merge }) => ({ status: created ? 201 : 200, body: { merge } }),
    },
  );

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/git/merge/preview',
      summary: 'What POST git/merge would change, conflicts included; changes nothing',
      params: projectIdParams,
      body: z.strictObject({ source: z.string().min(1).max(255), target: branchField }),
    },
    {
      readOnly: true,
      run: ({ params, body, principal }) => th.workspace.previewMerge(principal, params.id, body),
      answer: (preview) => ({ body: preview }),
    },
  );

  defineRoute(app, { method: 'GET', url: '/api/v1/projects/:id/git/branches', summary: 'List branches', params: projectIdParams }, async ({ params, principal }) => ({
    branches: await th.workspace.listBranches(principal, params.id),
  }));

  defineWriteRoute(
    app,
    {
      method: 'POST',
      url: '/api/v1/projects/:id/git/branches',
      summary: 'Create a branch',
      params: projectIdParams,
      body: z.strictObject({ name: z.string().min(1).max(255), from: z.string().min(1).max(255).optional() }),
      status: 201,
    },
    {
      run: ({ params, body, principal }, join) => th.workspace.createBranch(principal, params.id, body, join),
      answer: (branch) => ({ body: { branch } }),
    },
  );

  defineWriteRoute(
    app,
    { method: 'DELETE', url: '/api/v1/projects/:id/git/branches/*', summary: 'Delete a branch', params: projectIdParams.extend({ '*': z.string().min(1) }) },
    {
      run: ({ params, principal }, join) => th.workspace.deleteBranch(principal, params.id, { name: params['*'] }, join),
      answer: ({ deleted }) => ({ body: { deleted } }),
    },
  );
}
