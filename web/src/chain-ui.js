// The on-chain half of the page: cluster, wallet (Wallet Standard, or a
// local key on localnet), model by address or upload, the quote, and the
// run paid through a session key, streamed and verified turn by turn.
import { createKeyPairSignerFromPrivateKeyBytes, isAddress } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  CurtaReplayMismatch,
  DEFAULT_ALLOWANCE,
  MAX_PROMPT_BYTES,
  checkArtifact,
  closeRun,
  crankRun,
  createCurtaClient,
  fetchArtifact,
  fetchConfig,
  fetchModel,
  fetchRun,
  followRun,
  initConfig,
  openRun,
  quoteRun,
  receiptDifferences,
  replayFromParams,
  runAccountSigner,
  sendAndConfirm,
  uploadModel,
} from '@curta/sdk';
import { $, formatNumber, setFacts, setProgress, setStatus } from './dom.js';
import { airdrop, checkCluster, sol } from './cluster.js';
import { indexedDbJournal } from './journal-idb.js';
import { drawUnits } from './plot.js';
import { endSession, newSession, savedSession, sessionSigner, updateSession } from './session-key.js';
import { getItem, setItem } from './store.js';
import { chainOf, connectWallet, walletSigner, watchWallets } from './wallet.js';
import { inWords, mismatchWords } from './words.js';

/** What a local key is given on localnet. */
const LOCAL_AIRDROP = 20_000_000_000n;

/**
 * @typedef {object} Page
 * @property {any} state
 * @property {Promise<import('@curta/sdk').CoreWasm>} corePromise
 * @property {(task: () => Promise<void>) => Promise<void>} guarded
 * @property {() => { prompt: Uint8Array, maxTokens: number, temperature: string, seed: bigint }} readRunInput
 * @property {(model: any, extra?: Array<[string, string]>) => void} setModel
 * @property {(prompt: string) => void} startOutput
 */

/**
 * What the page holds about the chain.
 * @type {{
 *   cluster: Awaited<ReturnType<typeof checkCluster>> | null,
 *   signer: import('@solana/kit').TransactionSigner | null,
 *   signerName: string,
 *   model: Awaited<ReturnType<typeof fetchModel>> | null,
 *   allowance: number,
 *   artifact: Uint8Array | null,
 * }}
 */
export const chain = { cluster: null, signer: null, signerName: '', model: null, allowance: DEFAULT_ALLOWANCE, artifact: null };

