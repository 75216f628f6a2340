// @ts-check
// Building, signing, sending and landing transactions: one at a time
// (`sendAndConfirm`), or many independent ones (`sendAll`, for weight
// writes and bindings: the I/O of the module's batch, which keeps a window
// in flight and signs again those whose blockhash expires unseen).
// Every transaction is recorded in the client's journal before it is sent.

import {
  appendTransactionMessageInstructions,
  compileTransactionMessage,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageEncoder,
  getSignatureFromTransaction,
  getTransactionMessageSize,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';

import { BatchMachine } from '../batch-machine.js';
import { toBase64 } from './bytes.js';
import { requireCore } from './client.js';
import { CurtaTransactionError, logTail, transactionError } from './errors.js';

/** The most bytes a transaction may take on the wire. */
export const PACKET_DATA_SIZE = 1232;
/** How often statuses are polled. */
export const POLL_MS = 200;
/** HTTP requests sending transactions at once. */
const CONCURRENT_SENDS = 16;
/** How long a cached blockhash is reused. */
const BLOCKHASH_MS = 1000;

/**
 * @typedef {import('./client.js').CurtaClient} CurtaClient
 * @typedef {import('@solana/kit').Instruction} Instruction
 * @typedef {{ blockhash: any, lastValidBlockHeight: bigint }} Lifetime
 */

export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** A stand-in blockhash for sizing messages. */
const SIZING_LIFETIME = { blockhash: /** @type {any} */ ('11111111111111111111111111111111'), lastValidBlockHeight: 0n };

/**
 * The message of `instructions` paid by the client's payer.
 * @param {CurtaClient} client
 * @param {Instruction[]} instructions
 * @param {Lifetime} lifetime
 */
function message(client, instructions, lifetime) {
  return pipe(
    createTransactionMessage({ version: 'legacy' }),
    (m) => setTransactionMessageFeePayerSigner(client.payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

/**
 * The size on the wire of a transaction of `instructions`, every signature included.
 * @param {CurtaClient} client
 * @param {Instruction[]} instructions
 */
export function transactionSize(client, instructions) {
  return getTransactionMessageSize(message(client, instructions, SIZING_LIFETIME));
}

/**
 * Whether `instructions` fit one transaction.
 * @param {CurtaClient} client
 * @param {Instruction[]} instructions
 */
export const fits = (client, instructions) => transactionSize(client, instructions) <= PACKET_DATA_SIZE;

/**
 * A recent blockhash (reused for a second), or a fresh one.
 * @param {CurtaClient} client
 * @param {boolean} [fresh]
 * @returns {Promise<Lifetime>}
 */
export async function latestBlockhash(client, fresh = false) {
  const c = client.cache.blockhash;
  if (!fresh && c && Date.now() - c.at < BLOCKHASH_MS) return c.value;
  const { value } = await client.rpc.getLatestBlockhash({ commitment: client.commitment }).send();
  client.cache.blockhash = { value, at: Date.now() };
  return value;
}

/**
 * What the cluster charges for a transaction of `instructions` paid by the
 * client's payer alone (its own schedule: signatures, priority, and
 * whatever else it prices, such as SIMD-0553's requested compute units).
 * @param {CurtaClient} client
 * @param {Instruction[]} instructions
 */
export async function feeForMessage(client, instructions) {
  const m = message(client, instructions, await latestBlockhash(client));
  const bytes = getCompiledTransactionMessageEncoder().encode(compileTransactionMessage(m));
  const { value } = await client.rpc.getFeeForMessage(/** @type {any} */ (toBase64(new Uint8Array(bytes))), { commitment: client.commitment }).send();
  if (value === null) throw new Error('the cluster priced no fee for a message with a fresh blockhash');
  return BigInt(value);
}

/**
 * The fee of one signature, from the cluster.
 * @param {CurtaClient} client
 */
export async function lamportsPerSignature(client) {
  if (client.cache.lamportsPerSignature !== undefined) return client.cache.lamportsPerSignature;
  client.cache.lamportsPerSignature = await feeForMessage(client, []);
  return client.cache.lamportsPerSignature;
}

/**
 * A signed transaction.
 * @typedef {object} Signed
 * @property {string} signature
 * @property {string} wire base64
 * @property {bigint} lastValidBlockHeight
 * @property {number} signatures how many it carries
 * @property {string[]} programs the program of each instruction, for errors
 */

/**
 * Signs `instructions` (every signer rides in their account metas; the
 * payer signs as fee payer).
 * @param {CurtaClient} client
 * @param {Instruction[]} instructions
 * @param {Lifetime} lifetime
 * @returns {Promise<Signed>}
 */
export async function sign(client, instructions, lifetime) {
  const tx = await signTransactionMessageWithSigners(message(client, instructions, lifetime));
  return {
    signature: getSignatureFromTransaction(tx),
    wire: getBase64EncodedWireTransaction(tx),
    lastValidBlockHeight: BigInt(lifetime.lastValidBlockHeight),
    signatures: Object.keys(tx.signatures).length,
    programs: instructions.map((i) => i.programAddress),
  };
}

/**
 * Records transactions in the journal, then sends them; returns, per
 * transaction, null (the node took it) or the error saying why not.
 * @param {CurtaClient} client
 * @param {Signed[]} txs
 * @returns {Promise<(Error | null)[]>}
 */
export async function journalAndSend(client, txs) {
  await client.journal.record(
    txs.map((t) => ({ signature: t.signature, lastValidBlockHeight: t.lastValidBlockHeight.toString(), wire: t.wire })),
  );
  /** @type {(Error | null)[]} */
  const refusals = txs.map(() => null);
  // A few requests at a time: hundreds at once make the RPC node slower, not faster.
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < txs.length; i = next++) {
      await sendWire(client, txs[i].wire).catch((/** @type {Error} */ e) => (refusals[i] = e));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_SENDS, txs.length) }, worker));
  return refusals;
}

