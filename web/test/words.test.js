// The page's words for a crank's replay mismatch, from the SDK's own
// error: the turn and field it names (once read from a `details` field
// the error never had, so every mismatch said "turn ?" and "state").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CurtaCoreError, CurtaReplayMismatch } from '@curta/sdk';

import { conversionInWords, mismatchWords } from '../src/words.js';

test('a mismatch names the turn and the field the SDK error carries', () => {
  const e = new CurtaReplayMismatch('turn 7 (transaction x) is not the replay', { turn: 7, field: 'tokens', signature: 'x' });
  const said = mismatchWords(e, 3);
  assert.equal(said.turn, 7);
  assert.equal(said.line, 'MISMATCH at turn 7: tokens');
  assert.match(said.words, /^Turn 7 does not match the module's replay \(field tokens\): turn 7 \(transaction x\)/);
  // A final state that differs names no turn: the next one is named.
  const state = mismatchWords(new CurtaReplayMismatch('the final state differs', { field: 'header field turns' }), 21);
  assert.equal(state.line, 'MISMATCH at turn 21: header field turns');
});

test("a refused conversion names the picked file and says the core's words", () => {
  const names = { checkpoint: 'ck.bin', tokenizer: 'tok.bin' };
  const refused = new CurtaCoreError(2, { reason: 'it is 9 bytes, 3 more than a tokenizer of 2 tokens', input: 'tokenizer', kind: 'llama2.c tokenizer for this checkpoint' });
  refused.name = 'InvalidFormat'; // no module loaded here to name it
  assert.equal(
    conversionInWords(refused, names),
    'tok.bin is not a llama2.c tokenizer for this checkpoint: it is 9 bytes, 3 more than a tokenizer of 2 tokens (InvalidFormat, core error 2).',
  );
  // No input to blame: the module's words alone.
  const memory = new CurtaCoreError(4, { reason: "the module's memory cannot hold the 9-byte artifact", input: null, kind: null });
  memory.name = 'BufferTooSmall';
  assert.equal(conversionInWords(memory, names), "The module could not convert: the module's memory cannot hold the 9-byte artifact (BufferTooSmall, core error 4).");
  // An error without the module's words is worded as any other.
  assert.equal(conversionInWords(new Error('the converter stopped: out of memory'), names), 'the converter stopped: out of memory');
});
