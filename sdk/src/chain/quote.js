// @ts-check
// What a run will cost before it is opened, like `curta quote MODEL`
// (client/src/quote.rs): the module's replay, planned with the model's
// charge table and its config's allowance, gives its exact turns (a run
// may end early on an end token), their weight accounts and compute
// units; the transaction sizes give the opening's transactions; the
// cluster's fee and rent give the lamports.

import { generateKeyPairSigner } from '@solana/kit';
import { getCreateAccountInstruction } from '@solana-program/system';

import { RUN_HEADER_LEN } from './accounts.js';
import { requireCore } from './client.js';
import { priorityFee, rampLamports, rampPeriod, rampPrice, turnLimits } from './crank.js';
import { fetchConfig, fetchModel } from './fetch.js';
import { checkArtifact, fetchArtifact } from './models.js';
import { DEFAULT_ALLOWANCE } from '../format.js';
import { checkAllowance, replayFromParams } from './replay.js';
import { rentFor } from './rent.js';
import { openTransactions, runParams } from './runs.js';
import { lamportsPerSignature } from './transactions.js';

/**
 * A run's cost.
 * @typedef {object} Quote
 * @property {number} turns the turns the run takes (the module's replay)
 * @property {number} turnsAtMost without an early end token (the module's quote; under another allowance than the default, which the module's quote does not take, the replay's turns)
 * @property {import('../format.js').ChargeTable} charges the model's charge table, which every turn is planned with
 * @property {number} allowance the config's turn allowance, which every turn is planned under
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
 * @property {bigint} deposit rent + escrow, what opening puts in the run
 * @property {Uint8Array} text the text the run will generate
 */

/**
 * Prices a run of a model on the client's cluster.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} modelAddress
 * @param {import('./runs.js').RunParams} params
 * @param {{ artifact?: Uint8Array, window?: number, cuLimit?: 'uniform' | 'exact' | number, priorityRamp?: boolean }} [options]
 * @returns {Promise<Quote>}
 */
export async function quoteRun(client, modelAddress, params, options = {}) {
  const core = requireCore(client, 'quoteRun');
  const model = await fetchModel(client, modelAddress);
  const p = runParams(params, model.shape);
  const config = await fetchConfig(client, model.config);
  const allowance = checkAllowance(config.allowance);
  let artifact = options.artifact;
  if (artifact) await checkArtifact(model, artifact);
  else artifact = await fetchArtifact(client, model);
  const run = { maxTokens: p.maxTokens, temperatureQ16: p.temperatureQ16, seed: p.seed };
  const replay = await replayFromParams(core, artifact, p.prompt, { ...run, allowance });
  const turnsAtMost = allowance === DEFAULT_ALLOWANCE ? core.quote(artifact, p.prompt, run) : replay.steps.length;
  const accountLength = RUN_HEADER_LEN + core.stateSize(model.configBytes, p.prompt.length, p.maxTokens);
  // The opening's transactions, sized with a stand-in run key.
  const standIn = await generateKeyPairSigner();
  const create = getCreateAccountInstruction({ payer: client.payer, newAccount: standIn, lamports: 1, space: accountLength, programAddress: client.programId });
  const keys = { config: model.config, model: modelAddress, royalty: model.royalty, identity: model.identity };
  const open = openTransactions(client, keys, standIn, p, create);
  const window = options.window ?? 32;
  const limits = turnLimits(replay.steps, options.cuLimit ?? 'uniform');
  const ramp = options.priorityRamp ?? true;
  const priorityFees = ramp
    ? limits.reduce((sum, l, i) => sum + priorityFee(rampPrice(rampLamports(replay.steps[i].turnsBefore, rampPeriod(window)), l), l), 0n)
    : 0n;
  const n = replay.steps.length;
  // Each opening transaction: the payer and the run sign; each turn and the close: the payer alone.
  const signatures = 2 * open.length + n + 1;
  const per = await lamportsPerSignature(client);
  const rent = await rentFor(client, accountLength);
  const generated = n > 0 ? replay.steps[n - 1].generated : 0;
  const escrow = model.royalty * BigInt(p.maxTokens);
  const baseFees = BigInt(signatures) * per;
  return {
    turns: n,
    turnsAtMost,
    charges: model.charges,
    allowance,
    tokens: generated,
    openTransactions: open.length,
    transactions: open.length + n + 1,
    signatures,
    cuRequested: limits.reduce((a, b) => a + b, 0),
    cuEstimated: replay.steps.reduce((a, s) => a + s.estimatedCu, 0),
    cuLimitMax: Math.max(0, ...limits),
    cuPerTurn: replay.steps.map((s) => s.estimatedCu),
    baseFees,
    priorityFees,
    fees: baseFees + priorityFees,
    accountLength,
    rent,
    escrow,
    royalty: model.royalty,
    royaltyPaid: model.royalty * BigInt(generated),
    deposit: rent + escrow,
    text: replay.steps.reduce((acc, s) => {
      const j = new Uint8Array(acc.length + s.text.length);
      j.set(acc);
      j.set(s.text, acc.length);
      return j;
    }, new Uint8Array(0)),
  };
}
