// Errors across a worker's messages: a core error crosses as its number (and
// the module's words, when it gave some), to be worded on the page like any
// other; anything else as its name and message (a trap is a RuntimeError).
import { CurtaCoreError } from '@curta/sdk';

/**
 * @typedef {object} WorkerError
 * @property {string} message
 * @property {string} [name] the error's name, e.g. RuntimeError for a trap in the module
 * @property {boolean} core whether it is a CurtaCoreError
 * @property {number} [code]
 * @property {import('@curta/sdk').CurtaCoreError['refusal']} [refusal] the module's words, when it gave some
 */

/**
 * @param {unknown} e
 * @returns {WorkerError}
 */
export function errorToMessage(e) {
  const err = /** @type {any} */ (e);
  return {
    message: String(err?.message ?? err),
    name: typeof err?.name === 'string' ? err.name : undefined,
    core: err instanceof CurtaCoreError,
    code: err?.code,
    refusal: err?.refusal,
  };
}

/** @param {WorkerError} m */
export function errorFromMessage(m) {
  if (m.core) return new CurtaCoreError(/** @type {number} */ (m.code), m.refusal);
  const e = new Error(m.message);
  if (m.name && m.name !== 'Error') e.name = m.name;
  return e;
}
