// Racing crankers (issue 20): the SDK's crankRun and the Rust `curta run
// crank` (target/debug/curta, a child process per run, with a signer of
// its own) crank the same three stories260K runs at once on
// curta-localnet: the golden reference run (opened by the JS client),
// where curta joins once crankRun has landed 3 turns, and the T=0.8 seed-1
// (opened by curta) and seed-2 (by the JS client) runs, where both start
// together (curta, replaying natively, is first to send). All must finish; each run's final state is its golden
// receipt's; read from the validator's history, every turn landed exactly
// once and in order, every failed turn is a StaleTurn, each cranker's
// landed and failed turns are the ones it says, and the turns each says
// the other did add up to the run's; each signer's balance fell by the
// fees of its transactions there. The failed turns are bounded (at most a
// window each time a cranker backed off, and one more). Prints, per
// cranker, turns landed, failed, landed by the other, transactions per turn
// landed and fees, and the race's seconds. Then crankRun with
// leaveToOthers joins a fourth run curta cranks a turn at a time: when its
// turn fails on curta's it leaves the run (one failed turn), else curta
// follows it and it ends the run; either way the history agrees.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { createKeyPairSignerFromBytes, generateKeyPairSigner } from '@solana/kit';

import { crankRun, createCurtaClient, fetchRun, initConfig, openRun, uploadModel } from '../../src/index.js';
import { fileJournal } from '../../src/chain/journal-node.js';
import { getTurnInstructionDataDecoder } from '../../src/generated-js/index.js';
import { REPO_ROOT, core as loadTestCore, modelFile, sha256 } from '../../test-support/fixtures.js';
import { history, errorJson } from '../../test-support/history.js';
import { startLocalnet } from '../../test-support/localnet.js';

/** target/debug/curta (make's HOST_BUILD), or $CURTA_BIN. */
const CURTA_BIN = process.env.CURTA_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(REPO_ROOT, 'target'), 'debug/curta');
const TURN = 11;
const STALE_TURN = 21;
const WINDOW = 8;

/** A golden receipt: its run's parameters, each turn's state, the text. */
function golden(name) {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'golden/manifest.json'), 'utf8'));
  const run = manifest.runs.find((r) => r.name === name);
  const states = [];
  let text = new Uint8Array(0);
  for (const line of readFileSync(join(REPO_ROOT, 'golden/receipts', `${name}.txt`), 'utf8').split('\n')) {
    const f = line.split(' ');
    if (/^\d+$/.test(f[0]) && f.length === 5) states.push(f[1]);
    if (f[0] === 'text_hex') text = new Uint8Array(Buffer.from(f[1] ?? '', 'hex'));
  }
  return {
    params: { prompt: run.prompt, maxTokens: run.max_tokens, temperatureQ16: run.temperature_q16, seed: BigInt(run.seed) },
    turns: states.length - 1,
    finalSha256: states.at(-1),
    text,
  };
}

let net;
let client;
let programId;
let scratch;

before(async () => {
  programId = (await generateKeyPairSigner()).address;
  net = await startLocalnet(programId);
  console.log(`curta-localnet at ${net.url} ready in ${net.startedIn.toFixed(1)} s`);
  scratch = mkdtempSync(join(tmpdir(), 'curta-js-race-'));
  client = createCurtaClient({
    url: net.url,
    programId,
    payer: await createKeyPairSignerFromBytes(net.payer),
    secret: net.payer,
    core: await loadTestCore(),
    journal: fileJournal(join(scratch, 'journal')),
  });
});

