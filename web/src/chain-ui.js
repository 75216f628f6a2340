// The on-chain half of the page: cluster, wallet (Wallet Standard, or a
// local key on localnet), model by address or upload, the quote, and the
// run paid through a session key, streamed and verified turn by turn.
import { address, createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import {
  CurtaReplayMismatch,
  DEFAULT_ALLOWANCE,
  MAX_PROMPT_BYTES,
  checkArtifact,
  createCurtaClient,
  fetchArtifact,
  fetchConfig,
  fetchModel,
  formatCount,
  formatSol,
  fundSessionKey,
  initConfig,
  quoteRun,
  quoteUpload,
  sendBack,
  sessionKeyFunding,
  uploadModel,
  workSessionRun,
} from '@curta/sdk';
import { $, letPaint, setFacts, setProgress, setStatus, showTab } from './dom.js';
import { airdrop, checkCluster } from './cluster.js';
import { indexedDbJournal } from './journal-idb.js';
import { drawUnits } from './plot.js';
import { endSession, newSession, savedSession, sessionSigner, updateSession } from './session-key.js';
import { getItem, setItem } from './store.js';
import { chainOf, connectWallet, walletSigner, watchWallets } from './wallet.js';
import { inWords, mismatchWords, notAnAddress } from './words.js';

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
 *   programFound: string,
 * }}
 */
export const chain = { cluster: null, signer: null, signerName: '', model: null, allowance: DEFAULT_ALLOWANCE, artifact: null, programFound: '' };

/** The module, for the checks the page makes before it connects. @type {Promise<import('@curta/sdk').CoreWasm>} */
let chainCore;

/** @param {Page} page */
export function setupChain(page) {
  chainCore = page.corePromise;
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

  $('connect-cluster').addEventListener('click', () => page.guarded(connectTyped));

  $('connect-wallet').addEventListener('click', () =>
    page.guarded(async () => {
      const cluster = await connectTyped();
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
      const cluster = await connectTyped();
      if (chainOf(cluster.url) !== 'solana:localnet') {
        throw new Error(`A local key is for localnet only; ${cluster.url} is not on this machine. Connect a wallet instead.`);
      }
      const signer = await createKeyPairSignerFromPrivateKeyBytes(await kept('local-key'));
      setStatus(`Airdropping ${formatSol(LOCAL_AIRDROP)} to the local key ${signer.address}…`);
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
      const back = await sendBack(client, session.owner, session.runAddress, {
        onClosing: () => setStatus(stageWords('closing', 0n)),
      });
      await endSession();
      void showBalance().catch(() => {});
      setStatus(`The session key ${key.address} sent ${formatSol(back.sent)} back to ${session.owner}; its run is closed.`);
    });
  });

  // "Stop and send back" is there while a session key holds a run.
  const showGiveBack = (/** @type {import('./session-key.js').SessionRecord | null | undefined} */ s) => {
    $('give-back').hidden = !s || s.phase === 'done';
  };
  addEventListener('curta-session', (e) => showGiveBack(/** @type {CustomEvent} */ (e).detail));

  // A session left by an earlier load: resume it (nothing is paid twice:
  // the run account and every transaction in flight are found again).
  void savedSession().then((s) => {
    showGiveBack(s);
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

/**
 * Connects to the cluster and program typed: a program address that is
 * not one is refused before anything connects, and one where the cluster
 * has no program once it answers. An empty one connects the cluster alone.
 */
async function connectTyped() {
  const typed = /** @type {HTMLInputElement} */ ($('program-id')).value.trim();
  if (typed) await programId();
  const cluster = await connectCluster();
  if (typed) await checkProgram(cluster, typed);
  else $('cluster-info').textContent = `Connected: ${cluster.url}, Solana ${cluster.version}, slot ${cluster.slot}; type the curta program's address on this cluster.`;
  return cluster;
}

/** The program address typed, checked for form. */
async function programId() {
  const id = /** @type {HTMLInputElement} */ ($('program-id')).value.trim();
  if (!id) throw new Error("Type the curta program's address on this cluster.");
  const refused = notAnAddress(await chainCore, 'The curta program address', id, ' Nothing was connected.');
  if (refused) throw refused;
  return id;
}

/**
 * That a program is at `id` on the cluster (read once per cluster and address).
 * @param {NonNullable<typeof chain.cluster>} cluster
 * @param {string} id
 */
async function checkProgram(cluster, id) {
  const found = `${cluster.url} ${id}`;
  if (chain.programFound !== found) {
    const { value } = await cluster.rpc.getAccountInfo(address(id), { commitment: 'confirmed', encoding: 'base64', dataSlice: { offset: 0, length: 0 } }).send();
    if (!value) {
      throw new Error(`There is no program at ${id} on ${cluster.url}: deploy curta there (curta deploy prints its address), or type the address it has on this cluster.`);
    }
    if (!value.executable) throw new Error(`${id} on ${cluster.url} is not a program but an account of ${value.owner}: type the curta program's address.`);
    chain.programFound = found;
  }
  $('cluster-info').textContent = `Connected: ${cluster.url}, Solana ${cluster.version}, slot ${cluster.slot}; the program ${id} is there.`;
  return id;
}

async function showSigner() {
  await showBalance();
  setStatus('Wallet ready.');
}

/** When the balance line was last read, for `showBalanceSometimes`. */
let balanceRead = 0;
/** Reads started, so that an older answer arriving late does not replace a newer one. */
let balanceReads = 0;

/** Reads the paying key's balance again, after a transaction it paid. */
async function showBalance() {
  const cluster = chain.cluster;
  const signer = chain.signer;
  if (!cluster || !signer) return;
  balanceRead = performance.now();
  const read = ++balanceReads;
  const { value } = await cluster.rpc.getBalance(signer.address, { commitment: 'confirmed' }).send();
  if (chain.signer === signer && read === balanceReads) $('wallet-info').textContent = `Paying with ${chain.signerName}: ${formatSol(value)}.`;
}

/** `showBalance` at most once a second, never waited for: while an upload's transactions land. */
function showBalanceSometimes() {
  if (performance.now() - balanceRead >= 1000) showBalance().catch(() => {});
}

/**
 * A chain client for reading (its payer signs nothing).
 * @param {Page} page
 */
async function reader(page) {
  const cluster = await connectCluster();
  const core = await page.corePromise;
  const payer = chain.signer ?? (await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32)));
  const id = await checkProgram(cluster, await programId());
  // With the page's journal: what an earlier load left in flight lands (or
  // expires) before anything is read, so what is read is what will stay.
  return createCurtaClient({ rpc: cluster.rpc, programId: id, payer, core, journal: indexedDbJournal() });
}

