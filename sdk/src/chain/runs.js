// @ts-check
// Runs: opening one (its account created with its rent and escrow, the
// prompt staged first when it is long), reading one, closing one, and
// recovering an account never initialized (client/src/runs.rs).
//
// A run's key is derived from the secret, the model and the parameters
// (keys.js): the same question finds the same run, already open or half
// opened by a process that was stopped, instead of paying for a second.

import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system';

import { optionsQ16, promptBytes } from '../core.js';
import { readStateInfo } from '../format.js';
import { requireCore, requireSecret } from './client.js';
import { fetchModel, fetchRawAccount, fetchRunAccount, fetchWeight } from './fetch.js';
import * as ix from './instructions.js';
import { runSigner } from './keys.js';
import { checkModelIdentity } from './models.js';
import { quoteRun } from './quote.js';
import { rentFor } from './rent.js';
import { addLanded, emptySummary, sendAndConfirm, settle } from './transactions.js';

/** The longest prompt a run takes, in bytes. */
export { MAX_PROMPT_BYTES } from '../layout.js';

/**
 * Run parameters.
 * @typedef {object} RunParams
 * @property {string | Uint8Array} prompt UTF-8, no zero byte, at most 1,024 bytes
 * @property {number} maxTokens 1 to the model's context
 * @property {number | string} [temperature] a decimal, 0 to 16 (0.8 is 52,429 in 16 fractional bits)
 * @property {number} [temperatureQ16]
 * @property {bigint | number} [seed]
 * @property {string} [label] tells apart runs with the same parameters meant to coexist
 * @property {bigint | number} [crankFee] lamports each turn pays whoever sends it (0: none)
 */

/**
 * Checks run parameters against a model, in the client core's words, and
 * gives them in the form the chain takes. With the model's section zero,
 * it also checks that the prompt's tokens and max tokens fit the context.
 * @param {import('../core.js').CoreWasm} core
 * @param {RunParams} p
 * @param {{ configBytes: Uint8Array }} model
 * @param {Uint8Array | null} [zero]
 */
export function runParams(core, p, model, zero = null) {
  const prompt = promptBytes(p.prompt);
  if (!Number.isInteger(p.maxTokens) || p.maxTokens < 0 || p.maxTokens > 0xffffffff) {
    throw new RangeError(`max tokens ${p.maxTokens} is not a whole number of tokens`);
  }
  const temperatureQ16 = optionsQ16(core, p);
  const seed = BigInt(p.seed ?? 0);
  if (seed < 0n || seed >= 1n << 64n) throw new RangeError(`seed ${seed} is out of range: 0 to 2^64 - 1`);
  core.checkRun(model.configBytes, zero, prompt, { maxTokens: p.maxTokens, temperatureQ16, seed });
  return { prompt, maxTokens: p.maxTokens, temperatureQ16, seed, label: p.label ?? '' };
}

/**
 * The transactions that open a run: the creation (when given) with the
 * opening when the prompt fits one transaction, else the creation with the
 * first part of the prompt staged, more staging if needed, and the opening
 * with the rest, as the client core packs them (core/src/client/packing.rs).
 * @param {import('./client.js').CurtaClient} client
 * @param {{ config: any, model: any, royalty: bigint, modelIdentity: Uint8Array }} model
 * @param {import('@solana/kit').TransactionSigner} run
 * @param {ReturnType<typeof runParams>} p
 * @param {{ fee: bigint, deposit: bigint }} crank what each turn pays its sender, from a deposit
 * @param {import('@solana/kit').Instruction | null} create
 * @param {boolean} [openerPays] whether the client's payer (the opener) pays the transactions
 */
