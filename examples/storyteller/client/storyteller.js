// @ts-check
// A client of the storyteller (examples/storyteller): ask for a story in one
// transaction, wait for it to land in the request account, or cancel it.
//
// `requestStory` creates a run account with a fresh key and sends the
// storyteller's `request`, which opens the Curta run by CPI naming its own
// `receive` as the run's callback (the user its refund address). A cranker
// (`curta crank`) then sends the run's turns, paid from the crank deposit,
// and Curta's `deliver`, paid the delivery fee: `receive` copies the story
// into the request account and the user gets back every unspent lamport.
// The user signs once. Only the SDK (`@curta/sdk`) and @solana/kit are used.

import {
  AccountRole,
  callbackLength,
  fetchModel,
  fits,
  generateKeyPairSigner,
  getAddressDecoder,
  getAddressEncoder,
  getCreateAccountInstruction,
  getProgramDerivedAddress,
  getSetComputeUnitLimitInstruction,
  quoteRun,
  RUN_HEADER_LEN,
  runParams,
  sendAndConfirm,
} from './deps.js';

/** The storyteller's instruction tags (src/instruction.rs). */
export const REQUEST = 0;
export const FULFILL = 1;
export const CANCEL = 2;
export const RECEIVE = 3;

/**
 * The callback record `request` names, in bytes: three accounts (request,
 * run, user) and `receive`'s one-byte data. Mirrors
 * `curta_storyteller::instruction::CALLBACK_LEN`; the run account holds it
 * after the state.
 */
export const CALLBACK_LEN = callbackLength(3, 1);

/** The request account (src/state.rs): its tag and where its fields lie. */
export const REQUEST_TAG = 'STORYRQ1';
export const REQUEST_SEED = 'request';
export const FULFILLED = 137;
export const TEXT_LEN = 140;
export const HEADER_LEN = 144;

const SYSTEM_PROGRAM = /** @type {import('@solana/kit').Address} */ ('11111111111111111111111111111111');
/** `request`'s compute units, with room: about 9,000 on the SBF VM, the CPI to `open_run` included (README, "Compute units"). */
const REQUEST_CU = 20_000;
/** What each bump seed tried after 255 costs `request` (finding the request's address). */
const BUMP_CU = 1_500;

/**
 * `request`'s instruction data, exactly as `Request::encode_into` writes it
 * (examples/storyteller/src/instruction.rs): tag 0, then max tokens u32,
 * temperature u32 (16 fractional bits), seed u64, royalty u64, model
 * identity (32 bytes), crank fee u64, crank deposit u64, delivery fee u64,
 * all little-endian, then the prompt (the rest).
 * @param {{ maxTokens: number, temperatureQ16: number, seed: bigint, royalty: bigint, modelIdentity: Uint8Array, crankFee: bigint, crankDeposit: bigint, deliveryFee: bigint, prompt: Uint8Array }} r
 */
export function encodeRequest(r) {
  const out = new Uint8Array(81 + r.prompt.length);
  const v = new DataView(out.buffer);
  out[0] = REQUEST;
  v.setUint32(1, r.maxTokens, true);
  v.setUint32(5, r.temperatureQ16, true);
  v.setBigUint64(9, BigInt(r.seed), true);
  v.setBigUint64(17, BigInt(r.royalty), true);
  if (r.modelIdentity.length !== 32) throw new RangeError('the model identity is 32 bytes');
  out.set(r.modelIdentity, 25);
  v.setBigUint64(57, BigInt(r.crankFee), true);
  v.setBigUint64(65, BigInt(r.crankDeposit), true);
  v.setBigUint64(73, BigInt(r.deliveryFee), true);
  out.set(r.prompt, 81);
  return out;
}

/**
 * The request account of a run: the storyteller's address `["request", run]`.
 * @param {string} storyteller
 * @param {string} run
 * @returns {Promise<{ request: import('@solana/kit').Address, bump: number }>}
 */