/**
 * Reads a model from the chain and shows its config, royalty and shape.
 * @param {Page} page
 * @param {string} address
 */
async function loadModel(page, address) {
  if (!address) throw new Error('Type the address of a Curta model account.');
  const refused = notAnAddress(await page.corePromise, 'The model address', address);
  if (refused) throw refused;
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
  // A run opened now records its config's allowance, which every turn of it is planned under, with the model's own charge table.
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
      ['config', `${model.config} (admin ${config.admin}, allowance ${formatCount(config.allowance)} CU per turn)`],
      ['royalty', `${formatCount(model.royalty)} lamports per token`],
      ['sections', formatCount(model.sections.length)],
    ],
  );
  /** @type {HTMLInputElement} */ ($('model-address')).value = address;
  showTab('address');
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
    programId: await checkProgram(cluster, await programId()),
    payer: signer,
    secret: await kept('owner-secret'),
    core: await page.corePromise,
    journal: indexedDbJournal(),
  });
  // What it costs, shown before anything is sent.
  setStatus('Quoting the upload…');
  const q = await quoteUpload(client, artifact);
  setFacts('quote-info', [
    ['upload rent', `${formatSol(q.rent)} held by the model's account and its ${formatCount(q.accounts - 1)} weight accounts (closing the model returns it)`],
    ['upload fees', `${formatSol(q.fees)} at most, for ${formatCount(q.transactions)} transactions (${formatCount(q.writes)} chunk writes)`],
    ...(q.configRent > 0n
      ? /** @type {Array<[string, string]>} */ ([['config account', `${formatSol(q.configRent)} rent and ${formatSol(q.configFees)} in fees, for yours, made first`]])
      : []),
  ]);
  setStatus(q.configRent > 0n ? 'Creating your config account…' : 'Finding your config account…');
  const { config } = await initConfig(client);
  void showBalance().catch(() => {});
  const started = performance.now();
  const uploaded = await uploadModel(client, artifact, {
    config,
    onProgress: (p) => {
      setProgress('upload-progress', p.total ? p.done / p.total : 1, `upload: ${p.stage} ${formatCount(p.done)} of ${formatCount(p.total)}`);
      setStatus(uploadStepWords(p));
      showBalanceSometimes();
    },
  });
  const seconds = (performance.now() - started) / 1000;
  setProgress('upload-progress', 1, `uploaded: ${formatCount(uploaded.summary.transactions)} transactions, ${formatSol(uploaded.summary.fees)} in fees, ${seconds.toFixed(1)} s`);
  await showBalance();
  await loadModel(page, uploaded.model);
}

