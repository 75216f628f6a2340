// @ts-check
// Uploading a model: its account, a weight account bound to each section,
// every section written in parallel chunks, each sealed, then the model.
//
// Resumable by construction: the model's and weight accounts' keys are
// derived (keys.js), and each step is the client core's answer to what the
// chain holds (the module's upload_next; core/src/client/upload.rs, which
// the CLI runs natively): unbound sections are bound, only chunks whose
// bytes on chain differ from the artifact's are written, sealed sections
// are checked against the artifact's digests and the others sealed. This
// file does the I/O: reading the accounts, sending each step.

import { getCreateAccountInstruction } from '@solana-program/system';
import { getSetComputeUnitLimitInstruction } from '@solana-program/compute-budget';

import { ARTIFACT_MAGIC, chargesFlag, chargesOf, readFlags, readSectionTable } from '../format.js';
import { fromBase64, sha256 } from './bytes.js';
import { requireCore, requireSecret } from './client.js';
import { CONFIG_LEN, decodeModelAccount } from './accounts.js';
import { fetchConfig, fetchRawAccount, fetchWeight } from './fetch.js';
import * as ix from './instructions.js';
import { configSigner, modelSigner, weightSigner } from './keys.js';
import { rentFor } from './rent.js';
import { addLanded, addSummary, emptySummary, lamportsPerSignature, sendAll, sendAndConfirm, settle } from './transactions.js';

/**
 * A section's digest, as seal_section checks it: the module's (the core's
 * `section_digest`; docs/program.md, "Section digests").
 * @param {import('../core.js').CoreWasm} core
 * @param {Uint8Array} bytes
 */
export function sectionDigest(core, bytes) {
  return core.sectionDigest(bytes);
}

/**
 * An artifact's parts as an upload needs them.
 * @param {Uint8Array} artifact
 */
export async function describeArtifact(artifact) {
  const table = readSectionTable(artifact);
  const sections = table.sections.map((s) => artifact.subarray(s.offset, s.offset + s.length));
  const flags = readFlags(artifact);
  return {
    sha256: await sha256(artifact),
    configBytes: table.config,
    // The header's flags (format.md), which init_model records: bit 0, the
    // classifier is the embedding; bit 1, the measured charge table.
    flags,
    charges: chargesOf(flags),
    sections,
  };
}

/**
 * Progress of an upload.
 * @typedef {object} UploadProgress
 * @property {'model' | 'bind' | 'write' | 'seal' | 'done'} stage
 * @property {number} done units done in this stage (sections, or bytes when writing)
 * @property {number} total
 */

/**
 * What an upload did.
 * @typedef {object} Uploaded
 * @property {string} model the model's address
 * @property {string} config
 * @property {import('../format.js').ChargeTable} charges the table the model's turns are planned with
 * @property {Uint8Array} artifact the artifact uploaded (the checkpoint's conversion, when one was given): what `crankRun` and `quoteRun` take as `artifact`
 * @property {boolean} already whether the model was already sealed with these weights
 * @property {number} bytesWritten
 * @property {number} chunksWritten
 * @property {import('./transactions.js').Summary} summary transactions and fees
 * @property {number} seconds
 */

/**
 * What to upload, and how.
 * @typedef {object} UploadOptions
 * @property {string} config the config account the model is bound to
 * @property {Uint8Array} [tokenizer] the llama2.c tokenizer: the bytes given are then a checkpoint, converted in the module
 * @property {import('../format.js').ChargeTable} [charges] the table the model's turns are planned with, fixed when
 *   its artifact is made: a checkpoint is converted with it (`specification` by default); an artifact made with another is refused
 * @property {bigint | number} [royalty] lamports per generated token, 0 by default
 * @property {number} [inFlight] transactions in flight, 256 by default
 * @property {(p: UploadProgress) => void} [onProgress]
 */

/**
 * The artifact an upload sends: `bytes` themselves, or with a tokenizer
 * the module's conversion of the checkpoint `bytes`, planned with `charges`
 * (`curta model upload CK --tokenizer T --charges TABLE`). An artifact
 * planned with another table than `charges` asks for is refused, not
 * rewritten: its table is in section zero, which its digest seals.
 * @param {import('./client.js').CurtaClient} client
 * @param {Uint8Array} bytes
 * @param {{ tokenizer?: Uint8Array, charges?: import('../format.js').ChargeTable }} options
 */
export function artifactToUpload(client, bytes, options) {
  const isArtifact = bytes.length >= 8 && String.fromCharCode(...bytes.subarray(0, 8)) === ARTIFACT_MAGIC;
  if (options.tokenizer) {
    if (isArtifact) throw new Error(`the bytes given with a tokenizer are already a curta artifact (they open with ${ARTIFACT_MAGIC}): upload it without the tokenizer`);
    return requireCore(client, 'uploadModel with a tokenizer').convert(bytes, options.tokenizer, { charges: options.charges });
  }
  if (!isArtifact) throw new RangeError(`not a Curta artifact (it does not open with ${ARTIFACT_MAGIC}); to upload a llama2.c checkpoint give its tokenizer too`);
  if (options.charges !== undefined) {
    chargesFlag(options.charges); // a name that is no table, in words
    const charges = chargesOf(readFlags(bytes));
    if (charges !== options.charges) {
      throw new Error(
        `the artifact is planned with the ${charges} charge table, not the ${options.charges} one: convert its checkpoint ` +
          `again with charges '${options.charges}', or upload the checkpoint with its tokenizer and charges '${options.charges}'`,
      );
    }
  }
  return bytes;
}

