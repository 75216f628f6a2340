// Core errors through the package: `Curta core error N`, with the number
// and the name; and the raw exports refusing bad arguments without a trap.
import assert from 'node:assert/strict';
import test from 'node:test';

import { CoreSession, CurtaCoreError, ERROR_NAMES } from '../src/index.js';
import { core, stories260K } from '../test-support/fixtures.js';

const PROMPT = 'Once upon a time';
/** @param {number} code */
const coreError = (code) => ({ name: ERROR_NAMES[code], code, message: `Curta core error ${code}` });

test('a prompt with a zero byte is InvalidPrompt: an Error "Curta core error 6"', async () => {
  const c = await core();
  let caught;
  try {
    CoreSession.open(c, stories260K(), 'Once\0upon', { maxTokens: 12 });
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof Error);
  assert.ok(caught instanceof CurtaCoreError);
  assert.equal(caught.message, 'Curta core error 6');
  assert.equal(caught.code, 6);
  assert.equal(caught.name, 'InvalidPrompt');
});

test('every error number has the specification’s name', () => {
  const names = [
    'InvalidConfig',
    'InvalidFormat',
    'InvalidState',
    'BufferTooSmall',
    'MissingWeights',
    'InvalidPrompt',
    'ContextExceeded',
    'Arithmetic',
  ];
  names.forEach((name, i) => {
    const e = new CurtaCoreError(i + 1);
    assert.equal(e.name, name);
    assert.equal(e.code, i + 1);
    assert.equal(e.message, `Curta core error ${i + 1}`);
    assert.equal(String(e), `${name}: Curta core error ${i + 1}`);
  });
});

test('run parameters out of range are InvalidPrompt (6)', async () => {
  const c = await core();
  const art = stories260K();
  const open = (prompt, options) => () => CoreSession.open(c, art, prompt, options);
  assert.throws(open(new Uint8Array([0x4f, 0xff]), { maxTokens: 12 }), coreError(6)); // not UTF-8
  assert.throws(open(PROMPT, { maxTokens: 0 }), coreError(6));
  assert.throws(open(PROMPT, { maxTokens: 513 }), coreError(6)); // past the 512 context
  assert.throws(open('a'.repeat(1025), { maxTokens: 1 }), coreError(6));
  assert.throws(open(PROMPT, { maxTokens: 12, temperature: 16.5 }), coreError(6));
  assert.throws(open(PROMPT, { maxTokens: 12, temperatureQ16: 0xffffffff }), coreError(6));
  // Not core errors: arguments JavaScript cannot pass as u32 or u64.
  assert.throws(open(PROMPT, { maxTokens: -1 }), RangeError);
  assert.throws(open(PROMPT, { maxTokens: 12, seed: -1n }), RangeError);
  assert.throws(open(PROMPT, { maxTokens: 12, temperature: 'warm' }), RangeError);
  assert.throws(open(PROMPT, { maxTokens: 12, temperature: 0.8, temperatureQ16: 1 }), RangeError);
});

test('a prompt whose tokens and max tokens pass the context runs until the context is full (ContextExceeded, 7, is never raised)', async () => {
  const c = await core();
  const session = CoreSession.open(c, stories260K(), PROMPT, { maxTokens: 512 });
  const { tokens, turns } = session.run();
  // 5 prompt tokens leave 508 of the context's 512 positions' tokens.
  assert.equal(tokens.length, 508);
  assert.equal(turns, c.quote(stories260K(), PROMPT, { maxTokens: 512 }));
  session.close();
});

test('a run that is complete is InvalidState (3); so is a state that is not one', async () => {
  const c = await core();
  const session = CoreSession.open(c, stories260K(), PROMPT, { maxTokens: 1 });
  session.run();
  assert.throws(() => session.step(), coreError(3));
  assert.throws(() => session.plan(), coreError(3));
  const garbage = session.state().fill(7);
  session.close();
  const bad = CoreSession.resume(c, stories260K(), garbage);
  assert.throws(() => bad.step(), coreError(3));
  assert.throws(() => bad.requiredSection(), coreError(3));
  bad.close();
});

test('metadata that does not check is InvalidFormat (2)', async () => {
  const c = await core();
  const art = stories260K().slice();
  art[8] ^= 1; // the format version
  const session = CoreSession.open(c, art, PROMPT, { maxTokens: 4 });
  assert.throws(() => session.step(), coreError(2));
  assert.throws(() => c.quote(art, PROMPT, { maxTokens: 4 }), coreError(2));
  session.close();
});

