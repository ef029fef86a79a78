/**
 * A large push's objects stored while its pack is still parsed and checked, from the check's
 * streamed runs (src/service/packChecker.ts begin()'s `onResolved`), under a hold of the project's
 * forms (AsyncStore.beginFormHold): nobody reads them until the check has passed and the hold is
 * kept, and a refused pack's are let go whole (their shelves removed), so a refused push still
 * leaves nothing. Without it, a push stored its 40,000 forms only after the check, some 0.7 s of
 * the 2.6 s a 3,000-commit history took to push.
 *
 * Commits are held too, each once its parents are (ParentsFirstQueue): the store keeps them and
 * their index entries back and puts them, parents first, after the trees and blobs when the hold
 * is kept. Their storing (0.4 s of a 3,000-commit history's push after its check) then falls within
 * the check. A commit whose parent the pack does not carry (a push onto stored history) never
 * comes out of the queue, and is stored after the check, as one not held (receivePack).
 */
import { OidTable } from '../../git/oidTable.js';
import type { PackObject } from '../../git/pack.js';
import type { AsyncStore, FormHold } from '../../store/asyncTypes.js';
import type { ResolvedRun } from './importHistory.js';
import { COMMITS_ALONE_PER_WRITE, HELD_FORMS_PER_WRITE, receivedForm, storeReceivedFormsAlone } from './packedForms.js';
import { ParentsFirstQueue } from './parentsFirstQueue.js';

/** What a kept hold stored: the ids, and the commits whose pack entry waits to be kept as a form (keepPackedForm). */
export interface HeldPushStored {
  kept: OidTable;
  late: PackObject[];
}

export class HeldPushForms {
  private readonly kept = new OidTable();
  private readonly late: PackObject[] = [];
  private readonly commitOrder = new ParentsFirstQueue();
  private chain: Promise<void> = Promise.resolve();
  private failed = false;
  private ended = false;

  private constructor(
    private readonly store: AsyncStore,
    private readonly project: number,
    private readonly hold: FormHold,
  ) {}

  /** A hold for a push into `project`, when its store offers holds (null otherwise). */
  static begin(store: AsyncStore, project: number): HeldPushForms | null {
    if (!store.beginFormHold || !store.endFormHold || !store.putFormsAlone) return null;
    return new HeldPushForms(store, project, store.beginFormHold(project));
  }

  /**
   * Stores a run's trees and blobs after those given before, then its commits (and those waiting)
   * whose parents are held (told from the checker's message handler: it never throws).
   */
  readonly add = (run: ResolvedRun): void => {
    if (run.forms.length === 0 && run.commits.length === 0) return;
    this.chain = this.chain.then(async () => {
      if (this.failed || this.ended) return;
      try {
        const commits = await this.commitOrder.release(run.commits);
        const answers = await storeReceivedFormsAlone(this.store, this.project, run.forms, HELD_FORMS_PER_WRITE, this.hold);
        answers.forEach((kept, index) => {
          if (kept) this.kept.add(run.forms[index].oid);
        });
        if (commits.length === 0) return;
        // Each held whole and indexed, with its entry as its form when its base has one.
        const formsKept = await storeReceivedFormsAlone(this.store, this.project, commits.map(receivedForm), COMMITS_ALONE_PER_WRITE, this.hold);
        commits.forEach((commit, index) => {
          this.kept.add(commit.oid);
          if (!formsKept[index]) this.late.push(commit);
        });
      } catch {
        // The push stores its objects after the check instead, as one not streamed does.
        this.failed = true;
      }
    });
  };

  /**
   * Ends the hold once the runs given are stored: with `keep` (the check passed), the forms and
   * commits are stored and what was kept returned; otherwise they are let go, and null is returned.
   * Null too when some held object is missing after all (a delta whose base lost to another write's
   * form, AsyncStore.endFormHold): the push then stores the pack's objects as one not held. Once only.
   */
  async end(keep: boolean): Promise<HeldPushStored | null> {
    if (this.ended) return null;
    await this.chain;
    this.ended = true;
    const keeping = keep && !this.failed;
    const whole = await this.store.endFormHold!(this.hold, keeping);
    return keeping && whole ? { kept: this.kept, late: this.late } : null;
  }
}
