/**
 * The smart-HTTP export as the service offers it to the HTTP layer: reference advertisements,
 * upload-pack answers (v0 and v2) and pushes, on a project record the caller has already resolved
 * for its key. A push runs through here so that what follows a branch change (framework detection,
 * linked-repository sync) happens however the branch moved.
 */
import { oidToHex } from '../git/oid.js';
import { BRANCH_REF_PREFIX } from '../git/refname.js';
import type { FetchRequest, Service, V2Command } from '../git/smartProtocol.js';
import { receivePack, type ReceivePackInput, type ReceivePackResult } from '../repo/wire/receivePack.js';
import { advertise, fetchV2, lsRefs, uploadPackV0, type UploadPackOptions } from '../repo/wire/uploadPack.js';
import type { Config } from './config.js';
import { commitCreated } from './eventLog.js';
import type { DeflateCache } from './deflateCache.js';
import { InFlight } from './inFlight.js';
import type { PackChecker } from './packChecker.js';
import type { ProjectRecord, Projects } from './projects.js';
import type { Workspace } from './workspace.js';

export type { ReceivePackResult };

export type PushInput = Pick<ReceivePackInput, 'commands' | 'pack' | 'atomic' | 'shallow'>;

export class GitExport {
  constructor(
    private readonly projects: Projects,
    private readonly workspace: Workspace,
    private readonly packChecker: PackChecker,
    private readonly config: Config,
    private readonly deflateCache: DeflateCache,
  ) {}

  /** Large thin deltas are made on the deflate cache's worker. */
  private readonly uploadOptions: UploadPackOptions = { makeForm: (body, base) => this.deflateCache.formOffLoop(body, base) };

  advertise(record: ProjectRecord, service: Service, version: 0 | 2): Promise<Buffer[]> {
    // A push follows its advertisement: its pack's checker loads while the client packs.
    if (service === 'git-receive-pack') this.packChecker.prepare();
    return advertise(this.projects.repo(record), service, version);
  }

  lsRefs(record: ProjectRecord, command: V2Command): Promise<Buffer[]> {
    return lsRefs(this.projects.repo(record), command);
  }

  fetchV2(record: ProjectRecord, command: V2Command): AsyncGenerator<Buffer> {
    return fetchV2(this.projects.repo(record), command, this.uploadOptions);
  }

  uploadPackV0(record: ProjectRecord, request: FetchRequest): AsyncGenerator<Buffer> {
    return uploadPackV0(this.projects.repo(record), request, this.uploadOptions);
  }

  async receivePack(record: ProjectRecord, push: PushInput): Promise<ReceivePackResult> {
    const refs = new Map(push.commands.map((command) => [command.ref, command]));
    const moved = (result: ReceivePackResult) =>
      result.results.flatMap(({ ref, ok }) => {
        const command = refs.get(ref);
        return ok && command ? [{ branch: ref.slice(BRANCH_REF_PREFIX.length), command }] : [];
      });
    const result = await receivePack(this.projects.repo(record), {
      ...push,
      refUpdatesMax: this.config.limits.pushRefsMax,
      checkPack: (pack, limits, lookups, clientShallow, onResolved, onParsed) => this.packChecker.check(pack, limits, lookups, clientShallow, onResolved, onParsed),
      // Each ref the push moved, as the event its kind of move is (src/service/events.ts), in the push's transaction.
      runInTx: (apply) =>
        this.projects.outbox.runChange(record, apply, async (applied, tx, announce) => {
          for (const { branch, command } of moved(applied)) {
            // A delete with no old id succeeded on a branch that was not there: nothing moved.
            if (command.new === null) {
              if (command.old !== null) announce('branch.deleted', record, { branch, oid: oidToHex(command.old) });
            } else if (command.old === null) announce('branch.created', record, { branch, oid: oidToHex(command.new) });
            else if (!command.old.equals(command.new)) announce('commit.created', record, await commitCreated(tx, branch, oidToHex(command.new), 'push'));
          }
        }),
    });
    if (result.indexed) this.indexing.add(result.indexed);
    for (const { branch, command } of moved(result)) {
      if (command.new !== null) await this.workspace.refreshFrameworkIfMain(record, branch);
    }
    return result;
  }

  /** Pushes whose commits' object lists are still being made or stored (ReceivePackResult.indexed). */
  private readonly indexing = new InFlight();

  /** Settles once every answered push's object lists are stored or given up. */
  idle(): Promise<void> {
    return this.indexing.settled();
  }
}
