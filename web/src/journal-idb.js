// The chain client's journal of transactions in flight (sdk chain/journal.js)
// kept in IndexedDB: what an earlier load of the page sent and may still
// land is settled before this one reads the chain, so a reload mid-run pays
// nothing twice.
import { getItem, setItem } from './store.js';

const KEY = 'inflight';
/** This load's mark; entries of other marks were left by earlier loads. */
const LOAD = `${Date.now()}-${Math.random().toString(36).slice(2)}`;

/** Read-modify-writes one after another, for every client of the page. */
let queue = Promise.resolve();
/** @param {() => Promise<unknown>} f @returns {Promise<void>} */
function serially(f) {
  const next = queue.then(f, f);
  queue = next.then(() => {}, () => {});
  return next.then(() => {});
}

/** @returns {import('@curta/sdk').Journal} */
export function indexedDbJournal() {
  /** @returns {Promise<Array<import('@curta/sdk').JournalEntry & { load: string }>>} */
  const all = async () => (await getItem(KEY)) ?? [];
  return {
    record: (entries) => serially(async () => setItem(KEY, [...(await all()), ...entries.map((e) => ({ ...e, load: LOAD }))])),
    left: async () => (await all()).filter((e) => e.load !== LOAD).map(({ load, ...e }) => e),
    settled: () => serially(async () => setItem(KEY, (await all()).filter((e) => e.load === LOAD))),
  };
}
