// The storyteller (examples/storyteller) from JavaScript, on curta-localnet
// with the storyteller preloaded (make build-sbf's
// target/deploy/curta_storyteller.so) and stories260K uploaded: its client
// module (examples/storyteller/client/storyteller.js) asks for a story in
// one transaction signed by the user, the Rust `curta crank --once
// --min-fee 0` (target/debug/curta, another key, a separate process) sends
// the run's turns and delivers it, and `waitForStory` returns the native
// CLI's text for the same prompt. The run is gone, and the user paid
// exactly its transaction's fee, the request's final rent, the royalty,
// the crank fees and the delivery fee. Then the command
// (examples/storyteller/client/ask.mjs) as a process of its own, with a
// cranker beside it; then a request cancelled before anyone cranks it,
// everything but the fee back.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { createKeyPairSignerFromBytes, createKeyPairSignerFromPrivateKeyBytes, generateKeyPairSigner, getBase58Encoder } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';

import { crankRun, createCurtaClient, deliverRun, initConfig, sendAndConfirm, uploadModel } from '../../src/index.js';
import { REPO_ROOT, core as loadTestCore, nativeRun, stories260K } from '../../test-support/fixtures.js';
import { startLocalnet } from '../../test-support/localnet.js';
import {
  CALLBACK_LEN,
  HEADER_LEN,
  cancelStory,
  encodeRequest,
  fetchRequest,
  requestStory,
  waitForStory,
} from '../../../examples/storyteller/client/storyteller.js';

/** target/debug/curta (make's HOST_BUILD), or $CURTA_BIN. */
const CURTA_BIN = process.env.CURTA_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(REPO_ROOT, 'target'), 'debug/curta');
const STORYTELLER_SO = join(process.env.SBF_OUT_DIR ?? join(REPO_ROOT, 'target/deploy'), 'curta_storyteller.so');
const ASK = join(REPO_ROOT, 'examples/storyteller/client/ask.mjs');
const ROYALTY = 1_000n;
const DELIVERY_FEE = 20_000n;
const SOL = 1_000_000_000n;

let net;
let operator;
let programId;
let storyteller;
let model;
let scratch;

before(async () => {
  assert.ok(existsSync(STORYTELLER_SO), `${STORYTELLER_SO} is missing: run \`make build-sbf\``);
  programId = (await generateKeyPairSigner()).address;
  storyteller = (await generateKeyPairSigner()).address;
  net = await startLocalnet(programId, { programs: [[storyteller, STORYTELLER_SO]] });
  console.log(`curta-localnet at ${net.url} ready in ${net.startedIn.toFixed(1)} s, the storyteller at ${storyteller}`);
  scratch = mkdtempSync(join(tmpdir(), 'curta-js-storyteller-'));
  operator = createCurtaClient({ url: net.url, programId, payer: await createKeyPairSignerFromBytes(net.payer), secret: net.payer, core: await loadTestCore() });
  const { config } = await initConfig(operator);
  ({ model } = await uploadModel(operator, stories260K(), { config, royalty: ROYALTY }));
});

after(async () => {
  await net?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A program run as a process: its stdout when it exits 0. */
function run(bin, args, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(String(d)));
    child.stderr.on('data', (d) => err.push(String(d)));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out.join(''));
      else reject(new Error(`${bin} ${args.join(' ')} exited (${code ?? signal}):\n${err.join('')}${out.join('')}`));
    });
  });
}

/** `curta ARGS --output json` with the cranker's key: its object. */
async function curtaJson(args) {
  const global = ['--url', net.url, '--keypair', join(scratch, 'cranker.json'), '--state-dir', join(scratch, 'curta-state'), '--program-id', programId];
  const out = await run(CURTA_BIN, [...global, ...args, '--output', 'json'], { ...process.env, HOME: join(scratch, 'curta-home'), CURTA_STATE_DIR: '' });
  return JSON.parse(out.trim());
}

let cranker;
/** The cranker's key, made and funded once. */
async function crankerReady() {
  cranker ??= (async () => {
    if (!existsSync(join(scratch, 'cranker.json'))) await curtaJson(['keygen', '-o', join(scratch, 'cranker.json')]);
    await curtaJson(['airdrop', '10']);
  })();
  return cranker;
}

/** One pass of `curta crank --once --min-fee 0`, as JSON. */
async function crankOnce() {
  await crankerReady();
  return curtaJson(['crank', '--once', '--min-fee', '0', '--window', '8']);
}

/** A new user with `sol` SOL from the operator: its key, its keypair file's bytes, and its client. */
async function user(sol = 2n) {
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const key = await createKeyPairSignerFromPrivateKeyBytes(seed);
  const keypair = Uint8Array.from([...seed, ...getBase58Encoder().encode(key.address)]);
  await sendAndConfirm(operator, 'funding a user', [getTransferSolInstruction({ source: operator.payer, destination: key.address, amount: sol * SOL })]);
  return { key, keypair, client: createCurtaClient({ url: net.url, programId, payer: key, core: operator.core }) };
}

