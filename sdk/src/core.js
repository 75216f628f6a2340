// @ts-check
// The curta-core WebAssembly module: loading it, and `CoreWasm`, which wraps
// its plain C exports with memory handling and error reporting.

import {
  DEFAULT_ALLOWANCE,
  FLAG_SHARED_CLASSIFIER,
  chargesFlag,
  chargesOf,
  encodeConfig,
  metadataLength,
  readFlags,
  readSectionTable,
  splitSeed,
  u32Arg,
} from './format.js';
import { toBase64 } from './base64.js';

/**
 * A value as the module's JSON takes it: a u64 (bigint) as a decimal
 * string, bytes as base64 (`docs/client.md`, "The client core").
 * @param {unknown} value
 */
export function wireJson(value) {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? toBase64(v) : v));
}

/**
 * The core errors' names, by number, as docs/spec.md spells them: filled
 * from the module's `interface` export when a module is loaded (no core
 * error can arise before).
 * @type {Record<number, string>}
 */
export const ERROR_NAMES = {};

/**
 * Why the module refused a conversion, in the core's words (`convert`'s
 * reply): a caller says "FILE is not a KIND: REASON", as `curta-core
 * convert` does.
 * @typedef {object} CoreRefusal
 * @property {string} reason what is wrong, e.g. "it is 433869 bytes, 427547 more than a tokenizer of 512 tokens, ..."
 * @property {'checkpoint' | 'tokenizer' | null} input the input refused, when it is one of them
 * @property {string | null} kind what that input had to be, e.g. "llama2.c tokenizer for this checkpoint"
 */

/**
 * A core error: `message` is `Curta core error N`, `code` is N and `name` the
 * error's name (InvalidPrompt for 6, ...); `refusal` is why in the core's
 * words, when the module gave them (a conversion's).
 */
export class CurtaCoreError extends Error {
  /**
   * @param {number} code
   * @param {CoreRefusal} [refusal]
   */
  constructor(code, refusal) {
    super(`Curta core error ${code}`);
    /** The core error's number, 1 to 8. */
    this.code = code;
    this.name = ERROR_NAMES[code] ?? 'CurtaCoreError';
    /** @type {CoreRefusal | undefined} */
    this.refusal = refusal;
  }
}

/**
 * Throws the core error `code` unless it is 0 (success).
 * @param {number} code
 */
export function check(code) {
  if (code !== 0) throw new CurtaCoreError(code >>> 0);
}

/** The module's exports, as docs/spec.md lists them. */
export const EXPORTS = Object.freeze([
  'alloc',
  'dealloc',
  'state_size',
  'state_layout',
  'init_state',
  'plan_turn',
  'plan_turn_with',
  'turn_with_sections',
  'turn_with_allowance',
  'quote',
  'convert',
  'convert_with',
  'result_len',
  'required_section',
  'turn',
  'state_difference',
  'reply_pointer',
  'reply_length',
  'crank_new',
  'crank_next',
  'crank_summary',
  'crank_free',
  'batch_new',
  'batch_next',
  'batch_free',
  'receipts',
  'quote_run',
  'decimal_q16',
  'interface',
  'derivation',
  'custom_error',
  'address_refusal',
  'check_run',
  'replay_run',
  'receipt_differences',
  'upload_next',
  'upload_estimate',
  'section_digest',
  'model_identity',
  'write_chunk',
  'open_steps',
  'open_next',
  'close_check',
  'log_tail',
  'artifact_check',
  'artifact_assemble',
  'crank_fee_advice',
  'session_key_funding',
  'delivery_plan',
]);

/**
 * The module's sizes and codes, as its `interface` export gives them
 * (`CoreWasm.interface`).
 * @typedef {object} CoreInterface
 * @property {number} planLength the bytes `plan_turn` writes
 * @property {number} stateLayoutLength the bytes `state_layout` writes
 * @property {number} differenceLength the bytes `state_difference` writes
 * @property {number} outOfRange `state_size`'s and `required_section`'s result for parameters out of range
 * @property {bigint} quoteError `quote`'s error results: this, or'ed with the error's number
 * @property {readonly string[]} stateLayoutWords the names of the u32 `state_layout` writes, in its order
 * @property {Readonly<Record<string, string>>} coreErrors the core errors' names by number
 */

/**
 * The raw exports. Pointers, lengths and u32 values cross as wasm i32
 * (JavaScript numbers; read u32 results with `>>> 0`), `quote` returns a
 * wasm i64 (a BigInt).
 * @typedef {object} CoreExports
 * @property {WebAssembly.Memory} memory
 * @property {(length: number) => number} alloc
 * @property {(pointer: number, length: number) => void} dealloc
 * @property {(config: number, promptLength: number, maxTokens: number) => number} state_size
 * @property {(config: number, promptLength: number, maxTokens: number, output: number) => number} state_layout
 * @property {(config: number, state: number, stateLength: number, prompt: number, promptLength: number, maxTokens: number, temperatureQ16: number, seedLow: number, seedHigh: number) => number} init_state
 * @property {(config: number, state: number, stateLength: number, output: number) => number} plan_turn
 * @property {(config: number, flags: number, allowance: number, state: number, stateLength: number, output: number) => number} plan_turn_with
 * @property {(config: number, state: number, stateLength: number, metadata: number, metadataLength: number, first: number, firstLength: number, second: number, secondLength: number) => number} turn_with_sections
 * @property {(config: number, allowance: number, state: number, stateLength: number, metadata: number, metadataLength: number, first: number, firstLength: number, second: number, secondLength: number) => number} turn_with_allowance
 * @property {(config: number, metadata: number, metadataLength: number, prompt: number, promptLength: number, maxTokens: number, temperatureQ16: number) => bigint} quote
 * @property {(checkpoint: number, checkpointLength: number, tokenizer: number, tokenizerLength: number) => number} convert
 * @property {(checkpoint: number, checkpointLength: number, tokenizer: number, tokenizerLength: number, flags: number) => number} convert_with
 * @property {() => number} result_len
 * @property {(config: number, state: number, stateLength: number) => number} required_section
 * @property {(config: number, state: number, stateLength: number, metadata: number, metadataLength: number, weights: number, weightsLength: number) => number} turn
 * @property {(config: number, expected: number, expectedLength: number, actual: number, actualLength: number, output: number) => number} state_difference
 * @property {() => number} reply_pointer
 * @property {() => number} reply_length
 * @property {(artifact: number, artifactLength: number, state: number, stateLength: number, setup: number, setupLength: number) => number} crank_new
 * @property {(handle: number, event: number, eventLength: number, bytes: number, bytesLength: number) => number} crank_next
 * @property {(handle: number) => number} crank_summary
 * @property {(handle: number) => void} crank_free
 * @property {(setup: number, setupLength: number) => number} batch_new
 * @property {(handle: number, event: number, eventLength: number) => number} batch_next
 * @property {(handle: number) => void} batch_free
 * @property {(logs: number, logsLength: number) => number} receipts
 * @property {(artifact: number, artifactLength: number, prompt: number, promptLength: number, setup: number, setupLength: number) => number} quote_run
 * @property {(text: number, textLength: number) => bigint} decimal_q16
 * @property {(turnFee: bigint, pricedByCluster: number) => number} crank_fee_advice
 * @property {(what: number, whatLength: number) => number} session_key_funding
 * @property {(data: number, dataLength: number) => number} delivery_plan
 */

