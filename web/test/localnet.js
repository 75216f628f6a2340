// curta-localnet for the browser test, as harness/src/localnet.rs starts it:
// its own ledger folder, free ports, the program preloaded, stopped (its
// whole process group) by `stop()`.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * @param {{ binary: string, programId: string, programSo: string, timeoutMs?: number }} o
 * @returns {Promise<{ rpcUrl: string, stop: () => Promise<void>, log: string[] }>}
 */
export async function startLocalnet(o) {
  const dir = await mkdtemp(join(tmpdir(), 'curta-web-localnet-'));
  const args = [
    '--ledger', join(dir, 'ledger'),
    '--log', join(dir, 'ledger.log'),
    '--payer-keypair', join(dir, 'payer.json'),
    '--rpc-port', '0',
    '--faucet-port', '0',
    '--gossip-port', '0',
    '--bpf-program', o.programId, o.programSo,
    '--stop-on-stdin-close',
  ];
  const child = spawn(o.binary, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  /** @type {string[]} */
  const log = [];
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  createInterface({ input: /** @type {any} */ (child.stderr) }).on('line', (l) => log.push(l));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-(/** @type {number} */ (child.pid)), 'SIGTERM');
      } catch {}
      const timer = setTimeout(() => {
        try {
          process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL');
        } catch {}
      }, 20_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const rpcUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`curta-localnet printed no JSON RPC URL in ${o.timeoutMs ?? 180_000} ms:\n${log.join('\n')}`)), o.timeoutMs ?? 180_000);
    createInterface({ input: /** @type {any} */ (child.stdout) }).on('line', (line) => {
      log.push(line);
      const m = /^JSON RPC URL: (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`curta-localnet exited during start-up (${JSON.stringify(e)}):\n${log.join('\n')}`));
    });
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  // Ready when it answers getLatestBlockhash (as localnet.rs waits).
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(/** @type {string} */ (rpcUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getLatestBlockhash' }),
      });
      if ((await r.text()).includes('blockhash')) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`curta-localnet at ${rpcUrl} did not answer getLatestBlockhash`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { rpcUrl: /** @type {string} */ (rpcUrl), stop, log };
}
