// The page is plain ES modules; Vite bundles them with the SDK and its
// WebAssembly module (the SDK finds it through `new URL(..., import.meta.url)`).
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: { outDir: '../target/web/dist', emptyOutDir: true, target: 'es2022' },
  worker: { format: 'es' },
  // The page and the SDK (a linked folder with its own node_modules) share
  // one copy of kit, so its signers and codecs are the same objects.
  resolve: { dedupe: ['@solana/kit', '@solana-program/system', '@solana-program/compute-budget'] },
});
