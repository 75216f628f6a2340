// @ts-check
// `CoreSession`: one run, turn by turn, inside the module, exactly as the
// program runs it on chain: each turn is planned with the model's own charge
// table (its artifact's flags) and the config account's allowance, and its
// plan names the sections it reads.

import { CoreArtifact, CoreWasm, CurtaCoreError, optionsQ16, promptBytes } from './core.js';
import { DEFAULT_ALLOWANCE, checkAllowance, readStateInfo, splitSeed, u32Arg } from './format.js';

/**
 * What a turn did, and where the run stands after it.
 * @typedef {object} TurnReport
 * @property {import('./core.js').TurnPlan} plan the plan the turn ran
 * @property {boolean} complete
 * @property {number} generated tokens generated so far
 * @property {number} generatedThisTurn
 * @property {number} turns turns the core has run on this state
 */

/**
 * The outcome of a run.
 * @typedef {object} RunResult
 * @property {number[]} tokens the generated token ids
 * @property {string} text the generated text, UTF-8 decoded
 * @property {number} turns turns the core has run on this state
 */

/**
 * Session options beside the run's: the turn allowance of the config
 * account the run's model is bound to.
 * @typedef {object} SessionOptions
 * @property {number} [allowance] compute units a turn may spend, 22,096 to 1,350,000 (the default)
 */

/**
 * One run: its state lives in the module's memory, and `step` runs its turns.
 * Close it with `close()` to release that memory.
 */
export class CoreSession {
  /**
   * Use `CoreSession.open` or `CoreSession.resume`.
   * @param {CoreWasm} core
   * @param {CoreArtifact} artifact
   * @param {boolean} ownsArtifact whether `close` frees the artifact
   * @param {import('./core.js').WasmBuffer} state
   * @param {number} allowance
   */
  constructor(core, artifact, ownsArtifact, state, allowance) {
    this.core = core;
    this.artifact = artifact;
    this.ownsArtifact = ownsArtifact;
    this.stateBuffer = state;
    /** The turn allowance every turn is planned and run under. */
    this.allowance = allowance;
    this.planBuffer = core.allocBuffer(core.interface.planLength);
  }

  /** The charge table the turns are planned with: the artifact's (`specification` or `measured`). */
  get charges() {
    return this.artifact.charges;
  }

