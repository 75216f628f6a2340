// The IDL cannot drift from the program. `protocol_vectors` (an example
// of curta-client) prints every instruction, a sample account of each kind, a turn
// receipt and every error as curta_core::protocol and
// curta_client::instructions make them; here the client generated from
// idl/curta.json builds and decodes the same and must give the same bytes,
// account metas, codes and names. Then the committed client must be what
// `npm run generate` writes from the IDL today. (That the IDL is what
// `curta-core idl` writes from curta_core::protocol is checked by the
// core's own tests and by `make test-idl`.)
//
// CURTA_VECTORS_BIN names the binary (default
// target/debug/examples/protocol_vectors, built by `cargo build -p
// curta-client --example protocol_vectors`; `make test-idl` builds it and
// runs this file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { address, createNoopSigner, isSignerRole, isWritableRole, none, some } from '@solana/kit';
import { getNodeCodec } from '@codama/dynamic-codecs';
import { createFromJson, getValidationItemsVisitor, visit } from 'codama';

import * as generated from '../../src/generated-js/index.js';
import { files, generate, IDL } from '../../scripts/generate.js';

const SDK = fileURLToPath(new URL('../..', import.meta.url));
const BIN = process.env.CURTA_VECTORS_BIN ?? join(SDK, '../target/debug/examples/protocol_vectors');
const idl = JSON.parse(readFileSync(IDL, 'utf8'));
const program = idl.program;
const root = createFromJson(readFileSync(IDL, 'utf8')).getRoot();

function loadVectors() {
  if (!existsSync(BIN)) {
    throw new Error(
      `the reference vectors binary ${BIN} does not exist: build it with ` +
        '`cargo build -p curta-replay -p curta-harness -p curta-client --bins --tests` (make test-idl does), ' +
        'or point CURTA_VECTORS_BIN at it',
    );
  }
  return JSON.parse(execFileSync(BIN, { encoding: 'utf8', maxBuffer: 16 << 20 }));
}
let loaded;
const vectors = () => (loaded ??= loadVectors());

const pascal = (name) => name[0].toUpperCase() + name.slice(1);
const upperSnake = (name) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const unhex = (text) => new Uint8Array(Buffer.from(text, 'hex'));

function definedType(name) {
  const node = program.definedTypes.find((t) => t.name === name);
  assert.ok(node, `the IDL has no defined type ${name}`);
  return node.type;
}

/** A vector's JSON value (u64 as a decimal string, bytes as hex) as the
 * generated client takes it, following the IDL's type node. */
function fromVector(type, value, where) {
  switch (type.kind) {
    case 'numberTypeNode':
      return /64|128/.test(type.format) ? BigInt(value) : Number(value);
    case 'publicKeyTypeNode':
      return address(value);
    case 'bytesTypeNode':
      return unhex(value);
    case 'sizePrefixTypeNode':
      // Bytes after their length: the value is the bytes.
      return fromVector(type.type, value, where);
    case 'fixedSizeTypeNode': {
      const bytes = fromVector(type.type, value, where);
      assert.equal(bytes.length, type.size, `${where}: ${bytes.length} bytes, the IDL says ${type.size}`);
      return bytes;
    }
    case 'definedTypeLinkNode':
      return fromVector(definedType(type.name), value, where);
    case 'preOffsetTypeNode':
    case 'postOffsetTypeNode':
      // Zero padding beside the field: the value is the field's.
      return fromVector(type.type, value, where);
    case 'enumTypeNode':
      assert.ok(Number.isInteger(value) && value < type.variants.length, `${where}: ${value} is no variant`);
      return value;
    case 'arrayTypeNode':
      return value.map((item, i) => fromVector(type.item, item, `${where}[${i}]`));
    case 'remainderOptionTypeNode':
      return value === null ? none() : some(fromVector(type.item, value, where));
    case 'structTypeNode':
      return Object.fromEntries(
        type.fields
          .filter((f) => f.defaultValueStrategy !== 'omitted')
          .map((f) => {
            assert.ok(f.name in value, `${where}: the vector has no field ${f.name}`);
            return [f.name, fromVector(f.type, value[f.name], `${where}.${f.name}`)];
          }),
      );
    default:
      throw new Error(`${where}: no vector form for ${type.kind}`);
  }
}