/** @param {Page} page */
export function setupChain(page) {
  const params = new URLSearchParams(location.search);
  if (params.get('cluster')) /** @type {HTMLInputElement} */ ($('cluster')).value = params.get('cluster') ?? '';
  if (params.get('program')) /** @type {HTMLInputElement} */ ($('program-id')).value = params.get('program') ?? '';

  /** @type {readonly import('@wallet-standard/base').Wallet[]} */
  let wallets = [];
  watchWallets((list) => {
    wallets = list;
    const select = /** @type {HTMLSelectElement} */ ($('wallet-select'));
    const chosen = select.value;
    select.replaceChildren(
      ...(list.length
        ? list.map((w, i) => new Option(w.name, String(i), false, String(i) === chosen))
        : [new Option('No Wallet Standard wallet in this browser', '')]),
    );
  });

  $('connect-cluster').addEventListener('click', () => page.guarded(async () => void (await connectCluster())));

  $('connect-wallet').addEventListener('click', () =>
    page.guarded(async () => {
      const cluster = await connectCluster();
      const wallet = wallets[Number(/** @type {HTMLSelectElement} */ ($('wallet-select')).value)];
      if (!wallet) throw new Error('No wallet to connect: install a Wallet Standard wallet, or use a local key on localnet.');
      const account = await connectWallet(wallet);
      chain.signer = walletSigner(wallet, account, chainOf(cluster.url));
      chain.signerName = `${wallet.name} ${account.address}`;
      await showSigner();
    }),
  );

  $('local-key').addEventListener('click', () =>
    page.guarded(async () => {
      const cluster = await connectCluster();
      if (chainOf(cluster.url) !== 'solana:localnet') {
        throw new Error(`A local key is for localnet only; ${cluster.url} is not on this machine. Connect a wallet instead.`);
      }
      const signer = await createKeyPairSignerFromPrivateKeyBytes(await kept('local-key'));
      setStatus(`Airdropping ${sol(LOCAL_AIRDROP)} to the local key ${signer.address}…`);
      await airdrop(cluster.rpc, signer.address, LOCAL_AIRDROP);
      chain.signer = signer;
      chain.signerName = `local key ${signer.address}`;
      await showSigner();
    }),
  );

  $('load-model').addEventListener('click', () =>
    page.guarded(async () => {
      const address = /** @type {HTMLInputElement} */ ($('model-address')).value.trim();
      await loadModel(page, address);
    }),
  );

  $('upload').addEventListener('click', () => page.guarded(() => upload(page)));

  $('quote').addEventListener('click', () =>
    page.guarded(async () => {
      const { client, model } = await readyToQuote(page);
      await showQuote(client, model, page.readRunInput());
    }),
  );

  $('run-chain').addEventListener('click', () => page.guarded(() => generate(page, { clicked: performance.now() })));

  $('give-back').addEventListener('click', () => {
    // A run going in this page: stop it there; its task closes the run
    // and sends everything back.
    if (running) {
      setStatus('Stopping: no more turns are sent; the run is closed and what is left sent back…');
      running.abort(new Error('stopped'));
      return;
    }
    void page.guarded(async () => {
      const session = await savedSession();
      if (!session) throw new Error('There is no session key in this browser: nothing to send back.');
      /** @type {HTMLInputElement} */ ($('cluster')).value = session.cluster;
      const cluster = await connectCluster();
      const key = await sessionSigner(session);
      const client = createCurtaClient({ rpc: cluster.rpc, programId: session.programId, payer: key, secret: session.seed, core: await page.corePromise, journal: indexedDbJournal() });
      const back = await giveBack(client, session, session.runAddress);
      setStatus(`The session key ${key.address} sent ${sol(back.sent)} back to ${session.owner}; its run is closed.`);
    });
  });

  // A session left by an earlier load: resume it (nothing is paid twice:
  // the run account and every transaction in flight are found again).
  void savedSession().then((s) => {
    if (s && s.phase !== 'done') {
      // A mark that stays, for whoever watches the page (its tests): the
      // status line moves on within milliseconds when little is left.
      document.body.dataset.chainResumed = 'true';
      setStatus(`Resuming the run left by the last visit (session key, run of ${s.model}).`);
      void page.guarded(() => resume(page, s));
    }
  });
}

/**
 * 32 random bytes kept in IndexedDB under `key` (made on first use).
 * @param {string} key
 * @returns {Promise<Uint8Array>}
 */
async function kept(key) {
  /** @type {Uint8Array | undefined} */
  let seed = await getItem(key);
  if (!seed) {
    seed = crypto.getRandomValues(new Uint8Array(32));
    await setItem(key, seed);
  }
  return seed;
}

/** Connects to the cluster typed, when it is not the one connected. */
export async function connectCluster() {
  const url = /** @type {HTMLInputElement} */ ($('cluster')).value.trim();
  if (chain.cluster?.url === url) return chain.cluster;
  chain.cluster = null;
  $('cluster-info').textContent = `Connecting to ${url}…`;
  try {
    chain.cluster = await checkCluster(url);
  } catch (e) {
    $('cluster-info').textContent = '';
    throw e;
  }
  $('cluster-info').textContent = `Connected: ${url}, Solana ${chain.cluster.version}, slot ${chain.cluster.slot}.`;
  return chain.cluster;
}

function programId() {
  const id = /** @type {HTMLInputElement} */ ($('program-id')).value.trim();
  if (!id) throw new Error("Type the curta program's address on this cluster.");
  if (!isAddress(id)) throw new Error(`"${id}" is not a Solana address (base58, 32 bytes).`);
  return id;
}

async function showSigner() {
  const cluster = /** @type {NonNullable<typeof chain.cluster>} */ (chain.cluster);
  const signer = /** @type {NonNullable<typeof chain.signer>} */ (chain.signer);
  const { value } = await cluster.rpc.getBalance(signer.address, { commitment: 'confirmed' }).send();
  $('wallet-info').textContent = `Paying with ${chain.signerName}: ${sol(value)}.`;
  setStatus('Wallet ready.');
}

/**
 * A chain client for reading (its payer signs nothing).
 * @param {Page} page
 */
