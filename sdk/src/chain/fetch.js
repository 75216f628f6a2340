// @ts-check
// Reading the curta program's accounts from a cluster.

import { isSolanaError, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED } from '@solana/kit';

import { decodeConfigAccount, decodeModelAccount, decodeRunAccount, decodeWeightAccount, CurtaAccountError } from './accounts.js';
import { fromBase64 } from './bytes.js';
import { settle, sleep } from './transactions.js';

/**
 * @typedef {import('./client.js').CurtaClient} CurtaClient
 * @typedef {{ data: Uint8Array, lamports: bigint, owner: string }} RawAccount
 */

/** Tries of a read the node is not yet recent enough for: 100 ms apart, doubling to 1.6 s (about 6 s in all). */
const BEHIND_TRIES = 8;

/**
 * An account's bytes, lamports and owner; null when there is none. Read
 * from a bank no older than the last slot the client saw a transaction
 * land in (`minContextSlot`); a node behind it is asked again, and one
 * that stays behind is an error saying so.
 * @param {CurtaClient} client
 * @param {string} address
 * @returns {Promise<RawAccount | null>}
 */
export async function fetchRawAccount(client, address) {
  const minContextSlot = client.cache.slotSeen;
  const config = { encoding: /** @type {const} */ ('base64'), commitment: client.commitment, ...(minContextSlot ? { minContextSlot } : {}) };
  let value;
  for (let attempt = 0; ; attempt++) {
    try {
      ({ value } = await client.rpc.getAccountInfo(/** @type {any} */ (address), config).send());
      break;
    } catch (e) {
      if (!isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED)) throw e;
      if (attempt + 1 === BEHIND_TRIES) {
        throw new Error(`the RPC stays behind slot ${minContextSlot}, where this client last saw a transaction land: reading ${address} ${BEHIND_TRIES} times did not get a bank that recent`, { cause: e });
      }
      await sleep(Math.min(100 * 2 ** attempt, 1600));
    }
  }
  if (!value) return null;
  return { data: fromBase64(/** @type {any} */ (value.data)[0]), lamports: BigInt(value.lamports), owner: value.owner };
}

/**
 * An account of the curta program: refuses one that is missing or another program's.
 * @param {CurtaClient} client
 * @param {string} address
 * @param {string} kind for the error
 */
async function programAccount(client, address, kind) {
  const a = await fetchRawAccount(client, address);
  if (!a) throw new CurtaAccountError(`there is no ${kind} account at ${address} (closed, or another cluster?)`);
  if (a.owner !== client.programId) {
    throw new CurtaAccountError(`${address} is not a curta ${kind}: it belongs to ${a.owner}, not the curta program ${client.programId}`);
  }
  return a;
}

/**
 * @param {CurtaClient} client
 * @param {string} address
 */
export async function fetchConfig(client, address) {
  await settle(client);
  const a = await programAccount(client, address, 'config');
  return { address, lamports: a.lamports, ...decodeConfigAccount(a.data, `config ${address}`) };
}

/**
 * A model account, decoded, with its address.
 * @param {CurtaClient} client
 * @param {string} address
 */
export async function fetchModel(client, address) {
  await settle(client);
  const a = await programAccount(client, address, 'model');
  return { address, lamports: a.lamports, data: a.data, ...decodeModelAccount(a.data, `model ${address}`) };
}

/**
 * @param {CurtaClient} client
 * @param {string} address
 */
export async function fetchWeight(client, address) {
  const a = await programAccount(client, address, 'weight');
  return { address, lamports: a.lamports, ...decodeWeightAccount(a.data, `weight account ${address}`) };
}

/**
 * A run account, decoded (its state included), with its address and lamports.
 * @param {CurtaClient} client
 * @param {string} address
 */
export async function fetchRunAccount(client, address) {
  await settle(client);
  const a = await programAccount(client, address, 'run');
  return { address, lamports: a.lamports, ...decodeRunAccount(a.data, `run ${address}`) };
}
