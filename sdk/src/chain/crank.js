// @ts-check
// Cranking a run: every remaining turn, pipelined, checked. The crank is
// the client core's state machine (core/src/client/crank.rs, through the
// module's `CrankMachine`), the same one `curta run crank` runs natively:
// its window, go-back on StaleTurn, resends after an expired blockhash,
// backing off from another cranker, the priority ramp, the fee payer's
// balance and every receipt and the final state checked against the
// replay (docs/client.md, "Cranking"). This file does its I/O: RPC,
// signing, the journal and timers.

import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';

import { CrankMachine } from '../crank-machine.js';
import { decodeRunAccount, ModelStatus } from './accounts.js';
import { equalBytes, fromBase64 } from './bytes.js';
import { requireCore } from './client.js';
import { customCode, describeTransactionError, logTail } from './errors.js';
import { fetchModel, fetchRawAccount, fetchRunAccount } from './fetch.js';
import * as ix from './instructions.js';
import { checkArtifact, checkModelIdentity, fetchArtifact } from './models.js';
import { rentFor } from './rent.js';
import { checkAllowance } from './replay.js';
import { blockHeight, fetchTransaction, journalAndSend, lamportsPerSignature, latestBlockhash, settle, sign, sleep, statuses } from './transactions.js';

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
 */

/**
 * A turn transaction that landed and failed.
 * @typedef {{ turn: number, signature: string, slot: bigint, fee: bigint, error: string }} FailedTurn
 */

/**
 * What a crank did.
 * @typedef {object} Cranked
 * @property {string} run
 * @property {string} model
 * @property {import('../format.js').ChargeTable} charges the model's charge table, which the turns were planned with
 * @property {number} allowance the run's turn allowance (its config's at opening), which the turns were planned under
 * @property {number} turnsBefore the turn count when it started
 * @property {TurnRecord[]} turns
 * @property {FailedTurn[]} failed turn transactions that landed and failed (StaleTurn)
 * @property {number} turnsByOthers turns someone else sent meanwhile (`turnsBefore + turns.length + turnsByOthers` is the run's turn count at the end)
 * @property {boolean} backedOff whether it found another cranker on the run and followed it, sending nothing, until it stopped
 * @property {number} backoffs how many times it did (each encounter costs at most the window it had in flight)
 * @property {number} inFlightMost the most turns it had in flight at once
 * @property {boolean} leftToOthers whether it found another cranker on the run and left the run to it (`leaveToOthers`): the run is not complete
 * @property {boolean} leftUnpaid whether it ended where the run's turns stop paying `minPayment`: the run is not complete
 * @property {boolean} closedAfter whether the run was closed after its last turn, before the final read (by an opener taking its text): every receipt was checked
 * @property {string} finalStateSha256
 * @property {Uint8Array} text the text the run's turns added since `turnsBefore`, someone else's included (their states were checked against the replay)
 * @property {bigint} fees
 * @property {bigint} earned the crank fees the runs paid the payer for its turns
 * @property {number} transactions
 * @property {number} seconds from the first turn sent to the final state checked
 */

/**
 * @typedef {object} CrankOptions
 * @property {Uint8Array} [artifact] the model's artifact (checked against its digests); read from the weight accounts otherwise
 * @property {number} [window] turns in flight; 0 (the default): measured
 * @property {'uniform' | 'exact' | number} [cuLimit] `exact` by default
 * @property {boolean} [priorityRamp] true by default
 * @property {boolean} [leaveToOthers] on finding another cranker on the run, leave the run to it (the crank returns `leftToOthers`) instead of following it; until its first turn lands it keeps one turn in flight, so the encounter costs one failed turn. A fleet's cranker moves on to another run. False by default
 * @property {bigint} [minPayment] send only the turns that pay the payer at least this many lamports (the crank fee while the deposit lasts, then its rest, then nothing) and end where they stop (`leftUnpaid`); every turn by default
 * @property {boolean} [followFirst] start as if following another cranker: send nothing until the run has stood still for three reads (a run left to another cranker, come back to); false by default
 * @property {bigint} [reserve] lamports the payer must still hold after every fee besides an empty account's rent exemption (a session key keeps its close's fee); 0n by default. The crank never sends a turn whose failure, with every turn in flight failing too, would leave the payer unable to pay each turn left once
 * @property {(turn: TurnRecord) => void} [onTurn] every landed, checked turn, in order
 * @property {(failed: FailedTurn) => void} [onFailed] every turn transaction that landed and failed (StaleTurn), whose fee was paid all the same
 * @property {AbortSignal} [signal] stops the crank (what is in flight may still land; a rerun resumes)
 */

