// The page: pick a model, type a prompt, run it here or on chain.
import { MAX_PROMPT_BYTES, chargesOf, decodeConfig, formatCount, loadCore, readFlags } from '@curta/sdk';
import { $, bringIntoView, clearError, failProgress, setFacts, setProgress, setStatus, showError, showTab } from './dom.js';
import { convertInWorker, formatBytes, readFile } from './files.js';
import { runOffline, tokensPerSecond } from './offline.js';
import { conversionInWords, inWords, outOfModuleMemory, refusedInput, tooBigToConvert, tooBigToRun } from './words.js';
import { setupChain } from './chain-ui.js';

/**
 * The model the page works with.
 * @typedef {object} PickedModel
 * @property {string} name
 * @property {Uint8Array | null} artifact the .curta bytes, when the page holds them
 * @property {import('@curta/sdk').Config} config
 * @property {import('@curta/sdk').ChargeTable} charges the table its turns are planned with (its artifact's flags, which the Model account records)
 */

const state = {
  /** @type {import('@curta/sdk').CoreWasm | null} */
  core: null,
  /** @type {PickedModel | null} */
  model: null,
  busy: false,
};

const corePromise = loadCore().then(
  (core) => (state.core = core),
  (e) => {
    showError(`The WebAssembly module did not load: ${e.message}`);
    throw e;
  },
);

/** The prompt and run options as typed, checked for form only; the module judges the values. */
export function readRunInput() {
  const prompt = new TextEncoder().encode(/** @type {HTMLTextAreaElement} */ ($('prompt')).value);
  const maxText = /** @type {HTMLInputElement} */ ($('max-tokens')).value.trim();
  const maxTokens = Number(maxText);
  if (!/^\d+$/.test(maxText) || !Number.isSafeInteger(maxTokens) || maxTokens < 1) {
    throw new Error(`Max tokens must be a whole number of at least 1, not "${maxText}".`);
  }
  const temperature = /** @type {HTMLInputElement} */ ($('temperature')).value.trim();
  if (!/^\d+(\.\d+)?$/.test(temperature)) throw new Error(`Temperature must be a decimal number such as 0 or 0.8, not "${temperature}".`);
  const seedText = /** @type {HTMLInputElement} */ ($('seed')).value.trim();
  if (!/^\d+$/.test(seedText) || BigInt(seedText) >= 1n << 64n) {
    throw new Error(`The seed must be a whole number from 0 to 2^64 − 1, not "${seedText}".`);
  }
  return { prompt, maxTokens, temperature, seed: BigInt(seedText) };
}

/** What a failed run's words need to know. */
function wordsInput() {
  const prompt = new TextEncoder().encode(/** @type {HTMLTextAreaElement} */ ($('prompt')).value);
  return { promptBytes: prompt, maxTokens: Number(/** @type {HTMLInputElement} */ ($('max-tokens')).value), context: state.model?.config.seqLen };
}

/**
 * Runs `task` with the buttons locked (but those marked data-always); its
 * failure is shown in words.
 * @param {() => Promise<void>} task
 */
export async function guarded(task) {
  if (state.busy) return;
  state.busy = true;
  document.body.classList.add('busy');
  // A button marked data-always (the run's stop) stays usable mid-task.
  for (const b of document.querySelectorAll('button:not([data-always])')) b.disabled = true;
  clearError();
  try {
    await task();
  } catch (e) {
    console.error(e);
    showError(inWords(e, wordsInput()));
    setStatus('Stopped.');
  } finally {
    state.busy = false;
    document.body.classList.remove('busy');
    for (const b of document.querySelectorAll('button')) b.disabled = false;
  }
}

/**
 * Makes `model` the page's model and shows its shape.
 * @param {PickedModel} model
 * @param {Array<[string, string]>} [extra] facts from the chain
 */
export function setModel(model, extra = []) {
  state.model = model;
  const c = model.config;
  setFacts('model-info', [
    ['model', model.name],
    ['shape', `dim ${c.dim}, hidden ${c.hiddenDim}, ${c.nLayers} layers, ${c.nHeads} heads (${c.nKvHeads} kv), vocabulary ${c.vocabSize}`],
    ['context', `${formatCount(c.seqLen)} tokens`],
    ['charges', CHARGES_WORDS[model.charges]],
    ...(model.artifact ? /** @type {Array<[string,string]>} */ ([['artifact', formatBytes(model.artifact.length)]]) : []),
    ...extra,
  ]);
  setStatus(`Model ready: ${model.name}.`);
}

