// Reading picked files into memory with progress, and converting a llama2.c
// checkpoint in a worker (the module's `convert`) so the page stays live.
import { errorFromMessage } from './worker-errors.js';

/**
 * The most memory a WebAssembly module has: wasm32 addresses 4 GiB
 * (65,536 pages of 64 KiB), and the curta-core module names no lower
 * maximum. The browser may give it less.
 */
export const MODULE_MEMORY_LIMIT = 4 * 1024 ** 3;

/**
 * The module's memory a conversion takes, about: three times the
 * checkpoint. The converter holds at once the checkpoint's bytes, its
 * weights as floats (as many bytes again) and the artifact (a quarter of
 * the checkpoint) as it is built, grown and copied out. Measured: 2.71
 * times stories15M's shape, 3.22 times stories42M's, 2.83 times
 * stories110M's (1,242.6 MB for 438.4 MB).
 * @param {number} checkpointBytes
 */
export function conversionMemory(checkpointBytes) {
  return 3 * checkpointBytes;
}

/**
 * The module's memory a conversion takes at the least: the checkpoint's
 * bytes, its weights as floats (as many bytes again) and the artifact (a
 * quarter of them), held at once.
 * @param {number} checkpointBytes
 */
export function conversionMemoryAtLeast(checkpointBytes) {
  return Math.round(2.25 * checkpointBytes);
}

/**
 * Reads a File chunk by chunk, reporting the bytes read.
 * @param {File} file
 * @param {(read: number, total: number) => void} onProgress
 * @returns {Promise<Uint8Array>}
 */
export async function readFile(file, onProgress) {
  let out;
  try {
    out = new Uint8Array(file.size);
  } catch (e) {
    // Chromium's "Array buffer allocation failed": no room for the file.
    throw new Error(`The browser would not give ${formatBytes(file.size)} of memory to read ${file.name} (${/** @type {Error} */ (e).message}).`);
  }
  const reader = file.stream().getReader();
  let read = 0;
  onProgress(0, file.size);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out.set(value, read);
    read += value.length;
    onProgress(read, file.size);
  }
  return out;
}

/**
 * A conversion's artifact, with the module's memory when it was done.
 * @typedef {object} Converted
 * @property {Uint8Array} artifact
 * @property {number} memory bytes of the converting module's linear memory
 */

/**
 * The module's `convert` in a worker: the native converter's bytes. A
 * failure carries `memory`, the module's memory when it stopped.
 * @param {Uint8Array} checkpoint
 * @param {Uint8Array} tokenizer
 * @param {import('@curta/sdk').ChargeTable} [charges] the table the model's turns are planned with; the specification's by default
 * @returns {Promise<Converted>}
 */
export function convertInWorker(checkpoint, tokenizer, charges = 'specification') {
  const worker = new Worker(new URL('./convert-worker.js', import.meta.url), { type: 'module' });
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      worker.terminate();
      if (data.error) reject(Object.assign(errorFromMessage(data.error), { memory: data.memory }));
      else resolve({ artifact: data.artifact, memory: data.memory });
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new Error(`the converter stopped: ${e.message}`));
    };
    worker.postMessage({ checkpoint, tokenizer, charges }, [checkpoint.buffer, tokenizer.buffer]);
  });
}

/**
 * Bytes in decimal units, as the figures beside them: "438.4 MB".
 * @param {number} bytes
 */
export function formatBytes(bytes) {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  return `${(bytes / 1e6).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} MB`;
}
