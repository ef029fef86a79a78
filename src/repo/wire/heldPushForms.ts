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
import type { AsyncStore, FormHold } from '../../store/asyncTypes.js';
import { HELD_FORMS_PER_WRITE } from './packedForms.js';
import { StreamedRuns, type ResolvedRun, type StoredRuns } from './streamedRuns.js';

export class HeldPushForms {
  private readonly runs: StreamedRuns;
  private chain: Promise<void> = Promise.resolve();
  private failed = false;
  private ended = false;

  private constructor(
    private readonly store: AsyncStore,
    project: number,
    private readonly hold: FormHold,
  ) {
    this.runs = new StreamedRuns(store, project, { formsPerWrite: HELD_FORMS_PER_WRITE, hold });
  }

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
        await this.runs.add(run);
      } catch {
        // The push stores its objects after the check instead, as one not streamed does.
        this.failed = true;
      }
    });
  };

  /**
   * Readies the held forms for the hold's end (AsyncStore.prepareFormHold) after the runs given so
   * far, told when the pack is parsed: the check's rest then takes a while, and keeping the hold
   * after it takes less (told from the checker's message handler: it never throws).
   */
  readonly prepare = (): void => {
    const store = this.store;
    if (!store.prepareFormHold) return;
    this.chain = this.chain.then(async () => {
      if (this.failed || this.ended) return;
      // Only a head start on endFormHold's own work: a failure here leaves that work to it.
      await store.prepareFormHold!(this.hold).catch(() => {});
    });
  };

  /**
   * Ends the hold once the runs given are stored: with `keep` (the check passed), the forms and
   * commits are stored and what was kept returned; otherwise they are let go, and null is returned.
   * Null too when some held object is missing after all (a delta whose base lost to another write's
   * form, AsyncStore.endFormHold): the push then stores the pack's objects as one not held. Once only.
   */
  async end(keep: boolean): Promise<StoredRuns | null> {
    if (this.ended) return null;
    await this.chain;
    this.ended = true;
    const keeping = keep && !this.failed;
    const whole = await this.store.endFormHold!(this.hold, keeping);
    return keeping && whole ? this.runs : null;
  }
}
