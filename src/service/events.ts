/**
 * The service's one event bus: every change a project goes through is announced here once it is
 * acknowledged (its write committed), whichever way it came (an API request, a git push, a seed, the
 * linked-repository sync), with the types and `data` of ../shared/API.md "Events and webhooks
 * (v1.1)". Work that follows a change (framework detection, linked-repository sync) listens here
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

export type ChangeEvent = { [T in ChangeType]: { type: T; project: ProjectRecord; at: string; data: ChangeData[T] } }[ChangeType];

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

  emit<T extends ChangeType>(type: T, project: ProjectRecord, data: ChangeData[T]): void {
    const event = { type, project, at: new Date().toISOString(), data } as ChangeEvent;
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
