// The measured charge table and the turn allowance through the package: a
// model converted with charges 'measured' runs the golden measured runs
// turn by turn, every state and every plan's charge the receipt's; and a
// run under another allowance than the default is the native planner's,
// state by state and plan by plan.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { CoreSession, CurtaCoreError, FLAG_MEASURED_CHARGES, FLAG_SHARED_CLASSIFIER } from '../src/index.js';
import {
  REPO_ROOT,
  artifactPath,
  cli,
  core,
  moduleArtifact,
  parseReceipt,
  scratchPath,
  sha256,
  stories260K,
} from '../test-support/fixtures.js';

const PROMPT = 'Once upon a time';
const DEFAULT_ALLOWANCE = 1_350_000;

/** A golden run of golden/manifest.json with its receipt. */
function golden(name) {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'golden/manifest.json'), 'utf8'));
  const r = manifest.runs.find((x) => x.name === name);
  assert.ok(r, `golden/manifest.json has no run ${name}`);
  return {
    model: r.model,
    prompt: r.prompt,
    run: { maxTokens: r.max_tokens, temperatureQ16: r.temperature_q16, seed: BigInt(r.seed) },
    receipt: parseReceipt(readFileSync(join(REPO_ROOT, 'golden/receipts', `${name}.txt`), 'utf8')),
  };
}

/** Runs a session to its end: every state's SHA-256 (turn 0 the opening's) and every plan. */
function runAll(session) {
  const hashes = [sha256(session.state())];
  const plans = [];
  session.run({
    onTurn: (report) => {
      plans.push(report.plan);
      hashes.push(sha256(session.state()));
    },
  });
  return { hashes, plans };
}

const measuredRuns = [
  ['stories260k-measured-reference', 16],
  ['stories260k-measured-t08-seed1', 28],
];

for (const [name, turns] of measuredRuns) {
  test(`${name}: converted with charges 'measured' in the module, every state and every charge the golden receipt's (${turns} turns)`, async () => {
    const c = await core();
    const g = golden(name);
    assert.equal(g.model, 'stories260K+measured');
    const artifact = await moduleArtifact(g.model);
    assert.equal(sha256(artifact), g.receipt.artifactSha256, 'the artifact');
    const session = CoreSession.open(c, artifact, g.prompt, g.run);
    assert.equal(session.charges, 'measured');
    assert.equal(session.artifact.flags, FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES);
    const { hashes, plans } = runAll(session);
    assert.equal(plans.length, turns);
    assert.equal(hashes.length, g.receipt.turns.length);
    for (const { turn, stateSha256 } of g.receipt.turns) assert.equal(hashes[turn], stateSha256, `turn ${turn}'s state`);
    // The tokenizing turn's plan charges the whole allowance (the receipt
    // has what it did); every other plan's charge is the receipt's.
    assert.deepEqual(plans[0].sections, []);
    assert.equal(plans[0].estimatedCu, DEFAULT_ALLOWANCE);
    plans.slice(1).forEach((plan, i) => assert.equal(plan.estimatedCu, g.receipt.turns[i + 2].plannerCu, `turn ${i + 2}'s charge`));
    assert.deepEqual(session.tokens(), g.receipt.tokens);
    assert.deepEqual(session.textBytes(), g.receipt.text);
    session.close();
  });
}

test("quote: 16 turns for the measured reference run, 28 for T=0.8 seed 1; the specification's artifact 20 and 36", async () => {
  const c = await core();
  const measured = await moduleArtifact('stories260K+measured');
  assert.equal(c.quote(measured, PROMPT, { maxTokens: 12 }), 16);
  assert.equal(c.quote(measured, PROMPT, { maxTokens: 24, temperatureQ16: 52429 }), 28);
  const loaded = c.loadArtifact(measured);
  assert.equal(c.quote(loaded, PROMPT, { maxTokens: 12 }), 16);
  // Section zero alone carries the table.
  assert.equal(c.quote(measured.subarray(0, loaded.sections[0].length), PROMPT, { maxTokens: 12 }), 16);
  loaded.free();
  assert.equal(c.quote(stories260K(), PROMPT, { maxTokens: 12 }), 20);
  assert.equal(c.quote(stories260K(), PROMPT, { maxTokens: 24, temperatureQ16: 52429 }), 36);
  const native = JSON.parse(cli(['quote', artifactPath(measured), '--prompt', PROMPT, '--max-tokens', '12', '--json']));
  assert.equal(native.turns, 16);
});

test('CoreArtifact: flags and charges from section zero', async () => {
  const c = await core();
  const spec = c.loadArtifact(stories260K());
  assert.deepEqual([spec.flags, spec.charges], [FLAG_SHARED_CLASSIFIER, 'specification']);
  spec.free();
  const measured = c.loadArtifact(await moduleArtifact('stories260K+measured'));
  assert.deepEqual([measured.flags, measured.charges], [FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES, 'measured']);
  measured.free();
});