after(async () => {
  await net?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** `curta` with its own keypair and state, for this program. */
const curtaArgs = (args, state = 'curta-state') => ['--url', net.url, '--keypair', join(scratch, 'curta.json'), '--state-dir', join(scratch, state), '--program-id', programId, ...args];
const curtaEnv = () => ({ ...process.env, HOME: join(scratch, 'curta-home'), CURTA_STATE_DIR: '' });

/** `curta ARGS --output json`'s object. */
function curtaJson(args) {
  const out = execFileSync(CURTA_BIN, curtaArgs([...args, '--output', 'json']), { env: curtaEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out.trim());
}

/** `curta ARGS --output json` as a child process (its journal in `state`): its object when it exits 0. */
function curtaSpawn(args, state) {
  return new Promise((resolve, reject) => {
    const child = spawn(CURTA_BIN, curtaArgs([...args, '--output', 'json'], state), { env: curtaEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(String(d)));
    child.stderr.on('data', (d) => err.push(String(d)));
    child.on('error', reject);
    // 'close', not 'exit': a process may exit before its stdout is all read.
    child.on('close', (code, signal) => {
      if (code === 0) resolve(JSON.parse(out.join('').trim()));
      else reject(new Error(`curta ${args.join(' ')} exited (${code ?? signal}):\n${err.join('')}${out.join('')}`));
    });
  });
}

/** The run's turn transactions, oldest first: fee payer, expected turns, error, fee. */
async function turnHistory(address) {
  const out = [];
  for (const l of await history(client.rpc, programId, address)) {
    const turns = l.ixs.map((i) => i.data).filter((d) => d[0] === TURN);
    if (turns.length === 0) continue;
    assert.equal(turns.length, 1, `one turn a transaction (${l.signature})`);
    const expected = getTurnInstructionDataDecoder().decode(turns[0]).expectedTurns;
    assert.equal(expected.__option, 'Some', 'both crankers send expected turn counts');
    out.push({ signature: l.signature, payer: l.payer, expected: Number(expected.value), err: l.err, fee: l.fee });
  }
  return out;
}

/** The model both tests crank, uploaded by the first. */
let artifact;
let model;

const balance = async (address) => (await client.rpc.getBalance(address, { commitment: 'confirmed' }).send()).value;

test('the JS cranker and the Rust curta race on three runs: both finish, every turn lands once, the other’s turns accounted for', async () => {
  artifact = client.core.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'));
  const { config } = await initConfig(client);
  ({ model } = await uploadModel(client, artifact, { config, royalty: 0n }));

  // curta's signer: its own keypair, funded from the faucet.
  const key = curtaJson(['keygen', '-o', join(scratch, 'curta.json')]);
  curtaJson(['airdrop', '10']);
  const rustSigner = key.address;
  assert.ok(typeof rustSigner === 'string' && rustSigner !== client.payer.address, `curta signs as another address (${JSON.stringify(key)})`);

  // Two golden runs opened by the JS client, one (T=0.8, seed 1) by curta.
  const names = ['stories260k-reference', 'stories260k-t08-seed1', 'stories260k-t08-seed2'];
  const g = names.map(golden);
  const jsOpened = await openRun(client, model, g[0].params);
  const jsOpened2 = await openRun(client, model, g[2].params);
  const t = g[1].params.temperatureQ16;
  const rustOpened = curtaJson([
    'run', 'open', '--model', model,
    '--prompt', g[1].params.prompt,
    '--max-tokens', String(g[1].params.maxTokens),
    '--temperature', String(Math.round((t / 65_536) * 1e4) / 1e4),
    '--seed', String(g[1].params.seed),
  ]);
  const runs = [jsOpened.run, rustOpened.run, jsOpened2.run];
  assert.equal(new Set(runs).size, 3);
  const jsSigner = client.payer.address;
  const balancesBefore = [await balance(jsSigner), await balance(rustSigner)];

  // Both crankers at once on every run: `curta run crank RUN` and
  // crankRun; on the first run curta joins a crank under way.
  const JOIN_AT = 3;
  const started = Date.now();
  const rustCrank = (i) => curtaSpawn(['run', 'crank', runs[i], '--window', String(WINDOW)], `curta-state-${i}`);
  /** @type {(value: Promise<any>) => void} */
  let joined = () => {};
  const rustCranks = [new Promise((resolve) => (joined = resolve)), rustCrank(1), rustCrank(2)];
  /** Each crank's failed turns as `onFailed` told them. @type {any[][]} */
  const toldFailed = runs.map(() => []);
  const jsCranks = runs.map((run, i) =>
    crankRun(client, run, {
      artifact,
      window: WINDOW,
      onTurn: (t) => {
        if (i === 0 && t.turn === JOIN_AT) joined(rustCrank(0));
      },
      onFailed: (f) => toldFailed[i].push(f),
    }),
  );
  // Had crankRun finished the run without landing turn 3 itself, curta still cranks it (and finds it complete).
  jsCranks[0].finally(() => joined(rustCrank(0))).catch(() => {});
  const [rust, js] = await Promise.all([Promise.all(rustCranks), Promise.all(jsCranks)]);
  const seconds = (Date.now() - started) / 1000;

  let jsFees = 0n;
  let rustFees = 0n;
  const figures = { js: { landed: 0, failed: 0, others: 0, transactions: 0 }, rust: { landed: 0, failed: 0, others: 0, transactions: 0 } };
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r];
    const want = g[r];
    // The final state: the golden receipt's.
    const account = await fetchRun(client, run);
    assert.equal(account.info.complete, true, `${names[r]} complete`);
    assert.equal(account.info.turns, want.turns, `${names[r]}'s turns`);
    assert.equal(sha256(account.state), want.finalSha256, `${names[r]}'s final state`);
    assert.deepEqual(account.textBytes, want.text, `${names[r]}'s text`);
    const c = js[r];
    assert.equal(c.finalStateSha256, want.finalSha256);
    assert.deepEqual(toldFailed[r], c.failed, `${names[r]}: onFailed told every failed turn, once`);
    // Each crank's text: the run's since it started, the other's turns included.
    const hexText = Buffer.from(want.text).toString('hex');
    const tail = (h, before) => assert.ok(before === 0 ? h === hexText : hexText.endsWith(h), `${names[r]}: a crank's text ${h}, from turn ${before}`);
    tail(Buffer.from(c.text).toString('hex'), c.turnsBefore);
    c.turns.forEach((x) => assert.ok(x.turn >= 1 && x.turn <= want.turns));

    // Every turn landed once, in order; every failure a StaleTurn.
    const landed = { [jsSigner]: 0, [rustSigner]: 0 };
    const failed = { [jsSigner]: 0, [rustSigner]: 0 };
    let done = 0;
    for (const l of await turnHistory(run)) {
      assert.ok(l.payer === jsSigner || l.payer === rustSigner, `a turn by ${l.payer}`);
      if (l.payer === jsSigner) jsFees += l.fee;
      else rustFees += l.fee;
      if (l.err === null) {
        assert.equal(l.expected, done, `${names[r]}: turn ${l.expected + 1} out of order (${l.signature})`);
        done += 1;
        landed[l.payer] += 1;
      } else {
        assert.equal(Number(l.err.InstructionError?.[1]?.Custom), STALE_TURN, `${names[r]}: turn ${l.expected + 1} failed: ${errorJson(l.err)}`);
        failed[l.payer] += 1;
      }
    }
    assert.equal(done, want.turns, `${names[r]}: every turn landed once`);

    // Each cranker's summary: its own turns as the history has them, and
    // the other's accounted for.
    assert.equal(c.turns.length, landed[jsSigner], `${names[r]}: the JS crank's landed turns`);
    assert.equal(c.failed.length, failed[jsSigner], `${names[r]}: the JS crank's failed turns`);
    assert.equal(c.turnsBefore + c.turns.length + c.turnsByOthers, want.turns, `${names[r]}: the JS crank's turns and the others'`);
    const rr = rust[r];
    assert.equal(rr.run, run);
    assert.equal(rr.final_state_sha256, want.finalSha256, 'curta’s final state');
    tail(rr.text_hex, rr.turns_before);
    const rt = { before: rr.turns_before, landed: rr.turns.length, failed: rr.failed.length, others: rr.turns_by_others, transactions: rr.transactions };
    assert.equal(rt.landed, landed[rustSigner], `${names[r]}: curta's landed turns`);
    assert.equal(rt.failed, failed[rustSigner], `${names[r]}: curta's failed turns`);
    assert.equal(rt.before + rt.landed + rt.others, want.turns, `${names[r]}: curta's turns and the others'`);
    // The cost of the race, bounded: at most a window each time a crank
    // found the other (its backoffs, as many as the machine's load makes:
    // a crank that stands still for three reads is taken over), and one
    // more for its own turns landing out of order.
    assert.ok(c.failed.length <= WINDOW * (c.backoffs + 1), `${names[r]}: the JS crank failed ${c.failed.length} turns, backing off ${c.backoffs} times`);
    assert.ok(rt.failed <= WINDOW * (rr.backoffs + 1), `${names[r]}: curta failed ${rt.failed} turns, backing off ${rr.backoffs} times`);

    console.log(
      `${names[r]} (${want.turns} turns): JS ${c.turns.length} landed, ${c.failed.length} failed, ${c.turnsByOthers} by the other` +
        `${c.backedOff ? ', backed off' : ''}; curta ${rt.landed} landed, ${rt.failed} failed, ${rt.others} by the other${rr.backed_off ? ', backed off' : ''}`,
    );
    figures.js.landed += c.turns.length;
    figures.js.failed += c.failed.length;
    figures.js.others += c.turnsByOthers;
    figures.js.transactions += c.transactions;
    figures.rust.landed += rt.landed;
    figures.rust.failed += rt.failed;
    figures.rust.others += rt.others;
    figures.rust.transactions += rt.transactions;
  }

  // Lamports: each signer paid exactly its transactions' fees, as each says.
  const balancesAfter = [await balance(jsSigner), await balance(rustSigner)];
  assert.equal(balancesBefore[0] - balancesAfter[0], jsFees, 'the JS signer paid its turns’ fees and nothing else');
  assert.equal(balancesBefore[1] - balancesAfter[1], rustFees, 'curta’s signer paid its turns’ fees and nothing else');
  assert.equal(js.reduce((a, c) => a + c.fees, 0n), jsFees, 'the JS crank’s fees');
  assert.equal(rust.reduce((a, c) => a + BigInt(c.fees), 0n), rustFees, 'curta’s fees');

  const per = (f) => (f.transactions / Math.max(1, f.landed)).toFixed(2);
  console.log(
    `race: ${runs.length} runs, ${g.reduce((a, x) => a + x.turns, 0)} turns in ${seconds.toFixed(1)} s; ` +
      `JS (window ${WINDOW}): ${figures.js.landed} landed, ${figures.js.failed} failed (StaleTurn), ${figures.js.others} by the other, ` +
      `${figures.js.transactions} transactions (${per(figures.js)} per turn landed), ${jsFees} lamports; ` +
      `curta run crank (window ${WINDOW}): ${figures.rust.landed} landed, ${figures.rust.failed} failed (StaleTurn), ${figures.rust.others} by the other, ` +
      `${figures.rust.transactions} transactions (${per(figures.rust)} per turn landed), ${rustFees} lamports`,
  );
});

test('crankRun with leaveToOthers leaves a run it finds another cranker on, at the cost of one failed turn', async () => {
  assert.ok(model, 'the race above uploaded the model');
  const want = golden('stories260k-reference');
  const opened = await openRun(client, model, { ...want.params, label: 'leave' });
  // curta cranks one turn at a time; crankRun joins once two have landed.
  const rust = curtaSpawn(['run', 'crank', opened.run, '--window', '1'], 'curta-state-leave');
  while ((await fetchRun(client, opened.run)).info.turns < 2) await new Promise((r) => setTimeout(r, 100));
  const c = await crankRun(client, opened.run, { artifact, leaveToOthers: true });
  const rr = await rust;
  const account = await fetchRun(client, opened.run);
  assert.equal(sha256(account.state), want.finalSha256, 'the run ends in its golden state');
  const mine = { landed: 0, failed: 0 };
  for (const l of await turnHistory(opened.run)) {
    if (l.payer !== client.payer.address) continue;
    if (l.err === null) mine.landed += 1;
    else mine.failed += 1;
  }
  assert.equal(c.turns.length, mine.landed, 'the JS crank landed the turns the history gives it');
  assert.equal(c.failed.length, mine.failed, 'and failed the ones it gives it');
  if (c.leftToOthers) {
    // It met curta: one turn of its own failed on it, and curta ended the run.
    assert.equal(c.failed.length, 1, 'meeting another cranker costs one failed turn');
    assert.ok(c.turnsBefore + c.turns.length + c.turnsByOthers < want.turns, 'it stopped before the run ended');
    assert.equal(rr.final_state_sha256, want.finalSha256, 'curta finished the run');
  } else {
    // Its first turn landed before curta's: curta followed it, and it ended the run.
    assert.equal(c.finalStateSha256, want.finalSha256, 'the JS crank finished the run');
    assert.equal(c.turnsBefore + c.turns.length + c.turnsByOthers, want.turns);
  }
  console.log(
    `leaving: the JS crank joined at turn ${c.turnsBefore}, landed ${c.turns.length}, failed ${c.failed.length}, ` +
      `${c.leftToOthers ? 'left the run to curta' : 'finished the run'}; curta landed ${rr.turns.length}, failed ${rr.failed.length}`,
  );
});