/**
 * An upload's step, for the status line.
 * @param {{ stage: string, done: number, total: number }} p the SDK's UploadProgress
 */
function uploadStepWords(p) {
  const of = `${formatCount(p.done)} of ${formatCount(p.total)}`;
  switch (p.stage) {
    case 'model':
      return 'Creating the model account…';
    case 'bind':
      return `Binding a weight account to each section: ${of}…`;
    case 'write':
      return `Writing the weights: ${of} bytes…`;
    case 'seal':
      return `Sealing the sections, then the model: ${of}…`;
    default:
      return 'Uploaded; reading the model back…';
  }
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
    throw new Error(`The prompt is ${formatCount(input.prompt.length)} bytes long; the limit is ${formatCount(MAX_PROMPT_BYTES)} bytes (UTF-8).`);
  }
  if (input.maxTokens > model.shape.seqLen) {
    throw new Error(`Max tokens ${formatCount(input.maxTokens)} is past the model's context of ${formatCount(model.shape.seqLen)} tokens.`);
  }
  setStatus('Quoting…');
  const crankers = crankersWanted();
  const artifact = /** @type {Uint8Array} */ (chain.artifact);
  let q = await quoteRun(client, model.address, runParamsOf(input), { artifact });
  const crankFee = crankers ? crankFeeOf(q.recommendedCrankFee) : 0n;
  if (crankFee > 0n) q = await quoteRun(client, model.address, { ...runParamsOf(input), crankFee }, { artifact });
  const fund = await sessionKeyFunding(client, q, { crankers });
  setFacts('quote-info', [
    ['turns', `${formatCount(q.turns)} (${formatCount(q.tokens)} tokens)`],
    ['transactions', `${formatCount(q.transactions)} (${formatCount(q.openTransactions)} to open, ${formatCount(q.turns)} turns, 1 to close)`],
    ['compute units', `${formatCount(q.cuRequested)} asked (${formatCount(q.cuEstimated)} planned, at most ${formatCount(q.cuLimitMax)} a turn)`],
    // Left to crankers, the turns' fees are theirs (the crank fee repays
    // them): the wallet pays only what it approves below.
    crankers
      ? ['fees', `the ${formatCount(q.turns)} turns' are the crankers', repaid by the crank fee; the opening's and the close's are in what you approve`]
      : ['fees', `${formatSol(q.fees)} (${formatSol(q.baseFees)} base, ${formatSol(q.priorityFees)} priority)`],
    ['rent that comes back', formatSol(q.rent)],
    ['royalty', `${formatSol(q.royaltyPaid)} (${formatCount(q.royalty)} lamports a token; escrow ${formatSol(q.escrow)}, the rest comes back)`],
    [
      'crank fee',
      crankers
        ? `${formatCount(q.crankFee)} lamports a turn to whoever sends it: ${formatSol(q.crankDeposit)} deposited (recommended ${formatCount(q.recommendedCrankFee)}: ${q.recommendedCrankFeeBasis})`
        : `none: the session key sends the turns (to let crankers send them, ${formatCount(q.recommendedCrankFee)} lamports a turn is recommended: ${q.recommendedCrankFeeBasis})`,
    ],
    [
      'you approve',
      crankers
        ? `one transaction: the run's ${formatSol(q.deposit)} (rent, escrow and crank deposit) and ${formatSol(fund)} for a session key that closes it; what is left comes back`
        : `${formatSol(fund)} to a session key, once; what is left comes back`,
    ],
  ]);
  setStatus('Quoted. Nothing has been paid.');
  return q;
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
    // performance.now() starts again with every load; the time of day does not.
    clickedAt: performance.timeOrigin + timing.clicked,
  });
  const sessionKey = await sessionSigner(session);
  const keyClient = createCurtaClient({ rpc: cluster.rpc, programId: readClient.programId, payer: sessionKey, secret: session.seed, core: await page.corePromise, journal: indexedDbJournal() });
  let funded;
  try {
    funded = await fundSessionKey(keyClient, owner, model.address, { ...runParamsOf(input), crankFee: q.crankFee }, q, {
      artifact: /** @type {Uint8Array} */ (chain.artifact),
      onApproval: (amount) =>
        setStatus(
          q.crankFee > 0n
            ? `Asking ${chain.signerName} to approve one transaction: the run's deposits, and ${formatSol(amount)} for the session key ${sessionKey.address}…`
            : `Asking ${chain.signerName} to approve ${formatSol(amount)} for the session key ${sessionKey.address}…`,
        ),
    });
  } catch (e) {
    // A refusal sent nothing: forget the key. Anything else may have been
    // sent, so the key is kept for a reload to find.
    if (/** @type {any} */ (e)?.refused) await endSession();
    throw e;
  }
  const { change } = funded;
  await updateSession(session, {
    ...change,
    fees: String(change.fees),
    ...(change.crankDeposit === undefined ? {} : { crankDeposit: String(change.crankDeposit) }),
  });
  void showBalance().catch(() => {});
  await work(page, session);
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
  // A value set here fires no input event: the byte count is told.
  $('prompt').dispatchEvent(new Event('input'));
  /** @type {HTMLInputElement} */ ($('max-tokens')).value = String(session.run.maxTokens);
  /** @type {HTMLInputElement} */ ($('temperature')).value = session.run.temperature;
  /** @type {HTMLInputElement} */ ($('seed')).value = session.run.seed;
  // The run's mode as it was chosen: left to crankers when it pays them.
  const crankFee = session.crankFee ?? '0';
  /** @type {HTMLInputElement} */ ($('let-crankers')).checked = crankFee !== '0';
  /** @type {HTMLInputElement} */ ($('crank-fee')).value = crankFee !== '0' ? crankFee : '';
  await connectCluster();
  setStatus('Resuming: the transactions the last visit left in flight land first, or expire (up to about a minute)…');
  // The SDK settles a client's journal before its first read; loadModel's reads then find it settled.
  const client = await reader(page);
  await fetchModel(client, session.model).catch(() => null);
  await loadModel(page, session.model);
  if (!chain.artifact) {
    setStatus('Reading the model’s weights from the chain, to replay its turns…');
    chain.artifact = await fetchArtifact(client, /** @type {any} */ (chain.model));
  }
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
  await work(page, session, true);
}