const balance = async (address) => (await operator.rpc.getBalance(address, { commitment: 'confirmed' }).send()).value;
const account = async (address) => (await operator.rpc.getAccountInfo(address, { encoding: 'base64', commitment: 'confirmed' }).send()).value;
const rent = async (length) => BigInt(await operator.rpc.getMinimumBalanceForRentExemption(BigInt(length), { commitment: 'confirmed' }).send());
/** A landed transaction's fee, as the validator charged it. */
async function feeOf(signature) {
  const tx = await operator.rpc.getTransaction(signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send();
  assert.equal(tx.meta.err, null, `${signature} landed`);
  return BigInt(tx.meta.fee);
}

test('encodeRequest writes Request::encode_into’s bytes', () => {
  const identity = new Uint8Array(32).fill(7);
  const data = encodeRequest({
    maxTokens: 12,
    temperatureQ16: 52_429,
    seed: 9n,
    royalty: 1_000n,
    modelIdentity: identity,
    crankFee: 10_000n,
    crankDeposit: 200_000n,
    deliveryFee: 30_000n,
    prompt: new TextEncoder().encode('Once upon a time'),
  });
  // instruction.rs: tag, then 4 + 4 + 8 + 8 + 32 + 8 + 8 + 8 bytes (REQUEST_FIXED_LEN), then the prompt.
  assert.equal(data.length, 1 + 80 + 16);
  const v = new DataView(data.buffer);
  assert.deepEqual(
    [data[0], v.getUint32(1, true), v.getUint32(5, true), v.getBigUint64(9, true), v.getBigUint64(17, true)],
    [0, 12, 52_429, 9n, 1_000n],
  );
  assert.deepEqual(data.subarray(25, 57), identity);
  assert.deepEqual([v.getBigUint64(57, true), v.getBigUint64(65, true), v.getBigUint64(73, true)], [10_000n, 200_000n, 30_000n]);
  assert.equal(new TextDecoder().decode(data.subarray(81)), 'Once upon a time');
  assert.equal(CALLBACK_LEN, 172, 'curta_interface::callback::len(3, 1)');
});

test('a user asks for a story in one transaction; curta crank finishes and delivers it; the user paid exactly its costs', async () => {
  const { key, client } = await user();
  const prompt = 'Once upon a time';
  const maxTokens = 12;
  const before = await balance(key.address);
  const asked = await requestStory(client, { storyteller, model, prompt, maxTokens, deliveryFee: DELIVERY_FEE });
  const q = asked.quote;
  const fee = await feeOf(asked.signature);
  assert.ok(q.crankFee > 0n && q.crankFee === q.recommendedCrankFee, `the default crank fee is the SDK's recommended one: ${q.crankFee}`);
  assert.equal(q.crankDeposit, q.crankFee * BigInt(q.turns));
  const runAccount = await account(asked.run);
  assert.equal(runAccount.owner, programId, 'the run is Curta’s');
  assert.equal(getBase64(runAccount.data[0]).length, q.accountLength, 'the run holds its state and the callback record');
  const requestAccount = await account(asked.request);
  assert.equal(requestAccount.owner, storyteller, 'the request is the storyteller’s');
  assert.equal(
    before - (await balance(key.address)),
    fee + BigInt(runAccount.lamports) + BigInt(requestAccount.lamports),
    'one transaction funded the run and the request',
  );
  const pending = await fetchRequest(client, asked.request);
  assert.deepEqual([pending.user, pending.run, pending.curta, pending.fulfilled], [key.address, asked.run, programId, false]);

  // The story, waited for while another key's curta cranks and delivers.
  const story = waitForStory(client, asked.request, { timeoutMs: 300_000 });
  const pass = await crankOnce();
  const got = await story;
  console.log(`cranker: ${JSON.stringify({ turns: pass.turns, earned: pass.earned, fees: pass.fees, deliveries: pass.deliveries })}`);
  const mine = pass.runs.find((r) => r.run === asked.run);
  assert.equal(mine?.turns, q.turns, `the cranker sent the quoted turns: ${JSON.stringify(pass)}`);
  assert.equal(BigInt(mine.earned), q.crankDeposit, 'and earned the fee for each');
  const delivered = pass.deliveries.find((d) => d.run === asked.run);
  assert.ok(delivered, `the run was delivered: ${JSON.stringify(pass)}`);
  assert.equal(BigInt(delivered.earned), DELIVERY_FEE);

  // The native replay's text, and what the SDK quoted.
  const native = nativeRun(stories260K(), { prompt, maxTokens });
  assert.equal(got.text, native.text, 'the story is the native CLI’s');
  assert.equal(got.length, new TextEncoder().encode(native.text).length);
  assert.deepEqual(got.bytes, q.text, 'and the quote’s');
  assert.equal(q.turns, native.turns);

  assert.equal(await account(asked.run), null, 'the run is gone');
  const request = await account(asked.request);
  const requestData = getBase64(request.data[0]);
  assert.equal(requestData.length, HEADER_LEN + got.length);
  const requestRent = await rent(requestData.length);
  assert.equal(BigInt(request.lamports), requestRent, 'the request keeps only its rent');
  const royalty = ROYALTY * BigInt(native.tokens.length);
  const spent = before - (await balance(key.address));
  assert.equal(
    spent,
    fee + requestRent + royalty + q.crankDeposit + DELIVERY_FEE,
    'the user paid its fee, the request’s rent, the royalty, the crank fees and the delivery fee, and got the rest back',
  );
  console.log(
    `story ${JSON.stringify(got.text)}: ${q.turns} turns; the user paid ${spent} lamports ` +
      `(${fee} fee, ${requestRent} rent, ${royalty} royalty, ${q.crankDeposit} crank fees at ${q.crankFee}, ${DELIVERY_FEE} delivery)`,
  );
});

test('the SDK alone cranks and delivers: crankRun, then deliverRun, which refuses what it cannot deliver in words', async () => {
  const { key, client } = await user();
  const deliverer = await user();
  const prompt = 'Once upon a time';
  const asked = await requestStory(client, { storyteller, model, prompt, maxTokens: 4, crankFee: 10_000n, deliveryFee: DELIVERY_FEE });
  // Not finished yet: refused in words, nothing sent.
  await assert.rejects(deliverRun(deliverer.client, asked.run), (e) => e instanceof RangeError && e.reason === 'notFinished' && /not finished/.test(e.message));
  await crankRun(deliverer.client, asked.run);
  const before = await balance(deliverer.key.address);
  const userBefore = await balance(key.address);
  const runLamports = BigInt((await account(asked.run)).lamports);
  const d = await deliverRun(deliverer.client, asked.run);
  assert.equal(d.earned, DELIVERY_FEE);
  assert.equal(await balance(deliverer.key.address), before + DELIVERY_FEE - (await feeOf(d.signature)), 'the deliverer earned the fee, less its transaction');
  const got = await waitForStory(client, asked.request, { timeoutMs: 10_000 });
  assert.equal(got.text, nativeRun(stories260K(), { prompt, maxTokens: 4 }).text);
  const requestRent = await rent(HEADER_LEN + got.length);
  const funded = await rent(HEADER_LEN + 128 * 4);
  assert.equal(
    (await balance(key.address)) - userBefore,
    runLamports - DELIVERY_FEE + (funded - requestRent),
    'the user got the run’s lamports but the fee, and the request’s unused text deposit',
  );
  // Delivered once: the run is gone.
  await assert.rejects(deliverRun(deliverer.client, asked.run), /delivered or closed already/);
  console.log(`deliverRun: ${d.computeUnits} compute units asked, fee ${d.fee}, earned ${d.earned}`);
});

test('ask.mjs asks, waits while a cranker works, and prints the story', async () => {
  const { keypair: bytes } = await user();
  const keypair = join(scratch, 'asker.json');
  writeFileSync(keypair, JSON.stringify([...bytes]));
  const prompt = 'Once upon a time';
  const asking = run(process.execPath, [ASK, '--url', net.url, '--keypair', keypair, '--storyteller', storyteller, '--model', model, '--prompt', prompt, '--max-tokens', '4', '--delivery-fee', String(DELIVERY_FEE), '--timeout', '300']);
  // Crank, pass after pass, until the command's run is delivered.
  let settled = false;
  asking.finally(() => (settled = true)).catch(() => {});
  for (let delivered = false; !delivered && !settled; ) {
    await new Promise((r) => setTimeout(r, 500));
    delivered = (await crankOnce()).deliveries.length > 0;
  }
  const out = await asking;
  console.log(out.trimEnd());
  const native = nativeRun(stories260K(), { prompt, maxTokens: 4 });
  assert.match(out, /^run: +\S+$/m);
  assert.match(out, /^request: +\S+$/m);
  assert.match(out, /waiting for a cranker \(`curta crank`\)/);
  assert.ok(out.includes(`${prompt}${native.text}\n`), `the story is the native CLI's: ${native.text}`);
});

test('a request cancelled before anyone cranks it gives back everything but its fees; waiting for it then fails in words', async () => {
  const { key, client } = await user();
  const before = await balance(key.address);
  const asked = await requestStory(client, { storyteller, model, prompt: 'Once', maxTokens: 4, crankFee: 10_000n, deliveryFee: DELIVERY_FEE });
  assert.equal(asked.quote.crankFee, 10_000n);
  const cancelled = await cancelStory(client, asked.request, asked.run);
  assert.equal(await account(asked.run), null, 'the run is closed');
  assert.equal(await account(asked.request), null, 'the request is closed');
  assert.equal(before - (await balance(key.address)), (await feeOf(asked.signature)) + (await feeOf(cancelled.signature)), 'only the fees were spent');
  await assert.rejects(waitForStory(client, asked.request, { timeoutMs: 1_000 }), /is gone: it was cancelled/);
});

/** @param {string} b64 */
function getBase64(b64) {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}
