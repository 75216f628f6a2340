//! `protocol_vectors`: prints, as JSON, reference bytes of the curta
//! program's interface as `curta_core::protocol` writes them: every
//! instruction's data and account metas (from `curta_client::instructions`,
//! the builders the `curta` command sends), a sample account of each kind,
//! a turn receipt, and every error's code and name. `sdk/test/idl.test.js`
//! builds the same things through the client generated from
//! `idl/curta.json` and requires the same bytes, so the IDL cannot drift
//! from the program.
//!
//! Names in the output are the IDL's (camelCase); u64 values are decimal
//! strings, addresses base58, byte strings hex.

use curta_client::instructions::{self as ix, ModelKeys, ModelParams};
use curta_core::format::{Config, Layout, FLAG_SHARED_CLASSIFIER};
use curta_core::inference::RunParams;
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{
    self, callback, config, event, model, run, weight, CallbackAccount, CallbackInit,
    ConfigAccountMut, CurtaError, ModelAccountMut, ModelInit, RunAccountMut, RunInit, TurnEvent,
    WeightAccountMut, CORE_ERROR_BASE,
};
use serde_json::{json, Map, Value};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;

/// A distinct sample address per role, so a swapped account shows.
fn key(n: u8) -> Pubkey {
    Pubkey::new_from_array([n; 32])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn u64s(v: u64) -> Value {
    Value::String(v.to_string())
}

fn addr(p: &Pubkey) -> Value {
    Value::String(p.to_string())
}

/// One instruction vector: what it was built from and what came out.
fn vector(
    name: &str,
    accounts: &[(&str, &Pubkey)],
    args: Value,
    remaining: &[Pubkey],
    built: Instruction,
) -> Value {
    let named: Map<String, Value> = accounts
        .iter()
        .map(|(n, p)| (n.to_string(), addr(p)))
        .collect();
    let metas: Vec<Value> = built
        .accounts
        .iter()
        .enumerate()
        .map(|(index, m)| {
            json!({
                "index": index,
                "address": m.pubkey.to_string(),
                "signer": m.is_signer,
                "writable": m.is_writable,
            })
        })
        .collect();
    json!({
        "name": name,
        "accounts": named,
        "remainingAccounts": remaining.iter().map(addr).collect::<Vec<_>>(),
        "args": args,
        "data": hex(&built.data),
        "metas": metas,
    })
}

fn model_config_json(c: &Config) -> Value {
    json!({
        "dim": c.dim,
        "hiddenDim": c.hidden_dim,
        "nLayers": c.n_layers,
        "nHeads": c.n_heads,
        "nKvHeads": c.n_kv_heads,
        "vocabSize": c.vocab_size,
        "seqLen": c.seq_len,
    })
}

fn main() {
    let program = key(0xc7);
    let (config_account, admin, new_admin) = (key(1), key(2), key(3));
    let (model_key, owner, weight_key) = (key(4), key(5), key(6));
    let (run_key, opener, recipient) = (key(7), key(8), key(9));
    let cranker = key(0x0c);
    // stories260K's shape: its five layers fit one section, so three sections.
    let shape = Config {
        dim: 64,
        hidden_dim: 172,
        n_layers: 5,
        n_heads: 8,
        n_kv_heads: 4,
        vocab_size: 512,
        seq_len: 512,
        charges: curta_core::format::ChargeTable::Specification,
        shared_classifier: true,
    };
    let layout = Layout::new(&shape).expect("stories260K's shape has a layout");
    let sections = layout.section_count() as usize;
    let weights: Vec<Pubkey> = (0..sections as u8).map(|i| key(0x10 + i)).collect();
    let digest = [0xd1u8; 32];
    let identity = [0x1du8; 32];
    let keys = ModelKeys {
        config_account,
        model: model_key,
        owner,
        weights: weights.clone(),
        royalty: 1_000,
        identity,
    };
    let mp = ModelParams {
        royalty: 1_000,
        config: shape,
        flags: FLAG_SHARED_CLASSIFIER,
        zero_len: 60_440,
    };
    let prompt = b"Once upon a time";
    let params = RunParams {
        prompt,
        max_tokens: 20,
        temperature_q16: 52_429,
        seed: 0x0123_4567_89ab_cdef,
    };
    let crank = CrankFee {
        fee: 0x0102_0304_0506,
        deposit: 0x0a0b_0c0d_0e0f_1011,
    };
    // A callback naming two accounts, one written, and two bytes of data.
    let (callback_program, refund, callback_read, callback_written) =
        (key(0xd1), key(0xd2), key(0xd3), key(0xd4));
    let callback_accounts = [
        CallbackAccount {
            address: callback_written.as_array(),
            writable: true,
        },
        CallbackAccount {
            address: callback_read.as_array(),
            writable: false,
        },
    ];
    let mut callback = vec![0u8; callback::MAX_LEN];
    let callback_len = CallbackInit {
        program: callback_program.as_array(),
        refund: refund.as_array(),
        compute_units: 25_000,
        accounts: &callback_accounts,
        data: &[1, 2],
    }
    .encode_into(&mut callback)
    .expect("a callback record");
    callback.truncate(callback_len);
    let delivery = ix::Delivery {
        callback: &callback,
        fee: 0x0b0c_0d0e,
    };
    let open_args = |staged: usize, d: &ix::Delivery| {
        json!({
            "maxTokens": params.max_tokens,
            "temperatureQ16": params.temperature_q16,
            "seed": u64s(params.seed),
            "royalty": u64s(keys.royalty),
            "modelIdentity": hex(&identity),
            "crankFee": u64s(crank.fee),
            "crankDeposit": u64s(crank.deposit),
            "staged": staged,
            "deliveryFee": u64s(d.fee),
            "callback": hex(d.callback),
            "prompt": hex(&prompt[staged..]),
        })
    };
    let open_accounts = [
        ("config", &config_account),
        ("model", &model_key),
        ("run", &run_key),
        ("opener", &opener),
    ];
    let turn_accounts = [
        ("config", &config_account),
        ("model", &model_key),
        ("run", &run_key),
        ("owner", &owner),
        ("sectionZero", &weights[0]),
        ("cranker", &cranker),
    ];
    let plan_weights = [weights[sections - 1], weights[1]];
    let write_bytes = [0xa5u8, 0x00, 0xff, 0x10, 0x42];

    let instructions = vec![
        vector(
            "initConfig",
            &[("config", &config_account), ("admin", &admin)],
            json!({ "allowance": 1_350_000 }),
            &[],
            ix::init_config(&program, &config_account, &admin, 1_350_000),
        ),
        vector(
            "setAllowance",
            &[("config", &config_account), ("admin", &admin)],
            json!({ "allowance": 22_096 }),
            &[],
            ix::set_allowance(&program, &config_account, &admin, 22_096),
        ),
        vector(
            "setAdmin",
            &[
                ("config", &config_account),
                ("admin", &admin),
                ("newAdmin", &new_admin),
            ],
            json!({}),
            &[],
            ix::set_admin(&program, &config_account, &admin, &new_admin),
        ),
        vector(
            "initModel",
            &[
                ("config", &config_account),
                ("model", &model_key),
                ("owner", &owner),
            ],
            json!({
                "royalty": u64s(mp.royalty),
                "modelConfig": model_config_json(&mp.config),
                "flags": mp.flags,
                "sectionZeroLength": u64s(mp.zero_len),
            }),
            &[],
            ix::init_model(&program, &config_account, &model_key, &owner, &mp),
        ),
        vector(
            "bindWeight",
            &[
                ("model", &model_key),
                ("weight", &weight_key),
                ("owner", &owner),
            ],
            json!({ "section": 2 }),
            &[],
            ix::bind_weight(&program, &model_key, &weight_key, &owner, 2),
        ),
        vector(
            "write",
            &[
                ("model", &model_key),
                ("weight", &weight_key),
                ("owner", &owner),
            ],
            json!({ "offset": u64s(0x1_0000_0001), "bytes": hex(&write_bytes) }),
            &[],
            ix::write(
                &program,
                &model_key,
                &weight_key,
                &owner,
                0x1_0000_0001,
                &write_bytes,
            ),
        ),
        vector(
            "sealSection",
            &[
                ("model", &model_key),
                ("weight", &weight_key),
                ("owner", &owner),
            ],
            json!({ "digest": hex(&digest) }),
            &[],
            ix::seal_section(&program, &model_key, &weight_key, &owner, &digest),
        ),
        vector(
            "sealModel",
            &[
                ("model", &model_key),
                ("sectionZero", &weights[0]),
                ("owner", &owner),
            ],
            json!({}),
            &[],
            ix::seal_model(&program, &model_key, &weights[0], &owner),
        ),
        vector(
            "closeWeight",
            &[
                ("model", &model_key),
                ("weight", &weight_key),
                ("owner", &owner),
            ],
            json!({}),
            &[],
            ix::close_weight(&program, &model_key, &weight_key, &owner),
        ),
        vector(
            "closeModel",
            &[("model", &model_key), ("owner", &owner)],
            json!({}),
            &[],
            ix::close_model(&program, &model_key, &owner),
        ),
        // The whole prompt inline, then a staged one: its first 5 bytes in
        // the account, the rest here.
        vector(
            "openRun",
            &open_accounts,
            open_args(0, &ix::Delivery::NONE),
            &[],
            ix::open_run(&program, &keys, &run_key, &opener, &params, &crank, 0),
        ),
        vector(
            "openRun",
            &open_accounts,
            open_args(5, &ix::Delivery::NONE),
            &[],
            ix::open_run(&program, &keys, &run_key, &opener, &params, &crank, 5),
        ),
        vector(
            "openRun",
            &open_accounts,
            open_args(0, &delivery),
            &[],
            ix::open_run_with(
                &program, &keys, &run_key, &opener, &params, &crank, 0, &delivery,
            ),
        ),
        // Both forms of turn: without the expected count and a first
        // (tokenizing) turn's accounts; with it and two plan weights.
        vector(
            "turn",
            &turn_accounts,
            json!({ "expectedTurns": null }),
            &[],
            ix::turn(&program, &keys, &run_key, &cranker, &[], None),
        ),
        vector(
            "turn",
            &turn_accounts,
            json!({ "expectedTurns": u64s(0x0102_0304_0506_0708) }),
            &plan_weights,
            ix::turn(
                &program,
                &keys,
                &run_key,
                &cranker,
                &plan_weights,
                Some(0x0102_0304_0506_0708),
            ),
        ),
        vector(
            "closeRun",
            &[("run", &run_key), ("opener", &opener)],
            json!({}),
            &[],
            ix::close_run(&program, &run_key, &opener),
        ),
        vector(
            "reclaim",
            &[("account", &run_key), ("recipient", &recipient)],
            json!({}),
            &[],
            ix::reclaim(&program, &run_key, &recipient),
        ),
        vector(
            "writePrompt",
            &[("run", &run_key)],
            json!({ "offset": 7, "bytes": hex(b"upon a") }),
            &[],
            ix::write_prompt(&program, &run_key, 7, b"upon a"),
        ),
        vector(
            "closeConfig",
            &[("config", &config_account), ("admin", &admin)],
            json!({}),
            &[],
            ix::close_config(&program, &config_account, &admin),
        ),
        // The IDL's remaining accounts are read-only: a callback that
        // writes an account is delivered with the writability the run's
        // record gives (`curta_core::client::delivery::plan`).
        vector(
            "deliver",
            &[
                ("run", &run_key),
                ("refund", &refund),
                ("deliverer", &cranker),
                ("callbackProgram", &callback_program),
            ],
            json!({}),
            &[callback_read, recipient],
            ix::deliver(
                &program,
                &curta_core::client::delivery::Delivery {
                    run: run_key.to_bytes(),
                    refund: refund.to_bytes(),
                    program: callback_program.to_bytes(),
                    accounts: vec![
                        (callback_read.to_bytes(), false),
                        (recipient.to_bytes(), false),
                    ],
                    compute_units: 0,
                    fee: 0,
                },
                &cranker,
            ),
        ),
    ];

    // ---- Accounts, written by protocol's writers ----
    let mut config_data = vec![0u8; config::LEN];
    ConfigAccountMut(&mut config_data).init(&admin.to_bytes(), 1_350_000);
    let config_vector = json!({
        "kind": "config",
        "fields": { "admin": addr(&admin), "allowance": 1_350_000 },
        "data": hex(&config_data),
    });

    let init = ModelInit {
        royalty: mp.royalty,
        config: &shape,
        layout: &layout,
        flags: mp.flags,
        zero_len: mp.zero_len,
    };
    let mut model_data = vec![0u8; model::len(sections)];
    let mut entries = Vec::new();
    {
        let mut m = ModelAccountMut(&mut model_data);
        m.init(&config_account.to_bytes(), &owner.to_bytes(), &init);
        for (i, w) in weights.iter().enumerate() {
            m.set_section_address(i, &w.to_bytes());
            let section_digest = [0x80 + i as u8; 32];
            m.set_section_digest(i, &section_digest);
            entries.push(json!({
                "weightAccount": addr(w),
                "length": u64s(init.section_len(i as u32)),
                "digest": hex(&section_digest),
            }));
        }
        m.set_bound(sections as u32);
        m.set_sealed_count(sections as u32);
        m.set_status(model::SEALED);
    }
    let model_identity = protocol::model_identity(&model_key.to_bytes(), &model_data);
    ModelAccountMut(&mut model_data).set_model_identity(&model_identity);
    let model_vector = json!({
        "kind": "model",
        "address": addr(&model_key),
        "fields": {
            "config": addr(&config_account),
            "owner": addr(&owner),
            "royalty": u64s(mp.royalty),
            "modelConfig": model_config_json(&shape),
            "sectionCount": sections,
            "status": model::SEALED,
            "flags": mp.flags,
            "boundCount": sections,
            "sealedCount": sections,
            "modelIdentity": hex(&model_identity),
            "sections": entries,
        },
        "data": hex(&model_data),
    });

    let section_bytes: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
    let mut weight_data = vec![0u8; weight::HEADER_LEN + section_bytes.len()];
    {
        let mut w = WeightAccountMut(&mut weight_data);
        w.init(&model_key.to_bytes(), 2);
        w.bytes_mut().copy_from_slice(&section_bytes);
        w.set_seal(32, &[0xc4; 32]);
    }
    let weight_vector = json!({
        "kind": "weight",
        "fields": {
            "model": addr(&model_key),
            "section": 2,
            "length": u64s(section_bytes.len() as u64),
            "hashed": "32",
            "chain": hex(&[0xc4; 32]),
            "bytes": hex(&section_bytes),
        },
        "data": hex(&weight_data),
    });

    // The state is opaque to the IDL (state.md): any bytes after the header.
    let state: Vec<u8> = (0..96u8).map(|i| i ^ 0x5a).collect();
    let mut run_data = vec![0u8; run::HEADER_LEN + state.len()];
    {
        let mut r = RunAccountMut(&mut run_data);
        r.init(&RunInit {
            model: &model_key.to_bytes(),
            model_identity: &identity,
            opener: &opener.to_bytes(),
            royalty: 1_000,
            deposited: 20_000,
            crank_fee: 5_000,
            crank_deposit: 100_000,
            tokens_at: 0x0203_0405,
            text_at: 0x0607_0809,
            seed: 0x0a0b_0c0d_0e0f_1012,
            allowance: 1_234_567,
            callback_at: 0,
            delivery_fee: 2_500,
        });
        r.set_payments(13_000, 7_000);
        r.set_crank_paid(35_000);
    }
    run_data[run::HEADER_LEN..].copy_from_slice(&state);
    let run_vector = json!({
        "kind": "run",
        "fields": {
            "model": addr(&model_key),
            "opener": addr(&opener),
            "royalty": "1000",
            "deposited": "20000",
            "escrow": "13000",
            "paid": "7000",
            "modelIdentity": hex(&identity),
            "crankFee": "5000",
            "crankDeposit": "100000",
            "crankPaid": "35000",
            "tokensAt": 0x0203_0405,
            "textAt": 0x0607_0809,
            "seed": u64s(0x0a0b_0c0d_0e0f_1012),
            "allowance": 1_234_567,
            "callbackAt": 0,
            "deliveryFee": "2500",
            "state": hex(&state),
        },
        "data": hex(&run_data),
    });

    // ---- The turn receipt ----
    let receipt = TurnEvent {
        run: run_key.to_bytes(),
        model: model_key.to_bytes(),
        turns: 0x0a0b_0c0d_0e0f_1011,
        paid: 3_000,
        generated: 9,
        generated_this_turn: 3,
        charged: 1_349_700,
        phase: 20,
        text_len: 41,
        crank_paid: 0x1112_1314_1516,
    };
    let mut receipt_data = [0u8; event::LEN];
    receipt.encode(&mut receipt_data);
    let receipt_vector = json!({
        "fields": {
            "run": addr(&run_key),
            "model": addr(&model_key),
            "turns": u64s(receipt.turns),
            "paid": u64s(receipt.paid),
            "generated": receipt.generated,
            "generatedThisTurn": receipt.generated_this_turn,
            "charged": receipt.charged,
            "phase": receipt.phase,
            "textLen": receipt.text_len,
            "crankPaid": u64s(receipt.crank_paid),
        },
        "data": hex(&receipt_data),
    });

    let errors: Vec<Value> = CurtaError::ALL
        .iter()
        .map(|e| json!({ "code": *e as u32, "name": e.name() }))
        .collect();
    let core_errors: Vec<Value> = curta_core::Error::ALL
        .iter()
        .map(|e| json!({ "code": CORE_ERROR_BASE + e.code(), "name": e.name() }))
        .collect();

    let tags = json!({
        "config": hex(&protocol::CONFIG_TAG),
        "model": hex(&protocol::MODEL_TAG),
        "weight": hex(&protocol::WEIGHT_TAG),
        "run": hex(&protocol::RUN_TAG),
        "turnReceipt": hex(&event::TURN_TAG),
    });
    let out = json!({
        "programAddress": addr(&program),
        "instructions": instructions,
        "accounts": [config_vector, model_vector, weight_vector, run_vector],
        "turnReceipt": receipt_vector,
        "tags": tags,
        "errors": errors,
        "coreErrors": core_errors,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&out).expect("the vectors serialize")
    );
}
