/**
 * A large push's trees and blobs stored while its pack is still parsed and checked, from the
 * check's streamed runs (src/service/packChecker.ts begin()'s `onResolved`), under a hold of the
 * project's forms (AsyncStore.beginFormHold): nobody reads them until the check has passed and the
 * hold is kept, and a refused pack's are let go whole (their shelves removed), so a refused push
 * still leaves nothing. Without it, a push stored its 40,000 forms only after the check, some
 * 0.7 s of the 2.6 s a 3,000-commit history took to push.
 *
 * Commits are not stored here: stored, a commit is indexed and read by everyone at once. They go
 * after the check, as before (receivePack).
 */
import { OidTable } from '../../git/oidTable.js';
import type { AsyncStore, FormHold } from '../../store/asyncTypes.js';
import type { ResolvedRun } from './importHistory.js';
import { HELD_FORMS_PER_WRITE, storeReceivedFormsAlone } from './packedForms.js';

export class HeldPushForms {
  private readonly kept = new OidTable();
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

  /** Stores a run's trees and blobs after those given before (told from the checker's message handler: it never throws). */
  readonly add = (run: ResolvedRun): void => {
    if (run.forms.length === 0) return;
    this.chain = this.chain.then(async () => {
      if (this.failed || this.ended) return;
      try {
        const answers = await storeReceivedFormsAlone(this.store, this.project, run.forms, HELD_FORMS_PER_WRITE, this.hold);
        answers.forEach((kept, index) => {
          if (kept) this.kept.add(run.forms[index].oid);
        });
      } catch {
        // The push stores its objects after the check instead, as one not streamed does.
        this.failed = true;
      }
    });
  };

  /**
   * Ends the hold once the runs given are stored: with `keep` (the check passed), the forms are
   * stored and the ids kept returned; otherwise they are let go, and null is returned. Null too
   * when some held object is missing after all (a delta whose base lost to another write's form,
   * AsyncStore.endFormHold): the push then stores the pack's trees and blobs as one not held. Once only.
   */
  async end(keep: boolean): Promise<OidTable | null> {
    if (this.ended) return null;
    await this.chain;
    this.ended = true;
    const keeping = keep && !this.failed;
    const whole = await this.store.endFormHold!(this.hold, keeping);
    return keeping && whole ? this.kept : null;
  }
}
