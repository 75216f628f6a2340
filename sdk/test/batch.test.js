// The module's batch (core/src/client/batch.rs) through `BatchMachine`:
// the conversations core's own tests hold it to, action for action, so that
// `sendAll` and `curta model upload` land a batch by the one rule.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadCore } from '../src/index.js';
import { BatchMachine } from '../src/batch-machine.js';

const core = await loadCore(readFileSync(process.env.CURTA_WASM ?? new URL('../../target/wasm/curta_core.wasm', import.meta.url)));
const taken = (signature) => ({ signature, lastValidHeight: 100n, signatures: 1 });

test('a batch lands every job a window at a time, summing fees and slots', () => {
  const batch = new BatchMachine(core, { whats: ['job 0', 'job 1', 'job 2'], lamportsPerSignature: 5000n, inFlight: 2 });
  try {
    assert.deepEqual(batch.next({ event: 'start' }), { action: 'sign', jobs: [0, 1], freshBlockhash: false, landed: [] });
    assert.deepEqual(batch.next({ event: 'sent', sent: [taken('a'), taken('b')] }), { action: 'wait', ms: 200, landed: [] });
    assert.deepEqual(batch.next({ event: 'waited', nowMs: 0 }), { action: 'statuses', signatures: ['a', 'b'], landed: [] });
    assert.deepEqual(batch.next({ event: 'statuses', statuses: [null, { slot: 7n, failed: false }] }), { action: 'sign', jobs: [2], freshBlockhash: false, landed: [1] });
    batch.next({ event: 'sent', sent: [taken('c')] });
    batch.next({ event: 'waited', nowMs: 200 });
    const done = batch.next({ event: 'statuses', statuses: [{ slot: 9n, failed: false }, { slot: 8n, failed: false }] });
    assert.deepEqual(done, { action: 'done', transactions: '3', fees: '15000', firstSlot: '7', lastSlot: '9', landed: [0, 2] });
  } finally {
    batch.free();
  }
});

test('a batch signs an expired job again with a fresh blockhash, then gives up in words naming it', () => {
  const batch = new BatchMachine(core, { whats: ['writing section 1 at offset 986'], lamportsPerSignature: 5000n, mostExpiries: 1 });
  try {
    batch.next({ event: 'start' });
    batch.next({ event: 'sent', sent: [taken('a')] });
    batch.next({ event: 'waited', nowMs: 0 });
    batch.next({ event: 'statuses', statuses: [null] });
    for (const [now, want] of [
      [1000, { action: 'sign', jobs: [0], freshBlockhash: true, landed: [] }],
      [2000, { action: 'stop', kind: 'gaveUp', job: 0, words: 'writing section 1 at offset 986: expired 2 times without landing; is the cluster overloaded?', landed: [] }],
    ]) {
      batch.next({ event: 'waited', nowMs: now });
      assert.deepEqual(batch.next({ event: 'statuses', statuses: [null] }), { action: 'height', landed: [] });
      const next = batch.next({ event: 'height', height: 101n });
      assert.deepEqual(next, want);
      if (next.action === 'sign') batch.next({ event: 'sent', sent: [taken('a')] });
    }
  } finally {
    batch.free();
  }
});

test('a batch stops at the first job that lands and fails, and refuses an event it does not take', () => {
  const batch = new BatchMachine(core, { whats: ['binding a weight account to section 0'], lamportsPerSignature: 5000n });
  try {
    batch.next({ event: 'start' });
    batch.next({ event: 'sent', sent: [{ refused: 'the cluster did not take a transaction' }] });
    assert.deepEqual(batch.next({ event: 'waited', nowMs: 0 }), { action: 'sign', jobs: [0], freshBlockhash: false, landed: [] });
    batch.next({ event: 'sent', sent: [taken('x')] });
    batch.next({ event: 'waited', nowMs: 200 });
    assert.deepEqual(batch.next({ event: 'statuses', statuses: [{ slot: 3n, failed: true }] }), { action: 'stop', kind: 'failed', job: 0, signature: 'x', landed: [] });
    assert.throws(() => batch.next({ event: 'landed' }), { name: 'TypeError', message: 'event "landed" is not one a batch takes' });
  } finally {
    batch.free();
  }
  assert.throws(() => new BatchMachine(core, { lamportsPerSignature: 5000n }), { message: 'the field "whats" is missing' });
});
