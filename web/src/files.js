// Reading picked files into memory with progress, and converting a llama2.c
// checkpoint in a worker (the module's `convert`) so the page stays live.
import { errorFromMessage } from './worker-errors.js';

/**
 * Reads a File chunk by chunk, reporting the bytes read.
 * @param {File} file
 * @param {(read: number, total: number) => void} onProgress
 * @returns {Promise<Uint8Array>}
 */
export async function readFile(file, onProgress) {
  const out = new Uint8Array(file.size);
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
 * The module's `convert` in a worker: the native converter's bytes.
 * @param {Uint8Array} checkpoint
 * @param {Uint8Array} tokenizer
 * @param {import('@curta/sdk').ChargeTable} [charges] the table the model's turns are planned with; the specification's by default
 * @returns {Promise<Uint8Array>}
 */
export function convertInWorker(checkpoint, tokenizer, charges = 'specification') {
  const worker = new Worker(new URL('./convert-worker.js', import.meta.url), { type: 'module' });
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      worker.terminate();
      if (data.error) reject(errorFromMessage(data.error));
      else resolve(data.artifact);
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new Error(`the converter stopped: ${e.message}`));
    };
    worker.postMessage({ checkpoint, tokenizer, charges }, [checkpoint.buffer, tokenizer.buffer]);
  });
}

/** @param {number} bytes */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
