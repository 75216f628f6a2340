// The chain client's pieces that need no cluster: derived keys (pinned to
// the Rust client's), receipts from log lines, the chunks an upload still
// writes, errors in words, the opening's packing and its steps.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import test from 'node:test';

import { createKeyPairSignerFromPrivateKeyBytes, generateKeyPairSigner, getAddressDecoder } from '@solana/kit';

import {
  createCurtaClient,
  configSigner,
  describeTransactionError,
  transactionError,
  fits,
  loadCore,
  modelSigner,
  openTransactions,
  programErrorName,
  receiptDifferences,
  receiptsFromLogs,
  runSigner,
  transactionSize,
  weightSigner,
} from '../../src/index.js';
import { getModelEncoder, getRunEncoder, getTurnReceiptEncoder } from '../../src/generated-js/index.js';
import * as ix from '../../src/chain/instructions.js';

const core = await loadCore(readFileSync(process.env.CURTA_WASM ?? new URL('../../../target/wasm/curta_core.wasm', import.meta.url)));
const addr = (b) => getAddressDecoder().decode(new Uint8Array(32).fill(b));

test('derived keys are the Rust client’s (client/src/keys.rs pins the same addresses)', async () => {
  const secret = new Uint8Array(32).fill(7);
  const program = addr(1);
  assert.equal((await configSigner(core, secret, program)).address, 'EgHV6ymgo3Paj5LJMZhekJqDuLqu3xncZpG3kjnd9YYG');
  // A 64-byte keypair derives as its 32-byte seed.
  const pair = new Uint8Array(64).fill(7);
  assert.equal((await configSigner(core, pair, program)).address, 'EgHV6ymgo3Paj5LJMZhekJqDuLqu3xncZpG3kjnd9YYG');
  const cfg = (await configSigner(core, secret, program)).address;
  const m = (await modelSigner(core, secret, { programId: program, config: cfg, artifactSha256: new Uint8Array(32).fill(3), royalty: 0n })).address;
  assert.notEqual(m, (await modelSigner(core, secret, { programId: program, config: cfg, artifactSha256: new Uint8Array(32).fill(3), royalty: 1n })).address);
  assert.notEqual((await weightSigner(core, secret, m, 0)).address, (await weightSigner(core, secret, m, 1)).address);
  const r = { model: m, prompt: 'Once upon a time', maxTokens: 12, temperatureQ16: 0, seed: 0n };
  assert.equal(m, 'gaYbjMFREZXYhka5wvdm7gApRtumtgwrQbhrCS8Ynwa');
  assert.equal((await weightSigner(core, secret, m, 1)).address, 'FoZECoLw1rLMfj1nHy953C6toHqSNBxzXfMhVnzqxPVG');
  assert.equal((await runSigner(core, secret, r)).address, 'FL4jpgZ35RabMLcfDgMymaDkELRzsKFTnpmbg89CTUD6');
  assert.equal((await runSigner(core, secret, r)).address, (await runSigner(core, secret, r)).address);
  assert.notEqual((await runSigner(core, secret, r)).address, (await runSigner(core, secret, { ...r, label: '2' })).address);
  await assert.rejects(configSigner(core, new Uint8Array(31), program), /a derivation secret is 32 bytes \(or a 64-byte keypair\), not 31/);
});


