// The client core's crank through the WebAssembly module: every scripted
// conversation of core/tests/crank/ (a turn lost, two crankers racing, a
// blockhash expired, a payer run dry, a forged receipt, a rewound run, a
// cancel, a run closed under it, a fleet's cranker leaving a run to another
// and one coming back to it following first, one ending where the turns
// stop paying it), event by event, must give the very actions and summary the
// native crank gave (core/tests/crank.rs checks the native side).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

import { loadCore } from '../src/index.js';
import { CrankMachine } from '../src/crank-machine.js';

const dir = new URL('../../core/tests/crank/', import.meta.url);
const core = await loadCore(readFileSync(process.env.CURTA_WASM ?? new URL('../../target/wasm/curta_core.wasm', import.meta.url)));
const bytes = (/** @type {string} */ b64) => new Uint8Array(Buffer.from(b64, 'base64'));

const names = readdirSync(dir).filter((f) => f.endsWith('.json'));
test('the scripted conversations are there', () => {
  assert.deepEqual(names.sort(), ['cancelled', 'clean', 'closed', 'following-first', 'forged-receipt', 'leaving', 'lost-first-rich', 'lost-first-tight', 'lost-turn', 'out-of-funds-midway', 'out-of-funds', 'racing', 'rewound', 'unpaid-at-once', 'unpaid'].map((n) => `${n}.json`));
});

for (const name of names) {
  test(`the module's crank says what the native one said: ${name}`, () => {
    const script = JSON.parse(readFileSync(new URL(name, dir), 'utf8'));
    const crank = new CrankMachine(core, bytes(script.artifact), bytes(script.state), script.setup);
    try {
      for (const [i, line] of script.conversation.entries()) {
        const action = crank.next(line.event, line.state ? bytes(line.state) : undefined);
        assert.deepEqual(action, line.action, `${name}, exchange ${i}`);
      }
      assert.deepEqual(crank.summary(), script.summary);
    } finally {
      crank.free();
    }
  });
}

test('a crank refuses what it cannot use, in words', () => {
  const script = JSON.parse(readFileSync(new URL('clean.json', dir), 'utf8'));
  assert.throws(() => new CrankMachine(core, bytes(script.artifact), bytes(script.state), { ...script.setup, run: 'notanaddress' }), /run "notanaddress" is not a Solana address: it is 12 characters long/);
  assert.throws(() => new CrankMachine(core, bytes(script.artifact).subarray(1), bytes(script.state), script.setup), /the artifact does not check: core error 2/);
  const crank = new CrankMachine(core, bytes(script.artifact), bytes(script.state), script.setup);
  assert.throws(() => crank.next({ event: 'launch' }), /event "launch" is not one the crank takes/);
  assert.equal(crank.next({ event: 'waited', nowMs: 5 }).kind, 'protocol');
  crank.free();
  assert.throws(() => crank.next({ event: 'start' }), /there is no crank 0/);
});
