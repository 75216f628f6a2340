// The run entirely in this browser's WebAssembly: the module's CoreSession,
// turn by turn as the program would run it, yielding to the page between
// turns so the text streams in.
import { CoreSession } from '@curta/sdk';
import { nextFrame } from './dom.js';

/**
 * @typedef {object} RunParams
 * @property {Uint8Array} prompt UTF-8 bytes
 * @property {number} maxTokens
 * @property {string} temperature a decimal, rounded by the module's rule
 * @property {bigint} seed
 */

/**
 * @typedef {object} OfflineProgress
 * @property {number} turns turns run so far
 * @property {number} quoted turns the module quoted for the run
 * @property {number} generated tokens generated so far
 * @property {string} text the generated text so far
 * @property {number} seconds since the first turn started
 * @property {number} firstTokenSeconds when the first token came (NaN before)
 */

/**
 * @param {import('@curta/sdk').CoreWasm} core
 * @param {Uint8Array} artifact
 * @param {RunParams} params
 * @param {(p: OfflineProgress) => void} onTurn
 * @param {{ cancelled: boolean }} [control]
 * @returns {Promise<OfflineProgress & { sha256: string }>}
 */
export async function runOffline(core, artifact, params, onTurn, control = { cancelled: false }) {
  const options = { maxTokens: params.maxTokens, temperature: params.temperature, seed: params.seed };
  const quoted = core.quote(artifact, params.prompt, options);
  const session = CoreSession.open(core, artifact, params.prompt, options);
  try {
    const start = performance.now();
    let firstTokenSeconds = NaN;
    /** @type {OfflineProgress} */
    let progress = { turns: 0, quoted, generated: 0, text: '', seconds: 0, firstTokenSeconds };
    while (!session.complete) {
      if (control.cancelled) throw new Error('The run was stopped.');
      const report = session.step();
      const seconds = (performance.now() - start) / 1000;
      if (report.generated > 0 && Number.isNaN(firstTokenSeconds)) firstTokenSeconds = seconds;
      progress = { turns: report.turns, quoted, generated: report.generated, text: session.text(), seconds, firstTokenSeconds };
      onTurn(progress);
      await nextFrame();
    }
    return { ...progress, sha256: await session.stateSha256() };
  } finally {
    session.close();
  }
}

/**
 * Tokens per second of decoding: from the first token to the last, as
 * WebLLM reports it (the prompt's turns are the prefill).
 * @param {OfflineProgress} p
 */
export function tokensPerSecond(p) {
  if (p.generated < 2 || Number.isNaN(p.firstTokenSeconds)) return NaN;
  const span = p.seconds - p.firstTokenSeconds;
  return span > 0 ? (p.generated - 1) / span : NaN;
}