export function openTransactions(client, model, run, p, crank, create, openerPays = true) {
  const program = client.programId;
  const core = requireCore(client, 'openTransactions');
  const open = (/** @type {number} */ staged) =>
    ix.openRun(program, {
      config: model.config,
      model: model.model,
      run,
      opener: client.payer,
      maxTokens: p.maxTokens,
      temperatureQ16: p.temperatureQ16,
      seed: p.seed,
      royalty: model.royalty,
      modelIdentity: model.modelIdentity,
      crankFee: crank.fee,
      crankDeposit: crank.deposit,
      staged,
      prompt: p.prompt.subarray(staged),
    });
  // Legacy messages, as this client sends them.
  return core.openSteps('legacy', p.prompt.length, create !== null, openerPays).map((s) => [
    ...(s.create && create ? [create] : []),
    ...(s.stage ? [ix.writePrompt(program, { run, offset: s.stage[0], bytes: p.prompt.subarray(s.stage[0], s.stage[1]) })] : []),
    ...(s.open !== null ? [open(s.open)] : []),
  ]);
}

/**
 * What the client core is told of an opening of `p` on `model` by the
 * client's payer at `run` (`CoreWasm.openNext`'s setup), and the model's
 * keys the opening names.
 * @param {import('./client.js').CurtaClient} client
 * @param {Awaited<ReturnType<typeof fetchModel>>} model
 * @param {string} run the run's address
 * @param {ReturnType<typeof runParams>} p
 * @param {bigint} crankDeposit
 */
export function opening(client, model, run, p, crankDeposit) {
  return {
    setup: { program: client.programId, run, model: model.address, opener: client.payer.address, promptLength: p.prompt.length, maxTokens: p.maxTokens, crankDeposit },
    keys: { config: model.config, model: model.address, royalty: model.royalty, modelIdentity: model.modelIdentity },
  };
}

/**
 * What opening did.
 * @typedef {object} Opened
 * @property {string} run the run's address
 * @property {boolean} openedNow false when it was open already (nothing was sent)
 * @property {number} accountLength
 * @property {bigint} deposit lamports put in the run: its rent, the escrow and the crank deposit
 * @property {bigint} escrow
 * @property {{ fee: bigint, deposit: bigint }} crank what each turn pays its sender, and the deposit for it
 * @property {number} transactions
 * @property {import('./transactions.js').Summary} summary
 */

/**
 * Opens the run of `params` on a sealed model (or finds it open), with the
 * royalty and identity read from the model account. With `params.crankFee`,
 * each turn pays whoever sends it that many lamports, from a deposit of the
 * fee for each of the run's turns (the quote's): crankers can then finish
 * the run (`curta crank`) while its opener is away.
 *
 * With `options.funder`, another signer (a wallet) pays the opening's
 * transactions and the run's deposits, and sends the opener `fundOpener`
 * lamports in the first of them, while the client's payer stays the opener,
 * who signs, closes the run and gets its lamports back: a wallet approves
 * one transaction and a key of the page's does the rest.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} modelAddress
 * @param {RunParams} params
 * @param {{ artifact?: Uint8Array, funder?: import('@solana/kit').TransactionSigner, fundOpener?: bigint }} [options]
 *   `artifact`: the model's weights, to price the crank deposit without fetching them
 * @returns {Promise<Opened>}
 */
export async function openRun(client, modelAddress, params, options = {}) {
  const secret = requireSecret(client, 'openRun');
  const core = requireCore(client, 'openRun');
  await settle(client);
  const model = await fetchModel(client, modelAddress);
  checkModelIdentity(core, model);
  const zero = model.sections[0].weight ? (await fetchWeight(client, model.sections[0].weight)).bytes : null;
  const p = runParams(core, params, model, zero);
  const run = await runSigner(core, secret, { model: modelAddress, ...p });
  const fee = BigInt(params.crankFee ?? 0);
  const crank = fee > 0n ? { fee, deposit: (await quoteRun(client, modelAddress, params, { artifact: options.artifact })).crankDeposit } : { fee: 0n, deposit: 0n };
  const { setup, keys } = opening(client, model, run.address, p, crank.deposit);
  const { accountLength } = core.openNext(model.data, setup);
  const rent = await rentFor(client, accountLength);
  const found = await fetchRawAccount(client, run.address);
  const next = core.openNext(model.data, { ...setup, rent }, found);
  const deposit = /** @type {bigint} */ (next.deposit);
  const funder = options.funder ?? client.payer;
  const sender = options.funder ? { ...client, payer: options.funder } : client;
  const summary = emptySummary();
  /** @type {Opened} */
  const out = { run: run.address, openedNow: next.step !== 'opened', accountLength, deposit, escrow: next.escrow, crank, transactions: 0, summary };
  if (next.step === 'opened') return out;
  let txs;
  if (next.step === 'create') {
    const create = getCreateAccountInstruction({ payer: funder, newAccount: run, lamports: deposit, space: accountLength, programAddress: client.programId });
    txs = openTransactions(client, keys, run, p, crank, create, !options.funder);
    if (options.fundOpener) txs[0].unshift(getTransferSolInstruction({ source: funder, destination: client.payer.address, amount: options.fundOpener }));
  } else {
    // Created by an attempt that stopped before the opening landed: stage
    // again from the start (the same bytes to the same place) and open.
    txs = openTransactions(client, keys, run, p, crank, null, !options.funder);
  }
  for (let i = 0; i < txs.length; i++) {
    const l = await sendAndConfirm(sender, i + 1 === txs.length ? 'opening the run' : 'staging the prompt', txs[i]);
    addLanded(summary, l.slot, l.fee);
    out.transactions += 1;
  }
  return out;
}

