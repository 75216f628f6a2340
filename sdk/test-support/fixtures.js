// Shared by the tests (kept out of test/, where `node --test` would run it
// as a test file): the model files, the module, the native CLI, and the
// golden receipts when there are any.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadCore } from '../src/index.js';

/** The workspace root: the folder above sdk/. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `$CURTA_MODELS`, else the `models/` folder `scripts/fetch-models.sh` fills. */
export function modelsDir() {
  return process.env.CURTA_MODELS ?? join(REPO_ROOT, 'models');
}

/** @param {string} name */
export function modelFile(name) {
  const path = join(modelsDir(), name);
  if (!existsSync(path)) throw new Error(`${path} is missing (set CURTA_MODELS or run scripts/fetch-models.sh)`);
  return new Uint8Array(readFileSync(path));
}

/** The module `make build-wasm` writes, or `$CURTA_WASM`. */
export const WASM_PATH = process.env.CURTA_WASM ?? join(REPO_ROOT, 'target/wasm/curta_core.wasm');

let corePromise;
/** One module instance for a test file. */
export function core() {
  if (!existsSync(WASM_PATH)) throw new Error(`${WASM_PATH} is missing: run \`make build-wasm\``);
  corePromise ??= loadCore(new Uint8Array(readFileSync(WASM_PATH)));
  return corePromise;
}

/** The native CLI `make test-wasm` builds, or `$CURTA_CLI`. */
export const CLI_PATH = process.env.CURTA_CLI ?? join(REPO_ROOT, 'target/release/curta-core');

/**
 * Runs the native CLI.
 * @param {string[]} args
 * @returns {string} its standard output (a failure's error carries its `stderr`)
 */
