/**
 * What the public site of a published project may read (../shared/API.md "Projects"): the files of
 * main's head commit, never the working tree, of a project found by its handle only while published.
 */
import { readCommitFile, type CommitPathLookup } from '../repo/readCommitFile.js';
import { MAIN_BRANCH } from '../repo/repo.js';
import { HANDLE_PATTERN, type ProjectRecord, type Projects } from './projects.js';

export class PublicSite {
  constructor(private readonly projects: Projects) {}

  /** The published project with this handle; undefined for an unknown, malformed or unpublished one. */
  async published(handle: string): Promise<ProjectRecord | undefined> {
    const record = HANDLE_PATTERN.test(handle) ? await this.projects.byHandle(handle) : undefined;
    return record?.published ? record : undefined;
  }

  /** A path of main's head commit; the body only when `wantContent(blob id)` says so (ETags). */
  read(record: ProjectRecord, path: string, wantContent?: (oid: string) => boolean): Promise<CommitPathLookup> {
    return readCommitFile(this.projects.repo(record), { branch: MAIN_BRANCH, path, wantContent });
  }
}
