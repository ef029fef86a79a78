/**
 * Everything a refused request must leave as it was, read over the API: the project's version, every
 * branch head, and each named branch's working tree (paths, contents, sizes, locks).
 */
import type { TestServer } from './server.js';

export interface ProjectState {
  version: number;
  branches: Array<{ name: string; oid: string }>;
  files: Record<string, unknown[]>;
}

/** `base` is `/api/v1/projects/<id>`. */
export async function projectState(server: TestServer, base: string, branches: readonly string[] = ['main']): Promise<ProjectState> {
  const project = await server.call('GET', base);
  const refs = await server.call('GET', `${base}/git/branches`);
  if (project.status !== 200 || refs.status !== 200) throw new Error(`cannot read ${base}: ${JSON.stringify([project.body, refs.body])}`);
  const files: Record<string, unknown[]> = {};
  for (const branch of branches) {
    const listed = await server.call('GET', `${base}/files?content=true&branch=${encodeURIComponent(branch)}`);
    if (listed.status !== 200) throw new Error(`cannot list ${branch}: ${JSON.stringify(listed.body)}`);
    files[branch] = listed.body.files;
  }
  return { version: project.body.project.version, branches: refs.body.branches, files };
}
