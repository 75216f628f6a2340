// Converts a llama2.c checkpoint and tokenizer into a Curta artifact with the
// module's `convert`, off the page's thread.
import { CurtaCoreError, loadCore } from '@curta/sdk';

self.onmessage = async ({ data }) => {
  try {
    const core = await loadCore();
    const artifact = core.convert(data.checkpoint, data.tokenizer, { charges: data.charges });
    self.postMessage({ artifact }, [artifact.buffer]);
  } catch (e) {
    const err = /** @type {any} */ (e);
    self.postMessage({ error: { message: String(err?.message ?? err), core: err instanceof CurtaCoreError, code: err?.code } });
  }
};
