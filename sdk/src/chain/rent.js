// @ts-check
// The cluster's rent-exempt minimum for an account's size.

/**
 * @param {import('./client.js').CurtaClient} client
 * @param {number} length bytes
 */
export async function rentFor(client, length) {
  return BigInt(await client.rpc.getMinimumBalanceForRentExemption(BigInt(length), { commitment: client.commitment }).send());
}