/** The run going in this page, which "Stop and send back" stops. @type {AbortController | null} */
let running = null;

/**
 * What the SDK's session run says it does next, in the page's words.
 * @param {'fees' | 'opening' | 'earlier' | 'cranking' | 'following' | 'closing'} stage
 * @param {bigint} crankFee
 */
function stageWords(stage, crankFee) {
  const checked = 'each is checked against the module’s replay as it lands';
  switch (stage) {
    case 'fees':
      return 'Adding up the fees the run has paid so far…';
    case 'opening':
      return crankFee > 0n ? 'The session key opens the run with a deposit for its crankers…' : 'The session key opens the run…';
    case 'following':
      return `Crankers send the turns (${formatCount(crankFee)} lamports a turn); ${checked}.`;
    case 'earlier':
      return 'Replaying the run in the module, to check the turns that landed before the reload…';
    case 'cranking':
      return `The session key cranks the run; ${checked}.`;
    case 'closing':
      return 'Closing the run; its rent and unspent escrow come back to the session key…';
  }
}

/**
 * The session key's part (the SDK's `workSessionRun`: open, crank or
 * follow, check, close, send back), shown as it goes.
 * @param {Page} page
 * @param {import('./session-key.js').SessionRecord} session
 * @param {boolean} [resumed] left by an earlier load of the page
 */