/**
 * The plan of the next turn.
 * @typedef {object} TurnPlan
 * @property {number[]} sections the matrix sections the turn reads, in order (section zero, always read, is left out)
 * @property {number} estimatedCu the compute units the planner charged
 * @property {number} maxGenerated the most tokens the turn can complete
 */

/**
 * How a turn is planned: the model's flags word (bit 0 says its classifier is
 * its embedding, which places an unshared classifier's sections; bit 1
 * chooses the measured charge table; the other bits are not read) and the
 * turn allowance: a run's (the Run account records its config account's at
 * opening), or the config's for a run not yet opened.
 * @typedef {object} PlanOptions
 * @property {number} [flags] the artifact's header flags (byte 44), or the Model account's; 1 (a shared classifier, the specification's table: llama2.c's default) by default
 * @property {number} [allowance] compute units a turn may spend, 22,096 to 1,350,000 (the default); the module refuses others as InvalidConfig (1)
 */

/**
 * Run parameters: max tokens, the temperature (`temperatureQ16`, or
 * `temperature` as a decimal number or string) and the seed.
 * @typedef {object} RunOptions
 * @property {number} maxTokens 1 to the context length
 * @property {number} [temperatureQ16] the temperature with 16 fractional bits
 * @property {number | string} [temperature] the temperature as a decimal, 0 to 16
 * @property {bigint | number} [seed] 0 to 2^64 - 1; 0 (the default) starts at 0x9E3779B97F4A7C15
 */

/**
 * The temperature of run options, with 16 fractional bits: the module's
 * rounding of `temperature` (`CoreWasm.temperatureQ16`), or
 * `temperatureQ16` as given.
 * @param {CoreWasm} core
 * @param {{ temperatureQ16?: number, temperature?: number | string }} options
 */
export function optionsQ16(core, options) {
  const { temperatureQ16, temperature } = options;
  if (temperatureQ16 !== undefined) {
    u32Arg('temperatureQ16', temperatureQ16);
    if (temperature !== undefined && core.temperatureQ16(temperature) !== temperatureQ16) {
      throw new RangeError(`temperature ${temperature} and temperatureQ16 ${temperatureQ16} disagree`);
    }
    return temperatureQ16;
  }
  return temperature === undefined ? 0 : core.temperatureQ16(temperature);
}

/** @param {string | Uint8Array} prompt */
export function promptBytes(prompt) {
  if (typeof prompt === 'string') return new TextEncoder().encode(prompt);
  if (prompt instanceof Uint8Array) return prompt;
  throw new TypeError('a prompt is a string or a Uint8Array');
}

/**
 * Bytes in the module's memory, from `alloc`. Views of them are taken fresh
 * on every access: a call that grows the memory detaches older views.
 */
export class WasmBuffer {
  /**
   * @param {CoreWasm} core
   * @param {number} pointer
   * @param {number} length
   */
  constructor(core, pointer, length) {
    this.core = core;
    this.pointer = pointer;
    this.length = length;
  }

  /** A live view; valid until the next call into the module. */
  view() {
    return this.core.view(this.pointer, this.length);
  }

  /** A copy of the bytes. */
  read() {
    return this.view().slice();
  }

  /** Releases the bytes; later calls do nothing. */
  free() {
    if (this.pointer !== 0) this.core.dealloc(this.pointer, this.length);
    this.pointer = 0;
    this.length = 0;
  }
}

/**
 * An artifact copied into the module's memory once, for sessions and quotes
 * to pass by address: section zero (the metadata) and the matrix sections.
 */
export class CoreArtifact {
  /**
   * @param {CoreWasm} core
   * @param {Uint8Array} bytes the whole `.curta` file
   */
  constructor(core, bytes) {
    const table = readSectionTable(bytes);
    this.core = core;
    /** The section table: offset and length of each section in the file. */
    this.sections = table.sections;
    /** The 28 configuration bytes. */
    this.configBytes = table.config;
    /**
     * The header's flags word (byte 44): bit 0, the classifier is the
     * embedding; bit 1, the model's turns are planned with the measured
     * charge table.
     */
    this.flags = readFlags(bytes);
    /** The charge table the model's turns are planned with: `specification` or `measured`. */
    this.charges = chargesOf(this.flags);
    this.buffer = core.copyIn(bytes);
  }

