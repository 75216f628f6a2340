// An artifact against a model account, and an artifact from its sections,
// by the client core's rule (core/src/client/artifact.rs tests the same
// cases natively): the SDK and the CLI refuse the same artifacts in the
// same words.
import assert from 'node:assert/strict';
import test from 'node:test';

import { getAddressDecoder } from '@solana/kit';

import { checkArtifact, decodeConfig, readFlags, readSectionTable } from '../src/index.js';
import { getModelEncoder } from '../src/generated-js/index.js';
import { core, stories260K, stories260KMeasured } from '../test-support/fixtures.js';

const addr = (b) => getAddressDecoder().decode(new Uint8Array(32).fill(b));
const MODEL = addr(3);

/** The sections of `artifact`, as its weight accounts hold them. */
const sectionsOf = (artifact) => readSectionTable(artifact).sections.map((s) => artifact.subarray(s.offset, s.offset + s.length));

/** A sealed model account of `artifact`, with its flags. */
function sealed(c, artifact) {
  const sections = sectionsOf(artifact);
  const data = getModelEncoder().encode({
    config: addr(1), owner: addr(2), royalty: 0n, modelConfig: decodeConfig(artifact.subarray(16, 44)),
    sectionCount: sections.length, status: 1, flags: readFlags(artifact), boundCount: sections.length,
    sealedCount: sections.length, modelIdentity: new Uint8Array(32),
    sections: sections.map((s) => ({ weightAccount: addr(9), length: BigInt(s.length), digest: c.sectionDigest(s) })),
  });
  return { address: MODEL, data: new Uint8Array(data) };
}

test('an artifact is a model’s by its sections, flags, configuration and sealed digests', async () => {
  const c = await core();
  const a = stories260K();
  const model = sealed(c, a);
  checkArtifact(c, model, a);
  const measured = stories260KMeasured();
  assert.throws(() => checkArtifact(c, model, measured), { message: /^the artifact's flags are \d+ \(the measured charge table\), model .*'s \d+ \(the specification table\): not its artifact$/ });
  const other = a.slice();
  const s1 = readSectionTable(a).sections[1];
  other[s1.offset + s1.length - 1] ^= 1;
  assert.throws(() => checkArtifact(c, model, other), { message: `section 1 of the artifact is not model ${MODEL}'s sealed section (its digest differs)` });
  assert.throws(() => checkArtifact(c, model, a.subarray(0, a.length - 1)), { message: 'the artifact does not open (InvalidFormat (core error 2))' });
});

test('an artifact is put back together from its sections, each the length section zero says', async () => {
  const c = await core();
  const a = stories260K();
  const sections = sectionsOf(a);
  assert.deepEqual(c.assembleArtifact(MODEL, sections), a);
  assert.throws(() => c.assembleArtifact(MODEL, sections.slice(0, 1)), { message: `section zero of model ${MODEL} lists ${sections.length} sections, the model holds 1` });
  const short = [...sections];
  short[1] = sections[1].subarray(1);
  assert.throws(() => c.assembleArtifact(MODEL, short), { message: `section 1 of model ${MODEL} holds ${sections[1].length - 1} bytes, section zero says ${sections[1].length}` });
  assert.throws(() => c.assembleArtifact(MODEL, []), { message: `model ${MODEL} has no sections` });
});
