#!/usr/bin/env node
// Asks the storyteller for a story from the command line, and waits for it:
//
//   node examples/storyteller/client/ask.mjs --url URL --keypair PATH \
//     --storyteller ADDR --model ADDR --prompt "Once upon a time" \
//     [--max-tokens N] [--temperature-q16 T] [--seed S] [--crank-fee L] \
//     [--delivery-fee L] [--program-id ADDR] [--timeout SECONDS]
//
// --url and --keypair as the `curta` CLI (and the Solana CLI) take them: a
// URL or a moniker (localhost, devnet, testnet, mainnet-beta, or l, d, t,
// m), localhost by default; a keypair file (a JSON array of 64 bytes),
// ~/.config/solana/id.json by default. The Curta program is the model
// account's owner unless --program-id names it. Someone must crank the
// run: `curta crank` sends its turns and then delivers the story.

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { createCurtaClient, createKeyPairSignerFromBytes, loadCore } from './deps.js';
import { requestStory, waitForStory } from './storyteller.js';

const MONIKERS = {
  localhost: 'http://127.0.0.1:8899',
  devnet: 'https://api.devnet.solana.com',
  testnet: 'https://api.testnet.solana.com',
  'mainnet-beta': 'https://api.mainnet-beta.solana.com',
};
const SHORT = { l: 'localhost', d: 'devnet', t: 'testnet', m: 'mainnet-beta' };

/** @param {string | undefined} text @param {string} flag */
function lamports(text, flag) {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new Error(`${flag} "${text}" is not a whole number of lamports`);
  return BigInt(text);
}

async function main() {
  const { values: a } = parseArgs({
    options: {
      url: { type: 'string', short: 'u', default: 'localhost' },
      keypair: { type: 'string', short: 'k', default: join(homedir(), '.config/solana/id.json') },
      storyteller: { type: 'string' },
      model: { type: 'string' },
      prompt: { type: 'string' },
      'max-tokens': { type: 'string', default: '32' },
      'temperature-q16': { type: 'string', default: '0' },
      seed: { type: 'string', default: '0' },
      'crank-fee': { type: 'string' },
      'delivery-fee': { type: 'string' },
      'program-id': { type: 'string' },
      timeout: { type: 'string', default: '600' },
    },
  });
  for (const flag of ['storyteller', 'model', 'prompt']) if (!a[flag]) throw new Error(`--${flag} is required`);
  const url = MONIKERS[SHORT[a.url] ?? a.url] ?? a.url;
  if (!/^https?:\/\//.test(url)) throw new Error(`--url "${a.url}" is neither an http(s) URL nor a moniker (localhost, devnet, testnet, mainnet-beta)`);
  let secret;
  try {
    secret = new Uint8Array(JSON.parse(await readFile(a.keypair, 'utf8')));
  } catch (e) {
    throw new Error(`cannot read the keypair file ${a.keypair}: ${e.message}`);
  }
  const payer = await createKeyPairSignerFromBytes(secret);
  let programId = a['program-id'];
  if (!programId) {
    // The Curta program: the model account's owner.
    const probe = createCurtaClient({ url, programId: payer.address, payer });
    const { value } = await probe.rpc.getAccountInfo(/** @type {any} */ (a.model), { encoding: 'base64' }).send();
    if (!value) throw new Error(`there is no model account at ${a.model} on ${url}`);
    programId = value.owner;
  }
  const client = createCurtaClient({ url, programId, payer, core: await loadCore() });
  const asked = await requestStory(client, {
    storyteller: a.storyteller,
    model: a.model,
    prompt: a.prompt,
    maxTokens: Number(a['max-tokens']),
    temperatureQ16: Number(a['temperature-q16']),
    seed: BigInt(a.seed),
    crankFee: lamports(a['crank-fee'], '--crank-fee'),
    deliveryFee: lamports(a['delivery-fee'], '--delivery-fee'),
  });
  const q = asked.quote;
  console.log(`asked in ${asked.signature}`);
  console.log(`run:     ${asked.run}`);
  console.log(`request: ${asked.request}`);
  console.log(
    `${q.turns} turns at ${q.crankFee} lamports each (deposit ${q.crankDeposit}), delivery fee ${q.deliveryFee}, ` +
      `royalty ${q.royalty} a token; the run holds ${q.deposit} lamports until it is delivered`,
  );
  console.log('waiting for a cranker (`curta crank`) to finish the run and deliver the story...');
  const story = await waitForStory(client, asked.request, { timeoutMs: Number(a.timeout) * 1000 });
  console.log(`story (${story.length} bytes): ${a.prompt}${story.text}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`error: ${e?.message ?? e}`);
    process.exit(1);
  },
);