async function reader(page) {
  const cluster = await connectCluster();
  const core = await page.corePromise;
  const payer = chain.signer ?? (await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32)));
  // With the page's journal: what an earlier load left in flight lands (or
  // expires) before anything is read, so what is read is what will stay.
  return createCurtaClient({ rpc: cluster.rpc, programId: programId(), payer, core, journal: indexedDbJournal() });
}

/**
 * Reads a model from the chain and shows its config, royalty and shape.
 * @param {Page} page
 * @param {string} address
 */
async function loadModel(page, address) {
  if (!address) throw new Error('Type the address of a Curta model account.');
  if (!isAddress(address)) throw new Error(`"${address}" is not a Solana address (base58, 32 bytes).`);
  const client = await reader(page);
  setStatus(`Reading model ${address}…`);
  let model;
  try {
    model = await fetchModel(client, address);
  } catch (e) {
    throw new Error(`${address} is not a Curta model on this cluster: ${inWords(e)}`);
  }
  const config = await fetchConfig(client, model.config);
  chain.model = model;
  // Every turn of its runs is planned under its config's allowance, with its own charge table.
  chain.allowance = config.allowance;
  // The page's artifact is used to replay when it is this model's; else the weights are read from the chain.
  chain.artifact = null;
  const local = page.state.model?.artifact;
  if (local) {
    try {
      checkArtifact(await page.corePromise, model, local);
      chain.artifact = local;
    } catch {}
  }
  page.setModel(
    { name: `on chain ${address}`, artifact: chain.artifact ?? page.state.model?.artifact ?? null, config: model.shape, charges: model.charges },
    [
      ['address', address],
      ['status', model.statusName],
      ['owner', model.owner],
      ['config', `${model.config} (admin ${config.admin}, allowance ${formatNumber(config.allowance)} CU per turn)`],
      ['royalty', `${formatNumber(model.royalty)} lamports per token`],
      ['sections', String(model.sections.length)],
    ],
  );
  /** @type {HTMLInputElement} */ ($('model-address')).value = address;
}

/**
 * Uploads the picked artifact (a config is made for the signer if it has none).
 * @param {Page} page
 */
async function upload(page) {
  const artifact = page.state.model?.artifact;
  if (!artifact) throw new Error('Pick an artifact or convert a checkpoint first: that is what is uploaded.');
  const signer = chain.signer;
  if (!signer) throw new Error('Connect a wallet (or a local key on localnet) to pay for the upload.');
  const cluster = await connectCluster();
  // The accounts' keys derive from a secret this browser keeps, so an
  // interrupted upload is found again after a reload.
  const client = createCurtaClient({
    rpc: cluster.rpc,
    programId: programId(),
    payer: signer,
    secret: await kept('owner-secret'),
    core: await page.corePromise,
    journal: indexedDbJournal(),
  });
  setStatus('Creating or finding your config…');
  const { config } = await initConfig(client);
  const started = performance.now();
  const uploaded = await uploadModel(client, artifact, {
    config,
    onProgress: (p) =>
      setProgress('upload-progress', p.total ? p.done / p.total : 1, `upload: ${p.stage} ${formatNumber(p.done)} of ${formatNumber(p.total)}`),
  });
  const seconds = (performance.now() - started) / 1000;
  setProgress('upload-progress', 1, `uploaded: ${uploaded.summary.transactions} transactions, ${sol(uploaded.summary.fees)} in fees, ${seconds.toFixed(1)} s`);
  await loadModel(page, uploaded.model);
}

/**
 * The client, model and artifact a quote needs.
 * @param {Page} page
 */
async function readyToQuote(page) {
  if (!chain.model) {
    const typed = /** @type {HTMLInputElement} */ ($('model-address')).value.trim();
    if (!typed) throw new Error('Choose a model on chain first: type its address, or upload the picked artifact.');
    await loadModel(page, typed);
  }
  const model = /** @type {NonNullable<typeof chain.model>} */ (chain.model);
  const client = await reader(page);
  if (!chain.artifact) {
    setStatus('Reading the model’s weights from the chain, to replay its turns…');
    chain.artifact = await fetchArtifact(client, model);
  }
  return { client, model };
}

/**
 * @param {ReturnType<Page['readRunInput']>} input
 * @returns {import('@curta/sdk').RunParams}
 */
