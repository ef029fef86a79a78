/**
 * File and git operations on a project, on behalf of a caller: resolves the project (404 across
 * teams), names the commit's author after the caller's key, runs what follows a change of main
 * (framework detection), and runs each change through the outbox (src/service/eventLog.ts): the
 * verb's transaction-level core and its events in one transaction, published once it commits.
 */
import { openArchive, type ArchiveFormat } from '../repo/archive.js';
import { blame } from '../repo/blame.js';
import { identFieldSanitised } from '../git/commit.js';
import { oidFromHex } from '../git/oid.js';
import { commitInTx } from '../repo/commit.js';
import { compare, type CompareInput } from '../repo/compare.js';
import { createBranchInTx } from '../repo/createBranch.js';
import { deleteBranchInTx } from '../repo/deleteBranch.js';
import { deleteFileInTx } from '../repo/deleteFile.js';
import { headSnapshot } from '../repo/headSnapshot.js';
import { listBranches } from '../repo/listBranches.js';
import { listFiles } from '../repo/listFiles.js';
import { log, logByPath } from '../repo/log.js';
import { mergeBranchesInTx, type MergeRequest } from '../repo/merge/mergeBranches.js';
import { prepareResolutions } from '../repo/merge/resolveConflicts.js';
import { moveFileInTx } from '../repo/moveFile.js';
import { previewMerge } from '../repo/merge/previewMerge.js';
import { readFile } from '../repo/readFile.js';
import { MAIN_BRANCH, type WriteTx } from '../repo/repo.js';
import { restoreInTx } from '../repo/restore.js';
import { search, type SearchInput } from '../repo/search.js';
import { showCommit } from '../repo/showCommit.js';
import { AUTHOR_EMAIL_DOMAIN } from '../repo/commitView.js';
import type { Person } from '../repo/signature.js';
import { prepareBatch, writeFilesInTx, type WriteFilesInput } from '../repo/writeFiles.js';
import type { CommitAuthors } from '../repo/writeCommit.js';
import type { Principal } from './accounts.js';
import { commitCreated, type Announce, type ChangeJoin } from './eventLog.js';
import type { CommitSource } from './events.js';
import { detectFramework } from './framework.js';
import type { ProjectRecord, Projects } from './projects.js';

export function peopleFor(principal: Principal, author?: Person): CommitAuthors {
  // Key labels are checked when keys are made; one made before that check is cleaned as git cleans names.
  const person = author ?? { name: identFieldSanitised(principal.keyName) || 'api key', email: `${principal.keyId}@${AUTHOR_EMAIL_DOMAIN}` };
  return { author: person, committer: person };
}

/** `commit.created` for a head a change moved to a new commit, announced in the change's transaction. */
async function headMovedEvent(tx: WriteTx, announce: Announce, record: ProjectRecord, branch: string, oid: string, source: CommitSource): Promise<void> {
  announce('commit.created', record, await commitCreated(tx, branch, oid, source));
}

export class Workspace {
  constructor(private readonly projects: Projects) {}

  /**
   * After every change of a branch's head (commit, restore, merge, push): main's framework is
   * detected again. `head`: the commit the change moved it to, looked at first (no read of the ref,
   * a round trip on PostgreSQL); only when that would change the record is the branch's head as
   * stored now looked at, as without it.
   */
  async refreshFrameworkIfMain(record: ProjectRecord, branch: string, head?: string): Promise<void> {
    if (branch !== MAIN_BRANCH || record.framework_chosen) return;
    const repo = this.projects.repo(record);
    if (head !== undefined) {
      const made = await headSnapshot(repo, { branch, read: ['package.json'], commit: oidFromHex(head) });
      if (detectFramework(made.names, made.contents.get('package.json')?.toString('utf8')) === record.framework) return;
    }
    const snapshot = await headSnapshot(repo, { branch, read: ['package.json'] });
    await this.projects.refreshFramework(record, snapshot.names, snapshot.contents.get('package.json')?.toString('utf8'));
  }

  async listFiles(principal: Principal, id: string, input: { branch: string; prefix?: string; content?: boolean }) {
    return listFiles(await this.repo(principal, id), input);
  }

  async readFile(principal: Principal, id: string, input: { branch: string; path: string }) {
    return readFile(await this.repo(principal, id), input);
  }

  // Each write verb returns its change's own result (ChangeJoin: an Idempotency-Key's answer is made from it).

  async writeFiles(principal: Principal, id: string, input: WriteFilesInput, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    const batch = prepareBatch(this.projects.repo(record).limits, input);
    const paths = [...input.files.map((file) => file.path), ...(input.deletes ?? [])];
    return this.projects.outbox.runChange(
      record,
      (tx) => writeFilesInTx(tx, batch),
      ({ version }, _tx, announce) => announce('files.changed', record, { branch: input.branch, paths, version }),
      join,
    );
  }

