// The JS chain client beside the Rust `curta` on one curta-localnet, at the
// same moment (so under the same load): both upload stories260K (a fresh
// model each) and crank the reference run; and each finds the model the
// other uploaded with the same keypair (the derived keys agree). Not part
// of make test: `node sdk/test-support/compare-rust.js` (CURTA_WASM,
// CURTA_MODELS; target/debug/curta from the host build).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createKeyPairSignerFromBytes, generateKeyPairSigner } from '@solana/kit';

import { closeRun, crankRun, createCurtaClient, initConfig, openRun, uploadModel } from '../src/index.js';
import { REPO_ROOT, core as loadTestCore, modelFile } from './fixtures.js';
import { startLocalnet } from './localnet.js';

const CURTA = process.env.CURTA_BIN ?? join(REPO_ROOT, 'target/debug/curta');
const scratch = mkdtempSync(join(tmpdir(), 'curta-js-compare-'));
const core = await loadTestCore();
const artifact = core.convert(modelFile('stories260K.bin'), modelFile('tok512.bin'));
const artifactPath = join(scratch, 'stories260K.curta');
writeFileSync(artifactPath, artifact);
const programId = (await generateKeyPairSigner()).address;
const net = await startLocalnet(programId);
try {
  const payerPath = join(scratch, 'payer.json');
  writeFileSync(payerPath, JSON.stringify(Array.from(net.payer)));
  const curta = (...args) =>
    JSON.parse(execFileSync(CURTA, ['-u', net.url, '-k', payerPath, '--program-id', programId, '--state-dir', join(scratch, 'state'), '--json', ...args], { encoding: 'utf8' }));
  const client = createCurtaClient({ url: net.url, programId, payer: await createKeyPairSignerFromBytes(net.payer), secret: net.payer, core });
  const { config } = await initConfig(client);
  const rustConfig = curta('config', 'init');
  if (rustConfig.config !== config) throw new Error(`the Rust client's config ${rustConfig.config} is not the JS client's ${config}`);

  let t = Date.now();
  const rust = curta('model', 'upload', artifactPath, '--royalty', '1');
  const rustSeconds = (Date.now() - t) / 1000;
  const js = await uploadModel(client, artifact, { config, royalty: 2n });
  console.log(`upload stories260K: Rust ${rustSeconds.toFixed(1)} s (${JSON.stringify(rust.transactions ?? rust.summary ?? '')} transactions), JS ${js.seconds.toFixed(1)} s (${js.summary.transactions} transactions)`);
  const again = await uploadModel(client, artifact, { config, royalty: 1n });
  if (again.model !== rust.model || !again.already) throw new Error(`the JS client did not find the Rust client's model ${rust.model}`);
  const rustAgain = curta('model', 'upload', artifactPath, '--royalty', '2');
  if (rustAgain.model !== js.model) throw new Error(`the Rust client did not find the JS client's model ${js.model}`);
  console.log(`each client finds the other's model: ${rust.model}, ${js.model}`);

  const params = ['--prompt', 'Once upon a time', '--max-tokens', '12', '--temperature', '0'];
  t = Date.now();
  const gen = curta('generate', '--model', rust.model, ...params);
  console.log(`Rust generate: ${((Date.now() - t) / 1000).toFixed(1)} s in all, ${JSON.stringify({ turns: gen.turns, crank_seconds: gen.crank_seconds ?? gen.seconds })}`);
  const opened = await openRun(client, js.model, { prompt: 'Once upon a time', maxTokens: 12, temperatureQ16: 0 });
  const c = await crankRun(client, opened.run, { artifact });
  await closeRun(client, opened.run);
  console.log(`JS crank: ${c.turns.length} turns in ${c.seconds.toFixed(2)} s, ${c.failed.length} resent, ${new Set(c.turns.map((x) => x.slot)).size} slots`);
} finally {
  await net.stop();
  rmSync(scratch, { recursive: true, force: true });
}
