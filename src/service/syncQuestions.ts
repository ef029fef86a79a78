/**
 * Questions a worker thread asks this thread synchronously: the worker posts a question on a
 * channel of its own and blocks (Atomics.wait) until this thread has posted the answer and raised
 * a shared flag. Used where a worker's code must stay synchronous while the answers come from an
 * asynchronous store (src/service/packChecker.ts).
 *
 * Each question carries a number, and the flag is set to the number answered, not to a bare "1":
 * a wake-up can come late. This thread posts an answer, sets the flag and then wakes the worker;
 * when it is descheduled between the two, the worker may see the flag, take the answer and post
 * its next question before the wake-up of the last one arrives. With a bare flag that late wake-up
 * ended the next wait, before its answer was posted: the worker took "no answer" for "not stored",
 * and every later question got the answer to the one before it (a push under load was refused with
 * a crash in the pack check, or checked against another object's answer). Now the worker waits
 * until the flag names its own question, and refuses an answer that carries another number.
 */
import type { MessagePort } from 'node:worker_threads';

/**
 * The worker's side, as source for a worker evaluated from a string: defines
 * `questionsTo(port, signal)`, which returns `ask(question)`, blocking until the answer comes.
 * Needs `receiveMessageOnPort` in scope (src/service/moduleWorker.ts's loader has it).
 */
export const ASK_SOURCE = `
function questionsTo(port, signal) {
  const flag = new Int32Array(signal);
  let asked = 0;
  return (question) => {
    // Numbers stay positive Int32s; 0 is the flag's value before the first answer.
    asked = asked === 0x7fffffff ? 1 : asked + 1;
    port.postMessage({ number: asked, question });
    for (let seen = Atomics.load(flag, 0); seen !== asked; seen = Atomics.load(flag, 0)) Atomics.wait(flag, 0, seen);
    const received = receiveMessageOnPort(port);
    if (!received || received.message.number !== asked) throw new Error('a question to the main thread was answered out of order');
    return received.message.answer;
  };
}
`;

/** The flag a worker's questions wait on: give it to the worker with its port. */
export function questionSignal(): SharedArrayBuffer {
  return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
}

/**
 * Answers each question that comes on `port` with what `answer` gives (a failure of `answer`
 * answers null: the worker must wake whatever happened). `wake` is the wake-up of the waiting
 * worker (tests delay it, as a descheduled thread would).
 */
export function answerQuestions<Q, A>(
  port: MessagePort,
  signal: SharedArrayBuffer,
  answer: (question: Q) => Promise<A | null>,
  wake: (flag: Int32Array) => void = (flag) => Atomics.notify(flag, 0),
): void {
  const flag = new Int32Array(signal);
  port.on('message', async ({ number, question }: { number: number; question: Q }) => {
    let answered: A | null = null;
    try {
      answered = await answer(question);
    } catch {
      // Nothing found, as far as the worker is concerned: it refuses what needed the answer.
    }
    port.postMessage({ number, answer: answered });
    Atomics.store(flag, 0, number);
    wake(flag);
  });
}
