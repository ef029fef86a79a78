/**
 * `treehouse backup` while the server takes writes, then `treehouse restore` into a fresh data
 * directory: every write acknowledged before the backup began is there, and every project clones
 * clean with git.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { git, gitAsyncOk, scratchDir } from '../support/git.js';
import { repoRoot, startServerProcess, type ServerProcess } from '../support/process.js';

const work = scratchDir('treehouse-backup-');
const servers: ServerProcess[] = [];
afterAll(() => {
  for (const server of servers) server.child.kill('SIGKILL');
  work.remove();
});

function cli(args: string[], dataDir: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'cli.ts'), ...args], { cwd: repoRoot, env: { ...process.env, TREEHOUSE_DATA_DIR: dataDir } }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe('backup and restore', () => {
  it('keeps every write acknowledged before the backup began, under a write load, and restores into a fresh directory', async () => {
    const original = join(work.path, 'original');
    const server = await startServerProcess({ TREEHOUSE_DATA_DIR: original, TREEHOUSE_RATE_PER_SECOND: '0' });
    servers.push(server);
    const key = (await server.waitFor(/^API key for team default: (th_\S+)$/m))[1];
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const projects: string[] = [];
    for (const title of ['Backed up one', 'Backed up two']) {
      const created = await call('POST', '/projects', { title, commerce: { platform: 'shopify', store_domain: 'shop.example.com', access_token: 'shpat_secret' } });
      expect(created.status).toBe(201);
      projects.push(created.body.project.id);
    }

    // Writers: each acknowledged write is recorded with the time its answer arrived.
    const acknowledged: Array<{ project: string; path: string; at: number }> = [];
    let writing = true;
    const writer = async (project: string, name: string) => {
      for (let n = 0; writing; n++) {
        const path = `${name}/file-${n}.txt`;
        const written = await call('POST', `/projects/${project}/files/batch`, { files: [{ path, content: `${name} ${n}\n` }] });
        if (written.status !== 200) throw new Error(`write answered ${written.status}`);
        acknowledged.push({ project, path, at: Date.now() });
        // Two writers share a project, so one's commit may already hold the other's files (200).
        if (n % 5 === 4) expect([200, 201]).toContain((await call('POST', `/projects/${project}/git/commit`, { message: `${name} ${n}` })).status);
      }
    };
    const writers = Promise.all([writer(projects[0], 'a'), writer(projects[0], 'b'), writer(projects[1], 'c')]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const backupBegan = Date.now();
    const backupDir = join(work.path, 'backup');
    const backup = await cli(['backup', backupDir], original);
    expect(backup.code, backup.output).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    writing = false;
    await writers;
    const before = acknowledged.filter((write) => write.at < backupBegan);
    expect(before.length).toBeGreaterThan(20);
    expect(acknowledged.length).toBeGreaterThan(before.length);

    const restored = join(work.path, 'restored');
    const restore = await cli(['restore', backupDir], restored);
    expect(restore.code, restore.output).toBe(0);
    expect(readFileSync(join(restored, 'secret'), 'utf8')).toBe(readFileSync(join(original, 'secret'), 'utf8'));
    expect(statSync(join(restored, 'secret')).mode & 0o777).toBe(0o600);

    const second = await startServerProcess({ TREEHOUSE_DATA_DIR: restored });
    servers.push(second);
    for (const project of projects) {
      const response = await fetch(`${second.url}/api/v1/projects/${project}/files`, { headers });
      expect(response.status).toBe(200);
      const present = new Set(((await response.json()).files as Array<{ path: string }>).map((file) => file.path));
      for (const write of before.filter((write) => write.project === project)) expect(present.has(write.path), write.path).toBe(true);
      const detail = await (await fetch(`${second.url}/api/v1/projects/${project}`, { headers })).json();
      expect(detail.project.has_commerce_credentials).toBe(true);
      const clone = join(work.path, `clone-${project}`);
      await gitAsyncOk(['clone', '-q', `${second.url.replace('http://', `http://git:${key}@`)}/git/${project}.git`, clone]);
      git(['fsck', '--strict'], { cwd: clone });
    }
    // The restored server takes writes of its own.
    const after = await fetch(`${second.url}/api/v1/projects/${projects[0]}/files/batch`, { method: 'POST', headers, body: JSON.stringify({ files: [{ path: 'after.txt', content: 'after\n' }] }) });
    expect(after.status).toBe(200);
  });

  it('refuses a backup into a non-empty directory, a restore into one, and a directory that holds no finished backup', async () => {
    const busy = join(work.path, 'busy');
    mkdirSync(busy);
    writeFileSync(join(busy, 'something'), 'x');
    const data = join(work.path, 'refusals');
    const intoBusy = await cli(['backup', busy], data);
    expect(intoBusy.code).toBe(1);
    expect(intoBusy.output).toMatch(/is not empty; nothing was written/);
    const fromNothing = await cli(['restore', busy], join(work.path, 'fresh'));
    expect(fromNothing.code).toBe(1);
    expect(fromNothing.output).toMatch(/no finished Treehouse backup/);
    const good = join(work.path, 'good-backup');
    expect((await cli(['backup', good], data)).code).toBe(0);
    const intoBusyData = await cli(['restore', good], busy);
    expect(intoBusyData.code).toBe(1);
    expect(intoBusyData.output).toMatch(/is not empty/);
    expect(readFileSync(join(busy, 'something'), 'utf8')).toBe('x');
  });
});