test('a receipt is read from the logs (Curta’s own lines only) and checked field by field', () => {
  const run = addr(1);
  const model = addr(2);
  const fixed = new Uint8Array(
    getTurnReceiptEncoder().encode({ run, model, turns: 7n, paid: 1000n, generated: 1, generatedThisTurn: 1, charged: 1_349_878, phase: 3, textLen: 1, crankPaid: 2500n }),
  );
  assert.equal(fixed.length, 116);
  const b64 = (b) => Buffer.from(b).toString('base64');
  const tokens = new Uint8Array(new Uint32Array([432]).buffer);
  const data = `Program data: ${b64(fixed)} ${b64(tokens)} ${b64(new TextEncoder().encode(','))}`;
  const program = addr(9);
  const other = addr(8);
  const logs = [
    `Program ${other} invoke [1]`,
    data, // another program's line is no receipt
    `Program ${other} success`,
    `Program ${program} invoke [1]`,
    'Program log: hello',
    data,
    'Program data: AAAA',
    'Program data: !!',
    `Program ${program} success`,
  ];
  const [r, ...rest] = receiptsFromLogs(core, program, logs);
  assert.equal(rest.length, 0);
  assert.deepEqual([r.run, r.model, r.turns, r.paid, r.tokens, r.charged, r.phase], [run, model, 7, 1000n, [432], 1_349_878, 3]);
  const step = {
    turnsBefore: 6,
    sections: [1],
    estimatedCu: 1_349_878,
    boundCu: 1_043_787,
    charged: 1_349_878,
    generated: 1,
    generatedThisTurn: 1,
    phase: 3,
    textLength: 1,
    tokens: [432],
    text: new TextEncoder().encode(','),
    stateSha256: '',
  };
  assert.deepEqual(receiptDifferences(core, r, step, { run, model, royalty: 1000n, crankFee: 5000n, crankDeposit: 32_500n }), []);
  // The crank's and the CLI's words (core/src/client/receipt.rs); the
  // charge is the replay's exactly.
  const wrong = receiptDifferences(core, r, { ...step, turnsBefore: 7, tokens: [433], charged: 1_000_000 }, { run, model, royalty: 1000n, crankFee: 5000n, crankDeposit: 32_500n });
  assert.deepEqual(
    wrong.map(({ field, receipt, replay }) => ({ field, receipt, replay })),
    [
      { field: 'turns', receipt: '7', replay: '8' },
      // A turn later, the deposit is spent: the replay pays nothing.
      { field: 'crank paid', receipt: '2500', replay: '0' },
      { field: 'charged', receipt: '1349878', replay: '1000000' },
      { field: 'tokens', receipt: '[432]', replay: '[433]' },
    ],
  );
  assert.equal(wrong[0].words, 'turns: the receipt has 7, the replay 8');
});

test('errors are named by the program that raised them', () => {
  const program = addr(9);
  assert.equal(programErrorName(21), 'StaleTurn');
  assert.equal(programErrorName(263), 'CoreError(ContextExceeded)');
  assert.equal(
    describeTransactionError(core, { InstructionError: [2, { Custom: 21 }] }, { programId: program, programs: [addr(3), addr(3), program] }),
    "StaleTurn (custom program error 21): A turn whose expected turn count is not the state's (instruction 2)",
  );
  assert.equal(
    describeTransactionError(core, { InstructionError: [0, { Custom: 0 }] }, { programId: program, programs: ['11111111111111111111111111111111'] }),
    "the System program's AccountAlreadyInUse (its error 0): an account with this address exists already (instruction 0)",
  );
  // The CLI's words, from the same core (client/src/errors.rs's test).
  assert.equal(
    describeTransactionError(core, { InstructionError: [0, { Custom: 1 }] }, { programId: program, programs: ['11111111111111111111111111111111'] }),
    "the System program's ResultWithNegativeLamports (its error 1): the payer has fewer lamports than the instruction moves (instruction 0)",
  );
  // An instruction whose program is not known is not named as Curta's.
  assert.equal(describeTransactionError(core, { InstructionError: [1, { Custom: 21 }] }, { programId: program }), 'custom program error 21 (instruction 1)');
  assert.equal(transactionError(core, { InstructionError: [0, { Custom: 263 }] }, { programId: program, programs: [program] }).name, 'CoreError(ContextExceeded)');
});

test('a prompt is staged when the create-and-open transaction cannot hold it (720 bytes with the opener paying), as the core packs it', async () => {
  const payer = await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32).fill(5));
  const client = createCurtaClient({ url: 'http://127.0.0.1:1', programId: addr(1), payer, core });
  const run = await generateKeyPairSigner();
  const model = { config: addr(4), model: addr(5), royalty: 0n, modelIdentity: new Uint8Array(32).fill(8) };
  const { getCreateAccountInstruction } = await import('@solana-program/system');
  const create = getCreateAccountInstruction({ payer, newAccount: run, lamports: 1, space: 10_485_760, programAddress: addr(1) });
  // A 986-byte write with the owner paying fills a transaction exactly:
  // the core's size model is @solana/kit's.
  assert.equal(core.writeChunk('legacy'), 986);
  assert.equal(transactionSize(client, [ix.write(addr(1), { model: addr(5), weight: addr(7), owner: payer, offset: 0, bytes: new Uint8Array(986) })]), 1232);
  for (const [len, count] of [[0, 1], [720, 1], [721, 2], [1024, 2]]) {
    const prompt = Uint8Array.from({ length: len }, (_, i) => 97 + (i % 26));
    const p = { prompt, maxTokens: 1, temperatureQ16: 0, seed: 0n, label: '' };
    const txs = openTransactions(client, model, run, p, { fee: 0n, deposit: 0n }, create);
    assert.equal(txs.length, count, `a ${len}-byte prompt`);
    assert.ok(txs.every((t) => fits(client, t)));
    if (len === 720) assert.equal(transactionSize(client, txs[0]), 1232);
    // The staged bytes and the inline rest make the prompt.
    const rebuilt = new Uint8Array(len);
    for (const t of txs) {
      for (const i of t.filter((i) => i.programAddress === addr(1))) {
        const dv = new DataView(i.data.buffer, i.data.byteOffset);
        if (i.data[0] === 14) rebuilt.set(i.data.subarray(5), dv.getUint32(1, true));
        // open_run: the tag, 88 fixed bytes (staged at 73, the callback's length at 85), the callback, the prompt's rest.
        if (i.data[0] === 10) rebuilt.set(i.data.subarray(89 + dv.getUint32(85, true)), dv.getUint32(73, true));
      }
    }
    assert.deepEqual(rebuilt, prompt);
  }
});

