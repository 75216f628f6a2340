// @ts-check
// The chain client's context: an RPC, the curta program's address, the
// signer that pays (and owns the models it uploads, opens the runs,
// administers its config), the secret account keys derive from, the
// WebAssembly module, and the journal of transactions in flight.

import { createSolanaRpc } from '@solana/kit';

import { derivationSecret } from './keys.js';
import { memoryJournal } from './journal.js';

/**
 * @typedef {object} CurtaClient
 * @property {import('@solana/kit').Rpc<import('@solana/kit').SolanaRpcApi>} rpc
 * @property {import('@solana/kit').Address} programId
 * @property {import('@solana/kit').TransactionSigner} payer
 * @property {Uint8Array | null} secret 32 bytes keys derive from (the payer's ed25519 seed for the `curta` CLI's accounts)
 * @property {import('../core.js').CoreWasm | null} core
 * @property {'processed' | 'confirmed' | 'finalized'} commitment
 * @property {import('./journal.js').Journal} journal
 * @property {{ blockhash?: { value: { blockhash: any, lastValidBlockHeight: bigint }, at: number }, lamportsPerSignature?: bigint, settled?: Promise<void>, slotSeen?: bigint }} cache the last blockhash, the fee a signature, the journal settled, and the highest slot a transaction of this client landed in (account reads ask for a bank at least that recent)
 */

/**
 * A chain client.
 * @param {object} options
 * @param {import('@solana/kit').Rpc<import('@solana/kit').SolanaRpcApi>} [options.rpc] an RPC from `createSolanaRpc`, or
 * @param {string} [options.url] the cluster's JSON-RPC URL
 * @param {string} options.programId the curta program's address
 * @param {import('@solana/kit').TransactionSigner} options.payer any kit signer: a wallet's, a keypair file's, an in-memory key
 * @param {Uint8Array | number[]} [options.secret] 32 bytes (or a 64-byte keypair) that derive the accounts the client creates; needed to upload and open
 * @param {import('../core.js').CoreWasm} [options.core] the module (`loadCore()`), needed to quote, open and crank
 * @param {'processed' | 'confirmed' | 'finalized'} [options.commitment] what "landed" means; `confirmed` by default
 * @param {import('./journal.js').Journal} [options.journal] where transactions are recorded before they are sent (`fileJournal` in Node); in memory by default
 * @returns {CurtaClient}
 */
export function createCurtaClient(options) {
  const rpc = options.rpc ?? (options.url ? createSolanaRpc(options.url) : null);
  if (!rpc) throw new TypeError('createCurtaClient needs an rpc or a url');
  if (!options.programId) throw new TypeError('createCurtaClient needs the curta program’s address (programId)');
  if (!options.payer?.address) throw new TypeError('createCurtaClient needs a payer: a @solana/kit TransactionSigner');
  return {
    rpc,
    programId: /** @type {import('@solana/kit').Address} */ (options.programId),
    payer: options.payer,
    secret: options.secret ? derivationSecret(options.secret) : null,
    core: options.core ?? null,
    commitment: options.commitment ?? 'confirmed',
    journal: options.journal ?? memoryJournal(),
    cache: {},
  };
}

/**
 * @param {CurtaClient} client
 * @param {string} what
 */
export function requireSecret(client, what) {
  if (!client.secret) throw new TypeError(`${what} derives its accounts' keys: give createCurtaClient a secret (32 bytes)`);
  return client.secret;
}

/**
 * @param {CurtaClient} client
 * @param {string} what
 */
export function requireCore(client, what) {
  if (!client.core) throw new TypeError(`${what} needs the WebAssembly module: give createCurtaClient core: await loadCore()`);
  return client.core;
}
