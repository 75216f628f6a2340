// @ts-check
// The keys of the accounts the client creates, derived from a 32-byte
// secret the caller holds and what the account is for, by the client
// core's rule (curta_core::client::keys, docs/client.md "Accounts are
// derived"): a rerun, in JavaScript or with the `curta` CLI and the same
// keypair, finds the accounts of the first attempt with no file to keep.
//
// The module gives the bytes hashed before and after the secret; the
// secret itself never enters it: the hash is WebCrypto's.

import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';

import { promptBytes } from '../core.js';
import { fromBase64, sha256 } from './bytes.js';

/**
 * The 32-byte secret keys derive from: a signer's ed25519 seed. A 64-byte
 * keypair file's bytes (the Solana CLI's `id.json`: seed then public key)
 * give their first 32.
 * @param {Uint8Array | number[]} secret
 * @returns {Uint8Array}
 */
export function derivationSecret(secret) {
  const bytes = secret instanceof Uint8Array ? secret : Uint8Array.from(secret);
  if (bytes.length === 32) return bytes;
  if (bytes.length === 64) return bytes.slice(0, 32);
  throw new RangeError(`a derivation secret is 32 bytes (or a 64-byte keypair), not ${bytes.length}`);
}

/**
 * The derived keypair of one account.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} secret 32 bytes
 * @param {Record<string, unknown>} what `{ kind, ... }` as the module's `derivation` export reads it (docs/client.md); bytes and bigints as they are
 */
export async function deriveSigner(core, secret, what) {
  const { beforeSecret, afterSecret } = core.derivation(what);
  const seed = await sha256(fromBase64(beforeSecret), derivationSecret(secret), fromBase64(afterSecret));
  return createKeyPairSignerFromPrivateKeyBytes(seed);
}

/**
 * The signer's config account for a program (`curta config init`).
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} secret
 * @param {string} programId
 */
export function configSigner(core, secret, programId) {
  return deriveSigner(core, secret, { kind: 'config', programId });
}

/**
 * A model: one per program, config account, artifact and royalty.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} secret
 * @param {{ programId: string, config: string, artifactSha256: Uint8Array, royalty: bigint | number }} p
 */
export function modelSigner(core, secret, p) {
  return deriveSigner(core, secret, { kind: 'model', ...p });
}

/**
 * The weight account of a model's section.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} secret
 * @param {string} model
 * @param {number} section
 */
export function weightSigner(core, secret, model, section) {
  return deriveSigner(core, secret, { kind: 'weight', model, section });
}

/**
 * A run: the same parameters give the same account (until it is closed);
 * `label` tells apart runs meant to coexist.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} secret
 * @param {{ model: string, prompt: string | Uint8Array, maxTokens: number, temperatureQ16: number, seed: bigint | number, label?: string }} r
 */
export function runSigner(core, secret, r) {
  return deriveSigner(core, secret, {
    kind: 'run',
    model: r.model,
    prompt: promptBytes(r.prompt),
    maxTokens: r.maxTokens,
    temperatureQ16: r.temperatureQ16,
    seed: r.seed,
    label: r.label ?? '',
  });
}
