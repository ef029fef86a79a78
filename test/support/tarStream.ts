/**
 * Reads a tar stream entry by entry as it arrives (ustar headers, the prefix field joined to the
 * name, pax headers skipped), for tests of archives too large to hold whole.
 */
import type { Readable } from 'node:stream';

export interface TarStreamEntry {
  name: string;
  /** The ustar type flag: '0' a file, '5' a directory, '2' a symlink. */
  type: string;
  size: number;
}

const BLOCK = 512;

/**
 * Calls `onEntry` for each entry, with its content when `wantContent(entry)` says so; resolves with
 * the number of entries once the stream ends.
 */
export async function readTarStream(stream: Readable, onEntry: (entry: TarStreamEntry, content: Buffer | null) => void, wantContent: (entry: TarStreamEntry) => boolean = () => false): Promise<number> {
  let pending: Buffer = Buffer.alloc(0);
  let entries = 0;
  // What the parser waits for: a header, or the rest of an entry's data (and its padding).
  let current: { entry: TarStreamEntry; skip: number; keep: Buffer[] | null; kept: number; report: boolean } | null = null;
  let ended = false;
  for await (const chunk of stream) {
    pending = pending.length === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
    for (;;) {
      if (current) {
        const take = Math.min(current.skip, pending.length);
        if (current.keep && current.kept < current.entry.size) {
          const useful = Math.min(take, current.entry.size - current.kept);
          current.keep.push(Buffer.from(pending.subarray(0, useful)));
          current.kept += useful;
        }
        pending = pending.subarray(take);
        current.skip -= take;
        if (current.skip > 0) break;
        if (current.report) onEntry(current.entry, current.keep ? Buffer.concat(current.keep) : null);
        current = null;
        continue;
      }
      if (ended || pending.length < BLOCK) break;
      const header = pending.subarray(0, BLOCK);
      pending = pending.subarray(BLOCK);
      if (header.every((byte) => byte === 0)) {
        ended = true;
        break;
      }
      const field = (offset: number, length: number) => {
        const raw = header.subarray(offset, offset + length);
        const nul = raw.indexOf(0);
        return raw.subarray(0, nul < 0 ? length : nul).toString('utf8');
      };
      const size = parseInt(field(124, 12), 8);
      const type = String.fromCharCode(header[156]);
      const prefix = field(345, 155);
      const entry: TarStreamEntry = { name: prefix ? `${prefix}/${field(0, 100)}` : field(0, 100), type, size };
      const padded = Math.ceil(size / BLOCK) * BLOCK;
      // A pax header is not an entry: its data is skipped without a call.
      const report = type !== 'g' && type !== 'x';
      if (report) entries++;
      current = { entry, skip: padded, keep: report && wantContent(entry) ? [] : null, kept: 0, report };
    }
  }
  if (current) throw new Error(`tar stream ended inside ${current.entry.name}`);
  return entries;
}