/** The charge tables, as the model's facts name them. */
const CHARGES_WORDS = {
  specification: "the specification's table",
  measured: 'the measured table (fewer, fuller turns)',
};

/** @param {Uint8Array} artifact */
function configOf(artifact) {
  return decodeConfig(artifact.subarray(16, 44));
}

/** @param {Uint8Array} artifact */
function chargesOfArtifact(artifact) {
  return chargesOf(readFlags(artifact));
}

// Tabs of the model panel.
for (const tab of document.querySelectorAll('.tabs button')) {
  tab.addEventListener('click', () => showTab(/** @type {string} */ (/** @type {HTMLElement} */ (tab).dataset.tab)));
}

/** @param {string} what */
const fileProgress = (what) => (/** @type {number} */ read, /** @type {number} */ total) =>
  setProgress('model-progress', total ? read / total : 1, `reading ${what}: ${formatBytes(read)} of ${formatBytes(total)}`);

$('artifact-file').addEventListener('change', () =>
  guarded(async () => {
    const file = /** @type {HTMLInputElement} */ ($('artifact-file')).files?.[0];
    if (!file) return;
    // Said before anything is read: a run copies the whole artifact into the module.
    const tooBig = tooBigToRun(file.name, file.size);
    if (tooBig) {
      failProgress('model-progress', `not read: ${file.name} is more than the module's memory holds`);
      throw new Error(tooBig);
    }
    const artifact = await readFile(file, fileProgress(file.name));
    const core = await corePromise;
    // The SDK reads the header: a file that is not an artifact fails here.
    try {
      core.loadArtifact(artifact).free();
    } catch (e) {
      throw new Error(`${file.name}: ${inWords(e)} (a .curta file starts with CURTAW01).`);
    }
    setProgress('model-progress', 1, `${file.name}: ${formatBytes(artifact.length)} read`);
    setModel({ name: file.name, artifact, config: configOf(artifact), charges: chargesOfArtifact(artifact) });
  }),
);

$('convert').addEventListener('click', () =>
  guarded(async () => {
    const checkpoint = /** @type {HTMLInputElement} */ ($('checkpoint-file')).files?.[0];
    const tokenizer = /** @type {HTMLInputElement} */ ($('tokenizer-file')).files?.[0];
    if (!checkpoint || !tokenizer) throw new Error('Pick both a llama2.c checkpoint and its tokenizer first.');
    // Said before anything is read: the conversion would not fit the module's memory.
    const tooBig = tooBigToConvert(checkpoint.name, checkpoint.size);
    if (tooBig) {
      failProgress('model-progress', `not converted: ${checkpoint.name} is too large to convert in the module's memory`);
      throw new Error(tooBig);
    }
    const total = checkpoint.size + tokenizer.size;
    const ck = await readFile(checkpoint, (read) =>
      setProgress('model-progress', (0.8 * read) / total, `reading ${checkpoint.name}: ${formatBytes(read)} of ${formatBytes(checkpoint.size)}`),
    );
    const tk = await readFile(tokenizer, (read) =>
      setProgress('model-progress', (0.8 * (checkpoint.size + read)) / total, `reading ${tokenizer.name}: ${formatBytes(read)}`),
    );
    const charges = /** @type {import('@curta/sdk').ChargeTable} */ (/** @type {HTMLSelectElement} */ ($('charges')).value);
    const started = performance.now();
    // The module's `convert` is one call: the bar counts its seconds meanwhile.
    const converting = () =>
      setProgress('model-progress', 0.85, `converting ${formatBytes(checkpoint.size)} in the module… ${((performance.now() - started) / 1000).toFixed(0)} s`);
    converting();
    const ticking = setInterval(converting, 500);
    const names = { checkpoint: checkpoint.name, tokenizer: tokenizer.name, checkpointBytes: checkpoint.size };
    const { artifact, memory } = await convertInWorker(ck, tk, charges)
      .catch((e) => {
        // The bar says it ended; the error box says why, in the core's words.
        const refused = refusedInput(/** @type {any} */ (e)?.refusal, names);
        const why = refused || (outOfModuleMemory(e) ? 'the module ran out of memory' : '');
        failProgress('model-progress', why ? `not converted: ${why}` : 'not converted');
        throw new Error(conversionInWords(e, names));
      })
      .finally(() => clearInterval(ticking));
    const seconds = (performance.now() - started) / 1000;
    setProgress('model-progress', 1, `converted: ${formatBytes(artifact.length)} in ${seconds.toFixed(2)} s, the module's memory ${formatBytes(memory)}`);
    const name = checkpoint.name.replace(/\.bin$/, '.curta');
    setModel({ name, artifact, config: configOf(artifact), charges: chargesOfArtifact(artifact) }, [
      ['converted', `from ${formatBytes(checkpoint.size)} in ${seconds.toFixed(2)} s, in ${formatBytes(memory)} of the module's memory`],
    ]);
  }),
);

