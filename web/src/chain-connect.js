// The page's connection to a cluster: what it holds about the chain (the
// cluster, the paying signer, the model), the cluster and program typed,
// the signer's balance, and chain clients that read.
import { address, createKeyPairSignerFromPrivateKeyBytes } from '@solana/kit';
import { DEFAULT_ALLOWANCE, createCurtaClient, fetchModel, formatSol } from '@curta/sdk';
import { $, setStatus } from './dom.js';
import { checkCluster } from './cluster.js';
import { indexedDbJournal } from './journal-idb.js';
import { getItem, setItem } from './store.js';
import { notAnAddress } from './words.js';

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
 *   core: Promise<import('@curta/sdk').CoreWasm> | null,
 * }}
 */
export const chain = { cluster: null, signer: null, signerName: '', model: null, allowance: DEFAULT_ALLOWANCE, artifact: null, programFound: '', core: null };

/**
 * 32 random bytes kept in IndexedDB under `key` (made on first use).
 * @param {string} key
 * @returns {Promise<Uint8Array>}
 */
export async function kept(key) {
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
export async function connectTyped() {
  const typed = /** @type {HTMLInputElement} */ ($('program-id')).value.trim();
  if (typed) await programId();
  const cluster = await connectCluster();
  if (typed) await checkProgram(cluster, typed);
  else $('cluster-info').textContent = `Connected: ${cluster.url}, Solana ${cluster.version}, slot ${cluster.slot}; type the curta program's address on this cluster.`;
  return cluster;
}

/** The program address typed, checked for form. */
export async function programId() {
  const id = /** @type {HTMLInputElement} */ ($('program-id')).value.trim();
  if (!id) throw new Error("Type the curta program's address on this cluster.");
  const refused = notAnAddress(/** @type {import('@curta/sdk').CoreWasm} */ (await chain.core), 'The curta program address', id, ' Nothing was connected.');
  if (refused) throw refused;
  return id;
}

/**
 * That a program is at `id` on the cluster (read once per cluster and address).
 * @param {NonNullable<typeof chain.cluster>} cluster
 * @param {string} id
 */
export async function checkProgram(cluster, id) {
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

export async function showSigner() {
  await showBalance();
  setStatus('Wallet ready.');
}

/** When the balance line was last read, for `showBalanceSometimes`. */
let balanceRead = 0;

/** Reads started, so that an older answer arriving late does not replace a newer one. */
let balanceReads = 0;

/** Reads the paying key's balance again, after a transaction it paid. */
export async function showBalance() {
  const cluster = chain.cluster;
  const signer = chain.signer;
  if (!cluster || !signer) return;
  balanceRead = performance.now();
  const read = ++balanceReads;
  const { value } = await cluster.rpc.getBalance(signer.address, { commitment: 'confirmed' }).send();
  if (chain.signer === signer && read === balanceReads) $('wallet-info').textContent = `Paying with ${chain.signerName}: ${formatSol(value)}.`;
}

/** `showBalance` at most once a second, never waited for: while an upload's transactions land. */
export function showBalanceSometimes() {
  if (performance.now() - balanceRead >= 1000) showBalance().catch(() => {});
}

/**
 * A chain client for reading (its payer signs nothing).
 * @param {Page} page
 */
export async function reader(page) {
  const cluster = await connectCluster();
  const core = await page.corePromise;
  const payer = chain.signer ?? (await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32)));
  const id = await checkProgram(cluster, await programId());
  // With the page's journal: what an earlier load left in flight lands (or
  // expires) before anything is read, so what is read is what will stay.
  return createCurtaClient({ rpc: cluster.rpc, programId: id, payer, core, journal: indexedDbJournal() });
}
