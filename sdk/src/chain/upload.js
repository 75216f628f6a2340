// @ts-check
// Uploading a model: its account, a weight account bound to each section,
// every section written in parallel chunks, each sealed, then the model
// (client/src/upload.rs does the same).
//
// Resumable by construction: the model's and weight accounts' keys are
// derived (keys.js), and every step reads the chain first and does only
// what is missing: unbound sections are bound, only chunks whose bytes on
// chain differ from the artifact's are written (a fresh account is zero,
// so zero chunks are never sent), sealed sections are checked against the
// artifact's digests and the others sealed.

import { getCreateAccountInstruction } from '@solana-program/system';
import { getSetComputeUnitLimitInstruction } from '@solana-program/compute-budget';

import { ARTIFACT_MAGIC, CONFIG_LEN as CONFIG_BYTES, chargesFlag, chargesOf, readFlags, readSectionTable } from '../format.js';
import { MODEL_HEADER_LEN, MODEL_SECTION_LEN, MODEL_STATUS, WEIGHT_HEADER_LEN } from './accounts.js';
import { equalBytes, hex, sha256 } from './bytes.js';
import { requireCore, requireSecret } from './client.js';
import { fetchConfig, fetchModel, fetchRawAccount, fetchWeight } from './fetch.js';
import * as ix from './instructions.js';
import { modelSigner, weightSigner } from './keys.js';
import { rentFor } from './rent.js';
import { addLanded, addSummary, emptySummary, mostThatFit, sendAll, sendAndConfirm, settle } from './transactions.js';

/** Bytes hashed per link of a section digest's chain (1 MiB). */
export const DIGEST_CHUNK = 1 << 20;
/** Bytes one seal_section call hashes (docs/program.md: up to 2 MiB). */
export const SEAL_BYTES_PER_CALL = 2 << 20;
/** Compute units a seal_section call asks for: two 1 MiB chunks at about 524,000 each. */
export const SEAL_CU = 1_100_000;

/**
 * A section's digest, as seal_section checks it: h = sha256(h || chunk)
 * over its 1 MiB chunks from 32 zero bytes (docs/program.md, "Section digests").
 * @param {Uint8Array} bytes
 */
export async function sectionDigest(bytes) {
  let h = new Uint8Array(32);
  for (let at = 0; at < bytes.length; at += DIGEST_CHUNK) h = await sha256(h, bytes.subarray(at, at + DIGEST_CHUNK));
  return h;
}

/**
 * The chunks of `data` (`chunk` bytes each, the last possibly short) that
 * `held` does not hold at the same offset: what an interrupted upload still writes.
 * @param {Uint8Array} data
 * @param {Uint8Array} held
 * @param {number} chunk
 * @returns {{ offset: number, bytes: Uint8Array }[]}
 */