function runParamsOf(input) {
  return { prompt: input.prompt, maxTokens: input.maxTokens, temperature: input.temperature, seed: input.seed };
}

/**
 * Prices the run typed and shows the quote.
 * @param {import('@curta/sdk').CurtaClient} client
 * @param {NonNullable<typeof chain.model>} model
 * @param {ReturnType<Page['readRunInput']>} input
 */
async function showQuote(client, model, input) {
  if (input.prompt.length > MAX_PROMPT_BYTES) {
    throw new Error(`The prompt is ${formatNumber(input.prompt.length)} bytes long; the limit is ${formatNumber(MAX_PROMPT_BYTES)} bytes (UTF-8).`);
  }
  if (input.maxTokens > model.shape.seqLen) {
    throw new Error(`Max tokens ${input.maxTokens} is past the model's context of ${model.shape.seqLen} tokens.`);
  }
  setStatus('Quoting…');
  const crankers = crankersWanted();
  const artifact = /** @type {Uint8Array} */ (chain.artifact);
  let q = await quoteRun(client, model.address, runParamsOf(input), { artifact });
  const crankFee = crankers ? crankFeeOf(q.recommendedCrankFee) : 0n;
  if (crankFee > 0n) q = await quoteRun(client, model.address, { ...runParamsOf(input), crankFee }, { artifact });
  const fund = fundingFor(q, await keyRent(client), crankers);
  setFacts('quote-info', [
    ['turns', `${q.turns} (${q.tokens} tokens)`],
    ['transactions', `${q.transactions} (${q.openTransactions} to open, ${q.turns} turns, 1 to close)`],
    ['compute units', `${formatNumber(q.cuRequested)} asked (${formatNumber(q.cuEstimated)} planned, at most ${formatNumber(q.cuLimitMax)} a turn)`],
    ['fees', `${sol(q.fees)} (${sol(q.baseFees)} base, ${sol(q.priorityFees)} priority)`],
    ['rent that comes back', sol(q.rent)],
    ['royalty', `${sol(q.royaltyPaid)} (${formatNumber(q.royalty)} lamports a token; escrow ${sol(q.escrow)}, the rest comes back)`],
    [
      'crank fee',
      crankers
        ? `${formatNumber(q.crankFee)} lamports a turn to whoever sends it: ${sol(q.crankDeposit)} deposited (recommended ${formatNumber(q.recommendedCrankFee)}: ${q.recommendedCrankFeeBasis})`
        : `none: the session key sends the turns (to let crankers send them, ${formatNumber(q.recommendedCrankFee)} lamports a turn is recommended: ${q.recommendedCrankFeeBasis})`,
    ],
    [
      'you approve',
      crankers
        ? `one transaction: the run's ${sol(q.deposit)} (rent, escrow and crank deposit) and ${sol(fund)} for a session key that closes it; what is left comes back`
        : `${sol(fund)} to a session key, once; what is left comes back`,
    ],
  ]);
  setStatus('Quoted. Nothing has been paid.');
  return q;
}

/**
 * What the wallet sends the session key: with crankers, the fees of the
 * close and of the transfer back (the wallet's own transaction opens the
 * run and pays its deposits); else the run's deposits and every fee it
 * pays, with room for resent turns; and the key's own rent exemption (a
 * fee payer must stay rent-exempt while it holds anything). What is not
 * spent comes back at the end.
 * @param {Awaited<ReturnType<typeof quoteRun>>} q
 * @param {bigint} keyRent the cluster's rent exemption for an account of no data
 * @param {boolean} crankers whether crankers send the turns
 */
function fundingFor(q, keyRent, crankers) {
  const perSignature = q.signatures > 0 ? q.baseFees / BigInt(q.signatures) : 5000n;
  if (crankers) return perSignature * 2n + keyRent;
  return q.deposit + q.fees + perSignature + (q.fees + 1n) / 2n + keyRent;
}

/** Whether the run is left to crankers ("Sign once and let crankers finish"). */
function crankersWanted() {
  return /** @type {HTMLInputElement} */ ($('let-crankers')).checked;
}

/**
 * The crank fee typed, or the quote's recommendation when none is.
 * @param {bigint} recommended
 */
