/**
 * The one place where errors of the layers below become the contract's errors (src/errors.ts), so
 * the HTTP layer needs to know nothing but TreehouseError: a full store and a database that cannot
 * be reached are `unavailable` (nothing partial was written), a ref that moved under a
 * compare-and-swap is `ref_changed` with the head it holds now. Anything else is a broken
 * invariant, answered `internal` and logged by the caller.
 */
import { TreehouseError } from '../errors.js';
import { oidToHex } from '../git/oid.js';
import { RefChangedError, StorageFullError, StoreUnavailableError } from '../store/types.js';

export function contractError(error: unknown): TreehouseError | null {
  if (error instanceof TreehouseError) return error;
  if (error instanceof StorageFullError) return new TreehouseError('unavailable', 'Storage is full; nothing was written.');
  if (error instanceof StoreUnavailableError) {
    return new TreehouseError('unavailable', error.commitUnknown ? 'The database connection was lost while the change was being committed; it may or may not have been written.' : 'The database is unavailable; nothing was written.');
  }
  if (error instanceof RefChangedError) {
    const branch = error.ref.replace(/^refs\/heads\//, '');
    return new TreehouseError('ref_changed', `Branch ${JSON.stringify(branch)} moved meanwhile; nothing was changed.`, {
      head: error.current === null ? null : oidToHex(error.current),
    });
  }
  return null;
}
