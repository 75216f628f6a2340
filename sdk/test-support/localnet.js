// curta-localnet for the chain client's tests: started on free ports on
// 127.0.0.1 with the program preloaded, stopped by the test
// (harness/src/localnet.rs starts it the same way for the Rust tests).

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { REPO_ROOT } from './fixtures.js';

/** target/debug/curta-localnet, or $CURTA_LOCALNET_BIN. */
export const LOCALNET_BIN = process.env.CURTA_LOCALNET_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(REPO_ROOT, 'target'), 'debug/curta-localnet');
/** make build-sbf's program. */
export const PROGRAM_SO = join(process.env.SBF_OUT_DIR ?? join(REPO_ROOT, 'target/deploy'), 'curta_program.so');

// A block of ports apart from the Rust harness's (20,000 to 32,000): the
// validator's dynamic range, then RPC, its websocket and the faucet.
const PORT_BASE = 33_000;
const PORT_BLOCK = 50;
const PORT_BLOCKS = 200;
const DYNAMIC_PORTS = 40;

/** @param {number} port */
function tcpFree(port) {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

/** @param {number} port */
function udpFree(port) {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => resolve(false));
    s.bind(port, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

async function freeBlock() {
  const first = (process.pid * 7 + Math.floor(Math.random() * PORT_BLOCKS)) % PORT_BLOCKS;
  for (let i = 0; i < PORT_BLOCKS; i++) {
    const base = PORT_BASE + ((first + i) % PORT_BLOCKS) * PORT_BLOCK;
    let free = true;
    for (let p = base; p <= base + DYNAMIC_PORTS + 2 && free; p++) free = (await tcpFree(p)) && (await udpFree(p));
    if (free) return base;
  }
  throw new Error(`no free block of ${PORT_BLOCK} ports in ${PORT_BASE}..${PORT_BASE + PORT_BLOCK * PORT_BLOCKS}`);
}

/**
 * Starts the validator with `programId` preloaded from the program's .so,
 * and any other programs given (`[address, so path]` pairs: the
 * storyteller's, say).
 * @param {string} programId
 * @param {{ programs?: [string, string][] }} [options]
 * @returns {Promise<{ url: string, payer: Uint8Array, dir: string, stop: () => Promise<void>, startedIn: number }>}
 */
export async function startLocalnet(programId, options = {}) {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'curta-js-localnet-'));
  const base = await freeBlock();
  const payerPath = join(dir, 'payer.json');
  const child = spawn(
    LOCALNET_BIN,
    [
      '--ledger', join(dir, 'ledger'),
      '--log', join(dir, 'ledger.log'),
      '--payer-keypair', payerPath,
      '--dynamic-port-range', `${base}-${base + DYNAMIC_PORTS}`,
      '--gossip-port', '0',
      '--rpc-port', String(base + DYNAMIC_PORTS),
      '--faucet-port', String(base + DYNAMIC_PORTS + 2),
      '--bpf-program', programId, PROGRAM_SO,
      ...(options.programs ?? []).flatMap(([address, so]) => ['--bpf-program', address, so]),
      '--stop-on-stdin-close',
      // The whole history: the tests read every transaction of a run after
      // it ends, and at the default 10,000 shreds the ledger's cleanup
      // deletes old slots once RocksDB flushes.
      '--limit-ledger-size', '50000000',
    ],
    // Its own group, so stopping it reaches anything it started.
    { stdio: ['pipe', 'pipe', 'pipe'], detached: true },
  );
  const stderr = [];
  createInterface({ input: child.stderr }).on('line', (l) => {
    stderr.push(l);
    if (stderr.length > 40) stderr.shift();
  });
  let exited = null;
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exited = { code, signal }))));
  const stop = async () => {
    if (exited) return;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, 30_000);
    await exit;
    clearTimeout(timer);
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  };
  const url = await new Promise((resolve, reject) => {
    const timeout = setTimeout(() => reject(new Error(`curta-localnet printed no JSON RPC URL within 120 s\n${stderr.join('\n')}`)), 120_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^JSON RPC URL: (\S+)/.exec(line);
      if (m) {
        clearTimeout(timeout);
        resolve(m[1]);
      }
    });
    exit.then(({ code, signal }) => {
      clearTimeout(timeout);
      reject(new Error(`curta-localnet exited (${code ?? signal}) before it was ready\n${stderr.join('\n')}`));
    });
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  return { url, payer: Uint8Array.from(JSON.parse(readFileSync(payerPath, 'utf8'))), dir, stop, startedIn: (Date.now() - started) / 1000 };
}
