// @ts-check
// Cranking a run: every remaining turn, pipelined, checked
// (client/src/crank.rs; docs/client.md, "Cranking").
//
// The module replays the run from the chain's state first (planned with
// the model's charge table and its config's allowance), so before
// sending anything the client knows every coming turn's weight accounts,
// compute units, receipt and state. A window of turns is in flight at
// once, each carrying the turn count it expects, so one that runs out of
// order fails cheaply with StaleTurn. On such a failure the crank goes
// back: it sends nothing new until every turn in flight has landed or
// failed, then resends from the first turn not landed (go-back-N); a turn
// whose blockhash expires unseen is resent the same way. A crank that
// finds the run moved by someone else (a failed turn, then the run's turn
// count past its own) backs off as client/src/crank.rs does: it sends
// nothing while the other moves the run, reading where it is every 0.8 s,
// and takes the run over once it has stood still for three reads; so each
// encounter costs at most the window it had in flight. Every turn asks
// for one uniform compute-unit limit and a priority fee falling by 4
// lamports a turn, so the scheduler runs them in order. Each landed
// turn's receipt must equal the replay's field by field, and the final
// state the replay's byte for byte; a difference stops the crank.

import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';

import { readStateInfo } from '../format.js';
import { MODEL_STATUS } from './accounts.js';
import { equalBytes, hex, sha256 } from './bytes.js';
import { requireCore } from './client.js';
import { customCode, describeTransactionError, logTail, STALE_TURN } from './errors.js';
import { fetchConfig, fetchModel, fetchRunAccount } from './fetch.js';
import * as ix from './instructions.js';
import { checkArtifact, checkModelIdentity, fetchArtifact } from './models.js';
import { receiptDifferences, receiptsFromLogs } from './receipts.js';
import { checkAllowance, MAX_TRANSACTION_CU, replayFromState, turnLimit } from './replay.js';
import { blockHeight, fetchTransaction, journalAndSend, latestBlockhash, POLL_MS, settle, sign, sleep, statuses } from './transactions.js';

/** A landed turn's receipt or the final state is not the module's replay's. */
export class CurtaReplayMismatch extends Error {
  /**
   * @param {string} message
   * @param {{ turn?: number, field?: string, signature?: string }} details
   */
  constructor(message, details) {
    super(message);
    this.name = 'CurtaReplayMismatch';
    /** The turn (the run's turn count after it), or undefined for the final state. */
    this.turn = details.turn;
    /** The first field that differs. */
    this.field = details.field;
    this.signature = details.signature;
  }
}

/**
 * The compute-unit limit of every step: `uniform` (the largest step's,
 * the default), `exact` (each its own) or a number for all.
 * @param {import('./replay.js').Step[]} steps
 * @param {'uniform' | 'exact' | number} policy
 */
export function turnLimits(steps, policy) {
  const uniform = steps.reduce((m, s) => Math.max(m, turnLimit(s.estimatedCu)), 0);
  return steps.map((s) => (policy === 'uniform' ? uniform : policy === 'exact' ? turnLimit(s.estimatedCu) : policy));
}

/**
 * The turns of one priority ramp: twice the window, so a ramp's dearest
 * turn is never in flight with the previous ramp's cheapest.
 * @param {number} window
 */
export const rampPeriod = (window) => 2 * Math.max(1, window);

/**
 * A turn's priority fee in the ramp: 4 lamports for each turn left in its period.
 * @param {number} turnsBefore
 * @param {number} period
 */
export const rampLamports = (turnsBefore, period) => 4 * (period - (turnsBefore % period));

/**
 * The compute-unit price (micro-lamports per unit) that pays at least `lamports` at `cuLimit`.
 * @param {number} lamports
 * @param {number} cuLimit
 */
export function rampPrice(lamports, cuLimit) {
  if (cuLimit === 0) return 0n;
  const n = BigInt(lamports) * 1_000_000n;
  const d = BigInt(cuLimit);
  return (n + d - 1n) / d;
}

