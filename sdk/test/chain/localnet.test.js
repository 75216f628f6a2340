// The chain client against curta-localnet: upload stories260K, the golden
// reference and T=0.8 runs with every turn's state equal to the golden
// receipt's, a client stopped (SIGKILL) mid-upload and mid-crank and run
// again with nothing paid twice (read from the validator's history, as
// harness/tests/e2e.rs does), bad input refused in words; stories260K
// uploaded from its checkpoint with the measured charge table and its
// golden run, then a run under a lowered config allowance; a model whose
// embedding spans two weight accounts, converted in the module and run
// to the native CLI's final state. Prints the upload's time and
// transactions and the reference run's crank time.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createKeyPairSignerFromBytes, createKeyPairSignerFromPrivateKeyBytes, generateKeyPairSigner } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';

import {
  closeRun,
  crankRun,
  createCurtaClient,
  fetchModel,
  feesNaming,
  fetchRun,
  followRun,
  fundSessionKey,
  initConfig,
  modelSigner,
  openRun,
  quoteRun,
  quoteUpload,
  replayFromParams,
  runSigner,
  setAllowance,
  uploadModel,
  runWithSessionKey,
  sendAll,
} from '../../src/index.js';
import { fileJournal } from '../../src/chain/journal-node.js';
import { getTurnInstructionDataDecoder, getWriteInstructionDataDecoder } from '../../src/generated-js/index.js';
import {
  REPO_ROOT,
  WASM_PATH,
  cli,
  core as loadTestCore,
  modelFile,
  modelsDir,
  nativeArtifact,
  nativeRun,
  scratchPath,
  sha256,
} from '../../test-support/fixtures.js';
import { history as chainHistory, errorJson } from '../../test-support/history.js';
import { startLocalnet } from '../../test-support/localnet.js';

const WORKER = fileURLToPath(new URL('../../test-support/chain-worker.js', import.meta.url));
const WRITE = 5;
const TURN = 11;
const STALE_TURN = 21;

/** A golden receipt with each turn's planner charge. */
function golden(name) {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'golden/manifest.json'), 'utf8'));
  const run = manifest.runs.find((r) => r.name === name);
  const turns = [];
  let text = new Uint8Array(0);
  for (const line of readFileSync(join(REPO_ROOT, 'golden/receipts', `${name}.txt`), 'utf8').split('\n')) {
    const f = line.split(' ');
    if (/^\d+$/.test(f[0]) && f.length === 5) turns.push({ stateSha256: f[1], generated: Number(f[2]), plannerCu: Number(f[3]) });
    if (f[0] === 'text_hex') text = new Uint8Array(Buffer.from(f[1] ?? '', 'hex'));
  }
  return {
    params: { prompt: run.prompt, maxTokens: run.max_tokens, temperatureQ16: run.temperature_q16, seed: BigInt(run.seed) },
    turns,
    text,
  };
}

let net;
let client;
let core;
let payerBytes;
let programId;
let artifact;
let artifactPath;
let config;
let journalDir;
let scratch;

before(async () => {
  programId = (await generateKeyPairSigner()).address;
  net = await startLocalnet(programId);
  console.log(`curta-localnet at ${net.url} ready in ${net.startedIn.toFixed(1)} s`);
  payerBytes = net.payer;
  core = await loadTestCore();
  scratch = mkdtempSync(join(tmpdir(), 'curta-js-chain-'));
  journalDir = join(scratch, 'journal');
  client = createCurtaClient({
    url: net.url,
    programId,
    payer: await createKeyPairSignerFromBytes(payerBytes),
    secret: payerBytes,
    core,
    journal: fileJournal(journalDir),
  });
  // stories260K converted inside the module.
  artifact = core.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'));
  artifactPath = join(scratch, 'stories260K.curta');
  writeFileSync(artifactPath, artifact);
  const c = await initConfig(client);
  assert.equal(c.createdNow, true);
  assert.equal(c.allowance, 1_350_000);
  assert.equal(c.admin, client.payer.address);
  config = c.config;
  // Derived: asking again finds it.
  const again = await initConfig(client);
  assert.deepEqual([again.config, again.createdNow], [config, false]);
});

