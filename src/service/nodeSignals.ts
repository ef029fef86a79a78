/**
 * What one node's change means for the other nodes of a store several nodes share (PostgreSQL,
 * src/store/asyncTypes.ts StoreSignals): every change that appends events to a team's log signals
 * the team in its own transaction, so each other node hears of it once it commits and wakes what
 * follows that team's log there (its event streams, the webhooks' lines). A node hears its own
 * signals too, and ignores them: its event bus told it already.
 *
 * When a node's listening connection was lost (a database restart), it may have missed signals: it
 * then wakes every stream and fans out every team with webhooks, which read the log from their
 * cursors. On a store of one process (LMDB) there are no signals and nothing here runs.
 */
import { randomUUID } from 'node:crypto';
import type { AsyncStore } from '../store/asyncTypes.js';
import type { EventLog } from './eventLog.js';

/** The channel of "a team's log grew"; a message is `<node id> <team id>`. */
export const EVENTS_CHANNEL = 'treehouse_events';

export interface TeamFollowers {
  /** Another node appended events to `team`'s log. */
  teamChanged(team: string): void;
  /** Signals may have been missed: look again at everything followed. */
  everythingChanged(): void;
}

export class NodeSignals {
  /** This process among the nodes. */
  readonly nodeId = randomUUID();
  private stopListening: (() => void) | null = null;

  constructor(
    private readonly store: AsyncStore,
    log: EventLog,
  ) {
    if (!store.signals) return;
    log.onChange((tx, events) => {
      const teams = new Set(events.map((event) => event.project.team_id));
      for (const team of teams) tx.signal?.(EVENTS_CHANNEL, `${this.nodeId} ${team}`);
    });
  }

  /** Starts hearing other nodes' changes (the server, once it serves; not the command-line tool). */
  start(followers: TeamFollowers): void {
    const signals = this.store.signals;
    if (!signals || this.stopListening) return;
    this.stopListening = signals.listen(EVENTS_CHANNEL, (message) => {
      if (message === null) return followers.everythingChanged();
      const space = message.indexOf(' ');
      if (space < 0 || message.slice(0, space) === this.nodeId) return;
      followers.teamChanged(message.slice(space + 1));
    });
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = null;
  }
}