function crankFeeOf(recommended) {
  const text = /** @type {HTMLInputElement} */ ($('crank-fee')).value.trim();
  if (text === '') return recommended;
  if (!/^\d+$/.test(text) || BigInt(text) < 1n || BigInt(text) >= 1n << 64n) {
    throw new Error(`The crank fee must be a whole number of lamports from 1 to 2^64 − 1, not "${text}".`);
  }
  return BigInt(text);
}

/** @param {import('@curta/sdk').CurtaClient} client */
async function keyRent(client) {
  return BigInt(await client.rpc.getMinimumBalanceForRentExemption(0n).send());
}

/**
 * Generates the run typed on chain: one approval, then the session key works.
 * @param {Page} page
 * @param {{ clicked: number }} timing
 */
async function generate(page, timing) {
  // A fresh output before anything else, so nothing of the last run shows as this one's.
  $('chain-view').hidden = true;
  $('turns').replaceChildren();
  delete document.body.dataset.chainDone;
  const owner = chain.signer;
  if (!owner) throw new Error('Connect a wallet (or a local key on localnet) first: it funds the run once.');
  const input = page.readRunInput();
  const { client: readClient, model } = await readyToQuote(page);
  const q = await showQuote(readClient, model, input);
  const cluster = /** @type {NonNullable<typeof chain.cluster>} */ (chain.cluster);
  const old = await savedSession();
  if (old && old.phase !== 'done') {
    const { value } = await cluster.rpc.getBalance((await sessionSigner(old)).address, { commitment: 'confirmed' }).send();
    if (old.phase !== 'created' || value > 0n) throw new Error('A run of an earlier visit is still going: reload the page to resume it first.');
    await endSession(); // never funded: nothing to resume
  }
  const session = await newSession({
    cluster: cluster.url,
    programId: readClient.programId,
    model: model.address,
    owner: owner.address,
    run: { prompt: new TextDecoder().decode(input.prompt), maxTokens: input.maxTokens, temperature: input.temperature, seed: String(input.seed) },
    quotedTurns: q.turns,
    crankFee: String(q.crankFee),
  });
  const sessionKey = await sessionSigner(session);
  const amount = fundingFor(q, await keyRent(readClient), q.crankFee > 0n);
  if (q.crankFee > 0n) {
    // One wallet transaction opens the run with its deposits, the session
    // key its opener (so that it can close it unasked), and funds the key
    // for the close and the transfer back.
    setStatus(`Asking ${chain.signerName} to approve one transaction: the run's deposits, and ${sol(amount)} for the session key ${sessionKey.address}…`);
    const sessionClient = createCurtaClient({ rpc: cluster.rpc, programId: readClient.programId, payer: sessionKey, secret: session.seed, core: await page.corePromise, journal: indexedDbJournal() });
    let opened;
    try {
      opened = await openRun(sessionClient, model.address, { ...runParamsOf(input), crankFee: q.crankFee }, {
        artifact: /** @type {Uint8Array} */ (chain.artifact),
        funder: owner,
        fundOpener: amount,
      });
    } catch (e) {
      if (/** @type {any} */ (e)?.refused) await endSession();
      throw e;
    }
    await updateSession(session, { phase: 'running', runAddress: opened.run, crankDeposit: String(opened.crank.deposit) });
    await work(page, session, { timing, fundingFee: opened.summary.fees });
    return;
  }
  setStatus(`Asking ${chain.signerName} to approve ${sol(amount)} for the session key ${sessionKey.address}…`);
  const wallet = createCurtaClient({ rpc: cluster.rpc, programId: readClient.programId, payer: owner, journal: indexedDbJournal() });
  let funded;
  try {
    funded = await sendAndConfirm(wallet, 'funding the session key', [
      getTransferSolInstruction({ source: owner, destination: sessionKey.address, amount }),
    ]);
  } catch (e) {
    // A refusal sent nothing: forget the key. Anything else may have been
    // sent, so the key is kept for a reload to find.
    if (/** @type {any} */ (e)?.refused) await endSession();
    throw e;
  }
  await updateSession(session, { phase: 'funded', fundingSignature: funded.signature });
  await work(page, session, { timing, fundingFee: funded.fee });
}

/**
 * Resumes a session left by an earlier load.
 * @param {Page} page
 * @param {import('./session-key.js').SessionRecord} session
 */
