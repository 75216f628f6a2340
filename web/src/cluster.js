// The cluster the page talks to: does it answer, and is it localnet (where
// a local key can be funded by an airdrop)?
import { address, createSolanaRpc, lamports } from '@solana/kit';

const ANSWER_MS = 8000;

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {string} url
 * @returns {Promise<T>}
 */
function answered(promise, url) {
  return Promise.race([
    promise,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`The cluster at ${url} does not answer (no reply in ${ANSWER_MS / 1000} s).`)), ANSWER_MS),
    ),
  ]);
}

/**
 * Checks the RPC URL answers, and what it is.
 * @param {string} url
 */
export async function checkCluster(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`"${url}" is not a URL: an RPC URL looks like http://127.0.0.1:8899.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new Error(`"${url}" is not an http(s) RPC URL.`);
  }
  const rpc = createSolanaRpc(url);
  try {
    const [version, genesisHash, slot] = await answered(
      Promise.all([rpc.getVersion().send(), rpc.getGenesisHash().send(), rpc.getSlot().send()]),
      url,
    );
    return { rpc, url, version: version['solana-core'], genesisHash, slot };
  } catch (e) {
    const message = /** @type {Error} */ (e).message;
    if (message.startsWith('The cluster at')) throw e;
    throw new Error(`The cluster at ${url} does not answer: ${message}.`);
  }
}

/**
 * Asks the cluster's faucet for lamports and waits until they are there.
 * @param {import('@solana/kit').Rpc<import('@solana/kit').SolanaRpcApi>} rpc
 * @param {string} to
 * @param {bigint} amount
 */
export async function airdrop(rpc, to, amount) {
  const before = (await rpc.getBalance(address(to), { commitment: 'confirmed' }).send()).value;
  try {
    await rpc.requestAirdrop(address(to), lamports(amount), { commitment: 'confirmed' }).send();
  } catch (e) {
    throw new Error(`The cluster refused an airdrop (${/** @type {Error} */ (e).message}); a local key needs a cluster with a faucet, such as localnet.`);
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    const now = (await rpc.getBalance(address(to), { commitment: 'confirmed' }).send()).value;
    if (now >= before + amount) return now;
    if (Date.now() > deadline) throw new Error(`The airdrop to ${to} did not land within 30 s.`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

