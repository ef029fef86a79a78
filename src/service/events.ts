/**
 * The service's one event bus: every change a project goes through is announced here once it is
 * acknowledged (its write committed), whichever way it came (an API request, a git push, a seed, the
 * linked-repository sync), with the types and `data` of ../shared/API.md "Events and webhooks
 * (v1.1)". Events are written to the team's event log in the change's own transaction
 * (src/service/eventLog.ts), which publishes them here, with their ids, after the commit. Work that
 * follows a change (linked-repository sync, the event streams, the webhook dispatcher) listens here
 * instead of being called by each route; a change that fails announces nothing.
 *
 * Listeners run synchronously in the order they subscribed, after the change; one that throws is
 * reported to `onListenerError` and the others still run (a listener cannot undo an acknowledged change).
 */
import type { ProjectRecord } from './projects.js';

export type CommitSource = 'api' | 'push' | 'merge' | 'restore' | 'seed';

export interface ChangeData {
  'files.changed': { branch: string; paths: string[]; version: number };
  'commit.created': { branch: string; oid: string; parent_oids: string[]; source: CommitSource };
  'branch.created': { branch: string; oid: string };
  'branch.deleted': { branch: string; oid: string };
  'project.created': Record<string, never>;
  'project.updated': Record<string, unknown>;
  'project.deleted': Record<string, never>;
  'project.published': Record<string, never>;
  'project.unpublished': Record<string, never>;
  'sync.status': { branch: string; status: string; oid: string | null; error: string | null };
}

export type ChangeType = keyof ChangeData;

/** An event as the log keeps it: `id` is decimal digits, increasing per team. */
export type ChangeEvent = { [T in ChangeType]: { id: string; type: T; project: ProjectRecord; at: string; data: ChangeData[T] } }[ChangeType];

/** The types the contract names, for validating `types` filters and webhook subscriptions. */
export const CHANGE_TYPES: readonly ChangeType[] = [
  'files.changed',
  'commit.created',
  'branch.created',
  'branch.deleted',
  'project.created',
  'project.updated',
  'project.deleted',
  'project.published',
  'project.unpublished',
  'sync.status',
];

export type ChangeListener = (event: ChangeEvent) => void;

export class EventBus {
  private readonly listeners: ChangeListener[] = [];

  constructor(private readonly onListenerError: (error: unknown, event: ChangeEvent) => void = defaultListenerError) {}

  /** Subscribes; returns the function that unsubscribes. */
  on(listener: ChangeListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  /** Hands a committed event (src/service/eventLog.ts) to every listener. */
  publish(event: ChangeEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }
}

function defaultListenerError(error: unknown, event: ChangeEvent): void {
  process.stderr.write(`a listener of ${event.type} on project ${event.project.id} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
}
