// @ts-check
// A model's weights from the chain, and its identity: what a client checks
// before it trusts the accounts it reads.

import { getAddressEncoder } from '@solana/kit';

import { SECTION_COUNT_OFFSET, SECTION_ENTRY_LEN, SECTION_TABLE, chargesOf, readFlags, readSectionTable } from '../format.js';
import { MODEL_STATUS } from './accounts.js';
import { dataView, equalBytes, hex } from './bytes.js';
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
  if (model.status !== MODEL_STATUS.sealed) {
    throw new Error(`model ${model.address} is ${model.statusName}, not sealed: runs cannot open or turn`);
  }
  const want = modelIdentity(core, model.address, model.data);
  if (!equalBytes(want, model.identity)) {
    throw new Error(`model ${model.address} records identity ${hex(model.identity)}, but its account hashes to ${hex(want)}`);
  }
}

/**
 * Checks an artifact against a model's flags (its charge table among them)
 * and sealed section digests.
 * @param {import('../core.js').CoreWasm} core
 * @param {Awaited<ReturnType<typeof import('./fetch.js').fetchModel>>} model
 * @param {Uint8Array} artifact
 */
export function checkArtifact(core, model, artifact) {
  const { sections } = readSectionTable(artifact);
  if (sections.length !== model.sectionCount) {
    throw new Error(`the artifact has ${sections.length} sections, model ${model.address} ${model.sectionCount}`);
  }
  const flags = readFlags(artifact);
  if (flags !== model.flags) {
    throw new Error(
      `the artifact's flags are ${flags} (the ${chargesOf(flags)} charge table), model ${model.address}'s ${model.flags} (the ${model.charges} table): not its artifact`,
    );
  }
  for (let i = 0; i < sections.length; i++) {
    const s = model.sections[i];
    const d = sectionDigest(core, artifact.subarray(sections[i].offset, sections[i].offset + sections[i].length));
    if (!s.digest || !equalBytes(d, s.digest)) throw new Error(`section ${i} of the artifact is not model ${model.address}'s (its digest differs)`);
  }
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
  // Section zero's table gives each section's offset in the file (it is
  // the file's start, so the table cannot be checked against the whole yet).
  const dv = dataView(bytes[0]);
  if (dv.getUint32(SECTION_COUNT_OFFSET, true) !== bytes.length) {
    throw new Error(`section zero of model ${model.address} lists another section count than the model's ${bytes.length}`);
  }
  const offsets = bytes.map((_, i) => Number(dv.getBigUint64(SECTION_TABLE + SECTION_ENTRY_LEN * i, true)));
  const artifact = new Uint8Array(Math.max(...bytes.map((b, i) => offsets[i] + b.length)));
  bytes.forEach((b, i) => artifact.set(b, offsets[i]));
  readSectionTable(artifact); // every entry inside the file
  return artifact;
}