  /**
   * Opens a run.
   * @param {CoreWasm} core
   * @param {Uint8Array | CoreArtifact} artifact the whole `.curta` file, or one `core.loadArtifact` loaded (shared, not freed by `close`)
   * @param {string | Uint8Array} prompt UTF-8, no zero byte, up to 1,024 bytes
   * @param {import('./core.js').RunOptions & SessionOptions} options
   */
  static open(core, artifact, prompt, options) {
    const bytes = promptBytes(prompt);
    const maxTokens = u32Arg('maxTokens', options.maxTokens);
    const q16 = optionsQ16(core, options);
    const seed = options.seed ?? 0;
    splitSeed(seed); // a bad seed is a RangeError before anything is allocated
    const allowance = checkAllowance(options.allowance ?? DEFAULT_ALLOWANCE);
    return CoreSession.#withArtifact(core, artifact, allowance, (loaded) => {
      const config = loaded.configPointer;
      const size = core.exports.state_size(config, bytes.length, maxTokens) >>> 0;
      if (size === 0xffffffff) {
        // state_size has no error number; init_state on an empty state
        // checks the same parameters first and names the one out of range.
        const code = core.withBuffers([bytes], (p) =>
          core.exports.init_state(config, 0, 0, p.pointer, p.length, maxTokens, q16, 0, 0),
        );
        throw new CurtaCoreError(code === 0 || code === 4 ? 6 : code);
      }
      const state = core.allocBuffer(size);
      try {
        core.initState(config, state, bytes, maxTokens, q16, seed);
      } catch (e) {
        state.free();
        throw e;
      }
      return state;
    });
  }

  /**
   * Continues a run from a state's bytes (one a session or the program
   * wrote: on chain, the run account after its 256-byte header).
   * @param {CoreWasm} core
   * @param {Uint8Array | CoreArtifact} artifact
   * @param {Uint8Array} stateBytes
   * @param {SessionOptions} [options]
   */
  static resume(core, artifact, stateBytes, options = {}) {
    readStateInfo(stateBytes); // at least a header
    const allowance = checkAllowance(options.allowance ?? DEFAULT_ALLOWANCE);
    return CoreSession.#withArtifact(core, artifact, allowance, () => core.copyIn(stateBytes));
  }

  /**
   * @param {CoreWasm} core
   * @param {Uint8Array | CoreArtifact} artifact
   * @param {number} allowance
   * @param {(artifact: CoreArtifact) => import('./core.js').WasmBuffer} makeState
   */
  static #withArtifact(core, artifact, allowance, makeState) {
    const owns = !(artifact instanceof CoreArtifact);
    const loaded = artifact instanceof CoreArtifact ? artifact : core.loadArtifact(artifact);
    let state;
    try {
      state = makeState(loaded);
      return new CoreSession(core, loaded, owns, state, allowance);
    } catch (e) {
      state?.free();
      if (owns) loaded.free();
      throw e;
    }
  }

  /**
   * The plan of the next turn, with the artifact's charge table (its flags)
   * and the session's allowance.
   */
  plan() {
    return this.core.planTurn(this.artifact.configPointer, this.stateBuffer, this.planBuffer, {
      flags: this.artifact.flags,
      allowance: this.allowance,
    });
  }

  /**
   * The first section the next turn reads (0: section zero alone), from
   * the plan (the module's `required_section` plans with the
   * specification's table and the default allowance only).
   */
  requiredSection() {
    return this.plan().sections[0] ?? 0;
  }

  /**
   * Runs one turn under the session's allowance, passing the sections its
   * plan names.
   * @returns {TurnReport}
   */
  step() {
    const before = this.info().generated;
    const plan = this.plan();
    this.core.turn(this.artifact, this.stateBuffer, plan, { allowance: this.allowance });
    const info = this.info();
    return {
      plan,
      complete: info.complete,
      generated: info.generated,
      generatedThisTurn: info.generated - before,
      turns: info.turns,
    };
  }

  /**
   * Runs turns until the run is complete.
   * @param {{ onTurn?: (report: TurnReport, session: CoreSession) => void }} [options]
   * @returns {RunResult}
   */
  run(options = {}) {
    while (!this.complete) {
      const report = this.step();
      options.onTurn?.(report, this);
    }
    return { tokens: this.tokens(), text: this.text(), turns: this.info().turns };
  }

  /** @type {Record<string, number> | undefined} */
  #layout;

  /**
   * Where the state's buffers lie, as the module computes them
   * (`CoreWasm.stateLayout`), on first use: a resumed state that does not
   * check fails here, or in `step`, with the core's error.
   */
  get layout() {
    if (!this.#layout) {
      const info = this.info();
      this.#layout = this.core.stateLayout(this.artifact.configBytes, info.promptLength, info.maxTokens);
    }
    return this.#layout;
  }

  /** The state header's cursor and counters. */
  info() {
    return readStateInfo(this.stateBuffer.view());
  }

  /** Whether the run is complete. */
  get complete() {
    return this.info().complete;
  }

  /**
   * `count` u32 at `offset` of the state.
   * @param {number} offset
   * @param {number} count
   */
  #u32s(offset, count) {
    const v = this.stateBuffer.view();
    const dv = new DataView(v.buffer, v.byteOffset + offset, 4 * count);
    return Array.from({ length: count }, (_, i) => dv.getUint32(4 * i, true));
  }

  /** The generated token ids. */
  tokens() {
    return this.#u32s(this.layout.outputTokens, this.info().generated);
  }

  /** The prompt's token ids (once tokenizing is done). */
  promptTokens() {
    return this.#u32s(this.layout.promptTokens, this.info().promptTokens);
  }

  /** The generated text's bytes. */
  textBytes() {
    const { outputText, x } = this.layout;
    // The output text buffer ends where x begins.
    const length = Math.min(this.info().textLength, x - outputText);
    return this.stateBuffer.view().slice(outputText, outputText + length);
  }

  /**
   * The generated text, UTF-8 decoded (a character a later token finishes
   * shows as U+FFFD until then).
   */
  text() {
    return new TextDecoder().decode(this.textBytes());
  }

  /** A copy of the whole state: header, buffers and cache. */
  state() {
    return this.stateBuffer.read();
  }

  /** The state's SHA-256, lowercase hex (Web Crypto: Node 20 or a secure browser context). */
  async stateSha256() {
    const digest = await globalThis.crypto.subtle.digest('SHA-256', this.state());
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
  }

  /** Releases the state (and the artifact, when the session loaded it). */
  close() {
    this.stateBuffer.free();
    this.planBuffer.free();
    if (this.ownsArtifact) this.artifact.free();
  }
}