/**
 * What an upload from nothing will cost, before anything is sent.
 * @typedef {object} UploadQuote
 * @property {bigint} rent lamports the model's account and its weight accounts will hold (`model close` returns them)
 * @property {number} accounts the model's account and a weight account per section
 * @property {number} transactions every transaction of the upload, when every chunk is written
 * @property {number} writes of them, the chunk writes
 * @property {bigint} fees their fees, at the cluster's fee per signature (zero chunks are not written, so at most this)
 * @property {bigint} configRent the rent of the signer's config account, when it has none yet (0 when it has)
 * @property {bigint} configFees the fee of creating it (0 when it has one)
 */

/**
 * Quotes an upload from nothing with the client core's estimate (the
 * module's `uploadEstimate`, which `curta model upload` checks the balance
 * against): the rent of the model's account and of a weight account per
 * section, and the fee of every transaction; with no `config`, the
 * signer's config too when it has none.
 * @param {import('./client.js').CurtaClient} client
 * @param {Uint8Array} bytes as `uploadModel` takes them
 * @param {{ config?: string, tokenizer?: Uint8Array, charges?: import('../format.js').ChargeTable }} [options]
 * @returns {Promise<UploadQuote>}
 */
export async function quoteUpload(client, bytes, options = {}) {
  const core = requireCore(client, 'quoteUpload');
  const artifact = artifactToUpload(client, bytes, options);
  const estimate = core.uploadEstimate(artifact, core.writeChunk('legacy'));
  const [rents, perSignature] = await Promise.all([Promise.all(estimate.accountLengths.map((n) => rentFor(client, n))), lamportsPerSignature(client)]);
  let configRent = 0n;
  let configFees = 0n;
  if (!options.config) {
    const key = await configSigner(core, requireSecret(client, 'quoteUpload'), client.programId);
    if (!(await fetchRawAccount(client, key.address))) {
      configRent = await rentFor(client, CONFIG_LEN);
      configFees = 2n * perSignature;
    }
  }
  return {
    rent: rents.reduce((a, b) => a + b, 0n),
    accounts: estimate.accountLengths.length,
    transactions: estimate.transactions,
    writes: estimate.writes,
    fees: BigInt(estimate.signatures) * perSignature,
    configRent,
    configFees,
  };
}

/**
 * Uploads an artifact as a model bound to `config`, owned by the payer,
 * with `royalty` lamports per generated token; resumes an earlier upload
 * of the same artifact, config and royalty (by this client, or the `curta`
 * CLI with the same keypair).
 * @param {import('./client.js').CurtaClient} client
 * @param {Uint8Array} bytes the `.curta` file, or with `options.tokenizer` a llama2.c checkpoint (converted in the module with `options.charges`)
 * @param {UploadOptions} options
 * @returns {Promise<Uploaded>}
 */
