// Every failure the page can meet, said in words that name the value and
// the limit. The rules themselves live in the module and the chain client;
// this only phrases what they refused.
import { CurtaCoreError, MAX_PROMPT_BYTES } from '@curta/sdk';
import { MODULE_MEMORY_LIMIT, conversionMemory, conversionMemoryAtLeast, formatBytes } from './files.js';

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
  if (outOfModuleMemory(e)) return runOutOfMemoryWords(e);
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
 * @param {{ checkpoint: string, tokenizer: string, checkpointBytes?: number }} names the picked files' names (and the checkpoint's size)
 */
export function conversionInWords(error, names) {
  if (outOfModuleMemory(error)) return conversionOutOfMemoryWords(/** @type {any} */ (error), names);
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

/** The module's most memory, as the page says it. */
const LIMIT_WORDS = `${formatBytes(MODULE_MEMORY_LIMIT)} (4 GiB)`;

/**
 * Whether a failure in the module's worker is its memory running out:
 * the SDK's `alloc` getting nothing (its RangeError), or a trap (the core
 * aborts when an allocation of its own fails, and a WebAssembly abort is a
 * trap, "unreachable"). The worker's error carries the module's memory.
 * @param {any} e
 */
export function outOfModuleMemory(e) {
  return typeof e?.memory === 'number' && (e.name === 'RuntimeError' || /could not allocate/.test(String(e.message)));
}

/**
 * Why the page will not try to convert a checkpoint of `bytes`, named
 * `name`, or null when it tries: a conversion that needs more of the
 * module's memory than a module has.
 * @param {string} name
 * @param {number} bytes
 */
export function tooBigToConvert(name, bytes) {
  const least = conversionMemoryAtLeast(bytes);
  if (least <= MODULE_MEMORY_LIMIT) return null;
  return (
    `${name} is ${formatBytes(bytes)}: converting it in this browser takes at least ${formatBytes(least)} of the ` +
    `WebAssembly module's memory (its bytes, its weights as floats and the artifact, a quarter of them, at once), ` +
    `and a module holds ${LIMIT_WORDS} at most. ${nativeRemedy(name, bytes)}`
  );
}

/**
 * What to do instead of converting `name` here.
 * @param {string} name
 * @param {number} bytes the checkpoint's
 */
function nativeRemedy(name, bytes) {
  const artifact = bytes / 4;
  if (artifact < MODULE_MEMORY_LIMIT) {
    return `Convert it natively (curta-core convert ${name} TOKENIZER -o MODEL.curta) and pick the artifact, about ${formatBytes(artifact)}: a run here holds only that.`;
  }
  return `Its artifact, about ${formatBytes(artifact)}, would not fit a module either: convert and run it natively (curta-core convert, curta-core run).`;
}

/**
 * Why the page will not try to run an artifact of `bytes`, named `name`,
 * or null when it tries: a run copies the whole artifact into the module.
 * @param {string} name
 * @param {number} bytes
 */
export function tooBigToRun(name, bytes) {
  if (bytes < MODULE_MEMORY_LIMIT) return null;
  return (
    `${name} is ${formatBytes(bytes)}: a run in this browser copies the whole artifact into the WebAssembly module's ` +
    `memory, which holds ${LIMIT_WORDS} at most. Run it natively (curta-core run ${name} --prompt TEXT --max-tokens N).`
  );
}

/**
 * A conversion that ran the module out of memory.
 * @param {{ name: string, message: string, memory: number }} e
 * @param {{ checkpoint: string, tokenizer: string, checkpointBytes?: number }} names
 */
function conversionOutOfMemoryWords(e, names) {
  const bytes = names.checkpointBytes;
  const what = bytes === undefined ? names.checkpoint : `${names.checkpoint} (${formatBytes(bytes)})`;
  const limit = `a WebAssembly module holds ${LIMIT_WORDS} at most, or less where the browser gives it less.`;
  const takes =
    bytes === undefined
      ? `${limit[0].toUpperCase()}${limit.slice(1)}`
      : `Converting it takes about ${formatBytes(conversionMemory(bytes))}, three times the checkpoint, and ${limit} ${nativeRemedy(names.checkpoint, bytes)}`;
  return `The module ran out of memory converting ${what}: it held ${formatBytes(e.memory)} when it stopped (${e.name}: ${e.message}). ${takes}`;
}

/**
 * A run that ran the module out of memory (the artifact copied in, or the
 * run's state).
 * @param {{ name: string, message: string, memory: number }} e
 */
function runOutOfMemoryWords(e) {
  return (
    `The module ran out of memory: it held ${formatBytes(e.memory)} when it stopped (${e.name}: ${e.message}), ` +
    `and a WebAssembly module holds ${LIMIT_WORDS} at most, or less where the browser gives it less. ` +
    `Close other tabs and try again, or run it natively (curta-core run).`
  );
}
