// stories260K runs through the package: the same tokens, text, turns and
// states, byte for byte, as the native build.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { CoreSession, readStateInfo } from '../src/index.js';
import {
  artifactPath,
  cli,
  core,
  goldenRuns,
  modelArtifact,
  nativeRun,
  scratchPath,
  sha256,
  stories260K,
} from '../test-support/fixtures.js';

const PROMPT = 'Once upon a time';

const GREEDY = { prompt: PROMPT, maxTokens: 12, temperatureQ16: 0, seed: 0 };
// The specification's reference run: "Once upon a time", 12 tokens, T = 0.
const GREEDY_TEXT = ', there was a little girl named Lily. She';
const GREEDY_TURNS = 20;
// Its final state, from the native CLI:
//   curta-core run stories260K.curta --prompt "Once upon a time" --max-tokens 12 --json
const GREEDY_SHA256 = 'a90a0eb77b7c0f5b74614d3f09f519ac98db3cabaabed6c62cd1c4b6b1fca890';

const SAMPLED = { prompt: PROMPT, maxTokens: 24, temperatureQ16: 52429, seed: 42n };
// T = 0.8 (52429 with 16 fractional bits), seed 42, 24 tokens. These values
// came from the native CLI (curta-core at this commit):
//   curta-core run stories260K.curta --prompt "Once upon a time" --max-tokens 24 \
//     --temperature-q16 52429 --seed 42 --json
const SAMPLED_TEXT = ', there was a little girl named Lily. She loved to clean up her toy andll';
const SAMPLED_TURNS = 36;
const SAMPLED_SHA256 = '49c32aa5c0b66cc0b4254d556e4bde5daed11674e0b2538233f75f9ee171c4c9';

/**
 * Runs a whole session; returns it (open) with every turn's state.
 * @param {import('../src/index.js').CoreWasm} c
 */
function runSession(c, artifact, run) {
  const session = CoreSession.open(c, artifact, run.prompt, run);
  const states = [session.state()];
  session.run({ onTurn: () => states.push(session.state()) });
  return { session, states };
}

test('T=0, 12 tokens: the reference text in 20 turns and the native final state', async () => {
  const c = await core();
  const { session } = runSession(c, stories260K(), GREEDY);
  assert.equal(session.text(), GREEDY_TEXT);
  assert.equal(session.info().turns, GREEDY_TURNS);
  assert.deepEqual(session.promptTokens(), [1, 403, 407, 261, 378]);
  assert.equal(sha256(session.state()), GREEDY_SHA256);
  assert.equal(await session.stateSha256(), GREEDY_SHA256);
  const native = nativeRun(stories260K(), GREEDY);
  assert.deepEqual(session.tokens(), native.tokens);
  assert.equal(session.text(), native.text);
  assert.equal(native.state_sha256, GREEDY_SHA256);
  session.close();
});

test('T=0.8, seed 42, 24 tokens: the native tokens, text and final state', async () => {
  const c = await core();
  const { session } = runSession(c, stories260K(), SAMPLED);
  assert.equal(session.text(), SAMPLED_TEXT);
  assert.equal(session.info().turns, SAMPLED_TURNS);
  assert.equal(sha256(session.state()), SAMPLED_SHA256);
  const native = nativeRun(stories260K(), SAMPLED);
  assert.deepEqual(session.tokens(), native.tokens);
  assert.equal(native.state_sha256, SAMPLED_SHA256);
  session.close();
});

test('the decimal temperature 0.8 is 52429 and gives the same run', async () => {
  const c = await core();
  const session = CoreSession.open(c, stories260K(), PROMPT, { maxTokens: 24, temperature: 0.8, seed: 42 });
  session.run();
  assert.equal(await session.stateSha256(), SAMPLED_SHA256);
  session.close();
});

for (const [name, run] of [
  ['T=0', GREEDY],
  ['T=0.8', SAMPLED],
]) {
  test(`${name}: every turn's state equals the native CLI's, byte for byte`, async () => {
    const c = await core();
    const { session, states } = runSession(c, stories260K(), run);
    session.close();
    const dir = scratchPath(`states-${name}`);
    const args = ['run', artifactPath(stories260K()), '--prompt', run.prompt, '--max-tokens', String(run.maxTokens)];
    cli([...args, '--temperature-q16', String(run.temperatureQ16), '--seed', String(run.seed), '--states', dir]);
    const files = readdirSync(dir).sort();
    assert.equal(files.length, states.length);
    files.forEach((file, i) => {
      const native = readFileSync(join(dir, file));
      assert.ok(native.equals(states[i]), `turn ${i} (${file}) differs`);
    });
  });
}

test('every plan names sections the artifact has, and the turns stay inside 1,350,000 units', async () => {
  const c = await core();
  const session = CoreSession.open(c, stories260K(), PROMPT, GREEDY);
  const plans = [];
  session.run({ onTurn: (report) => plans.push(report.plan) });
  // The tokenizing turn reads section zero alone; every later one two sections.
  assert.deepEqual(plans[0].sections, []);
  for (const plan of plans) {
    assert.ok(plan.sections.every((s) => s >= 1 && s < session.artifact.sections.length));
    assert.ok(plan.estimatedCu <= 1_350_000);
  }
  assert.equal(plans.reduce((n, p) => n + p.maxGenerated, 0) >= 12, true);
  session.close();
});

