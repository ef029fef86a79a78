/**
 * What every benchmark scenario reports, and the small statistics the report needs. All times are
 * milliseconds; sizes are bytes.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Task } from 'tinybench';

/**
 * Who did the work: Treehouse through its library (in-process verbs on an LmdbStore), Treehouse
 * through HTTP (a real server process driven with fetch), the git CLI, isomorphic-git (node fs).
 */
export const SIDES = ['ours', 'ours-http', 'git', 'isogit'] as const;
export type Side = (typeof SIDES)[number];

export const SIDE_TITLES: Record<Side, string> = {
  ours: 'Treehouse library',
  'ours-http': 'Treehouse HTTP',
  git: 'git CLI',
  isogit: 'isomorphic-git',
};

export const SCENARIOS = ['import', 'import-batches', 'commit-1', 'commit-100', 'log-200', 'merge', 'clone', 'list'] as const;
export type ScenarioId = (typeof SCENARIOS)[number];

export const SCENARIO_TITLES: Record<ScenarioId, string> = {
  import: 'import + first commit',
  'import-batches': 'import + first commit, 10k-file batches',
  'commit-1': 'change 1 file + commit',
  'commit-100': 'change 100 files + commit',
  'log-200': 'log, 200 commits',
  merge: 'merge, 100 x 100 changes',
  clone: 'clone over HTTP',
  list: 'list all files',
};

export interface Summary {
  n: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
}

/** A peer run that was stopped at the cap: reported as "cap reached", never dropped. */
export interface CapReached {
  capSeconds: number;
  /** Runs that finished before the one that was stopped (their times are in `timing`). */
  runsDone: number;
}

export interface Measurement {
  size: number;
  scenario: ScenarioId;
  side: Side;
  /** Null when not one run finished within the cap. */
  timing: Summary | null;
  capReached?: CapReached;
  /** Why a peer's scenario failed on its own (an error, not the cap): reported, not dropped. */
  failed?: string;
  /** Peak resident set of the process that did the work (ours: the whole benchmark child). */
  peakRssBytes?: number;
  /** For a server: its anonymous (heap, buffers) and file-backed (LMDB's mapped file) peaks. */
  peakRssAnonBytes?: number;
  peakRssFileBytes?: number;
  /** Medians of the parts of one iteration (ours: writeFiles vs commit). */
  phases?: Record<string, Summary>;
  /** How the work was done, for the notes under the table. */
  method: string;
}

export function summarise(samplesMs: readonly number[]): Summary {
  if (samplesMs.length === 0) throw new Error('no samples');
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  const medianMs = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { n: sorted.length, medianMs, minMs: sorted[0], maxMs: sorted[sorted.length - 1] };
}

export function summariseTask(task: Task): Summary {
  const result = task.result;
  if (result.state !== 'completed') {
    const why = result.state === 'errored' ? result.error : result.state;
    throw new Error(`benchmark task ${task.name} did not complete: ${String(why)}`);
  }
  const latency = result.latency;
  return { n: latency.samplesCount, medianMs: latency.p50, minMs: latency.min, maxMs: latency.max };
}

/** Milliseconds since an hrtime.bigint() reading. */
export function elapsedMs(startNs: bigint): number {
  return Number(process.hrtime.bigint() - startNs) / 1e6;
}

export function peakRssBytes(): number {
  // resourceUsage().maxRSS is in kilobytes.
  return process.resourceUsage().maxRSS * 1024;
}

/**
 * Flushes the page cache's dirty data (the previous scenario's files, removed scratch directories)
 * so a scenario that waits for fsync does not pay for writeback it did not cause.
 */
export function settleDisk(): void {
  spawnSync('sync');
}

/** One field of /proc/PID/status in bytes (0 when absent or the process is gone). */
export function statusBytes(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Resets a process's peak resident set (VmHWM) to its current RSS, so a long-lived process (a
 * server) can report a peak per scenario (proc(5), /proc/PID/clear_refs, value 5). False when the
 * kernel refused.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export interface MemoryPeaks {
  /** VmHWM since the last reset: the whole resident peak. */
  hwmBytes: number;
  /** Largest RssAnon sampled: the process's own memory (heap, buffers). */
  anonBytes: number;
  /** Largest RssFile sampled: file-backed pages, LMDB's memory-mapped data file among them. */
  fileBytes: number;
}

/** Samples a process's resident memory every `intervalMs` until stop() (VmHWM is exact, the split is sampled). */
export function sampleMemory(pid: number, intervalMs = 25): { stop(): MemoryPeaks } {
  resetPeakRss(pid);
  let anonBytes = 0;
  let fileBytes = 0;
  const sample = () => {
    anonBytes = Math.max(anonBytes, statusBytes(pid, 'RssAnon'));
    fileBytes = Math.max(fileBytes, statusBytes(pid, 'RssFile'));
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { hwmBytes: statusBytes(pid, 'VmHWM'), anonBytes, fileBytes };
    },
  };
}

/**
 * Asks `url`/healthz every `intervalMs` (one request at a time) until stopped: the slowest answer
 * is the longest the server's event loop was held meanwhile, give or take a round trip.
 */
export function probeHealthz(url: string, intervalMs = 5): { stop(): Promise<{ answers: number; worstMs: number }> } {
  let probing = true;
  let answers = 0;
  let worstMs = 0;
  const loop = (async () => {
    while (probing) {
      const started = performance.now();
      try {
        await (await fetch(`${url}/healthz`)).arrayBuffer();
      } catch {
        // A server going down ends the probe with what it saw.
        return;
      }
      answers++;
      worstMs = Math.max(worstMs, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      probing = false;
      await loop;
      return { answers, worstMs };
    },
  };
}

/** The section of `text` from the marker `start` to the marker `end`, both included; null when it has none. */
export function markedSection(text: string, start: string, end: string): string | null {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  return from !== -1 && to > from ? text.slice(from, to + end.length) : null;
}

/**
 * `text` (a page such as bench/RESULTS.md) with the section between the markers `start` and `end`
 * replaced by `section`, or appended after a rule when it has none: a script that writes a section
 * of its own replaces only that.
 */
export function withMarkedSection(text: string, start: string, end: string, section: string): string {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  const block = `${start}\n${section}\n${end}\n`;
  if (from !== -1 && to > from) return text.slice(0, from) + block + text.slice(to + end.length).replace(/^\n/, '');
  return `${text.replace(/\n*$/, '\n')}\n---\n\n${block}`;
}
