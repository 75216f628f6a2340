// @ts-check
// Following a run from the chain alone: its turn receipts, in turn order,
// as they land, read from the `Program data:` lines of the run's
// transactions (docs/program.md, "The turn receipt").

import { PHASE_DONE } from '../layout.js';
import { requireCore } from './client.js';
import { fetchRawAccount } from './fetch.js';
import { receiptsFromLogs } from './receipts.js';
import { fetchTransaction, POLL_MS, sleep } from './transactions.js';

/**
 * A receipt and the transaction that logged it: its signature, slot, fee
 * payer, fee and compute units consumed (the whole transaction's, from
 * its meta).
 * @typedef {import('./receipts.js').Receipt & { signature: string, slot: bigint, payer: string, fee: bigint, computeUnits: bigint }} FollowedReceipt
 */

/**
 * The run's receipts in turn order from turn `after + 1`, as they land;
 * ends with the receipt of the turn that completes the run, or when the
 * run account is closed and nothing more can come.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} run
 * @param {{ after?: number, pollMs?: number, signal?: AbortSignal }} [options]
 * @returns {AsyncGenerator<FollowedReceipt>}
 */
export async function* followRun(client, run, options = {}) {
  const core = requireCore(client, 'followRun');
  let next = (options.after ?? 0) + 1;
  /** @type {Map<number, FollowedReceipt>} */
  const pending = new Map();
  const seen = new Set();
  const commitment = client.commitment === 'processed' ? 'confirmed' : client.commitment;
  for (;;) {
    if (options.signal?.aborted) return;
    // Newest first; pages until a signature already seen.
    const fresh = [];
    let before;
    for (;;) {
      const page = await client.rpc
        .getSignaturesForAddress(/** @type {any} */ (run), { limit: 1000, before, commitment })
        .send();
      const unseen = page.filter((s) => !seen.has(s.signature));
      fresh.push(...unseen);
      if (page.length < 1000 || unseen.length < page.length) break;
      before = page[page.length - 1].signature;
    }
    const landed = fresh.filter((s) => s.err === null);
    const txs = await Promise.all(landed.map((s) => fetchTransaction(client, s.signature)));
    fresh.forEach((s) => seen.add(s.signature));
    landed.forEach((s, i) => {
      const { slot, payer, fee, computeUnits } = txs[i];
      for (const r of receiptsFromLogs(core, client.programId, txs[i].logs)) {
        if (r.run === run && r.turns >= next) pending.set(r.turns, { ...r, signature: s.signature, slot, payer, fee, computeUnits });
      }
    });
    while (pending.has(next)) {
      const r = /** @type {FollowedReceipt} */ (pending.get(next));
      pending.delete(next);
      next += 1;
      yield r;
      if (r.phase === PHASE_DONE) return;
    }
    if (fresh.length === 0 && !(await fetchRawAccount(client, run))) return;
    await sleep(options.pollMs ?? POLL_MS);
  }
}
