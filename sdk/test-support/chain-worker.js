// A client process for the chain tests to stop (SIGKILL) in the middle of
// an upload or a crank: `node chain-worker.js JSON`, printing its progress
// one line at a time on stdout ("write DONE/TOTAL", "turn N").

import { readFileSync } from 'node:fs';

import { createKeyPairSignerFromBytes } from '@solana/kit';

import { createCurtaClient, crankRun, loadCore, uploadModel } from '../src/index.js';
import { fileJournal } from '../src/chain/journal-node.js';

const job = JSON.parse(process.argv[2]);
const payerBytes = Uint8Array.from(job.payer);
const client = createCurtaClient({
  url: job.url,
  programId: job.programId,
  payer: await createKeyPairSignerFromBytes(payerBytes),
  secret: payerBytes,
  core: await loadCore(job.wasm),
  journal: fileJournal(job.journalDir),
});
if (job.action === 'upload') {
  await uploadModel(client, new Uint8Array(readFileSync(job.artifactPath)), {
    config: job.config,
    royalty: BigInt(job.royalty),
    inFlight: job.inFlight,
    onProgress: (p) => console.log(`${p.stage} ${p.done}/${p.total}`),
  });
} else if (job.action === 'crank') {
  await crankRun(client, job.run, { window: job.window, onTurn: (t) => console.log(`turn ${t.turn}`) });
} else {
  throw new Error(`unknown job ${job.action}`);
}
console.log('done');
