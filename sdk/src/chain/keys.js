// @ts-check
// The keys of the accounts the client creates, derived from a 32-byte
// secret the caller holds and what the account is for, exactly as the Rust
// client derives them (client/src/keys.rs, docs/client.md "Accounts are
// derived"): a rerun, in JavaScript or with the `curta` CLI and the same
// keypair, finds the accounts of the first attempt with no file to keep.
//
// Each key is the ed25519 keypair whose seed is
// sha256("curta-client/v1/" || kind || 0 || secret || parts), every part
// prefixed with its length as a u64, so no two lists of parts hash alike.

import { createKeyPairSignerFromPrivateKeyBytes, getAddressEncoder } from '@solana/kit';

import { promptBytes } from '../core.js';
import { sha256 } from './bytes.js';

const DOMAIN = 'curta-client/v1/';

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
 * @param {Uint8Array} secret 32 bytes
 * @param {string} kind `config`, `model`, `weight`, `run` or `buffer`
 * @param {Uint8Array[]} parts
 */
export async function deriveSigner(secret, kind, parts) {
  const enc = new TextEncoder();
  /** @type {Uint8Array[]} */
  const chunks = [enc.encode(DOMAIN), enc.encode(kind), new Uint8Array([0]), derivationSecret(secret)];
  for (const part of parts) {
    chunks.push(u64(BigInt(part.length)), part);
  }
  return createKeyPairSignerFromPrivateKeyBytes(await sha256(...chunks));
}

/** @param {bigint} v */
function u64(v) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
  return out;
}

/** @param {number} v */
function u32(v) {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, v >>> 0, true);
  return out;
}

/** @param {string} address */
const addressBytes = (address) => /** @type {Uint8Array} */ (getAddressEncoder().encode(/** @type {any} */ (address)));

/**
 * The signer's config account for a program (`curta config init`).
 * @param {Uint8Array} secret
 * @param {string} programId
 */
export function configSigner(secret, programId) {
  return deriveSigner(secret, 'config', [addressBytes(programId)]);
}

/**
 * A model: one per program, config account, artifact and royalty.
 * @param {Uint8Array} secret
 * @param {{ programId: string, config: string, artifactSha256: Uint8Array, royalty: bigint | number }} p
 */
export function modelSigner(secret, p) {
  if (p.artifactSha256.length !== 32) throw new RangeError('an artifact SHA-256 is 32 bytes');
  return deriveSigner(secret, 'model', [
    addressBytes(p.programId),
    addressBytes(p.config),
    p.artifactSha256,
    u64(BigInt(p.royalty)),
  ]);
}

/**
 * The weight account of a model's section.
 * @param {Uint8Array} secret
 * @param {string} model
 * @param {number} section
 */
export function weightSigner(secret, model, section) {
  return deriveSigner(secret, 'weight', [addressBytes(model), u32(section)]);
}

/**
 * A run: the same parameters give the same account (until it is closed);
 * `label` tells apart runs meant to coexist.
 * @param {Uint8Array} secret
 * @param {{ model: string, prompt: string | Uint8Array, maxTokens: number, temperatureQ16: number, seed: bigint | number, label?: string }} r
 */
export function runSigner(secret, r) {
  return deriveSigner(secret, 'run', [
    addressBytes(r.model),
    promptBytes(r.prompt),
    u32(r.maxTokens),
    u32(r.temperatureQ16),
    u64(BigInt(r.seed)),
    new TextEncoder().encode(r.label ?? ''),
  ]);
}
