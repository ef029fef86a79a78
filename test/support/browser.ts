/**
 * Headless Chromium for the browser tests, with nothing installed by hand: Debian's `chromium` when
 * the machine has it, else the Chromium that the `@sparticuz/chromium` devDependency ships inside its
 * npm package (brotli-compressed; unpacked into the temp directory on first use). That build links
 * against NSS libraries it carries in the same package (al2023.tar.br); they are unpacked beside it
 * and given to the browser alone through LD_LIBRARY_PATH, so this process and its other children
 * are untouched. TREEHOUSE_TEST_CHROMIUM=npm picks the packaged browser even when Debian's is there.
 */
import { spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createBrotliDecompress } from 'node:zlib';
import { chromium, type BrowserContext } from 'playwright-core';

const SYSTEM_CHROMIUM = '/usr/bin/chromium';
/** What the machine probe found Chromium needs on a closed network, as root (see README). */
const SYSTEM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

export interface ChromiumChoice {
  executablePath: string;
  args: string[];
  env: Record<string, string>;
  /** Where it came from, for messages. */
  source: 'debian' | 'npm';
}

/** Unpacks a .tar.br archive into `directory` (once; an existing marker file means done). */
async function unpackTarBrotli(archive: string, directory: string, marker: string): Promise<void> {
  if (existsSync(join(directory, marker))) return;
  mkdirSync(directory, { recursive: true });
  await new Promise<void>((resolve, reject) => {
    const tar = spawn('tar', ['-x', '-C', directory], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    tar.stderr.on('data', (chunk) => (stderr += chunk));
    tar.on('error', reject);
    tar.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tar -x of ${archive} failed: ${stderr}`))));
    createReadStream(archive).pipe(createBrotliDecompress()).pipe(tar.stdin);
  });
}

export async function chooseChromium(): Promise<ChromiumChoice> {
  if (existsSync(SYSTEM_CHROMIUM) && process.env.TREEHOUSE_TEST_CHROMIUM !== 'npm') {
    return { executablePath: SYSTEM_CHROMIUM, args: SYSTEM_ARGS, env: {}, source: 'debian' };
  }
  const packaged = (await import('@sparticuz/chromium')).default;
  const executablePath = await packaged.executablePath();
  const bin = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '..', '..', 'bin');
  const libraries = join(tmpdir(), 'treehouse-chromium-libs');
  await unpackTarBrotli(join(bin, 'al2023.tar.br'), libraries, join('lib', 'libnss3.so'));
  const libraryPath = join(libraries, 'lib');
  return {
    executablePath,
    args: [...packaged.args, '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    env: { LD_LIBRARY_PATH: process.env.LD_LIBRARY_PATH ? `${libraryPath}:${process.env.LD_LIBRARY_PATH}` : libraryPath },
    source: 'npm',
  };
}

export async function launchChromium(userDataDir: string): Promise<{ context: BrowserContext; choice: ChromiumChoice }> {
  const choice = await chooseChromium();
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: choice.executablePath,
    headless: true,
    args: choice.args,
    env: { ...process.env, ...choice.env } as Record<string, string>,
  });
  return { context, choice };
}