  async moveFile(principal: Principal, id: string, input: { branch: string; from: string; to: string }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    return this.projects.outbox.runChange(
      record,
      (tx) => moveFileInTx(tx, input),
      (moved, _tx, announce) => announce('files.changed', record, { branch: input.branch, paths: [moved.from, moved.to], version: moved.version }),
      join,
    );
  }

  async deleteFile(principal: Principal, id: string, input: { branch: string; path: string }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    return this.projects.outbox.runChange(
      record,
      (tx) => deleteFileInTx(tx, input),
      (deleted, _tx, announce) => announce('files.changed', record, { branch: input.branch, paths: [deleted.path], version: deleted.version }),
      join,
    );
  }

  async log(principal: Principal, id: string, input: { branch: string; limit: number; cursor?: string; path?: string }) {
    const repo = await this.repo(principal, id);
    const { path, ...rest } = input;
    return path === undefined ? log(repo, rest) : logByPath(repo, { ...rest, path });
  }

  /** The archive as a stream, with the name and type to serve it under. */
  async archive(principal: Principal, id: string, input: { ref: string; format: 'zip' | 'tar.gz'; prefix?: string }) {
    const record = await this.projects.get(principal, id);
    const archive = await openArchive(this.projects.repo(record), { ...input, format: input.format as ArchiveFormat });
    return {
      stream: archive.stream,
      filename: `${record.handle}.${input.format}`,
      contentType: input.format === 'zip' ? 'application/zip' : 'application/gzip',
    };
  }

  async blame(principal: Principal, id: string, input: { path: string; ref: string }) {
    return blame(await this.repo(principal, id), input);
  }

  async compare(principal: Principal, id: string, input: CompareInput) {
    return compare(await this.repo(principal, id), input);
  }

  async showCommit(principal: Principal, id: string, input: { oid: string; content: boolean }) {
    return showCommit(await this.repo(principal, id), input);
  }

  async commit(principal: Principal, id: string, input: { branch: string; message?: string; expectedHead?: string; author?: Person }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    const result = await this.projects.outbox.runChange(
      record,
      (tx) => commitInTx(tx, { ...input, people: peopleFor(principal, input.author) }),
      (done, tx, announce) => (done.created ? headMovedEvent(tx, announce, record, input.branch, done.oid, 'api') : undefined),
      join,
    );
    if (result.created) await this.refreshFrameworkIfMain(record, input.branch, result.oid);
    return result;
  }

  async restore(principal: Principal, id: string, input: { branch: string; oid: string; force?: boolean }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    const result = await this.projects.outbox.runChange(
      record,
      (tx) => restoreInTx(tx, { ...input, people: peopleFor(principal) }),
      (done, tx, announce) => (done.created ? headMovedEvent(tx, announce, record, input.branch, done.oid, 'restore') : undefined),
      join,
    );
    if (result.created) await this.refreshFrameworkIfMain(record, input.branch, result.oid);
    return result;
  }

  async merge(principal: Principal, id: string, input: Omit<MergeRequest, 'people'>, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    // Resolutions are checked where no storage is needed before the transaction, as a batch's files are.
    const resolutions = input.resolutions && prepareResolutions(this.projects.repo(record).limits, input.resolutions);
    const result = await this.projects.outbox.runChange(
      record,
      (tx) => mergeBranchesInTx(tx, { ...input, resolutions, people: peopleFor(principal) }),
      (done, tx, announce) => (done.created || done.fastForward ? headMovedEvent(tx, announce, record, input.target, done.oid, 'merge') : undefined),
      join,
    );
    if (result.created || result.fastForward) await this.refreshFrameworkIfMain(record, input.target, result.oid);
    return result;
  }

  async previewMerge(principal: Principal, id: string, input: { source: string; target: string }) {
    return previewMerge(await this.repo(principal, id), input);
  }

  async search(principal: Principal, id: string, input: SearchInput) {
    return search(await this.repo(principal, id), input);
  }

  async listBranches(principal: Principal, id: string) {
    return listBranches(await this.repo(principal, id));
  }

  async createBranch(principal: Principal, id: string, input: { name: string; from?: string }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    return this.projects.outbox.runChange(
      record,
      (tx) => createBranchInTx(tx, input),
      (created, _tx, announce) => announce('branch.created', record, { branch: created.name, oid: created.oid }),
      join,
    );
  }

  async deleteBranch(principal: Principal, id: string, input: { name: string }, join?: ChangeJoin) {
    const record = await this.projects.get(principal, id);
    return this.projects.outbox.runChange(
      record,
      (tx) => deleteBranchInTx(tx, input),
      (done, _tx, announce) => announce('branch.deleted', record, { branch: done.deleted, oid: done.oid }),
      join,
    );
  }

  private async repo(principal: Principal, id: string) {
    return this.projects.repo(await this.projects.get(principal, id));
  }
}