$('prompt').addEventListener('input', showPromptBytes);
function showPromptBytes() {
  const n = new TextEncoder().encode(/** @type {HTMLTextAreaElement} */ ($('prompt')).value).length;
  const hint = $('prompt-bytes');
  hint.textContent = `(${formatCount(n)} of ${formatCount(MAX_PROMPT_BYTES)} bytes)`;
  hint.classList.toggle('over', n > MAX_PROMPT_BYTES);
}
showPromptBytes();

/**
 * Shows the prompt and clears the output before a run.
 * @param {string} prompt
 */
export function startOutput(prompt) {
  $('output-prompt').textContent = prompt;
  $('output-text').textContent = '';
  setFacts('run-stats', []);
  bringIntoView($('output-panel'));
}

/** The offline run going, which "Stop" ends. @type {AbortController | null} */
let offlineRun = null;
$('stop-offline').addEventListener('click', () => offlineRun?.abort());

$('run-offline').addEventListener('click', () =>
  guarded(async () => {
    const model = state.model;
    if (!model) throw new Error('Pick a model first: an artifact, or a checkpoint and tokenizer to convert.');
    if (!model.artifact) throw new Error('This model is on chain only: pick its artifact file to run it in the browser.');
    const input = readRunInput();
    startOutput(new TextDecoder().decode(input.prompt));
    $('chain-view').hidden = true;
    setStatus('Running in this browser…');
    /** @param {import('./offline.js').OfflineProgress} p */
    const show = (p) => {
      $('output-text').textContent = p.text;
      if (p.quoted) setProgress('run-progress', p.turns / p.quoted, `turn ${p.turns} of ${p.quoted}`);
      setFacts('run-stats', offlineFacts(p));
    };
    offlineRun = new AbortController();
    $('stop-offline').hidden = false;
    let result;
    try {
      result = await runOffline(model.artifact, input, show, offlineRun.signal);
    } finally {
      offlineRun = null;
      $('stop-offline').hidden = true;
    }
    show(result);
    if (result.stopped) {
      setStatus(`Stopped in this browser after ${formatCount(result.generated)} tokens in ${formatCount(result.turns)} turns.`);
      document.body.dataset.offlineDone = 'stopped';
      return;
    }
    setFacts('run-stats', [...offlineFacts(result), ['state sha256', String(result.sha256)]]);
    setStatus(`Done in this browser: ${formatCount(result.generated)} tokens in ${formatCount(result.turns)} turns.`);
    document.body.dataset.offlineDone = 'true';
  }),
);

/** @param {import('./offline.js').OfflineProgress} p @returns {Array<[string, string]>} */
function offlineFacts(p) {
  const tps = tokensPerSecond(p);
  return [
    ['where', 'this browser (WebAssembly)'],
    ['turns', `${p.turns} of ${p.quoted} quoted`],
    ['tokens', String(p.generated)],
    ['tokens per second', Number.isNaN(tps) ? '…' : tps.toFixed(1)],
    ['module memory', p.memory > 0 ? formatBytes(p.memory) : '…'],
    ['first token', Number.isNaN(p.firstTokenSeconds) ? '…' : `${p.firstTokenSeconds.toFixed(3)} s`],
    ['time', `${p.seconds.toFixed(2)} s`],
  ];
}

setupChain({ state, corePromise, guarded, readRunInput, setModel, startOutput });
