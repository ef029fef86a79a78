/**
 * Teams and API keys. A key belongs to one team and acts on that team's projects only; it is shown
 * once, when created, and stored only as its SHA-256 digest.
 */
import { createHash } from 'node:crypto';
import { TreehouseError } from '../errors.js';
import { identFieldProblem } from '../git/commit.js';
import type { AsyncStore } from '../store/asyncTypes.js';
import { LruCache } from '../store/lruCache.js';
import { API_KEY_PATTERN, newApiKey, newId } from './ids.js';

export interface Team {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  team_id: string;
  name: string;
  hash: string;
  created_at: string;
  revoked_at: string | null;
}

/** The caller behind a request: the key, its label and its team. */
export interface Principal {
  keyId: string;
  keyName: string;
  teamId: string;
}

const TEAM_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const DEFAULT_TEAM = 'default';

const teamKey = (id: string) => `team/${id}`;
const teamNameKey = (name: string) => `team-name/${name}`;
const apiKeyKey = (id: string) => `key/${id}`;
const apiKeyHashKey = (hash: string) => `key-hash/${hash}`;

function digest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Signals "a key was revoked" between the nodes of a shared store (its id). */
const KEYS_CHANNEL = 'treehouse_keys';
/** Live keys a node keeps the principals of. */
const PRINCIPALS_CACHED_MAX = 10_000;

export class Accounts {
  /**
   * On a store several nodes share (signals), the principals of live keys this node authenticated
   * lately, by key digest, so a request costs no reads for its key: a revocation signals every node
   * in its transaction and each forgets them all, and nothing is served from here unless this node
   * hears that channel now (after a lost connection: once it is back and has forgotten). One process
   * alone (LMDB) keeps nothing: the command-line tool revokes keys from another process.
   */
  private readonly principals = new LruCache<string, Principal>(PRINCIPALS_CACHED_MAX, 1, () => 1);
  /** +1 whenever the principals are forgotten: a read begun before is not kept. */
  private forgotten = 0;
  private listening = false;

  constructor(private readonly store: AsyncStore) {}

  async createTeam(name: string): Promise<Team> {
    if (!TEAM_NAME_PATTERN.test(name)) {
      throw new TreehouseError('invalid_request', 'A team name is 1 to 63 letters, digits, ".", "_" or "-".');
    }
    return this.store.write(async (tx) => {
      if (await tx.getRecord(teamNameKey(name))) throw new TreehouseError('invalid_request', `Team ${name} already exists.`);
      const team: Team = { id: newId('team'), name, created_at: new Date().toISOString() };
      tx.putRecord(teamKey(team.id), team);
      tx.putRecord(teamNameKey(name), team.id);
      return team;
    });
  }

  async teamByName(name: string): Promise<Team | undefined> {
    return this.store.read(async (tx) => {
      const id = await tx.getRecord<string>(teamNameKey(name));
      return id ? tx.getRecord<Team>(teamKey(id)) : undefined;
    });
  }

  async hasAnyTeam(): Promise<boolean> {
    return this.store.read(async (tx) => (await tx.listRecords('team/', { limit: 1 })).length > 0);
  }

  /** Returns the key's record and the key itself, which is never retrievable again. */
  async createKey(teamName: string, label?: string): Promise<{ record: ApiKeyRecord; key: string }> {
    const team = await this.teamByName(teamName);
    if (!team) throw new TreehouseError('not_found', `Team ${teamName} not found.`);
    // The label is the author name of the key's commits, so it must be one git accepts.
    const labelProblem = label === undefined ? null : label === '' ? 'must not be empty' : identFieldProblem(label);
    if (labelProblem) throw new TreehouseError('invalid_request', `The key label ${labelProblem}.`, { issues: [{ path: 'name', message: labelProblem }] });
    const key = newApiKey();
    const record: ApiKeyRecord = {
      id: newId('key'),
      team_id: team.id,
      name: label ?? 'api key',
      hash: digest(key),
      created_at: new Date().toISOString(),
      revoked_at: null,
    };
    await this.store.write(async (tx) => {
      tx.putRecord(apiKeyKey(record.id), record);
      tx.putRecord(apiKeyHashKey(record.hash), record.id);
    });
    return { record, key };
  }

