// The run entirely in this browser's WebAssembly, off the page's thread: a
// worker (offline-worker.js) steps the module's CoreSession without
// yielding and posts its progress here, a few times a frame at most.
import { errorFromMessage } from './worker-errors.js';

export { tokensPerSecond } from './offline-run.js';

/** @typedef {import('./offline-run.js').RunParams} RunParams */
/** @typedef {import('./offline-run.js').OfflineProgress} OfflineProgress */

/**
 * The worker and the artifact it holds: kept between runs so that a model's
 * bytes cross once; a stopped run's worker is ended and a new one made.
 * @type {{ worker: Worker, artifact: Uint8Array | null } | null}
 */
let runner = null;

function currentRunner() {
  runner ??= { worker: new Worker(new URL('./offline-worker.js', import.meta.url), { type: 'module' }), artifact: null };
  return runner;
}

/** Ends the worker (mid-run, the only way to stop its loop at once). */
function endRunner() {
  runner?.worker.terminate();
  runner = null;
}

/**
 * Runs `params` on `artifact` in the worker. `signal` stops it: the worker is
 * ended and the run resolves with what it had reported, `stopped` set. A
 * failure in the module carries `memory`, the module's memory then.
 * @param {Uint8Array} artifact
 * @param {RunParams} params
 * @param {(p: OfflineProgress) => void} onProgress
 * @param {AbortSignal} [signal]
 * @returns {Promise<OfflineProgress & { sha256?: string, stopped?: boolean }>}
 */
export function runOffline(artifact, params, onProgress, signal) {
  const r = currentRunner();
  const send = r.artifact === artifact ? undefined : artifact;
  // Copied, not transferred: the page keeps the bytes for an upload.
  r.artifact = artifact;
  return new Promise((resolve, reject) => {
    /** @type {OfflineProgress} */
    let last = { turns: 0, quoted: 0, generated: 0, text: '', seconds: 0, firstTokenSeconds: NaN, memory: NaN };
    const finish = () => {
      signal?.removeEventListener('abort', stop);
      r.worker.onmessage = r.worker.onerror = null;
    };
    const stop = () => {
      finish();
      endRunner();
      resolve({ ...last, stopped: true });
    };
    const fail = (/** @type {Error} */ e) => {
      finish();
      // The worker may not hold the artifact now: send it again next time.
      r.artifact = null;
      reject(e);
    };
    if (signal?.aborted) return stop();
    signal?.addEventListener('abort', stop, { once: true });
    r.worker.onmessage = ({ data }) => {
      if (data.progress) {
        last = data.progress;
        onProgress(last);
      } else if (data.error) {
        // The module's memory when it failed, for the words.
        fail(Object.assign(errorFromMessage(data.error), { memory: data.memory }));
      } else {
        finish();
        resolve(data.result);
      }
    };
    r.worker.onerror = (e) => {
      endRunner();
      fail(new Error(`the run's worker stopped: ${e.message}`));
    };
    r.worker.postMessage({ artifact: send, params });
  });
}