// The stories260K shape: one layer section and one output section.
const STORIES260K = { dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 };
const modelData = (royalty) =>
  new Uint8Array(
    getModelEncoder().encode({
      config: addr(9), owner: addr(9), royalty, modelConfig: STORIES260K, sectionCount: 3, status: 1, flags: 1,
      boundCount: 3, sealedCount: 3, modelIdentity: new Uint8Array(32).fill(9),
      sections: Array.from({ length: 3 }, () => ({ weightAccount: addr(9), length: 0n, digest: new Uint8Array(32) })),
    }),
  );
const runData = (model, opener, length) =>
  new Uint8Array(
    getRunEncoder().encode({
      model, opener, royalty: 10n, deposited: 120n, escrow: 120n, paid: 0n, modelIdentity: new Uint8Array(32).fill(9),
      crankFee: 0n, crankDeposit: 0n, crankPaid: 0n, tokensAt: 0, textAt: 0, seed: 0n, allowance: 1_350_000, callbackAt: 0,
      deliveryFee: 0n, state: new Uint8Array(length - 256),
    }),
  );

test('an opening takes its sums and next step from the client core (core/src/client/opening.rs tests the same cases)', () => {
  const setup = { program: addr(1), run: addr(2), model: addr(3), opener: addr(4), promptLength: 16, maxTokens: 12, crankDeposit: 500n };
  const model = modelData(10n);
  const sums = core.openNext(model, setup);
  assert.deepEqual(sums, { accountLength: 256 + 48_048, escrow: 120n, crankDeposit: 500n, rent: undefined, deposit: undefined });
  const next = (found) => core.openNext(model, { ...setup, rent: 1_000n }, found);
  assert.deepEqual(next(null), { ...sums, rent: 1_000n, deposit: 1_620n, step: 'create', locks: true });
  const created = new Uint8Array(sums.accountLength);
  assert.equal(next({ owner: addr(1), data: created }).step, 'finish');
  const staged = created.slice();
  staged.set([97, 98, 99], 256 + 128);
  assert.equal(next({ owner: addr(1), data: staged }).step, 'finish');
  assert.deepEqual(next({ owner: addr(1), data: runData(addr(3), addr(4), sums.accountLength) }), { ...sums, rent: 1_000n, deposit: 1_620n, step: 'opened', locks: false });
  assert.throws(() => next({ owner: addr(5), data: created }), { message: `${addr(2)} (this run's address) is held by ${addr(5)}, not the curta program` });
  for (const other of [runData(addr(8), addr(4), sums.accountLength), runData(addr(3), addr(8), sums.accountLength)]) {
    assert.throws(() => next({ owner: addr(1), data: other }), { message: `${addr(2)} is a run of another model or opener` });
  }
  assert.throws(() => next({ owner: addr(1), data: runData(addr(3), addr(4), sums.accountLength).subarray(0, 100) }), { message: `${addr(2)} is damaged` });
  const stray = created.slice();
  stray[256 + 127] = 1;
  for (const other of [created.subarray(1), stray]) {
    assert.throws(() => next({ owner: addr(1), data: other }), { message: `${addr(2)} (this run's address) holds something else` });
  }
  assert.throws(() => core.openNext(modelData(1n << 63n), setup), { message: 'the royalty times max tokens overflows 64 bits' });
  assert.throws(() => core.openNext(new Uint8Array(10), setup), { message: `${addr(3)} is not a model account` });
});

