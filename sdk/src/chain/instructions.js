// @ts-check
// The curta program's instructions, built with the client Codama generated
// from idl/curta.json (src/generated-js/), for the program at the client's
// address. Signers ride in their account metas, so
// signTransactionMessageWithSigners finds them.

import { AccountRole } from '@solana/kit';
import {
  getBindWeightInstruction,
  getCloseConfigInstruction,
  getCloseRunInstruction,
  getDeliverInstruction,
  getInitConfigInstruction,
  getInitModelInstruction,
  getOpenRunInstruction,
  getReclaimInstruction,
  getSealModelInstruction,
  getSealSectionInstruction,
  getSetAllowanceInstruction,
  getTurnInstruction,
  getWriteInstruction,
  getWritePromptInstruction,
} from '../generated-js/index.js';
import { decodeConfig } from '../format.js';

/**
 * @typedef {import('@solana/kit').TransactionSigner} TransactionSigner
 * @typedef {import('@solana/kit').Address} Address
 */

/** @param {Address} programAddress */
const at = (programAddress) => ({ programAddress });

/**
 * @param {Address} program
 * @param {{ config: TransactionSigner, admin: TransactionSigner, allowance: number }} a
 */
export const initConfig = (program, a) => getInitConfigInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ config: Address, admin: TransactionSigner, allowance: number }} a
 */
export const setAllowance = (program, a) => getSetAllowanceInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ config: Address, model: TransactionSigner, owner: TransactionSigner, royalty: bigint, configBytes: Uint8Array, flags: number, zeroLength: bigint }} a
 */
export const initModel = (program, a) =>
  getInitModelInstruction(
    {
      config: a.config,
      model: a.model,
      owner: a.owner,
      royalty: a.royalty,
      modelConfig: decodeConfig(a.configBytes),
      flags: a.flags,
      sectionZeroLength: a.zeroLength,
    },
    at(program),
  );

/**
 * @param {Address} program
 * @param {{ model: Address, weight: TransactionSigner, owner: TransactionSigner, section: number }} a
 */
export const bindWeight = (program, a) => getBindWeightInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ model: Address, weight: Address, owner: TransactionSigner, offset: number, bytes: Uint8Array }} a
 */
export const write = (program, a) => getWriteInstruction({ ...a, offset: BigInt(a.offset) }, at(program));

/**
 * @param {Address} program
 * @param {{ model: Address, weight: Address, owner: TransactionSigner, digest: Uint8Array }} a
 */
export const sealSection = (program, a) => getSealSectionInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ model: Address, sectionZero: Address, owner: TransactionSigner }} a
 */
export const sealModel = (program, a) => getSealModelInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ config: Address, model: Address, run: TransactionSigner, opener: TransactionSigner, maxTokens: number, temperatureQ16: number, seed: bigint, royalty: bigint, modelIdentity: Uint8Array, crankFee: bigint, crankDeposit: bigint, staged: number, deliveryFee?: bigint, callback?: Uint8Array, prompt: Uint8Array }} a
 *   `prompt` is the part of the prompt that travels in the data (after the `staged` bytes); `callback` a callback record (docs/program.md, "Delivery"), none by default
 */
export const openRun = (program, a) =>
  getOpenRunInstruction(
    {
      config: a.config,
      model: a.model,
      run: a.run,
      opener: a.opener,
      maxTokens: a.maxTokens,
      temperatureQ16: a.temperatureQ16,
      seed: a.seed,
      royalty: a.royalty,
      modelIdentity: a.modelIdentity,
      crankFee: a.crankFee,
      crankDeposit: a.crankDeposit,
      staged: a.staged,
      // A run opened by this client names no callback: its opener reads it.
      deliveryFee: a.deliveryFee ?? 0n,
      callback: a.callback ?? new Uint8Array(0),
      prompt: a.prompt,
    },
    at(program),
  );

/**
 * `deliver`, as the client core plans it (`CoreWasm.deliveryPlan`): the
 * generated builder gives the callback's accounts read-only, so each takes
 * the writability the run's record gives it.
 * @param {Address} program
 * @param {{ run: Address, deliverer: TransactionSigner, plan: { refund: string, program: string, accounts: { address: string, writable: boolean }[] } }} a
 */
export function deliver(program, a) {
  const built = getDeliverInstruction(
    {
      run: a.run,
      refund: /** @type {Address} */ (a.plan.refund),
      deliverer: a.deliverer,
      callbackProgram: /** @type {Address} */ (a.plan.program),
      callbackAccounts: a.plan.accounts.map((c) => /** @type {Address} */ (c.address)),
    },
    at(program),
  );
  const fixed = built.accounts.slice(0, built.accounts.length - a.plan.accounts.length);
  const named = a.plan.accounts.map((c) => ({
    address: /** @type {Address} */ (c.address),
    role: c.writable ? AccountRole.WRITABLE : AccountRole.READONLY,
  }));
  return Object.freeze({ ...built, accounts: [...fixed, ...named] });
}

/**
 * @param {Address} program
 * @param {{ run: TransactionSigner, offset: number, bytes: Uint8Array }} a
 */
export const writePrompt = (program, a) => getWritePromptInstruction(a, at(program));

/**
 * A turn: the weight accounts of the matrix sections its plan names follow
 * the six fixed accounts; `cranker` signs it and receives its crank fee.
 * @param {Address} program
 * @param {{ config: Address, model: Address, run: Address, owner: Address, sectionZero: Address, cranker: TransactionSigner, weights: Address[], expectedTurns: bigint | number }} a
 */
export const turn = (program, a) => getTurnInstruction({ ...a, expectedTurns: BigInt(a.expectedTurns) }, at(program));

/**
 * @param {Address} program
 * @param {{ run: Address, opener: TransactionSigner }} a
 */
export const closeRun = (program, a) => getCloseRunInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ config: Address, admin: TransactionSigner }} a
 */
export const closeConfig = (program, a) => getCloseConfigInstruction(a, at(program));

/**
 * @param {Address} program
 * @param {{ account: TransactionSigner, recipient: Address }} a
 */
export const reclaim = (program, a) => getReclaimInstruction(a, at(program));
