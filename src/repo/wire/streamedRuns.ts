/**
 * The runs of resolved objects the pack checker streams while it parses a pack
 * (src/service/packChecker.ts begin()'s `onResolved`), stored as they come: each run's trees and
 * blobs as their pack entries alone, then the commits whose parents are stored or on their way
 * (ParentsFirstQueue), whole and indexed, each with its entry as its form when its base has one.
 * A seed's (EarlyHistory, src/repo/wire/importHistory.ts) and a large push's, under a hold until
 * its check passes (HeldPushForms, src/repo/wire/heldPushForms.ts).
 */
import { OidTable } from '../../git/oidTable.js';
import type { PackObject } from '../../git/pack.js';
import type { AsyncStore, FormHold, ReceivedForm } from '../../store/asyncTypes.js';
import { COMMITS_ALONE_PER_WRITE, receivedForm, storeReceivedFormsAlone } from './packedForms.js';
import { ParentsFirstQueue } from './parentsFirstQueue.js';

/** A run of a pack's objects as its parse resolved them (bases first): trees and blobs as the store takes their entries, commits whole with theirs. */
export interface ResolvedRun {
  forms: ReceivedForm[];
  commits: PackObject[];
}

/** What the runs stored: the ids kept, and the commits whose entry's base had no form yet (keepPackedForm them at the end). */
export interface StoredRuns {
  kept: OidTable;
  late: PackObject[];
}

export class StreamedRuns implements StoredRuns {
  readonly kept = new OidTable();
  readonly late: PackObject[] = [];
  /** Commits stored or on their way, and those waiting for a parent. */
  private readonly commitOrder = new ParentsFirstQueue();

  /** `formsPerWrite`: trees and blobs per write (the store's default when absent); `hold`: a push's hold, which keeps them unread. */
  constructor(
    private readonly store: AsyncStore,
    private readonly project: number,
    private readonly options: { formsPerWrite?: number; hold?: FormHold } = {},
  ) {}

  /** Stores a run, after the runs given before have been stored (the caller chains them). */
  async add(run: ResolvedRun): Promise<void> {
    // Ordering a run's commits takes slices of the event loop: git writes a pack's commits first, so one run may hold 2,048.
    const commits = await this.commitOrder.release(run.commits);
    const { hold, formsPerWrite } = this.options;
    const answers = await storeReceivedFormsAlone(this.store, this.project, run.forms, formsPerWrite, hold);
    answers.forEach((kept, index) => {
      if (kept) this.kept.add(run.forms[index].oid);
    });
    if (commits.length === 0) return;
    const formsKept = await storeReceivedFormsAlone(this.store, this.project, commits.map(receivedForm), COMMITS_ALONE_PER_WRITE, hold);
    commits.forEach((commit, index) => {
      this.kept.add(commit.oid);
      if (!formsKept[index]) this.late.push(commit);
    });
  }
}