  async listKeys(teamName: string): Promise<ApiKeyRecord[]> {
    const team = await this.teamByName(teamName);
    if (!team) throw new TreehouseError('not_found', `Team ${teamName} not found.`);
    return this.store.read(async (tx) =>
      (await tx.listRecords<ApiKeyRecord>('key/'))
        .map((entry) => entry.value)
        .filter((record) => record.team_id === team.id)
        .sort((a, b) => a.created_at.localeCompare(b.created_at)),
    );
  }

  async revokeKey(keyId: string): Promise<ApiKeyRecord> {
    return this.store.write(async (tx) => {
      const record = await tx.getRecord<ApiKeyRecord>(apiKeyKey(keyId));
      if (!record) throw new TreehouseError('not_found', `Key ${keyId} not found.`);
      const revoked = { ...record, revoked_at: record.revoked_at ?? new Date().toISOString() };
      tx.putRecord(apiKeyKey(keyId), revoked);
      // Every node forgets the keys it knew, this one as the write commits (StoreSignals).
      tx.signal?.(KEYS_CHANNEL, keyId);
      return revoked;
    });
  }

  /** The principal of a live key, or null for anything else (malformed, unknown, revoked). */
  async authenticate(key: string): Promise<Principal | null> {
    if (!API_KEY_PATTERN.test(key)) return null;
    const hash = digest(key);
    const cached = this.cachedPrincipal(hash);
    if (cached) return cached;
    const forgotten = this.forgotten;
    const principal = await this.store.read(async (tx) => {
      const id = await tx.getRecord<string>(apiKeyHashKey(hash));
      const record = id ? await tx.getRecord<ApiKeyRecord>(apiKeyKey(id)) : undefined;
      if (!record || record.revoked_at) return null;
      return { keyId: record.id, keyName: record.name, teamId: record.team_id };
    });
    if (principal && forgotten === this.forgotten && this.hearsRevocations()) {
      this.principals.set(hash, principal);
    }
    return principal && { ...principal };
  }

  private cachedPrincipal(hash: string): Principal | undefined {
    if (!this.hearsRevocations()) return undefined;
    const principal = this.principals.get(hash);
    return principal && { ...principal };
  }

  /** Whether revocations reach this node now (listening from the first call on). */
  private hearsRevocations(): boolean {
    const signals = this.store.signals;
    if (!signals) return false;
    if (!this.listening) {
      this.listening = true;
      // Any revocation, or a gap in hearing them: forget every key.
      signals.listen(KEYS_CHANNEL, () => this.forget());
    }
    return signals.hears(KEYS_CHANNEL);
  }

  private forget(): void {
    this.principals.clear();
    this.forgotten++;
  }

  /**
   * On an empty store: team "default" and one key, returned so the server can print it. One
   * transaction that looks for any team and creates both, so of several nodes starting together on
   * one empty database exactly one makes (and prints) a key.
   */
  async bootstrap(): Promise<string | null> {
    if (await this.hasAnyTeam()) return null;
    const key = newApiKey();
    const made = await this.store.write(async (tx) => {
      if ((await tx.listRecords('team/', { limit: 1 })).length > 0) return false;
      const team: Team = { id: newId('team'), name: DEFAULT_TEAM, created_at: new Date().toISOString() };
      const record: ApiKeyRecord = { id: newId('key'), team_id: team.id, name: 'first key', hash: digest(key), created_at: team.created_at, revoked_at: null };
      tx.putRecord(teamKey(team.id), team);
      tx.putRecord(teamNameKey(team.name), team.id);
      tx.putRecord(apiKeyKey(record.id), record);
      tx.putRecord(apiKeyHashKey(record.hash), record.id);
      return true;
    });
    return made ? key : null;
  }
}
