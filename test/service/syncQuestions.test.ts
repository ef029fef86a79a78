import { MessageChannel, Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { answerQuestions, ASK_SOURCE, questionSignal } from '../../src/service/syncQuestions.js';

/** A worker that asks each of `questions` in turn (synchronously) and posts back the answers it got, or its failure. */
function askingWorker(): Worker {
  return new Worker(
    `const { parentPort, receiveMessageOnPort } = require('node:worker_threads');
${ASK_SOURCE}
parentPort.once('message', ({ port, signal, questions }) => {
  try {
    const ask = questionsTo(port, signal);
    parentPort.postMessage({ answers: questions.map((question) => ask(question)) });
  } catch (error) {
    parentPort.postMessage({ failed: String(error) });
  }
});`,
    { eval: true },
  );
}

async function askAll(questions: string[], answer: (question: string) => Promise<string | null>, wake?: (flag: Int32Array) => void): Promise<{ answers?: unknown[]; failed?: string }> {
  const worker = askingWorker();
  try {
    const { port1, port2 } = new MessageChannel();
    const signal = questionSignal();
    answerQuestions(port1, signal, answer, wake);
    const reply = new Promise<{ answers?: unknown[]; failed?: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    worker.postMessage({ port: port2, signal, questions }, [port2]);
    const result = await reply;
    port1.close();
    return result;
  } finally {
    await worker.terminate();
  }
}

describe('questions a worker asks synchronously', () => {
  it('gives each question its own answer, slow answers and failed ones (null) included', async () => {
    const result = await askAll(['a', 'b', 'fail', 'c'], async (question) => {
      if (question === 'fail') throw new Error('the store is unavailable');
      await sleep(question === 'b' ? 30 : 0);
      return question.toUpperCase();
    });
    expect(result).toEqual({ answers: ['A', 'B', null, 'C'] });
  });

  it('keeps waiting through a wake-up that comes late from the answer before (the answering thread descheduled before it woke the worker)', async () => {
    let flagSeen: Int32Array | null = null;
    let strayWakes = 0;
    const result = await askAll(
      ['first', 'second', 'third'],
      async (question) => {
        if (question === 'second') {
          // The worker is waiting for this answer: wake it as the first answer's late wake-up
          // would, until one wake-up reached it, and only then answer.
          while (Atomics.notify(flagSeen!, 0) === 0) await sleep(1);
          strayWakes++;
          await sleep(20);
        }
        return `answer to ${question}`;
      },
      (flag) => {
        flagSeen = flag;
        Atomics.notify(flag, 0);
      },
    );
    expect(strayWakes).toBe(1);
    expect(result).toEqual({ answers: ['answer to first', 'answer to second', 'answer to third'] });
  });
});
