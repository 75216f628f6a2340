// @ts-check
// What a session key does with the run a wallet funded it for (the page's
// "Sign once", and any app's): opens the run unless it is open, sends its
// turns or follows the crankers who do, checks every turn against the
// module's replay, closes the run and sends back what is left. Its keeper
// records the session (`save`) so that a reload resumes it.

import { address } from '@solana/kit';

import { requireCore } from './client.js';
import { CurtaReplayMismatch, crankRun } from './crank.js';
import { fetchRunAccount } from './fetch.js';
import { followRun } from './follow.js';
import { receiptDifferences } from './receipts.js';
import { replayFromParams } from './replay.js';
import { fetchRun, openRun, runAccountSigner } from './runs.js';
import { sendBack } from './session-key.js';
import { lamportsPerSignature } from './transactions.js';

/**
 * A session key's run, as its keeper records it between loads.
 * @typedef {object} SessionKeyRun
 * @property {string} model the model's address
 * @property {string} owner the wallet that funded the key, which gets back what is left
 * @property {{ prompt: string, maxTokens: number, temperature?: string | number, temperatureQ16?: number, seed: bigint }} params `openRun`'s (the temperature as a decimal or in Q16)
 * @property {bigint} crankFee lamports a turn to crankers; 0n: the key sends the turns
 * @property {'created' | 'funded' | 'running' | 'done'} phase `running` once the run is open
 * @property {string} [runAddress] once it is open
 * @property {bigint} [crankDeposit] the crank deposit it was opened with
 * @property {number} [allowance] the turn allowance it recorded at opening
 * @property {bigint} [fees] what the key's run paid in fees before its turns (the funding, the opening)
 */

/**
 * A turn the session key's run saw land, checked against the replay.
 * @typedef {object} SessionKeyTurn
 * @property {number} turn the run's turn count after it
 * @property {'key' | 'cranker' | 'earlier'} by who sent it: the key, a cranker, or either before a reload
 * @property {Uint8Array} text the bytes it generated
 * @property {bigint} computeUnits its transaction's, as the chain's meta gives them
 * @property {bigint} fee what the key paid for it (0n for another's, or one counted before a reload)
 * @property {bigint} crankPaid what it paid its sender from the crank deposit
 * @property {number} [programCu] the program's own units (the key's turns)
 * @property {number} [generated] tokens the turn generated (the key's turns)
 * @property {string} [stateSha256] the state after it (the key's turns)
 */

/**
 * Works a session key's run to its end, or until `signal` stops it, and
 * sends back what the key holds. Resumable: with the record a stopped or
 * reloaded run left, it goes on from what the chain holds (`resumed`: the
 * fees so far are read back from the key's history, the turns that landed
 * are checked again). A turn that differs from the replay throws
 * `CurtaReplayMismatch` naming the turn and the field.
 * @param {import('./client.js').CurtaClient} client the session key's: the key its payer, its seed the secret, with the module and a journal
 * @param {SessionKeyRun} run the record, which `save` keeps up to date
 * @param {{
 *   artifact: Uint8Array,
 *   royalty: bigint,
 *   save: (change: Partial<SessionKeyRun>) => Promise<unknown>,
 *   resumed?: boolean,
 *   signal?: AbortSignal,
 *   onStage?: (stage: 'fees' | 'opening' | 'earlier' | 'cranking' | 'following' | 'closing', turns?: number) => void,
 *   onRun?: (run: string) => void,
 *   onTurn?: (turn: SessionKeyTurn) => void | Promise<void>,
 *   onFees?: (fees: bigint) => void,
 * }} o `artifact`: the model's; `royalty`: the model's, which receipts show;
 *   `onStage`: what it does next (`earlier` with the turns landed before a reload);
 *   `onRun`: the run's address once known; `onFees`: the fees so far, whenever they change
 * @returns {Promise<{ run: string, turns: number, fees: bigint, crankersPaid: bigint, sent: bigint, stopped: boolean }>}
 */
