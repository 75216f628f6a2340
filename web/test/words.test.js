// The page's words for a crank's replay mismatch, from the SDK's own
// error: the turn and field it names (once read from a `details` field
// the error never had, so every mismatch said "turn ?" and "state").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CurtaReplayMismatch } from '@curta/sdk';

import { mismatchWords } from '../src/words.js';

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
