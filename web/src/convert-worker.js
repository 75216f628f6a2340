// Converts a llama2.c checkpoint and tokenizer into a Curta artifact with the
// module's `convert`, off the page's thread.
import { loadCore } from '@curta/sdk';
import { errorToMessage } from './worker-errors.js';

self.onmessage = async ({ data }) => {
  try {
    const core = await loadCore();
    const artifact = core.convert(data.checkpoint, data.tokenizer, { charges: data.charges });
    self.postMessage({ artifact }, [artifact.buffer]);
  } catch (e) {
    self.postMessage({ error: errorToMessage(e) });
  }
};
