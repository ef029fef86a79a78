/** Who a commit is by: the caller names them; the time is taken when the commit is written. */
import type { Signature } from '../git/commit.js';

export interface Person {
  name: string;
  email: string;
}

export function signatureNow(person: Person, nowMs: number = Date.now()): Signature {
  return { name: person.name, email: person.email, timestamp: Math.floor(nowMs / 1000), timezone: '+0000' };
}

/** git ends a message with a newline; clients see it without. */
export function messageForGit(message: string): string {
  return message.endsWith('\n') ? message : `${message}\n`;
}

export function messageForClient(message: string): string {
  return message.endsWith('\n') ? message.slice(0, -1) : message;
}
