/**
 * A real browser on a published project: headless Chromium (Debian's when the machine has it, else
 * the one the @sparticuz/chromium devDependency ships: test/support/browser.ts), driven by playwright-core. The page's text, its stylesheet
 * (computed style) and its script (the DOM it changed) must all arrive from /p/{handle}/, and the
 * page must be gone after unpublish. A screenshot goes to test-artifacts/ for a person to look at.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/process.js';
import { launchChromium } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/server.js';

const ARTIFACTS = join(repoRoot, 'test-artifacts');

let server: TestServer;
let context: BrowserContext;
let userDataDir: string;

beforeAll(async () => {
  server = await startTestServer();
  userDataDir = mkdtempSync(join(tmpdir(), 'treehouse-chromium-'));
  ({ context } = await launchChromium(userDataDir));
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  await server?.close();
});

describe('a published site in Chromium', () => {
  it('shows the text, applies the stylesheet, runs the script, and is gone after unpublish', async () => {
    const created = await server.call('POST', '/api/v1/projects', { title: 'Browser site', source: { kind: 'template', name: 'static-html' } });
    expect(created.status).toBe(201);
    const id = created.body.project.id;
    const published = await server.call('POST', `/api/v1/projects/${id}/publish`);
    const url = published.body.url as string;
    expect(url).toBe(`${server.url}/p/${created.body.project.handle}/`);

    const page = await context.newPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-type']).toBe('text/html; charset=utf-8');
    expect(await page.title()).toBe('My site');
    expect(await page.textContent('h1')).toBe('Hello from Treehouse');
    // styles.css: body { background: #f4f7f2; color: #1d2a1a; } and main { max-width: 40rem }.
    const style = await page.evaluate(() => {
      const body = getComputedStyle(document.body);
      return { background: body.backgroundColor, color: body.color, mainWidth: getComputedStyle(document.querySelector('main')!).maxWidth };
    });
    expect(style).toEqual({ background: 'rgb(244, 247, 242)', color: 'rgb(29, 42, 26)', mainWidth: '640px' });
    // main.js replaces the greeting.
    expect(await page.textContent('#greeting')).toBe('This page is served from a Treehouse project, and its script ran.');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'public-site.png'), fullPage: true });
    expect(existsSync(join(ARTIFACTS, 'public-site.png'))).toBe(true);

    // The directory URL without its slash redirects to the site.
    const bare = await page.goto(url.slice(0, -1));
    expect(bare?.status()).toBe(200);
    expect(page.url()).toBe(url);

    await server.call('POST', `/api/v1/projects/${id}/unpublish`);
    const gone = await page.goto(url);
    expect(gone?.status()).toBe(404);
    expect(await page.textContent('body')).not.toContain('Hello from Treehouse');
    await page.close();
  });
});

describe('the API documentation in Chromium', () => {
  it('renders every operation of the OpenAPI document at /docs, with its example', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${server.url}/docs`);
    expect(response?.status()).toBe(200);
    // Swagger UI builds the page from /docs/json with its own scripts; each operation shows its summary.
    await page.waitForSelector('.opblock-summary', { timeout: 20_000 });
    const summaries = await page.$$eval('.opblock-summary-description', (nodes) => nodes.map((node) => node.textContent?.trim()));
    const served = (await server.call('GET', '/api/v1/openapi.json', undefined, { key: null })).body;
    const operations = Object.values(served.paths as Record<string, Record<string, { summary: string }>>).flatMap((operations) => Object.values(operations).map((operation) => operation.summary));
    expect(summaries.sort()).toEqual(operations.sort());
    // Opening one operation shows its example answer.
    await page.click('#operations-default-get_api_v1_templates');
    await page.waitForSelector('text=static-html', { timeout: 10_000 });
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'docs.png'), fullPage: false });
    await page.close();
  });
});
