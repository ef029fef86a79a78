import type { AsyncStore } from '../../src/store/asyncTypes.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import { DEFAULT_REPO_LIMITS, type Repo } from '../../src/repo/repo.js';
import { initProject, type SeedFile } from '../../src/repo/initProject.js';
import type { CommitAuthors } from '../../src/repo/writeCommit.js';
import { scratchDir } from './git.js';

export const testPeople: CommitAuthors = {
  author: { name: 'Test Key', email: 'key_test@users.treehouse.invalid' },
  committer: { name: 'Test Key', email: 'key_test@users.treehouse.invalid' },
};

/** A real LMDB store in a scratch directory. */
export function openTestStore(): { store: LmdbStore; path: string; close: () => Promise<void> } {
  const dir = scratchDir('treehouse-store-');
  const store = new LmdbStore({ path: dir.path });
  return {
    store,
    path: dir.path,
    close: async () => {
      await store.close();
      dir.remove();
    },
  };
}

let nextProject = 1;

/** A project with its initial commit on main. */
export async function newTestRepo(store: LmdbStore, files: SeedFile[] = []): Promise<Repo> {
  return newTestRepoIn(store.async, files);
}

/** A project with its initial commit on main, in a store of any backend. */
export async function newTestRepoIn(store: AsyncStore, files: SeedFile[] = []): Promise<Repo> {
  const repo: Repo = { store, project: nextProject++, limits: { ...DEFAULT_REPO_LIMITS } };
  await initProject(repo, { files, people: testPeople });
  return repo;
}

export function text(path: string, content: string): SeedFile {
  return { path, bytes: Buffer.from(content, 'utf8') };
}