  /** Where the configuration lies in the module's memory (inside the header). */
  get configPointer() {
    return this.buffer.pointer + 16;
  }

  /**
   * Section `index` in the module's memory.
   * @param {number} index
   * @returns {{ pointer: number, length: number }}
   */
  section(index) {
    const entry = this.sections[index];
    if (!entry) throw new CurtaCoreError(5); // the plan names a section the file lacks: MissingWeights
    return { pointer: this.buffer.pointer + entry.offset, length: entry.length };
  }

  /** Section zero. */
  get metadata() {
    return this.section(0);
  }

  free() {
    this.buffer.free();
  }
}

/**
 * The module's exports, with memory handling: every method copies its
 * inputs in and its results out, and turns error numbers into
 * `CurtaCoreError`s.
 */
export class CoreWasm {
  /** @param {WebAssembly.Instance} instance */
  constructor(instance) {
    const exports = /** @type {CoreExports} */ (/** @type {unknown} */ (instance.exports));
    for (const name of EXPORTS) {
      if (typeof exports[/** @type {keyof CoreExports} */ (name)] !== 'function') {
        throw new TypeError(`not the curta-core module: no export ${name}`);
      }
    }
    if (!(exports.memory instanceof WebAssembly.Memory)) throw new TypeError('not the curta-core module: no memory');
    this.instance = instance;
    /** The raw exports. */
    this.exports = exports;
    const { reply } = this.callJson(exports.interface, [], []);
    /** @type {Readonly<CoreInterface>} */
    this.interface = Object.freeze({
      ...reply,
      quoteError: BigInt(reply.quoteError),
      stateLayoutWords: Object.freeze(reply.stateLayoutWords),
      coreErrors: Object.freeze(reply.coreErrors),
    });
    for (const [code, name] of Object.entries(reply.coreErrors)) ERROR_NAMES[Number(code)] = name;
  }

  /** The module's memory. */
  get memory() {
    return this.exports.memory;
  }

  /**
   * A live view of memory; valid until the next call into the module.
   * @param {number} pointer
   * @param {number} length
   */
  view(pointer, length) {
    return new Uint8Array(this.exports.memory.buffer, pointer, length);
  }

  /**
   * `length` zeroed bytes aligned to eight.
   * @param {number} length
   * @returns {number} the pointer
   */
  alloc(length) {
    const pointer = this.exports.alloc(u32Arg('length', length)) >>> 0;
    if (pointer === 0) throw new RangeError(`the module could not allocate ${length} bytes`);
    return pointer;
  }

  /**
   * @param {number} pointer
   * @param {number} length
   */
  dealloc(pointer, length) {
    this.exports.dealloc(pointer, length);
  }

  /**
   * A fresh zeroed buffer.
   * @param {number} length
   */
  allocBuffer(length) {
    return new WasmBuffer(this, this.alloc(length), length);
  }

  /**
   * Calls a client-core export with JSON and byte buffers copied in, and
   * returns its reply, parsed (`docs/client.md`, "The client core").
   * @param {(...args: number[]) => number} call the export, given each buffer's pointer and length after `leading`
   * @param {number[]} leading arguments before the buffers
   * @param {(Uint8Array | object)[]} buffers bytes, or a value passed as its JSON (`wireJson`)
   * @returns {{ status: number, reply: any }}
   */
  callJson(call, leading, buffers) {
    const copies = buffers.map((b) => this.copyIn(b instanceof Uint8Array ? b : new TextEncoder().encode(wireJson(b))));
    try {
      const status = call(...leading, ...copies.flatMap((c) => [c.pointer, c.length])) >>> 0;
      return { status, reply: this.lastReply() };
    } finally {
      for (const c of copies) c.free();
    }
  }

  /** The reply the last client-core export (or failed `convert`) left, parsed. */
  lastReply() {
    const text = new TextDecoder().decode(this.view(this.exports.reply_pointer() >>> 0, this.exports.reply_length() >>> 0));
    return JSON.parse(text);
  }

  /**
   * The bytes a derived account's key seed hashes before and after the
   * signer's secret (the client core's `keys`), base64: the secret is not
   * passed in. `what` is `{ kind, ... }` (`docs/client.md`, "The client
   * core").
   * @param {Record<string, unknown>} what
   * @returns {{ beforeSecret: string, afterSecret: string }}
   */
  derivation(what) {
    const { status, reply } = this.callJson(this.exports.derivation, [], [what]);
    if (status !== 0) throw new RangeError(`derivation: ${reply.error}`);
    return reply;
  }

  /**
   * Why `text`, typed as `what`, is not a Solana address, in the client
   * core's words (the ones `curta` gives for a flag), or null when it is
   * one.
   * @param {string} what e.g. "The model address"
   * @param {string} text
   * @returns {string | null}
   */
  addressRefusal(what, text) {
    const { status, reply } = this.callJson(this.exports.address_refusal, [], [{ what, text }]);
    if (status !== 0) throw new RangeError(`address_refusal: ${reply.error}`);
    return reply.words;
  }

  /**
   * A finished run's delivery as the client core plans it
   * (`client::delivery::plan`, what `curta crank` sends), from the run
   * account's data.
   * @param {Uint8Array} data the run account's data
   * @returns {{ refund: string, program: string, accounts: { address: string, writable: boolean }[], computeUnits: number, fee: bigint }}
   * @throws {RangeError} why the run is not to be delivered, in words, with
   *   `reason` 'noCallback', 'notFinished' or 'notARun'
   */
  deliveryPlan(data) {
    const { status, reply } = this.callJson(this.exports.delivery_plan, [], [data]);
    if (status !== 0) throw Object.assign(new RangeError(reply.error), { reason: reply.reason });
    return { ...reply, fee: BigInt(reply.fee) };
  }

