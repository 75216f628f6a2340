// The offline run's speed in the page against the module's in Node, on the
// same run: stories260K converted from its checkpoint, "Once upon a time",
// 200 tokens (TOKENS=N for another count; CHECKPOINT=path TOKENIZER=path
// for another model), T = 0. Both step CoreSession
// with the same loop (src/offline-run.js), the page in its worker in
// headless Chromium, Node on its main thread, in turns, ROUNDS times each
// (12 by default; the medians leave out the first WARMUP, 3, which warm
// the module up). Asserts nothing; prints for each round:
// - tokens per second, first token to last, as the page shows them;
// - tokens per CPU second: the same tokens over the CPU time the running
//   thread got for the whole run (Linux's /proc/.../schedstat), which a
//   busy machine does not change: equal figures mean the same work, and a
//   gap in wall time alone means the page's thread got less of the CPU;
// - the CPU time the page's main thread spent during the run (showing the
//   progress) and its longest task;
// - the first token's time, and whether both ended in the same state.
// A run of 200 tokens takes some 50 ms: on a busy machine single rounds
// swing by a third either way, the medians much less.
// `make bench-web` (after `make web-build`; Linux).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCore } from '@curta/sdk';
import { runSession, tokensPerSecond } from '../src/offline-run.js';
import { launchBrowser, pageLog } from '../test/browser.js';
import { MODELS, convertOnPage, fact, fillRun } from '../test/page.js';
import { DIST, serve } from './serve.js';

const ROUNDS = Number(process.env.ROUNDS ?? 12);
/** Rounds left out of the medians: V8 tiers the module and the SDK's JavaScript up over the first runs. */
const WARMUP = Number(process.env.WARMUP ?? 3);
const TOKENS = Number(process.env.TOKENS ?? 200);
/** Another model: CHECKPOINT=path TOKENIZER=path (a llama2.c checkpoint and its tokenizer). */
const CHECKPOINT = process.env.CHECKPOINT ?? join(MODELS, 'stories260K.bin');
const TOKENIZER = process.env.TOKENIZER ?? join(MODELS, 'tok512.bin');
const RUN = { prompt: 'Once upon a time', maxTokens: TOKENS, temperature: '0', seed: '0', text: '', turns: 0, sha256: '' };
/** The module the SDK's Node build reads, which `make web-build` also bundles into the page. */
const WASM = fileURLToPath(new URL('../../sdk/dist/curta_core.wasm', import.meta.url));

const sha = (/** @type {Uint8Array} */ b) => createHash('sha256').update(b).digest('hex');

/**
 * Nanoseconds a thread has run on a CPU (the first field of its schedstat);
 * 0 for one that is gone.
 * @param {number} pid
 * @param {number | string} tid
 */
function cpuNanos(pid, tid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return 0;
  }
}

/**
 * The page's renderer threads: its main thread and its workers', found by
 * the profile folder on their process's command line.
 * @param {string} profile
 */
function rendererThreads(profile) {
  /** @type {{ pid: number, tid: string, main: boolean }[]} */
  const threads = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number)) {
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes('--type=renderer') || !cmdline.includes(profile)) continue;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      if (comm === 'DedicatedWorker' || Number(tid) === pid) threads.push({ pid, tid, main: Number(tid) === pid });
    }
  }
  return threads;
}

/** The page's main thread's and its workers' CPU nanoseconds so far. @param {string} profile */
function pageCpu(profile) {
  let main = 0;
  let workers = 0;
  for (const t of rendererThreads(profile)) {
    if (t.main) main += cpuNanos(t.pid, t.tid);
    else workers += cpuNanos(t.pid, t.tid);
  }
  return { main, workers };
}

/** The module in Node: one artifact loaded, each round a fresh session. */
async function nodeRunner() {
  const wasm = readFileSync(WASM);
  const core = await loadCore(wasm);
  const artifact = core.convert(readFileSync(CHECKPOINT), readFileSync(TOKENIZER));
  const loaded = core.loadArtifact(artifact);
  const params = { prompt: new TextEncoder().encode(RUN.prompt), maxTokens: RUN.maxTokens, temperature: RUN.temperature, seed: BigInt(RUN.seed) };
  return {
    wasm: sha(wasm),
    async run() {
      const before = cpuNanos(process.pid, process.pid);
      const r = await runSession(core, loaded, params);
      const cpu = (cpuNanos(process.pid, process.pid) - before) / 1e9;
      return { tps: tokensPerSecond(r), cpuTps: r.generated / cpu, first: r.firstTokenSeconds, generated: r.generated, sha256: r.sha256 };
    },
  };
}

