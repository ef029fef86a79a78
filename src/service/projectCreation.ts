/**
 * Creating a project (../shared/API.md "Projects", POST /projects): its seed (files, zip, template,
 * or the history of a git repository), an optional linked repository, and the initial commit, in
 * the order that keeps a failure from leaving anything behind.
 *
 * - A linked repository is checked first and linked in the creation's own transaction.
 * - A git seed's objects go in a write at a time under a number reserved for the project (its trees
 *   and blobs while its pack is still parsed, the rest once the pack is checked), and the project
 *   appears only in the transaction that points main at them, once the whole pack passed its check
 *   (a failure drops what was stored).
 */
import { EarlyHistory, indexHistoryCommits, startMainAt, storeHistoryObjects } from '../repo/wire/importHistory.js';
import type { SeedFile } from '../repo/initProject.js';
import type { AsyncStoreWriteTx } from '../store/asyncTypes.js';
import type { ContentEncoding } from '../repo/fileContent.js';
import type { Principal } from './accounts.js';
import type { Config } from './config.js';
import type { Announce, ChangeJoin } from './eventLog.js';
import type { Framework } from './framework.js';
import { detectionFiles, fetchGitSeed, type FetchedSeed, type GitSeedSource } from './gitSeed.js';
import type { PackChecker } from './packChecker.js';
import type { CommerceCredentials, ProjectRecord, Projects } from './projects.js';
import type { LinkInput, RemoteSync } from './remoteSync.js';
import { filesSeed, templateSeed, zipSeed } from './seed.js';
import { peopleFor } from './workspace.js';
import { InFlight } from './inFlight.js';

export type ProjectSource =
  | { kind: 'files'; files: Array<{ path: string; content: string; encoding?: ContentEncoding }> }
  | { kind: 'zip'; data: string }
  | ({ kind: 'git' } & GitSeedSource)
  | { kind: 'template'; name: string };

export interface NewProject {
  title: string;
  handle?: string;
  framework?: Framework | null;
  source?: ProjectSource;
  commerce?: CommerceCredentials;
  git_remote?: LinkInput;
}

export class ProjectCreation {
  constructor(
    private readonly projects: Projects,
    private readonly remoteSync: RemoteSync,
    private readonly packChecker: PackChecker,
    private readonly config: Config,
  ) {}

  /** `join` joins the transaction that creates the project (the last, for a git seed). */
  async create(principal: Principal, input: NewProject, join?: ChangeJoin): Promise<ProjectRecord> {
    const people = peopleFor(principal);
    const common = { title: input.title, handle: input.handle, framework: input.framework, commerce: input.commerce, people, join };
    const source = input.source;
    const remote = input.git_remote ? await this.remoteSync.prepareLink(input.git_remote, 'git_remote.url') : null;
    const link = remote ? (tx: AsyncStoreWriteTx, created: ProjectRecord, announce: Announce) => this.remoteSync.linkInTx(tx, created, remote, announce) : undefined;
    let record: ProjectRecord;
    if (source?.kind === 'git') {
      // Reserved before the fetch, so the pack's objects are stored while it is parsed.
      const seq = await this.projects.reserveSeq();
      const repo = { store: this.projects.store, project: seq };
      const early = new EarlyHistory(repo);
      let fetched: FetchedSeed | null = null;
      try {
        const history = (fetched = await fetchGitSeed(this.config, source, this.packChecker, early.wanted ? early.add : undefined));
        try {
          await storeHistoryObjects(repo, history, early);
        } catch (error) {
          // Stored before its pack's check ended: a refusal of the check is the answer when there is one.
          await history.checked;
          throw error;
        }
        // Nothing is seen of the history before its check passed.
        await history.checked;
        record = await this.projects.create(principal, {
          ...common,
          seq,
          files: detectionFiles(history),
          seedHistory: (tx, created) => startMainAt(tx.project(created.seq), history),
          alsoInTx: link,
        });
      } catch (error) {
        fetched?.forgetCommitObjects();
        await early.abandon();
        await this.projects.releaseSeq(seq);
        throw error;
      }
      // The commits' object lists are made now, not beside the writes, and stored after the answer.
      this.indexing.add(indexHistoryCommits(repo, fetched));
    } else {
      const files = await this.seedFiles(source);
      record = await this.projects.create(principal, { ...common, files, alsoInTx: link });
    }
    if (remote) this.remoteSync.kick();
    return record;
  }

  /** Seeds whose commits' object lists are still being made or stored. */
  private readonly indexing = new InFlight();

  /** Settles once every created seed's object lists are stored or given up. */
  idle(): Promise<void> {
    return this.indexing.settled();
  }

  private async seedFiles(source: Exclude<ProjectSource, { kind: 'git' }> | undefined): Promise<SeedFile[]> {
    const limits = this.config.limits;
    if (source === undefined) return [];
    if (source.kind === 'files') return filesSeed(source.files, limits);
    if (source.kind === 'zip') return zipSeed(source.data, limits);
    return templateSeed(source.name);
  }
}
