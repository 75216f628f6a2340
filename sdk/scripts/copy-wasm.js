// Copies the module `make build-wasm` wrote (target/wasm/curta_core.wasm in
// the workspace) into dist/, where the published package carries it.
import { copyFile, mkdir, stat } from 'node:fs/promises';

const from = new URL('../../target/wasm/curta_core.wasm', import.meta.url);
const to = new URL('../dist/curta_core.wasm', import.meta.url);
try {
  await stat(from);
} catch {
  console.error(`${from.pathname} is missing: run \`make build-wasm\` in the workspace first`);
  process.exit(1);
}
await mkdir(new URL('../dist/', import.meta.url), { recursive: true });
await copyFile(from, to);
console.log(`copied ${from.pathname} -> ${to.pathname} (${(await stat(to)).size} bytes)`);
