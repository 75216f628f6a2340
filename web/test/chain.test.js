// The page against curta-localnet: a test wallet registered through the
// Wallet Standard, stories260K uploaded from the page, the reference run
// generated on chain with one approval, every turn verified; then a reload
// mid-run that resumes and pays nothing twice.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { access } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createKeyPairSignerFromBytes, generateKeyPairSigner } from '@solana/kit';
import { serve } from '../scripts/serve.js';
import { launchBrowser, pageLog } from './browser.js';
// The validator as the chain client's own tests start it (free ports, the program preloaded).
import { LOCALNET_BIN, PROGRAM_SO, startLocalnet } from '../../sdk/test-support/localnet.js';
import { formatSol } from '@curta/sdk';
import { MODELS, REFERENCE, SHOTS, brokenFigures, convertOnPage, fact, fillRun, lamportsOf } from './page.js';
import { testWallet } from './wallet.js';


/** @type {Awaited<ReturnType<typeof serve>>} */
let server;
/** @type {Awaited<ReturnType<typeof launchBrowser>>} */
let browser;
/** @type {Awaited<ReturnType<typeof startLocalnet>>} */
let localnet;
/** @type {Awaited<ReturnType<typeof testWallet>>} */
let wallet;
let programId = '';
/** @type {import('playwright-core').Page} */
let page;
/** @type {string[]} */
let log = [];

/**
 * @param {string} method
 * @param {unknown[]} params
 */