/** Plain data to compare: bytes as hex, bigints tagged, objects key by key. */
function plain(value) {
  if (value instanceof Uint8Array) return `0x${hex(value)}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

/** @codama/dynamic-codecs reads the IDL itself, without the renderer:
 * decoding `bytes` through the node named `kind`/`name` and encoding the
 * result again must give `bytes`; returns the decoded value, plain. */
function throughIdl(kind, name, bytes) {
  const node = root.program[kind].find((n) => n.name === name);
  const codec = getNodeCodec([root, root.program, node], { bytesEncoding: 'base16' });
  const decoded = codec.decode(bytes);
  assert.equal(hex(codec.encode(decoded)), hex(bytes), `${name}: the IDL's own codec encodes it back`);
  const dynamicPlain = (value) => {
    if (Array.isArray(value) && value.length === 2 && value[0] === 'base16') return `0x${value[1]}`;
    if (typeof value === 'bigint') return `${value}n`;
    if (Array.isArray(value)) return value.map(dynamicPlain);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, dynamicPlain(v)]));
    }
    return value;
  };
  return dynamicPlain(decoded);
}

/** The decoded fields the vector names: without the tag and zero padding. */
function withoutOmitted(struct, decoded) {
  const omitted = new Set(struct.fields.filter((f) => f.defaultValueStrategy === 'omitted').map((f) => f.name));
  return Object.fromEntries(Object.entries(decoded).filter(([k]) => !omitted.has(k)));
}

test('the IDL is a valid Codama root: no validation warning or error', () => {
  const items = visit(root, getValidationItemsVisitor()).filter((i) => i.level !== 'info' && i.level !== 'debug');
  assert.deepEqual(items.map((i) => `${i.level}: ${i.message} (${i.node.kind} ${i.node.name ?? ''})`), []);
  assert.equal(root.program.name, 'curta');
});

test('every instruction: the generated builder gives protocol\'s data and account metas', () => {
  const programAddress = address(vectors().programAddress);
  const seen = new Set();
  for (const v of vectors().instructions) {
    const node = program.instructions.find((i) => i.name === v.name);
    assert.ok(node, `the IDL has no instruction ${v.name}`);
    seen.add(v.name);
    const where = `${v.name}(${JSON.stringify(v.args)})`;
    const args = Object.fromEntries(
      node.arguments
        .filter((a) => a.defaultValueStrategy !== 'omitted')
        .map((a) => [a.name, fromVector(a.type, v.args[a.name], `${where}.${a.name}`)]),
    );
    const accounts = Object.fromEntries(
      node.accounts.map((a) => {
        assert.ok(v.accounts[a.name], `${where}: the vector has no account ${a.name}`);
        const key = address(v.accounts[a.name]);
        return [a.name, a.isSigner === true ? createNoopSigner(key) : key];
      }),
    );
    const remaining = node.remainingAccounts.length
      ? { [node.remainingAccounts[0].value.name]: v.remainingAccounts.map((a) => address(a)) }
      : {};
    assert.ok(node.remainingAccounts.length || v.remainingAccounts.length === 0, `${where}: remaining accounts`);

    const ix = generated[`get${pascal(v.name)}Instruction`]({ ...accounts, ...args, ...remaining }, { programAddress });
    assert.equal(ix.programAddress, programAddress, where);
    assert.equal(hex(ix.data), v.data, `${where}: data`);
    assert.deepEqual(
      ix.accounts.map((m, index) => ({
        index,
        address: m.address,
        signer: isSignerRole(m.role),
        writable: isWritableRole(m.role),
      })),
      v.metas,
      `${where}: account metas`,
    );
    // The tag is the IDL's discriminator and the generated constant.
    const tag = node.arguments.find((a) => a.name === 'discriminator').defaultValue.number;
    assert.equal(unhex(v.data)[0], tag, `${where}: tag`);
    assert.equal(generated[`${upperSnake(v.name)}_DISCRIMINATOR`], tag, `${where}: discriminator constant`);
    // And the data decodes back to the arguments.
    const decoded = generated[`get${pascal(v.name)}InstructionDataDecoder`]().decode(unhex(v.data));
    assert.deepEqual(plain(withoutOmitted({ fields: node.arguments }, decoded)), plain(args), `${where}: decoded`);
    const dynamic = throughIdl('instructions', v.name, unhex(v.data));
    assert.deepEqual(withoutOmitted({ fields: node.arguments }, dynamic), plain(args), `${where}: through the IDL`);
  }
  assert.deepEqual([...seen].sort(), program.instructions.map((i) => i.name).sort(), 'every instruction has a vector');
  const turns = vectors().instructions.filter((v) => v.name === 'turn').map((v) => v.data.length / 2);
  assert.deepEqual(turns, [1, 9], 'both forms of turn: the tag alone, and the tag and expected turns');
  const opens = vectors().instructions.filter((v) => v.name === 'openRun').map((v) => v.args.staged);
  assert.deepEqual(opens, [0, 5, 0], 'open_run with the prompt inline, with a staged part, and naming a callback');
});

