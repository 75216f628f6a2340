// The client generated from idl/curta.json (which `curta-core idl` writes
// from curta_core::protocol), in two steps:
//   render:  @codama/renderers-js writes TypeScript on @solana/kit into a
//            temporary folder (as the solana-program/* clients are made);
//   compile: the installed typescript compiles it into src/generated-js/
//            (ES modules and .d.ts types), and the relative imports get the
//            file names Node's ES module loader needs (`./accounts` ->
//            `./accounts/index.js`). Only the JavaScript is committed, so
//            Node 20 and bundlers import the client with no build step.
//
//   node scripts/generate.js            into src/generated-js/ (npm run generate)
//   node scripts/generate.js --out DIR  into DIR (the staleness test compares it)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const IDL = resolve(SDK, '../idl/curta.json');

/** Renders the IDL's TypeScript client into `tsDir` (emptied first). */
export async function render(tsDir) {
  const { createFromJson } = await import('codama');
  const { renderVisitor } = await import('@codama/renderers-js');
  const codama = createFromJson(readFileSync(IDL, 'utf8'));
  // @codama/nodes 1.11 leaves an empty struct's `fields` out, and
  // renderers-js 2.2 reads it (the empty struct of an instruction's extra
  // arguments): while rendering, a struct without fields reads as [].
  Object.defineProperty(Object.prototype, 'fields', {
    configurable: true,
    get() {
      return this.kind === 'structTypeNode' ? [] : undefined;
    },
  });
  try {
    await codama.accept(
      renderVisitor(dirname(tsDir), {
        generatedFolder: tsDir.slice(dirname(tsDir).length + 1),
        syncPackageJson: false,
        // Every import from @solana/kit (and its program-client-core
        // subpath): the package's one Solana dependency.
        kitImportStrategy: 'rootOnly',
      }),
    );
  } finally {
    delete Object.prototype.fields;
  }
}

/** Compiles `tsDir` into `jsDir` (emptied first) with the installed tsc. */
export function compile(tsDir, jsDir) {
  rmSync(jsDir, { recursive: true, force: true });
  const tsc = join(SDK, 'node_modules/typescript/bin/tsc');
  // prettier-ignore
  execFileSync(process.execPath, [tsc,
    '--rootDir', tsDir, '--outDir', jsDir,
    '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler',
    '--declaration', '--noCheck', '--skipLibCheck', '--newLine', 'lf',
    ...files(tsDir).filter((f) => f.endsWith('.ts')),
  ], { cwd: SDK, stdio: 'inherit' });
  for (const file of files(jsDir)) {
    writeFileSync(file, withFileNames(file, readFileSync(file, 'utf8')));
  }
}

/** Every file under `dir`, sorted. */
export function files(dir) {
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .sort();
}

/** `from "./x"` -> `./x.js` or `./x/index.js`, whichever exists beside `file`. */
function withFileNames(file, text) {
  return text.replace(/(from\s+|import\()(["'])(\.\.?\/[^"']*)\2/g, (all, lead, q, spec) => {
    if (spec.endsWith('.js')) return all;
    const base = resolve(dirname(file), spec);
    const named = existsSync(`${base}.js`) ? `${spec}.js` : `${spec}/index.js`;
    if (!existsSync(resolve(dirname(file), named))) {
      throw new Error(`${file}: the import ${spec} is neither ${spec}.js nor ${spec}/index.js`);
    }
    return `${lead}${q}${named}${q}`;
  });
}

/** Renders and compiles the client into `jsDir`. */
export async function generate(jsDir) {
  const work = mkdtempSync(join(tmpdir(), 'curta-generate-'));
  try {
    const tsDir = join(work, 'ts');
    await render(tsDir);
    compile(tsDir, jsDir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const jsDir = values.out ? resolve(values.out) : join(SDK, 'src/generated-js');
  await generate(jsDir);
  console.log(`generated ${files(jsDir).length} files in ${jsDir}`);
}
