// @ts-check
// Amounts and counts as every Curta client prints them: the CLI's text
// (curta-core's `client::crank::sol`, curta-client's `output::thousands`),
// the page, and any app on the SDK.

/**
 * Lamports as SOL with all nine decimals, `0.000105000 SOL`: every digit a
 * lamport, so amounts line up and none looks rounded.
 * @param {bigint | number} lamports a whole number of lamports
 */
export function formatSol(lamports) {
  const value = BigInt(lamports);
  return `${value / 1_000_000_000n}.${(value % 1_000_000_000n).toString().padStart(9, '0')} SOL`;
}

/**
 * A count with its thousands grouped by commas, `1,350,300`.
 * @param {bigint | number} n
 */
export function formatCount(n) {
  return typeof n === 'bigint' ? n.toLocaleString('en-US') : Number(n).toLocaleString('en-US');
}
