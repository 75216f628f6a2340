// One offline run stepped in a tight loop: the module's CoreSession, turn by
// turn as the program would run it. The page's worker (offline-worker.js)
// and the benchmark in Node (scripts/bench-offline.js) both run this, so
// their tokens per second are measured the same way.
import { CoreSession } from '@curta/sdk';

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
 * @property {number} memory bytes of the module's linear memory (the artifact, the state and the scratch in it)
 */

/** How often progress is reported at most: the page repaints at about this rate anyway. */
export const REPORT_INTERVAL_MS = 33;

/**
 * Runs the session to its end without yielding. `report` is called at most
 * every `REPORT_INTERVAL_MS` (and for the first token), so reporting never
 * costs the run more than a trifle; the last progress is the result's.
 * @param {import('@curta/sdk').CoreWasm} core
 * @param {Uint8Array | import('@curta/sdk').CoreArtifact} artifact
 * @param {RunParams} params
 * @param {(p: OfflineProgress) => void} [report]
 * @returns {Promise<OfflineProgress & { sha256: string }>}
 */
export async function runSession(core, artifact, params, report = () => {}) {
  const options = { maxTokens: params.maxTokens, temperature: params.temperature, seed: params.seed };
  const quoted = core.quote(artifact, params.prompt, options);
  const session = CoreSession.open(core, artifact, params.prompt, options);
  try {
    const start = performance.now();
    let firstTokenSeconds = NaN;
    let reported = -Infinity;
    let turns = 0;
    let generated = 0;
    let seconds = 0;
    while (!session.complete) {
      const step = session.step();
      const now = performance.now();
      ({ turns, generated } = step);
      seconds = (now - start) / 1000;
      const first = generated > 0 && Number.isNaN(firstTokenSeconds);
      if (first) firstTokenSeconds = seconds;
      if (first || now - reported >= REPORT_INTERVAL_MS) {
        report({ turns, quoted, generated, text: session.text(), seconds, firstTokenSeconds, memory: core.memory.buffer.byteLength });
        reported = now;
      }
    }
    const last = { turns, quoted, generated, text: session.text(), seconds, firstTokenSeconds, memory: core.memory.buffer.byteLength };
    return { ...last, sha256: await session.stateSha256() };
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
