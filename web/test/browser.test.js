// The page in headless Chromium: the offline reference run, the bad-input
// messages, and (chain.test.js) the reference run on curta-localnet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pageAndBrowser, pageLog } from './browser.js';
import { MODELS, REFERENCE, REFERENCE_MEASURED, SHOTS, convertOnPage, fact, fillRun, runOfflineOnPage } from './page.js';

const up = pageAndBrowser(SHOTS);

test('offline: stories260K converted in the page, the reference run in WebAssembly', async () => {
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    assert.match(await page.locator('#model-info').innerText(), /context\s+512 tokens/);
    assert.equal(await page.locator('#model-info dd[data-term="charges"]').innerText(), "the specification's table");
    const result = await runOfflineOnPage(page, REFERENCE);
    assert.equal(result.text, REFERENCE.text);
    assert.equal(result.sha256, REFERENCE.sha256);
    assert.equal(result.turns, `${REFERENCE.turns} of ${REFERENCE.turns} quoted`);
    assert.match(result.tokensPerSecond, /^\d+(\.\d)?$/);
    await page.screenshot({ path: join(SHOTS, 'offline-finished.png'), fullPage: true });
    console.log(`offline reference run: ${result.tokensPerSecond} tokens/s, first token after ${await fact(page, 'first token')}, ${result.time}`);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

test('offline: stories260K converted with the measured charge table, the reference run in 16 turns', async () => {
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'), 'measured');
    assert.equal(await page.locator('#model-info dd[data-term="charges"]').innerText(), 'the measured table (fewer, fuller turns)');
    const result = await runOfflineOnPage(page, REFERENCE_MEASURED);
    assert.equal(result.text, REFERENCE_MEASURED.text);
    assert.equal(result.sha256, REFERENCE_MEASURED.sha256);
    assert.equal(result.turns, `${REFERENCE_MEASURED.turns} of ${REFERENCE_MEASURED.turns} quoted`);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

test("offline: a run stopped in the worker ends there, and the next one runs", async () => {
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    await fillRun(page, { ...REFERENCE, maxTokens: 500 });
    // Stopped in the click's own task, before the worker can finish: the
    // worker is ended wherever it is.
    await page.evaluate(() => {
      document.getElementById('run-offline')?.click();
      document.getElementById('stop-offline')?.click();
    });
    await page.waitForFunction(() => document.body.dataset.offlineDone === 'stopped');
    assert.match(await page.locator('#status').innerText(), /^Stopped in this browser after \d+ tokens in \d+ turns\.$/);
    assert.equal(await page.locator('#stop-offline').isVisible(), false);
    assert.equal(await page.locator('#error').isVisible(), false);
    // A new worker, sent the artifact again, runs the reference run.
    const result = await runOfflineOnPage(page, REFERENCE);
    assert.equal(result.text, REFERENCE.text);
    assert.equal(result.sha256, REFERENCE.sha256);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

test("a tokenizer that is not the checkpoint's: the core's words, and the bar ends", async () => {
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    // stories260K's 512 tokens against llama2's 32,000-token tokenizer.
    await page.click('.tabs button[data-tab="checkpoint"]');
    await page.setInputFiles('#checkpoint-file', join(MODELS, 'stories260K.bin'));
    await page.setInputFiles('#tokenizer-file', join(MODELS, 'tokenizer.bin'));
    await page.click('#convert');
    // The words of `curta-core convert` (core/src/convert/checkpoint.rs's reason, convert::Input::kind).
    assert.equal(
      await errorText(page),
      "tokenizer.bin is not a llama2.c tokenizer for this checkpoint: it is 433869 bytes, 427547 more than a tokenizer of 512 tokens, the checkpoint's vocabulary (6322 bytes) (InvalidFormat, core error 2).",
    );
    const bar = page.locator('#model-progress');
    assert.equal(await bar.locator('.label').innerText(), 'not converted: tokenizer.bin is not a llama2.c tokenizer for this checkpoint');
    assert.equal(await bar.getAttribute('class'), 'progress failed');
    assert.equal(await page.locator('#model-info').isVisible(), false);
    // The right tokenizer converts, and the bar says so.
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    assert.equal(await bar.getAttribute('class'), 'progress');
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

test('bad input gets words on the page, not a stuck page', async () => {
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    // No model yet.
    await page.click('#run-offline');
    assert.equal(await errorText(page), 'Pick a model first: an artifact, or a checkpoint and tokenizer to convert.');
    // A file that is not an artifact.
    await page.setInputFiles('#artifact-file', join(MODELS, 'tok512.bin'));
    assert.equal(await errorText(page), 'tok512.bin: not a Curta artifact: magic "\\u0007\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000" (a .curta file starts with CURTAW01).');
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    // A prompt over 1,024 bytes.
    await page.fill('#prompt', 'a'.repeat(1025));
    await page.click('#run-offline');
    assert.equal(await errorText(page), 'The prompt is 1,025 bytes long; the limit is 1,024 bytes (UTF-8).');
    // Max tokens past the context.
    await page.fill('#prompt', 'Once upon a time');
    await page.fill('#max-tokens', '513');
    await page.click('#run-offline');
    assert.equal(await errorText(page), "Max tokens 513 is past the model's context of 512 tokens.");
    await page.fill('#max-tokens', '12');
    await page.fill('#temperature', 'hot');
    await page.click('#run-offline');
    assert.equal(await errorText(page), 'Temperature must be a decimal number such as 0 or 0.8, not "hot".');
    // A cluster that does not answer (a port nothing listens on).
    const closed = await closedPort();
    await page.fill('#cluster', `http://127.0.0.1:${closed}`);
    await page.click('#connect-cluster');
    assert.equal(await errorText(page), `The cluster at http://127.0.0.1:${closed} does not answer: Failed to fetch.`);
    await page.fill('#cluster', 'localhost:8899');
    await page.click('#connect-cluster');
    assert.equal(await errorText(page), '"localhost:8899" is not an http(s) RPC URL.');
    // The page still runs after all that.
    const result = await runOfflineOnPage(page, REFERENCE);
    assert.equal(result.text, REFERENCE.text);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

/** A port on 127.0.0.1 that nothing listens on (bound, then closed). */
async function closedPort() {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', () => r(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (probe.address());
  await new Promise((r) => probe.close(() => r(undefined)));
  return port;
}

/** @param {import('playwright-core').Page} page */
async function errorText(page) {
  await page.locator('#error').waitFor({ state: 'visible', timeout: 20_000 });
  await page.waitForFunction(() => !document.body.classList.contains('busy'));
  return page.locator('#error').innerText();
}