export async function uploadModel(client, bytes, options) {
  const started = Date.now();
  const secret = requireSecret(client, 'uploadModel');
  const core = requireCore(client, 'uploadModel');
  const artifact = artifactToUpload(client, bytes, options);
  const royalty = BigInt(options.royalty ?? 0);
  const progress = options.onProgress ?? (() => {});
  const program = client.programId;
  const payer = client.payer;
  await settle(client);
  await fetchConfig(client, options.config);
  const art = await describeArtifact(artifact);
  const modelKey = await modelSigner(core, secret, { programId: program, config: options.config, artifactSha256: art.sha256, royalty });
  const model = modelKey.address;
  const summary = emptySummary();
  /** @type {Uploaded} */
  const out = { model, config: options.config, charges: art.charges, artifact, already: false, bytesWritten: 0, chunksWritten: 0, summary, seconds: 0 };

  // The most bytes a write carries in this client's legacy messages.
  const chunk = core.writeChunk('legacy');
  const setup = { config: options.config, owner: payer.address, model, chunk };
  let acted = false;
  let writeRounds = 0;
  for (;;) {
    const found = await fetchRawAccount(client, model);
    if (found && found.owner !== program) throw new Error(`${model} (this model's address) is held by ${found.owner}, not the curta program`);
    // The core checks the rest; only the weight accounts' addresses are read here.
    const info = found ? decodeModelAccount(found.data, `model ${model}`) : null;
    const bound = info ? info.sections.map((s) => s.weight) : [];
    const weights =
      bound.length > 0 && bound.every((w) => w) ? await Promise.all(bound.map(async (w) => (await fetchRawAccount(client, /** @type {string} */ (w)))?.data ?? new Uint8Array(0))) : [];
    const step = core.uploadNext(artifact, found?.data ?? null, weights, setup);
    if (step.step === 'done') break;
    acted = true;
    if (step.step === 'createModel') {
      progress({ stage: 'model', done: 0, total: 1 });
      const l = await sendAndConfirm(client, 'creating the model', [
        getCreateAccountInstruction({ payer, newAccount: modelKey, lamports: await rentFor(client, step.length), space: step.length, programAddress: program }),
        ix.initModel(program, {
          config: /** @type {any} */ (options.config),
          model: modelKey,
          owner: payer,
          royalty,
          configBytes: art.configBytes,
          flags: art.flags,
          zeroLength: BigInt(art.sections[0].length),
        }),
      ]);
      addLanded(summary, l.slot, l.fee);
      progress({ stage: 'model', done: 1, total: 1 });
    } else if (step.step === 'bind') {
      /** @type {import('./transactions.js').Job[]} */
      const binds = [];
      for (const { section: i, length: space } of step.sections) {
        const w = await weightSigner(core, secret, model, i);
        binds.push({
          what: `binding a weight account to section ${i}`,
          units: 1,
          instructions: [
            getCreateAccountInstruction({ payer, newAccount: w, lamports: await rentFor(client, space), space, programAddress: program }),
            ix.bindWeight(program, { model, weight: w, owner: payer, section: i }),
          ],
        });
      }
      let done = 0;
      progress({ stage: 'bind', done, total: binds.length });
      addSummary(summary, await sendAll(client, binds, { inFlight: options.inFlight, onLanded: () => progress({ stage: 'bind', done: ++done, total: binds.length }) }));
    } else if (step.step === 'write') {
      if (writeRounds === 3) throw new Error(`${step.chunks.length} chunk(s) still differ after writing them three times`);
      writeRounds += 1;
      /** @type {import('./transactions.js').Job[]} */
      const jobs = step.chunks.map((/** @type {{ section: number, offset: number, length: number }} */ c) => ({
        what: `writing section ${c.section} at offset ${c.offset}`,
        units: c.length,
        instructions: [
          ix.write(program, {
            model,
            weight: /** @type {any} */ (bound[c.section]),
            owner: payer,
            offset: c.offset,
            bytes: art.sections[c.section].subarray(c.offset, c.offset + c.length),
          }),
        ],
      }));
      const total = jobs.reduce((n, j) => n + j.units, 0);
      let done = 0;
      progress({ stage: 'write', done, total });
      const s = await sendAll(client, jobs, {
        inFlight: options.inFlight,
        onLanded: (j) => progress({ stage: 'write', done: (done += j.units), total }),
      });
      addSummary(summary, s);
      out.bytesWritten += total;
      out.chunksWritten += jobs.length;
    } else if (step.step === 'seal') {
      // They lock different accounts: all at once.
      let sealedNow = 0;
      const total = step.sections.length + 1;
      progress({ stage: 'seal', done: 0, total });
      const seals = await Promise.all(
        step.sections.map(async (/** @type {{ section: number, cuLimits: number[], digest: string }} */ s) => {
          const sealed = await sealSection(client, model, /** @type {string} */ (bound[s.section]), s.section, s.cuLimits, fromBase64(s.digest));
          progress({ stage: 'seal', done: ++sealedNow, total });
          return sealed;
        }),
      );
      for (const s of seals) addSummary(summary, s);
    } else if (step.step === 'sealModel') {
      const l = await sendAndConfirm(client, 'sealing the model', [ix.sealModel(program, { model, sectionZero: /** @type {any} */ (bound[0]), owner: payer })]);
      addLanded(summary, l.slot, l.fee);
    } else {
      throw new Error(`the module answered an unknown upload step ${JSON.stringify(step)}`);
    }
  }
  out.already = !acted;
  progress({ stage: 'done', done: 1, total: 1 });
  out.seconds = (Date.now() - started) / 1000;
  return out;
}

/**
 * Sends seal_section until the section is sealed: one call per limit the
 * module gives (each one unit more, so two calls are never the same
 * transaction).
 * @param {import('./client.js').CurtaClient} client
 * @param {string} model
 * @param {string} weight
 * @param {number} i
 * @param {number[]} cuLimits
 * @param {Uint8Array} digest
 */
async function sealSection(client, model, weight, i, cuLimits, digest) {
  const summary = emptySummary();
  for (const units of cuLimits) {
    if ((await fetchWeight(client, weight)).sealed) return summary;
    const l = await sendAndConfirm(client, `sealing section ${i}`, [
      getSetComputeUnitLimitInstruction({ units }),
      ix.sealSection(client.programId, { model: /** @type {any} */ (model), weight: /** @type {any} */ (weight), owner: client.payer, digest }),
    ]);
    addLanded(summary, l.slot, l.fee);
  }
  throw new Error(`section ${i} is not sealed after ${cuLimits.length} seal_section calls`);
}

