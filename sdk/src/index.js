// @ts-check
// @curta/sdk: curta-core's WebAssembly module for browsers and Node. Quote,
// plan, run and replay turns, and convert checkpoints, bit for bit as the
// native build and the curta program do.

export {
  CoreArtifact,
  CoreWasm,
  CurtaCoreError,
  ERROR_NAMES,
  EXPORTS,
  WasmBuffer,
  check,
  loadCore,
} from './core.js';
export { CoreSession } from './session.js';
export {
  CHARGE_TABLES,
  DEFAULT_ALLOWANCE,
  FLAG_MEASURED_CHARGES,
  FLAG_SHARED_CLASSIFIER,
  MIN_ALLOWANCE,
  chargesFlag,
  chargesOf,
  decodeConfig,
  encodeConfig,
  metadataLength,
  readFlags,
  readSectionTable,
  readStateInfo,
  splitSeed,
} from './format.js';
export { formatCount, formatSol } from './units.js';
export * from './chain/index.js';
