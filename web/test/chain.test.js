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
import { MODELS, REFERENCE, SHOTS, convertOnPage, fact, fillRun } from './page.js';
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
    await page.click('#upload');
    await page.locator('#upload-progress .label', { hasText: 'uploaded:' }).waitFor({ timeout: 180_000 });
    const uploadSeconds = (Date.now() - uploadStart) / 1000;
    const uploadLabel = await page.locator('#upload-progress .label').innerText();
    console.log(`upload from the page: ${uploadLabel} (${uploadSeconds.toFixed(1)} s wall, ${wallet.state.signed - signedBeforeUpload} wallet signatures)`);
    const modelAddress = await page.locator('#model-info dd[data-term="address"]').innerText();
    assert.match(modelAddress, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    assert.match(await page.locator('#model-info dd[data-term="status"]').innerText(), /sealed/);
    assert.equal(await page.locator('#model-info dd[data-term="charges"]').innerText(), "the specification's table");

    await fillRun(page, REFERENCE);
    await page.click('#quote');
    await page.locator('#quote-info dd[data-term="turns"]').waitFor();
    assert.equal(await page.locator('#quote-info dd[data-term="turns"]').innerText(), `${REFERENCE.turns} (${REFERENCE.maxTokens} tokens)`);

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
    const lastToken = await fact(page, 'click to last token');
    console.log(`on-chain reference run: click to last token ${lastToken} (page), ${wall.toFixed(2)} s click to done (test)`);
    await writeFile(join(SHOTS, 'timing.txt'), `on-chain reference run, curta-localnet: click to last token ${lastToken}; click to done ${wall.toFixed(2)} s\nupload from the page: ${uploadLabel}\n`);
  }),
);

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
    assert.equal(await errorText(), '"not-an-address" is not a Solana address (base58, 32 bytes).');
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
    assert.equal(await fact(page, 'paid to crankers'), `${Number(paid) / 1e9} SOL`);

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
    assert.match(status, /^Stopped on chain after \d+ of \d+ turns, all verified; the run is closed;/);
    const landed = Number(/after (\d+) of/.exec(status)?.[1]);
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
    assert.equal((await rpc('getBalance', [sessionKey, { commitment: 'confirmed' }])).value, 0);
    console.log(`stopped after ${landed} turns: the wallet paid ${fees} lamports of fees, everything else came back`);
  }),
);