/**
 * Hands a signed transaction to the RPC (no preflight: a failure is seen
 * in its status), a few times if the RPC does not answer.
 * @param {CurtaClient} client
 * @param {string} wire
 */
export async function sendWire(client, wire) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.rpc
        .sendTransaction(/** @type {any} */ (wire), { encoding: 'base64', skipPreflight: true, preflightCommitment: client.commitment })
        .send();
    } catch (e) {
      if (attempt >= 3) throw new CurtaTransactionError(`the cluster did not take a transaction: ${/** @type {Error} */ (e).message}`, { raw: e });
      await sleep(250);
    }
  }
}

/**
 * @param {CurtaClient} client
 * @param {{ confirmationStatus?: string | null } | null} status
 */
function satisfies(client, status) {
  const order = ['processed', 'confirmed', 'finalized'];
  return status !== null && order.indexOf(status.confirmationStatus ?? 'processed') >= order.indexOf(client.commitment);
}

/**
 * Notes the slot a transaction landed in: the client's account reads then
 * ask for a bank at least that recent (`minContextSlot`, `fetchRawAccount`),
 * so that what it just did is in what it reads, whichever node answers.
 * @param {CurtaClient} client
 * @param {bigint} slot
 */
export function sawSlot(client, slot) {
  if (slot > (client.cache.slotSeen ?? 0n)) client.cache.slotSeen = slot;
}

/**
 * The statuses of `signatures` (null: not seen, or not yet at the client's
 * commitment; with `seen`, a transaction run without error but not yet at
 * the commitment is `{ slot, err: null, seen: true }`).
 * @param {CurtaClient} client
 * @param {string[]} signatures
 * @param {{ seen?: boolean }} [options]
 * @returns {Promise<({ slot: bigint, err: any, seen?: boolean } | null)[]>}
 */
export async function statuses(client, signatures, options = {}) {
  const out = [];
  for (let i = 0; i < signatures.length; i += 256) {
    const { value } = await client.rpc.getSignatureStatuses(/** @type {any[]} */ (signatures.slice(i, i + 256))).send();
    for (const s of value) {
      if (s && satisfies(client, s)) sawSlot(client, BigInt(s.slot));
      if (s && satisfies(client, s)) out.push({ slot: BigInt(s.slot), err: s.err });
      else if (s && options.seen && !s.err) out.push({ slot: BigInt(s.slot), err: null, seen: true });
      else out.push(null);
    }
  }
  return out;
}

/**
 * @param {CurtaClient} client
 */
export async function blockHeight(client) {
  return BigInt(await client.rpc.getBlockHeight({ commitment: client.commitment }).send());
}

