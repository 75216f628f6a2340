// The module itself: what it imports and exports, and its allocator.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import test from 'node:test';
import { pathToFileURL } from 'node:url';

import { EXPORTS, loadCore } from '../src/index.js';
import { WASM_PATH, core } from '../test-support/fixtures.js';

const module = new WebAssembly.Module(readFileSync(WASM_PATH));

test('the module imports nothing', () => {
  assert.deepEqual(WebAssembly.Module.imports(module), []);
});

test('the module exports the specification’s functions, its memory and the linker’s two globals', (t) => {
  const exports = WebAssembly.Module.exports(module);
  const functions = exports.filter((e) => e.kind === 'function').map((e) => e.name);
  assert.deepEqual(functions.sort(), [...EXPORTS].sort());
  assert.ok(exports.some((e) => e.kind === 'memory' && e.name === 'memory'));
  // rustc always has the linker export these two globals for wasm32-unknown-unknown.
  const others = exports.filter((e) => e.kind !== 'function' && e.kind !== 'memory');
  assert.deepEqual(others.map((e) => `${e.kind} ${e.name}`).sort(), ['global __data_end', 'global __heap_base']);
  t.diagnostic(`${WASM_PATH}: ${statSync(WASM_PATH).size} bytes`);
});

test('each export takes the specification’s count of arguments', async () => {
  const { exports } = await core();
  const arity = {
    alloc: 1,
    dealloc: 2,
    state_size: 3,
    state_layout: 4,
    init_state: 9,
    plan_turn: 4,
    plan_turn_with: 6,
    turn_with_sections: 9,
    turn_with_allowance: 10,
    quote: 7,
    convert: 4,
    convert_with: 5,
    result_len: 0,
    required_section: 3,
    turn: 7,
    state_difference: 6,
    reply_pointer: 0,
    reply_length: 0,
    crank_new: 6,
    crank_next: 5,
    crank_summary: 1,
    crank_free: 1,
    receipts: 2,
    quote_run: 6,
    decimal_q16: 2,
  };
  for (const [name, count] of Object.entries(arity)) assert.equal(exports[name].length, count, name);
});

test('alloc returns zeroed memory aligned to eight; dealloc takes it back', async () => {
  const c = await core();
  const lengths = [1, 3, 8, 13, 100, 4096, 70_000, 1 << 20];
  for (const length of lengths) {
    const p = c.alloc(length);
    assert.equal(p % 8, 0, `alloc(${length}) = ${p}`);
    assert.ok(c.view(p, length).every((b) => b === 0), `alloc(${length}) zeroed`);
    c.view(p, length).fill(0xa5);
    c.dealloc(p, length);
    // Reused memory comes back zeroed too.
    const q = c.alloc(length);
    assert.ok(c.view(q, length).every((b) => b === 0), `alloc(${length}) zeroed again`);
    c.dealloc(q, length);
  }
});

test('alloc: zero bytes give a usable non-null address, too many give 0, never a trap', async () => {
  const { exports } = await core();
  const empty = exports.alloc(0) >>> 0;
  assert.notEqual(empty, 0);
  assert.equal(empty % 8, 0);
  exports.dealloc(empty, 0);
  exports.dealloc(0, 100); // nothing
  assert.equal(exports.alloc(0xfffffff0) >>> 0, 0);
  assert.equal(exports.alloc(-1) >>> 0, 0);
});

test('a buffer view survives memory growth when taken afresh', async () => {
  const c = await core();
  const a = c.copyIn(new Uint8Array([1, 2, 3, 4, 5]));
  const before = c.memory.buffer.byteLength;
  const big = c.allocBuffer(64 << 20); // forces the memory to grow
  assert.ok(c.memory.buffer.byteLength > before);
  assert.deepEqual([...a.read()], [1, 2, 3, 4, 5]);
  big.free();
  a.free();
});

test('loadCore takes bytes, a path, a file URL, a Response and a compiled module', async () => {
  const bytes = readFileSync(WASM_PATH);
  const sources = [
    new Uint8Array(bytes),
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    WASM_PATH,
    pathToFileURL(WASM_PATH),
    new Response(bytes, { headers: { 'content-type': 'application/wasm' } }),
    Promise.resolve(new Response(bytes)),
    module,
  ];
  for (const source of sources) {
    const c = await loadCore(source);
    assert.equal(typeof c.exports.turn, 'function');
  }
  await assert.rejects(loadCore(new Uint8Array([0, 97, 115, 109])), WebAssembly.CompileError);
});

test('a decimal temperature is rounded by the module’s rule, the CLI’s', async () => {
  const c = await core();
  assert.equal(c.temperatureQ16('0.8'), 52429);
  assert.equal(c.temperatureQ16(0.8), 52429);
  assert.equal(c.temperatureQ16('.5'), 32768);
  assert.equal(c.temperatureQ16(1e-7), 0);
  assert.equal(c.temperatureQ16(0.000008), 1);
  // Eighteen digits: past u64 before rounding, clamped to u32 after, for the core to refuse.
  assert.equal(c.temperatureQ16('999999.999999999999'), 0xffffffff);
  for (const bad of ['warm', '-1', '1e3', '0.1234567890123', '1234567', '']) {
    assert.throws(() => c.temperatureQ16(bad), /bad temperature/, bad);
  }
  assert.throws(() => c.temperatureQ16(-1), RangeError);
});