  /**
   * An instruction's custom error in the client core's words, named by the
   * program that raised it (`program`: 'curta', 'system', another
   * program's address, or null when unknown).
   * @param {number} code
   * @param {string | null} program
   * @param {number} instruction
   * @returns {{ words: string, name: string | null }}
   */
  customError(code, program, instruction) {
    const { status, reply } = this.callJson(this.exports.custom_error, [], [{ code, program, instruction }]);
    if (status !== 0) throw new RangeError(`custom_error: ${reply.error}`);
    return reply;
  }

  /**
   * Checks a run's parameters for a model before anything is sent, by the
   * client core's rules (the CLI's): the prompt's bytes, max tokens, the
   * temperature, and with the model's section zero `zero` whether it
   * tokenizes the prompt. The context refuses nothing: a run that reaches
   * it completes there.
   * @param {Uint8Array} configBytes the model's 28 configuration bytes
   * @param {Uint8Array | null} zero section zero, or null not to tokenize the prompt
   * @param {Uint8Array} prompt
   * @param {{ maxTokens: number, temperatureQ16: number, seed: bigint }} p
   * @throws {RangeError} the refusal in words
   */
  checkRun(configBytes, zero, prompt, p) {
    const { status, reply } = this.withBuffers([configBytes], (c) =>
      this.callJson(this.exports.check_run, [c.pointer], [zero ?? new Uint8Array(0), prompt, { maxTokens: p.maxTokens, temperatureQ16: p.temperatureQ16, seed: p.seed }]),
    );
    if (status !== 0) throw new RangeError(reply.error);
  }

  /**
   * Every remaining turn of a run from its state, as the client core
   * replays it for the crank (`replay_run`; the JSON `docs/client.md`
   * gives: hashes hex, text base64).
   * @param {Uint8Array | CoreArtifact} artifact
   * @param {Uint8Array} state
   * @param {{ allowance: number }} setup
   */
  replayRun(artifact, state, setup) {
    const { status, reply } =
      artifact instanceof CoreArtifact
        ? this.callJson(this.exports.replay_run, [artifact.buffer.pointer, artifact.buffer.length], [state, setup])
        : this.callJson(this.exports.replay_run, [], [artifact, state, setup]);
    if (status !== 0) {
      if (reply.code === null) throw new TypeError(reply.error);
      throw new CurtaCoreError(reply.code);
    }
    return reply;
  }

  /**
   * How a receipt differs from the replay's step of its turn, in the
   * client core's words (`receipt_differences`): `check` is `{ receipt,
   * step, run, model, royalty }` as the SDK holds them (bigints, bytes).
   * @param {object} check
   * @returns {{ field: string, receipt: string, replay: string, words: string }[]}
   */
  receiptDifferences(check) {
    const { status, reply } = this.callJson(this.exports.receipt_differences, [], [check]);
    if (status !== 0) throw new TypeError(`receipt_differences: ${reply.error}`);
    return reply;
  }

  /**
   * An upload's next step from what the chain holds, by the client core's
   * rule (`upload_next`; the CLI runs the same): the artifact, the model
   * account's bytes (null: none yet) and every bound weight account's
   * bytes in section order (empty until every section has one).
   * @param {Uint8Array} artifact
   * @param {Uint8Array | null} model
   * @param {Uint8Array[]} weights
   * @param {{ config: string, owner: string, model: string, chunk: number }} setup
   * @returns {any} the step (`docs/client.md`, "The client core")
   */
  uploadNext(artifact, model, weights, setup) {
    const all = new Uint8Array(weights.reduce((n, w) => n + w.length, 0));
    weights.reduce((at, w) => (all.set(w, at), at + w.length), 0);
    const json = { ...setup, weightLengths: weights.map((w) => w.length) };
    const { status, reply } = this.callJson(this.exports.upload_next, [], [artifact, model ?? new Uint8Array(0), all, json]);
    if (status !== 0) throw new Error(reply.error);
    return reply;
  }

  /**
   * A section's digest, as `seal_section` checks it (the core's
   * `section_digest`: docs/program.md, "Section digests").
   * @param {Uint8Array} bytes
   * @returns {Uint8Array} 32 bytes
   */
  sectionDigest(bytes) {
    return this.withBuffers([bytes, new Uint8Array(32)], (b, out) => {
      check(this.exports.section_digest(b.pointer, b.length, out.pointer));
      return out.read();
    });
  }

  /**
   * A model's identity, as `seal_model` records it (the core's
   * `model_identity`): sha256 of its address and its account's bytes with
   * the identity's own 32 bytes zero.
   * @param {Uint8Array} address the model's 32-byte address
   * @param {Uint8Array} data the model account's bytes
   * @returns {Uint8Array} 32 bytes
   */
  modelIdentity(address, data) {
    return this.withBuffers([address, data, new Uint8Array(32)], (a, d, out) => {
      check(this.exports.model_identity(a.pointer, d.pointer, d.length, out.pointer));
      return out.read();
    });
  }

  /**
   * The crank fee to offer for turns whose message the cluster prices at
   * `turnFee` lamports, and its basis in words: that fee plus the client
   * core's margin (core/src/client/budget.rs), so a cranker sending at that
   * price earns the margin.
   * @param {bigint} turnFee
   * @returns {{ fee: bigint, basis: string }}
   */
  crankFeeAdvice(turnFee) {
    const { reply } = this.callJson(this.exports.crank_fee_advice, [BigInt.asUintN(64, turnFee), 1], []);
    return { fee: BigInt(reply.fee), basis: reply.basis };
  }

  /**
   * What a wallet sends a session key for a run (`client::session_key`):
   * with crankers, the key's close and transfer back; else the run's
   * deposit, every fee, half the fees again for resent turns and the
   * transfer back; both with the key's rent exemption.
   * @param {{ deposit: bigint, fees: bigint, lamportsPerSignature: bigint, keyRent: bigint, crankers: boolean }} what
   * @returns {bigint}
   */
  sessionKeyFunding(what) {
    const { status, reply } = this.callJson(this.exports.session_key_funding, [], [what]);
    if (status !== 0) throw new RangeError(reply.error);
    return BigInt(reply.funding);
  }