test('only a run’s opener closes it, as the client core checks (core/src/client/opening.rs)', () => {
  const setup = { program: addr(1), run: addr(2), signer: addr(4) };
  const data = runData(addr(3), addr(4), 256 + 48_048);
  assert.equal(core.closeCheck(setup, { owner: addr(1), lamports: 9_999n, data }), 9_999n);
  assert.throws(() => core.closeCheck(setup, null), { message: `there is no run account at ${addr(2)} (closed already?)` });
  assert.throws(() => core.closeCheck(setup, { owner: addr(6), lamports: 1n, data }), { message: `${addr(2)} is not an account of the curta program ${addr(1)}` });
  assert.throws(() => core.closeCheck({ ...setup, signer: addr(8) }, { owner: addr(1), lamports: 1n, data }), {
    message: `run ${addr(2)} was opened by ${addr(4)}, not the signer ${addr(8)}: only its opener can close it`,
  });
  assert.throws(() => core.closeCheck(setup, { owner: addr(1), lamports: 1n, data: new Uint8Array(400) }), { message: `${addr(2)} is not an opened run` });
});

test('account reads name the last slot a transaction of the client landed in, and read again past a node behind it', async () => {
  const { SolanaError, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED } = await import('@solana/kit');
  const asked = [];
  let behind = 2;
  const rpc = {
    getSignatureStatuses: () => ({ send: async () => ({ value: [{ slot: 41n, confirmationStatus: 'confirmed', err: null }, { slot: 45n, confirmationStatus: 'processed', err: null }] }) }),
    getAccountInfo: (_address, config) => ({
      send: async () => {
        asked.push(config.minContextSlot);
        if (config.minContextSlot !== undefined && behind-- > 0) {
          throw new SolanaError(SOLANA_ERROR__JSON_RPC__SERVER_ERROR_MIN_CONTEXT_SLOT_NOT_REACHED, { __serverMessage: 'Minimum context slot has not been reached', contextSlot: 40 });
        }
        return { value: { data: ['AQID', 'base64'], lamports: 9n, owner: addr(3) } };
      },
    }),
  };
  const client = createCurtaClient({ rpc: /** @type {any} */ (rpc), programId: addr(3), payer: await generateKeyPairSigner() });
  const { fetchRawAccount } = await import('../../src/chain/fetch.js');
  const { statuses } = await import('../../src/chain/transactions.js');
  // Before any transaction landed: no slot named.
  assert.deepEqual((await fetchRawAccount(client, addr(4)))?.data, new Uint8Array([1, 2, 3]));
  assert.deepEqual(asked, [undefined]);
  // A status at the client's commitment (confirmed) sets the slot; a processed one does not.
  await statuses(client, ['a', 'b']);
  assert.equal(client.cache.slotSeen, 41n);
  assert.deepEqual((await fetchRawAccount(client, addr(4)))?.lamports, 9n);
  assert.deepEqual(asked, [undefined, 41n, 41n, 41n], 'asked again twice past the node behind slot 41');
  // A node that stays behind: an error that says so.
  behind = 100;
  await assert.rejects(fetchRawAccount(client, addr(4)), /the RPC stays behind slot 41, where this client last saw a transaction land: reading .* 8 times/);
});

test('a session key is funded with the client core’s sum (core/src/client/session_key.rs tests the same cases)', () => {
  const f = { lamportsPerSignature: 5000n, keyRent: 890_880n };
  assert.equal(core.sessionKeyFunding({ deposit: 1_000_000n, fees: 100_001n, ...f, crankers: false }), 1_000_000n + 100_001n + 5000n + 50_001n + 890_880n);
  assert.equal(core.sessionKeyFunding({ deposit: 1_000_000n, fees: 100_001n, ...f, crankers: true }), 10_000n + 890_880n);
  assert.throws(() => core.sessionKeyFunding({ deposit: (1n << 64n) - 1n, fees: 1n, ...f, crankers: false }), /a deposit of 18446744073709551615 and fees of 1 lamports add up to more than 2\^64 - 1/);
  assert.throws(() => core.sessionKeyFunding({ deposit: 1n, fees: 1n, ...f, crankers: 'yes' }), /crankers must be true or false/);
});
