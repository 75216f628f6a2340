// @ts-check
// The signer's config account: the turn allowance every run of its models uses.

import { getCreateAccountInstruction } from '@solana-program/system';

import { CONFIG_LEN } from './accounts.js';
import { requireSecret } from './client.js';
import { fetchConfig, fetchRawAccount } from './fetch.js';
import * as ix from './instructions.js';
import { configSigner } from './keys.js';
import { rentFor } from './rent.js';
import { sendAndConfirm, settle } from './transactions.js';

/** The default turn allowance and its range (docs/program.md). */
export const DEFAULT_ALLOWANCE = 1_350_000;
export const MIN_ALLOWANCE = 22_096;

/**
 * Creates the signer's config account, administered by the payer (or
 * finds it: its key is derived from the secret and the program).
 * @param {import('./client.js').CurtaClient} client
 * @param {{ allowance?: number }} [options]
 * @returns {Promise<{ config: string, createdNow: boolean, admin: string, allowance: number }>}
 */
export async function initConfig(client, options = {}) {
  const allowance = options.allowance ?? DEFAULT_ALLOWANCE;
  if (!Number.isInteger(allowance) || allowance < MIN_ALLOWANCE || allowance > DEFAULT_ALLOWANCE) {
    throw new RangeError(`allowance ${allowance} is out of range: ${MIN_ALLOWANCE} to ${DEFAULT_ALLOWANCE} compute units`);
  }
  await settle(client);
  const key = await configSigner(requireSecret(client, 'initConfig'), client.programId);
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
