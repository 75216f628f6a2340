// Every failure the page can meet, said in words that name the value and
// the limit. The rules themselves live in the module and the chain client;
// this only phrases what they refused.
import { CurtaCoreError, MAX_PROMPT_BYTES } from '@curta/sdk';

/** The prompt limit (the SDK's, the core's MAX_PROMPT_BYTES), to word the core's InvalidPrompt. */
const PROMPT_LIMIT_WORDS = MAX_PROMPT_BYTES;

/**
 * What the person typed, to word an error about it.
 * @typedef {object} RunInput
 * @property {Uint8Array} promptBytes
 * @property {number} maxTokens
 * @property {number} [context] the model's context length, when a model is loaded
 */

/**
 * @param {unknown} error
 * @param {Partial<RunInput>} [input]
 * @returns {string}
 */
export function inWords(error, input = {}) {
  if (error instanceof CurtaCoreError) return coreInWords(error, input);
  const e = /** @type {any} */ (error);
  const message = String(e?.message ?? e);
  if (e?.refused) return message; // wallet.js words it already
  // Kit's production errors carry only a code; the RPC's own words are in the context.
  if (e?.name === 'SolanaError' && typeof e.context?.__serverMessage === 'string') {
    return `The cluster refused a request: ${e.context.__serverMessage} (Solana error ${e.context.__code}).`;
  }
  if (e?.name === 'UserRejectedRequestError' || /user rejected|denied|declined/i.test(message)) {
    return `The wallet refused: ${message}`;
  }
  if (e instanceof TypeError && /fetch|network|Failed to fetch|NetworkError|Load failed/i.test(message)) {
    return `The cluster does not answer (${message}). Check the RPC URL and that the validator is running.`;
  }
  return message;
}

/**
 * A failed conversion in words. The module's refusal names the input and
 * what is wrong with it (the core's words, as `curta-core convert` says
 * them); the page adds the picked file's name.
 * @param {unknown} error
 * @param {{ checkpoint: string, tokenizer: string }} names the picked files' names
 */
export function conversionInWords(error, names) {
  const refusal = error instanceof CurtaCoreError ? error.refusal : undefined;
  if (!refusal) return inWords(error);
  const what = `${/** @type {CurtaCoreError} */ (error).name}, core error ${/** @type {CurtaCoreError} */ (error).code}`;
  if (!refusal.input || !refusal.kind) return `The module could not convert: ${refusal.reason} (${what}).`;
  return `${refusedInput(refusal, names)}: ${refusal.reason} (${what}).`;
}

/**
 * "FILE is not a KIND": which picked file the module refused, and what it had to be.
 * @param {import('@curta/sdk').CurtaCoreError['refusal']} refusal
 * @param {{ checkpoint: string, tokenizer: string }} names
 */
export function refusedInput(refusal, names) {
  if (!refusal?.input || !refusal.kind) return '';
  return `${names[refusal.input]} is not a ${refusal.kind}`;
}

/**
 * @param {CurtaCoreError} error
 * @param {Partial<RunInput>} input
 */
function coreInWords(error, input) {
  const bytes = input.promptBytes?.length;
  switch (error.name) {
    case 'InvalidPrompt':
      if (bytes === 0) return 'The prompt is empty: type at least one character.';
      if (bytes !== undefined && bytes > PROMPT_LIMIT_WORDS) {
        return `The prompt is ${bytes.toLocaleString('en-US')} bytes long; the limit is ${PROMPT_LIMIT_WORDS.toLocaleString('en-US')} bytes (UTF-8).`;
      }
      if (input.maxTokens !== undefined && input.context !== undefined && input.maxTokens > input.context) {
        return maxTokensWords(input.maxTokens, input.context);
      }
      return `The module refused the prompt or max tokens (InvalidPrompt): a prompt is 1 to ${PROMPT_LIMIT_WORDS} bytes of UTF-8 without a zero byte, max tokens 1 to the context length.`;
    case 'ContextExceeded':
      return `The prompt and ${input.maxTokens ?? 'the'} max tokens do not fit the model's context${input.context ? ` of ${input.context} tokens` : ''} (ContextExceeded): shorten the prompt or ask for fewer tokens.`;
    case 'InvalidFormat':
      return 'That file is not a Curta artifact or llama2.c checkpoint the module can read (InvalidFormat).';
    case 'InvalidConfig':
      return "The model's shape is not one the core runs (InvalidConfig).";
    default:
      return `The module stopped with ${error.name} (core error ${error.code}).`;
  }
}

/**
 * @param {number} maxTokens
 * @param {number} context
 */
export function maxTokensWords(maxTokens, context) {
  return `Max tokens ${maxTokens} is past the model's context of ${context} tokens.`;
}

/**
 * A crank's `CurtaReplayMismatch` in words: the turn and the field that
 * differ, as the SDK's error names them (`turn`, `field`; none for a
 * state found elsewhere than the replay's).
 * @param {{ turn?: number, field?: string, message: string }} e
 * @param {number} nextTurn the turn to name when the error names none
 * @returns {{ turn: number, line: string, words: string }}
 */
export function mismatchWords(e, nextTurn) {
  const turn = e.turn ?? nextTurn;
  const field = e.field ?? 'state';
  return {
    turn,
    line: `MISMATCH at turn ${turn}: ${field}`,
    words: `Turn ${turn} does not match the module's replay (field ${field}): ${e.message}. The crank stopped; nothing more is paid.`,
  };
}

/**
 * Checks `value`, typed as `what`, as a Solana address: an Error in the
 * client core's words (the ones `curta` gives for a flag), naming the
 * value and what is wrong with it, or null when it is one.
 * @param {import('@curta/sdk').CoreWasm} core
 * @param {string} what e.g. "The curta program address"
 * @param {string} value
 * @param {string} [then] words after the sentence
 */
export function notAnAddress(core, what, value, then = '') {
  const words = core.addressRefusal(what, value);
  return words === null ? null : new Error(`${words}.${then}`);
}
