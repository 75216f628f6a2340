// The page's layout and its words before any chain is involved, in headless
// Chromium at 1280x900 (issue 31's newcomer): a program address that is not
// one, the prompt's byte count, a long unbroken prompt or URL, figures that
// do not break mid-word, and the output brought into view when a run starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pageAndBrowser, pageLog } from './browser.js';
import { MODELS, SHOTS, brokenFigures, convertOnPage, overflowWidth } from './page.js';

const up = pageAndBrowser(SHOTS);

/**
 * A fresh page at 1280x900; its console is printed when `body` fails.
 * @param {(page: import('playwright-core').Page) => Promise<void>} body
 */
async function onPage(body) {
  const page = await up.browser.context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await body(page);
  } catch (e) {
    console.error(log.join('\n'));
    await page.screenshot({ path: join(SHOTS, 'layout-failed.png'), fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await page.close();
  }
}

/** @param {import('playwright-core').Page} page */
async function errorText(page) {
  await page.locator('#error').waitFor({ state: 'visible', timeout: 30_000 });
  await page.waitForFunction(() => !document.body.classList.contains('busy'));
  return page.locator('#error').innerText();
}

test('layout: a program address that is not one is refused in words on Connect, and nothing is connected', () =>
  onPage(async (page) => {
    // Nothing listens there; the page must not even ask.
    const cluster = 'http://127.0.0.1:9';
    let asked = 0;
    await page.route(`${cluster}/**`, (route) => {
      asked += 1;
      return route.abort();
    });
    await page.fill('#cluster', cluster);
    await page.fill('#program-id', 'notanaddress');
    await page.click('#connect-cluster');
    assert.equal(
      await errorText(page),
      'The curta program address "notanaddress" is not a Solana address: it is 12 characters long (an address is 32 to 44 base58 characters, 1-9 and letters but 0, O, I and l, for 32 bytes). Nothing was connected.',
    );
    assert.equal(await page.locator('#cluster-info').innerText(), '');
    // Characters no address has, named; the same on "Connect wallet" and "Local key".
    await page.fill('#program-id', 'CE9e1eE8sSzsDcr6be6wnZtdd61n5aFcuEYNDKPhq0nd');
    await page.click('#local-key');
    assert.match(await errorText(page), /^The curta program address "CE9e1eE8sSzsDcr6be6wnZtdd61n5aFcuEYNDKPhq0nd" is not a Solana address: "0" is not base58 /);
    assert.equal(asked, 0, 'no request reached the cluster');
  }));

test('layout: the prompt counter counts the UTF-8 bytes of what is typed, as it is typed', () =>
  onPage(async (page) => {
    const counter = page.locator('#prompt-bytes');
    assert.equal(await counter.innerText(), '(16 of 1,024 bytes)', 'the default "Once upon a time"');
    await page.fill('#prompt', '');
    await page.locator('#prompt').pressSequentially('The big red truck');
    assert.equal(await counter.innerText(), '(17 of 1,024 bytes)');
    await page.locator('#prompt').pressSequentially(' é');
    assert.equal(await counter.innerText(), '(20 of 1,024 bytes)', 'é is two bytes of UTF-8');
    await page.fill('#prompt', 'x'.repeat(1025));
    assert.equal(await counter.innerText(), '(1,025 of 1,024 bytes)');
    assert.equal(await counter.getAttribute('class'), 'hint over');
  }));

test('layout: at 1280x900 a long unbroken prompt or URL does not widen the page, figures do not break mid-word, and a run brings the output into view', () =>
  onPage(async (page) => {
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    assert.deepEqual(await brokenFigures(page, '#model-info dd'), []);
    // An unbroken "URL" typed without its scheme: refused in words, which wrap.
    await page.fill('#cluster', `127.0.0.1:8899/${'x'.repeat(3000)}`);
    await page.click('#connect-cluster');
    assert.match(await errorText(page), /is not a URL/);
    assert.equal(await overflowWidth(page), 0, 'the error box wraps an unbroken URL');
    // An unbroken prompt, shown in the output when the run starts.
    const prompt = 'Once' + 'a'.repeat(1000);
    await page.fill('#prompt', prompt);
    await page.fill('#max-tokens', '1');
    await page.evaluate(() => window.scrollTo(0, 0));
    const before = await page.evaluate(() => document.getElementById('output-panel')?.getBoundingClientRect().top ?? 0);
    assert.ok(before > 900, `the output starts below the fold (${before} px)`);
    await page.click('#run-offline');
    await page.waitForFunction(() => document.body.dataset.offlineDone || !document.getElementById('error')?.hidden, null, { timeout: 120_000 });
    assert.equal(await page.locator('#output-prompt').innerText(), prompt);
    // Scrolled to the output panel, or as far as the page goes: the output text is in view.
    await page.waitForFunction(() => {
      const panel = document.getElementById('output-panel')?.getBoundingClientRect().top ?? -1;
      const text = document.getElementById('output')?.getBoundingClientRect().top ?? -1;
      return panel >= 0 && text < innerHeight - 100;
    }, null, { timeout: 5_000 });
    assert.equal(await overflowWidth(page), 0, `the page is ${await overflowWidth(page)} px wider than the window`);
    assert.deepEqual(await brokenFigures(page, '#run-stats dd'), []);
    await page.screenshot({ path: join(SHOTS, 'layout-long-prompt.png') });
  }));