export function missingChunks(data, held, chunk) {
  const out = [];
  for (let offset = 0; offset < data.length; offset += chunk) {
    const bytes = data.subarray(offset, offset + chunk);
    if (offset + bytes.length > held.length || !equalBytes(bytes, held.subarray(offset, offset + bytes.length))) {
      out.push({ offset, bytes });
    }
  }
  return out;
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
    digests: await Promise.all(sections.map(sectionDigest)),
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
  const count = art.sections.length;
  const modelKey = await modelSigner(core, secret, { programId: program, config: options.config, artifactSha256: art.sha256, royalty });
  const model = modelKey.address;
  const summary = emptySummary();
  /** @type {Uploaded} */
  const out = { model, config: options.config, charges: art.charges, artifact, already: false, bytesWritten: 0, chunksWritten: 0, summary, seconds: 0 };

  progress({ stage: 'model', done: 0, total: 1 });
  if (!(await fetchRawAccount(client, model))) {
    const space = MODEL_HEADER_LEN + MODEL_SECTION_LEN * count;
    const l = await sendAndConfirm(client, 'creating the model', [
      getCreateAccountInstruction({ payer, newAccount: modelKey, lamports: await rentFor(client, space), space, programAddress: program }),
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
  }
  let info = await fetchModel(client, model);
  checkModel(info, art, options.config, payer.address);
  progress({ stage: 'model', done: 1, total: 1 });
  if (info.status === MODEL_STATUS.sealed) {
    out.already = true;
    progress({ stage: 'done', done: 1, total: 1 });
    out.seconds = (Date.now() - started) / 1000;
    return out;
  }

  // A weight account bound to every section that has none.
  const unbound = info.sections.map((s, i) => (s.weight ? -1 : i)).filter((i) => i >= 0);
  /** @type {import('./transactions.js').Job[]} */
  const binds = [];
  for (const i of unbound) {
    const w = await weightSigner(core, secret, model, i);
    const space = WEIGHT_HEADER_LEN + art.sections[i].length;
    binds.push({
      what: `binding a weight account to section ${i}`,
      units: 1,
      instructions: [
        getCreateAccountInstruction({ payer, newAccount: w, lamports: await rentFor(client, space), space, programAddress: program }),
        ix.bindWeight(program, { model, weight: w, owner: payer, section: i }),
      ],
    });
  }
  if (binds.length > 0) {
    let done = 0;
    progress({ stage: 'bind', done, total: binds.length });
    addSummary(summary, await sendAll(client, binds, { inFlight: options.inFlight, onLanded: () => progress({ stage: 'bind', done: ++done, total: binds.length }) }));
    info = await fetchModel(client, model);
  }
  const weights = info.sections.map((s, i) => {
    if (!s.weight) throw new Error(`section ${i} of model ${model} has no weight account after binding`);
    return s.weight;
  });

  // Every chunk the weight accounts do not hold yet, until they hold all.
  const chunk = mostThatFit(client, 1 << 14, (n) => [
    ix.write(program, { model, weight: weights[0], owner: payer, offset: 0, bytes: new Uint8Array(n) }),
  ]);
  for (let round = 0; ; round++) {
    /** @type {import('./transactions.js').Job[]} */
    const jobs = [];
    for (let i = 0; i < count; i++) {
      const w = await fetchWeight(client, weights[i]);
      if (w.model !== model || w.section !== i) {
        throw new Error(`${weights[i]} is bound to section ${i} of model ${model} but says otherwise`);
      }
      if (w.sealed) {
        const d = info.sections[i].digest;
        if (!d || !equalBytes(d, art.digests[i])) {
          throw new Error(`section ${i} of model ${model} is sealed with other bytes than the artifact's: close the model and upload again`);
        }
        continue;
      }
      for (const c of missingChunks(art.sections[i], w.bytes, chunk)) {
        jobs.push({
          what: `writing section ${i} at offset ${c.offset}`,
          units: c.bytes.length,
          instructions: [ix.write(program, { model, weight: weights[i], owner: payer, offset: c.offset, bytes: c.bytes })],
        });
      }
    }
    if (jobs.length === 0) break;
    if (round === 2) throw new Error(`${jobs.length} chunk(s) still differ after writing them three times`);
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
  }

  // Seal every section not sealed (they lock different accounts: all at once), then the model.
  const unsealed = info.sections.map((s, i) => (s.digest ? -1 : i)).filter((i) => i >= 0);
  let sealedNow = 0;
  progress({ stage: 'seal', done: 0, total: unsealed.length + 1 });
  const seals = await Promise.all(
    unsealed.map(async (i) => {
      const s = await sealSection(client, model, weights[i], i, art.sections[i].length, art.digests[i]);
      progress({ stage: 'seal', done: ++sealedNow, total: unsealed.length + 1 });
      return s;
    }),
  );
  for (const s of seals) addSummary(summary, s);
  const l = await sendAndConfirm(client, 'sealing the model', [ix.sealModel(program, { model, sectionZero: weights[0], owner: payer })]);
  addLanded(summary, l.slot, l.fee);
  info = await fetchModel(client, model);
  if (info.status !== MODEL_STATUS.sealed) throw new Error(`model ${model} is still ${info.statusName} after sealing`);
  progress({ stage: 'done', done: 1, total: 1 });
  out.seconds = (Date.now() - started) / 1000;
  return out;
}

/**
 * Sends seal_section until the section is sealed (a call hashes 2 MiB);
 * each call asks for one unit more, so two calls are never the same transaction.
 * @param {import('./client.js').CurtaClient} client
 * @param {string} model
 * @param {string} weight
 * @param {number} i
 * @param {number} length
 * @param {Uint8Array} digest
 */
async function sealSection(client, model, weight, i, length, digest) {
  const summary = emptySummary();
  const calls = Math.max(1, Math.ceil(length / SEAL_BYTES_PER_CALL));
  for (let call = 0; call < calls + 2; call++) {
    if ((await fetchWeight(client, weight)).sealed) return summary;
    const l = await sendAndConfirm(client, `sealing section ${i}`, [
      getSetComputeUnitLimitInstruction({ units: SEAL_CU + call }),
      ix.sealSection(client.programId, { model: /** @type {any} */ (model), weight: /** @type {any} */ (weight), owner: client.payer, digest }),
    ]);
    addLanded(summary, l.slot, l.fee);
  }
  throw new Error(`section ${i} is not sealed after ${calls + 2} seal_section calls`);
}

/**
 * Checks that a model found at the derived address is this upload's.
 * @param {Awaited<ReturnType<typeof fetchModel>>} info
 * @param {Awaited<ReturnType<typeof describeArtifact>>} art
 * @param {string} config
 * @param {string} payer
 */
function checkModel(info, art, config, payer) {
  const m = info.address;
  if (info.owner !== payer) throw new Error(`model ${m} is owned by ${info.owner}, not the signer ${payer}`);
  if (info.config !== config) throw new Error(`model ${m} is bound to config ${info.config}, not ${config}`);
  if (
    !equalBytes(info.configBytes, art.configBytes.subarray(0, CONFIG_BYTES)) ||
    info.flags !== art.flags ||
    info.sectionCount !== art.sections.length ||
    info.sections[0].length !== BigInt(art.sections[0].length)
  ) {
    throw new Error(`model ${m} was created for another artifact`);
  }
  if (info.status === MODEL_STATUS.retired) throw new Error(`model ${m} is retired (a weight account was closed): close it and upload again`);
  if (info.status === MODEL_STATUS.sealed) {
    info.sections.forEach((s, i) => {
      if (!s.digest || !equalBytes(s.digest, art.digests[i])) {
        throw new Error(`model ${m} is sealed with another section ${i} (digest ${s.digest ? hex(s.digest) : 'none'})`);
      }
    });
  }
}
