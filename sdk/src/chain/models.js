// @ts-check
// A model's weights from the chain, and its identity: what a client checks
// before it trusts the accounts it reads.

import { getAddressEncoder } from '@solana/kit';

import { ModelStatus } from './accounts.js';
import { equalBytes, hex } from './bytes.js';
import { requireCore } from './client.js';
import { fetchWeight } from './fetch.js';
import { sectionDigest } from './upload.js';

/**
 * A sealed model's identity, as seal_model records it (the module's):
 * sha256(model address || the account's data with the identity's 32 bytes zero).
 * @param {import('../core.js').CoreWasm} core
 * @param {string} model
 * @param {Uint8Array} data the model account's bytes
 */
export function modelIdentity(core, model, data) {
  return core.modelIdentity(/** @type {Uint8Array} */ (getAddressEncoder().encode(/** @type {any} */ (model))), data);
}

/**
 * Checks that a sealed model's recorded identity is its accounts' hash.
 * @param {import('../core.js').CoreWasm} core
 * @param {Awaited<ReturnType<typeof import('./fetch.js').fetchModel>>} model
 */
export function checkModelIdentity(core, model) {
  if (model.status !== ModelStatus.Sealed) {
    throw new Error(`model ${model.address} is ${model.statusName}, not sealed: runs cannot open or turn`);
  }
  const want = modelIdentity(core, model.address, model.data);
  if (!equalBytes(want, model.modelIdentity)) {
    throw new Error(`model ${model.address} records identity ${hex(model.modelIdentity)}, but its account hashes to ${hex(want)}`);
  }
}

/**
 * Checks that an artifact is a model's, by the client core's rule (the
 * CLI's too): the same sections, flags (the charge table among them) and
 * configuration, each section sealed with its digest.
 * @param {import('../core.js').CoreWasm} core
 * @param {Awaited<ReturnType<typeof import('./fetch.js').fetchModel>>} model
 * @param {Uint8Array} artifact
 */
export function checkArtifact(core, model, artifact) {
  core.checkArtifact(model.data, model.address, artifact);
}

/**
 * The artifact a sealed model holds, from its weight accounts, each section
 * checked against the digest the model recorded. Section zero holds the
 * header and the section table, which place the others in the file.
 * @param {import('./client.js').CurtaClient} client
 * @param {Awaited<ReturnType<typeof import('./fetch.js').fetchModel>>} model
 */
export async function fetchArtifact(client, model) {
  const core = requireCore(client, 'fetchArtifact');
  const bytes = await Promise.all(
    model.sections.map(async (s, i) => {
      if (!s.weight) throw new Error(`section ${i} of model ${model.address} has no weight account`);
      const w = await fetchWeight(client, s.weight);
      const section = w.bytes.subarray(0, Number(s.length));
      if (!s.digest || !equalBytes(sectionDigest(core, section), s.digest)) {
        throw new Error(`weight account ${s.weight} (section ${i}) does not hold the bytes model ${model.address} sealed`);
      }
      return section;
    }),
  );
  return core.assembleArtifact(model.address, bytes);
}
