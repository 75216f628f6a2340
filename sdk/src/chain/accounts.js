// @ts-check
// The curta program's four account kinds (docs/program.md, "Accounts"),
// decoded from their bytes, and read from a cluster.

import {
  CONFIG_DISCRIMINATOR,
  getConfigDecoder,
  getConfigSize,
  getModelDecoder,
  getRunDecoder,
  getWeightDecoder,
  MODEL_DISCRIMINATOR,
  ModelStatus,
  RUN_DISCRIMINATOR,
  WEIGHT_DISCRIMINATOR,
} from '../generated-js/index.js';
import { chargesOf, encodeConfig } from '../format.js';
import {
  CALLBACK_ACCOUNT_LEN,
  CALLBACK_FIXED_LEN,
  MODEL_HEADER_LEN,
  MODEL_SECTION_COUNT_OFFSET,
  MODEL_SECTION_LEN,
  RUN_HEADER_LEN,
  WEIGHT_HEADER_LEN,
} from '../layout.js';
import { dataView, equalBytes } from './bytes.js';

/** @param {Uint8Array} b */
const tagOf = (b) => String.fromCharCode(...b.subarray(0, 8));
/** Each kind's eight-byte tag: the IDL's discriminators. */
export const ACCOUNT_TAGS = Object.freeze({
  config: tagOf(CONFIG_DISCRIMINATOR),
  model: tagOf(MODEL_DISCRIMINATOR),
  weight: tagOf(WEIGHT_DISCRIMINATOR),
  run: tagOf(RUN_DISCRIMINATOR),
});
/** A Config account's length (the IDL's fixed size). */
export const CONFIG_LEN = getConfigSize();
/**
 * Header lengths of the kinds that vary in length, which the IDL does not
 * give (docs/program.md, "Accounts").
 */
export { MODEL_HEADER_LEN, MODEL_SECTION_LEN, RUN_HEADER_LEN, WEIGHT_HEADER_LEN } from '../layout.js';
/** A callback record's length: its fixed part, 33 bytes an account, its data (docs/program.md). */
export const callbackLength = (/** @type {number} */ accounts, /** @type {number} */ dataLength) =>
  CALLBACK_FIXED_LEN + CALLBACK_ACCOUNT_LEN * accounts + dataLength;
/** A model's status (the IDL's enum, `ModelStatus.Sealed` and so on). */
export { ModelStatus };

/**
 * @typedef {import('@solana/kit').Address} Address
 * @typedef {{ tag: string }} Tagged
 */

const ZERO32 = new Uint8Array(32);
/** The System program's address: what an unbound section's weight field holds (32 zero bytes). */
const ZERO_ADDRESS = '11111111111111111111111111111111';
/**
 * @param {Uint8Array} data
 * @param {keyof typeof ACCOUNT_TAGS} kind
 * @param {number} least
 * @param {string} [where]
 */
function expectKind(data, kind, least, where = 'the account') {
  if (data.length < 8 || tagOf(data) !== ACCOUNT_TAGS[kind]) {
    const tag = data.length < 8 ? `${data.length} bytes` : `tag ${JSON.stringify(tagOf(data))}`;
    throw new CurtaAccountError(`${where} is not a curta ${kind} account (${tag}; a ${kind} starts with ${ACCOUNT_TAGS[kind]})`);
  }
  if (data.length < least) throw new CurtaAccountError(`${where} is a ${kind} account of ${data.length} bytes, shorter than its ${least}-byte header`);
}

/** An account that is not what it should be. */
export class CurtaAccountError extends Error {
  name = 'CurtaAccountError';
}

/**
 * @typedef {object} ConfigAccount
 * @property {Address} admin
 * @property {number} allowance the turn allowance in compute units
 */

/**
 * @param {Uint8Array} data
 * @param {string} [where]
 * @returns {ConfigAccount}
 */
export function decodeConfigAccount(data, where) {
  expectKind(data, 'config', CONFIG_LEN, where);
  const c = getConfigDecoder().decode(data);
  return { admin: c.admin, allowance: c.allowance };
}

/**
 * One section of a model.
 * @typedef {object} ModelSection
 * @property {Address | null} weight its weight account, null while none is bound
 * @property {bigint} length
 * @property {Uint8Array | null} digest null until it is sealed
 */

/**
 * @typedef {object} ModelAccount
 * @property {Address} config
 * @property {Address} owner
 * @property {bigint} royalty lamports per generated token
 * @property {Uint8Array} configBytes the model's 28 configuration bytes
 * @property {import('../format.js').Config} shape
 * @property {number} sectionCount
 * @property {number} status 0 writing, 1 sealed, 2 retired
 * @property {string} statusName
 * @property {number} flags the artifact's header flags, as init_model recorded them: bit 0, shared classifier; bit 1, the measured charge table
 * @property {import('../format.js').ChargeTable} charges the charge table every turn of the model is planned with (bit 1 of `flags`)
 * @property {number} boundCount weight accounts bound
 * @property {number} sealedCount sections sealed
 * @property {Uint8Array} modelIdentity zero until sealed
 * @property {ModelSection[]} sections
 */

