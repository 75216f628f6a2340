// The converter inside the module gives the native converter's bytes: the
// exponential, SiLU and rotary tables, computed in floating point, included.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { CurtaCoreError, FLAG_MEASURED_CHARGES, FLAG_SHARED_CLASSIFIER, readFlags, readSectionTable } from '../src/index.js';
import { artifactPath, cli, core, modelFile, modelsDir, nativeArtifact, scratchPath, sha256 } from '../test-support/fixtures.js';

test('stories260K: the module converts to the native artifact, byte for byte', async (t) => {
  const c = await core();
  const started = performance.now();
  const artifact = c.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'));
  const ms = performance.now() - started;
  const native = nativeArtifact(join(modelsDir(), 'stories260K.bin'), join(modelsDir(), 'tok512.bin'));
  assert.equal(artifact.length, native.length);
  assert.equal(sha256(artifact), sha256(native));
  assert.ok(Buffer.from(artifact).equals(native));
  assert.equal(readSectionTable(artifact).sections.length, 3);
  t.diagnostic(`${artifact.length} bytes, sha256 ${sha256(artifact)}, ${ms.toFixed(0)} ms in the module`);
});

test("stories260K with charges 'measured': the native artifact (--charges measured) byte for byte, the golden one, its flags' bit 1 the one byte apart", async (t) => {
  const c = await core();
  const started = performance.now();
  const artifact = c.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'), { charges: 'measured' });
  const ms = performance.now() - started;
  const native = nativeArtifact(join(modelsDir(), 'stories260K.bin'), join(modelsDir(), 'tok512.bin'), 'measured');
  assert.equal(artifact.length, native.length);
  assert.ok(Buffer.from(artifact).equals(native));
  // golden/receipts/stories260k-measured-reference.txt's model line.
  assert.equal(sha256(artifact), '8d9cf507ca0d0481f47a22ceb33370c9b5c00020f2130db82f8316e52e104c20');
  assert.equal(readFlags(artifact), FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES);
  // The specification's artifact differs in that bit alone.
  const spec = c.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'), { charges: 'specification' });
  assert.ok(Buffer.from(spec).equals(nativeArtifact(join(modelsDir(), 'stories260K.bin'), join(modelsDir(), 'tok512.bin'))));
  assert.ok(Buffer.from(c.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'))).equals(spec), 'the default is the specification');
  const differ = [...artifact.keys()].filter((i) => artifact[i] !== spec[i]);
  assert.deepEqual(differ, [44]);
  assert.equal(artifact[44] ^ spec[44], FLAG_MEASURED_CHARGES);
  const inspected = JSON.parse(cli(['inspect', artifactPath(artifact), '--json']));
  assert.equal(inspected.charges, 'measured');
  t.diagnostic(`${artifact.length} bytes, sha256 ${sha256(artifact)}, ${ms.toFixed(0)} ms in the module`);
});

test('convert: a charges name that is no table is refused in words, before the module is called', async () => {
  const c = await core();
  for (const charges of ['Measured', 'fast', '', 2]) {
    assert.throws(
      () => c.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'), { charges: /** @type {any} */ (charges) }),
      { name: 'RangeError', message: `charges ${JSON.stringify(charges)} is not a charge table: the tables are "specification" and "measured"` },
    );
  }
  // convert_with reads bit 1 of its flags alone: the classifier's bit comes from the checkpoint.
  const ck = modelFile('stories260K.bin');
  const tok = modelFile('tok512.bin');
  const raw = (flags) =>
    c.withBuffers([ck, tok], (a, b) => {
      const p = c.exports.convert_with(a.pointer, a.length, b.pointer, b.length, flags) >>> 0;
      const len = c.exports.result_len() >>> 0;
      assert.notEqual(p, 0);
      const bytes = c.view(p, len).slice();
      c.exports.dealloc(p, len);
      return sha256(bytes);
    });
  assert.equal(raw(0xfffffffd), raw(0));
  assert.equal(raw(FLAG_MEASURED_CHARGES), '8d9cf507ca0d0481f47a22ceb33370c9b5c00020f2130db82f8316e52e104c20');
});

test('the stories15M shape (synthetic weights, llama2 tokenizer): the native artifact, byte for byte', async (t) => {
  const c = await core();
  const checkpoint = scratchPath('stories15M-synthetic.bin');
  cli(['synthesize', '--shape', 'stories15M', '--seed', '1', '-o', checkpoint]);
  const started = performance.now();
  const artifact = c.convert(new Uint8Array(readFileSync(checkpoint)), modelFile('tokenizer.bin'));
  const ms = performance.now() - started;
  const native = nativeArtifact(checkpoint, join(modelsDir(), 'tokenizer.bin'));
  assert.equal(sha256(artifact), sha256(native));
  t.diagnostic(`${artifact.length} bytes, sha256 ${sha256(artifact)}, ${ms.toFixed(0)} ms in the module`);
});

test('convert: files that do not match their formats are InvalidFormat (2)', async () => {
  const c = await core();
  const checkpoint = modelFile('stories260K.bin');
  const tokenizer = modelFile('tok512.bin');
  const invalid = { name: 'InvalidFormat', code: 2, message: 'Curta core error 2' };
  assert.throws(() => c.convert(new Uint8Array(0), tokenizer), invalid);
  assert.throws(() => c.convert(checkpoint.subarray(0, checkpoint.length - 4), tokenizer), invalid);
  assert.throws(() => c.convert(checkpoint, tokenizer.subarray(0, tokenizer.length - 1)), invalid);
  assert.throws(() => c.convert(checkpoint, modelFile('tokenizer.bin')), invalid);
  assert.throws(() => c.convert(tokenizer, checkpoint), CurtaCoreError);
  // A header out of range: seven i32 whose dim is zero.
  assert.throws(() => c.convert(new Uint8Array(28), tokenizer), invalid);
});

test("convert: a refusal carries the core's words, the native converter's", async () => {
  const c = await core();
  const checkpoint = join(modelsDir(), 'stories260K.bin');
  const tokenizer = join(modelsDir(), 'tokenizer.bin');
  // The 32,000-token tokenizer for a 512-token checkpoint: its length against the vocabulary.
  const caught = captured(() => c.convert(modelFile('stories260K.bin'), modelFile('tokenizer.bin')));
  assert.ok(caught instanceof CurtaCoreError);
  assert.equal(caught.name, 'InvalidFormat');
  assert.deepEqual(caught.refusal, {
    reason: "it is 433869 bytes, 427547 more than a tokenizer of 512 tokens, the checkpoint's vocabulary (6322 bytes)",
    input: 'tokenizer',
    kind: 'llama2.c tokenizer for this checkpoint',
  });
  const words = `${tokenizer} is not a ${caught.refusal.kind}: ${caught.refusal.reason} (InvalidFormat, core error 2)`;
  assert.equal(cliError(['convert', checkpoint, tokenizer, '-o', scratchPath('refused.curta')]), `error: ${words}\n`);
  // The checkpoint refused: a header of seven zero words.
  const header = captured(() => c.convert(new Uint8Array(28), modelFile('tok512.bin')));
  assert.equal(header.refusal.input, 'checkpoint');
  assert.equal(header.refusal.kind, 'llama2.c checkpoint');
  assert.equal(header.refusal.reason, 'its header gives dim 0');
});

/** @param {() => unknown} fn the error `fn` throws */
function captured(fn) {
  try {
    fn();
  } catch (e) {
    return /** @type {any} */ (e);
  }
  throw new Error('it did not throw');
}

/** The native CLI's standard error, from a run that fails. @param {string[]} args */
function cliError(args) {
  try {
    cli(args);
  } catch (e) {
    return /** @type {any} */ (e).stderr;
  }
  throw new Error(`curta-core ${args.join(' ')} succeeded`);
}

test('convert (raw): 0 on failure with the error in result_len; the artifact freed with dealloc', async () => {
  const c = await core();
  const { exports } = c;
  assert.equal(exports.convert(0, 0, 0, 0) >>> 0, 0);
  assert.equal(exports.result_len(), 2);
  // A null pointer with a length is refused, not read.
  assert.equal(exports.convert(0, 100, 0, 0) >>> 0, 0);
  assert.equal(exports.result_len(), 2);
  const ok = c.withBuffers([modelFile('stories260K.bin'), modelFile('tok512.bin')], (ck, tok) => {
    const p = exports.convert(ck.pointer, ck.length, tok.pointer, tok.length) >>> 0;
    const len = exports.result_len() >>> 0;
    assert.notEqual(p, 0);
    assert.equal(p % 8, 0);
    const bytes = c.view(p, len).slice();
    exports.dealloc(p, len);
    return bytes;
  });
  assert.equal(String.fromCharCode(...ok.subarray(0, 8)), 'CURTAW01');
});