/**
 * A landed transaction's logs, fee and compute units.
 * @typedef {object} TxInfo
 * @property {bigint} slot
 * @property {string[]} logs
 * @property {bigint} fee
 * @property {bigint} computeUnits
 * @property {any} err
 * @property {string} payer the fee payer (the message's first account)
 */

/**
 * @param {CurtaClient} client
 * @param {string} signature
 * @returns {Promise<TxInfo>}
 */
export async function fetchTransaction(client, signature) {
  for (let attempt = 0; ; attempt++) {
    const tx = await client.rpc
      .getTransaction(/** @type {any} */ (signature), {
        encoding: 'json',
        commitment: client.commitment === 'processed' ? 'confirmed' : client.commitment,
        maxSupportedTransactionVersion: 0,
      })
      .send();
    if (tx) {
      return {
        slot: BigInt(tx.slot),
        logs: tx.meta?.logMessages ? [...tx.meta.logMessages] : [],
        fee: BigInt(tx.meta?.fee ?? 0),
        computeUnits: BigInt(tx.meta?.computeUnitsConsumed ?? 0),
        err: tx.meta?.err ?? null,
        payer: String(tx.transaction.message.accountKeys[0]),
      };
    }
    if (attempt > 50) throw new Error(`transaction ${signature} landed but the cluster does not return it`);
    await sleep(100);
  }
}

/**
 * The error of a landed transaction, in words, with its log's end.
 * @param {CurtaClient} client
 * @param {string} what
 * @param {{ signature: string, programs: string[] }} tx its signature and the program of each instruction
 * @param {any} err
 */
export async function failure(client, what, tx, err) {
  const info = await fetchTransaction(client, tx.signature).catch(() => null);
  const c = err?.InstructionError?.[1]?.Custom;
  const { words, name } = transactionError(client.core, err, { programId: client.programId, programs: tx.programs });
  return new CurtaTransactionError(`${what} failed: ${words} (transaction ${tx.signature})${logTail(client.core, info?.logs)}`, {
    signature: tx.signature,
    code: c === undefined ? undefined : Number(c),
    programName: name ?? undefined,
    instruction: err?.InstructionError ? Number(err.InstructionError[0]) : undefined,
    logs: info?.logs,
    raw: err,
  });
}

/**
 * Lands what a stopped process left in flight (each sent again: it may
 * have died between recording and sending), and waits until each has
 * landed or can no longer land; once per client, before it reads the chain.
 * @param {CurtaClient} client
 */
export function settle(client) {
  client.cache.settled ??= (async () => {
    const left = await client.journal.left();
    if (left.length === 0) return client.journal.settled();
    await Promise.all(left.map((e) => sendWire(client, e.wire).catch(() => null)));
    let pending = left;
    while (pending.length > 0) {
      const s = await statuses(client, pending.map((e) => e.signature));
      const height = await blockHeight(client);
      pending = pending.filter((e, i) => s[i] === null && BigInt(e.lastValidBlockHeight) >= height);
      if (pending.length > 0) await sleep(POLL_MS);
    }
    await client.journal.settled();
  })();
  return client.cache.settled;
}

/**
 * What a batch cost.
 * @typedef {object} Summary
 * @property {number} transactions
 * @property {bigint} fees lamports, base fees of the signatures
 * @property {bigint} firstSlot
 * @property {bigint} lastSlot
 */

/** @returns {Summary} */
export const emptySummary = () => ({ transactions: 0, fees: 0n, firstSlot: 0n, lastSlot: 0n });

/**
 * @param {Summary} s
 * @param {bigint} slot
 * @param {bigint} fee
 */
export function addLanded(s, slot, fee) {
  s.firstSlot = s.transactions === 0 || slot < s.firstSlot ? slot : s.firstSlot;
  s.lastSlot = slot > s.lastSlot ? slot : s.lastSlot;
  s.transactions += 1;
  s.fees += fee;
}

/** @param {Summary} into @param {Summary} s */
export function addSummary(into, s) {
  if (s.transactions === 0) return;
  into.firstSlot = into.transactions === 0 || s.firstSlot < into.firstSlot ? s.firstSlot : into.firstSlot;
  into.lastSlot = s.lastSlot > into.lastSlot ? s.lastSlot : into.lastSlot;
  into.transactions += s.transactions;
  into.fees += s.fees;
}

