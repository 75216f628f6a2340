//! Target `protocol`: the program's instruction data, accounts and events
//! as `curta_core::protocol` reads them, on arbitrary bytes.
//!
//! Checked: `Instruction::decode` gives `None` or an instruction that
//! encodes back to the same bytes; an instruction built from the input
//! decodes back to itself; every account reader and each of its accessors
//! (and the writers, on what a reader accepts) is a value or a `Mismatch`,
//! never a panic; `TurnEvent::decode` round trips; SHA-256 (the program's
//! on the host, and every seal's) does not depend on how its input is cut.
//! And the client core's wire, which a WebAssembly host feeds: any text is
//! JSON or an error in words, and parsed JSON is an event, a crank's setup,
//! a quote's setup or an error in words; log lines give receipts only from
//! the named program; base58 and base64 decode only what they encode back
//! to.

use curta_core::format::Config;
use curta_core::protocol::{
    self, chain_step, section_digest, ConfigAccount, ConfigAccountMut, CurtaError, Instruction,
    Mismatch, ModelAccount, ModelAccountMut, RunAccount, RunAccountMut, RunInit, TurnEvent,
    WeightAccount, WeightAccountMut, CONFIG_TAG, MODEL_TAG, RUN_TAG, WEIGHT_TAG,
};
use curta_core::sha256::Sha256;
use curta_core::Error;

use crate::source::Source;

pub fn check(data: &[u8]) {
    let mut s = Source::new(data);
    match s.u8() % 6 {
        0 => decode(s.rest()),
        1 => built(&mut s),
        2 => accounts(&mut s),
        3 => event(s.rest()),
        4 => hashes(&mut s),
        _ => wire(s.rest()),
    }
}

