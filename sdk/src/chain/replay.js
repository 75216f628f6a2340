// @ts-check
// The module's replay of a run: from any state (the chain's, or a fresh
// one), every turn the program will take, with what it plans (the weight
// sections, the compute units) and what it must produce (the receipt's
// fields, tokens and text, and the state itself). It is the client core's
// replay (core/src/client/replay.rs), the one the crank checks against and
// the CLI runs natively. Every turn is planned as the program plans it:
// with the model's charge table (its artifact's flags, which the Model
// account records) and the run's allowance (its config account's at
// opening, which the Run account records).

import { CoreSession } from '../session.js';
import { DEFAULT_ALLOWANCE, checkAllowance as checkRange, readStateInfo } from '../format.js';
import { fromBase64 } from './bytes.js';

/**
 * One turn of the replay.
 * @typedef {object} Step
 * @property {number} turnsBefore the state's turn count before it (the expected turn count its transaction carries)
 * @property {number[]} sections the matrix sections its plan names
 * @property {number} estimatedCu the plan's estimate
 * @property {number} boundCu the measured table's price of its chunks, at most the estimate: what the crank asks for
 * @property {number} charged the compute units it charges (the receipt's `charged`)
 * @property {number} generated tokens generated after it
 * @property {number} generatedThisTurn
 * @property {number} phase after it
 * @property {number} textLength output text bytes after it
 * @property {number[]} tokens the ids it generated
 * @property {Uint8Array} text the text bytes it added
 * @property {string} stateSha256 the state after it, hex
 */

/**
 * @typedef {object} Replay
 * @property {Step[]} steps
 * @property {string} initialSha256
 */

/**
 * A turn allowance, checked: the module plans and runs turns under any
 * the program accepts, 22,096 to 1,350,000 compute units.
 * @param {number} allowance a config's, or a run's
 * @param {string} [what] what it is, for the error: the config's by default
 * @returns {number}
 * @throws {RangeError} for one outside that range (no program would have written it)
 */
export function checkAllowance(allowance, what = "the config's turn allowance") {
  return checkRange(allowance, what);
}

/**
 * How a replay plans: the run's allowance (its config's at opening).
 * @typedef {object} ReplayOptions
 * @property {number} [allowance] 1,350,000 by default
 */

/**
 * Replays a run from a state's bytes (the chain's run account after its
 * header), with the artifact's charge table and `options.allowance`.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array | import('../core.js').CoreArtifact} artifact
 * @param {Uint8Array} state
 * @param {ReplayOptions} [options]
 * @returns {Promise<Replay>}
 */
export async function replayFromState(core, artifact, state, options = {}) {
  readStateInfo(state);
  const allowance = checkAllowance(options.allowance ?? DEFAULT_ALLOWANCE);
  const r = core.replayRun(artifact, state, { allowance });
  return {
    initialSha256: r.initialSha256,
    steps: r.steps.map((/** @type {any} */ s) => ({ ...s, turnsBefore: Number(s.turnsBefore), text: fromBase64(s.text) })),
  };
}

/**
 * Replays a run from its parameters, as open_run starts it, with the
 * artifact's charge table and `options.allowance`.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array | import('../core.js').CoreArtifact} artifact
 * @param {string | Uint8Array} prompt
 * @param {import('../core.js').RunOptions & ReplayOptions} options
 * @returns {Promise<Replay>}
 */
export function replayFromParams(core, artifact, prompt, options) {
  const { allowance, ...run } = options;
  return replayFromState(core, artifact, initialState(core, artifact, prompt, run), { allowance });
}

/**
 * The state `open_run` writes for these parameters (the module's init_state).
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array | import('../core.js').CoreArtifact} artifact
 * @param {string | Uint8Array} prompt
 * @param {import('../core.js').RunOptions} options
 */
export function initialState(core, artifact, prompt, options) {
  const s = CoreSession.open(core, artifact, prompt, options);
  try {
    return s.state();
  } finally {
    s.close();
  }
}