test('stateDifference: the module names the first difference as the Rust client does', async () => {
  const c = await core();
  const config = stories260K().subarray(16, 44);
  const session = CoreSession.open(c, stories260K(), PROMPT, { maxTokens: 12 });
  const state = session.state();
  session.close();
  assert.equal(c.stateDifference(config, state, state), null);
  const turns = state.slice();
  turns[80] = 7;
  assert.deepEqual(c.stateDifference(config, state, turns), {
    place: 'header field turns',
    words: 'first difference at offset 80: header field turns: expected 0 (0x0000000000000000), got 7 (0x0000000000000007)',
  });
  const layout = c.stateLayout(config, 16, 12);
  const keys = state.slice();
  keys[layout.keys + 4 * 33] = 1;
  assert.deepEqual(c.stateDifference(config, state, keys), {
    place: 'buffer keys, element 33',
    words: `first difference at offset ${layout.keys + 132}: buffer keys, element 33: expected 0 (0x00000000), got 1 (0x00000001)`,
  });
  assert.deepEqual(c.stateDifference(config, state, state.subarray(0, 100)), {
    place: 'state length',
    words: `state lengths differ: expected ${state.length}, got 100`,
  });
  // The layout's keys are the module's buffers, in the module's order.
  const names = Object.keys(layout)
    .filter((k) => k !== 'size' && k !== 'cachePositions')
    .map((k) => {
      const changed = state.slice();
      changed[layout[k]] ^= 1;
      return c.stateDifference(config, state, changed)?.place;
    });
  assert.deepEqual(names, [
    'prompt', 'prompt tokens', 'output tokens', 'output text', 'x', 'xb', 'xb2', 'q',
    'hb', 'hb2', 'logits', 'attention scores', 'keys', 'values',
  ].map((n) => `buffer ${n}, element 0`));
  assert.throws(() => c.stateDifference(new Uint8Array(28), state, turns), coreError(1));
});

test('stateSize: the size, or a RangeError for parameters out of range', async () => {
  const c = await core();
  const config = stories260K().subarray(16, 44);
  // The specification: a 12-token run on the 16-byte prompt is a 48,304-byte
  // run account, its 256-byte header included.
  assert.equal(c.stateSize(config, 16, 12), 48_304 - 256);
  assert.throws(() => c.stateSize(config, 16, 0), RangeError);
  assert.throws(() => c.stateSize(new Uint8Array(28), 16, 12), RangeError);
});

test('stateLayout: the offsets of every buffer, from the module; out of range is a core error', async () => {
  const c = await core();
  const config = stories260K().subarray(16, 44);
  const layout = c.stateLayout(config, 16, 12);
  // The header's 128 bytes, then the 16 prompt bytes, then 18 prompt tokens.
  assert.equal(layout.prompt, 128);
  assert.equal(layout.promptTokens, 144);
  assert.equal(layout.outputTokens, 144 + 4 * 18);
  assert.equal(layout.cachePositions, 29);
  assert.equal(layout.size, c.stateSize(config, 16, 12));
  const order = ['prompt', 'promptTokens', 'outputTokens', 'outputText', 'x', 'xb', 'xb2', 'q'];
  order.push('hb', 'hb2', 'logits', 'scores', 'keys', 'values', 'size');
  for (let i = 1; i < order.length; i++) assert.ok(layout[order[i - 1]] < layout[order[i]], order[i]);
  assert.throws(() => c.stateLayout(config, 16, 0), coreError(6));
  assert.throws(() => c.stateLayout(new Uint8Array(28), 16, 12), coreError(1));
  const out = c.allocBuffer(64);
  const cfg = c.copyIn(config);
  assert.equal(c.exports.state_layout(cfg.pointer, 16, 12, c.memory.buffer.byteLength), 4);
  assert.equal(c.exports.state_layout(cfg.pointer, 16, 12, out.pointer), 0);
  out.free();
  cfg.free();
});

test('quote: errors are thrown with their numbers', async () => {
  const c = await core();
  assert.throws(() => c.quote(stories260K(), 'a\0', { maxTokens: 4 }), coreError(6));
  // Past the context is no error: the run ends when the context is full.
  assert.equal(c.quote(stories260K(), PROMPT, { maxTokens: 512 }), 1364);
});

