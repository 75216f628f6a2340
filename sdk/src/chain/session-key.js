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
import { closeRun } from './runs.js';
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