/**
 * The priority fee a price pays at a limit, in lamports (rounded up, as the runtime does).
 * @param {bigint} microLamportsPerCu
 * @param {number} cuLimit
 */
export const priorityFee = (microLamportsPerCu, cuLimit) => (microLamportsPerCu * BigInt(cuLimit) + 999_999n) / 1_000_000n;

/**
 * The program's own compute units, from its `consumed` log line.
 * @param {string[]} logs
 * @param {string} programId
 */
export function programUnits(logs, programId) {
  const prefix = `Program ${programId} consumed `;
  for (const line of logs) if (line.startsWith(prefix)) return Number(line.slice(prefix.length).split(' ')[0]);
  return 0;
}

/**
 * A turn that landed and was checked.
 * @typedef {object} TurnRecord
 * @property {number} turn the run's turn count after it
 * @property {string} signature
 * @property {bigint} slot
 * @property {number} cuLimit
 * @property {number} estimatedCu the plan's
 * @property {number} charged the receipt's
 * @property {number} programCu the program's own units, from its log
 * @property {bigint} consumedCu the whole transaction's
 * @property {bigint} fee
 * @property {number} generated
 * @property {number[]} tokens
 * @property {Uint8Array} text
 * @property {string} stateSha256 the state after it (the replay's, which the receipt matched)
 * @property {import('./receipts.js').Receipt} receipt
 */

/**
 * What a crank did.
 * @typedef {object} Cranked
 * @property {string} run
 * @property {string} model
 * @property {import('../format.js').ChargeTable} charges the model's charge table, which the turns were planned with
 * @property {number} allowance the config's turn allowance, which the turns were planned under
 * @property {number} turnsBefore the turn count when it started
 * @property {TurnRecord[]} turns
 * @property {{ turn: number, signature: string, slot: bigint, fee: bigint, error: string }[]} failed turn transactions that landed and failed (StaleTurn)
 * @property {number} turnsByOthers turns someone else sent meanwhile (`turnsBefore + turns.length + turnsByOthers` is the run's turn count at the end)
 * @property {boolean} backedOff whether it found another cranker on the run and followed it, sending nothing, until it stopped
 * @property {string} finalStateSha256
 * @property {Uint8Array} text the text the run's turns added since `turnsBefore`, someone else's included (their states were checked against the replay)
 * @property {bigint} fees
 * @property {number} transactions
 * @property {number} seconds from the first turn sent to the final state checked
 */

/**
 * @typedef {object} CrankOptions
 * @property {Uint8Array} [artifact] the model's artifact (checked against its digests); read from the weight accounts otherwise
 * @property {number} [window] turns in flight, 32 by default
 * @property {'uniform' | 'exact' | number} [cuLimit] `uniform` by default
 * @property {boolean} [priorityRamp] true by default
 * @property {(turn: TurnRecord) => void} [onTurn] every landed, checked turn, in order
 * @property {AbortSignal} [signal] stops the crank (what is in flight may still land; a rerun resumes)
 */

/**
 * Cranks a run to its end; resumes wherever it stopped.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} runAddress
 * @param {CrankOptions} [options]
 * @returns {Promise<Cranked>}
 */