/// The client core's JSON, logs and encodings, from arbitrary bytes.
fn wire(data: &[u8]) {
    use curta_core::client::{base58, base64, receipt, wire};
    use curta_core::json::Value;
    let text = String::from_utf8_lossy(data);
    if let Ok(v) = Value::parse(&text) {
        // Each is a value or an error in words; none panics.
        let _ = wire::event(&v, data);
        let _ = wire::params(&v);
        let _ = wire::quote_setup(&v);
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let program = lines.first().copied().unwrap_or("");
    for r in receipt::from_logs(&lines, program) {
        // A receipt needs its program's own invocation line before it.
        let invoked = format!("Program {program} invoke [");
        assert!(lines.iter().any(|l| l.starts_with(&invoked)), "{r:?}");
    }
    for word in text.split([' ', '\n']) {
        if let Some(bytes) = base64::decode(word) {
            assert_eq!(base64::encode(&bytes), word);
        }
        if let Some(address) = base58::decode::<32>(word) {
            assert_eq!(base58::encode(&address), word);
        }
    }
}

fn decode(data: &[u8]) {
    if let Some(ix) = Instruction::decode(data) {
        assert_eq!(ix.encode(), data, "{ix:?}");
    }
}

/// An instruction from the input, encoded and decoded.
fn built(s: &mut Source) {
    let config: [u8; Config::LEN] = s.bytes(Config::LEN).try_into().unwrap_or([7; Config::LEN]);
    let digest: [u8; 32] = s.bytes(32).try_into().unwrap_or([9; 32]);
    let bytes = s.string(64);
    let ix = match s.below(16) {
        0 => Instruction::InitConfig { allowance: s.u32() },
        1 => Instruction::SetAllowance { allowance: s.u32() },
        2 => Instruction::SetAdmin,
        3 => Instruction::InitModel {
            royalty: s.u64(),
            config: &config,
            flags: s.u32(),
            zero_len: s.u64(),
        },
        4 => Instruction::BindWeight { section: s.u32() },
        5 => Instruction::Write {
            offset: s.u64(),
            bytes,
        },
        6 => Instruction::SealSection { digest: &digest },
        7 => Instruction::SealModel,
        8 => Instruction::CloseWeight,
        9 => Instruction::CloseModel,
        10 => Instruction::OpenRun {
            max_tokens: s.u32(),
            temperature_q16: s.u32(),
            seed: s.u64(),
            royalty: s.u64(),
            model_identity: &digest,
            crank_fee: s.u64(),
            crank_deposit: s.u64(),
            staged: s.u32(),
            delivery_fee: s.u64(),
            callback: &[],
            prompt: bytes,
        },
        11 => Instruction::Turn {
            expected_turns: None,
        },
        12 => Instruction::Turn {
            expected_turns: Some(s.u64()),
        },
        13 => Instruction::CloseRun,
        14 => Instruction::Reclaim,
        _ => Instruction::WritePrompt {
            offset: s.u32(),
            bytes,
        },
    };
    let data = ix.encode();
    assert_eq!(Instruction::decode(&data), Some(ix));
}

/// Account data: the input's bytes, mostly behind a real tag, sometimes
/// sized as the kind needs.
fn accounts(s: &mut Source) {
    let tag = [CONFIG_TAG, MODEL_TAG, WEIGHT_TAG, RUN_TAG][s.below(4)];
    let len = match s.below(4) {
        0 => protocol::config::LEN,
        1 => protocol::model::len(s.below(6)),
        2 => protocol::weight::HEADER_LEN + s.below(64),
        _ => s.below(1024),
    };
    let fill = s.bytes(len).to_vec();
    let mut data = vec![0u8; len];
    data[..fill.len()].copy_from_slice(&fill);
    if len >= 8 && !s.one_in(8) {
        data[..8].copy_from_slice(&tag);
    }
    if len >= protocol::model::HEADER_LEN && tag == MODEL_TAG && s.bool() {
        // A section count that matches the length, as a real model's does.
        let count = ((len - protocol::model::HEADER_LEN) / protocol::model::ENTRY_LEN) as u32;
        data[protocol::model::SECTION_COUNT..protocol::model::SECTION_COUNT + 4]
            .copy_from_slice(&count.to_le_bytes());
    }
    if len >= protocol::weight::HEADER_LEN && tag == WEIGHT_TAG && s.bool() {
        let n = (len - protocol::weight::HEADER_LEN) as u64;
        data[protocol::weight::LENGTH..protocol::weight::LENGTH + 8]
            .copy_from_slice(&n.to_le_bytes());
    }
    read_all(&mut data, s);
}

/// Every reader and accessor on `data`, then the writers on what the
/// readers accept.
fn read_all(data: &mut [u8], s: &mut Source) {
    let tagged = |tag: &[u8; 8]| data.len() >= 8 && data[..8] == *tag;
    match ConfigAccount::read(data) {
        Ok(c) => {
            let _ = (c.admin(), c.allowance());
        }
        Err(e) => assert!(e == Mismatch::Size || !tagged(&CONFIG_TAG)),
    }
    match ModelAccount::read(data) {
        Ok(m) => {
            let _ = (
                m.config_account(),
                m.owner(),
                m.royalty(),
                m.status(),
                m.flags(),
            );
            let _ = (m.bound(), m.sealed_count(), Config::read(m.model_config()));
            for i in 0..m.section_count() {
                let _ = (m.section_address(i), m.section_len(i), m.section_digest(i));
            }
        }
        Err(e) => assert!(e == Mismatch::Size || !tagged(&MODEL_TAG)),
    }
    match WeightAccount::read(data) {
        Ok(w) => {
            let _ = (w.model(), w.section(), w.hashed(), w.chain(), w.sealed());
            assert_eq!(w.bytes().len(), data.len() - protocol::weight::HEADER_LEN);
        }
        Err(e) => assert!(e == Mismatch::Size || !tagged(&WEIGHT_TAG)),
    }
    match RunAccount::read(data) {
        Ok(r) => {
            let _ = (
                r.model(),
                r.opener(),
                r.royalty(),
                r.deposited(),
                r.escrow(),
                r.paid(),
            );
            let _ = curta_core::StateInfo::read(r.state());
        }
        Err(e) => assert!(e == Mismatch::Size || !tagged(&RUN_TAG)),
    }
    let key: [u8; 32] = [s.u8(); 32];
    if ConfigAccount::read(data).is_ok() {
        let mut c = ConfigAccountMut(data);
        c.init(&key, s.u32());
        c.set_admin(&key);
        c.set_allowance(s.u32());
        let c = ConfigAccount::read(data).expect("a config written stays a config");
        assert_eq!(c.admin(), &key);
    } else if let Ok(m) = ModelAccount::read(data) {
        let count = m.section_count();
        let mut w = ModelAccountMut(data);
        w.set_status(s.u32());
        w.set_bound(s.u32());
        w.set_sealed_count(s.u32());
        w.set_model_identity(&key);
        assert_eq!(
            ModelAccount::read(data).map(|m| *m.model_identity()),
            Ok(key)
        );
        let mut w = ModelAccountMut(data);
        if count > 0 {
            let i = s.below(count);
            w.set_section_address(i, &key);
            w.set_section_digest(i, &key);
            let m = ModelAccount::read(data).expect("a model written stays a model");
            assert_eq!((m.section_address(i), m.section_digest(i)), (&key, &key));
        }
    } else if WeightAccount::read(data).is_ok() {
        let mut w = WeightAccountMut(data);
        w.set_seal(s.u64(), &key);
        let _ = w.bytes_mut();
        if s.bool() {
            w.init(&key, s.u32());
        }
        assert!(
            WeightAccount::read(data).is_ok(),
            "a weight written stays a weight"
        );
    } else if RunAccount::read(data).is_ok() {
        let (escrow, paid) = (s.u64(), s.u64());
        let mut r = RunAccountMut(data);
        r.set_payments(escrow, paid);
        let (mut header, state) = r.split();
        header.init(&RunInit {
            model: &key,
            model_identity: &key,
            opener: &key,
            royalty: s.u64(),
            deposited: escrow,
            crank_fee: s.u64(),
            crank_deposit: s.u64(),
            tokens_at: s.u32(),
            text_at: s.u32(),
            seed: s.u64(),
            allowance: s.u32(),
            callback_at: 0,
            delivery_fee: s.u64(),
        });
        let _ = state.len();
        let r = RunAccount::read(data).expect("a run written stays a run");
        assert_eq!((r.escrow(), r.deposited(), r.paid()), (escrow, escrow, 0));
        assert_eq!(r.model_identity(), &key);
    }
}

fn event(field: &[u8]) {
    if let Some(e) = TurnEvent::decode(field) {
        let mut out = [0u8; protocol::event::LEN];
        e.encode(&mut out);
        assert_eq!(&out[..], field);
    }
}

/// SHA-256 of bytes cut into pieces equals SHA-256 of them whole, and a
/// section's digest is its chain of 1 MiB links.
fn hashes(s: &mut Source) {
    let cuts: Vec<usize> = (0..s.below(6)).map(|_| s.below(200)).collect();
    let data = s.rest();
    let mut whole = Sha256::new();
    whole.update(data);
    let whole = whole.finish();
    let mut pieces = Sha256::new();
    let mut rest = data;
    for cut in cuts {
        let (a, b) = rest.split_at(cut.min(rest.len()));
        pieces.update(a);
        rest = b;
    }
    pieces.update(rest);
    assert_eq!(pieces.finish(), whole);
    let chain = if data.is_empty() {
        [0; 32]
    } else {
        chain_step(&[0; 32], data)
    };
    assert_eq!(section_digest(data), chain);
    for code in [0, 1, 8, 9, 25, 26, 256, s.u32()] {
        if let Some(e) = CurtaError::from_code(code) {
            assert_eq!(e as u32, code);
            let _ = e.name();
        }
        if let Some(e) = Error::from_code(code) {
            assert_eq!(e.code(), code);
        }
    }
}
