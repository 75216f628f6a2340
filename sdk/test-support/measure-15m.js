// Measures the JS chain client on the stories15M shape (synthetic weights,
// seed 1, llama2's tokenizer: the harness's stories15M-synthetic) on
// curta-localnet: the upload's time and transactions, then the golden
// reference run's crank (530 turns), every turn's state against the
// golden receipt. Not a test of make test: `node sdk/test-support/measure-15m.js`
// (CURTA_CLI, CURTA_WASM, CURTA_MODELS as make test-js-chain sets them).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createKeyPairSignerFromBytes, generateKeyPairSigner } from '@solana/kit';

import { createCurtaClient, crankRun, initConfig, openRun, uploadModel } from '../src/index.js';
import { CLI_PATH, REPO_ROOT, core as loadTestCore, modelFile, sha256 } from './fixtures.js';
import { startLocalnet } from './localnet.js';

const scratch = mkdtempSync(join(tmpdir(), 'curta-js-15m-'));
const checkpoint = join(scratch, 'stories15M-synthetic.bin');
execFileSync(CLI_PATH, ['synthesize', '--shape', 'stories15M', '--seed', '1', '-o', checkpoint]);
const core = await loadTestCore();
const artifact = core.convert(new Uint8Array(readFileSync(checkpoint)), modelFile('tokenizer.bin'));
const programId = (await generateKeyPairSigner()).address;
const net = await startLocalnet(programId);
try {
  const client = createCurtaClient({ url: net.url, programId, payer: await createKeyPairSignerFromBytes(net.payer), secret: net.payer, core });
  const { config } = await initConfig(client);
  const up = await uploadModel(client, artifact, { config });
  console.log(`upload: the stories15M shape (${artifact.length} bytes) in ${up.seconds.toFixed(1)} s, ${up.summary.transactions} transactions, ${up.summary.fees} lamports`);
  const golden = readFileSync(join(REPO_ROOT, 'golden/receipts/stories15m-synthetic-reference.txt'), 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => /^\d+$/.test(f[0]) && f.length === 5);
  const { run } = await openRun(client, up.model, { prompt: 'Once upon a time', maxTokens: 8, temperatureQ16: 0, seed: 0n });
  const c = await crankRun(client, run, { artifact });
  const bad = c.turns.filter((t) => t.stateSha256 !== golden[t.turn][1]);
  if (bad.length > 0 || c.finalStateSha256 !== golden.at(-1)[1]) throw new Error(`turn ${bad[0]?.turn} differs from the golden receipt`);
  console.log(
    `crank: ${c.turns.length} turns in ${c.seconds.toFixed(1)} s, ${c.failed.length} resent, ${new Set(c.turns.map((t) => t.slot)).size} slots, ` +
      `every state the golden receipt's (final ${c.finalStateSha256.slice(0, 16)}..., ${sha256(artifact).slice(0, 16)}...)`,
  );
} finally {
  await net.stop();
  rmSync(scratch, { recursive: true, force: true });
}
