// A model on chain, in the page: read by address (with its config), or
// uploaded from the picked artifact; and the artifact its runs replay.
import { checkArtifact, createCurtaClient, fetchArtifact, fetchConfig, fetchModel, formatCount, formatSol, initConfig, quoteUpload, uploadModel } from '@curta/sdk';
import { chain, checkProgram, connectCluster, kept, programId, reader, showBalance, showBalanceSometimes } from './chain-connect.js';
import { $, setFacts, setProgress, setStatus, showTab } from './dom.js';
import { indexedDbJournal } from './journal-idb.js';
import { inWords, notAnAddress } from './words.js';

/** @typedef {import('./chain-connect.js').Page} Page */

/**
 * Reads a model from the chain and shows its config, royalty and shape.
 * @param {Page} page
 * @param {string} address
 */
export async function loadModel(page, address) {
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
export async function upload(page) {
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
export async function readyToQuote(page) {
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
