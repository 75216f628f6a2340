// The test's side of the test wallet: the key, held here in Node, and the
// script injected into the page before it loads (fixture/test-wallet.js,
// bundled with Vite so it registers through @wallet-standard/wallet).
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import {
  generateKeyPairSigner,
  getAddressEncoder,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
} from '@solana/kit';

const OUT = fileURLToPath(new URL('../../target/web/test-wallet/', import.meta.url));

/** Bundles the injected script once; returns its path. */
export async function buildWalletScript() {
  await mkdir(OUT, { recursive: true });
  await build({
    configFile: false,
    logLevel: 'warn',
    build: {
      outDir: OUT,
      emptyOutDir: true,
      minify: false,
      lib: {
        entry: fileURLToPath(new URL('./fixture/test-wallet.js', import.meta.url)),
        formats: ['iife'],
        name: 'CurtaTestWallet',
        fileName: () => 'test-wallet.js',
      },
    },
  });
  return `${OUT}test-wallet.js`;
}

/**
 * A wallet key for the page: `install(context)` injects the wallet into every
 * page of the context; `refuse` makes the next signatures fail as a person's
 * "Reject" would; `signed` counts the transactions signed.
 */
export async function testWallet() {
  const signer = await generateKeyPairSigner();
  const script = await buildWalletScript();
  const state = { refuse: false, signed: 0 };
  return {
    signer,
    address: signer.address,
    state,
    /** @param {import('playwright-core').BrowserContext} context */
    async install(context) {
      const publicKey = Array.from(getAddressEncoder().encode(signer.address));
      await context.exposeBinding('__curtaTestWalletSign', async (_source, wireBase64) => {
        if (state.refuse) throw new Error('User rejected the request.');
        const tx = getTransactionDecoder().decode(getBase64Encoder().encode(wireBase64));
        const [signatures] = await signer.signTransactions([tx]);
        state.signed += 1;
        const signed = { ...tx, signatures: { ...tx.signatures, ...signatures } };
        return getBase64Decoder().decode(getTransactionEncoder().encode(signed));
      });
      await context.addInitScript(`window.__curtaTestWalletAccount = ${JSON.stringify({ address: signer.address, publicKey })};`);
      await context.addInitScript({ path: script });
    },
  };
}
