// The generated client at a deployment's address: the kit plugin builds
// for the deployed program, and a Curta error is recognized there (the
// generated `curtaProgram()` and `isCurtaError` know only the IDL's
// placeholder address).
import assert from 'node:assert/strict';
import test from 'node:test';

import { SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM, SolanaError, createClient, getAddressDecoder } from '@solana/kit';

import { curtaProgramAt, isCurtaErrorAt } from '../src/index.js';
import { CURTA_ERROR__STALE_TURN, CURTA_PROGRAM_ADDRESS, isCurtaError } from '../src/generated-js/index.js';

const addr = (b) => getAddressDecoder().decode(new Uint8Array(32).fill(b));
const DEPLOYED = addr(7);

test('the kit plugin builds every instruction for the deployed program and reads its accounts', () => {
  const client = createClient({}).use(curtaProgramAt(DEPLOYED));
  assert.equal(client.curta.programAddress, DEPLOYED);
  assert.deepEqual(Object.keys(client.curta.accounts).sort(), ['config', 'model', 'run', 'weight']);
  assert.equal(Object.keys(client.curta.instructions).length, 17);
  const ix = client.curta.instructions.closeRun({ run: addr(2), opener: { address: addr(3), signTransactions: async () => [] } });
  assert.equal(ix.programAddress, DEPLOYED);
  assert.deepEqual(ix.data, new Uint8Array([12]));
});

test('a Curta error is recognized at the deployed address, where the generated isCurtaError sees none', () => {
  const error = new SolanaError(SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM, { code: CURTA_ERROR__STALE_TURN, index: 0 });
  const message = { instructions: { 0: { programAddress: DEPLOYED } } };
  assert.equal(isCurtaErrorAt(error, message, DEPLOYED, CURTA_ERROR__STALE_TURN), true);
  assert.equal(isCurtaErrorAt(error, message, DEPLOYED), true);
  assert.equal(isCurtaErrorAt(error, message, addr(8), CURTA_ERROR__STALE_TURN), false);
  assert.equal(isCurtaErrorAt(error, message, DEPLOYED, CURTA_ERROR__STALE_TURN + 1), false);
  assert.notEqual(CURTA_PROGRAM_ADDRESS, DEPLOYED);
  assert.equal(isCurtaError(error, message, CURTA_ERROR__STALE_TURN), false);
});
