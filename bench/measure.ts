/**
 * What every benchmark scenario reports, and the small statistics the report needs. All times are
 * milliseconds; sizes are bytes.
 */
import { spawnSync } from 'node:child_process';
import type { Task } from 'tinybench';

export type Side = 'ours' | 'git';

export const SCENARIOS = ['import', 'import-batches', 'commit-1', 'commit-100', 'log-200', 'list'] as const;
export type ScenarioId = (typeof SCENARIOS)[number];

export const SCENARIO_TITLES: Record<ScenarioId, string> = {
  import: 'import + first commit',
  'import-batches': 'import + first commit, 10k-file batches',
  'commit-1': 'change 1 file + commit',
  'commit-100': 'change 100 files + commit',
  'log-200': 'log, 200 commits',
  list: 'list all files',
};

export interface Summary {
  n: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
}

export interface Measurement {
  size: number;
  scenario: ScenarioId;
  side: Side;
  timing: Summary;
  /** Peak resident set of the process that did the work (ours: the whole benchmark child). */
  peakRssBytes?: number;
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
