// @ts-check
// The SDK's amounts and counts are the CLI's: the same cases as
// curta-client's output tests (client/src/output.rs).

import assert from 'node:assert/strict';
import test from 'node:test';

import { formatCount, formatSol } from '../src/index.js';

test('lamports print as SOL with nine decimals, as curta prints them', () => {
  assert.equal(formatSol(0n), '0.000000000 SOL');
  assert.equal(formatSol(1n), '0.000000001 SOL');
  assert.equal(formatSol(105_000n), '0.000105000 SOL');
  assert.equal(formatSol(1_000_000_000n), '1.000000000 SOL');
  assert.equal(formatSol(1_500_000_000), '1.500000000 SOL');
  assert.equal(formatSol(2_500_000_001n), '2.500000001 SOL');
  assert.equal(formatSol(18_446_744_073_709_551_615n), '18446744073.709551615 SOL');
});

test('counts group their thousands with commas, as curta prints them', () => {
  assert.equal(formatCount(0), '0');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(6_572), '6,572');
  assert.equal(formatCount(1_350_300n), '1,350,300');
  assert.equal(formatCount(18_446_744_073_709_551_615n), '18,446,744,073,709,551,615');
});