export async function crankRun(client, runAddress, options = {}) {
  const core = requireCore(client, 'crankRun');
  await settle(client);
  const run = await fetchRunAccount(client, runAddress);
  const model = await fetchModel(client, run.model);
  if (model.status !== MODEL_STATUS.sealed) {
    throw new Error(`model ${model.address} is ${model.statusName}: run ${runAddress} can only be closed`);
  }
  await checkModelIdentity(model);
  if (!equalBytes(model.identity, run.modelIdentity)) {
    throw new Error(`model ${model.address} is not the one run ${runAddress} was opened on (its identity changed): the run can only be closed`);
  }
  const config = await fetchConfig(client, model.config);
  const allowance = checkAllowance(config.allowance);
  let artifact = options.artifact;
  if (artifact) await checkArtifact(model, artifact);
  else artifact = await fetchArtifact(client, model);
  const replay = await replayFromState(core, artifact, run.state, { allowance });
  const steps = replay.steps;
  const n = steps.length;
  const weights = model.sections.map((s) => /** @type {any} */ (s.weight));
  const started = Date.now();
  /** @type {Cranked} */
  const out = {
    run: runAddress,
    model: model.address,
    charges: model.charges,
    allowance,
    turnsBefore: readStateInfo(run.state).turns,
    turns: [],
    failed: [],
    turnsByOthers: 0,
    backedOff: false,
    finalStateSha256: hex(await sha256(replay.finalState)),
    text: new Uint8Array(0),
    fees: 0n,
    transactions: 0,
    seconds: 0,
  };
  const limits = turnLimits(steps, options.cuLimit ?? 'uniform');
  const window = Math.max(1, options.window ?? 32);
  const period = rampPeriod(window);
  const ramp = options.priorityRamp ?? true;
  /** @type {({ tx: import('./transactions.js').Signed, cuLimit: number, slot: bigint | null } | null)[]} */
  const flights = steps.map(() => null);
  const attempts = steps.map(() => 0);
  let confirmed = 0;
  let goingBack = false;
  // Someone else cranks this run too: send nothing while it moves the run
  // (each poll reads where it is), and take over when it stops, rather
  // than race a window of turns that would fail.
  let following = false;
  let stillPolls = 0;
  /** @type {Uint8Array[]} */
  const texts = [];
  let heightChecked = Date.now();
  const settledFrom = (/** @type {number} */ i) => flights.slice(i).every((f) => f === null || f.slot !== null);

  /** @param {number} idx */
  const sendTurn = async (idx) => {
    const step = steps[idx];
    // A resent turn asks for one unit more: never the same transaction as the one that failed.
    const cuLimit = Math.min(limits[idx] + attempts[idx], MAX_TRANSACTION_CU);
    const price = ramp ? rampPrice(rampLamports(step.turnsBefore, period), cuLimit) : 0n;
    const ixs = [
      getSetComputeUnitLimitInstruction({ units: cuLimit }),
      ...(price > 0n ? [getSetComputeUnitPriceInstruction({ microLamports: price })] : []),
      ix.turn(client.programId, {
        config: model.config,
        model: /** @type {any} */ (model.address),
        run: /** @type {any} */ (runAddress),
        owner: model.owner,
        sectionZero: weights[0],
        weights: step.sections.map((s) => weights[s]),
        expectedTurns: step.turnsBefore,
      }),
    ];
    const tx = await sign(client, ixs, await latestBlockhash(client, attempts[idx] > 0));
    await journalAndSend(client, [tx]);
    return { tx, cuLimit, slot: null };
  };

  /**
   * Moves past the turns the run ran beyond step `at` (`resync`): each of
   * them that is this crank's own landed turn is checked and recorded as
   * such, the rest were someone else's. Returns how many.
   * @param {number} at
   */
  const catchUp = async (at) => {
    const skipped = await resync(client, runAddress, replay, at);
    for (let idx = at; idx < at + skipped; idx++) {
      const f = flights[idx];
      flights[idx] = null;
      if (f && f.slot !== null) {
        const info = await fetchTransaction(client, f.tx.signature);
        const record = checkTurn(client, steps[idx], f, info, { run: runAddress, model: model.address, royalty: run.royalty });
        options.onTurn?.(record);
        out.turns.push(record);
        texts.push(record.text);
      } else {
        // Its state is the replay's (`resync` checked), and so its text.
        out.turnsByOthers += 1;
        texts.push(steps[idx].text);
      }
    }
    return skipped;
  };

  while (confirmed < n) {
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('the crank was stopped');
    if (goingBack && settledFrom(confirmed)) goingBack = false;
    if (following && settledFrom(confirmed)) {
      await sleep(FOLLOW_POLL_MS);
      const skipped = await catchUp(confirmed);
      confirmed += skipped;
      stillPolls = skipped > 0 ? 0 : stillPolls + 1;
      if (confirmed === n) break;
      // The other cranker has stopped: this one takes the run over.
      following = stillPolls < FOLLOW_STILL_POLLS;
      if (following) continue;
    }
    if (!goingBack && !following) {
      for (let idx = confirmed; idx < Math.min(n, confirmed + window); idx++) {
        if (flights[idx] !== null) continue;
        // A new ramp starts only after the last one has landed.
        if (ramp && idx > confirmed && steps[idx].turnsBefore % period === 0) break;
        if (attempts[idx] > 20) throw new Error(`turn ${steps[idx].turnsBefore + 1} failed ${attempts[idx]} times; giving up`);
        flights[idx] = await sendTurn(idx);
      }
    }
    await sleep(POLL_MS / 2);

    // Statuses of everything in flight.
    const flying = [];
    for (let i = confirmed; i < n; i++) if (flights[i] && flights[i]?.slot === null) flying.push(i);
    const s = await statuses(client, flying.map((i) => /** @type {any} */ (flights[i]).tx.signature));
    for (let k = 0; k < flying.length; k++) {
      const status = s[k];
      const idx = flying[k];
      const f = flights[idx];
      if (!status || !f) continue;
      if (!status.err) {
        f.slot = status.slot;
        continue;
      }
      const turn = steps[idx].turnsBefore + 1;
      const info = await fetchTransaction(client, f.tx.signature).catch(() => null);
      const words = describeTransactionError(status.err, { programId: client.programId, programs: f.tx.programs });
      if (customCode(status.err)?.code !== STALE_TURN) {
        throw new Error(`turn ${turn} failed: ${words} (transaction ${f.tx.signature})${logTail(info?.logs)}`);
      }
      out.failed.push({ turn, signature: f.tx.signature, slot: status.slot, fee: info?.fee ?? 0n, error: words });
      flights[idx] = null;
      attempts[idx] += 1;
      goingBack = true;
    }

    // The turns that landed, in order: receipts checked, then recorded.
    const ready = [];
    for (let i = confirmed; i < n && flights[i]?.slot != null; i++) ready.push(i);
    const infos = await Promise.all(ready.map((i) => fetchTransaction(client, /** @type {any} */ (flights[i]).tx.signature)));
    for (let k = 0; k < ready.length; k++) {
      const idx = ready[k];
      const f = /** @type {NonNullable<typeof flights[0]>} */ (flights[idx]);
      const record = checkTurn(client, steps[idx], f, infos[k], { run: runAddress, model: model.address, royalty: run.royalty });
      options.onTurn?.(record);
      out.turns.push(record);
      texts.push(record.text);
      confirmed += 1;
    }

    // A failed turn with nothing before it in flight: the run is not where
    // the replay expects. Someone else moved it, or the failure was a reordering.
    if (confirmed < n && flights[confirmed] === null && attempts[confirmed] > 0 && goingBack && settledFrom(confirmed)) {
      const skipped = await catchUp(confirmed);
      if (skipped > 0) {
        confirmed += skipped;
        following = true;
        stillPolls = 0;
        out.backedOff = true;
      }
    }

    // Turns whose blockhash expired unseen are sent again.
    if (Date.now() - heightChecked > 2000) {
      heightChecked = Date.now();
      const height = await blockHeight(client);
      for (let i = confirmed; i < n; i++) {
        const f = flights[i];
        if (f && f.slot === null && f.tx.lastValidBlockHeight < height) {
          flights[i] = null;
          attempts[i] += 1;
          goingBack = true;
        }
      }
    }
  }

  // The chain's final state, byte for byte.
  const after = await fetchRunAccount(client, runAddress);
  const diff = firstDifference(core, model.configBytes, replay.finalState, after.state);
  if (diff) throw new CurtaReplayMismatch(`the run's final state differs from the module's replay: ${diff.words}`, { field: diff.field });
  out.text = new Uint8Array(texts.reduce((a, t) => a + t.length, 0));
  texts.reduce((at, t) => (out.text.set(t, at), at + t.length), 0);
  out.fees = out.turns.reduce((a, t) => a + t.fee, 0n) + out.failed.reduce((a, t) => a + t.fee, 0n);
  out.transactions = out.turns.length + out.failed.length;
  out.seconds = (Date.now() - started) / 1000;
  return out;
}

