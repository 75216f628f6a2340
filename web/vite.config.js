// The page is plain ES modules; Vite bundles them with the SDK and its
// WebAssembly module (the SDK finds it through `new URL(..., import.meta.url)`).
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: { outDir: '../target/web/dist', emptyOutDir: true, target: 'es2022' },
  worker: { format: 'es' },
});
