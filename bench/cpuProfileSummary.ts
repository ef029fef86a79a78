/**
 * Summarises a V8 CPU profile (node --cpu-prof) as the functions with the most self time and the
 * most inclusive time, in milliseconds; see bench/PROFILE.md for how the profiles were taken.
 *
 *   npx tsx bench/cpuProfileSummary.ts CPU.*.cpuprofile [rows]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(node_modules|main)\//, '');
  return `${functionName || '(anonymous)'} ${file}${file ? `:${lineNumber + 1}` : ''}`;
}

function summariseProfile(profile: CpuProfile): { totalMs: number; selfMs: Map<string, number>; inclusiveMs: Map<string, number> } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const selfMs = new Map<string, number>();
  const inclusiveMs = new Map<string, number>();
  let totalMs = 0;
  profile.samples.forEach((sample, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    totalMs += ms;
    const own = label(nodes.get(sample)!);
    selfMs.set(own, (selfMs.get(own) ?? 0) + ms);
    // A recursive function counts once per sample.
    const seen = new Set<string>();
    for (let id: number | undefined = sample; id !== undefined; id = parents.get(id)) {
      const name = label(nodes.get(id)!);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusiveMs.set(name, (inclusiveMs.get(name) ?? 0) + ms);
    }
  });
  return { totalMs, selfMs, inclusiveMs };
}

function top(times: Map<string, number>, rows: number): string {
  return [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, rows)
    .map(([name, ms]) => `${ms.toFixed(0).padStart(8)}  ${name}`)
    .join('\n');
}

const [file, rowsText] = process.argv.slice(2);
if (!file) throw new Error('usage: tsx bench/cpuProfileSummary.ts FILE.cpuprofile [rows]');
const rows = Number(rowsText ?? 30);
const { totalMs, selfMs, inclusiveMs } = summariseProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
console.log(`total ${totalMs.toFixed(0)} ms\n\nself ms\n${top(selfMs, rows)}\n\ninclusive ms\n${top(inclusiveMs, rows)}`);
