// @ts-check
// Byte layouts the SDK reads on the JavaScript side: the artifact's header
// and section table, the state header (docs/format.md, docs/state.md), and
// the run parameters as the module takes them. Marshalling only: no
// inference here; the offsets are the interface's (layout.js, generated),
// and where a state's buffers lie comes from the module
// (`CoreWasm.stateLayout`).

import {
  ARTIFACT_MAGIC,
  CONFIG_OFFSET,
  DEFAULT_ALLOWANCE,
  FLAG_MEASURED_CHARGES,
  FLAGS_OFFSET,
  MIN_ALLOWANCE,
  MODEL_CONFIG_LEN,
  PHASE_DONE,
  SECTION_COUNT_OFFSET,
  SECTION_ENTRY_LEN,
  SECTION_TABLE,
  STATE_FIELDS,
  STATE_HEADER_LEN,
} from './layout.js';

export {
  ARTIFACT_MAGIC,
  CONFIG_OFFSET,
  DEFAULT_ALLOWANCE,
  FLAG_MEASURED_CHARGES,
  FLAG_SHARED_CLASSIFIER,
  FLAGS_OFFSET,
  MIN_ALLOWANCE,
  PHASE_DONE,
  SECTION_COUNT_OFFSET,
  SECTION_ENTRY_LEN,
  SECTION_TABLE,
  STATE_HEADER_LEN,
  STATE_TAG,
} from './layout.js';
/** The model configuration's encoded length: seven u32. */
export const CONFIG_LEN = MODEL_CONFIG_LEN;
/** The charge tables' names, as `--charges` takes them; the first is the default. */
export const CHARGE_TABLES = Object.freeze(/** @type {const} */ (['specification', 'measured']));

/**
 * A model's shape, llama2.c's seven header values.
 * @typedef {object} Config
 * @property {number} dim
 * @property {number} hiddenDim
 * @property {number} nLayers
 * @property {number} nHeads
 * @property {number} nKvHeads
 * @property {number} vocabSize
 * @property {number} seqLen
 */

const CONFIG_FIELDS = /** @type {const} */ ([
  'dim',
  'hiddenDim',
  'nLayers',
  'nHeads',
  'nKvHeads',
  'vocabSize',
  'seqLen',
]);

/**
 * @param {Uint8Array} bytes
 * @returns {DataView}
 */
function view(bytes) {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * A u64 that must fit a JavaScript number exactly (sizes and offsets).
 * @param {DataView} dv
 * @param {number} at
 */
function u64(dv, at) {
  const v = dv.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`u64 at ${at} is too large`);
  return Number(v);
}

/**
 * The 28 bytes the module takes for a configuration: from a Config object,
 * or the first 28 bytes of a Uint8Array that holds them.
 * @param {Config | Uint8Array} config
 * @returns {Uint8Array}
 */
export function encodeConfig(config) {
  if (config instanceof Uint8Array) {
    if (config.length < CONFIG_LEN) throw new RangeError(`a configuration is ${CONFIG_LEN} bytes`);
    return config.slice(0, CONFIG_LEN);
  }
  const out = new Uint8Array(CONFIG_LEN);
  const dv = view(out);
  CONFIG_FIELDS.forEach((name, i) => dv.setUint32(4 * i, Number(config[name]) >>> 0, true));
  return out;
}

/**
 * Decodes 28 configuration bytes.
 * @param {Uint8Array} bytes
 * @returns {Config}
 */
export function decodeConfig(bytes) {
  const dv = view(bytes);
  /** @type {Record<string, number>} */
  const out = {};
  CONFIG_FIELDS.forEach((name, i) => (out[name] = dv.getUint32(4 * i, true)));
  return /** @type {Config} */ (/** @type {unknown} */ (out));
}

/**
 * One section of an artifact: where it starts in the file and its length.
 * @typedef {object} SectionEntry
 * @property {number} offset
 * @property {number} length
 */

/**
 * Reads an artifact's section table (section zero is the metadata), and
 * checks every entry lies inside the bytes given. Only the header is read:
 * the core checks the rest when it uses the metadata.
 * @param {Uint8Array} artifact the whole `.curta` file
 * @returns {{ config: Uint8Array, sections: SectionEntry[] }}
 * @throws {RangeError} when the header or the table does not fit the file
 */
export function readSectionTable(artifact) {
  if (artifact.length < SECTION_TABLE + SECTION_ENTRY_LEN) {
    throw new RangeError('not a Curta artifact: too short');
  }
  const magic = String.fromCharCode(...artifact.subarray(0, 8));
  if (magic !== ARTIFACT_MAGIC) throw new RangeError(`not a Curta artifact: magic ${JSON.stringify(magic)}`);
  const dv = view(artifact);
  const count = dv.getUint32(SECTION_COUNT_OFFSET, true);
  if (count < 1 || SECTION_TABLE + count * SECTION_ENTRY_LEN > artifact.length) {
    throw new RangeError(`not a Curta artifact: ${count} sections do not fit`);
  }
  /** @type {SectionEntry[]} */
  const sections = [];
  for (let i = 0; i < count; i++) {
    const at = SECTION_TABLE + i * SECTION_ENTRY_LEN;
    const offset = u64(dv, at);
    const length = u64(dv, at + 8);
    if (offset + length > artifact.length) {
      throw new RangeError(`section ${i} (${offset}+${length}) lies past the artifact's ${artifact.length} bytes`);
    }
    sections.push({ offset, length });
  }
  return { config: artifact.slice(CONFIG_OFFSET, CONFIG_OFFSET + CONFIG_LEN), sections };
}