/**
 * A run, read: its header, its state's progress, prompt and text.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} address
 */
export async function fetchRun(client, address) {
  const core = requireCore(client, 'fetchRun');
  const r = await fetchRunAccount(client, address);
  const model = await fetchModel(client, r.model);
  const info = readStateInfo(r.state);
  const layout = core.stateLayout(model.configBytes, info.promptLength, info.maxTokens);
  const textBytes = r.state.slice(layout.outputText, layout.outputText + Math.min(info.textLength, layout.x - layout.outputText));
  const dv = new DataView(r.state.buffer, r.state.byteOffset + layout.outputTokens, 4 * info.generated);
  return {
    ...r,
    model: r.model,
    info,
    prompt: r.state.slice(layout.prompt, layout.prompt + info.promptLength),
    tokens: Array.from({ length: info.generated }, (_, i) => dv.getUint32(4 * i, true)),
    textBytes,
    text: new TextDecoder().decode(textBytes),
  };
}

/**
 * Closes a run (complete or not): its rent and unspent escrow go back to the opener.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} address
 * @returns {Promise<{ recovered: bigint, signature: string, fee: bigint }>}
 */
export async function closeRun(client, address) {
  const core = requireCore(client, 'closeRun');
  await settle(client);
  const found = await fetchRawAccount(client, address);
  const recovered = core.closeCheck({ program: client.programId, run: address, signer: client.payer.address }, found);
  const l = await sendAndConfirm(client, 'closing the run', [ix.closeRun(client.programId, { run: /** @type {any} */ (address), opener: client.payer })]);
  return { recovered, signature: l.signature, fee: l.fee };
}

/**
 * Recovers the lamports of an account created for the program but never
 * initialized (a run whose opening never came); the account signs.
 * @param {import('./client.js').CurtaClient} client
 * @param {import('@solana/kit').TransactionSigner} account
 * @param {string} [recipient] the payer by default
 */
export async function reclaim(client, account, recipient) {
  await settle(client);
  const a = await fetchRawAccount(client, account.address);
  if (!a) throw new Error(`there is no account at ${account.address} to reclaim`);
  if (a.owner !== client.programId) throw new Error(`${account.address} belongs to ${a.owner}, not the curta program: nothing to reclaim`);
  const l = await sendAndConfirm(client, `reclaiming ${account.address}`, [
    ix.reclaim(client.programId, { account, recipient: /** @type {any} */ (recipient ?? client.payer.address) }),
  ]);
  return { recovered: a.lamports, signature: l.signature, fee: l.fee };
}

/**
 * The run account a client derives for these parameters (to reclaim it,
 * or find it), without sending anything.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} modelAddress
 * @param {RunParams} params
 */
export async function runAccountSigner(client, modelAddress, params) {
  const secret = requireSecret(client, 'runAccountSigner');
  const core = requireCore(client, 'runAccountSigner');
  const model = await fetchModel(client, modelAddress);
  return runSigner(core, secret, { model: modelAddress, ...runParams(core, params, model) });
}
