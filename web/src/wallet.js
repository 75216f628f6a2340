// Wallets through the Wallet Standard: the wallets the page can see
// (`getWallets()`), connecting one, and a @solana/kit signer over its
// `solana:signTransaction` feature, which the funding transaction uses.
import { getWallets } from '@wallet-standard/app';
import { getTransactionDecoder, getTransactionEncoder } from '@solana/kit';

const SIGN = 'solana:signTransaction';
const CONNECT = 'standard:connect';

/** @typedef {import('@wallet-standard/base').Wallet} Wallet */
/** @typedef {import('@wallet-standard/base').WalletAccount} WalletAccount */

/** Wallets that can connect and sign a Solana transaction. */
export function solanaWallets() {
  return getWallets()
    .get()
    .filter((w) => CONNECT in w.features && SIGN in w.features && w.chains.some((c) => c.startsWith('solana:')));
}

/**
 * Calls `onChange` now and whenever a wallet registers or unregisters.
 * @param {(wallets: readonly Wallet[]) => void} onChange
 */
export function watchWallets(onChange) {
  const { on } = getWallets();
  on('register', () => onChange(solanaWallets()));
  on('unregister', () => onChange(solanaWallets()));
  onChange(solanaWallets());
}

/**
 * The Wallet Standard chain of a cluster URL: localnet for a loopback RPC.
 * @param {string} url
 */
export function chainOf(url) {
  const host = new URL(url).hostname;
  if (host === '127.0.0.1' || host === 'localhost' || host === '[::1]') return 'solana:localnet';
  if (host.includes('devnet')) return 'solana:devnet';
  if (host.includes('testnet')) return 'solana:testnet';
  return 'solana:mainnet';
}

/**
 * Asks the wallet for an account; a refusal is an error in words.
 * @param {Wallet} wallet
 * @returns {Promise<WalletAccount>}
 */
export async function connectWallet(wallet) {
  const feature = /** @type {import('@wallet-standard/features').StandardConnectFeature} */ (wallet.features)[CONNECT];
  let accounts;
  try {
    ({ accounts } = await feature.connect());
  } catch (e) {
    throw new Error(`The wallet ${wallet.name} refused to connect: ${/** @type {Error} */ (e).message}`);
  }
  const account = accounts.find((a) => a.features.includes(SIGN));
  if (!account) throw new Error(`The wallet ${wallet.name} gave no account that can sign Solana transactions.`);
  return account;
}

/**
 * A kit TransactionModifyingSigner that asks the wallet to sign. A wallet
 * that changes the message is refused: the page shows the person what it
 * will pay, and only that transaction is signed.
 * @param {Wallet} wallet
 * @param {WalletAccount} account
 * @param {string} chain
 * @returns {import('@solana/kit').TransactionModifyingSigner}
 */
export function walletSigner(wallet, account, chain) {
  const feature = /** @type {any} */ (wallet.features)[SIGN];
  const encoder = getTransactionEncoder();
  const decoder = getTransactionDecoder();
  return {
    address: /** @type {import('@solana/kit').Address} */ (account.address),
    async modifyAndSignTransactions(transactions) {
      const inputs = transactions.map((tx) => ({ account, chain, transaction: new Uint8Array(encoder.encode(tx)) }));
      let outputs;
      try {
        outputs = await feature.signTransaction(...inputs);
      } catch (e) {
        // Marked, so the caller knows nothing was sent.
        throw Object.assign(new Error(`The wallet ${wallet.name} refused to sign: ${/** @type {Error} */ (e).message}`), { refused: true });
      }
      return transactions.map((tx, i) => {
        const signed = decoder.decode(outputs[i].signedTransaction);
        if (!sameBytes(signed.messageBytes, tx.messageBytes)) {
          throw new Error(`The wallet ${wallet.name} changed the transaction it was asked to sign; nothing was sent.`);
        }
        const signature = signed.signatures[account.address];
        if (!signature) throw new Error(`The wallet ${wallet.name} returned the transaction without its signature.`);
        return /** @type {any} */ ({ ...tx, signatures: { ...tx.signatures, [account.address]: signature } });
      });
    },
  };
}

/** @param {Uint8Array} a @param {Uint8Array} b */
function sameBytes(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