test('raw exports: bad pointers and lengths give error numbers, never a trap', async () => {
  const c = await core();
  const { exports } = c;
  const art = c.loadArtifact(stories260K());
  const cfg = art.configPointer;
  const meta = art.metadata;
  const prompt = c.copyIn(new TextEncoder().encode(PROMPT));
  const size = c.stateSize(art.configBytes, prompt.length, 12);
  const state = c.allocBuffer(size + 8);
  const s = state.pointer;
  const out = c.allocBuffer(20);
  const beyond = c.memory.buffer.byteLength; // the first address past the memory
  const init = (config, st, len, p = prompt.pointer, plen = prompt.length) =>
    exports.init_state(config, st, len, p, plen, 12, 0, 0, 0);

  assert.equal(init(0, s, size), 1); // no configuration
  assert.equal(init(beyond - 8, s, size), 1); // a configuration past the memory
  assert.equal(init(cfg, 0, size), 3); // a null state with a length
  assert.equal(init(cfg, beyond - 16, size), 3); // a state past the memory
  assert.equal(init(cfg, s + 4, size), 3); // a state not aligned to eight
  assert.equal(init(cfg, s, size - 8), 4); // the wrong length
  assert.equal(init(cfg, s, size, 0, 16), 6); // a null prompt with a length
  assert.equal(init(cfg, s, size, s + 128, 16), 3); // a prompt inside the state
  assert.equal(init(cfg, s, size), 0);

  assert.equal(exports.plan_turn(cfg, s, size, 0), 4); // no output
  assert.equal(exports.plan_turn(cfg, s, size, beyond - 4), 4); // output past the memory
  assert.equal(exports.plan_turn(cfg, 0, size, out.pointer), 3);
  assert.equal(exports.plan_turn(cfg, s, size, out.pointer), 0);

  const turn = (metaPtr, metaLen, a = 0, alen = 0) =>
    exports.turn_with_sections(cfg, s, size, metaPtr, metaLen, a, alen, 0, 0);
  assert.equal(turn(0, meta.length), 2); // null metadata with a length
  assert.equal(turn(s, size), 3); // metadata overlapping the state
  assert.equal(turn(meta.pointer, meta.length, 0, 10), 5); // a null section with a length
  assert.equal(turn(meta.pointer, meta.length - 8), 2); // metadata cut short
  assert.equal(turn(meta.pointer, meta.length), 0); // tokenizing reads section zero alone
  assert.equal(turn(meta.pointer, meta.length), 5); // the embedding needs its section

  assert.equal(exports.required_section(0, s, size) >>> 0, 0xffffffff);
  assert.equal(exports.required_section(cfg, s, 0) >>> 0, 0xffffffff);
  assert.equal(exports.state_size(0, 16, 12) >>> 0, 0xffffffff);
  assert.equal(exports.state_size(cfg, 1025, 12) >>> 0, 0xffffffff);
  assert.equal(exports.state_size(cfg, 16, 12) >>> 0, size);
  // quote's errors: 0xFFFFFFFF_0000000N.
  const q = (p, plen, max) => BigInt.asUintN(64, exports.quote(cfg, meta.pointer, meta.length, p, plen, max, 0));
  assert.equal(q(prompt.pointer, prompt.length, 12), 20n);
  assert.equal(q(0, 5, 12), 0xffffffff00000006n);
  assert.equal(q(prompt.pointer, prompt.length, 0), 0xffffffff00000006n);
  assert.equal(BigInt.asUintN(64, exports.quote(0, 0, 0, 0, 0, 1, 0)), 0xffffffff00000001n);

  for (const b of [prompt, state, out]) b.free();
  art.free();
});

test('an address that is not one is refused in the client core words, the CLI’s', async () => {
  const c = await core();
  assert.equal(c.addressRefusal('--model', '11111111111111111111111111111111'), null);
  assert.equal(
    c.addressRefusal('--model', 'not-an-address'),
    '--model "not-an-address" is not a Solana address: "-" is not base58 (an address is 32 to 44 base58 characters, 1-9 and letters but 0, O, I and l, for 32 bytes)',
  );
});

test('a transaction’s log tail is the client core’s: the last eight lines under "program log:" (core/src/client/errors.rs tests the same)', async () => {
  const { logTail } = await import('../src/index.js');
  const c = await core();
  assert.equal(logTail(c, undefined), '');
  assert.equal(logTail(c, []), '');
  const logs = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);
  const tail = logTail(c, logs);
  assert.ok(tail.startsWith('\n  program log:\n    line 3\n    line 4'), tail);
  assert.ok(tail.endsWith('\n    line 10'), tail);
  assert.equal(tail.split('\n    ').length - 1, 8);
  assert.equal(logTail(c, ['only']), '\n  program log:\n    only');
});