/**
 * @param {Uint8Array} data
 * @param {string} [where]
 * @returns {ModelAccount}
 */
export function decodeModelAccount(data, where) {
  expectKind(data, 'model', MODEL_HEADER_LEN, where);
  const sectionCount = dataView(data).getUint32(MODEL_SECTION_COUNT_OFFSET, true);
  if (data.length < MODEL_HEADER_LEN + MODEL_SECTION_LEN * sectionCount) {
    throw new CurtaAccountError(`${where ?? 'the model'} holds ${data.length} bytes, too few for its ${sectionCount} sections`);
  }
  const m = getModelDecoder().decode(data.subarray(0, MODEL_HEADER_LEN + MODEL_SECTION_LEN * sectionCount));
  const status = Number(m.status);
  return {
    config: m.config,
    owner: m.owner,
    royalty: m.royalty,
    configBytes: encodeConfig(m.modelConfig),
    shape: m.modelConfig,
    sectionCount,
    status,
    statusName: ModelStatus[status]?.toLowerCase() ?? `status ${status}`,
    flags: m.flags,
    charges: chargesOf(m.flags),
    boundCount: m.boundCount,
    sealedCount: m.sealedCount,
    modelIdentity: Uint8Array.from(m.modelIdentity),
    sections: m.sections.map((e) => ({
      weight: e.weightAccount === ZERO_ADDRESS ? null : e.weightAccount,
      length: e.length,
      digest: equalBytes(e.digest, ZERO32) ? null : Uint8Array.from(e.digest),
    })),
  };
}

/**
 * @typedef {object} WeightAccount
 * @property {Address} model
 * @property {number} section
 * @property {bigint} length
 * @property {bigint} sealProgress bytes hashed so far
 * @property {boolean} sealed
 * @property {Uint8Array} bytes the section's bytes as the account holds them
 */

/**
 * @param {Uint8Array} data
 * @param {string} [where]
 * @returns {WeightAccount}
 */
export function decodeWeightAccount(data, where) {
  expectKind(data, 'weight', WEIGHT_HEADER_LEN, where);
  const w = getWeightDecoder().decode(data.subarray(0, WEIGHT_HEADER_LEN));
  return {
    model: w.model,
    section: w.section,
    length: w.length,
    sealProgress: w.hashed,
    sealed: w.hashed === w.length,
    bytes: data.subarray(WEIGHT_HEADER_LEN),
  };
}

/**
 * @typedef {object} RunAccount
 * @property {Address} model
 * @property {Address} opener
 * @property {bigint} royalty
 * @property {bigint} deposited
 * @property {bigint} escrow
 * @property {bigint} paid
 * @property {Uint8Array} modelIdentity
 * @property {bigint} crankFee lamports each turn pays its sender
 * @property {bigint} crankDeposit the crank deposit at opening
 * @property {bigint} crankPaid crank fees paid so far
 * @property {number} tokensAt account offset of the generated token ids
 * @property {number} textAt account offset of the output text
 * @property {bigint} seed the sampler's seed as the opener chose it
 * @property {number} allowance the config's turn allowance at opening, which every turn of the run is planned under (0: opened by an older program; it cannot turn)
 * @property {number} callbackAt account offset of the callback record `deliver` invokes (0: none); the state ends there
 * @property {bigint} deliveryFee lamports paid to whoever sends `deliver`
 * @property {Uint8Array} state the core state (docs/state.md)
 */

/**
 * @param {Uint8Array} data
 * @param {string} [where]
 * @returns {RunAccount}
 */
export function decodeRunAccount(data, where) {
  expectKind(data, 'run', RUN_HEADER_LEN, where);
  const r = getRunDecoder().decode(data.subarray(0, RUN_HEADER_LEN));
  return {
    model: r.model,
    opener: r.opener,
    royalty: r.royalty,
    deposited: r.deposited,
    escrow: r.escrow,
    paid: r.paid,
    modelIdentity: Uint8Array.from(r.modelIdentity),
    crankFee: r.crankFee,
    crankDeposit: r.crankDeposit,
    crankPaid: r.crankPaid,
    tokensAt: r.tokensAt,
    textAt: r.textAt,
    seed: r.seed,
    allowance: r.allowance,
    callbackAt: r.callbackAt,
    deliveryFee: r.deliveryFee,
    // The state ends at the callback record, when the run names one.
    state: data.slice(RUN_HEADER_LEN, r.callbackAt === 0 ? data.length : Math.min(r.callbackAt, data.length)),
  };
}