// Under an allowance of 400,000 units: the native CLI's states
// (`curta-core run --allowance 400000 --states DIR`) and plans
// (`curta-core plan --state FILE --allowance 400000 --json`).
const ALLOWANCE = 400_000;
for (const [table, turns] of [
  ['specification', 67],
  ['measured', 50],
]) {
  test(`${table} table, allowance ${ALLOWANCE}: every state and every plan the native planner's (${turns} turns)`, async () => {
    const c = await core();
    const artifact = table === 'measured' ? await moduleArtifact('stories260K+measured') : stories260K();
    const path = artifactPath(artifact);
    const dir = scratchPath(`allowance-${table}`);
    cli(['run', path, '--prompt', PROMPT, '--max-tokens', '12', '--allowance', String(ALLOWANCE), '--states', dir]);
    const files = readdirSync(dir).sort();
    const session = CoreSession.open(c, artifact, PROMPT, { maxTokens: 12, allowance: ALLOWANCE });
    assert.equal(session.allowance, ALLOWANCE);
    const states = [session.state()];
    const plans = [];
    const required = [];
    while (!session.complete) {
      required.push(session.requiredSection());
      const report = session.step();
      plans.push(report.plan);
      states.push(session.state());
    }
    assert.equal(plans.length, turns);
    assert.equal(files.length, states.length);
    files.forEach((file, i) => assert.ok(readFileSync(join(dir, file)).equals(states[i]), `turn ${i} (${file}) differs`));
    plans.forEach((plan, i) => {
      assert.ok(plan.estimatedCu <= ALLOWANCE, `turn ${i + 1} plans ${plan.estimatedCu} units`);
      assert.equal(required[i], plan.sections[0] ?? 0, `turn ${i + 1}'s required section`);
    });
    // The plans, against the native planner's, from the states the CLI wrote.
    for (let i = 0; i < plans.length; i++) {
      const native = JSON.parse(cli(['plan', path, '--state', join(dir, files[i]), '--allowance', String(ALLOWANCE), '--json']));
      assert.deepEqual(
        { sections: plans[i].sections, estimatedCu: plans[i].estimatedCu, maxGenerated: plans[i].maxGenerated },
        { sections: native.sections, estimatedCu: native.estimated_cu, maxGenerated: native.max_generated },
        `turn ${i + 1}'s plan`,
      );
    }
    // The same text as at the default allowance, in more turns.
    assert.equal(session.text(), ', there was a little girl named Lily. She');
    const native = JSON.parse(cli(['run', path, '--prompt', PROMPT, '--max-tokens', '12', '--allowance', String(ALLOWANCE), '--json']));
    assert.equal(native.turns, turns);
    assert.equal(await session.stateSha256(), native.state_sha256);
    session.close();
  });
}

test('planTurn: the flags choose the table (bit 1) and the classifier (bit 0), the allowance the cut; plan_turn is the specification at 1,350,000', async () => {
  const c = await core();
  const loaded = c.loadArtifact(await moduleArtifact('stories260K+measured'));
  const session = CoreSession.open(c, loaded, PROMPT, { maxTokens: 12 });
  session.step(); // tokenizing
  const s = session.stateBuffer;
  const cfg = loaded.configPointer;
  const plan = (options) => c.planTurn(cfg, s, undefined, options);
  const measured = plan({ flags: FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES });
  assert.deepEqual(plan({ flags: 0xffffffff }), measured, 'bits other than 0 and 1 are not read');
  assert.deepEqual(session.plan(), measured);
  const specification = plan();
  assert.deepEqual(plan({ flags: FLAG_SHARED_CLASSIFIER }), specification);
  assert.notDeepEqual(measured, specification, 'the two tables cut this turn differently');
  // The raw plan_turn: the specification's table, the default allowance.
  const out = c.allocBuffer(20);
  assert.equal(c.exports.plan_turn(cfg, s.pointer, s.length, out.pointer), 0);
  const raw = new DataView(out.view().buffer, out.pointer, 20);
  assert.equal(raw.getUint32(12, true), specification.estimatedCu);
  out.free();
  // A smaller allowance cuts earlier; the bounds are inclusive.
  const small = plan({ flags: FLAG_MEASURED_CHARGES, allowance: 100_000 });
  assert.ok(small.estimatedCu <= 100_000 && small.estimatedCu < measured.estimatedCu);
  assert.ok(plan({ allowance: 22_096 }).estimatedCu <= 22_096);
  assert.equal(plan({ allowance: DEFAULT_ALLOWANCE }).estimatedCu, specification.estimatedCu);
  const invalidConfig = { name: 'InvalidConfig', code: 1, message: 'Curta core error 1' };
  assert.throws(() => plan({ allowance: 22_095 }), invalidConfig);
  assert.throws(() => plan({ allowance: 1_350_001 }), invalidConfig);
  assert.throws(() => plan({ allowance: 0 }), invalidConfig);
  assert.throws(() => plan({ allowance: -1 }), RangeError);
  session.close();
  loaded.free();
});

test('turn_with_allowance: outside 22,096 to 1,350,000 is InvalidConfig (1) and leaves the state; a session refuses it at once', async () => {
  const c = await core();
  const loaded = c.loadArtifact(await moduleArtifact('stories260K+measured'));
  const session = CoreSession.open(c, loaded, PROMPT, { maxTokens: 12 });
  session.step();
  const before = session.state();
  const plan = session.plan();
  for (const allowance of [0, 22_095, 1_350_001]) {
    assert.throws(
      () => c.turn(loaded, session.stateBuffer, plan, { allowance }),
      (e) => e instanceof CurtaCoreError && e.code === 1 && e.name === 'InvalidConfig',
    );
    assert.deepEqual(session.state(), before);
  }
  // A turn under a small allowance runs its own plan, and stops where it says.
  const small = c.planTurn(loaded.configPointer, session.stateBuffer, undefined, { flags: loaded.flags, allowance: 30_000 });
  c.turn(loaded, session.stateBuffer, small, { allowance: 30_000 });
  assert.equal(session.info().turns, 2);
  const next = c.planTurn(loaded.configPointer, session.stateBuffer, undefined, { flags: loaded.flags, allowance: 30_000 });
  assert.ok(next.estimatedCu <= 30_000);
  session.close();
  const range = /the turn allowance 22095 is out of range: 22,096 to 1,350,000 compute units/;
  assert.throws(() => CoreSession.open(c, loaded, PROMPT, { maxTokens: 12, allowance: 22_095 }), range);
  assert.throws(() => CoreSession.resume(c, loaded, before, { allowance: 22_095 }), range);
  loaded.free();
});