async function resume(page, session) {
  /** @type {HTMLInputElement} */ ($('cluster')).value = session.cluster;
  /** @type {HTMLInputElement} */ ($('program-id')).value = session.programId;
  /** @type {HTMLTextAreaElement} */ ($('prompt')).value = session.run.prompt;
  /** @type {HTMLInputElement} */ ($('max-tokens')).value = String(session.run.maxTokens);
  /** @type {HTMLInputElement} */ ($('temperature')).value = session.run.temperature;
  /** @type {HTMLInputElement} */ ($('seed')).value = session.run.seed;
  await connectCluster();
  await loadModel(page, session.model);
  const client = await reader(page);
  if (!chain.artifact) chain.artifact = await fetchArtifact(client, /** @type {any} */ (chain.model));
  if (session.phase === 'created') {
    // The funding was in flight, or never sent: loadModel's reads settled
    // the journal, so it has landed by now or never will. Never ask again here.
    const key = await sessionSigner(session);
    const { value } = await client.rpc.getBalance(key.address, { commitment: 'confirmed' }).send();
    if (value === 0n) {
      await endSession();
      setStatus('The last visit’s session key was never funded; nothing was paid. Start again.');
      return;
    }
  }
  await work(page, session, { timing: null, fundingFee: 0n });
}

/** The run going in this page, which "Stop and send back" stops. @type {AbortController | null} */
let running = null;

/**
 * The session key's part: open, crank, close, send back what is left.
 * @param {Page} page
 * @param {import('./session-key.js').SessionRecord} session
 * @param {{ timing: { clicked: number } | null, fundingFee: bigint }} o
 */
async function work(page, session, o) {
  const cluster = /** @type {NonNullable<typeof chain.cluster>} */ (chain.cluster);
  const key = await sessionSigner(session);
  const client = createCurtaClient({
    rpc: cluster.rpc,
    programId: session.programId,
    payer: key,
    secret: session.seed,
    core: await page.corePromise,
    journal: indexedDbJournal(),
  });
  const params = { prompt: session.run.prompt, maxTokens: session.run.maxTokens, temperature: session.run.temperature, seed: BigInt(session.run.seed) };
  const quoted = /** @type {number} */ (session.quotedTurns);
  page.startOutput(session.run.prompt);
  $('chain-view').hidden = false;
  $('turns').replaceChildren();
  running = new AbortController();
  const signal = running.signal;
  try {
    await workUntilStopped(page, session, o, { client, key, params, quoted, signal });
  } finally {
    running = null;
  }
}

/**
 * @param {Page} page
 * @param {import('./session-key.js').SessionRecord} session
 * @param {{ timing: { clicked: number } | null, fundingFee: bigint }} o
 * @param {{ client: import('@curta/sdk').CurtaClient, key: { address: string }, params: { prompt: string, maxTokens: number, temperature: string, seed: bigint }, quoted: number, signal: AbortSignal }} w
 */