/** How often a crank that found another cranker on the run reads where it is. */
export const FOLLOW_POLL_MS = 800;
/** Reads without the run moving after which the other cranker is taken to have stopped. */
export const FOLLOW_STILL_POLLS = 3;

/**
 * Checks a landed turn's receipt against the replay's step.
 * @param {import('./client.js').CurtaClient} client
 * @param {import('./replay.js').Step} step
 * @param {{ tx: import('./transactions.js').Signed, cuLimit: number, slot: bigint | null }} f
 * @param {import('./transactions.js').TxInfo} tx
 * @param {{ run: string, model: string, royalty: bigint }} expected
 * @returns {TurnRecord}
 */
function checkTurn(client, step, f, tx, expected) {
  const turn = step.turnsBefore + 1;
  const found = receiptsFromLogs(tx.logs);
  if (found.length !== 1) {
    throw new CurtaReplayMismatch(`turn ${turn} (transaction ${f.tx.signature}) logged ${found.length} receipts, not one${logTail(tx.logs)}`, {
      turn,
      field: 'receipt',
      signature: f.tx.signature,
    });
  }
  const receipt = found[0];
  const diffs = receiptDifferences(receipt, step, expected);
  if (diffs.length > 0) {
    const lines = diffs.map((d) => `${d.field}: the receipt has ${d.receipt}, the replay ${d.replay}`);
    throw new CurtaReplayMismatch(`turn ${turn} (transaction ${f.tx.signature}) is not the module's replay:\n  ${lines.join('\n  ')}`, {
      turn,
      field: diffs[0].field,
      signature: f.tx.signature,
    });
  }
  return {
    turn,
    signature: f.tx.signature,
    slot: f.slot ?? tx.slot,
    cuLimit: f.cuLimit,
    estimatedCu: step.estimatedCu,
    charged: receipt.charged,
    programCu: programUnits(tx.logs, client.programId),
    consumedCu: tx.computeUnits,
    fee: tx.fee,
    generated: step.generated,
    tokens: step.tokens,
    text: step.text,
    stateSha256: step.stateSha256,
    receipt,
  };
}

