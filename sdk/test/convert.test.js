// The converter inside the module gives the native converter's bytes: the
// exponential, SiLU and rotary tables, computed in floating point, included.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { CurtaCoreError, readSectionTable } from '../src/index.js';
import { cli, core, modelFile, modelsDir, nativeArtifact, scratchPath, sha256 } from '../test-support/fixtures.js';

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
