// @ts-check
// A session key: a fresh key a wallet funds in one transaction, which then
// runs one run for it (opens and cranks it, or, when crankers send the
// turns, is named its opener) and closes it, and sends back what it holds:
// what the page's "Sign once" does. What the wallet sends is the client
// core's sum (`client::session_key`); this file reads the cluster's prices
// and sends.

import { getTransferSolInstruction } from '@solana-program/system';

import { requireCore } from './client.js';
import { fetchRawAccount } from './fetch.js';
import { rentFor } from './rent.js';
import { closeRun, openRun } from './runs.js';
import { lamportsPerSignature, sendAndConfirm } from './transactions.js';

/**
 * What a wallet sends a session key for a quoted run: with crankers, the
 * key's close and transfer back; else the run's deposit, every fee, half
 * the fees again for resent turns and the transfer back; both with the
 * key's rent exemption (a fee payer keeps it while it holds anything).
 * What is not spent comes back (`sendBack`).
 * @param {import('./client.js').CurtaClient} client a client of the cluster, with the module
 * @param {{ deposit: bigint, fees: bigint }} quote `quoteRun`'s
 * @param {{ crankers: boolean }} options whether crankers send the turns
 * @returns {Promise<bigint>}
 */
export async function sessionKeyFunding(client, quote, options) {
  const core = requireCore(client, 'sessionKeyFunding');
  return core.sessionKeyFunding({
    deposit: quote.deposit,
    fees: quote.fees,
    lamportsPerSignature: await lamportsPerSignature(client),
    keyRent: await rentFor(client, 0),
    crankers: options.crankers,
  });
}

/**
 * Closes the key's run when it is still there (its rent and unspent
 * deposits come back to the key), then sends `to` everything the key
 * holds less that transfer's fee.
 * @param {import('./client.js').CurtaClient} client the session key's (its payer)
 * @param {string} to the wallet that funded the key
 * @param {string} [runAddress] the key's run, if it opened one
 * @param {{ onClosing?: () => void }} [options] told before the close is sent
 * @returns {Promise<{ fees: bigint, sent: bigint }>} the fees the key paid here, and what it sent back
 */
export async function sendBack(client, to, runAddress, options = {}) {
  let fees = 0n;
  if (runAddress && (await fetchRawAccount(client, runAddress))) {
    options.onClosing?.();
    fees += (await closeRun(client, runAddress)).fee;
  }
  const fee = await lamportsPerSignature(client);
  const { value: balance } = await client.rpc.getBalance(client.payer.address, { commitment: client.commitment }).send();
  if (balance <= fee) return { fees, sent: 0n };
  const sent = balance - fee;
  const landed = await sendAndConfirm(client, 'sending back what is left', [
    getTransferSolInstruction({ source: client.payer, destination: /** @type {any} */ (to), amount: sent }),
  ]);
  return { fees: fees + landed.fee, sent };
}

/**
 * The wallet's one approval: funds a fresh session key for a quoted run
 * (`sessionKeyFunding`'s sum). With crankers (`params.crankFee` above
 * zero) it is the run's opening itself, the wallet paying the deposits and
 * the key named the opener (so that it can close the run unasked); else a
 * transfer to the key, which opens the run itself (`runWithSessionKey`). A
 * refusal (the wallet's, or the cluster's in simulation) sent nothing: the
 * error has `refused`, and the key can be forgotten.
 * @param {import('./client.js').CurtaClient} client the session key's (its payer), with the module
 * @param {import('@solana/kit').TransactionSigner} wallet
 * @param {string} model the model's address
 * @param {{ prompt: string | Uint8Array, maxTokens: number, temperature?: string | number, temperatureQ16?: number, seed: bigint, crankFee?: bigint }} params
 * @param {{ deposit: bigint, fees: bigint }} quote `quoteRun`'s
 * @param {{ artifact?: Uint8Array, onApproval?: (amount: bigint) => void }} [options] `onApproval`: told what the wallet is asked to send, before it is asked
 * @returns {Promise<{ amount: bigint, change: { phase: 'running' | 'funded', runAddress?: string, crankDeposit?: bigint, fundingSignature?: string, fees: bigint } }>}
 *   `change`: the session key's run record after it (`runWithSessionKey`)
 */
export async function fundSessionKey(client, wallet, model, params, quote, options = {}) {
  const crankers = (params.crankFee ?? 0n) > 0n;
  const amount = await sessionKeyFunding(client, quote, { crankers });
  options.onApproval?.(amount);
  if (crankers) {
    const opened = await openRun(client, model, params, { artifact: options.artifact, funder: wallet, fundOpener: amount });
    return { amount, change: { phase: 'running', runAddress: opened.run, crankDeposit: opened.crank.deposit, fees: opened.summary.fees } };
  }
  const funder = { ...client, payer: wallet, cache: {} };
  const funded = await sendAndConfirm(funder, 'funding the session key', [
    getTransferSolInstruction({ source: wallet, destination: client.payer.address, amount }),
  ]);
  return { amount, change: { phase: 'funded', fundingSignature: funded.signature, fees: funded.fee } };
}
