import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/git.js';
import { repoRoot, startServerProcess } from '../support/process.js';

const data = scratchDir('treehouse-e2e-');
afterAll(() => data.remove());
const env = { TREEHOUSE_DATA_DIR: data.path };

function walkthrough(): string {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Walkthrough'));
  const match = section.match(/```sh\n([\s\S]*?)```/);
  if (!match) throw new Error('README has no walkthrough block');
  return match[1];
}

/**
 * Runs a bash script without blocking this process: the server's output pipes are read here, and
 * a server that filled one while this process waited would block on its next write.
 */
function bash(script: string, env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-e', '-o', 'pipefail', '-c', script], { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 26 }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ status: error ? (typeof code === 'number' ? code : 1) : 0, stdout, stderr });
    });
  });
}

function cli(args: string[]): string {
  return execFileSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'cli.ts'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
}

describe('the server process', () => {
  let key = '';
  let projectId = '';

  it('prints a first key on an empty data directory and runs the README walkthrough as written', async () => {
    const server = await startServerProcess(env);
    try {
      key = (await server.waitFor(/^API key for team default: (th_[A-Za-z0-9_-]{32,})$/m))[1];
      const run = await bash(walkthrough(), { KEY: key, BASE: server.url });
      expect(run.status, run.stderr + run.stdout).toBe(0);
      expect(run.stdout).toContain('<h1>About</h1>');
      expect(run.stdout).toContain('"message":"Add about page"');
      const projects = await (await fetch(`${server.url}/api/v1/projects`, { headers: { authorization: `Bearer ${key}` } })).json();
      projectId = projects.projects[0].id;
      const log = await (await fetch(`${server.url}/api/v1/projects/${projectId}/git/log`, { headers: { authorization: `Bearer ${key}` } })).json();
      expect(log.commits[0].message).toMatch(/^Restore to [0-9a-f]{7}$/);
      server.child.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 0, signal: null });
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('keeps every acknowledged write across kill -9, and prints no new key on restart', async () => {
    const server = await startServerProcess(env);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    try {
      const written = await fetch(`${server.url}/api/v1/projects/${projectId}/files/batch`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ files: [{ path: 'after-kill.txt', content: 'durable' }] }),
      });
      expect(written.status).toBe(200);
      server.child.kill('SIGKILL');
      await server.exited;
    } finally {
      server.child.kill('SIGKILL');
    }
    const again = await startServerProcess(env);
    try {
      expect(again.output()).not.toContain('API key for team default');
      const file = await (await fetch(`${again.url}/api/v1/projects/${projectId}/files/after-kill.txt`, { headers })).json();
      expect(file.content).toBe('durable');
    } finally {
      again.child.kill('SIGKILL');
      await again.exited;
    }
  });

  it('finishes in-flight requests on SIGTERM before it exits', async () => {
    const server = await startServerProcess({ ...env, TREEHOUSE_LOG_LEVEL: 'info' });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const files = Array.from({ length: 10_000 }, (_, i) => ({ path: `graceful/f${i}.txt`, content: `${i} `.repeat(500) }));
    const inFlight = fetch(`${server.url}/api/v1/projects/${projectId}/files/batch`, { method: 'POST', headers, body: JSON.stringify({ files }) });
    // The request has reached the server (its log line is written when the headers arrive).
    await server.waitFor(/"url":"\/api\/v1\/projects\/[^"]+\/files\/batch"/);
    server.child.kill('SIGTERM');
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ written: 10_000 });
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const again = await startServerProcess(env);
    try {
      const listed = await (await fetch(`${again.url}/api/v1/projects/${projectId}/files?prefix=graceful/`, { headers })).json();
      expect(listed.files).toHaveLength(10_000);
    } finally {
      again.child.kill('SIGKILL');
      await again.exited;
    }
  });

  it('manages teams and keys from the command line', async () => {
    expect(cli(['teams', 'create', 'acme'])).toContain('created team acme');
    const created = cli(['keys', 'create', '--team', 'acme', '--name', 'ci']).trim().split('\n');
    const acmeKey = created[created.length - 1];
    expect(acmeKey).toMatch(/^th_[A-Za-z0-9_-]{32,}$/);
    const listed = cli(['keys', 'list', '--team', 'acme']);
    expect(listed).toMatch(/^key_\S+\tci\t.*\tactive$/m);
    const keyId = listed.split('\t')[0];
    const server = await startServerProcess(env);
    try {
      const asAcme = { authorization: `Bearer ${acmeKey}` };
      expect((await fetch(`${server.url}/api/v1/projects`, { headers: asAcme })).status).toBe(200);
      // Another team's project does not exist for this key.
      expect((await fetch(`${server.url}/api/v1/projects/${projectId}`, { headers: asAcme })).status).toBe(404);
      expect(cli(['keys', 'revoke', keyId])).toContain(`revoked key ${keyId}`);
      expect((await fetch(`${server.url}/api/v1/projects`, { headers: asAcme })).status).toBe(401);
    } finally {
      server.child.kill('SIGKILL');
      await server.exited;
    }
  });
});