test('every account kind: the generated codec decodes and encodes protocol\'s bytes', () => {
  for (const v of vectors().accounts) {
    const node = program.accounts.find((a) => a.name === v.kind);
    assert.ok(node, `the IDL has no account ${v.kind}`);
    const name = pascal(v.kind);
    const bytes = unhex(v.data);
    const fields = fromVector(node.data, v.fields, v.kind);

    const decoded = generated[`get${name}Decoder`]().decode(bytes);
    assert.deepEqual(plain(withoutOmitted(node.data, decoded)), plain(fields), `${v.kind}: decoded fields`);
    assert.equal(hex(generated[`get${name}Encoder`]().encode(fields)), v.data, `${v.kind}: encoded bytes`);
    const dynamic = throughIdl('accounts', v.kind, bytes);
    assert.deepEqual(withoutOmitted(node.data, dynamic), plain(fields), `${v.kind}: through the IDL`);
    // The tag: protocol's, the IDL's discriminator and the generated constant.
    assert.equal(hex(decoded.discriminator), vectors().tags[v.kind], `${v.kind}: tag`);
    assert.equal(hex(generated[`${upperSnake(v.kind)}_DISCRIMINATOR`]), vectors().tags[v.kind]);
    if (node.size !== undefined) {
      assert.equal(bytes.length, node.size, `${v.kind}: size`);
      assert.equal(generated[`get${name}Size`](), node.size);
    }
  }
  assert.deepEqual(
    vectors().accounts.map((v) => v.kind).sort(),
    program.accounts.map((a) => a.name).sort(),
    'every account kind has a vector',
  );
  const model = vectors().accounts.find((v) => v.kind === 'model');
  const decoded = generated.getModelDecoder().decode(unhex(model.data));
  assert.equal(decoded.sections.length, decoded.sectionCount, 'the entries fill the model account');
});

test('the turn receipt: the generated codec gives protocol\'s 116 bytes', () => {
  const v = vectors().turnReceipt;
  const type = definedType('turnReceipt');
  const fields = fromVector(type, v.fields, 'turnReceipt');
  assert.equal(v.data.length / 2, 116);
  assert.equal(hex(generated.getTurnReceiptEncoder().encode(fields)), v.data);
  const decoded = generated.getTurnReceiptDecoder().decode(unhex(v.data));
  assert.deepEqual(plain(withoutOmitted(type, decoded)), plain(fields));
  assert.equal(hex(decoded.discriminator), vectors().tags.turnReceipt);
  const dynamic = throughIdl('definedTypes', 'turnReceipt', unhex(v.data));
  assert.deepEqual(withoutOmitted(type, dynamic), plain(fields), 'through the IDL');
});

test('every error: the IDL\'s codes and names are protocol\'s', () => {
  const rust = [...vectors().errors, ...vectors().coreErrors];
  assert.equal(vectors().errors.length, 32);
  assert.equal(vectors().coreErrors.length, 8);
  assert.deepEqual(
    program.errors.map((e) => ({ code: e.code, name: pascal(e.name) })),
    rust,
    'the IDL lists protocol\'s errors in code order, core errors as 256 + n',
  );
  for (const { code, name } of rust) {
    assert.equal(generated[`CURTA_ERROR__${upperSnake(name)}`], code, `the generated constant of ${name}`);
    const message = program.errors.find((e) => e.code === code).message;
    assert.equal(generated.getCurtaErrorMessage(code), message, `the generated message of ${name}`);
  }
});

test('the committed client is what npm run generate writes from the IDL', async () => {
  const out = mkdtempSync(join(tmpdir(), 'curta-generated-'));
  try {
    await generate(out);
    const committed = join(SDK, 'src/generated-js');
    const want = files(out).map((f) => relative(out, f));
    const have = files(committed).map((f) => relative(committed, f));
    assert.deepEqual(have, want, `${committed}: stale file list; run \`npm run generate\` in sdk/`);
    for (const f of want) {
      const same = readFileSync(join(out, f)).equals(readFileSync(join(committed, f)));
      assert.ok(same, `${join(committed, f)} is stale: run \`npm run generate\` in sdk/`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('no decoded account carries its zero bytes: each gap is a field\'s padding', () => {
  const config = generated.getConfigDecoder().decode(new Uint8Array(generated.getConfigSize()));
  assert.deepEqual(Object.keys(config), ['discriminator', 'admin', 'allowance']);
  for (const node of program.accounts) {
    const names = node.data.fields.map((f) => f.name);
    assert.ok(!names.some((n) => /reserved|padding/.test(n)), `${node.name}: ${names}`);
  }
});
