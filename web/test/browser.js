// Headless Debian Chromium through playwright-core, with a fresh profile:
// nothing downloads a browser. Stopped by `close()`, which the tests call.
import { after, before } from 'node:test';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.js';

export const CHROMIUM = process.env.CURTA_CHROMIUM ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** @returns {Promise<{ context: import('playwright-core').BrowserContext, profile: string, close: () => Promise<void> }>} */
export async function launchBrowser() {
  const profile = await mkdtemp(join(tmpdir(), 'curta-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ARGS,
    viewport: { width: 1200, height: 1300 },
  });
  return {
    context,
    profile,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Collects the page's console errors and uncaught exceptions, for a failing
 * test to print.
 * @param {import('playwright-core').Page} page
 */
export function pageLog(page) {
  /** @type {string[]} */
  const lines = [];
  page.on('console', (m) => lines.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`[pageerror] ${e.message}`));
  return lines;
}

/**
 * The built page served and Chromium launched before a test file's tests,
 * both stopped after them; `shots` made for screenshots.
 * @param {string} shots
 */
export function pageAndBrowser(shots) {
  /** @type {{ server: Awaited<ReturnType<typeof serve>>, browser: Awaited<ReturnType<typeof launchBrowser>> }} */
  const up = /** @type {any} */ ({});
  before(async () => {
    await mkdir(shots, { recursive: true });
    up.server = await serve(0);
    up.browser = await launchBrowser();
  });
  after(async () => {
    await up.browser?.close();
    await up.server?.close();
  });
  return up;
}
