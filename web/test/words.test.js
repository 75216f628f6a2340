// The page's words for a crank's replay mismatch, from the SDK's own
// error: the turn and field it names (once read from a `details` field
// the error never had, so every mismatch said "turn ?" and "state").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CurtaCoreError, CurtaReplayMismatch } from '@curta/sdk';

import { conversionInWords, inWords, mismatchWords, tooBigToConvert, tooBigToRun } from '../src/words.js';

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

test("the module's memory: what does not fit is refused naming the sizes, and a module that ran out says so", () => {
  // The stories110M shape converts (at least 2.25 times 438 MB), the TinyLlama 1.1B shape does not.
  assert.equal(tooBigToConvert('stories110M.bin', 438_381_596), null);
  assert.match(tooBigToConvert('tl.bin', 4_400_717_852) ?? '', /^tl\.bin is 4,400\.7 MB: converting it in this browser takes at least 9,901\.6 MB of the WebAssembly module's memory/);
  // A 7B checkpoint's artifact would not fit either.
  assert.match(tooBigToConvert('7b.bin', 26_953_662_492) ?? '', /Its artifact, about 6,738\.4 MB, would not fit a module either: convert and run it natively/);
  assert.equal(tooBigToRun('tl.curta', 1_103_279_608), null);
  assert.match(tooBigToRun('7b.curta', 6_800_000_000) ?? '', /^7b\.curta is 6,800\.0 MB: a run in this browser copies the whole artifact into the WebAssembly module's memory, which holds 4,295\.0 MB \(4 GiB\) at most\./);
  // A trap in the converting module (the core aborts when an allocation
  // fails), as the worker reports it: its name, message and memory.
  const trap = Object.assign(new Error('unreachable'), { name: 'RuntimeError', memory: 4_100_456_448 });
  assert.equal(
    conversionInWords(trap, { checkpoint: 'mid.bin', tokenizer: 'tokenizer.bin', checkpointBytes: 1_672_093_724 }),
    'The module ran out of memory converting mid.bin (1,672.1 MB): it held 4,100.5 MB when it stopped (RuntimeError: unreachable). ' +
      'Converting it takes about 5,016.3 MB, three times the checkpoint, and a WebAssembly module holds 4,295.0 MB (4 GiB) at most, ' +
      'or less where the browser gives it less. Convert it natively (curta-core convert mid.bin TOKENIZER -o MODEL.curta) and pick the artifact, about 418.0 MB: a run here holds only that.',
  );
  // The SDK's alloc getting nothing for an artifact in the run's worker.
  const alloc = Object.assign(new Error('the module could not allocate 1103279608 bytes'), { name: 'RangeError', memory: 3_000_000_000 });
  assert.match(inWords(alloc), /^The module ran out of memory: it held 3,000\.0 MB when it stopped \(RangeError: the module could not allocate 1103279608 bytes\)/);
  // Without the worker's memory figure, an error is worded as any other.
  assert.equal(inWords(Object.assign(new Error('unreachable'), { name: 'RuntimeError' })), 'unreachable');
});