/**
 * Cranks a run to its end; resumes wherever it stopped. The crank itself
 * is the module's (`CrankMachine`): this function does its I/O.
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
  if (model.status !== ModelStatus.Sealed) {
    throw new Error(`model ${model.address} is ${model.statusName}: run ${runAddress} can only be closed`);
  }
  checkModelIdentity(core, model);
  if (!equalBytes(model.modelIdentity, run.modelIdentity)) {
    throw new Error(`model ${model.address} is not the one run ${runAddress} was opened on (its identity changed): the run can only be closed`);
  }
  // The allowance the run recorded at opening: the program plans every
  // turn of it under that, whatever its config's allowance is now.
  if (run.allowance === 0) {
    throw new Error(`run ${runAddress} was opened by an older program, which recorded no turn allowance: it cannot turn, and can only be closed`);
  }
  const allowance = checkAllowance(run.allowance, "the run's turn allowance");
  let artifact = options.artifact;
  if (artifact) checkArtifact(core, model, artifact);
  else artifact = await fetchArtifact(client, model);
  const crank = new CrankMachine(core, artifact, run.state, {
    programId: client.programId,
    run: runAddress,
    model: model.address,
    payer: client.payer.address,
    royalty: run.royalty,
    crankFee: run.crankFee,
    crankDeposit: run.crankDeposit,
    owner: model.owner,
    keep: (await rentFor(client, 0)) + (options.reserve ?? 0n),
    lamportsPerSignature: await lamportsPerSignature(client),
    allowance,
    window: options.window ?? 0,
    cuLimit: options.cuLimit ?? 'exact',
    priorityRamp: options.priorityRamp ?? true,
    leaveToOthers: options.leaveToOthers ?? false,
    followFirst: options.followFirst ?? false,
    ...(options.minPayment === undefined ? {} : { minPayment: options.minPayment }),
  });
  const weights = model.sections.map((s) => /** @type {any} */ (s.weight));
  const started = Date.now();
  /** @type {Map<string, import('./transactions.js').Signed>} */
  const sent = new Map();
  /** Records handed to `onTurn` so far. */
  let told = 0;
  /** Whether the last answer was transactions read, after which turns may be recorded. */
  let read = false;
  /** Failed records handed to `onFailed` so far. */
  let toldFailed = 0;
  /** Whether the last answer named a failed transaction, which is then recorded. */
  let failedRead = false;
  try {
    let action = crank.next({ event: 'start' });
    for (;;) {
      if (options.signal?.aborted && action.action !== 'stop' && action.action !== 'done') {
        action = crank.next({ event: 'cancel' });
      }
      if (options.onTurn && read) {
        const turns = crank.summary().turns;
        for (; told < turns.length; told++) options.onTurn(turnRecord(turns[told]));
      }
      if (options.onFailed && failedRead) {
        const failed = crank.summary().failed;
        for (; toldFailed < failed.length; toldFailed++) options.onFailed(failedTurn(failed[toldFailed]));
      }
      if (action.action === 'done') break;
      if (action.action === 'stop') {
        if (action.kind === 'cancelled') throw options.signal?.reason ?? new Error(action.words);
        if (action.kind === 'mismatch') {
          throw new CurtaReplayMismatch(action.words, { turn: action.turn === null ? undefined : Number(action.turn), field: action.field ?? undefined, signature: action.signature ?? undefined });
        }
        throw new Error(action.kind === 'out-of-funds' ? `${action.words}; fund it and run the crank again` : action.words);
      }
      read = action.action === 'transactions';
      const answer = await perform(action);
      failedRead = answer[0].event === 'statuses' && /** @type {any} */ (answer[0]).statuses.some((/** @type {any} */ st) => st.status === 'failed');
      action = crank.next(...answer);
    }
    const s = crank.summary();
    return {
      run: runAddress,
      model: model.address,
      charges: model.charges,
      allowance,
      turnsBefore: Number(s.turnsBefore),
      turns: s.turns.map(turnRecord),
      failed: s.failed.map(failedTurn),
      turnsByOthers: Number(s.turnsByOthers),
      backedOff: s.backedOff,
      backoffs: Number(s.backoffs),
      inFlightMost: Number(s.inFlightMost),
      leftToOthers: s.leftToOthers,
      leftUnpaid: s.leftUnpaid,
      closedAfter: s.closedAfter,
      finalStateSha256: s.finalStateSha256,
      text: fromBase64(s.text),
      fees: BigInt(s.fees),
      earned: BigInt(s.earned),
      transactions: Number(s.transactions),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    crank.free();
  }

  /**
   * Does what an action asks; returns the event (and bytes) answering it.
   * @param {any} action
   * @returns {Promise<[object, Uint8Array?]>}
   */
  async function perform(action) {
    switch (action.action) {
      case 'send': {
        const cuLimit = action.cuLimit;
        const price = BigInt(action.microLamports);
        const ixs = [
          getSetComputeUnitLimitInstruction({ units: cuLimit }),
          ...(price > 0n ? [getSetComputeUnitPriceInstruction({ microLamports: price })] : []),
          ix.turn(client.programId, {
            config: model.config,
            model: /** @type {any} */ (model.address),
            run: /** @type {any} */ (runAddress),
            owner: model.owner,
            sectionZero: weights[0],
            cranker: client.payer,
            weights: action.sections.map((/** @type {number} */ s) => weights[s]),
            expectedTurns: Number(action.expectedTurns),
          }),
        ];
        const tx = await sign(client, ixs, await latestBlockhash(client, action.freshBlockhash));
        const [refused] = await journalAndSend(client, [tx]);
        if (refused) throw refused;
        sent.set(tx.signature, tx);
        return [{ event: 'sent', signature: tx.signature, lastValidHeight: tx.lastValidBlockHeight }];
      }
      case 'wait':
        await sleep(action.ms);
        return [{ event: 'waited', nowMs: Date.now() - started }];
      case 'statuses': {
        const found = await statuses(client, action.signatures, { seen: true });
        const out = [];
        for (const [i, status] of found.entries()) {
          if (!status) out.push({ status: 'pending' });
          else if (status.seen) out.push({ status: 'seen', slot: status.slot });
          else if (!status.err) out.push({ status: 'landed', slot: status.slot });
          else {
            const signature = action.signatures[i];
            const info = await fetchTransaction(client, signature).catch(() => null);
            const programs = sent.get(signature)?.programs;
            const custom = customCode(status.err);
            const curtas = custom && (programs?.[custom.instruction] ?? client.programId) === client.programId;
            out.push({
              status: 'failed',
              slot: status.slot,
              fee: info?.fee ?? 0n,
              custom: curtas ? custom.code : null,
              words: describeTransactionError(client.core, status.err, { programId: client.programId, programs }),
              logTail: logTail(client.core, info?.logs),
            });
          }
        }
        return [{ event: 'statuses', statuses: out }];
      }
      case 'transactions': {
        const infos = await Promise.all(action.signatures.map((/** @type {string} */ sig) => fetchTransaction(client, sig)));
        return [{ event: 'transactions', transactions: infos.map((t) => ({ slot: t.slot, fee: t.fee, consumedCu: t.computeUnits, logs: t.logs })) }];
      }
      case 'readRun': {
        // A closed account, or one that is no opened run, reads as no state.
        const raw = await fetchRawAccount(client, runAddress);
        let state = new Uint8Array(0);
        if (raw && raw.owner === client.programId) {
          try {
            state = decodeRunAccount(raw.data, `run ${runAddress}`).state;
          } catch {}
        }
        return [{ event: 'runState' }, state];
      }
      case 'height': {
        const [height, balance] = await Promise.all([blockHeight(client), client.rpc.getBalance(client.payer.address, { commitment: client.commitment }).send()]);
        return [{ event: 'height', height, balance: balance.value }];
      }
      default:
        throw new Error(`the crank asked for ${action.action}, which this client does not know`);
    }
  }
}

/**
 * A turn the module's crank recorded, as `crankRun` returns it.
 * @param {any} t
 * @returns {TurnRecord}
 */
function turnRecord(t) {
  return {
    turn: Number(t.turn),
    signature: t.signature,
    slot: BigInt(t.slot),
    cuLimit: t.cuLimit,
    estimatedCu: t.estimatedCu,
    charged: t.charged,
    programCu: Number(t.programCu),
    consumedCu: BigInt(t.consumedCu),
    fee: BigInt(t.fee),
    generated: t.generated,
    tokens: t.tokens,
    text: fromBase64(t.text),
    stateSha256: t.stateSha256,
  };
}

/**
 * A failed turn the module's crank recorded.
 * @param {any} f
 * @returns {FailedTurn}
 */
function failedTurn(f) {
  return { turn: Number(f.turn), signature: f.signature, slot: BigInt(f.slot), fee: BigInt(f.fee), error: f.error };
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
