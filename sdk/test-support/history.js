// The validator's own record of an address, for the chain tests' checks
// that every chunk and turn landed once and every fee is accounted for.

import { getBase58Encoder } from '@solana/kit';

/**
 * Every transaction naming `address`, oldest first: its signature, error,
 * fee, signature count, fee payer, and the instructions it sent to
 * `programId` (data and account addresses).
 * @param {any} rpc a @solana/kit RPC
 * @param {string} programId
 * @param {string} address
 */
export async function history(rpc, programId, address) {
  const sigs = [];
  let before;
  for (;;) {
    const page = await rpc.getSignaturesForAddress(address, { limit: 1000, before, commitment: 'confirmed' }).send();
    sigs.push(...page);
    if (page.length < 1000) break;
    before = page[page.length - 1].signature;
  }
  sigs.reverse();
  const out = [];
  for (const s of sigs) {
    const tx = await rpc.getTransaction(s.signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send();
    const keys = tx.transaction.message.accountKeys;
    const ixs = tx.transaction.message.instructions
      .filter((i) => keys[i.programIdIndex] === programId)
      .map((i) => ({ data: new Uint8Array(getBase58Encoder().encode(i.data)), accounts: i.accounts.map((a) => keys[a]) }));
    out.push({ signature: s.signature, err: tx.meta.err, fee: BigInt(tx.meta.fee), signatures: tx.transaction.signatures.length, payer: keys[0], ixs });
  }
  return out;
}

/** A transaction error from the history as JSON; its instruction indexes are BigInts. */
export function errorJson(err) {
  return JSON.stringify(err, (_, v) => (typeof v === 'bigint' ? String(v) : v));
}
