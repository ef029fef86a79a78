/**
 * Runs before every test file (vitest.config.ts setupFiles): a thread that ends the test process
 * when its event loop has had no turn for LOOP_STALL_MS. A test's timeout is a timer, so code that
 * never yields (a synchronous loop, or a loop of promises that resolve at once) would otherwise hold
 * the whole run until CI's own limit, with nothing printed to say where. Ended, the file fails
 * with this message and the run goes on.
 */
import { Worker } from 'node:worker_threads';
import { beforeEach } from 'vitest';

/** Far longer than any test's synchronous step (the environment can shorten it, to see the watchdog work). */
const LOOP_STALL_MS = Number(process.env.TREEHOUSE_TEST_LOOP_STALL_MS) || 120_000;
const BEAT_MS = 1_000;

const WATCHDOG_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const beat = new Float64Array(workerData.beat);
const current = new Uint8Array(workerData.current);
const currentTest = () => new TextDecoder().decode(current.slice(0, current.indexOf(0) === -1 ? current.length : current.indexOf(0)));
setInterval(() => {
  const stalled = Date.now() - beat[0];
  if (stalled < workerData.stallMs) return;
  writeSync(2, '\\n[loop watchdog] the event loop of test process ' + process.pid + ' has had no turn for ' + Math.round(stalled / 1000) + ' s, in: ' + currentTest() + '. Ending it.\\n');
  process.kill(process.pid, 'SIGKILL');
}, 1000);
`;

const key = Symbol.for('treehouse.loopWatchdog');
const holder = globalThis as { [key]?: Uint8Array };
if (!holder[key]) {
  const beat = new Float64Array(new SharedArrayBuffer(8));
  beat[0] = Date.now();
  /** The running test's file and name, for the message. */
  const current = new Uint8Array(new SharedArrayBuffer(1024));
  holder[key] = current;
  const timer = setInterval(() => {
    beat[0] = Date.now();
  }, BEAT_MS);
  timer.unref();
  const worker = new Worker(WATCHDOG_SOURCE, {
    eval: true,
    workerData: {
      beat: beat.buffer,
      current: current.buffer,
      stallMs: LOOP_STALL_MS,
    },
  });
  worker.unref();
}

beforeEach((context) => {
  const current = holder[key]!;
  const name = new TextEncoder().encode(`${context.task.file.name} > ${context.task.name}`).subarray(0, current.length - 1);
  current.fill(0);
  current.set(name);
});