/**
 * The length of section zero (the metadata): the u64 at byte 128 + 8.
 * @param {Uint8Array} artifact the whole file, or section zero alone
 */
export function metadataLength(artifact) {
  if (artifact.length < SECTION_TABLE + SECTION_ENTRY_LEN) throw new RangeError('not a Curta artifact: too short');
  return u64(view(artifact), SECTION_TABLE + 8);
}

/**
 * The state header's cursor and counters.
 * @typedef {object} StateInfo
 * @property {number} phase 0 to 20
 * @property {number} layer
 * @property {number} row
 * @property {number} position
 * @property {number} promptLength bytes
 * @property {number} promptTokens
 * @property {number} maxTokens
 * @property {number} temperatureQ16
 * @property {number} generated tokens generated so far
 * @property {number} textLength output text bytes
 * @property {bigint} seed the generator's state
 * @property {number} turns turns the core has run on this state
 * @property {boolean} complete
 */

/**
 * Decodes a state header.
 * @param {Uint8Array} state at least the 128-byte header
 * @returns {StateInfo}
 */
export function readStateInfo(state) {
  if (state.length < STATE_HEADER_LEN) throw new RangeError(`a state is at least ${STATE_HEADER_LEN} bytes, not ${state.length}`);
  const dv = view(state);
  const u = (/** @type {keyof typeof STATE_FIELDS} */ field) => dv.getUint32(STATE_FIELDS[field], true);
  const phase = u('phase');
  return {
    phase,
    layer: u('layer'),
    row: u('row'),
    position: u('position'),
    promptLength: u('promptLength'),
    promptTokens: u('promptTokens'),
    maxTokens: u('maxTokens'),
    temperatureQ16: u('temperature'),
    generated: u('generated'),
    textLength: u('textLength'),
    seed: dv.getBigUint64(STATE_FIELDS.seed, true),
    turns: Number(dv.getBigUint64(STATE_FIELDS.turns, true)),
    complete: phase === PHASE_DONE,
  };
}

/**
 * A seed as its low and high 32 bits.
 * @param {bigint | number} seed 0 to 2^64 - 1
 * @returns {[number, number]}
 */
export function splitSeed(seed) {
  if (typeof seed === 'number' && !Number.isSafeInteger(seed)) throw new RangeError(`bad seed ${seed}`);
  const s = BigInt(seed);
  if (s < 0n || s >= 1n << 64n) throw new RangeError(`seed ${s} is outside 0 to 2^64 - 1`);
  return [Number(s & 0xffffffffn), Number(s >> 32n)];
}

/**
 * A u32 argument: an integer from 0 to 2^32 - 1.
 * @param {string} name
 * @param {number} value
 */
export function u32Arg(name, value) {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new RangeError(`${name} must be an integer from 0 to 2^32 - 1, not ${value}`);
  }
  return value;
}

/**
 * @typedef {'specification' | 'measured'} ChargeTable
 */

/**
 * The charge table a flags word chooses (bit 1; the other bits are not read).
 * @param {number} flags an artifact's header flags, or a Model account's
 * @returns {ChargeTable}
 */
export function chargesOf(flags) {
  return (flags & FLAG_MEASURED_CHARGES) !== 0 ? 'measured' : 'specification';
}

/**
 * The flag bit of a charge table named as `--charges` names it.
 * @param {string} [charges] `specification` (the default) or `measured`
 * @returns {number} 0 or FLAG_MEASURED_CHARGES
 * @throws {RangeError} for any other name
 */
export function chargesFlag(charges = 'specification') {
  if (charges === 'specification') return 0;
  if (charges === 'measured') return FLAG_MEASURED_CHARGES;
  throw new RangeError(
    `charges ${JSON.stringify(charges)} is not a charge table: the tables are ${CHARGE_TABLES.map((n) => JSON.stringify(n)).join(' and ')}`,
  );
}

/**
 * An artifact's header flags word (byte 44).
 * @param {Uint8Array} artifact the whole file, or section zero alone
 */
export function readFlags(artifact) {
  if (artifact.length < FLAGS_OFFSET + 4) throw new RangeError('not a Curta artifact: too short');
  return view(artifact).getUint32(FLAGS_OFFSET, true);
}

/**
 * Checks a turn allowance: an integer from 22,096 to 1,350,000 compute units.
 * @param {number} allowance
 * @param {string} [what] whose allowance, for the message
 * @returns {number}
 * @throws {RangeError} naming the value and the range
 */
export function checkAllowance(allowance, what = 'the turn allowance') {
  if (!Number.isInteger(allowance) || allowance < MIN_ALLOWANCE || allowance > DEFAULT_ALLOWANCE) {
    throw new RangeError(`${what} ${allowance} is out of range: ${MIN_ALLOWANCE.toLocaleString('en-US')} to ${DEFAULT_ALLOWANCE.toLocaleString('en-US')} compute units`);
  }
  return allowance;
}