async function rpc(method, params = []) {
  const r = await fetch(localnet.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await r.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

before(async () => {
  for (const [what, path] of [['curta-localnet (make test-browser builds it)', LOCALNET_BIN], ['the program (make build-sbf)', PROGRAM_SO]]) {
    await access(path).catch(() => {
      throw new Error(`${what} is missing at ${path}`);
    });
  }
  await mkdir(SHOTS, { recursive: true });
  await rm(join(SHOTS, 'chain-failed.png'), { force: true }); // written only by a failing run
  programId = (await generateKeyPairSigner()).address;
  localnet = await startLocalnet(programId);
  wallet = await testWallet();
  await rpc('requestAirdrop', [wallet.address, 100_000_000_000]);
  for (let i = 0; i < 100; i++) {
    if ((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value > 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  server = await serve(0);
  browser = await launchBrowser();
  await wallet.install(browser.context);
  page = await browser.context.newPage();
  await page.addInitScript(recordChanges);
  log = pageLog(page);
});

after(async () => {
  await browser?.close();
  await server?.close();
  await localnet?.stop();
});

/** @param {() => Promise<void>} body */
async function withLog(body) {
  try {
    await body();
  } catch (e) {
    console.error(log.join('\n'));
    const error = await page?.locator('#error').innerText().catch(() => '');
    if (error) console.error(`the page's error: ${error}`);
    await page?.screenshot({ path: join(SHOTS, 'chain-failed.png'), fullPage: true }).catch(() => {});
    throw e;
  }
}

/**
 * Records, from before the page's scripts run, what the status line says
 * (and whether the upload's rent is shown by then) and every change of the
 * run's progress label and turn list, in order: `window.__seen`.
 */
function recordChanges() {
  /** @type {Array<{ at: number, status?: string, rentShown?: boolean, progress?: string, verified?: number }>} */
  const seen = [];
  Object.assign(window, { __seen: seen });
  new MutationObserver((records) => {
    for (const r of records) {
      const target = /** @type {Element} */ (r.target);
      const at = Math.round(performance.now());
      // A text as this change set it (its added text node): the target's
      // own text is the last change's when several come in one call.
      if (target.id === 'status') seen.push({ at, status: r.addedNodes[0]?.textContent ?? '', rentShown: !!document.querySelector('#quote-info dd[data-term="upload rent"]') });
      else if (target.matches?.('#run-progress .label')) seen.push({ at, progress: r.addedNodes[0]?.textContent ?? '' });
      else if (target.id === 'turns') {
        for (const li of r.addedNodes) if (/** @type {Element} */ (li).classList?.contains('verified')) seen.push({ at, verified: Number(/** @type {HTMLElement} */ (li).dataset.turn) });
      }
    }
  }).observe(document, { childList: true, subtree: true });
}

/** Waits until the run on chain is done, or the page shows an error. */
async function chainDone(timeout = 240_000) {
  await page.waitForFunction(() => document.body.dataset.chainDone === 'true' || !document.getElementById('error')?.hidden, null, { timeout });
  const error = page.locator('#error');
  if (await error.isVisible()) throw new Error(`the page shows an error: ${await error.innerText()}`);
}

test('on chain: connect a Wallet Standard wallet, upload stories260K, quote, generate the reference run with one approval', () =>
  withLog(async () => {
    await page.goto(`${server.url}?cluster=${encodeURIComponent(localnet.url)}&program=${programId}`);
    await convertOnPage(page, join(MODELS, 'stories260K.bin'), join(MODELS, 'tok512.bin'));
    await page.selectOption('#wallet-select', { label: 'Curta Test Wallet' });
    await page.click('#connect-wallet');
    await page.locator('#wallet-info', { hasText: `Paying with Curta Test Wallet ${wallet.address}` }).waitFor();

    const uploadStart = Date.now();
    const signedBeforeUpload = wallet.state.signed;
    const balanceBeforeUpload = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    await page.evaluate(() => (/** @type {any} */ (window).__seen.length = 0));
    await page.click('#upload');
    await page.locator('#upload-progress .label', { hasText: 'uploaded:' }).waitFor({ timeout: 180_000 });
    const uploadSeconds = (Date.now() - uploadStart) / 1000;
    const uploadLabel = await page.locator('#upload-progress .label').innerText();
    console.log(`upload from the page: ${uploadLabel} (${uploadSeconds.toFixed(1)} s wall, ${wallet.state.signed - signedBeforeUpload} wallet signatures)`);
    // The status line says each step, the rent shown before the first one.
    /** @type {Array<{ status?: string, rentShown?: boolean }>} */
    const statuses = (await page.evaluate(() => /** @type {any} */ (window).__seen)).filter((/** @type {any} */ c) => c.status !== undefined);
    const steps = [/^Creating your config account…$/, /^Creating the model account…$/, /^Binding a weight account to each section: \d+ of \d+…$/, /^Writing the weights: [\d,]+ of [\d,]+ bytes…$/, /^Sealing the sections, then the model: \d+ of \d+…$/];
    let at = 0;
    for (const step of steps) {
      const i = statuses.findIndex((c, j) => j >= at && step.test(c.status ?? ''));
      assert.ok(i >= 0, `the status line says ${step} in order: ${JSON.stringify(statuses.map((c) => c.status))}`);
      assert.ok(statuses[i].rentShown, `the upload's rent is shown when it says ${statuses[i].status}`);
      at = i;
    }
    assert.deepEqual(await brokenFigures(page, '#quote-info dd'), []);
    // The quote was exact: the wallet paid the rent and config shown and the fees the upload counted, no more.
    const uploadFees = lamportsOf(/, ([\d.]+ SOL) in fees/.exec(uploadLabel)?.[1] ?? uploadLabel);
    const rent = lamportsOf(await page.locator('#quote-info dd[data-term="upload rent"]').innerText());
    const configWords = await page.locator('#quote-info dd[data-term="config account"]').innerText();
    const configRent = lamportsOf(configWords);
    const configFees = lamportsOf(/ and ([\d.]+ SOL) in fees/.exec(configWords)?.[1] ?? '');
    const balanceAfterUpload = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    assert.equal(balanceBeforeUpload - balanceAfterUpload, rent + configRent + configFees + uploadFees, 'the quoted rent and config, and the fees counted');
    // The balance line follows the transactions the wallet paid.
    assert.equal(await page.locator('#wallet-info').innerText(), `Paying with Curta Test Wallet ${wallet.address}: ${formatSol(balanceAfterUpload)}.`);
    const modelAddress = await page.locator('#model-info dd[data-term="address"]').innerText();
    assert.match(modelAddress, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    assert.match(await page.locator('#model-info dd[data-term="status"]').innerText(), /sealed/);
    assert.equal(await page.locator('#model-info dd[data-term="charges"]').innerText(), "the specification's table");

    await fillRun(page, REFERENCE);
    await page.click('#quote');
    await page.locator('#quote-info dd[data-term="turns"]').waitFor();
    assert.equal(await page.locator('#quote-info dd[data-term="turns"]').innerText(), `${REFERENCE.turns} (${REFERENCE.maxTokens} tokens)`);
    assert.deepEqual(await brokenFigures(page, '#quote-info dd, #model-info dd'), [], 'no figure breaks mid-word');

    const signedBefore = wallet.state.signed;
    const clicked = Date.now();
    await page.click('#run-chain');
    // Running: the session key has opened the run and cranks it (turns land
    // in a block or two on localnet, so this is the moment before they show).
    await page.locator('#status', { hasText: 'cranks the run' }).waitFor({ timeout: 120_000 });
    await page.screenshot({ path: join(SHOTS, 'chain-running.png'), fullPage: true });
    await chainDone();
    const wall = (Date.now() - clicked) / 1000;
    await page.screenshot({ path: join(SHOTS, 'chain-finished.png'), fullPage: true });

    assert.equal(await page.locator('#output-text').innerText(), REFERENCE.text);
    assert.equal(await page.locator('#turns li.verified').count(), REFERENCE.turns);
    assert.equal(await page.locator('#turns li.mismatch').count(), 0);
    assert.equal(await fact(page, 'turns landed'), `${REFERENCE.turns} of ${REFERENCE.turns} quoted`);
    assert.equal(await fact(page, 'verified'), `${REFERENCE.turns} of ${REFERENCE.turns}`);
    assert.equal(wallet.state.signed - signedBefore, 1, 'the wallet signs one transaction for the run');
    await chartShowsEveryTurn(REFERENCE.turns);
    const lastToken = await fact(page, 'click to last token');
    console.log(`on-chain reference run: click to last token ${lastToken} (page), ${wall.toFixed(2)} s click to done (test)`);
    await writeFile(join(SHOTS, 'timing.txt'), `on-chain reference run, curta-localnet: click to last token ${lastToken}; click to done ${wall.toFixed(2)} s\nupload from the page: ${uploadLabel}\n`);
  }),
);

/**
 * The compute-unit chart has a bar for each of `turns` turns, and its
 * labels lie inside it.
 * @param {number} turns
 */
async function chartShowsEveryTurn(turns) {
  assert.equal(await page.locator('#cu-plot rect').count(), turns, 'a bar for every turn');
  const outside = await page.evaluate(() => {
    const svg = /** @type {SVGSVGElement} */ (document.getElementById('cu-plot')).getBoundingClientRect();
    return [...document.querySelectorAll('#cu-plot text')]
      .filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left < svg.left || b.right > svg.right || b.top < svg.top || b.bottom > svg.bottom;
      })
      .map((t) => t.textContent);
  });
  assert.deepEqual(outside, [], 'no label is clipped');
}

test('on chain: bad input and a wallet that refuses get words, and nothing is paid', () =>
  withLog(async () => {
    const errorText = async () => {
      await page.locator('#error').waitFor({ state: 'visible', timeout: 60_000 });
      await page.waitForFunction(() => !document.body.classList.contains('busy'));
      return page.locator('#error').innerText();
    };
    const modelAddress = await page.locator('#model-address').inputValue();
    // An address that is not a Curta model: the wallet's own (a system account), and one with no account.
    await page.click('.tabs button[data-tab="address"]');
    await page.fill('#model-address', wallet.address);
    await page.click('#load-model');
    assert.equal(
      await errorText(),
      `${wallet.address} is not a Curta model on this cluster: ${wallet.address} is not a curta model: it belongs to 11111111111111111111111111111111, not the curta program ${programId}`,
    );
    const nobody = (await generateKeyPairSigner()).address;
    await page.fill('#model-address', nobody);
    await page.click('#load-model');
    assert.equal(await errorText(), `${nobody} is not a Curta model on this cluster: there is no model account at ${nobody} (closed, or another cluster?)`);
    await page.fill('#model-address', 'not-an-address');
    await page.click('#load-model');
    assert.equal(
      await errorText(),
      'The model address "not-an-address" is not a Solana address: "-" is not base58 (an address is 32 to 44 base58 characters, 1-9 and letters but 0, O, I and l, for 32 bytes).',
    );
    // A program address where the cluster has no program, or an account that is none.
    await page.fill('#program-id', nobody);
    await page.click('#connect-cluster');
    assert.equal(
      await errorText(),
      `There is no program at ${nobody} on ${localnet.url}: deploy curta there (curta deploy prints its address), or type the address it has on this cluster.`,
    );
    await page.fill('#program-id', wallet.address);
    await page.click('#connect-cluster');
    assert.equal(await errorText(), `${wallet.address} on ${localnet.url} is not a program but an account of 11111111111111111111111111111111: type the curta program's address.`);
    await page.fill('#program-id', programId);
    await page.click('#connect-cluster');
    await page.locator('#cluster-info', { hasText: `the program ${programId} is there` }).waitFor();
    await page.fill('#model-address', modelAddress);
    await page.click('#load-model');
    await page.locator('#model-info dd[data-term="status"]', { hasText: 'sealed' }).waitFor();
    // Max tokens past the context, on chain.
    await fillRun(page, { ...REFERENCE, maxTokens: 600 });
    await page.click('#quote');
    assert.equal(await errorText(), "Max tokens 600 is past the model's context of 512 tokens.");
    // A wallet that refuses: nothing is sent, the page says so.
    await fillRun(page, REFERENCE);
    const balance = (await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value;
    wallet.state.refuse = true;
    await page.click('#run-chain');
    assert.equal(await errorText(), 'The wallet Curta Test Wallet refused to sign: User rejected the request.');
    wallet.state.refuse = false;
    assert.equal((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value, balance);
  }),
);

test('on chain: a reload mid-run resumes the same run and pays nothing twice', () =>
  withLog(async () => {
    const signedBefore = wallet.state.signed;
    // The reload must come mid-run, and a run of 20 turns lands in under a
    // second here: once the page has verified two turns, its status polls go
    // unanswered, so it cannot see the rest land, nor close the run, before
    // the reload. Its transactions still reach the validator; the reloaded
    // page finds them by signature.
    const rpcOrigin = new URL(localnet.url).origin;
    const onRpc = (/** @type {URL} */ url) => url.origin === rpcOrigin;
    /** @type {import('playwright-core').Route[]} */
    const held = [];
    const holdStatuses = async (/** @type {import('playwright-core').Route} */ route) => {
      const polling = (route.request().postData() ?? '').includes('"getSignatureStatuses"');
      // A count cut short by the reload holds too: that page is going away.
      const verified = polling ? await page.locator('#turns li.verified').count().catch(() => Infinity) : 0;
      if (verified >= 2) held.push(route);
      else await route.continue().catch(() => {});
    };
    await page.route(onRpc, holdStatuses);
    await page.click('#run-chain');
    await page.locator('#turns li.verified').nth(1).waitFor({ timeout: 120_000 });
    const sessionKey = await fact(page, 'session key');
    const feesBefore = lamportsOf(await fact(page, 'fees so far'));
    await page.unroute(onRpc, holdStatuses);
    await page.reload();
    // The held polls belonged to the page before the reload.
    await Promise.all(held.map((route) => route.abort().catch(() => {})));
    // The page marks a resumed session; its status line may already have
    // moved past "Resuming" when little was left to do.
    await page.locator('body[data-chain-resumed="true"]').waitFor({ state: 'attached', timeout: 30_000 }).catch(async (e) => {
      throw new Error(`the reloaded page did not resume the run (status: ${await page.locator('#status').innerText()}): ${e.message}`);
    });
    await chainDone();
    await page.screenshot({ path: join(SHOTS, 'chain-resumed.png'), fullPage: true });
    assert.equal(await page.locator('#output-text').innerText(), REFERENCE.text);
    assert.equal(await page.locator('#turns li.verified').count(), REFERENCE.turns);
    assert.equal(await page.locator('#turns li.mismatch').count(), 0);
    assert.equal(wallet.state.signed - signedBefore, 1, 'the reload asks the wallet for nothing');
    // The figures of the whole run, not of what this load saw: every turn's
    // compute units, the click's time, and the fees of every transaction
    // the run paid (before the reload and after, failed ones too).
    await chartShowsEveryTurn(REFERENCE.turns);
    assert.match(await fact(page, 'click to last token'), /^\d+\.\d\d s$/);
    const feesShown = lamportsOf(await fact(page, 'fees so far'));
    const { fees: feesPaid } = await feesNaming(sessionKey);
    assert.ok(feesBefore > 0n && feesShown > feesBefore, `fees so far: ${feesBefore} before the reload, ${feesShown} at the end`);
    assert.equal(feesShown, feesPaid, 'fees so far are every fee the run paid');
    assert.equal(
      await page.locator('#prompt-bytes').innerText(),
      `(${Buffer.byteLength(await page.inputValue('#prompt'))} of 1,024 bytes)`,
      'the prompt set by the resume is counted',
    );
    // Progress moved a turn at a time, each only once that turn was verified.
    /** @type {Array<{ progress?: string, verified?: number }>} */
    const seen = await page.evaluate(() => /** @type {any} */ (window).__seen);
    console.log(`the resumed page's status lines:\n${seen.filter((/** @type {any} */ c) => c.status).map((/** @type {any} */ c) => `  ${c.at} ms: ${c.status}`).join('\n')}`);
    let verified = 0;
    let shown = 0;
    for (const c of seen) {
      if (c.verified !== undefined) verified = Math.max(verified, c.verified);
      const landed = c.progress === undefined ? null : /^(\d+) of \d+ turns landed$/.exec(c.progress);
      if (!landed) continue;
      const n = Number(landed[1]);
      assert.ok(n <= verified, `progress ${n} shown with ${verified} turns verified: ${JSON.stringify(seen.filter((c) => c.progress !== undefined || c.verified !== undefined).slice(-14))}`);
      assert.ok(n - shown <= 1, `progress went from ${shown} to ${n} at once`);
      shown = n;
    }
    assert.equal(shown, REFERENCE.turns);
    // The validator's history of the session key: funded once, opened once,
    // each of the 20 turns once, closed once, swept once.
    const history = await rpc('getSignaturesForAddress', [sessionKey, { commitment: 'confirmed' }]);
    const ok = history.filter((s) => s.err === null);
    const failed = history.filter((s) => s.err !== null);
    console.log(`resumed run: ${ok.length} transactions landed, ${failed.length} failed (StaleTurn reorderings)`);
    assert.equal(ok.length, 1 + 1 + REFERENCE.turns + 1 + 1);
    assert.equal((await rpc('getBalance', [sessionKey, { commitment: 'confirmed' }])).value, 0);
  }),
);

/** A cranker in a process of its own: the SDK's crankRun, signed by a key of its own. */
const WORKER = fileURLToPath(new URL('../../sdk/test-support/chain-worker.js', import.meta.url));
const WASM = fileURLToPath(new URL('../../target/wasm/curta_core.wasm', import.meta.url));

/** A 64-byte Solana keypair (seed, then public key). */
function keypairBytes() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const d = Buffer.from(/** @type {string} */ (privateKey.export({ format: 'jwk' }).d), 'base64url');
  const x = Buffer.from(/** @type {string} */ (publicKey.export({ format: 'jwk' }).x), 'base64url');
  return Uint8Array.from([...d, ...x]);
}

/**
 * The fees `payer` paid for the transactions that name `who` (failed ones
 * too: a failed transaction pays its fee), and how many of them landed.
 * @param {string} who
 * @param {string} [payer] the fee payer counted (default: any)
 */
async function feesNaming(who, payer) {
  const signatures = await rpc('getSignaturesForAddress', [who, { commitment: 'confirmed', limit: 1000 }]);
  let fees = 0n;
  let landed = 0;
  for (const s of signatures) {
    const tx = await rpc('getTransaction', [s.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }]);
    if (payer && tx.transaction.message.accountKeys[0] !== payer) continue;
    fees += BigInt(tx.meta.fee);
    if (s.err === null) landed += 1;
  }
  return { fees, landed };
}

test('on chain: sign once and let crankers finish: one approval, a cranker process sends the turns, every turn verified, the wallet pays its fees and the crank fees exactly', () =>
  withLog(async () => {
    const FEE = 10_000n;
    // The reload before left the wallet disconnected.
    await page.selectOption('#wallet-select', { label: 'Curta Test Wallet' });
    await page.click('#connect-wallet');
    await page.locator('#wallet-info', { hasText: `Paying with Curta Test Wallet ${wallet.address}` }).waitFor();
    await fillRun(page, REFERENCE);
    await page.check('#let-crankers');
    await page.fill('#crank-fee', String(FEE));
    await page.click('#quote');
    await page.locator('#quote-info dd[data-term="crank fee"]', { hasText: '10,000 lamports a turn' }).waitFor();
    const signedBefore = wallet.state.signed;
    const balanceBefore = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    await page.click('#run-chain');
    await page.locator('#status', { hasText: 'Crankers send the turns' }).waitFor({ timeout: 120_000 });
    const run = await fact(page, 'run');
    const sessionKey = await fact(page, 'session key');

    // The cranker: another key, funded by the faucet, in a process of its own.
    const bytes = keypairBytes();
    const cranker = (await createKeyPairSignerFromBytes(bytes)).address;
    await rpc('requestAirdrop', [cranker, 10_000_000_000]);
    for (let i = 0; i < 100 && (await rpc('getBalance', [cranker, { commitment: 'confirmed' }])).value === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
    }
    const crankerBefore = BigInt((await rpc('getBalance', [cranker, { commitment: 'confirmed' }])).value);
    const job = { action: 'crank', url: localnet.url, programId, payer: Array.from(bytes), journalDir: join(SHOTS, `cranker-${Date.now()}`), wasm: WASM, run, window: 8 };
    const child = spawn(process.execPath, [WORKER, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let said = '';
    child.stdout.on('data', (d) => (said += d));
    child.stderr.on('data', (d) => (said += d));
    const exited = new Promise((resolve) => child.on('close', resolve));
    await chainDone();
    assert.equal(await exited, 0, said);
    await page.screenshot({ path: join(SHOTS, 'chain-crankers.png'), fullPage: true });

    assert.equal(await page.locator('#output-text').innerText(), REFERENCE.text);
    assert.equal(await page.locator('#turns li.verified').count(), REFERENCE.turns);
    assert.equal(await page.locator('#turns li.mismatch').count(), 0);
    assert.equal(wallet.state.signed - signedBefore, 1, 'the wallet signs one transaction');
    const paid = FEE * BigInt(REFERENCE.turns);
    assert.equal(await fact(page, 'paid to crankers'), formatSol(paid));

    // Every transaction of the wallet's and the session key's since: the
    // funding, the opening, the close and the transfer back. The wallet
    // owns the model, so the royalty comes back to it.
    const { fees, landed } = await feesNaming(sessionKey);
    assert.equal(landed, 3, 'opened (by the wallet), closed, swept');
    const balanceAfter = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    assert.equal(balanceBefore - balanceAfter, fees + paid, 'the wallet paid the fees and the crank fees, no more');
    assert.equal((await rpc('getBalance', [sessionKey, { commitment: 'confirmed' }])).value, 0);
    // The cranker earned the fee of every turn, less its own fees.
    const crankerFees = (await feesNaming(cranker, cranker)).fees;
    const crankerAfter = BigInt((await rpc('getBalance', [cranker, { commitment: 'confirmed' }])).value);
    assert.equal(crankerAfter - crankerBefore, paid - crankerFees, 'the cranker earned every fee, less its own fees');
    console.log(`crankers mode: the wallet paid ${fees} in fees and ${paid} in crank fees; the cranker earned ${paid} for ${crankerFees} in fees`);
  }),
);

test('on chain: "Stop and send back" stops a run mid-way; everything but the fees spent comes back', () =>
  withLog(async () => {
    // 400 tokens: some 470 turns, several seconds even here, so there is
    // time to stop it.
    await fillRun(page, { ...REFERENCE, maxTokens: 400 });
    await page.uncheck('#let-crankers');
    const signedBefore = wallet.state.signed;
    const balanceBefore = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    await page.click('#run-chain');
    await page.locator('#turns li.verified').nth(2).waitFor({ timeout: 120_000 });
    assert.equal(await page.locator('#give-back').isEnabled(), true, 'the stop is usable mid-run');
    await page.click('#give-back');
    await page.waitForFunction(() => document.body.dataset.chainDone === 'stopped' || !document.getElementById('error')?.hidden, null, { timeout: 120_000 });
    const error = page.locator('#error');
    if (await error.isVisible()) throw new Error(`the page shows an error: ${await error.innerText()}`);
    const status = await page.locator('#status').innerText();
    assert.match(status, /^Stopped on chain after [\d,]+ of [\d,]+ turns, all verified; the run is closed;/);
    const landed = Number(/after ([\d,]+) of/.exec(status)?.[1].replace(/,/g, ''));
    assert.ok(landed >= 3 && landed < 400, status);
    assert.equal(await page.locator('#turns li.mismatch').count(), 0);
    assert.equal(wallet.state.signed - signedBefore, 1, 'stopping asks the wallet for nothing');
    // The wallet owns the model: the royalty comes back to it. What it lost
    // is the fees of the session key's transactions, failed ones included.
    const sessionKey = await fact(page, 'session key');
    const run = await fact(page, 'run');
    assert.equal(await rpc('getAccountInfo', [run, { commitment: 'confirmed' }]).then((r) => r.value), null, 'the run is closed');
    const { fees } = await feesNaming(sessionKey);
    const balanceAfter = BigInt((await rpc('getBalance', [wallet.address, { commitment: 'confirmed' }])).value);
    assert.equal(balanceBefore - balanceAfter, fees, 'the wallet paid the fees, no more');
    assert.equal(lamportsOf(await fact(page, 'fees so far')), fees, 'fees so far count the turns that landed after the stop');
    assert.equal((await rpc('getBalance', [sessionKey, { commitment: 'confirmed' }])).value, 0);
    console.log(`stopped after ${landed} turns: the wallet paid ${fees} lamports of fees, everything else came back`);
  }),
);
