// A small key-value store in IndexedDB: what must survive a reload (the
// session key, the run it works on, the transactions it has in flight).

const DB = 'curta';
const STORE = 'kv';

/** @type {Promise<IDBDatabase> | null} */
let opened = null;

function db() {
  opened ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`IndexedDB did not open: ${req.error?.message}`));
  });
  return opened;
}

/**
 * @template T
 * @param {IDBTransactionMode} mode
 * @param {(store: IDBObjectStore) => IDBRequest<T>} op
 * @returns {Promise<T>}
 */
async function request(mode, op) {
  const tx = (await db()).transaction(STORE, mode);
  return new Promise((resolve, reject) => {
    const req = op(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(req.result);
    tx.onerror = () => reject(new Error(`IndexedDB: ${tx.error?.message}`));
  });
}

/** @param {string} key */
export const getItem = (key) => request('readonly', (s) => s.get(key));
/** @param {string} key @param {unknown} value */
export const setItem = (key, value) => request('readwrite', (s) => s.put(value, key));
/** @param {string} key */
export const removeItem = (key) => request('readwrite', (s) => s.delete(key));
