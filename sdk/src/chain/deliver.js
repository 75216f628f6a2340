// @ts-check
// Delivering a finished run that names a callback (`deliver`,
// docs/program.md "Delivery"), as `curta crank` does: the client core plans
// it from the run account (the module's `delivery_plan`); this simulates it
// first, so a callback that fails costs nothing, then sends it.

import { getSetComputeUnitLimitInstruction } from '@solana-program/compute-budget';

import { requireCore } from './client.js';
import { fetchRawAccount } from './fetch.js';
import * as ix from './instructions.js';
import { latestBlockhash, sendAndConfirm, sign } from './transactions.js';

/**
 * @typedef {import('./client.js').CurtaClient} CurtaClient
 */

/**
 * Delivers `runAddress`, the client's payer signing as the deliverer and
 * receiving the run's delivery fee.
 * @param {CurtaClient} client
 * @param {string} runAddress
 * @returns {Promise<{ run: string, signature: string, slot: bigint, fee: bigint, earned: bigint, computeUnits: number }>}
 *   `fee`: the transaction's; `earned`: the delivery fee; `computeUnits`: asked for
 * @throws {RangeError} a run that is gone, names no callback or is not finished, in words
 * @throws {Error} a callback the cluster's simulation refuses, with its log's end: nothing was sent
 */
export async function deliverRun(client, runAddress) {
  const core = requireCore(client, 'deliverRun');
  const account = await fetchRawAccount(client, runAddress);
  if (!account || account.owner !== client.programId) {
    throw new RangeError(`there is no run at ${runAddress}: delivered or closed already`);
  }
  const plan = core.deliveryPlan(account.data);
  const instructions = [
    getSetComputeUnitLimitInstruction({ units: plan.computeUnits }),
    ix.deliver(client.programId, { run: /** @type {any} */ (runAddress), deliverer: client.payer, plan }),
  ];
  const what = `delivering run ${runAddress} to ${plan.program}`;
  const trial = await sign(client, instructions, await latestBlockhash(client, false));
  const { value } = await client.rpc
    .simulateTransaction(/** @type {any} */ (trial.wire), { encoding: 'base64', commitment: client.commitment })
    .send();
  if (value.err) {
    const tail = (value.logs ?? []).slice(-6).join('\n  ');
    throw new Error(`${what}: the cluster's simulation refused it (${JSON.stringify(value.err)}), so nothing was sent:\n  ${tail}`);
  }
  const landed = await sendAndConfirm(client, what, instructions);
  return { run: runAddress, signature: landed.signature, slot: landed.slot, fee: landed.fee, earned: plan.fee, computeUnits: plan.computeUnits };
}
