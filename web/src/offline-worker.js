// The offline run off the page's thread: the module steps the session in a
// tight loop here (offline-run.js) and posts its progress to the page, so
// the page's tokens per second are the module's and its thread stays free.
// Progress, result and failure carry the module's linear memory.
import { loadCore } from '@curta/sdk';
import { runSession } from './offline-run.js';
import { errorToMessage } from './worker-errors.js';

const corePromise = loadCore();
/**
 * The artifact the page sent last, kept in the module's memory: the page
 * sends it once for all the runs of a model.
 * @type {import('@curta/sdk').CoreArtifact | null}
 */
let loaded = null;

self.onmessage = async ({ data }) => {
  /** @type {import('@curta/sdk').CoreWasm | undefined} */
  let core;
  try {
    core = await corePromise;
    if (data.artifact) {
      loaded?.free();
      loaded = null;
      loaded = core.loadArtifact(data.artifact);
    }
    if (!loaded) throw new Error('the worker holds no artifact to run');
    const result = await runSession(core, loaded, data.params, (progress) => self.postMessage({ progress }));
    self.postMessage({ result });
  } catch (e) {
    self.postMessage({ error: errorToMessage(e), memory: core?.memory.buffer.byteLength });
  }
};