async function workUntilStopped(page, session, o, w) {
  const { client, key, params, quoted, signal } = w;
  const cluster = /** @type {NonNullable<typeof chain.cluster>} */ (chain.cluster);
  const units = /** @type {Array<number | undefined>} */ ([]);
  drawUnits(/** @type {any} */ ($('cu-plot')), quoted, units);
  let fees = o.fundingFee;
  let landed = 0;
  const decoder = new TextDecoder();
  let text = '';
  /** @type {string | null} */
  let runShown = null;
  let crankersPaid = 0n;
  const facts = () =>
    setFacts('run-stats', [
      ['where', `on chain, ${cluster.url}`],
      ['session key', key.address],
      ...(runShown ? /** @type {Array<[string,string]>} */ ([['run', runShown]]) : []),
      ...(BigInt(session.crankFee ?? '0') > 0n ? /** @type {Array<[string,string]>} */ ([['paid to crankers', sol(crankersPaid)]]) : []),
      ['turns landed', `${landed} of ${quoted} quoted`],
      ['verified', `${$('turns').querySelectorAll('li.verified').length} of ${landed}`],
      ['fees so far', sol(fees)],
      ...(lastTokenSeconds !== null ? /** @type {Array<[string,string]>} */ ([['click to last token', `${lastTokenSeconds.toFixed(2)} s`]]) : []),
    ]);
  /** @type {number | null} */
  let lastTokenSeconds = null;

  const crankFee = BigInt(session.crankFee ?? '0');
  if (session.phase === 'funded' || session.phase === 'created') {
    setStatus(crankFee > 0n ? 'The session key opens the run with a deposit for its crankers…' : 'The session key opens the run…');
    const opened = await openRun(client, session.model, { ...params, crankFee }, { artifact: /** @type {Uint8Array} */ (chain.artifact) });
    fees += opened.summary.fees;
    await updateSession(session, { phase: 'running', runAddress: opened.run, crankDeposit: String(opened.crank.deposit) });
  }
  // The terms the run was opened with, which its receipts must show.
  const crank = { fee: crankFee, deposit: BigInt(session.crankDeposit ?? '0') };
  const runAddress = session.runAddress ?? (await runAccountSigner(client, session.model, params)).address;
  runShown = runAddress;
  /** @param {{ turn: number, text: Uint8Array }} t */
  const showText = (t) => {
    landed = t.turn;
    if (t.text.length > 0) {
      text += decoder.decode(t.text, { stream: true });
      $('output-text').textContent = text;
      if (o.timing) lastTokenSeconds = (performance.now() - o.timing.clicked) / 1000;
    }
    setProgress('run-progress', landed / quoted, `${landed} of ${quoted} turns landed`);
    facts();
  };
  if (crankFee > 0n) {
    // Crankers send the turns, paid from the run's deposit: the page only
    // follows the run's receipts, each checked against the replay.
    facts();
    setStatus(`Crankers send the turns (${formatNumber(crankFee)} lamports a turn); each is checked against the module’s replay as it lands.`);
    await verifyLanded(client, runAddress, params, Infinity, crank, (r) => {
      crankersPaid += r.crankPaid;
      showText({ turn: r.turns, text: r.text });
    }, signal);
  } else {
    // What landed before a reload.
    const before = await fetchRun(client, runAddress).catch(() => null);
    if (!before || before.info.turns > 0) {
      // Turns that landed before the reload (all of them, and the run closed,
      // when the last load got that far): read back from the chain's history.
      setStatus("Checking the turns that landed before the reload against the module's replay…");
      const earlier = await verifyLanded(client, runAddress, params, before ? before.info.turns : Infinity, crank, null);
      landed = earlier.landed;
      text = decoder.decode(earlier.text, { stream: true });
      $('output-text').textContent = text;
    }
    facts();
    setProgress('run-progress', landed / quoted, `${landed} of ${quoted} turns landed`);
    setStatus('The session key cranks the run; each turn is checked against the module’s replay as it lands.');
    try {
      if (before) await crankRun(client, runAddress, {
        artifact: /** @type {Uint8Array} */ (chain.artifact),
        signal,
        onTurn: (t) => {
          fees += t.fee;
          units[t.turn - 1] = t.programCu;
          drawUnits(/** @type {any} */ ($('cu-plot')), quoted, units);
          addTurn(t.turn, `turn ${t.turn}: ${formatNumber(t.programCu)} CU, ${t.generated} tokens, receipt equals the replay (state ${t.stateSha256.slice(0, 12)}…)`, 'verified');
          showText(t);
        },
      });
    } catch (e) {
      if (e instanceof CurtaReplayMismatch) {
        const said = mismatchWords(e, landed + 1);
        addTurn(said.turn, said.line, 'mismatch');
        throw new Error(said.words);
      }
      // Stopped: the run is closed below, mid-way.
      if (!signal.aborted) throw e;
    }
  }
  text += decoder.decode();
  $('output-text').textContent = text;
  // Stopped: a client of its own, which first waits for the turns still in
  // flight to land or expire (the SDK settles a client's journal before it
  // reads the chain), so none lands after the key is emptied.
  const closer = signal.aborted
    ? createCurtaClient({ rpc: client.rpc, programId: client.programId, payer: client.payer, secret: session.seed, core: client.core, journal: indexedDbJournal() })
    : client;
  const back = await giveBack(closer, session, runAddress);
  fees += back.fees;
  facts();
  const final = await client.rpc.getBalance(/** @type {any} */ (session.owner), { commitment: 'confirmed' }).send();
  const how = signal.aborted ? `Stopped on chain after ${landed} of ${quoted} turns, all verified; the run is closed` : `Done on chain: ${landed} turns, all verified`;
  setStatus(`${how}; ${sol(back.sent)} sent back to ${session.owner} (now ${sol(final.value)}).`);
  document.body.dataset.chainDone = signal.aborted ? 'stopped' : 'true';
}

