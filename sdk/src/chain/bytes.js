// @ts-check
// Small byte helpers the chain client shares: SHA-256 (Web Crypto, in Node
// 20 and secure browser contexts), hex, base64, little-endian reads.

/**
 * SHA-256 of the concatenation of `chunks`.
 * @param {...Uint8Array} chunks
 * @returns {Promise<Uint8Array>}
 */
export async function sha256(...chunks) {
  const data = chunks.length === 1 ? chunks[0] : concat(chunks);
  return new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', data));
}

/** @param {Uint8Array[]} chunks */
export function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** @param {Uint8Array} bytes */
export const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/** @param {Uint8Array} a @param {Uint8Array} b */
export function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export { fromBase64, toBase64 } from '../base64.js';

/** @param {Uint8Array} bytes */
export const dataView = (bytes) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
