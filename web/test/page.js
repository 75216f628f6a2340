// What the tests do on the page, as a person would: pick files, type, click,
// and read what the page shows.
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The models folder scripts/fetch-models.sh fills (or $CURTA_MODELS). */
export const MODELS =
  process.env.CURTA_MODELS ?? execFileSync('bash', [`${ROOT}scripts/fetch-models.sh`], { encoding: 'utf8' }).trim();

/** Where the screenshots go. */
export const SHOTS = `${ROOT}target/web/`;

/** The reference run: the native CLI's text and final state (golden/). */
export const REFERENCE = {
  prompt: 'Once upon a time',
  maxTokens: 12,
  temperature: '0',
  seed: '0',
  text: ', there was a little girl named Lily. She',
  turns: 20,
  sha256: 'a90a0eb77b7c0f5b74614d3f09f519ac98db3cabaabed6c62cd1c4b6b1fca890',
};

/**
 * The reference run of stories260K converted with the measured charge
 * table: the same text in 16 turns (golden/receipts/stories260k-measured-reference.txt).
 */
export const REFERENCE_MEASURED = {
  ...REFERENCE,
  turns: 16,
  sha256: '40083617e19addbd99517793169681c7707ba7feb767e7e9f9e66cb76ed2e95e',
};

/**
 * @param {import('playwright-core').Page} page
 * @param {string} checkpoint
 * @param {string} tokenizer
 * @param {'specification' | 'measured'} [charges] the charge table picked; the page's default (the specification's) when left out
 */
export async function convertOnPage(page, checkpoint, tokenizer, charges) {
  await page.click('.tabs button[data-tab="checkpoint"]');
  await page.setInputFiles('#checkpoint-file', checkpoint);
  await page.setInputFiles('#tokenizer-file', tokenizer);
  if (charges) await page.selectOption('#charges', charges);
  await page.click('#convert');
  await page.locator('#model-progress .label', { hasText: 'converted:' }).waitFor({ timeout: 60_000 });
}

/**
 * @param {import('playwright-core').Page} page
 * @param {typeof REFERENCE} run
 */
export async function fillRun(page, run) {
  await page.fill('#prompt', run.prompt);
  await page.fill('#max-tokens', String(run.maxTokens));
  await page.fill('#temperature', run.temperature);
  await page.fill('#seed', run.seed);
}

/**
 * @param {import('playwright-core').Page} page
 * @param {typeof REFERENCE} run
 */
export async function runOfflineOnPage(page, run) {
  await fillRun(page, run);
  await page.evaluate(() => delete document.body.dataset.offlineDone);
  await page.click('#run-offline');
  await page.waitForFunction(() => document.body.dataset.offlineDone === 'true' || !document.getElementById('error')?.hidden, null, {
    timeout: 120_000,
  });
  const error = await page.locator('#error');
  if (await error.isVisible()) throw new Error(`the page shows an error: ${await error.innerText()}`);
  return {
    text: await page.locator('#output-text').innerText(),
    sha256: await fact(page, 'state sha256'),
    turns: await fact(page, 'turns'),
    tokensPerSecond: await fact(page, 'tokens per second'),
    time: await fact(page, 'time'),
  };
}

/**
 * The value of a fact the page lists under the output.
 * @param {import('playwright-core').Page} page
 * @param {string} term
 */
export async function fact(page, term) {
  return page.locator(`#run-stats dd[data-term="${term}"]`).innerText();
}

/**
 * The figures (words with a digit, up to 24 characters: amounts, counts,
 * compute units) under `selector` that the page breaks across two lines.
 * @param {import('playwright-core').Page} page
 * @param {string} selector
 * @returns {Promise<string[]>}
 */
export async function brokenFigures(page, selector) {
  return page.evaluate((sel) => {
    const broken = [];
    for (const root of document.querySelectorAll(sel)) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of (node.textContent ?? '').matchAll(/\S+/g)) {
          if (!/\d/.test(m[0]) || m[0].length > 24) continue;
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
          if (tops.size > 1) broken.push(m[0]);
        }
      }
    }
    return broken;
  }, selector);
}

/**
 * How far the page is wider than the window (0: it is not).
 * @param {import('playwright-core').Page} page
 */
export async function overflowWidth(page) {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

/**
 * Lamports from the page's "1.500000000 SOL" (nine decimals, as every client prints).
 * @param {string} text
 */
export function lamportsOf(text) {
  const m = /^(\d+)\.(\d{9}) SOL/.exec(text);
  if (!m) throw new Error(`not an amount in SOL: ${text}`);
  return BigInt(m[1]) * 1_000_000_000n + BigInt(m[2]);
}