/**
 * Sends one transaction and waits until it lands; throws its error in words.
 * @param {CurtaClient} client
 * @param {string} what "sealing the model", for errors
 * @param {Instruction[]} instructions
 * @returns {Promise<{ signature: string, slot: bigint, fee: bigint }>}
 */
export async function sendAndConfirm(client, what, instructions) {
  const per = await lamportsPerSignature(client);
  for (let attempt = 0; attempt < 5; attempt++) {
    const tx = await sign(client, instructions, await latestBlockhash(client, attempt > 0));
    const [refused] = await journalAndSend(client, [tx]);
    if (refused) throw refused;
    for (;;) {
      await sleep(POLL_MS / 2);
      const [s] = await statuses(client, [tx.signature]);
      if (s) {
        if (s.err) throw await failure(client, what, tx, s.err);
        return { signature: tx.signature, slot: s.slot, fee: per * BigInt(tx.signatures) };
      }
      if ((await blockHeight(client)) > tx.lastValidBlockHeight) break; // expired unseen: sign again
    }
  }
  throw new CurtaTransactionError(`${what}: expired five times without landing; is the cluster overloaded?`);
}

/**
 * One transaction of a batch.
 * @typedef {object} Job
 * @property {string} what for errors: "writing section 1 at offset 4,930"
 * @property {Instruction[]} instructions
 * @property {number} units its share of the progress (bytes written, say)
 */

/**
 * Lands every job, in any order, with up to `inFlight` in flight; stops at
 * the first that fails on chain. The batch is the module's
 * (`client::batch`, docs/client.md, "A batch as a state machine"): its
 * window, resends and limits; this function does its I/O.
 * @param {CurtaClient} client
 * @param {Job[]} jobs
 * @param {{ inFlight?: number, onLanded?: (job: Job) => void }} [options]
 * @returns {Promise<Summary>}
 */
export async function sendAll(client, jobs, options = {}) {
  if (jobs.length === 0) return emptySummary();
  const core = requireCore(client, 'sendAll');
  const setup = { whats: jobs.map((j) => j.what), lamportsPerSignature: await lamportsPerSignature(client), inFlight: options.inFlight };
  const batch = new BatchMachine(core, setup);
  const started = Date.now();
  try {
    for (let action = batch.next({ event: 'start' }); ; ) {
      for (const j of action.landed) options.onLanded?.(jobs[j]);
      if (action.action === 'done') {
        return { transactions: Number(action.transactions), fees: BigInt(action.fees), firstSlot: BigInt(action.firstSlot), lastSlot: BigInt(action.lastSlot) };
      }
      if (action.action === 'stop') {
        if (action.kind !== 'failed') throw new CurtaTransactionError(action.words);
        const [status] = await statuses(client, [action.signature]);
        const programs = jobs[action.job].instructions.map((i) => i.programAddress);
        throw await failure(client, jobs[action.job].what, { signature: action.signature, programs }, status?.err);
      }
      if (action.action === 'sign') {
        const lifetime = await latestBlockhash(client, action.freshBlockhash);
        const signed = await Promise.all(action.jobs.map((/** @type {number} */ j) => sign(client, jobs[j].instructions, lifetime)));
        const refusals = await journalAndSend(client, signed);
        const answers = signed.map((tx, k) =>
          refusals[k] ? { refused: refusals[k]?.message } : { signature: tx.signature, lastValidHeight: tx.lastValidBlockHeight, signatures: tx.signatures },
        );
        action = batch.next({ event: 'sent', sent: answers });
      } else if (action.action === 'wait') {
        await sleep(action.ms);
        action = batch.next({ event: 'waited', nowMs: Date.now() - started });
      } else if (action.action === 'statuses') {
        const found = await statuses(client, action.signatures);
        action = batch.next({ event: 'statuses', statuses: found.map((st) => st && { slot: st.slot, failed: Boolean(st.err) }) });
      } else if (action.action === 'height') {
        action = batch.next({ event: 'height', height: await blockHeight(client) });
      } else {
        throw new Error(`the batch asked for ${action.action}, which this client does not know`);
      }
    }
  } finally {
    batch.free();
  }
}