export async function runWithSessionKey(client, run, o) {
  requireCore(client, 'runWithSessionKey');
  const signal = o.signal;
  let fees = run.fees ?? 0n;
  const paid = (/** @type {bigint} */ fee) => {
    fees += fee;
    if (fee > 0n) o.onFees?.(fees);
  };
  if (o.resumed) {
    o.onStage?.('fees');
    fees = await feesNaming(client, client.payer.address);
    o.onFees?.(fees);
  }
  if (run.phase === 'created' || run.phase === 'funded') {
    o.onStage?.('opening');
    const opened = await openRun(client, run.model, { ...run.params, crankFee: run.crankFee }, { artifact: o.artifact });
    paid(opened.summary.fees);
    await o.save({ phase: 'running', runAddress: opened.run, crankDeposit: opened.crank.deposit, fees });
  }
  const runAddress = run.runAddress ?? (await runAccountSigner(client, run.model, run.params)).address;
  o.onRun?.(runAddress);
  // The allowance the run recorded at opening plans its turns, and so the
  // replay that checks them; kept for a reload after the run is closed.
  let allowance = run.allowance;
  if (allowance === undefined) {
    const account = await fetchRunAccount(client, runAddress).catch(() => null);
    if (!account) throw new Error(`the run ${runAddress} is gone and its session recorded no allowance: its turns cannot be checked`);
    allowance = account.allowance;
    await o.save({ allowance });
  }
  let turns = 0;
  let crankersPaid = 0n;
  /** @param {SessionKeyTurn} t */
  const landed = async (t) => {
    turns = t.turn;
    crankersPaid += t.by === 'cranker' ? t.crankPaid : 0n;
    paid(t.fee);
    await o.onTurn?.(t);
  };
  const check = { run: runAddress, allowance, royalty: o.royalty, crankFee: run.crankFee, crankDeposit: run.crankDeposit ?? 0n, artifact: o.artifact };
  if (run.crankFee > 0n) {
    o.onStage?.('following');
    await checkLanded(client, run, check, { upTo: Infinity, by: 'cranker', signal, landed });
  } else {
    const before = await fetchRun(client, runAddress).catch(() => null);
    // Turns landed before a reload (all of them, the run closed, when the
    // last load got that far), each checked again as it is read back.
    if (!before || before.info.turns > 0) {
      o.onStage?.('earlier', before ? before.info.turns : undefined);
      await checkLanded(client, run, check, { upTo: before ? before.info.turns : Infinity, by: 'earlier', landed });
    }
    if (before) {
      o.onStage?.('cranking');
      try {
        await crankRun(client, runAddress, {
          artifact: o.artifact,
          signal,
          // The close's fee, kept for after the last turn.
          reserve: await lamportsPerSignature(client),
          onTurn: (t) =>
            void landed({ turn: t.turn, by: 'key', text: t.text, computeUnits: t.consumedCu, fee: t.fee, crankPaid: 0n, programCu: t.programCu, generated: t.generated, stateSha256: t.stateSha256 }),
          onFailed: (f) => paid(f.fee),
        });
      } catch (e) {
        // Stopped: the run is closed below, mid-way.
        if (!signal?.aborted) throw e;
      }
    }
  }
  // Stopped: a client of its own, which first waits for the turns still in
  // flight to land or expire (a client settles its journal before it reads
  // the chain), so that none lands after the key is emptied.
  const closer = signal?.aborted ? { ...client, cache: {} } : client;
  const back = await sendBack(closer, run.owner, runAddress, { onClosing: () => o.onStage?.('closing') });
  paid(back.fees);
  // Stopped: turns in flight landed (or failed) unseen by the crank; the chain has them all.
  if (signal?.aborted) {
    fees = await feesNaming(client, client.payer.address);
    o.onFees?.(fees);
  }
  await o.save({ phase: 'done', fees });
  return { run: runAddress, turns, fees, crankersPaid, sent: back.sent, stopped: Boolean(signal?.aborted) };
}

/**
 * The receipts of the run's turns as they land (or landed), read from the
 * chain's logs, each checked against the module's replay of the run from
 * its start.
 * @param {import('./client.js').CurtaClient} client
 * @param {SessionKeyRun} run
 * @param {{ run: string, allowance: number, royalty: bigint, crankFee: bigint, crankDeposit: bigint, artifact: Uint8Array }} check
 * @param {{ upTo: number, by: 'cranker' | 'earlier', signal?: AbortSignal, landed: (t: SessionKeyTurn) => Promise<void> }} o
 */
async function checkLanded(client, run, check, o) {
  const core = requireCore(client, 'runWithSessionKey');
  const { maxTokens, temperature, temperatureQ16, seed } = run.params;
  const replay = await replayFromParams(core, check.artifact, run.params.prompt, { maxTokens, temperature, temperatureQ16, seed, allowance: check.allowance });
  const expected = { run: check.run, model: run.model, royalty: check.royalty, crankFee: check.crankFee, crankDeposit: check.crankDeposit };
  for await (const r of followRun(client, check.run, { signal: o.signal })) {
    const [d] = receiptDifferences(core, r, replay.steps[r.turns - 1], expected);
    if (d) {
      throw new CurtaReplayMismatch(`its ${d.field} is ${d.receipt} on chain, ${d.replay} in the replay`, { turn: r.turns, field: d.field, signature: r.signature });
    }
    await o.landed({ turn: r.turns, by: o.by, text: r.text, computeUnits: r.computeUnits, fee: 0n, crankPaid: r.crankPaid });
    if (r.turns >= o.upTo) break;
  }
}

/**
 * The fees of every transaction naming `who` that landed, failed or not:
 * what a session key has paid so far, read back after a reload.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} who
 */
export async function feesNaming(client, who) {
  let fees = 0n;
  /** @type {any} */
  let before;
  for (;;) {
    const signatures = await client.rpc.getSignaturesForAddress(address(who), { commitment: client.commitment, limit: 1000, before }).send();
    // A few at a time: a public RPC limits its rate.
    for (let i = 0; i < signatures.length; i += 32) {
      const txs = await Promise.all(
        signatures
          .slice(i, i + 32)
          .map((s) => client.rpc.getTransaction(s.signature, { commitment: /** @type {any} */ (client.commitment), encoding: 'json', maxSupportedTransactionVersion: 0 }).send()),
      );
      for (const tx of txs) fees += BigInt(tx?.meta?.fee ?? 0);
    }
    if (signatures.length < 1000) return fees;
    before = signatures[signatures.length - 1].signature;
  }
}
