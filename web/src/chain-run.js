// A run on chain, in the page: the quote, the one approval that funds a
// session key (the SDK's fundSessionKey), the key's work (the SDK's
// runWithSessionKey) shown turn by turn, and a session resumed after a reload.
import {
  CurtaReplayMismatch,
  MAX_PROMPT_BYTES,
  createCurtaClient,
  fetchArtifact,
  fetchModel,
  formatCount,
  formatSol,
  fundSessionKey,
  quoteRun,
  sessionKeyFunding,
  runWithSessionKey,
} from '@curta/sdk';
import { chain, connectCluster, reader, showBalance } from './chain-connect.js';
import { loadModel, readyToQuote } from './chain-model.js';
import { $, letPaint, setFacts, setProgress, setStatus } from './dom.js';
import { indexedDbJournal } from './journal-idb.js';
import { drawUnits } from './plot.js';
import { endSession, newSession, savedSession, sessionSigner, updateSession } from './session-key.js';
import { mismatchWords } from './words.js';

/** @typedef {import('./chain-connect.js').Page} Page */

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
export async function showQuote(client, model, input) {
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
export async function generate(page, timing) {
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
  await updateSession(session, recorded(funded.change));
  void showBalance().catch(() => {});
  await work(page, session);
}

/**
 * A change to the SDK's session key run as the page's record keeps it: its
 * amounts in decimal strings.
 * @param {Partial<import('@curta/sdk').SessionKeyRun>} change
 * @returns {Partial<import('./session-key.js').SessionRecord>}
 */
function recorded(change) {
  const { fees, crankDeposit, ...rest } = change;
  return {
    ...rest,
    ...(fees === undefined ? {} : { fees: String(fees) }),
    ...(crankDeposit === undefined ? {} : { crankDeposit: String(crankDeposit) }),
  };
}

/**
 * Resumes a session left by an earlier load.
 * @param {Page} page
 * @param {import('./session-key.js').SessionRecord} session
 */
export async function resume(page, session) {
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

/** Stops the run going in this page, if one is: false when none is. */
export function stopRun() {
  if (!running) return false;
  running.abort(new Error('stopped'));
  return true;
}

/**
 * What the SDK's runWithSessionKey says it does next, in the page's words.
 * @param {'fees' | 'opening' | 'earlier' | 'cranking' | 'following' | 'closing'} stage
 * @param {bigint} crankFee
 */
export function stageWords(stage, crankFee) {
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
 * The session key's part (the SDK's `runWithSessionKey`: open, crank or
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
  /** @param {import('@curta/sdk').SessionKeyTurn} t */
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
    done = await runWithSessionKey(
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
        save: (change) => updateSession(session, recorded(change)),
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
