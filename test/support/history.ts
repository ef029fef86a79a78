/**
 * Histories built with the git CLI and pushed to a Treehouse test server, so a test can ask the API
 * and git the same question about the same commits. A project is cloned (its initial commit becomes
 * the root of what is built on top), commits are written with one `git fast-import` (whole trees,
 * any parents, fixed times), and branches are pushed over smart HTTP.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedGitEnv } from '../../fixtures/gitEnv.js';
import { git, gitAsyncOk } from './git.js';
import type { TestServer } from './server.js';

export type FileMode = '100644' | '100755' | '120000' | '160000';

export interface HistoryFile {
  mode: FileMode;
  /** For a submodule (160000): the 40-hex commit id as text. */
  content: Buffer;
}

export interface HistoryCommit {
  files: ReadonlyMap<string, HistoryFile>;
  /** Indexes of earlier commits of the batch, or 40-hex ids of commits already in the repository. */
  parents: ReadonlyArray<number | string>;
  /** Author and committer time, seconds since the epoch. */
  time: number;
  message?: string;
}

/** A project on the server, cloned into `dir`. */
export interface ClonedProject {
  id: string;
  base: string;
  dir: string;
  /** The project's initial commit. */
  root: string;
}

/** A project's git remote on `server`, its key as the password (a test server, or a server process and its key). */
export function remoteUrl(server: Pick<TestServer, 'url' | 'key'>, projectId: string): string {
  return `${server.url.replace('http://', `http://git:${server.key}@`)}/git/${projectId}.git`;
}

/** Creates a project (an empty initial commit unless files are given) and clones it. */
export async function createClonedProject(server: TestServer, dir: string, title = 'History'): Promise<ClonedProject> {
  const created = await server.call('POST', '/api/v1/projects', { title });
  if (created.status !== 201) throw new Error(`project creation failed: ${JSON.stringify(created.body)}`);
  const id = created.body.project.id as string;
  await gitAsyncOk(['clone', '-q', remoteUrl(server, id), dir]);
  const root = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
  return { id, base: `/api/v1/projects/${id}`, dir, root };
}

/** Writes commits with one `git fast-import` and returns their ids in input order. */
export function fastImport(repoPath: string, commits: readonly HistoryCommit[]): string[] {
  const chunks: Buffer[] = [];
  const text = (value: string) => chunks.push(Buffer.from(value, 'utf8'));
  const blobMarks = new Map<string, number>();
  let nextMark = 1;
  const blobMark = (content: Buffer): number => {
    const key = content.toString('latin1');
    const known = blobMarks.get(key);
    if (known !== undefined) return known;
    const mark = nextMark++;
    blobMarks.set(key, mark);
    text(`blob\nmark :${mark}\ndata ${content.length}\n`);
    chunks.push(content);
    text('\n');
    return mark;
  };
  const commitMarks: number[] = [];
  for (const commit of commits) {
    const fileLines: string[] = [];
    for (const [path, file] of commit.files) {
      const quoted = JSON.stringify(path);
      fileLines.push(file.mode === '160000' ? `M 160000 ${file.content.toString('latin1')} ${quoted}\n` : `M ${file.mode} :${blobMark(file.content)} ${quoted}\n`);
    }
    const mark = nextMark++;
    commitMarks.push(mark);
    const message = Buffer.from(commit.message ?? `commit ${commitMarks.length}\n`, 'utf8');
    text('reset refs/heads/fast-import\n');
    text(`commit refs/heads/fast-import\nmark :${mark}\n`);
    text(`author Author <author@example.com> ${commit.time} +0000\n`);
    text(`committer Committer <committer@example.com> ${commit.time} +0000\n`);
    text(`data ${message.length}\n`);
    chunks.push(message);
    text('\n');
    commit.parents.forEach((parent, index) => text(`${index === 0 ? 'from' : 'merge'} ${typeof parent === 'number' ? `:${commitMarks[parent]}` : parent}\n`));
    text('deleteall\n');
    fileLines.forEach((line) => text(line));
    text('\n');
  }
  const marksFile = join(repoPath, '.git', 'import-marks');
  execFileSync('git', ['fast-import', '--quiet', '--force', `--export-marks=${marksFile}`], {
    cwd: repoPath,
    input: Buffer.concat(chunks),
    maxBuffer: 1 << 30,
    env: isolatedGitEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const marks = new Map<number, string>();
  for (const line of readFileSync(marksFile, 'utf8').split('\n')) {
    if (!line) continue;
    const [mark, hex] = line.split(' ');
    marks.set(Number(mark.slice(1)), hex);
  }
  return commitMarks.map((mark) => marks.get(mark)!);
}

/** Points branches of the clone at commits and pushes them to the server. */
export async function pushBranches(dir: string, branches: Record<string, string>): Promise<void> {
  const refspecs = Object.entries(branches).map(([name, oid]) => `${oid}:refs/heads/${name}`);
  for (let i = 0; i < refspecs.length; i += 50) await gitAsyncOk(['push', '-q', 'origin', ...refspecs.slice(i, i + 50)], { cwd: dir });
}