  /**
   * The most weight bytes one `write` transaction carries, the owner
   * paying, in a legacy message (`version` 'legacy', the SDK's) or a
   * version 0 one: the client core's size model.
   * @param {'legacy' | 0} version
   */
  writeChunk(version) {
    return this.exports.write_chunk(version === 'legacy' ? 0 : 1) >>> 0;
  }

  /**
   * What an upload of `artifact` from nothing sends, and the lengths of the
   * accounts it pays rent for (the model's, then a weight account per
   * section), a write carrying `chunk` weight bytes: the client core's
   * estimate, the one `curta model upload` checks the balance against.
   * @param {Uint8Array} artifact
   * @param {number} chunk
   * @returns {{ accountLengths: number[], transactions: number, writes: number, signatures: number }}
   */
  uploadEstimate(artifact, chunk) {
    const { status, reply } = this.callJson(this.exports.upload_estimate, [chunk], [artifact]);
    if (status !== 0) throw new RangeError(`upload_estimate: ${reply.error}`);
    return { ...reply, accountLengths: reply.accountLengths.map(Number) };
  }

  /**
   * The transactions that open a run with a prompt of `promptLength`
   * bytes, as the client core packs them: each `{ create, stage: [start,
   * end] | null, open: bytes staged before it | null }`.
   * @param {'legacy' | 0} version
   * @param {number} promptLength
   * @param {boolean} create whether the run account is still to create
   * @param {boolean} openerIsPayer
   * @returns {{ create: boolean, stage: [number, number] | null, open: number | null }[]}
   */
  openSteps(version, promptLength, create, openerIsPayer) {
    const { status, reply } = this.callJson(this.exports.open_steps, [version === 'legacy' ? 0 : 1, promptLength, create ? 1 : 0, openerIsPayer ? 1 : 0], []);
    if (status !== 0) throw new RangeError(`open_steps: ${reply.error}`);
    return reply.map((/** @type {any} */ s) => ({ ...s, stage: s.stage && [Number(s.stage[0]), Number(s.stage[1])] }));
  }

  /**
   * An opening's sums and next step, as the client core decides them
   * (`client::opening`): from the model account's bytes and, once the
   * host has read them, the rent of `accountLength` bytes and the account
   * at the run's address. Without `rent`, gives `{ accountLength, escrow,
   * crankDeposit }`; with it, also `rent`, `deposit` (the
   * `create_account`'s lamports), `step` (`'create'`, `'finish'`: an
   * interrupted opening's account to stage and open, `'opened'`) and
   * `locks` (whether the step puts the deposit in). Throws the refusal in
   * words (an account of another program or kind at the run's address).
   * @param {Uint8Array} modelData
   * @param {{ program: string, run: string, model: string, opener: string, promptLength: number, maxTokens: number, crankDeposit: bigint, rent?: bigint }} setup
   * @param {{ owner: string, data: Uint8Array } | null} [found] the account at the run's address
   * @returns {{ accountLength: number, escrow: bigint, crankDeposit: bigint, rent?: bigint, deposit?: bigint, step?: 'create' | 'finish' | 'opened', locks?: boolean }}
   */
  openNext(modelData, setup, found = null) {
    const json = { ...setup, runOwner: found?.owner ?? null };
    const { status, reply } = this.callJson(this.exports.open_next, [], [modelData, found?.data ?? new Uint8Array(0), json]);
    if (status !== 0) throw new Error(reply.error);
    const big = (/** @type {string | undefined} */ v) => (v === undefined ? undefined : BigInt(v));
    return { ...reply, escrow: BigInt(reply.escrow), crankDeposit: BigInt(reply.crankDeposit), rent: big(reply.rent), deposit: big(reply.deposit) };
  }

  /**
   * The lamports closing a run returns to its opener, once the client core
   * has checked that `signer` may close it (`client::opening::close`);
   * throws the refusal in words (no account, another program's, not an
   * opened run, another opener).
   * @param {{ program: string, run: string, signer: string }} setup
   * @param {{ owner: string, lamports: bigint, data: Uint8Array } | null} found the account at the run's address
   * @returns {bigint}
   */
  closeCheck(setup, found) {
    const json = { ...setup, runOwner: found?.owner ?? null, runLamports: found?.lamports ?? 0n };
    const { status, reply } = this.callJson(this.exports.close_check, [], [found?.data ?? new Uint8Array(0), json]);
    if (status !== 0) throw new Error(reply.error);
    return BigInt(reply.recovered);
  }

  /**
   * Refuses, in the client core's words, an artifact that is not the
   * model's (`client::artifact::check`): its section count, flags (the
   * charge table among them), configuration and every section's sealed
   * digest.
   * @param {Uint8Array} modelData the model account's bytes
   * @param {string} model its address, for the words
   * @param {Uint8Array} artifact
   */
  checkArtifact(modelData, model, artifact) {
    const { status, reply } = this.callJson(this.exports.artifact_check, [], [modelData, artifact, { model }]);
    if (status !== 0) throw new Error(reply.error);
  }

  /**
   * An artifact put back together from its sections in order, section zero
   * first (`client::artifact::assemble`); throws the refusal in words.
   * @param {string} model the model's address, for the words
   * @param {readonly Uint8Array[]} sections
   * @returns {Uint8Array}
   */
  assembleArtifact(model, sections) {
    const all = new Uint8Array(sections.reduce((n, s) => n + s.length, 0));
    let at = 0;
    for (const s of sections) {
      all.set(s, at);
      at += s.length;
    }
    const setup = { model, sectionLengths: sections.map((s) => s.length) };
    const copies = [all, new TextEncoder().encode(wireJson(setup))].map((b) => this.copyIn(b));
    try {
      const status = this.exports.artifact_assemble(...copies.flatMap((c) => [c.pointer, c.length])) >>> 0;
      if (status !== 0) throw new Error(this.lastReply().error);
      return this.view(this.exports.reply_pointer() >>> 0, this.exports.reply_length() >>> 0).slice();
    } finally {
      for (const c of copies) c.free();
    }
  }