/**
 * Closes the session's run (its rent and unspent escrow come back to the
 * key) and sends everything the key holds to the wallet that funded it,
 * less that transfer's fee; then forgets the key.
 * @param {import('@curta/sdk').CurtaClient} client the session key's
 * @param {import('./session-key.js').SessionRecord} session
 * @param {string | undefined} runAddress
 */
async function giveBack(client, session, runAddress) {
  let fees = 0n;
  let perSignature = 5000n;
  if (runAddress && (await client.rpc.getAccountInfo(/** @type {any} */ (runAddress), { commitment: 'confirmed', encoding: 'base64', dataSlice: { offset: 0, length: 0 } }).send()).value) {
    setStatus('Closing the run; its rent and unspent escrow come back to the session key…');
    const closed = await closeRun(client, runAddress);
    fees += closed.fee;
    perSignature = closed.fee;
  }
  const { value: balance } = await client.rpc.getBalance(client.payer.address, { commitment: 'confirmed' }).send();
  let sent = 0n;
  if (balance > perSignature) {
    sent = balance - perSignature;
    await sendAndConfirm(client, 'sending back what is left', [
      getTransferSolInstruction({ source: client.payer, destination: /** @type {any} */ (session.owner), amount: sent }),
    ]);
    fees += perSignature;
  }
  await updateSession(session, { phase: 'done' });
  await endSession();
  return { fees, sent };
}

/**
 * The receipts of the run's turns as they land (those of an earlier load
 * too), read from the chain's logs, each checked against the module's
 * replay of the run from its start.
 * @param {import('@curta/sdk').CurtaClient} client
 * @param {string} runAddress
 * @param {{ prompt: string, maxTokens: number, temperature: string, seed: bigint }} params
 * @param {number} upTo the turns to read (Infinity: to the run's end, or its close)
 * @param {{ fee: bigint, deposit: bigint }} crank the crank fee and deposit the run was opened with
 * @param {((r: { turns: number, text: Uint8Array, crankPaid: bigint }) => void) | null} onReceipt each verified receipt as it lands (null: before a reload)
 * @param {AbortSignal} [signal] stops following
 */
async function verifyLanded(client, runAddress, params, upTo, crank, onReceipt, signal) {
  const model = /** @type {NonNullable<typeof chain.model>} */ (chain.model);
  const replay = await replayFromParams(/** @type {any} */ (client.core), /** @type {Uint8Array} */ (chain.artifact), params.prompt, {
    maxTokens: params.maxTokens,
    temperature: params.temperature,
    seed: params.seed,
    allowance: chain.allowance,
  });
  let landed = 0;
  /** @type {Uint8Array[]} */
  const texts = [];
  const terms = { royalty: model.royalty, crankFee: crank.fee, crankDeposited: crank.deposit };
  for await (const r of followRun(client, runAddress, { signal })) {
    const diffs = receiptDifferences(/** @type {any} */ (client.core), r, replay.steps[r.turns - 1], { run: runAddress, model: model.address, ...terms });
    if (diffs.length > 0) {
      const d = diffs[0];
      addTurn(r.turns, `MISMATCH at turn ${r.turns}: ${d.field}`, 'mismatch');
      throw new Error(`Turn ${r.turns} does not match the module's replay: its ${d.field} is ${d.receipt} on chain, ${d.replay} in the replay.`);
    }
    addTurn(r.turns, `turn ${r.turns}${onReceipt ? ` (sent by a cranker, paid ${r.crankPaid} lamports)` : ' (before the reload)'}: receipt equals the replay`, 'verified');
    landed = r.turns;
    texts.push(r.text);
    onReceipt?.(r);
    if (r.turns >= upTo) break;
  }
  const text = new Uint8Array(texts.reduce((n, t) => n + t.length, 0));
  texts.reduce((at, t) => (text.set(t, at), at + t.length), 0);
  return { landed, text };
}

/**
 * @param {number} turn
 * @param {string} title
 * @param {'verified' | 'mismatch'} kind
 */
function addTurn(turn, title, kind) {
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = kind === 'mismatch' ? `✗ ${turn}` : `✓ ${turn}`;
  li.title = title;
  li.dataset.turn = String(turn);
  $('turns').append(li);
}