async function work(page, session, resumed = false) {
  const cluster = /** @type {NonNullable<typeof chain.cluster>} */ (chain.cluster);
  const model = /** @type {NonNullable<typeof chain.model>} */ (chain.model);
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
  const crankFee = BigInt(session.crankFee ?? '0');
  page.startOutput(session.run.prompt);
  $('chain-view').hidden = false;
  $('turns').replaceChildren();
  /** Each turn's transaction's compute units, by turn (the chain's meta, live or read back after a reload). */
  const units = /** @type {Array<number | undefined>} */ ([]);
  const svg = /** @type {SVGSVGElement} */ (/** @type {unknown} */ ($('cu-plot')));
  drawUnits(svg, quoted, units);
  const shown = { run: '', earlierOf: '', landed: 0, fees: BigInt(session.fees ?? '0'), crankersPaid: 0n, text: '', lastTokenSeconds: /** @type {number | null} */ (null) };
  const decoder = new TextDecoder();
  // The click, on this load's clock (a reload's is later: it may be negative).
  const clicked = session.clickedAt === undefined ? null : session.clickedAt - performance.timeOrigin;
  const facts = () =>
    setFacts('run-stats', [
      ['where', `on chain, ${cluster.url}`],
      ['session key', key.address],
      ...(shown.run ? /** @type {Array<[string,string]>} */ ([['run', shown.run]]) : []),
      ...(crankFee > 0n ? /** @type {Array<[string,string]>} */ ([['paid to crankers', formatSol(shown.crankersPaid)]]) : []),
      ['turns landed', `${shown.landed} of ${quoted} quoted`],
      ['verified', `${$('turns').querySelectorAll('li.verified').length} of ${shown.landed}`],
      ['fees so far', formatSol(shown.fees)],
      ...(shown.lastTokenSeconds !== null ? /** @type {Array<[string,string]>} */ ([['click to last token', `${shown.lastTokenSeconds.toFixed(2)} s`]]) : []),
    ]);
  /** The chart once a frame at most: a reload may show hundreds of turns at once. */
  let chartDue = false;
  const chart = () => {
    if (chartDue) return;
    chartDue = true;
    requestAnimationFrame(() => {
      chartDue = false;
      drawUnits(svg, quoted, units);
    });
  };
  /** @param {import('@curta/sdk').SessionTurn} t */
  const showTurn = async (t) => {
    const title =
      t.by === 'key'
        ? `turn ${t.turn}: ${formatCount(t.computeUnits)} CU (the program's ${formatCount(t.programCu ?? 0)}), ${t.generated} tokens, receipt equals the replay (state ${t.stateSha256?.slice(0, 12)}…)`
        : `turn ${t.turn}${t.by === 'earlier' ? ' (before the reload)' : ` (sent by a cranker, paid ${formatCount(t.crankPaid)} lamports)`}: ${formatCount(t.computeUnits)} CU, receipt equals the replay`;
    addTurn(t.turn, title, 'verified');
    shown.landed = t.turn;
    if (t.by === 'cranker') shown.crankersPaid += t.crankPaid;
    units[t.turn - 1] = Number(t.computeUnits);
    chart();
    if (t.text.length > 0) {
      shown.text += decoder.decode(t.text, { stream: true });
      $('output-text').textContent = shown.text;
      if (clicked !== null) shown.lastTokenSeconds = (performance.now() - clicked) / 1000;
    }
    setProgress('run-progress', shown.landed / quoted, `${formatCount(shown.landed)} of ${formatCount(quoted)} turns landed`);
    facts();
    if (t.by === 'earlier') setStatus(`Checking the turns that landed before the reload against the module's replay: ${formatCount(t.turn)}${shown.earlierOf}…`);
    // Receipts read in one go are checked in a burst: the page shows them as it goes.
    if (t.by !== 'key') await letPaint();
  };
  running = new AbortController();
  const signal = running.signal;
  let done;
  try {
    done = await workSessionRun(
      client,
      {
        model: session.model,
        owner: session.owner,
        params,
        crankFee,
        phase: session.phase,
        runAddress: session.runAddress,
        crankDeposit: session.crankDeposit === undefined ? undefined : BigInt(session.crankDeposit),
        allowance: session.allowance,
        fees: shown.fees,
      },
      {
        artifact: /** @type {Uint8Array} */ (chain.artifact),
        royalty: model.royalty,
        resumed,
        signal,
        // The session's record keeps decimal strings.
        save: (change) =>
          updateSession(session, {
            ...change,
            ...(change.fees === undefined ? {} : { fees: String(change.fees) }),
            ...(change.crankDeposit === undefined ? {} : { crankDeposit: String(change.crankDeposit) }),
          }),
        onStage: (stage, turns) => {
          shown.earlierOf = turns === undefined ? '' : ` of ${formatCount(turns)}`;
          facts();
          setStatus(stageWords(stage, crankFee));
        },
        onRun: (run) => {
          shown.run = run;
          facts();
        },
        onTurn: showTurn,
        onFees: (fees) => {
          shown.fees = fees;
          facts();
        },
      },
    );
  } catch (e) {
    if (e instanceof CurtaReplayMismatch) {
      const said = mismatchWords(e, shown.landed + 1);
      addTurn(said.turn, said.line, 'mismatch');
      throw new Error(said.words);
    }
    throw e;
  } finally {
    running = null;
  }
  await endSession();
  shown.text += decoder.decode();
  $('output-text').textContent = shown.text;
  drawUnits(svg, quoted, units);
  facts();
  const final = await client.rpc.getBalance(/** @type {any} */ (session.owner), { commitment: 'confirmed' }).send();
  void showBalance().catch(() => {});
  const how = done.stopped ? `Stopped on chain after ${formatCount(shown.landed)} of ${formatCount(quoted)} turns, all verified; the run is closed` : `Done on chain: ${formatCount(shown.landed)} turns, all verified`;
  setStatus(`${how}; ${formatSol(done.sent)} sent back to ${session.owner} (now ${formatSol(final.value)}).`);
  document.body.dataset.chainDone = done.stopped ? 'stopped' : 'true';
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