  /**
   * The end of a transaction's logs as every client quotes it in an error
   * (the client core's `log_tail`: the last lines under "program log:"),
   * empty for no logs.
   * @param {readonly string[]} logs
   * @returns {string}
   */
  logTail(logs) {
    const { status, reply } = this.callJson(this.exports.log_tail, [], [{ logs }]);
    if (status !== 0) throw new TypeError(reply.error);
    return reply.words;
  }

  /**
   * The turn receipts that the program `programId`'s own invocations logged
   * in a transaction's logs (a line another program logged is not one), as
   * the module's `receipts` reads them.
   * @param {string} programId
   * @param {readonly string[]} logs
   */
  receipts(programId, logs) {
    const { status, reply } = this.callJson(this.exports.receipts, [], [{ programId, logs }]);
    if (status !== 0) throw new TypeError(reply.error);
    return reply;
  }

  /**
   * A decimal temperature with 16 fractional bits, rounded to nearest with
   * ties up by the module's rule (`decimal_q16`, the one the CLI uses):
   * 0.8 gives 52429. A number is read as its shortest decimal (twelve
   * decimals for an exponent form or a longer one); values past u32 are
   * clamped, for the core to refuse as InvalidPrompt.
   * @param {number | string} temperature
   * @returns {number}
   */
  temperatureQ16(temperature) {
    let text = typeof temperature === 'number' ? String(temperature) : String(temperature).trim();
    if (typeof temperature === 'number') {
      if (!Number.isFinite(temperature) || temperature < 0) throw new RangeError(`bad temperature ${temperature}`);
      if (/e/i.test(text) || text.length - text.indexOf('.') > 13) text = temperature.toFixed(12);
    }
    const bytes = new TextEncoder().encode(text);
    const q = BigInt.asUintN(64, this.withBuffers([bytes], (b) => this.exports.decimal_q16(b.pointer, b.length)));
    if (q === 0xffffffffffffffffn) {
      throw new RangeError(`bad temperature ${JSON.stringify(text)}: a decimal with at most 6 whole digits and 12 fractional digits`);
    }
    return q > 0xffffffffn ? 0xffffffff : Number(q);
  }

  /**
   * What a run will cost, as the client core prices it (`quote_run`): the
   * replay's turns under `setup.allowance`, each turn's limit and priority
   * fee, the signatures' fees, the escrow and royalty. Every u64 in `setup`
   * may be a bigint; the reply's are decimal strings.
   * @param {Uint8Array} artifact
   * @param {Uint8Array} prompt
   * @param {object} setup `{ allowance, royalty, lamportsPerSignature, openTransactions, rent, maxTokens, temperatureQ16, seed, window?, cuLimit?, priorityRamp? }`
   */
  quoteRun(artifact, prompt, setup) {
    const { status, reply } = this.callJson(this.exports.quote_run, [], [artifact, prompt, setup]);
    if (status !== 0) {
      if (reply.code === null) throw new TypeError(reply.error);
      throw new CurtaCoreError(reply.code);
    }
    return reply;
  }

  /**
   * Copies bytes into a fresh buffer.
   * @param {Uint8Array} bytes
   */
  copyIn(bytes) {
    const buffer = this.allocBuffer(bytes.length);
    buffer.view().set(bytes);
    return buffer;
  }

  /**
   * Runs `fn` with `inputs` copied into the module, then frees them.
   * @template T
   * @param {Uint8Array[]} inputs
   * @param {(...buffers: WasmBuffer[]) => T} fn
   * @returns {T}
   */
  withBuffers(inputs, fn) {
    /** @type {WasmBuffer[]} */
    const buffers = [];
    try {
      for (const bytes of inputs) buffers.push(this.copyIn(bytes));
      return fn(...buffers);
    } finally {
      for (const b of buffers) b.free();
    }
  }

  /**
   * Copies an artifact into the module for sessions and quotes to share.
   * @param {Uint8Array} bytes the whole `.curta` file
   */
  loadArtifact(bytes) {
    return new CoreArtifact(this, bytes);
  }

  /**
   * The size of a state.
   * @param {import('./format.js').Config | Uint8Array} config
   * @param {number} promptLength bytes, up to 1,024
   * @param {number} maxTokens 1 to the context length
   * @throws {RangeError} when the parameters are out of range (the module reports no error number here)
   */
  stateSize(config, promptLength, maxTokens) {
    const size = this.withBuffers([encodeConfig(config)], (c) =>
      this.exports.state_size(c.pointer, u32Arg('promptLength', promptLength), u32Arg('maxTokens', maxTokens)),
    );
    if (size >>> 0 === this.interface.outOfRange) {
      throw new RangeError(`state_size: configuration, prompt length ${promptLength} or max tokens ${maxTokens} out of range`);
    }
    return size >>> 0;
  }

