// The stories110M shape in the page: a synthetic llama2.c checkpoint of that
// shape (438 MB, `curta-core synthesize`) converted in the page's worker and
// run offline, its text and final state the native CLI's, with the module's
// memory shown after the conversion and beside the run's tokens per second;
// and checkpoints and artifacts too large for a WebAssembly module refused
// in words before anything is read.
//
// Needs the release CLI (`cargo build --release -p curta-core --features std
// --bin curta-core`), or $CURTA_CLI.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pageAndBrowser, pageLog } from './browser.js';
import { MODELS, SHOTS, fact, runOfflineOnPage } from './page.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The native CLI, as the SDK's tests find it. */
const CLI = process.env.CURTA_CLI ?? join(ROOT, 'target/release/curta-core');
const run = promisify(execFile);
/** @param {string[]} args */
const cli = async (args) => (await run(CLI, args, { maxBuffer: 1 << 24 })).stdout;

/** The run: a prompt of llama2's tokenizer's bytes, two tokens at T = 0. */
const RUN = { prompt: 'girls bid 漢', maxTokens: 2, temperature: '0', seed: '0' };

const up = pageAndBrowser(SHOTS);
/** @type {string} */
let dir;

before(async () => {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: run \`cargo build --release -p curta-core --features std --bin curta-core\` (or set CURTA_CLI)`);
  }
  dir = await mkdtemp(join(tmpdir(), 'curta-web-big-'));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** "1,242.6 MB" as the page writes it: bytes. @param {string} text */
function bytesOf(text) {
  const m = /([\d,]+\.\d) MB/.exec(text);
  if (!m) throw new Error(`no figure in MB in "${text}"`);
  return Number(m[1].replaceAll(',', '')) * 1e6;
}

test('the stories110M shape: converted in the page and run offline, the native text and state, its memory shown', async () => {
  const started = performance.now();
  const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
  const checkpoint = join(dir, 'stories110M.bin');
  await cli(['synthesize', '--shape', 'stories110M', '-o', checkpoint]);
  const synthesized = seconds();
  // The native artifact and run, beside the page's.
  const native = (async () => {
    const artifact = join(dir, 'stories110M.curta');
    await cli(['convert', checkpoint, join(MODELS, 'tokenizer.bin'), '-o', artifact]);
    const result = JSON.parse(await cli(['run', artifact, '--prompt', RUN.prompt, '--max-tokens', String(RUN.maxTokens), '--json']));
    return { ...result, bytes: (await stat(artifact)).size };
  })();
  native.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await page.click('.tabs button[data-tab="checkpoint"]');
    await page.setInputFiles('#checkpoint-file', checkpoint);
    await page.setInputFiles('#tokenizer-file', join(MODELS, 'tokenizer.bin'));
    await page.click('#convert');
    await page.waitForFunction(
      () => /^converted:/.test(document.querySelector('#model-progress .label')?.textContent ?? '') || !document.getElementById('error')?.hidden,
      null,
      { timeout: 300_000, polling: 200 },
    );
    const error = page.locator('#error');
    if (await error.isVisible()) throw new Error(`the page shows an error: ${await error.innerText()}`);
    const converted = await page.locator('#model-progress .label').innerText();
    const convertedFact = await page.locator('#model-info dd[data-term="converted"]').innerText();
    assert.match(convertedFact, /^from 438\.4 MB in \d+\.\d\d s, in [\d,]+\.\d MB of the module's memory$/);
    const conversionMemory = bytesOf(convertedFact.split(', in ')[1]);
    // The converter holds the checkpoint, its floats and the artifact at once.
    assert.ok(conversionMemory > 2 * 438e6 && conversionMemory <= 4 * 1024 ** 3, convertedFact);
    assert.match(await page.locator('#model-info').innerText(), /dim 768, hidden 2048, 12 layers, 12 heads \(12 kv\), vocabulary 32000/);

    const result = await runOfflineOnPage(page, /** @type {any} */ (RUN));
    const memory = await fact(page, 'module memory');
    const expected = await native;
    assert.equal(result.text, expected.text);
    assert.equal(result.sha256, expected.state_sha256);
    assert.equal(result.turns, `${expected.turns} of ${expected.turns} quoted`);
    assert.equal(await page.locator('#model-info dd[data-term="artifact"]').innerText(), `${(expected.bytes / 1e6).toFixed(1)} MB`);
    assert.match(result.tokensPerSecond, /^\d+(\.\d)?$/);
    // The run holds the artifact in the module, and a little more.
    assert.match(memory, /^[\d,]+\.\d MB$/);
    assert.ok(bytesOf(memory) >= expected.bytes && bytesOf(memory) < expected.bytes + 64e6, memory);
    await page.screenshot({ path: join(SHOTS, 'offline-110m.png'), fullPage: true });
    console.log(
      `stories110M shape in the page: synthesized in ${synthesized} s; ${converted}; ` +
        `run: ${result.tokensPerSecond} tokens/s, first token after ${await fact(page, 'first token')}, ${result.time}, ` +
        `module memory ${memory}; ${seconds()} s in all`,
    );
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

test("a checkpoint or artifact larger than a module's memory holds: refused in words, before it is read", async () => {
  // Sparse files of the sizes: TinyLlama 1.1B's checkpoint (the
  // tinyllama-1.1b shape), and an artifact past 4 GiB. Nothing reads them.
  const checkpoint = join(dir, 'tinyllama-1.1b.bin');
  const artifact = join(dir, 'huge.curta');
  for (const [path, size] of /** @type {const} */ ([[checkpoint, 4_400_717_852], [artifact, 4 * 1024 ** 3 + 8]])) {
    const file = await open(path, 'w');
    await file.truncate(size);
    await file.close();
  }
  const page = await up.browser.context.newPage();
  const log = pageLog(page);
  try {
    await page.goto(up.server.url);
    await page.click('.tabs button[data-tab="checkpoint"]');
    await page.setInputFiles('#checkpoint-file', checkpoint);
    await page.setInputFiles('#tokenizer-file', join(MODELS, 'tokenizer.bin'));
    await page.click('#convert');
    assert.equal(
      await errorText(page),
      "tinyllama-1.1b.bin is 4,400.7 MB: converting it in this browser takes at least 9,901.6 MB of the WebAssembly module's memory " +
        '(its bytes, its weights as floats and the artifact, a quarter of them, at once), and a module holds 4,295.0 MB (4 GiB) at most. ' +
        'Convert it natively (curta-core convert tinyllama-1.1b.bin TOKENIZER -o MODEL.curta) and pick the artifact, about 1,100.2 MB: a run here holds only that.',
    );
    assert.equal(
      await page.locator('#model-progress .label').innerText(),
      "not converted: tinyllama-1.1b.bin is too large to convert in the module's memory",
    );
    await page.click('.tabs button[data-tab="artifact"]');
    await page.setInputFiles('#artifact-file', artifact);
    assert.equal(
      await errorText(page),
      "huge.curta is 4,295.0 MB: a run in this browser copies the whole artifact into the WebAssembly module's memory, " +
        'which holds 4,295.0 MB (4 GiB) at most. Run it natively (curta-core run huge.curta --prompt TEXT --max-tokens N).',
    );
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await page.close();
  }
});

/** The error box's words once the page is done. @param {import('playwright-core').Page} page */
async function errorText(page) {
  await page.locator('#error').waitFor({ state: 'visible', timeout: 20_000 });
  await page.waitForFunction(() => !document.body.classList.contains('busy'));
  return page.locator('#error').innerText();
}
