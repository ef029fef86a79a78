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

  /** Where the loaded module's code runs from: the file of the first stack frame inside it. */
  async function sourceOfLoaded(modulePath: string, exported: string): Promise<string> {
    const worker = startModuleWorker(modulePath, `
      load().then(
        (module) => Promise.resolve().then(() => module[${JSON.stringify(exported)}]()).then(
          () => parentPort.postMessage('did not throw'),
          (error) => parentPort.postMessage(String(error.stack)),
        ),
        (error) => parentPort.postMessage('not loaded: ' + error),
      );
    `);
    worker.ref();
    try {
      const stack = await new Promise<string>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      // The first frame: "at fn (path:line:column)", the path a file: URL or (tsx's source maps) a plain path.
      const frame = /\n\s+at [^\n]*?\(?((?:file:\/\/)?\/[^\s():]+)(?::\d+){2}\)?/.exec(stack);
      if (!frame) throw new Error(`no frame in the module: ${stack}`);
      return frame[1];
    } finally {
      await worker.terminate();
    }
  }

  it('loads a module whose imports are all ours or built in from one bundle of it, its errors naming the module', async () => {
    // historyGaps without arguments throws inside the module (src/git/packCheck.ts).
    const source = await sourceOfLoaded('../git/packCheck', 'historyGaps');
    expect(source).toMatch(/\/src\/git\/packCheck\.ts\.bundle\.js$/);
  });

  it('loads a module that imports a package (LMDB) from its sources, as before', async () => {
    const source = await sourceOfLoaded('../repo/search/threads', 'runSearchJob');
    expect(source).toMatch(/\/src\/repo\/search\/[^/]+\.ts(\?.*)?$/);
  });
});
