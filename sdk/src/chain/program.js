// @ts-check
// The generated client at a deployment's address. The program has no fixed
// address, so the IDL's is a placeholder (`Curta111…`), and Codama's
// `curtaProgram()` plugin and `isCurtaError` are bound to it; these take
// the deployed program id, with the generated builders and codecs.

import { extendClient, isProgramError } from '@solana/kit';
import { addSelfFetchFunctions, addSelfPlanAndSendFunctions } from '@solana/kit/program-client-core';

import * as generated from '../generated-js/index.js';

/** Every instruction's generated builder, by the IDL's name (`getTurnInstruction` is `turn`). */
const BUILDERS = Object.fromEntries(
  Object.entries(generated).flatMap(([name, f]) => {
    const m = /^get(\w+)Instruction$/.exec(name);
    return m && typeof f === 'function' ? [[m[1][0].toLowerCase() + m[1].slice(1), f]] : [];
  }),
);

/** Every account kind's generated codec, by the IDL's name. */
const CODECS = Object.fromEntries(
  Object.keys(generated.CurtaAccount)
    .filter((k) => Number.isNaN(Number(k)))
    .map((kind) => [kind.toLowerCase(), /** @type {any} */ (generated)[`get${kind}Codec`]]),
);

/**
 * `curtaProgram()`, the generated @solana/kit plugin, at `programAddress`:
 * `client.curta.instructions.turn(input)` builds for the deployed program,
 * and `client.curta.accounts.run.fetch(address)` decodes its accounts.
 * @param {import('@solana/kit').Address} programAddress the deployed program id
 */
export function curtaProgramAt(programAddress) {
  return (/** @type {any} */ client) =>
    extendClient(client, {
      curta: {
        programAddress,
        accounts: Object.fromEntries(Object.entries(CODECS).map(([kind, codec]) => [kind, addSelfFetchFunctions(client, codec())])),
        instructions: Object.fromEntries(
          Object.entries(BUILDERS).map(([name, build]) => [name, (/** @type {any} */ input) => addSelfPlanAndSendFunctions(client, build(input, { programAddress }))]),
        ),
      },
    });
}

/**
 * The generated `isCurtaError` for the program at `programAddress`: whether
 * `error` is a custom error (with `code`, if given) that instruction of
 * `transactionMessage` raised, that instruction being the deployed Curta
 * program's.
 * @param {unknown} error
 * @param {{ instructions: Record<number, { programAddress: import('@solana/kit').Address }> }} transactionMessage
 * @param {import('@solana/kit').Address} programAddress
 * @param {number} [code] e.g. `CURTA_ERROR__STALE_TURN`
 */
export function isCurtaErrorAt(error, transactionMessage, programAddress, code) {
  return isProgramError(error, transactionMessage, programAddress, code);
}
