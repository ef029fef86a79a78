import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startModuleWorker } from '../../src/service/moduleWorker.js';

/** The nice value of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return nices;
}

describe('startModuleWorker', () => {
  it('runs a worker that loads one of our modules, at the lower priority asked for, leaving the other threads as they were', async () => {
    const before = threadNices();
    const worker = startModuleWorker('../git/packForm', `
      parentPort.on('message', async () => {
        const { packForm } = await load();
        const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
        parentPort.postMessage({ tid, loaded: typeof packForm });
      });
    `, { nice: 7 });
    try {
      const answer = await new Promise<{ tid: number; loaded: string }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage(null);
      });
      expect(answer.loaded).toBe('function');
      const after = threadNices();
      expect(after.get(answer.tid)).toBe(7);
      expect(after.get(process.pid)).toBe(before.get(process.pid));
    } finally {
      await worker.terminate();
    }
  });
});
