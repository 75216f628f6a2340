// @ts-check
// What a run will cost before it is opened, like `curta quote MODEL`: the
// client core's quote in the module (core/src/client/quote.rs, which the
// CLI runs natively), with the opening's transactions as this client packs
// them and the cluster's fee and rent.

import { generateKeyPairSigner } from '@solana/kit';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getCreateAccountInstruction } from '@solana-program/system';

import { requireCore } from './client.js';
import { fromBase64 } from './bytes.js';
import { fetchConfig, fetchModel } from './fetch.js';
import { checkArtifact, fetchArtifact } from './models.js';
import { checkAllowance } from './replay.js';
import { rentFor } from './rent.js';
import { openTransactions, opening, runParams } from './runs.js';
import * as ix from './instructions.js';
import { feeForMessage, lamportsPerSignature } from './transactions.js';

/**
 * A run's cost.
 * @typedef {object} Quote
 * @property {number} turns the turns the run takes (the module's replay)
 * @property {number} turnsAtMost without an early end token (the module's quote; under another allowance than the default, which the module's quote does not take, the replay's turns)
 * @property {import('../format.js').ChargeTable} charges the model's charge table, which every turn is planned with
 * @property {number} allowance the config's turn allowance, which the run records at opening and every turn of it is planned under
 * @property {number} tokens
 * @property {number} openTransactions 1, or more with a long prompt
 * @property {number} transactions open, every turn, close
 * @property {number} signatures
 * @property {number} cuRequested the turns' limits
 * @property {number} cuEstimated the plans' estimates
 * @property {number} cuLimitMax
 * @property {number[]} cuPerTurn each turn's plan estimate
 * @property {bigint} baseFees
 * @property {bigint} priorityFees
 * @property {bigint} fees
 * @property {number} accountLength the run account's bytes
 * @property {bigint} rent its rent deposit, returned when it is closed
 * @property {bigint} escrow royalty x max tokens, held at opening
 * @property {bigint} royalty lamports per token
 * @property {bigint} royaltyPaid for the tokens it generates (the rest of the escrow comes back)
 * @property {bigint} crankFee lamports each turn pays its sender
 * @property {bigint} crankDeposit crankFee x turns, put in the run for its crankers (the rest comes back)
 * @property {bigint} turnPriorityFeeMax the most priority fee one turn pays
 * @property {bigint} turnFee the cluster's fee for the costliest turn's message (getFeeForMessage)
 * @property {bigint} recommendedCrankFee that fee plus the client core's margin: what to offer crankers a turn
 * @property {string} recommendedCrankFeeBasis what the recommendation is based on, in words
 * @property {bigint} deposit rent + escrow + crank deposit, what opening puts in the run
 * @property {Uint8Array} text the text the run will generate
 */

/**
 * Prices a run of a model on the client's cluster.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} modelAddress
 * @param {import('./runs.js').RunParams} params
 * @param {{ artifact?: Uint8Array, window?: number, cuLimit?: 'uniform' | 'exact' | number, priorityRamp?: boolean }} [options]
 *   `params.crankFee` (lamports a turn, 0 by default) prices a run its crankers are paid to send
 * @returns {Promise<Quote>}
 */
export async function quoteRun(client, modelAddress, params, options = {}) {
  const core = requireCore(client, 'quoteRun');
  const model = await fetchModel(client, modelAddress);
  const p = runParams(core, params, model);
  const config = await fetchConfig(client, model.config);
  const allowance = checkAllowance(config.allowance);
  let artifact = options.artifact;
  if (artifact) checkArtifact(core, model, artifact);
  else artifact = await fetchArtifact(client, model);
  // The opening's account and transactions, sized with a stand-in run key.
  const standIn = await generateKeyPairSigner();
  const { setup, keys } = opening(client, model, standIn.address, p, 0n);
  const { accountLength } = core.openNext(model.data, setup);
  const create = getCreateAccountInstruction({ payer: client.payer, newAccount: standIn, lamports: 1, space: accountLength, programAddress: client.programId });
  const open = openTransactions(client, keys, standIn, p, { fee: 0n, deposit: 0n }, create);
  const q = core.quoteRun(artifact, p.prompt, {
    allowance,
    royalty: model.royalty,
    lamportsPerSignature: await lamportsPerSignature(client),
    openTransactions: open.length,
    rent: await rentFor(client, accountLength),
    crankFee: BigInt(params.crankFee ?? 0),
    maxTokens: p.maxTokens,
    temperatureQ16: p.temperatureQ16,
    seed: p.seed,
    window: options.window ?? 0,
    cuLimit: options.cuLimit ?? 'exact',
    priorityRamp: options.priorityRamp ?? true,
  });
  // The costliest turn's message, priced by the cluster (stand-in run):
  // the recommended crank fee is that plus the core's margin.
  const turn = [
    getSetComputeUnitLimitInstruction({ units: q.cuLimitMax }),
    ...(BigInt(q.turnPriceMax) > 0n ? [getSetComputeUnitPriceInstruction({ microLamports: BigInt(q.turnPriceMax) })] : []),
    ix.turn(client.programId, {
      config: model.config,
      model: /** @type {any} */ (modelAddress),
      run: standIn.address,
      owner: model.owner,
      sectionZero: /** @type {any} */ (model.sections[0].weight),
      cranker: client.payer,
      weights: [],
      expectedTurns: 0,
    }),
  ];
  const turnFee = await feeForMessage(client, turn);
  const advice = core.crankFeeAdvice(turnFee);
  return {
    turns: Number(q.turns),
    turnsAtMost: Number(q.turnsAtMost),
    charges: model.charges,
    allowance,
    tokens: q.tokens,
    openTransactions: Number(q.openTransactions),
    transactions: Number(q.transactions),
    signatures: Number(q.signatures),
    cuRequested: Number(q.cuRequested),
    cuEstimated: Number(q.cuEstimated),
    cuLimitMax: q.cuLimitMax,
    cuPerTurn: q.cuPerTurn,
    baseFees: BigInt(q.baseFees),
    priorityFees: BigInt(q.priorityFees),
    fees: BigInt(q.fees),
    accountLength,
    rent: BigInt(q.rent),
    escrow: BigInt(q.escrow),
    royalty: model.royalty,
    royaltyPaid: BigInt(q.royaltyPaid),
    crankFee: BigInt(q.crankFee),
    crankDeposit: BigInt(q.crankDeposit),
    turnPriorityFeeMax: BigInt(q.turnPriorityFeeMax),
    turnFee,
    recommendedCrankFee: advice.fee,
    recommendedCrankFeeBasis: advice.basis,
    deposit: BigInt(q.deposit),
    text: fromBase64(q.text),
  };
}
