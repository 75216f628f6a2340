// @ts-check
// The signer's config account: the turn allowance every run of its models uses.

import { getCreateAccountInstruction } from '@solana-program/system';

import { DEFAULT_ALLOWANCE, checkAllowance } from '../format.js';
import { CONFIG_LEN } from './accounts.js';
import { requireCore, requireSecret } from './client.js';
import { fetchConfig, fetchRawAccount } from './fetch.js';
import * as ix from './instructions.js';
import { configSigner } from './keys.js';
import { rentFor } from './rent.js';
import { sendAndConfirm, settle } from './transactions.js';

/** The default turn allowance and its range (docs/program.md). */
export { DEFAULT_ALLOWANCE, MIN_ALLOWANCE } from '../format.js';

/**
 * Creates the signer's config account, administered by the payer (or
 * finds it: its key is derived from the secret and the program).
 * @param {import('./client.js').CurtaClient} client
 * @param {{ allowance?: number }} [options]
 * @returns {Promise<{ config: string, createdNow: boolean, admin: string, allowance: number }>}
 */
export async function initConfig(client, options = {}) {
  const allowance = checkAllowance(options.allowance ?? DEFAULT_ALLOWANCE, 'allowance');
  await settle(client);
  const key = await configSigner(requireCore(client, 'initConfig'), requireSecret(client, 'initConfig'), client.programId);
  let createdNow = false;
  if (!(await fetchRawAccount(client, key.address))) {
    await sendAndConfirm(client, 'creating the config', [
      getCreateAccountInstruction({ payer: client.payer, newAccount: key, lamports: await rentFor(client, CONFIG_LEN), space: CONFIG_LEN, programAddress: client.programId }),
      ix.initConfig(client.programId, { config: key, admin: client.payer, allowance }),
    ]);
    createdNow = true;
  }
  const c = await fetchConfig(client, key.address);
  return { config: key.address, createdNow, admin: c.admin, allowance: c.allowance };
}

/**
 * Changes a config's turn allowance, as `curta config set-allowance N`:
 * the payer signs as its admin. Every later turn of its models' runs is
 * planned under it (a lower one may leave a run unable to advance: it can
 * then only be closed).
 * @param {import('./client.js').CurtaClient} client
 * @param {string} config
 * @param {number} allowance 22,096 to 1,350,000 compute units
 * @returns {Promise<{ config: string, allowance: number, changed: boolean }>}
 */
export async function setAllowance(client, config, allowance) {
  checkAllowance(allowance, 'allowance');
  await settle(client);
  const before = await administered(client, config);
  if (before.allowance === allowance) return { config, allowance, changed: false };
  await sendAndConfirm(client, 'setting the allowance', [ix.setAllowance(client.programId, { config: /** @type {any} */ (config), admin: client.payer, allowance })]);
  const after = await fetchConfig(client, config);
  return { config, allowance: after.allowance, changed: true };
}

/**
 * Closes a config, as `curta config close`: the payer signs as its admin
 * and receives its lamports. Its models' runs can then neither open nor
 * turn; every run, weight account and model can still be closed
 * (docs/program.md, `close_config`).
 * @param {import('./client.js').CurtaClient} client
 * @param {string} config
 * @returns {Promise<{ config: string, returned: bigint }>} `returned`: the lamports the admin got back
 */
export async function closeConfig(client, config) {
  await settle(client);
  await administered(client, config);
  const held = (await fetchRawAccount(client, config))?.lamports ?? 0n;
  await sendAndConfirm(client, 'closing the config', [ix.closeConfig(client.programId, { config: /** @type {any} */ (config), admin: client.payer })]);
  return { config, returned: held };
}

/**
 * A config the payer administers, or an error naming its admin.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} config
 */
async function administered(client, config) {
  const c = await fetchConfig(client, config);
  if (c.admin !== client.payer.address) {
    throw new Error(`config ${config} is administered by ${c.admin}, not the signer ${client.payer.address}`);
  }
  return c;
}
