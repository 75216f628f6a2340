// @ts-check
// Errors a transaction failed with, decoded by the program that raised
// them, in the client core's words (curta_core::client::errors, which the
// CLI prints too): the curta program's by Curta's names (docs/program.md,
// "Errors"; core errors as 256 + n), the System program's by its own.

import { SYSTEM_PROGRAM_ADDRESS } from '@solana-program/system';

import * as generated from '../generated-js/errors/curta.js';

/**
 * The curta program's errors by code, with the names the IDL gives them
 * (the generated `CURTA_ERROR__STALE_TURN` is `StaleTurn`): the program's
 * own below 256 (`docs/program.md`, "Errors"), 256 + n core error n.
 * @type {Readonly<Record<number, string>>}
 */
export const PROGRAM_ERRORS = Object.freeze(
  Object.fromEntries(
    Object.entries(generated)
      .filter(([k, v]) => k.startsWith('CURTA_ERROR__') && typeof v === 'number')
      .map(([k, v]) => [
        v,
        k
          .slice('CURTA_ERROR__'.length)
          .toLowerCase()
          .replace(/(^|_)([a-z0-9])/g, (_, __, c) => c.toUpperCase()),
      ]),
  ),
);

/** StaleTurn's code, which the crank handles by going back (the IDL's). */
export const STALE_TURN = generated.CURTA_ERROR__STALE_TURN;

/**
 * The name of a curta program error code: `StaleTurn`, or
 * `CoreError(ContextExceeded)` for a core error (256 + n).
 * @param {number} code
 */
export function programErrorName(code) {
  const name = PROGRAM_ERRORS[code];
  if (!name) return `unknown error ${code}`;
  return code > 256 ? `CoreError(${name})` : name;
}

/**
 * A curta program error code in words (the IDL's message).
 * @param {number} code
 */
export function programErrorMessage(code) {
  let words;
  try {
    words = generated.getCurtaErrorMessage(/** @type {any} */ (code));
  } catch {
    // The generated messages read process.env, which a page may not have.
  }
  // A production bundle leaves the IDL's messages out: the name stands alone then.
  if (words === undefined || words.startsWith('Error message not available')) {
    return PROGRAM_ERRORS[code] ? 'see docs/program.md, "Errors"' : 'not an error the curta program raises';
  }
  return words;
}

/** A transaction that landed and failed, or could not be sent. */
export class CurtaTransactionError extends Error {
  /**
   * @param {string} message
   * @param {{ signature?: string, code?: number, programName?: string, instruction?: number, logs?: string[], raw?: unknown }} [details]
   */
  constructor(message, details = {}) {
    super(message);
    this.name = 'CurtaTransactionError';
    /** The transaction's signature, when it landed. */
    this.signature = details.signature;
    /** The custom error code, when an instruction raised one. */
    this.code = details.code;
    /** The error's name: StaleTurn, CoreError(ContextExceeded), ... */
    this.programName = details.programName;
    /** The index of the instruction that failed. */
    this.instruction = details.instruction;
    this.logs = details.logs ?? [];
    this.raw = details.raw;
  }
}

/**
 * The custom code of a transaction error (`{ InstructionError: [i, { Custom: n }] }`), if any.
 * @param {any} err
 * @returns {{ instruction: number, code: number } | null}
 */
export function customCode(err) {
  const ie = err?.InstructionError;
  if (!Array.isArray(ie)) return null;
  const custom = ie[1]?.Custom;
  return custom === undefined ? null : { instruction: Number(ie[0]), code: Number(custom) };
}

/**
 * A transaction error in words, naming the program that raised it: a
 * custom error in the module's words (without the module, by number).
 * @param {import('../core.js').CoreWasm | null} core
 * @param {any} err the RPC's `err` value
 * @param {{ programId: string, programs?: string[] }} where `programs[i]`: the program of instruction i
 * @returns {{ words: string, name: string | null }} `name`: the Curta error's (StaleTurn, CoreError(ContextExceeded)), if it is one
 */
export function transactionError(core, err, where) {
  const ie = err?.InstructionError;
  if (!Array.isArray(ie)) return { words: typeof err === 'string' ? err : JSON.stringify(err, bigintJson), name: null };
  const index = Number(ie[0]);
  const program = where.programs?.[index];
  const inner = ie[1];
  if (inner?.Custom !== undefined) {
    const code = Number(inner.Custom);
    const raiser = program === undefined ? null : program === where.programId ? 'curta' : program === SYSTEM_PROGRAM_ADDRESS ? 'system' : program;
    if (core) return core.customError(code, raiser, index);
    return { words: `custom program error ${code}${program ? ` of program ${program}` : ''} (instruction ${index})`, name: null };
  }
  const what = typeof inner === 'string' ? inner : JSON.stringify(inner, bigintJson);
  return { words: `${what} (instruction ${index}${program ? `, program ${program}` : ''})`, name: null };
}

/**
 * `transactionError`'s words alone.
 * @param {import('../core.js').CoreWasm | null} core
 * @param {any} err
 * @param {{ programId: string, programs?: string[] }} where
 */
export function describeTransactionError(core, err, where) {
  return transactionError(core, err, where).words;
}

/** @param {string} _ @param {unknown} v */
const bigintJson = (_, v) => (typeof v === 'bigint' ? v.toString() : v);

/**
 * The end of a transaction's logs for an error message, as every client
 * quotes it (the client core's rule).
 * @param {import('../core.js').CoreWasm} core
 * @param {readonly string[] | null | undefined} logs
 */
export function logTail(core, logs) {
  return core.logTail(logs ?? []);
}