export function cli(args) {
  if (!existsSync(CLI_PATH)) {
    throw new Error(
      `${CLI_PATH} is missing: run \`make test-wasm\`, or ` +
        '`cargo build --release -p curta-core --features std --bin curta-core`',
    );
  }
  return execFileSync(CLI_PATH, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
}

const scratch = mkdtempSync(join(tmpdir(), 'curta-sdk-test-'));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

/** A path in this test process's scratch folder. @param {string} name */
export const scratchPath = (name) => join(scratch, name);

const converted = new Map();
/**
 * The native converter's artifact for a checkpoint and tokenizer, written
 * by the CLI into the scratch folder (`--charges` when a table is named).
 * @param {string} checkpointPath
 * @param {string} tokenizerPath
 * @param {'specification' | 'measured'} [charges] the CLI's default, the specification's, when left out
 */
export function nativeArtifact(checkpointPath, tokenizerPath, charges) {
  const key = `${checkpointPath}\n${tokenizerPath}\n${charges ?? ''}`;
  if (!converted.has(key)) {
    const out = scratchPath(`native-${converted.size}.curta`);
    cli(['convert', checkpointPath, tokenizerPath, '-o', out, ...(charges ? ['--charges', charges] : [])]);
    converted.set(key, new Uint8Array(readFileSync(out)));
  }
  return converted.get(key);
}

/** stories260K converted natively with the measured charge table (`--charges measured`). */
export function stories260KMeasured() {
  return nativeArtifact(join(modelsDir(), 'stories260K.bin'), join(modelsDir(), 'tok512.bin'), 'measured');
}

/** stories260K converted natively, the artifact every run test uses. */
export function stories260K() {
  return nativeArtifact(join(modelsDir(), 'stories260K.bin'), join(modelsDir(), 'tok512.bin'));
}

/**
 * An artifact's bytes as a file in the scratch folder, for the CLI.
 * @param {Uint8Array} artifact
 */
export function artifactPath(artifact) {
  const path = scratchPath(`${sha256(artifact).slice(0, 16)}.curta`);
  if (!existsSync(path)) writeFileSync(path, artifact);
  return path;
}

/**
 * A native run's JSON: prompt_tokens, tokens, text, turns, state_sha256.
 * @param {Uint8Array} artifact
 * @param {{ prompt: string, maxTokens: number, temperatureQ16?: number, seed?: bigint | number }} run
 */
export function nativeRun(artifact, run) {
  const args = ['run', artifactPath(artifact), '--prompt', run.prompt, '--max-tokens', String(run.maxTokens), '--json'];
  args.push('--temperature-q16', String(run.temperatureQ16 ?? 0), '--seed', String(run.seed ?? 0));
  return JSON.parse(cli(args));
}

/** @param {Uint8Array} bytes */
export const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * The models whose golden runs the SDK replays, and their files; a name
 * ending in `+measured` is the model converted with the measured charge
 * table (golden/manifest.json's "about").
 */
export const GOLDEN_MODELS = {
  stories260K: ['stories260K.bin', 'tok512.bin'],
  aidreams260K: ['aidreams260K.bin', 'tok512-aidreams.bin'],
  'stories260K+measured': ['stories260K.bin', 'tok512.bin'],
};

/**
 * The charge table a model the harness names is converted with.
 * @param {string} model
 * @returns {'specification' | 'measured'}
 */
export const chargesOfModel = (model) => (model.endsWith('+measured') ? 'measured' : 'specification');

/**
 * The native artifact of a model the harness names.
 * @param {keyof typeof GOLDEN_MODELS} model
 */
export function modelArtifact(model) {
  const [checkpoint, tokenizer] = GOLDEN_MODELS[model];
  const charges = chargesOfModel(model);
  return nativeArtifact(join(modelsDir(), checkpoint), join(modelsDir(), tokenizer), charges === 'measured' ? charges : undefined);
}

const moduleConverted = new Map();
/**
 * A model the harness names, converted inside the module (`core.convert`
 * with its charge table).
 * @param {keyof typeof GOLDEN_MODELS} model
 */
export async function moduleArtifact(model) {
  if (!moduleConverted.has(model)) {
    const [checkpoint, tokenizer] = GOLDEN_MODELS[model];
    const c = await core();
    moduleConverted.set(model, c.convert(modelFile(checkpoint), modelFile(tokenizer), { charges: chargesOfModel(model) }));
  }
  return moduleConverted.get(model);
}

/**
 * A golden receipt (`golden/receipts/NAME.txt`, which the harness's
 * `make golden` writes): per turn the state's SHA-256 (turn 0 is the state
 * init_state writes), the tokens generated so far, the planner's charge
 * and the program's compute units, then the tokens and the text.
 * @param {string} text
 */
export function parseReceipt(text) {
  const receipt = { name: '', model: '', artifactSha256: '', turns: [], tokens: [], text: new Uint8Array(0) };
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const [key, ...rest] = line.split(' ');
    if (key === 'run') receipt.name = rest.join(' ');
    else if (key === 'model') [receipt.model, receipt.artifactSha256] = rest;
    else if (key === 'tokens') receipt.tokens = rest.filter(Boolean).map(Number);
    else if (key === 'text') continue;
    else if (key === 'text_hex') receipt.text = new Uint8Array(Buffer.from(rest.join(''), 'hex'));
    else if (/^\d+$/.test(key) && rest.length === 4) {
      receipt.turns.push({
        turn: Number(key),
        stateSha256: rest[0],
        generated: Number(rest[1]),
        plannerCu: Number(rest[2]),
        programCu: Number(rest[3]),
      });
    } else throw new Error(`receipt: bad line ${JSON.stringify(line)}`);
  }
  return receipt;
}

/**
 * The runs of `golden/manifest.json` (in `$CURTA_GOLDEN` when set) on the
 * models above, each with its receipt (a missing one is an error). A run
 * whose model files this machine lacks is left out, and named in `skipped`.
 * @param {string[]} [skipped] receives a line per run left out
 */
export function goldenRuns(skipped = []) {
  const golden = process.env.CURTA_GOLDEN ?? join(REPO_ROOT, 'golden');
  const path = join(golden, 'manifest.json');
  if (!existsSync(path)) throw new Error(`${path} is missing`);
  const manifest = JSON.parse(readFileSync(path, 'utf8'));
  const runs = [];
  for (const r of manifest.runs ?? []) {
    if (!(r.model in GOLDEN_MODELS)) continue;
    const missing = GOLDEN_MODELS[r.model].find((f) => !existsSync(join(modelsDir(), f)));
    if (missing) {
      skipped.push(`${r.name}: ${missing} is not in ${modelsDir()} and scripts/fetch-models.sh could not fetch it`);
      continue;
    }
    const receiptPath = join(golden, 'receipts', `${r.name}.txt`);
    if (!existsSync(receiptPath)) throw new Error(`${receiptPath} is missing: run make golden`);
    const prompt =
      typeof r.prompt === 'string'
        ? new TextEncoder().encode(r.prompt)
        : new Uint8Array(readFileSync(join(golden, r.prompt_file)));
    runs.push({
      name: r.name,
      model: r.model,
      prompt,
      maxTokens: r.max_tokens,
      temperatureQ16: r.temperature_q16,
      seed: BigInt(r.seed),
      receipt: parseReceipt(readFileSync(receiptPath, 'utf8')),
    });
  }
  return runs;
}
