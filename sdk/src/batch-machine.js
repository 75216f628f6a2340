// @ts-check
// The client core's batch (core/src/client/batch.rs) through the
// WebAssembly module: many independent transactions landed, as a state
// machine with no I/O (docs/client.md, "A batch as a state machine");
// `sendAll` (chain/transactions.js) is its host.

/** A batch of jobs, in the module. */
export class BatchMachine {
  /**
   * @param {import('./core.js').CoreWasm} core
   * @param {{ whats: string[], lamportsPerSignature: bigint, inFlight?: number, mostExpiries?: number }} setup one `what` per job, which errors name
   */
  constructor(core, setup) {
    const { status: handle, reply } = core.callJson(core.exports.batch_new, [], [setup]);
    if (handle === 0) throw new TypeError(reply.error);
    this.core = core;
    this.handle = handle;
  }

  /**
   * Answers the last action; returns the next one, with `landed`: the jobs that landed since.
   * @param {object} event `{ event: 'start' | 'sent' | 'waited' | 'statuses' | 'height', ... }`
   * @returns {any}
   */
  next(event) {
    const { status, reply } = this.core.callJson(this.core.exports.batch_next, [this.handle], [event]);
    if (status !== 0) throw new TypeError(reply.error);
    return reply;
  }

  free() {
    if (this.handle !== 0) this.core.exports.batch_free(this.handle);
    this.handle = 0;
  }
}
