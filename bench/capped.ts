/**
 * Peers that may not finish run in child processes with a cap on each run: the child says on stdout
 * when it finishes a run (and when it finishes a setup step), and the parent kills it when one run
 * or step takes longer than the cap. The runs finished before that are kept; the scenario is
 * reported as "cap reached", never dropped.
 *
 * Child side: reportStep() after untimed setup, reportRun(ms) after each timed run, reportResult(x)
 * once at the end. Parent side: runCapped(script, args, capSeconds).
 */
import { spawn } from 'node:child_process';
import type { CapReached } from './measure.js';
import { statusBytes } from './measure.js';

const LINE_PREFIX = '@bench ';
/** How often the parent reads the child's peak RSS (kept even if the child is killed). */
const RSS_SAMPLE_INTERVAL_MS = 200;

export function reportStep(what: string): void {
  process.stdout.write(`${LINE_PREFIX}step ${what}\n`);
}

export function reportRun(ms: number): void {
  process.stdout.write(`${LINE_PREFIX}run ${ms}\n`);
}

export function reportResult(result: unknown): void {
  process.stdout.write(`${LINE_PREFIX}result ${JSON.stringify(result)}\n`);
}

export interface CappedOutcome<T> {
  samples: number[];
  capReached?: CapReached;
  /** The child's exit status or error when it failed on its own (not killed at the cap). */
  failed?: string;
  /** VmHWM of the child, sampled (the last sample before it exited or was killed). */
  peakRssBytes: number;
  result?: T;
}

/** Runs `script` (a TypeScript file, with this process's loader flags) as a capped child. */
export async function runCapped<T>(script: string, args: string[], capSeconds: number): Promise<CappedOutcome<T>> {
  const child = spawn(process.execPath, [...process.execArgv, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const outcome: CappedOutcome<T> = { samples: [], peakRssBytes: 0 };
  let killed = false;
  let stderr = '';
  let pending = '';
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, capSeconds * 1000);
  };
  const sampler = setInterval(() => {
    outcome.peakRssBytes = Math.max(outcome.peakRssBytes, statusBytes(child.pid!, 'VmHWM'));
  }, RSS_SAMPLE_INTERVAL_MS);
  arm();
  child.stdout!.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (!line.startsWith(LINE_PREFIX)) {
        process.stderr.write(`${line}\n`);
        continue;
      }
      const [kind, ...rest] = line.slice(LINE_PREFIX.length).split(' ');
      const payload = rest.join(' ');
      if (kind === 'run') outcome.samples.push(Number(payload));
      if (kind === 'result') outcome.result = JSON.parse(payload) as T;
      outcome.peakRssBytes = Math.max(outcome.peakRssBytes, statusBytes(child.pid!, 'VmHWM'));
      arm();
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    stderr += chunk.toString('utf8');
    if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  clearInterval(sampler);
  if (killed) outcome.capReached = { capSeconds, runsDone: outcome.samples.length };
  else if (code !== 0) {
    const lastLines = stderr.trim().split('\n').slice(-3).join(' / ');
    outcome.failed = `exit ${code ?? signal}: ${lastLines.slice(0, 300)}`;
  }
  return outcome;
}