  /**
   * Where each buffer of a state lies, as the module computes it: byte
   * offsets from the state's start (`prompt`, `promptTokens`,
   * `outputTokens`, `outputText`, `x`, `xb`, `xb2`, `q`, `hb`, `hb2`,
   * `logits`, `scores`, `keys`, `values`), its `size` and its
   * `cachePositions`.
   * @param {import('./format.js').Config | Uint8Array} config
   * @param {number} promptLength bytes, up to 1,024
   * @param {number} maxTokens 1 to the context length
   * @returns {Record<string, number>}
   * @throws {CurtaCoreError} InvalidConfig or InvalidPrompt when out of range
   */
  stateLayout(config, promptLength, maxTokens) {
    const { stateLayoutLength: length, stateLayoutWords } = this.interface;
    return this.withBuffers([encodeConfig(config), new Uint8Array(length)], (c, out) => {
      check(
        this.exports.state_layout(
          c.pointer,
          u32Arg('promptLength', promptLength),
          u32Arg('maxTokens', maxTokens),
          out.pointer,
        ),
      );
      const dv = new DataView(out.view().buffer, out.pointer, length);
      /** @type {Record<string, number>} */
      const layout = {};
      stateLayoutWords.forEach((name, i) => (layout[name] = dv.getUint32(4 * i, true)));
      return layout;
    });
  }

  /**
   * Where two states first differ, in the module's words (the core's
   * `state::diff`, the same words as the Rust client's): `place` names the
   * header field or the buffer element (`header field turns`, `buffer
   * keys, element 33`, `state length`), `words` is the whole report with
   * both values. `null` for equal states.
   * @param {import('./format.js').Config | Uint8Array} config
   * @param {Uint8Array} expected the state whose header places the buffers
   * @param {Uint8Array} actual
   * @returns {{ place: string, words: string } | null}
   * @throws {CurtaCoreError} InvalidConfig for a configuration out of range
   */
  stateDifference(config, expected, actual) {
    const inputs = [encodeConfig(config), expected, actual, new Uint8Array(this.interface.differenceLength)];
    return this.withBuffers(inputs, (c, want, got, out) => {
      check(this.exports.state_difference(c.pointer, want.pointer, want.length, got.pointer, got.length, out.pointer));
      const bytes = out.read();
      const dv = new DataView(bytes.buffer, bytes.byteOffset, 8);
      const placeLength = dv.getUint32(0, true);
      const wordsLength = dv.getUint32(4, true);
      if (wordsLength === 0) return null;
      const text = new TextDecoder();
      return {
        place: text.decode(bytes.subarray(8, 8 + placeLength)),
        words: text.decode(bytes.subarray(8 + placeLength, 8 + placeLength + wordsLength)),
      };
    });
  }

  /**
   * The count of turns a run takes (fewer when it ends early on token 1 or
   * 2), planned with the charge table section zero's flags choose and the
   * default allowance (the module's `quote` takes no other).
   * @param {Uint8Array | CoreArtifact} artifact the whole file, section zero alone, or a loaded artifact
   * @param {string | Uint8Array} prompt
   * @param {RunOptions} options `seed` plays no part
   */
  quote(artifact, prompt, options) {
    const bytes = promptBytes(prompt);
    const maxTokens = u32Arg('maxTokens', options.maxTokens);
    const q16 = optionsQ16(this, options);
    /** @type {(config: number, metadata: {pointer: number, length: number}) => bigint} */
    const call = (config, metadata) =>
      this.withBuffers([bytes], (p) =>
        this.exports.quote(config, metadata.pointer, metadata.length, p.pointer, p.length, maxTokens, q16),
      );
    let result;
    if (artifact instanceof CoreArtifact) {
      result = call(artifact.configPointer, artifact.metadata);
    } else {
      const zero = artifact.subarray(0, Math.min(metadataLength(artifact), artifact.length));
      result = this.withBuffers([zero], (m) => call(m.pointer + 16, m));
    }
    const turns = BigInt.asUintN(64, result);
    if (turns >= this.interface.quoteError) throw new CurtaCoreError(Number(turns & 0xffffffffn));
    return Number(turns);
  }

  /**
   * Converts a llama2.c checkpoint and `tokenizer.bin` into an artifact,
   * inside the module: the same bytes as the native converter
   * (`curta-core convert CK TOK -o OUT [--charges TABLE]`).
   * @param {Uint8Array} checkpoint
   * @param {Uint8Array} tokenizer
   * @param {{ charges?: import('./format.js').ChargeTable }} [options] the table the model's turns are
   *   planned with, fixed in the artifact's flags: `specification` (the default) or `measured` (fewer, fuller turns)
   * @returns {Uint8Array} the `.curta` file
   * @throws {RangeError} for a `charges` that names no table
   * @throws {CurtaCoreError} for inputs the converter refuses, with its words in `refusal`
   */
  convert(checkpoint, tokenizer, options = {}) {
    const flags = chargesFlag(options.charges);
    return this.withBuffers([checkpoint, tokenizer], (c, t) => {
      const pointer = this.exports.convert_with(c.pointer, c.length, t.pointer, t.length, flags) >>> 0;
      const length = this.exports.result_len() >>> 0;
      // On failure result_len holds the error's number, and the reply why.
      if (pointer === 0) {
        const { error: reason, input, kind } = this.lastReply();
        throw new CurtaCoreError(length, { reason, input, kind });
      }
      const artifact = this.view(pointer, length).slice();
      this.dealloc(pointer, length);
      return artifact;
    });
  }

  /**
   * Writes a fresh state into `state` (a buffer of exactly `stateSize` bytes).
   * @param {number} config pointer to the 28 configuration bytes
   * @param {WasmBuffer} state
   * @param {Uint8Array} prompt
   * @param {number} maxTokens
   * @param {number} temperatureQ16
   * @param {bigint | number} seed
   */
  initState(config, state, prompt, maxTokens, temperatureQ16, seed) {
    const [low, high] = splitSeed(seed);
    const code = this.withBuffers([prompt], (p) =>
      this.exports.init_state(
        config,
        state.pointer,
        state.length,
        p.pointer,
        p.length,
        u32Arg('maxTokens', maxTokens),
        u32Arg('temperatureQ16', temperatureQ16),
        low,
        high,
      ),
    );
    check(code);
  }