export async function requestAddress(storyteller, run) {
  const [request, bump] = await getProgramDerivedAddress({
    programAddress: /** @type {any} */ (storyteller),
    seeds: [REQUEST_SEED, getAddressEncoder().encode(/** @type {any} */ (run))],
  });
  return { request, bump };
}

/**
 * Asks the storyteller for a story, in one transaction signed by the
 * client's payer (the user) and a fresh run key: [compute-unit limit,
 * System `create_account` of the run, the storyteller's `request`].
 * The client's `programId` is the Curta program's.
 * @param {import('../../../sdk/src/chain/client.js').CurtaClient} client with `core` (quoting replays the run)
 * @param {{ storyteller: string, model: string, prompt: string | Uint8Array, maxTokens: number, temperatureQ16?: number, seed?: bigint | number, crankFee?: bigint | number, deliveryFee?: bigint | number, artifact?: Uint8Array }} o
 *   `crankFee`: lamports a turn (the SDK's recommended fee by default); `deliveryFee`: lamports the delivery pays its
 *   sender (that recommended fee by default: a turn's message costs more than a delivery's); `artifact`: the model's
 *   weights, to quote without fetching them
 */
export async function requestStory(client, o) {
  if (!client.core) throw new TypeError('requestStory quotes the run in the WebAssembly module: give createCurtaClient core: await loadCore()');
  const model = await fetchModel(client, o.model);
  const params = { prompt: o.prompt, maxTokens: o.maxTokens, temperatureQ16: o.temperatureQ16 ?? 0, seed: BigInt(o.seed ?? 0) };
  const p = runParams(client.core, params, model);
  // The turns, as the program will plan them (the model's charge table,
  // its config's allowance): the crank deposit is the fee for each.
  const q = await quoteRun(client, o.model, params, { artifact: o.artifact });
  const crankFee = BigInt(o.crankFee ?? q.recommendedCrankFee);
  const deliveryFee = BigInt(o.deliveryFee ?? q.recommendedCrankFee);
  const crankDeposit = crankFee * BigInt(q.turns);
  // The run account: the state and the callback record after it.
  const accountLength = RUN_HEADER_LEN + client.core.stateSize(model.configBytes, p.prompt.length, p.maxTokens) + CALLBACK_LEN;
  const rent = BigInt(await client.rpc.getMinimumBalanceForRentExemption(BigInt(accountLength), { commitment: client.commitment }).send());
  const escrow = model.royalty * BigInt(p.maxTokens);
  const deposit = rent + escrow + crankDeposit + deliveryFee;

  const run = await generateKeyPairSigner();
  const { request, bump } = await requestAddress(o.storyteller, run.address);
  const data = encodeRequest({
    ...p,
    royalty: model.royalty,
    modelIdentity: model.modelIdentity,
    crankFee,
    crankDeposit,
    deliveryFee,
  });
  const ixs = [
    getSetComputeUnitLimitInstruction({ units: REQUEST_CU + BUMP_CU * (255 - bump) }),
    getCreateAccountInstruction({ payer: client.payer, newAccount: run, lamports: deposit, space: accountLength, programAddress: client.programId }),
    {
      programAddress: /** @type {import('@solana/kit').Address} */ (o.storyteller),
      accounts: [
        { address: client.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: client.payer },
        { address: request, role: AccountRole.WRITABLE },
        { address: run.address, role: AccountRole.WRITABLE_SIGNER, signer: run },
        { address: model.config, role: AccountRole.READONLY },
        { address: /** @type {import('@solana/kit').Address} */ (o.model), role: AccountRole.READONLY },
        { address: client.programId, role: AccountRole.READONLY },
        { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
      ],
      data,
    },
  ];
  if (!fits(client, ixs)) {
    throw new RangeError(`the prompt is ${p.prompt.length} bytes: too long for the request's one transaction (1,232 bytes), which the storyteller needs (it stages no prompt)`);
  }
  const landed = await sendAndConfirm(client, 'asking the storyteller for a story', ixs);
  return {
    run: run.address,
    request,
    signature: landed.signature,
    quote: { turns: q.turns, tokens: q.tokens, text: q.text, royalty: model.royalty, escrow, crankFee, crankDeposit, deliveryFee, accountLength, rent, deposit, recommendedCrankFee: q.recommendedCrankFee },
  };
}

/**
 * A request account, read: null when there is none.
 * @param {import('../../../sdk/src/chain/client.js').CurtaClient} client
 * @param {string} request
 */
export async function fetchRequest(client, request) {
  const { value } = await client.rpc.getAccountInfo(/** @type {any} */ (request), { encoding: 'base64', commitment: client.commitment }).send();
  if (!value) return null;
  const data = Uint8Array.from(atob(/** @type {any} */ (value.data)[0]), (c) => c.charCodeAt(0));
  if (data.length < HEADER_LEN || new TextDecoder().decode(data.subarray(0, 8)) !== REQUEST_TAG) {
    throw new Error(`${request} is not a storyteller request (owned by ${value.owner})`);
  }
  const at = (/** @type {number} */ o) => getAddressDecoder().decode(data.subarray(o, o + 32));
  const fulfilled = data[FULFILLED] === 1;
  const length = new DataView(data.buffer).getUint32(TEXT_LEN, true);
  return {
    storyteller: value.owner,
    lamports: BigInt(value.lamports),
    dataLength: data.length,
    user: at(8),
    run: at(40),
    curta: at(72),
    modelIdentity: data.slice(104, 136),
    fulfilled,
    textBytes: fulfilled ? data.slice(HEADER_LEN, HEADER_LEN + length) : new Uint8Array(0),
  };
}

/**
 * Waits until the story lands in the request account (its byte 137, fulfilled, is 1).
 * @param {import('../../../sdk/src/chain/client.js').CurtaClient} client
 * @param {string} request
 * @param {{ timeoutMs?: number, pollMs?: number }} [options] ten minutes, every half second, by default
 * @returns {Promise<{ text: string, length: number, bytes: Uint8Array }>}
 */
export async function waitForStory(client, request, options = {}) {
  const timeoutMs = options.timeoutMs ?? 600_000;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await fetchRequest(client, request);
    if (!r) throw new Error(`the request ${request} is gone: it was cancelled (or never made), so no story will come`);
    if (r.fulfilled) return { text: new TextDecoder().decode(r.textBytes), length: r.textBytes.length, bytes: r.textBytes };
    if (Date.now() >= until) {
      throw new Error(
        `no story in ${request} after ${timeoutMs / 1000} s: no cranker has finished and delivered its run ${r.run} yet ` +
          '(run `curta crank`, or cancel the request to take everything back)',
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
  }
}

/**
 * Cancels a request not fulfilled: the storyteller closes the run through
 * Curta and the request, and the user (the client's payer, who asked) gets
 * every lamport of both back.
 * @param {import('../../../sdk/src/chain/client.js').CurtaClient} client
 * @param {string} request
 * @param {string} run
 */
export async function cancelStory(client, request, run) {
  const r = await fetchRequest(client, request);
  if (!r) throw new Error(`there is no request at ${request} to cancel`);
  if (r.user !== client.payer.address) throw new Error(`request ${request} was made by ${r.user}: only it can cancel`);
  if (r.fulfilled) throw new Error(`request ${request} is fulfilled: the story stays`);
  const landed = await sendAndConfirm(client, 'cancelling the story', [
    {
      programAddress: /** @type {import('@solana/kit').Address} */ (r.storyteller),
      accounts: [
        { address: client.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: client.payer },
        { address: /** @type {import('@solana/kit').Address} */ (request), role: AccountRole.WRITABLE },
        { address: /** @type {import('@solana/kit').Address} */ (run), role: AccountRole.WRITABLE },
        { address: r.curta, role: AccountRole.READONLY },
      ],
      data: new Uint8Array([CANCEL]),
    },
  ]);
  return { signature: landed.signature };
}