/** The page in headless Chromium: converted once, each round a click on "Run in this browser". */
async function pageRunner() {
  const server = await serve(0);
  const browser = await launchBrowser();
  const page = await browser.context.newPage();
  const log = pageLog(page);
  await page.goto(server.url);
  await convertOnPage(page, CHECKPOINT, TOKENIZER).catch(async (e) => {
    console.error(`the page did not convert: ${await page.locator('#error').innerText()}\n${log.join('\n')}`);
    await browser.close();
    await server.close();
    throw e;
  });
  const bundled = readdirSync(join(DIST, 'assets')).find((f) => f.endsWith('.wasm'));
  return {
    wasm: bundled ? sha(readFileSync(join(DIST, 'assets', bundled))) : 'none bundled',
    async run() {
      await fillRun(page, RUN);
      await page.evaluate(watchTheRun);
      const before = pageCpu(browser.profile);
      await page.click('#run-offline');
      const longest = await page.evaluate(() => /** @type {any} */ (window).runEnded);
      const after = pageCpu(browser.profile);
      const error = page.locator('#error');
      if (await error.isVisible()) throw new Error(`the page shows an error: ${await error.innerText()}`);
      const generated = Number(await fact(page, 'tokens'));
      return {
        tps: Number(await fact(page, 'tokens per second')),
        cpuTps: generated / ((after.workers - before.workers) / 1e9),
        mainMs: (after.main - before.main) / 1e6,
        first: parseFloat(await fact(page, 'first token')),
        generated,
        sha256: await fact(page, 'state sha256'),
        longest,
      };
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * In the page, before a run: `window.runEnded` resolves, when the page says
 * the run ended, to the longest task its main thread ran meanwhile. The
 * page itself says so: Playwright's waitForFunction would poll it every
 * frame, work a person's page does not do.
 */
function watchTheRun() {
  const w = /** @type {any} */ (window);
  delete document.body.dataset.offlineDone;
  let longest = 0;
  const tasks = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) longest = Math.max(longest, e.duration);
  });
  tasks.observe({ type: 'longtask' });
  const error = /** @type {HTMLElement} */ (document.getElementById('error'));
  w.runEnded = new Promise((resolve) => {
    const seen = new MutationObserver(() => {
      if (!document.body.dataset.offlineDone && error.hidden) return;
      seen.disconnect();
      // Long tasks are reported after they end: one more task for the last.
      setTimeout(() => {
        tasks.disconnect();
        resolve(longest);
      }, 0);
    });
    seen.observe(document.body, { attributes: true, attributeFilter: ['data-offline-done'] });
    seen.observe(error, { attributes: true, attributeFilter: ['hidden'] });
  });
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percent = (/** @type {number} */ x) => `${(100 * x).toFixed(1)}%`;
const HEADS = ['round', 'Node tok/s', 'page tok/s', 'page/Node', 'Node tok/CPU-s', 'page tok/CPU-s', 'page/Node', 'main CPU', 'longest task', 'Node 1st', 'page 1st', 'same state'];
const row = (/** @type {string[]} */ cells) => console.log(cells.map((c, i) => (i ? c.padStart(Math.max(10, HEADS[i].length + 2)) : c.padEnd(7))).join(''));

const node = await nodeRunner();
const web = await pageRunner();
try {
  console.log(`${basename(CHECKPOINT)}, "${RUN.prompt}", ${RUN.maxTokens} tokens, T = ${RUN.temperature}; ${ROUNDS} rounds each, in turns, medians of the last ${ROUNDS - WARMUP}`);
  console.log(`module: ${node.wasm} (Node ${process.version}), ${web.wasm} (page)`);
  row(HEADS);
  /** @type {Record<string, number[]>} */
  const kept = { n: [], p: [], wall: [], nc: [], pc: [], cpu: [], main: [] };
  for (let i = 1; i <= ROUNDS; i++) {
    // Each pair in both orders by turns, so neither always runs first.
    let a, b;
    if (i % 2) {
      a = await node.run();
      b = await web.run();
    } else {
      b = await web.run();
      a = await node.run();
    }
    if (i > WARMUP) {
      kept.n.push(a.tps);
      kept.p.push(b.tps);
      kept.wall.push(b.tps / a.tps);
      kept.nc.push(a.cpuTps);
      kept.pc.push(b.cpuTps);
      kept.cpu.push(b.cpuTps / a.cpuTps);
      kept.main.push(b.mainMs);
    }
    row([
      String(i),
      a.tps.toFixed(1),
      b.tps.toFixed(1),
      percent(b.tps / a.tps),
      a.cpuTps.toFixed(1),
      b.cpuTps.toFixed(1),
      percent(b.cpuTps / a.cpuTps),
      `${b.mainMs.toFixed(1)} ms`,
      `${b.longest.toFixed(0)} ms`,
      `${a.first.toFixed(3)} s`,
      `${b.first.toFixed(3)} s`,
      a.sha256 === b.sha256 && a.generated === b.generated ? 'yes' : `NO (${a.sha256.slice(0, 8)} ${b.sha256.slice(0, 8)})`,
    ]);
  }
  // The ratios are the pairs' own: two runs a moment apart share the machine's load.
  const m = (/** @type {string} */ k) => median(kept[k]);
  row(['median', m('n').toFixed(1), m('p').toFixed(1), percent(m('wall')), m('nc').toFixed(1), m('pc').toFixed(1), percent(m('cpu')), `${m('main').toFixed(1)} ms`]);
} finally {
  await web.close();
}