/**
 * The run's state is not at step `at`: how many steps it is past (someone
 * else's turns), after checking its state is the replay's there.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} runAddress
 * @param {import('./replay.js').Replay} replay
 * @param {number} at
 */
async function resync(client, runAddress, replay, at) {
  const state = (await fetchRunAccount(client, runAddress)).state;
  const turns = readStateInfo(state).turns;
  const steps = replay.steps;
  if (turns === steps[at].turnsBefore) return 0; // where it should be: the failure was a reordering
  let done = steps.findIndex((s) => s.turnsBefore === turns);
  if (done < 0) {
    if (turns === steps[steps.length - 1].turnsBefore + 1) done = steps.length;
    else throw new Error(`run ${runAddress} has run ${turns} turns, which its replay never reaches`);
  }
  const want = done === steps.length ? hex(await sha256(replay.finalState)) : done === 0 ? replay.initialSha256 : steps[done - 1].stateSha256;
  const got = hex(await sha256(state));
  if (done < at || got !== want) {
    throw new CurtaReplayMismatch(
      `run ${runAddress} was moved to turn ${turns} by someone else, and its state there is not the replay's (sha256 ${got} on chain, ${want} replayed)`,
      { turn: turns, field: 'state' },
    );
  }
  return done - at;
}

/**
 * Where two states first differ, in the module's words (`CoreWasm.stateDifference`):
 * `field` names the header field or the buffer element, `words` says both
 * values.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} configBytes
 * @param {Uint8Array} want the replay's state
 * @param {Uint8Array} got the chain's
 * @returns {{ field: string, words: string } | null}
 */
export function firstDifference(core, configBytes, want, got) {
  const difference = core.stateDifference(configBytes, want, got);
  return difference && { field: difference.place, words: difference.words };
}
