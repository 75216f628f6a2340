// Converts a llama2.c checkpoint and tokenizer into a Curta artifact with the
// module's `convert`, off the page's thread. Its reply carries the module's
// linear memory then (the conversion's peak: WebAssembly memory only grows),
// done or not.
import { loadCore } from '@curta/sdk';
import { errorToMessage } from './worker-errors.js';

self.onmessage = async ({ data }) => {
  /** @type {import('@curta/sdk').CoreWasm | undefined} */
  let core;
  try {
    core = await loadCore();
    const artifact = core.convert(data.checkpoint, data.tokenizer, { charges: data.charges });
    self.postMessage({ artifact, memory: core.memory.buffer.byteLength }, [artifact.buffer]);
  } catch (e) {
    self.postMessage({ error: errorToMessage(e), memory: core?.memory.buffer.byteLength });
  }
};
