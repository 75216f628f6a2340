// The on-chain half of the page: cluster, wallet (Wallet Standard, or a
// local key on localnet), model by address or upload, the quote, and the
// run paid through a session key, streamed and verified turn by turn. This
// file wires the buttons; chain-connect.js, chain-model.js and chain-run.js
// hold what they do.
import { createCurtaClient, formatSol, sendBack } from '@curta/sdk';
import { createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { chain, connectCluster, connectTyped, kept, showBalance, showSigner } from './chain-connect.js';
import { loadModel, readyToQuote, upload } from './chain-model.js';
import { generate, resume, showQuote, stageWords, stopRun } from './chain-run.js';
import { $, setStatus } from './dom.js';
import { airdrop } from './cluster.js';
import { indexedDbJournal } from './journal-idb.js';
import { endSession, savedSession, sessionSigner } from './session-key.js';
import { chainOf, connectWallet, walletSigner, watchWallets } from './wallet.js';

/** @typedef {import('./chain-connect.js').Page} Page */

/** What a local key is given on localnet. */
const LOCAL_AIRDROP = 20_000_000_000n;

/** @param {Page} page */
export function setupChain(page) {
  chain.core = page.corePromise;
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
    if (stopRun()) {
      setStatus('Stopping: no more turns are sent; the run is closed and what is left sent back…');
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
