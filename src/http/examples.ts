/**
 * One example request body and answer per route, for the OpenAPI document and the /docs page. They
 * live here, not beside each route, so the route files stay about validation and wiring; a test
 * keeps them complete (every route has one) and honest (every example body passes the route's schema).
 */
export interface RouteExample {
  body?: unknown;
  /** The JSON answer; absent for a route whose answer is not JSON (see `produces`). */
  response?: unknown;
  /** Content types of an answer that is not JSON (an archive), described instead of shown. */
  produces?: string[];
}

const PROJECT_ID = 'prj_8fKq2LmZ0aT3xYv1';
const OID = '3b18e512dba79e4c8300dd08aeb37f8e728b8dad';
const PARENT = '9a2c1f5e7b4d3c2a1f0e9d8c7b6a5f4e3d2c1b0a';
const TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const AT = '2026-11-22T12:00:00.000Z';

const project = {
  id: PROJECT_ID,
  handle: 'my-first-site',
  title: 'My first site',
  framework: 'static',
  published: false,
  created_at: AT,
  updated_at: AT,
};
const projectDetail = { ...project, version: 3, last_deployed_at: null, default_branch: 'main', has_commerce_credentials: false, git_remote: null };
const remote = {
  url: 'https://git.example.com/acme/site.git',
  linked_at: AT,
  sync: { status: 'synced', oid: OID, at: AT, error: null },
};
const fileEntry = { path: 'index.html', size: 48, locked: false };
const webhook = { id: 'whk_Qm3x9TzLp0aB4cD7', url: 'https://hooks.example.com/treehouse', events: ['commit.created', 'branch.created'], created_at: AT };
const delivery = {
  id: 'dlv_Vb8nK2sQw5eR1tY6',
  event_id: '42',
  event_type: 'commit.created',
  status: 'delivered',
  attempts: 2,
  last_status_code: 200,
  last_error: null,
  created_at: AT,
  next_attempt_at: null,
};

