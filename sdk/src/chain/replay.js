// @ts-check
// The module's replay of a run: from any state (the chain's, or a fresh
// one), every turn the program will take, with what it plans (the weight
// sections, the compute units) and what it must produce (the receipt's
// fields, tokens and text, and the state itself). client/src/replay.rs
// does the same natively.

import { CoreSession } from '../session.js';
import { readStateInfo } from '../format.js';
import { hex, sha256 } from './bytes.js';

/** The turn allowance the module's plan_turn and turn run under. */
export const MODULE_ALLOWANCE = 1_350_000;
/** What a turn's two compute-budget instructions cost (150 each). */
export const COMPUTE_BUDGET_OVERHEAD = 300;
/** The most compute units one transaction may ask for. */
export const MAX_TRANSACTION_CU = 1_400_000;

/**
 * The compute-unit limit a turn asks for: the plan's estimate plus the
 * compute-budget instructions, at most what a transaction may use.
 * @param {number} estimatedCu
 */
export const turnLimit = (estimatedCu) => Math.min(estimatedCu + COMPUTE_BUDGET_OVERHEAD, MAX_TRANSACTION_CU);

/**
 * One turn of the replay.
 * @typedef {object} Step
 * @property {number} turnsBefore the state's turn count before it (the expected turn count its transaction carries)
 * @property {number[]} sections the matrix sections its plan names
 * @property {number} estimatedCu the plan's estimate
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
 * @property {Uint8Array} finalState
 * @property {string} initialSha256
 */

/**
 * Checks that the module can plan turns the way the chain does: it plans
 * under the default allowance only.
 * @param {number} allowance the config's
 */
export function checkAllowance(allowance) {
  if (allowance !== MODULE_ALLOWANCE) {
    throw new RangeError(
      `the config's turn allowance is ${allowance} compute units; the WebAssembly module plans and runs turns under ${MODULE_ALLOWANCE} only, so it cannot replay this run`,
    );
  }
}

/**
 * Every turn of `session` to the end of its run; closes it.
 * @param {CoreSession} session
 * @returns {Promise<Replay>}
 */
async function replaySession(session) {
  try {
    const initialSha256 = hex(await sha256(session.state()));
    /** @type {Step[]} */
    const steps = [];
    while (!session.complete) {
      const before = session.info();
      const report = session.step();
      const after = session.info();
      steps.push({
        turnsBefore: before.turns,
        sections: report.plan.sections,
        estimatedCu: report.plan.estimatedCu,
        generated: after.generated,
        generatedThisTurn: report.generatedThisTurn,
        phase: after.phase,
        textLength: after.textLength,
        tokens: session.tokens().slice(before.generated),
        text: session.textBytes().slice(before.textLength),
        stateSha256: hex(await sha256(session.state())),
      });
    }
    return { steps, finalState: session.state(), initialSha256 };
  } finally {
    session.close();
  }
}

/**
 * Replays a run from a state's bytes (the chain's run account after its header).
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array | import('../core.js').CoreArtifact} artifact
 * @param {Uint8Array} state
 */
export function replayFromState(core, artifact, state) {
  readStateInfo(state);
  return replaySession(CoreSession.resume(core, artifact, state));
}

/**
 * Replays a run from its parameters, as open_run starts it.
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array | import('../core.js').CoreArtifact} artifact
 * @param {string | Uint8Array} prompt
 * @param {import('../core.js').RunOptions} options
 */
export function replayFromParams(core, artifact, prompt, options) {
  return replaySession(CoreSession.open(core, artifact, prompt, options));
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
