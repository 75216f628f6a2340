// @ts-check
// The journal of transactions in flight: every transaction is recorded
// (signature, the last block height its blockhash is valid for, its wire
// bytes) before it is sent, so that a process started after one that was
// stopped can land or outlive what the stopped one left in flight before
// it reads the chain and decides what is missing (docs/client.md,
// "In-flight transactions are journaled"). Without that, a write or turn
// in flight when a process died could land after the rerun sent it again:
// paid twice.

/**
 * A recorded transaction.
 * @typedef {object} JournalEntry
 * @property {string} signature
 * @property {string} lastValidBlockHeight a decimal u64
 * @property {string} wire the signed transaction, base64
 */

/**
 * Where transactions are recorded. `record` is awaited before sending;
 * `left` gives what earlier processes (gone now) left, and `settled` drops
 * those once they have landed or can no longer land.
 * @typedef {object} Journal
 * @property {(entries: JournalEntry[]) => Promise<void> | void} record
 * @property {() => Promise<JournalEntry[]> | JournalEntry[]} left
 * @property {() => Promise<void> | void} settled
 */

/**
 * A journal that keeps nothing past the process (a page's tab without
 * storage, a one-shot script): nothing is ever left.
 * @returns {Journal}
 */
export function memoryJournal() {
  return { record() {}, left: () => [], settled() {} };
}
