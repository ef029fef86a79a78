/**
 * Configuration from the environment (../shared/API.md "Running it"), read once by the entry points.
 * Every limit of the contract's "Limits" table is here, each overridable by a variable.
 */
import { join, resolve } from 'node:path';

export interface Limits {
  requestBodyBytesMax: number;
  fileBytesMax: number;
  batchFilesMax: number;
  zipUnpackedBytesMax: number;
  zipEntriesMax: number;
  requestsPerSecondPerKey: number;
  requestBurstPerKey: number;
  /** Ref updates (commands) in one git push; more refuses the whole push. */
  pushRefsMax: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  publicBaseUrl: string;
  secret: string | undefined;
  allowPrivateGitHosts: boolean;
  limits: Limits;
}

const MIB = 1024 * 1024;

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080);
  const host = env.HOST || '127.0.0.1';
  return {
    port,
    host,
    dataDir: resolve(env.TREEHOUSE_DATA_DIR || join(process.cwd(), 'data')),
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
    secret: env.TREEHOUSE_SECRET || undefined,
    allowPrivateGitHosts: env.TREEHOUSE_ALLOW_PRIVATE_GIT_HOSTS === '1',
    limits: {
      requestBodyBytesMax: integer(env, 'TREEHOUSE_REQUEST_BODY_BYTES_MAX', 100 * MIB),
      fileBytesMax: integer(env, 'TREEHOUSE_FILE_BYTES_MAX', 25 * MIB),
      batchFilesMax: integer(env, 'TREEHOUSE_BATCH_FILES_MAX', 10_000),
      zipUnpackedBytesMax: integer(env, 'TREEHOUSE_ZIP_UNPACKED_BYTES_MAX', 200 * MIB),
      zipEntriesMax: integer(env, 'TREEHOUSE_ZIP_ENTRIES_MAX', 20_000),
      requestsPerSecondPerKey: integer(env, 'TREEHOUSE_RATE_PER_SECOND', 50),
      requestBurstPerKey: integer(env, 'TREEHOUSE_RATE_BURST', 200),
      pushRefsMax: integer(env, 'TREEHOUSE_PUSH_REFS_MAX', 1000),
    },
  };
}