  /**
   * The plan of a state's next turn (`plan_turn_with`), with the model's
   * charge table and a config account's allowance.
   * @param {number} config pointer to the 28 configuration bytes
   * @param {WasmBuffer} state
   * @param {WasmBuffer} [output] `interface.planLength` bytes to reuse; a temporary one otherwise
   * @param {PlanOptions} [options] `{ flags, allowance }`: 1 and 1,350,000 by default
   * @returns {TurnPlan}
   */
  planTurn(config, state, output, options = {}) {
    const flags = u32Arg('flags', options.flags ?? FLAG_SHARED_CLASSIFIER);
    const allowance = u32Arg('allowance', options.allowance ?? DEFAULT_ALLOWANCE);
    const out = output ?? this.allocBuffer(this.interface.planLength);
    try {
      check(this.exports.plan_turn_with(config, flags, allowance, state.pointer, state.length, out.pointer));
      const v = out.view();
      const dv = new DataView(v.buffer, v.byteOffset, this.interface.planLength);
      const word = (/** @type {number} */ i) => dv.getUint32(4 * i, true);
      return {
        sections: [word(1), word(2)].slice(0, word(0)),
        estimatedCu: word(3),
        maxGenerated: word(4),
      };
    } finally {
      if (!output) out.free();
    }
  }

  /**
   * Runs one turn of `state` (`turn_with_allowance`) under a config
   * account's allowance, with the sections `plan` names read from
   * `artifact`; the charge table is the one section zero's flags choose.
   * `plan` is this state's `planTurn` with the artifact's flags and the
   * same allowance: the module plans again and refuses sections that are
   * not its plan's (MissingWeights).
   * @param {CoreArtifact} artifact
   * @param {WasmBuffer} state
   * @param {TurnPlan} plan
   * @param {{ allowance?: number }} [options] 1,350,000 by default
   */
  turn(artifact, state, plan, options = {}) {
    const allowance = u32Arg('allowance', options.allowance ?? DEFAULT_ALLOWANCE);
    const [first, second] = plan.sections.map((i) => artifact.section(i));
    const meta = artifact.metadata;
    check(
      this.exports.turn_with_allowance(
        artifact.configPointer,
        allowance,
        state.pointer,
        state.length,
        meta.pointer,
        meta.length,
        first?.pointer ?? 0,
        first?.length ?? 0,
        second?.pointer ?? 0,
        second?.length ?? 0,
      ),
    );
  }
}

/** Whether this is Node (which reads files) rather than a browser (which fetches). */
const isNode = () =>
  typeof process === 'object' && process !== null && typeof process.versions?.node === 'string';

/**
 * Node's fs, imported so that bundlers for the browser leave it alone.
 * @returns {Promise<typeof import('node:fs/promises')>}
 */
async function nodeFs() {
  const specifier = 'node:fs/promises';
  return import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);
}

/**
 * The default module: in Node, `$CURTA_WASM`, else the package's
 * `dist/curta_core.wasm` (`npm run build` copies it there), else the
 * workspace build `target/wasm/curta_core.wasm` (`make build-wasm`); in a
 * browser, `dist/curta_core.wasm` beside the package's modules.
 * @returns {Promise<URL | Uint8Array>}
 */
async function defaultSource() {
  const dist = new URL('../dist/curta_core.wasm', import.meta.url);
  if (!isNode()) return dist;
  const fs = await nodeFs();
  const candidates = [dist, new URL('../../target/wasm/curta_core.wasm', import.meta.url)];
  if (process.env.CURTA_WASM) return fs.readFile(process.env.CURTA_WASM);
  for (const url of candidates) {
    try {
      return await fs.readFile(url);
    } catch (e) {
      if (/** @type {{code?: string}} */ (e).code !== 'ENOENT') throw e;
    }
  }
  throw new Error(
    `curta_core.wasm not found (looked at ${candidates.map((u) => u.pathname).join(', ')}): ` +
      'run `make build-wasm` in the workspace, or `npm run build` in sdk/, or pass the module to loadCore()',
  );
}

/**
 * Compiles whatever `loadCore` was given.
 * @param {unknown} source
 * @returns {Promise<WebAssembly.Module>}
 */
async function compile(source) {
  source = await source;
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return WebAssembly.compile(/** @type {BufferSource} */ (source));
  }
  if (typeof Response !== 'undefined' && source instanceof Response) {
    if (!source.ok) throw new Error(`cannot load the module: HTTP ${source.status} for ${source.url}`);
    const type = source.headers.get('content-type') ?? '';
    if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm')) {
      return WebAssembly.compileStreaming(source);
    }
    return WebAssembly.compile(await source.arrayBuffer());
  }
  if (typeof source === 'string' && isNode() && !/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
    // In Node a string without a scheme is a file path.
    return WebAssembly.compile(await (await nodeFs()).readFile(source));
  }
  if (source instanceof URL || typeof source === 'string') {
    // Node's fetch does not read file: URLs.
    if (isNode() && String(source).startsWith('file:')) {
      return WebAssembly.compile(await (await nodeFs()).readFile(new URL(source)));
    }
    // In a browser a string is a URL, relative to the page.
    return compile(fetch(source instanceof URL ? source : new URL(source, globalThis.location?.href)));
  }
  throw new TypeError('loadCore takes the module as bytes, a URL, a path, a Response or a WebAssembly.Module');
}

/**
 * Loads the curta-core module.
 * @param {Uint8Array | ArrayBuffer | URL | string | Response | Promise<Response> | WebAssembly.Module} [source]
 *   the module's bytes, where to fetch or read it, or a compiled module; the
 *   default is described at `defaultSource` (Node: `$CURTA_WASM`,
 *   `dist/curta_core.wasm`, then `../target/wasm/curta_core.wasm`)
 * @returns {Promise<CoreWasm>}
 */
export async function loadCore(source) {
  const module = await compile(source ?? (await defaultSource()));
  // The module imports nothing.
  const instance = await WebAssembly.instantiate(module, {});
  return new CoreWasm(instance);
}
