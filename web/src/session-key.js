// The session key: a key made in this page that the wallet funds once, and
// that then pays for and signs every transaction of a run (open, turns,
// close) and sends back what is left. Its seed is kept in IndexedDB with the
// run it works on, so a reload mid-run finds the same key and, since the
// chain client derives the run's account from it, the same run.
import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { getItem, removeItem, setItem } from './store.js';

const KEY = 'session';

/**
 * What a session is for, kept beside its key.
 * @typedef {object} SessionRecord
 * @property {Uint8Array} seed 32 bytes, the ed25519 seed
 * @property {string} cluster the RPC URL
 * @property {string} programId
 * @property {string} model the model's address
 * @property {string} owner the wallet that funded it, which gets back what is left
 * @property {{ prompt: string, maxTokens: number, temperature: string, seed: string }} run
 * @property {'created' | 'funded' | 'running' | 'done'} phase
 * @property {number} quotedTurns the quote's turns, for the progress bar
 * @property {string} [crankFee] lamports a turn to crankers (decimal); absent or "0": the key cranks
 * @property {string} [crankDeposit] the crank deposit the run was opened with (decimal)
 * @property {number} [allowance] the turn allowance the run recorded at opening (its turns are planned under it)
 * @property {string} [fundingSignature]
 * @property {string} [runAddress] once it is opened
 * @property {number} [clickedAt] when "Generate on chain" was clicked, ms since 1970 (a reload's clock starts again)
 * @property {string} [fees] lamports paid in fees before the turns: the funding, then the opening too (decimal)
 */

/**
 * Tells the page that the session began, moved on or ended: a
 * `curta-session` event whose `detail` is the record, or null.
 * @param {SessionRecord | null} record
 */
function told(record) {
  globalThis.dispatchEvent?.(new CustomEvent('curta-session', { detail: record }));
}

/** The session left by an earlier page load, if any. @returns {Promise<SessionRecord | undefined>} */
export async function savedSession() {
  return getItem(KEY);
}

/**
 * A new session key for a run (replacing none: the caller has settled the last).
 * @param {Omit<SessionRecord, 'seed' | 'phase'>} what
 * @returns {Promise<SessionRecord>}
 */
export async function newSession(what) {
  const record = { ...what, seed: crypto.getRandomValues(new Uint8Array(32)), phase: /** @type {const} */ ('created') };
  await setItem(KEY, record);
  told(record);
  return record;
}

/**
 * @param {SessionRecord} record
 * @param {Partial<SessionRecord>} change
 */
export async function updateSession(record, change) {
  Object.assign(record, change);
  await setItem(KEY, record);
  told(record);
  return record;
}

/** Forgets the session once its lamports are back with the wallet. */
export async function endSession() {
  await removeItem(KEY);
  told(null);
}

/** @param {SessionRecord} record */
export function sessionSigner(record) {
  return createKeyPairSignerFromPrivateKeyBytes(record.seed);
}