after(async () => {
  await net?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Every transaction naming `address`, oldest first, with its message decoded. */
const history = (address) => chainHistory(client.rpc, programId, address);

/** Runs the worker until `done(line)`, then kills it (SIGKILL). */
function runAndKill(job, done) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const err = [];
    child.stderr.on('data', (d) => err.push(String(d)));
    let killed = false;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!killed && done(line)) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => {
      if (killed && signal === 'SIGKILL') resolve();
      else reject(new Error(`the worker exited (${code ?? signal}) before it was stopped:\n${err.join('')}`));
    });
  });
}

const workerJob = (extra) => ({ url: net.url, programId, payer: Array.from(payerBytes), journalDir, wasm: WASM_PATH, ...extra });

describe('the JS chain client on curta-localnet', () => {
  let model;

  test('uploads stories260K: every section bound, written and sealed, the model sealed; a second upload sends nothing', async () => {
    const stages = new Set();
    const quoted = await quoteUpload(client, artifact, { config });
    const up = await uploadModel(client, artifact, { config, royalty: 0n, onProgress: (p) => stages.add(p.stage) });
    model = up.model;
    assert.deepEqual([...stages], ['model', 'bind', 'write', 'seal', 'done']);
    const m = await fetchModel(client, model);
    assert.equal(m.statusName, 'sealed');
    assert.equal(m.owner, client.payer.address);
    assert.equal(m.config, config);
    assert.equal(m.sectionCount, 3);
    assert.deepEqual(m.sections.map((s) => Number(s.length)), [60_440, 238_560, 34_816]);
    // The model's key is the Rust client's derivation for this keypair.
    const derived = await modelSigner(core, payerBytes, { programId, config, artifactSha256: new Uint8Array(Buffer.from(sha256(artifact), 'hex')), royalty: 0n });
    assert.equal(derived.address, model);
    // Nonzero chunks only, 986 bytes each: the creation, three bindings, the writes, three seals and the model's seal.
    const writes = up.chunksWritten;
    assert.equal(up.summary.transactions, 1 + 3 + writes + 3 + 1);
    assert.equal(up.summary.fees, 5000n * BigInt(2 + 2 * 3 + writes + 3 + 1));
    // The quote: the rent the accounts hold, exactly; every chunk's write counted, so the fees at most.
    const held = await Promise.all([model, ...m.sections.map((s) => s.weight)].map((a) => client.rpc.getBalance(a, { commitment: 'confirmed' }).send()));
    assert.equal(quoted.rent, held.reduce((sum, b) => sum + b.value, 0n));
    assert.deepEqual([quoted.accounts, quoted.configRent, quoted.configFees], [4, 0n, 0n]);
    assert.ok(quoted.writes >= writes, `${quoted.writes} writes quoted, ${writes} written`);
    assert.equal(quoted.transactions, 1 + 3 + quoted.writes + 3 + 1);
    assert.equal(quoted.fees, 5000n * BigInt(2 + 2 * 3 + quoted.writes + 3 + 1));
    console.log(
      `upload: stories260K (${artifact.length} bytes) in ${up.seconds.toFixed(2)} s, ${up.summary.transactions} transactions ` +
        `(${writes} writes of ${up.bytesWritten} bytes), ${up.summary.fees} lamports in fees`,
    );
    const again = await uploadModel(client, artifact, { config, royalty: 0n });
    assert.deepEqual([again.model, again.already, again.summary.transactions], [model, true, 0]);
  });

  for (const name of ['stories260k-reference', 'stories260k-t08-seed1']) {
    test(`${name}: quoted, opened, cranked with every turn's state the golden receipt's, followed, closed`, async () => {
      const g = golden(name);
      const q = await quoteRun(client, model, g.params);
      assert.equal(q.turns, g.turns.length - 1);
      assert.equal(q.tokens, g.turns.at(-1).generated);
      assert.deepEqual(q.text, g.text);
      assert.equal(q.royalty, 0n);
      assert.equal(q.transactions, 1 + q.turns + 1);
      const opened = await openRun(client, model, g.params);
      assert.equal(opened.openedNow, true);
      assert.equal(opened.accountLength, q.accountLength);
      assert.equal(opened.deposit, q.rent);
      const state0 = await fetchRun(client, opened.run);
      assert.equal(sha256(state0.state), g.turns[0].stateSha256, 'the state open_run wrote is init_state’s');
      // Opening again finds it open.
      assert.equal((await openRun(client, model, g.params)).openedNow, false);

      const seen = [];
      const c = await crankRun(client, opened.run, { artifact, onTurn: (t) => seen.push(t) });
      assert.equal(c.turnsBefore, 0);
      assert.equal(c.turns.length, g.turns.length - 1);
      c.turns.forEach((t, i) => {
        assert.equal(t.turn, i + 1);
        assert.equal(t.stateSha256, g.turns[i + 1].stateSha256, `turn ${i + 1}'s state`);
        assert.equal(t.generated, g.turns[i + 1].generated, `turn ${i + 1}'s tokens`);
        assert.equal(t.charged, g.turns[i + 1].plannerCu, `turn ${i + 1}'s planner charge`);
        assert.ok(t.programCu > 0 && t.programCu <= t.cuLimit);
      });
      assert.deepEqual(seen.map((t) => t.turn), c.turns.map((t) => t.turn));
      assert.equal(c.finalStateSha256, g.turns.at(-1).stateSha256);
      assert.deepEqual(c.text, g.text);
      // Without reorderings, the quote's fees for the turns (less the opening's two signatures and the closing's one).
      if (c.failed.length === 0) assert.equal(c.fees, q.fees - 3n * 5000n);
      const run = await fetchRun(client, opened.run);
      assert.equal(run.info.complete, true);
      assert.equal(sha256(run.state), g.turns.at(-1).stateSha256);
      assert.deepEqual(run.textBytes, g.text);
      if (name === 'stories260k-reference') {
        assert.equal(run.text, ', there was a little girl named Lily. She');
        assert.equal(c.turns.length, 20);
      }
      console.log(
        `crank: ${name}, ${c.turns.length} turns in ${c.seconds.toFixed(2)} s, ${c.failed.length} resent, ` +
          `${new Set(c.turns.map((t) => t.slot)).size} slots, ${c.fees} lamports`,
      );

      // The receipts again, from the chain alone.
      const followed = [];
      for await (const r of followRun(client, opened.run)) followed.push(r);
      assert.deepEqual(followed.map((r) => r.turns), c.turns.map((t) => t.turn));
      assert.deepEqual(followed.flatMap((r) => r.tokens), c.turns.flatMap((t) => t.tokens));
      // What a reloaded page shows of the turns it did not see land: each one's fee and compute units.
      assert.deepEqual(followed.map((r) => [r.payer, r.fee, r.computeUnits]), c.turns.map((t) => [client.payer.address, t.fee, t.consumedCu]));

      const closed = await closeRun(client, opened.run);
      assert.equal(closed.recovered, q.rent);
      assert.equal(await client.rpc.getAccountInfo(opened.run, { encoding: 'base64' }).send().then((r) => r.value), null);
    });
  }

  test('a session key one wallet approval funds runs the reference run to its end and sends back all but the fees (fundSessionKey, runWithSessionKey)', async () => {
    const g = golden('stories260k-reference');
    const wallet = client.payer;
    const seed = crypto.getRandomValues(new Uint8Array(32));
    const key = await createKeyPairSignerFromPrivateKeyBytes(seed);
    const keyClient = createCurtaClient({ rpc: client.rpc, programId, payer: key, secret: seed, core, journal: fileJournal(journalDir) });
    const balance = async (a) => (await client.rpc.getBalance(a, { commitment: 'confirmed' }).send()).value;
    const walletBefore = await balance(wallet.address);
    const q = await quoteRun(keyClient, model, g.params);
    const asked = [];
    const funded = await fundSessionKey(keyClient, wallet, model, g.params, q, { artifact, onApproval: (a) => asked.push(a) });
    assert.equal(funded.change.phase, 'funded');
    assert.deepEqual(asked, [funded.amount]);
    assert.equal(await balance(key.address), funded.amount);

    const record = { model, owner: wallet.address, params: g.params, crankFee: 0n, ...funded.change };
    const saved = [];
    const stages = [];
    const turns = [];
    const done = await runWithSessionKey(keyClient, record, {
      artifact,
      royalty: 0n,
      save: async (change) => {
        saved.push(change);
        Object.assign(record, change);
      },
      onStage: (stage) => stages.push(stage),
      onTurn: (t) => turns.push(t),
    });
    assert.deepEqual(stages, ['opening', 'cranking', 'closing']);
    assert.deepEqual(saved.map((c) => c.phase), ['running', undefined, 'done']);
    assert.equal(record.runAddress, done.run);
    assert.equal(record.allowance, 1_350_000);
    assert.deepEqual([done.turns, done.stopped, done.crankersPaid], [g.turns.length - 1, false, 0n]);
    turns.forEach((t, i) => {
      assert.deepEqual([t.turn, t.by], [i + 1, 'key']);
      assert.equal(t.stateSha256, g.turns[i + 1].stateSha256, `turn ${i + 1}'s state`);
    });
    assert.deepEqual(Buffer.concat(turns.map((t) => t.text)), Buffer.from(g.text));
    // The key ends empty and the run closed; the wallet paid the fees
    // alone, every one of them a transaction naming the key.
    assert.equal(await balance(key.address), 0n);
    assert.equal(await client.rpc.getAccountInfo(done.run, { encoding: 'base64' }).send().then((r) => r.value), null);
    assert.equal(walletBefore - (await balance(wallet.address)), done.fees);
    assert.equal(await feesNaming(keyClient, key.address), done.fees);
    assert.equal(done.sent, funded.amount - (done.fees - funded.change.fees));
    console.log(`session key: ${done.turns} turns, ${done.fees} lamports in fees, ${done.sent} of ${funded.amount} sent back`);
  });

  test('stopped mid-upload and mid-crank (SIGKILL), run again: each chunk written once, each turn done once', async () => {
    const royalty = 7n;
    const m = (await modelSigner(core, payerBytes, { programId, config, artifactSha256: new Uint8Array(Buffer.from(sha256(artifact), 'hex')), royalty })).address;
    await runAndKill(workerJob({ action: 'upload', artifactPath, config, royalty: String(royalty), inFlight: 32 }), (line) => {
      const w = /^write (\d+)\/(\d+)$/.exec(line);
      return w !== null && 3 * Number(w[1]) >= Number(w[2]);
    });
    assert.equal((await fetchModel(client, m)).statusName, 'writing', 'stopped before sealing');
    // A fresh client (a new process would be one): it settles what the stopped one left, then resumes.
    const resumed = createCurtaClient({ url: net.url, programId, payer: client.payer, secret: payerBytes, core, journal: fileJournal(journalDir) });
    const up = await uploadModel(resumed, artifact, { config, royalty });
    assert.equal(up.model, m);
    assert.ok(up.bytesWritten < artifact.length && up.bytesWritten > 0, `resumed: wrote ${up.bytesWritten} bytes`);
    const info = await fetchModel(client, m);
    assert.equal(info.statusName, 'sealed');

    const offsets = info.sections.map(() => new Map());
    let signatures = 0;
    let fees = 0n;
    for (const l of await history(m)) {
      assert.equal(l.err, null, `a failed transaction ${l.signature}`);
      for (const i of l.ixs) {
        if (i.data[0] !== WRITE) continue;
        const s = info.sections.findIndex((x) => x.weight === i.accounts[1]);
        assert.ok(s >= 0, 'a write to one of the model’s sections');
        const offset = Number(getWriteInstructionDataDecoder().decode(i.data).offset);
        offsets[s].set(offset, (offsets[s].get(offset) ?? 0) + 1);
      }
      signatures += l.signatures;
      fees += l.fee;
    }
    let writes = 0;
    info.sections.forEach((s, i) => {
      const want = Array.from({ length: Math.ceil(Number(s.length) / 986) }, (_, k) => k * 986);
      // Zero chunks are never written; every other one exactly once.
      const got = [...offsets[i].keys()].sort((a, b) => a - b);
      assert.ok(got.every((o) => want.includes(o)), `section ${i}: a write at an offset no chunk starts at`);
      assert.ok([...offsets[i].values()].every((n) => n === 1), `section ${i}: a chunk written twice`);
      writes += got.length;
    });
    assert.equal(fees, 5000n * BigInt(signatures), 'every fee is a signature’s');
    assert.equal(signatures, 2 * 4 + writes + 3 + 1, 'transactions beyond an uninterrupted upload’s');
    console.log(`upload, stopped and resumed: ${writes} writes, ${signatures} signatures, ${fees} lamports`);

    // Stopped with 6 of the reference run's 20 turns landed, a window of 4.
    const g = golden('stories260k-reference');
    const params = { ...g.params, label: 'resume' };
    const opened = await openRun(resumed, m, params);
    assert.equal(opened.run, (await runSigner(core, payerBytes, { model: m, ...g.params, label: 'resume' })).address);
    await runAndKill(workerJob({ action: 'crank', run: opened.run, window: 4 }), (line) => {
      const t = /^turn (\d+)$/.exec(line);
      return t !== null && Number(t[1]) >= 6;
    });
    const again = createCurtaClient({ url: net.url, programId, payer: client.payer, secret: payerBytes, core, journal: fileJournal(journalDir) });
    const c = await crankRun(again, opened.run, { window: 4 });
    assert.ok(c.turnsBefore >= 6 && c.turnsBefore < 20, `resumed at turn ${c.turnsBefore}`);
    c.turns.forEach((t) => assert.equal(t.stateSha256, g.turns[t.turn].stateSha256, `turn ${t.turn}'s state`));
    assert.equal(c.finalStateSha256, g.turns.at(-1).stateSha256);
    const run = await fetchRun(again, opened.run);
    assert.deepEqual(run.textBytes, g.text);
    assert.equal(run.paid, royalty * BigInt(params.maxTokens));

    let done = 0;
    let stale = 0;
    for (const l of await history(opened.run)) {
      for (const i of l.ixs) {
        if (i.data[0] !== TURN) continue;
        const expected = getTurnInstructionDataDecoder().decode(i.data).expectedTurns;
        assert.equal(expected.__option, 'Some', 'the client sends expected turn counts');
        const e = Number(expected.value);
        if (l.err === null) {
          assert.equal(e, done, `turn ${e + 1} out of order`);
          done += 1;
        } else {
          assert.equal(Number(l.err.InstructionError?.[1]?.Custom), STALE_TURN, `turn ${e + 1} failed: ${errorJson(l.err)}`);
          assert.ok(e > done, `turn ${e + 1} was paid for again after it was done (${l.signature})`);
          stale += 1;
        }
      }
    }
    assert.equal(done, 20);
    console.log(`crank, stopped and resumed at turn ${c.turnsBefore}: ${done} turns, ${stale} stale`);
    await closeRun(again, opened.run);
  });

  test('bad input is refused in words', async () => {
    const g = golden('stories260k-reference');
    await assert.rejects(openRun(client, model, { ...g.params, prompt: 'a'.repeat(1025) }), /the prompt is 1025 bytes: at most 1024/);
    await assert.rejects(openRun(client, model, { ...g.params, maxTokens: 513 }), /max tokens 513 is out of range: 1 to the model's context, 512/);
    await assert.rejects(openRun(client, model, { ...g.params, prompt: 'a\0b' }), /the prompt has a zero byte at offset 1: prompts cannot hold one/);
    // (The prompt's tokens and max tokens past the context are no longer
    // refused: such a run completes when the context is full.)
    await assert.rejects(fetchModel(client, config), /is not a curta model account \(tag "CURTACF1"; a model starts with CURTAMD1\)/);
    await assert.rejects(fetchModel(client, client.payer.address), /is not a curta model: it belongs to 11111111111111111111111111111111/);
    const nobody = (await generateKeyPairSigner()).address;
    await assert.rejects(fetchModel(client, nobody), new RegExp(`there is no model account at ${nobody}`));
    // A batch stops at the job that lands and fails, in words naming it.
    const { value: balance } = await client.rpc.getBalance(client.payer.address).send();
    const tooMuch = getTransferSolInstruction({ source: client.payer, destination: nobody, amount: balance * 2n });
    const landed = [];
    await assert.rejects(
      sendAll(client, [{ what: 'paying more than the payer holds', instructions: [tooMuch], units: 1 }], { onLanded: (j) => landed.push(j) }),
      (e) => e.name === 'CurtaTransactionError' && /^paying more than the payer holds failed: .+ \(transaction \w+\)/.test(e.message) && e.signature !== undefined,
    );
    assert.deepEqual(landed, []);
  });

  test("stories260K uploaded from its checkpoint with charges 'measured': the measured reference run in 16 turns, the golden receipt's states; under a lowered allowance, the module's turns", async () => {
    const g = golden('stories260k-measured-reference');
    const bin = modelFile('stories260K.bin');
    const tok = modelFile('tok512.bin');
    await assert.rejects(uploadModel(client, bin, { config, tokenizer: tok, charges: 'fast' }), /charges "fast" is not a charge table: the tables are "specification" and "measured"/);
    await assert.rejects(uploadModel(client, artifact, { config, charges: 'measured' }), /the artifact is planned with the specification charge table, not the measured one/);
    const up = await uploadModel(client, bin, { config, tokenizer: tok, charges: 'measured', royalty: 0n });
    assert.equal(up.charges, 'measured');
    // golden/receipts/stories260k-measured-reference.txt's model line: the native converter's bytes.
    assert.equal(sha256(up.artifact), '8d9cf507ca0d0481f47a22ceb33370c9b5c00020f2130db82f8316e52e104c20');
    assert.notEqual(up.model, model);
    const m = await fetchModel(client, up.model);
    assert.deepEqual([m.statusName, m.flags, m.charges], ['sealed', 3, 'measured']);
    console.log(`upload: stories260K, measured table, in ${up.seconds.toFixed(2)} s, ${up.summary.transactions} transactions`);

    const q = await quoteRun(client, up.model, g.params, { artifact: up.artifact });
    assert.deepEqual([q.turns, q.turnsAtMost, q.charges, q.allowance], [16, 16, 'measured', 1_350_000]);
    assert.deepEqual(q.cuPerTurn.slice(1), g.turns.slice(2).map((t) => t.plannerCu));
    const opened = await openRun(client, up.model, g.params);
    // No artifact: the weights, section zero's table among them, are read from the chain.
    const c = await crankRun(client, opened.run);
    assert.equal(c.charges, 'measured');
    assert.equal(c.turns.length, 16);
    c.turns.forEach((t, i) => {
      assert.equal(t.stateSha256, g.turns[i + 1].stateSha256, `turn ${i + 1}'s state`);
      assert.equal(t.charged, g.turns[i + 1].plannerCu, `turn ${i + 1}'s planner charge`);
    });
    assert.equal(c.finalStateSha256, g.turns.at(-1).stateSha256);
    const run = await fetchRun(client, opened.run);
    assert.equal(sha256(run.state), g.turns.at(-1).stateSha256);
    assert.equal(run.text, ', there was a little girl named Lily. She');
    console.log(`crank: stories260k-measured-reference, ${c.turns.length} turns in ${c.seconds.toFixed(2)} s, ${c.failed.length} resent`);
    await closeRun(client, opened.run);

    // The config's allowance lowered: a run opened now records it, the
    // program plans every turn of that run under it, and the module's
    // replay must have planned the same (every receipt and the final state
    // are checked against it), even once the config's is raised again.
    const ALLOWANCE = 700_000;
    await assert.rejects(setAllowance(client, config, 22_095), /allowance 22095 is out of range: 22,096 to 1,350,000 compute units/);
    assert.deepEqual(await setAllowance(client, config, ALLOWANCE), { config, allowance: ALLOWANCE, changed: true });
    try {
      const params = { ...g.params, label: 'allowance' };
      const lowered = await quoteRun(client, up.model, params, { artifact: up.artifact });
      const replay = await replayFromParams(core, up.artifact, g.params.prompt, { ...g.params, allowance: ALLOWANCE });
      assert.equal(lowered.allowance, ALLOWANCE);
      assert.equal(lowered.turns, replay.steps.length);
      assert.ok(lowered.turns > 16, `${lowered.turns} turns under ${ALLOWANCE} units`);
      const o = await openRun(client, up.model, params);
      assert.equal((await fetchRun(client, o.run)).allowance, ALLOWANCE);
      await setAllowance(client, config, 1_350_000);
      const l = await crankRun(client, o.run, { artifact: up.artifact });
      assert.equal(l.allowance, ALLOWANCE);
      assert.equal(l.turns.length, lowered.turns);
      l.turns.forEach((t, i) => {
        assert.equal(t.stateSha256, replay.steps[i].stateSha256, `turn ${i + 1}'s state`);
        assert.ok(t.charged <= ALLOWANCE && t.estimatedCu <= ALLOWANCE, `turn ${i + 1} charged ${t.charged}`);
      });
      // The same text, in more turns; the same tokens make the same final cache.
      const after = await fetchRun(client, o.run);
      assert.equal(after.text, ', there was a little girl named Lily. She');
      assert.equal(l.finalStateSha256, replay.steps.at(-1).stateSha256);
      console.log(`crank: measured reference under ${ALLOWANCE} units, ${l.turns.length} turns in ${l.seconds.toFixed(2)} s, ${l.failed.length} resent`);
      await closeRun(client, o.run);
    } finally {
      await setAllowance(client, config, 1_350_000);
    }
  });

  test('a model whose embedding spans two weight accounts: converted in the module, uploaded, run; every turn the replay\'s, the final state the native CLI\'s', async () => {
    // The smallest shape whose embedding splits with llama2's tokenizer
    // (docs/format.md, "Sections"): 31,580 rows in one section, 420 in the
    // next; "girls bid 漢" embeds token 31,652 from the second.
    const bin = scratchPath('split.bin');
    cli(['synthesize', '--config', '328,32,1,4,4,32000,32', '--seed', '1', '-o', bin]);
    const tok = modelFile('tokenizer.bin');
    const up = await uploadModel(client, new Uint8Array(readFileSync(bin)), { config, tokenizer: tok, royalty: 0n });
    assert.equal(sha256(up.artifact), sha256(nativeArtifact(bin, join(modelsDir(), 'tokenizer.bin'))));
    const m = await fetchModel(client, up.model);
    assert.equal(m.sections.length, 4);
    console.log(`upload: the split shape, ${up.artifact.length} bytes in ${up.seconds.toFixed(1)} s, ${up.summary.transactions} transactions`);
    const params = { prompt: 'girls bid 漢', maxTokens: 3, temperatureQ16: 0, seed: 0n };
    const opened = await openRun(client, up.model, params);
    const c = await crankRun(client, opened.run, { artifact: up.artifact });
    const native = nativeRun(up.artifact, params);
    assert.equal(c.turns.length, native.turns);
    assert.equal(c.finalStateSha256, native.state_sha256);
    assert.ok(native.prompt_tokens.includes(31_652));
    await closeRun(client, opened.run);
  });
});