test('quote: 20 turns for the reference run, 36 for 24 tokens; a loaded artifact quotes the same', async () => {
  const c = await core();
  assert.equal(c.quote(stories260K(), PROMPT, { maxTokens: 12 }), GREEDY_TURNS);
  assert.equal(c.quote(stories260K(), PROMPT, { maxTokens: 24, temperatureQ16: 52429 }), SAMPLED_TURNS);
  const loaded = c.loadArtifact(stories260K());
  assert.equal(c.quote(loaded, PROMPT, { maxTokens: 12 }), GREEDY_TURNS);
  loaded.free();
  const args = ['quote', artifactPath(stories260K()), '--prompt', PROMPT, '--max-tokens', '24'];
  const native = JSON.parse(cli([...args, '--temperature-q16', '52429', '--json']));
  assert.equal(native.turns, SAMPLED_TURNS);
});

test('a run resumed from its state bytes ends in the same state', async () => {
  const c = await core();
  const loaded = c.loadArtifact(stories260K());
  const first = CoreSession.open(c, loaded, PROMPT, SAMPLED);
  for (let i = 0; i < 11; i++) first.step();
  const middle = first.state();
  first.close();
  assert.equal(readStateInfo(middle).turns, 11);
  const second = CoreSession.resume(c, loaded, middle);
  second.run();
  assert.equal(await second.stateSha256(), SAMPLED_SHA256);
  assert.equal(second.text(), SAMPLED_TEXT);
  second.close();
  loaded.free();
});

test('the raw exports: required_section, and turn for a plan of at most one section', async () => {
  const c = await core();
  const loaded = c.loadArtifact(stories260K());
  const session = CoreSession.open(c, loaded, PROMPT, GREEDY);
  const { exports } = c;
  const cfg = loaded.configPointer;
  const meta = loaded.metadata;
  const s = session.stateBuffer;
  // Tokenizing reads section zero alone: `turn` with no weights runs it.
  assert.equal(exports.required_section(cfg, s.pointer, s.length) >>> 0, 0);
  assert.equal(exports.turn(cfg, s.pointer, s.length, meta.pointer, meta.length, 0, 0), 0);
  // The next turn starts at the embedding, in the output section, and goes on
  // into the layers: `turn` with one section is MissingWeights, and leaves
  // the state as it was.
  const plan = session.plan();
  assert.equal(plan.sections.length, 2);
  assert.equal(exports.required_section(cfg, s.pointer, s.length) >>> 0, plan.sections[0]);
  assert.equal(session.requiredSection(), plan.sections[0]);
  const before = session.state();
  const only = loaded.section(plan.sections[0]);
  assert.equal(exports.turn(cfg, s.pointer, s.length, meta.pointer, meta.length, only.pointer, only.length), 5);
  assert.deepEqual(session.state(), before);
  // turn_with_sections with the sections swapped: the plan's order gives the
  // slots their indices, so the second slot, taken as the layer section
  // (238,560 bytes), holds the output section's 34,816, and the core
  // refuses it as too short before it writes anything.
  const other = loaded.section(plan.sections[1]);
  const swapped = exports.turn_with_sections(
    cfg, s.pointer, s.length, meta.pointer, meta.length,
    other.pointer, other.length, only.pointer, only.length,
  );
  assert.equal(swapped, 5);
  assert.deepEqual(session.state(), before);
  session.run();
  assert.equal(await session.stateSha256(), GREEDY_SHA256);
  session.close();
  loaded.free();
});

test('golden receipts: every 260K run of golden/manifest.json, turn by turn', async (t) => {
  const skipped = [];
  const runs = goldenRuns(skipped);
  for (const line of skipped) t.diagnostic(`skipping ${line}`);
  assert.ok(runs.length > 0, 'golden/manifest.json names no run of a 260K model');
  const c = await core();
  for (const run of runs) {
    const artifact = modelArtifact(run.model);
    const { receipt } = run;
    assert.equal(sha256(artifact), receipt.artifactSha256, `${run.name}: the artifact`);
    // Hashes, not states: a full-context run has over a thousand of them.
    const session = CoreSession.open(c, artifact, run.prompt, run);
    const hashes = [sha256(session.state())];
    session.run({ onTurn: () => hashes.push(sha256(session.state())) });
    assert.equal(hashes.length, receipt.turns.length, `${run.name}: turns`);
    for (const { turn, stateSha256 } of receipt.turns) {
      assert.equal(hashes[turn], stateSha256, `${run.name}: turn ${turn}`);
    }
    assert.deepEqual(session.tokens(), receipt.tokens, `${run.name}: tokens`);
    assert.deepEqual(session.textBytes(), receipt.text, `${run.name}: text`);
    session.close();
  }
  t.diagnostic(`${runs.length} golden runs: ${runs.map((r) => r.name).join(', ')}`);
});
