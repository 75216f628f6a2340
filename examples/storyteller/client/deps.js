// This example's dependencies: the Curta SDK and @solana/kit, with the
// System and Compute Budget program clients.
//
// In this repository they are sdk/'s own: its sources, and the packages
// `npm ci` installed in sdk/node_modules (the files their `import`
// condition names in Node), so the example needs no install of its own and
// shares the SDK's instances of them. A project of its own would
// `npm install @curta/sdk @solana/kit @solana-program/system
// @solana-program/compute-budget` and import them by name here instead:
//
//   export { RUN_HEADER_LEN, callbackLength, createCurtaClient, ... } from '@curta/sdk';
//   export { AccountRole, generateKeyPairSigner, ... } from '@solana/kit';

export {
  RUN_HEADER_LEN,
  callbackLength,
  createCurtaClient,
  fetchModel,
  fits,
  loadCore,
  quoteRun,
  runParams,
  sendAndConfirm,
} from '../../../sdk/src/index.js';
export {
  AccountRole,
  address,
  createKeyPairSignerFromBytes,
  generateKeyPairSigner,
  getAddressDecoder,
  getAddressEncoder,
  getProgramDerivedAddress,
} from '../../../sdk/node_modules/@solana/kit/dist/index.node.mjs';
export { getCreateAccountInstruction } from '../../../sdk/node_modules/@solana-program/system/dist/src/index.mjs';
export { getSetComputeUnitLimitInstruction } from '../../../sdk/node_modules/@solana-program/compute-budget/dist/src/index.mjs';
