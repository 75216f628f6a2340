// @ts-check
// The client core's crank (core/src/client/crank.rs) through the
// WebAssembly module: a state machine with no I/O. The host answers each
// action with an event, as JSON (docs/client.md, "The client core");
// `crankRun` (chain/crank.js) is such a host, and `sdk/test/crank.test.js`
// replays the core's scripted conversations through it.

/**
 * A crank's setup (every u64 may be a bigint, a number or a decimal string).
 * @typedef {object} CrankSetup
 * @property {string} programId
 * @property {string} run
 * @property {string} model
 * @property {string} payer
 * @property {bigint | number | string} royalty
 * @property {bigint | number | string} keep the rent-exempt minimum the fee payer keeps
 * @property {bigint | number | string} lamportsPerSignature
 * @property {number} [allowance] the run's turn allowance (its config's at opening)
 * @property {number} [window] turns in flight
 * @property {'uniform' | 'exact' | number} [cuLimit]
 * @property {boolean} [priorityRamp]
 */

/** The crank of one run, in the module. */
export class CrankMachine {
  /**
   * Replays the run from `state` in the module and sets up its crank.
   * @param {import('./core.js').CoreWasm} core
   * @param {Uint8Array} artifact the model's whole artifact
   * @param {Uint8Array} state the run's state on chain
   * @param {CrankSetup} setup
   */
  constructor(core, artifact, state, setup) {
    const { status: handle, reply } = core.callJson(core.exports.crank_new, [], [artifact, state, setup]);
    if (handle === 0) {
      const error = new Error(reply.code === null ? reply.error : `${reply.error}: core error ${reply.code}`);
      throw Object.assign(error, { code: reply.code, turn: Number(reply.turn) });
    }
    this.core = core;
    this.handle = handle;
    /** The turns the run has left. */
    this.remaining = Number(reply.remaining);
    /** The run's turn count now. */
    this.turnsBefore = Number(reply.turnsBefore);
  }

  /**
   * Answers the last action; returns the next one.
   * @param {object} event `{ event: 'start' | 'sent' | ..., ... }`
   * @param {Uint8Array} [state] a `runState` event's bytes
   * @returns {any} the action, as the module writes it
   */
  next(event, state = new Uint8Array(0)) {
    const { status, reply } = this.core.callJson(this.core.exports.crank_next, [this.handle], [event, state]);
    if (status !== 0) throw new TypeError(reply.error);
    return reply;
  }

  /** What the crank has done, as the module writes it. */
  summary() {
    const { status, reply } = this.core.callJson(this.core.exports.crank_summary, [this.handle], []);
    if (status !== 0) throw new TypeError(reply.error);
    return reply;
  }

  free() {
    if (this.handle !== 0) this.core.exports.crank_free(this.handle);
    this.handle = 0;
  }
}