export const ROUTE_EXAMPLES: Record<string, RouteExample> = {
  'GET /api/v1/projects': { response: { projects: [project], next_cursor: null } },
  'POST /api/v1/projects': {
    body: { title: 'My first site', source: { kind: 'template', name: 'static-html' } },
    response: { project: { ...projectDetail, version: 1 } },
  },
  'GET /api/v1/projects/:id': { response: { project: projectDetail } },
  'PATCH /api/v1/projects/:id': { body: { title: 'Renamed site' }, response: { project: { ...projectDetail, title: 'Renamed site' } } },
  'DELETE /api/v1/projects/:id': { response: { deleted: PROJECT_ID } },
  'POST /api/v1/projects/:id/publish': { response: { published: true, handle: 'my-first-site', url: 'http://127.0.0.1:8080/p/my-first-site/' } },
  'POST /api/v1/projects/:id/unpublish': { response: { published: false } },
  'POST /api/v1/projects/:id/lint': {
    body: { branch: 'main' },
    response: { success: false, totalFiles: 12, errors: [{ path: 'src/app.ts', line: 3, column: 14, rule: 'format', message: 'Prettier would write `const x = 1;` here, not `const x=1;`.' }] },
  },
  'GET /api/v1/projects/:id/files': { response: { files: [fileEntry, { path: 'notes/todo.md', size: 10, locked: true }] } },
  'GET /api/v1/projects/:id/files/*': { response: { path: 'index.html', content: '<h1>Hello</h1>\n', locked: false, size: 15, oid: OID } },
  'DELETE /api/v1/projects/:id/files/*': { response: { path: 'notes/todo.md' } },
  'GET /api/v1/projects/:id/file': { response: { path: 'caf\ufffd.txt', path_base64: 'Y2Fm6S50eHQ=', content: 'bonjour\n', locked: false, size: 8, oid: OID } },
  'DELETE /api/v1/projects/:id/file': { response: { path: 'caf\ufffd.txt', path_base64: 'Y2Fm6S50eHQ=' } },
  'POST /api/v1/projects/:id/files/batch': {
    body: {
      files: [
        { path: 'about.html', content: '<h1>About</h1>\n' },
        { path: 'img/logo.png', content: 'iVBORw0KGgo=', encoding: 'base64', locked: true },
        { path: 'index.html', edits: [{ old: '<title>Home</title>', new: '<title>My first site</title>' }] },
      ],
      deletes: ['old.html'],
      branch: 'main',
    },
    response: { written: 3 },
  },
  'POST /api/v1/projects/:id/files/move': { body: { from: 'notes', to: 'docs/notes' }, response: { from: 'notes', to: 'docs/notes' } },
  'GET /api/v1/projects/:id/git/log': {
    response: {
      commits: [{ oid: OID, message: 'Add about page', author_id: 'key_Yw3vQ9sT0pLm', committed_at: AT, parent_oids: [PARENT] }],
      next_cursor: 'eyJoZWFkIjoiM2IxOGU1MTIifQ',
    },
  },
  'POST /api/v1/projects/:id/git/commit': { body: { message: 'Add about page', expected_head: PARENT }, response: { commit: { oid: OID, branch: 'main' } } },
  'GET /api/v1/projects/:id/git/commits/:oid': {
    response: {
      commit: {
        oid: OID,
        message: 'Add about page',
        author_id: 'key_Yw3vQ9sT0pLm',
        committed_at: AT,
        parent_oids: [PARENT],
        tree_oid: TREE,
        files: [{ path: 'about.html', size: 15, content: '<h1>About</h1>\n' }],
      },
    },
  },
  'POST /api/v1/projects/:id/git/restore': { body: { oid: PARENT.slice(0, 7), branch: 'main' }, response: { commit: { oid: OID, branch: 'main' } } },
  'POST /api/v1/projects/:id/git/merge': {
    body: {
      source: 'feature/contact',
      target: 'main',
      expected_target_head: PARENT,
      resolutions: [
        { path: 'src/a.ts', content: 'export const a = 1;\nexport const b = 4;\n' },
        { path: 'old-contact.html', delete: true },
      ],
    },
    response: { merge: { oid: OID, fastForward: false } },
  },
  'GET /api/v1/projects/:id/git/branches': { response: { branches: [{ name: 'feature/contact', oid: PARENT }, { name: 'main', oid: OID }] } },
  'POST /api/v1/projects/:id/git/branches': { body: { name: 'feature/contact', from: 'main' }, response: { branch: { name: 'feature/contact', oid: OID } } },
  'DELETE /api/v1/projects/:id/git/branches/*': { response: { deleted: 'feature/contact' } },
  'GET /api/v1/projects/:id/git/remote': { response: { remote } },
  'PUT /api/v1/projects/:id/git/remote': {
    body: { url: 'https://git.example.com/acme/site.git', username: 'x-access-token', token: 'ghp_exampletoken' },
    response: { remote: { ...remote, sync: { status: 'pending', oid: null, at: AT, error: null } } },
  },
  'DELETE /api/v1/projects/:id/git/remote': { response: { remote } },
  'POST /api/v1/projects/:id/git/remote/sync': { response: { remote: { ...remote, sync: { status: 'pending', oid: OID, at: AT, error: null } } } },
  'GET /api/v1/projects/:id/git/compare': {
    response: {
      base: OID,
      head: PARENT,
      merge_base: TREE.replace('4b8', '9cb'),
      files: [
        {
          path: 'src/app.ts',
          status: 'modified',
          binary: false,
          additions: 1,
          deletions: 1,
          old_missing_newline: false,
          new_missing_newline: false,
          old_oid: 'b10dedc93867d14e15868ad73c54440c258129c2',
          old_mode: '100644',
          new_oid: '3b53fd21984135619d3f74ce88e909400bd6702c',
          new_mode: '100644',
          hunks: [{ old_start: 1, old_lines: 2, new_start: 1, new_lines: 2, header: '@@ -1,2 +1,2 @@', lines: [' export const a = 1;', '-export const b = 4;', '+export const b = 3;'] }],
        },
      ],
      truncated: false,
    },
  },
  'GET /api/v1/projects/:id/git/blame/*': {
    response: {
      path: 'src/app.ts',
      ref: 'main',
      lines: [
        { line: 1, oid: PARENT, original_line: 1, original_path: 'src/app.ts' },
        { line: 2, oid: OID, original_line: 2, original_path: 'src/app.ts' },
      ],
      commits: {
        [PARENT]: { message: 'Initial commit', author: { name: 'ci', email: 'key_Yw3vQ9sT0pLm@users.treehouse.invalid' }, committed_at: AT },
        [OID]: { message: 'Change b', author: { name: 'ci', email: 'key_Yw3vQ9sT0pLm@users.treehouse.invalid' }, committed_at: AT },
      },
    },
  },
  'GET /api/v1/projects/:id/git/archive': { produces: ['application/zip', 'application/gzip'] },
  'POST /api/v1/projects/:id/git/merge/preview': {
    body: { source: 'feature/contact', target: 'main' },
    response: {
      clean: false,
      merge_base: PARENT,
      target_head: OID,
      source_head: TREE.replace('4b8', '027'),
      files: [
        {
          path: 'src/app.ts',
          status: 'conflicted',
          conflict: {
            kind: 'content',
            merged: 'export const a = 1;\n<<<<<<< main\nexport const b = 4;\n=======\nexport const b = 3;\n>>>>>>> feature/contact\n',
            base: 'export const a = 1;\nexport const b = 2;\n',
            ours: 'export const a = 1;\nexport const b = 4;\n',
            theirs: 'export const a = 1;\nexport const b = 3;\n',
          },
        },
      ],
    },
  },
  'GET /api/v1/projects/:id/search': {
    response: {
      matches: [
        { path: 'src/app.ts', line: 1, column: 1, text: 'export const a = 1;' },
        { path: 'src/app.ts', line: 2, column: 1, text: 'export const b = 4;' },
      ],
      truncated: false,
    },
  },
  'GET /api/v1/templates': { response: { templates: [{ name: 'static-html', description: 'A static HTML site with a stylesheet and a script.', framework: 'static' }] } },
  'GET /api/v1/events': {
    response: {
      events: [
        { id: '41', type: 'files.changed', project_id: PROJECT_ID, at: AT, data: { branch: 'main', paths: ['index.html'], version: 7 } },
        { id: '42', type: 'commit.created', project_id: PROJECT_ID, at: AT, data: { branch: 'main', oid: OID, parent_oids: [PARENT], source: 'api' } },
      ],
      next_after: '42',
    },
  },
  'GET /api/v1/events/stream': { produces: ['text/event-stream'] },
  'POST /api/v1/webhooks': {
    body: { url: 'https://hooks.example.com/treehouse', events: ['commit.created', 'branch.created'] },
    response: { webhook: { ...webhook, secret: 'whsec_3q2+7w1bXk9cZ0yJmV4sT8nR6pL5oA2dF1gH0jK9lE' } },
  },
  'GET /api/v1/webhooks': { response: { webhooks: [webhook] } },
  'DELETE /api/v1/webhooks/:id': { response: { deleted: webhook.id } },
  'GET /api/v1/webhooks/:id/deliveries': { response: { deliveries: [delivery], next_cursor: null } },
  'POST /api/v1/webhooks/:id/deliveries/:delivery_id/redeliver': { response: { delivery: { ...delivery, status: 'pending', next_attempt_at: AT } } },
  'GET /api/v1/openapi.json': { response: { openapi: '3.1.0', info: { title: 'Treehouse', version: '1' }, paths: {} } },
};

export function exampleFor(method: string, url: string): RouteExample | undefined {
  return ROUTE_EXAMPLES[`${method} ${url}`];
}
