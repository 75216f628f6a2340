//! The client core's exports (`docs/client.md`, "The client core"): the
//! crank's state machine and turn receipts, in JSON (`client::wire`).
//! Each export leaves its answer in the module's reply buffer, which
//! `reply_pointer` and `reply_length` locate until the next call.
//!
//! - `crank_new(artifact, artifact_length, state, state_length, setup,
//!   setup_length)`: a crank of the run in that state (the module replays
//!   it), set up by the JSON `setup`. Returns its handle, or 0 with
//!   `{"error": words, "code": core error or null, "turn": ...}`; else the
//!   reply is `{"remaining": turns left, "turnsBefore": ...}`.
//! - `crank_next(handle, event, event_length, bytes, bytes_length)`: the
//!   answer to the last action (a `runState`'s state is `bytes`); the
//!   reply is the next action. Returns 0, or 1 with `{"error": words}`
//!   for an unknown handle or an event that does not parse.
//! - `crank_summary(handle)`: the reply is what the crank has done.
//! - `crank_free(handle)`.
//! - `batch_new(setup, setup_length)`: a batch of independent transactions
//!   (`client::batch`), set up by the JSON `setup` (`wire::batch_setup`).
//!   Returns its handle, or 0 with `{"error": words}`.
//! - `batch_next(handle, event, event_length)`: the answer to the last
//!   action; the reply is the next action (`wire::batch_action`). Returns
//!   0, or 1 with `{"error": words}`. `batch_free(handle)`.
//! - `receipts(logs, logs_length)`: `{"programId", "logs"}` in, the turn
//!   receipts that program's own invocation logged out, as an array.
//! - `log_tail(logs, logs_length)`: `{"logs"}` in, `{"words"}` out: the end
//!   of a transaction's logs as every client quotes it in an error.
//! - `crank_fee_advice(turn_fee, priced_by_cluster)`: the crank fee to
//!   offer and its basis in words (`client::budget`).
//! - `session_key_funding(what, what_length)`: what a wallet sends a
//!   session key for a run (`client::session_key`): `{"deposit", "fees",
//!   "lamportsPerSignature", "keyRent", "crankers"}` in, `{"funding"}` out.
//! - `decimal_q16(text, text_length)`: a decimal temperature with 16
//!   fractional bits (`client::params::decimal_q16`), or `u64::MAX` for
//!   text that is not one; no JSON.
//! - `derivation(what, what_length)`: the bytes a derived account's seed
//!   hashes before and after the signer's secret (`client::keys`), which
//!   never enters the module: `{"beforeSecret", "afterSecret"}`, base64.
//! - `custom_error(what, what_length)`: an instruction's custom error in
//!   words, named by the program that raised it (`client::errors`):
//!   `{"code", "instruction", "program"}` in, `{"words", "name"}` out.
//! - `address_refusal(what, what_length)`: why a value typed as an address
//!   is not one (`client::base58`): `{"what", "text"}` in, `{"words"}` out,
//!   null for an address.
//! - `check_run(config, zero, zero_length, prompt, prompt_length, setup,
//!   setup_length)`: a run's parameters checked before anything is sent
//!   (`client::params`), the prompt tokenized too when section zero is
//!   given (the context refuses nothing: a run that reaches it completes).
//! - `replay_run(artifact, artifact_length, state, state_length, setup,
//!   setup_length)`: every remaining turn of a run from its state, as the
//!   crank replays it (`wire::replay`).
//! - `receipt_differences(check, check_length)`: a receipt against the
//!   replay's step of its turn, field by field, in the crank's words.
//! - `upload_next(artifact, artifact_length, model, model_length, weights,
//!   weights_length, setup, setup_length)`: an upload's next step from
//!   what the chain holds (`client::upload`).
//! - `upload_estimate(chunk, artifact, artifact_length)`: what an upload
//!   from nothing sends and the accounts it pays rent for
//!   (`client::upload::estimate`).
//! - `section_digest(bytes, bytes_length, output)` and
//!   `model_identity(address, data, data_length, output)`: the section
//!   digest and the model identity (`protocol`), 32 bytes at `output`; an
//!   error number, no JSON.
//! - `open_next(model, model_length, run, run_length, setup,
//!   setup_length)`: an opening's sums, then its next step, from what the
//!   chain holds (`client::opening`); `close_check(run, run_length, setup,
//!   setup_length)`: whether the signer may close a run, and what it returns.
//! - `artifact_check(model, model_length, artifact, artifact_length, setup,
//!   setup_length)`: whether an artifact is a model's; `artifact_assemble(
//!   sections, sections_length, setup, setup_length)`: the artifact from
//!   its weight accounts' sections, as the reply's bytes
//!   (`client::artifact`).
//! - `delivery_plan(data, data_length)`: a finished run's delivery
//!   (`client::delivery`): `{"refund", "program", "accounts", "computeUnits",
//!   "fee"}`, or 1 and `{"error", "reason"}`.
//! - `write_chunk(version)` and `open_steps(version, prompt_length,
//!   create, opener_is_payer)`: how many weight bytes a write carries, and
//!   how an opening stages a long prompt (`client::packing`).
//! - `interface()`: the interface's sizes and codes, so no caller restates
//!   them: `{"planLength", "stateLayoutLength", "differenceLength",
//!   "outOfRange", "quoteError", "stateLayoutWords": [...], "coreErrors":
//!   {code: name}}`.
//! - `quote_run(artifact, artifact_length, prompt, prompt_length, setup,
//!   setup_length)`: what a run of that prompt will cost (`client::quote`),
//!   priced by the JSON `setup`. Returns 0 and the quote, or 1 and
//!   `{"error", "code", "turn"}`.

use std::string::{String, ToString};
use std::sync::Mutex;
use std::vec::Vec;

use super::Region;
use crate::client::batch::Batch;
use crate::client::crank::Crank;
use crate::client::errors::{self, Raiser};
use crate::client::params::{self, Spelling};
use crate::client::{base58, packing, quote, receipt, replay, upload, wire};
use crate::convert::{open_artifact, Input, Refusal};
use crate::inference::RunParams;
use crate::json::{self, Object, Value};
use crate::protocol;
use crate::Error;

static REPLY: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static CRANKS: Mutex<Vec<Option<Crank>>> = Mutex::new(Vec::new());
static BATCHES: Mutex<Vec<Option<Batch>>> = Mutex::new(Vec::new());

fn reply(text: String) {
    let mut r = REPLY.lock().unwrap_or_else(|e| e.into_inner());
    *r = text.into_bytes();
}

fn error(words: &str) -> u32 {
    reply(Object::default().str("error", words).finish());
    1
}

/// Replies `{"error": words, "code": core error or null, "turn": ...}`.
fn refusal(words: &str, code: Option<Error>, turn: u64) {
    let mut o = Object::default().str("error", words);
    o = match code {
        Some(e) => o.num("code", e.code() as u64),
        None => o.raw("code", "null"),
    };
    reply(o.big("turn", turn).finish());
}

/// Replies why `convert` refused its inputs: `{"error": the core's words,
/// "code", "input": "checkpoint" | "tokenizer" | null, "kind": what that
/// input had to be, or null}`, for a caller to say "FILE is not a KIND:
/// WORDS" as `curta-core convert` does.
pub(super) fn reply_refusal(input: Option<Input>, refusal: &Refusal) {
    let o = Object::default()
        .str("error", &refusal.reason)
        .num("code", refusal.error.code() as u64);
    let o = match input {
        Some(i) => o.str("input", i.name()).str("kind", i.kind()),
        None => o.raw("input", "null").raw("kind", "null"),
    };
    reply(o.finish());
}

/// Where the last reply starts.
/// Replies the bytes an account's key seed hashes around the signer's
/// secret (`client::keys`), for the JSON `what` (`wire::derivation`):
/// returns 0, or 1 with `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn derivation(what: usize, what_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let derived = unsafe { document(what, what_length) }.and_then(|v| wire::derivation(&v));
    match derived {
        Ok(d) => {
            reply(wire::derivation_bytes(&d));
            0
        }
        Err(words) => error(&words),
    }
}

/// Replies a custom error in words (`client::errors`) for the JSON `what`:
/// `{"code", "instruction", "program": "curta" | "system" | an address |
/// null}`; the reply is `{"words", "name"}` (the name Curta's, or null).
/// Returns 0, or 1 with `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn custom_error(what: usize, what_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let v = match unsafe { document(what, what_length) } {
        Ok(v) => v,
        Err(words) => return error(&words),
    };
    let number = |key: &str| {
        v.get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let (Some(code), Some(instruction)) = (number("code"), number("instruction")) else {
        return error("custom_error takes {\"code\": u32, \"instruction\": u32, \"program\"}");
    };
    let raiser = match v.get("program").and_then(Value::as_str) {
        Some("curta") => Raiser::Curta,
        Some("system") => Raiser::System,
        Some(address) => Raiser::Other(address),
        None => Raiser::Unknown,
    };
    let mut o = Object::default().str("words", &errors::custom(code, raiser, instruction));
    o = match (raiser, errors::name(code)) {
        (Raiser::Curta, Some(name)) => o.str("name", &name),
        _ => o.raw("name", "null"),
    };
    reply(o.finish());
    0
}

/// Replies why a value typed as an address is not one, in the client
/// core's words (`client::base58::address_refusal`): `{"what", "text"}` in,
/// `{"words": words or null}` out (null: it is an address).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn address_refusal(what: usize, what_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let v = match unsafe { document(what, what_length) } {
        Ok(v) => v,
        Err(words) => return error(&words),
    };
    let (Some(name), Some(text)) = (
        v.get("what").and_then(Value::as_str),
        v.get("text").and_then(Value::as_str),
    ) else {
        return error("address_refusal takes {\"what\": string, \"text\": string}");
    };
    let o = match crate::client::base58::address_refusal(name, text) {
        Some(words) => Object::default().str("words", &words),
        None => Object::default().raw("words", "null"),
    };
    reply(o.finish());
    0
}

/// Checks a run's parameters for a model before anything is sent
/// (`client::params`): `config` points to the model's 28 configuration
/// bytes, `zero` is its section zero (empty: the prompt is not tokenized;
/// the context refuses nothing, a run that reaches it completes), then the
/// prompt and the JSON `setup`, `{"maxTokens", "temperatureQ16", "seed"}`.
/// Returns 0, or 1 with `{"error": words}` (parameters named in words, not
/// flags).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn check_run(
    config: usize,
    zero: usize,
    zero_length: usize,
    prompt: usize,
    prompt_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let setup = unsafe { document(setup, setup_length) }.and_then(|v| wire::run_setup(&v));
    let (max_tokens, temperature_q16, seed) = match setup {
        Ok(s) => s,
        Err(words) => return error(&words),
    };
    let buffers = (
        unsafe { super::read_config(config) },
        Region::new(zero, zero_length, Error::InvalidFormat),
        Region::new(prompt, prompt_length, Error::InvalidPrompt),
    );
    let (config, zero, prompt) = match buffers {
        (Ok(c), Ok(z), Ok(p)) => unsafe { (c, z.bytes(), p.bytes()) },
        (Err(e), ..) => return error(&format!("the configuration does not check ({e})")),
        _ => return error("a buffer is outside the module's memory"),
    };
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    };
    let checked = if zero.is_empty() {
        params::check(&config, &params)
    } else {
        params::fits_context(config, zero, &params)
    };
    match checked {
        Ok(()) => {
            reply("{}".into());
            0
        }
        Err(r) => error(&r.words(Spelling::Words)),
    }
}

/// Replays a run from a state (`client::replay`, the replay the crank
/// checks against): the artifact, the state, and the JSON `setup`,
/// `{"allowance"}` (1,350,000 if absent). Returns 0 and `wire::replay`'s
/// JSON, or 1 and `{"error", "code", "turn"}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn replay_run(
    artifact: usize,
    artifact_length: usize,
    state: usize,
    state_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    let refuse = |words: &str, code: Option<Error>, turn: u64| {
        refusal(words, code, turn);
        1
    };
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let allowance =
        match unsafe { document(setup, setup_length) }.and_then(|v| wire::allowance_of(&v)) {
            Ok(a) => a,
            Err(words) => return refuse(&words, None, 0),
        };
    match unsafe {
        replayed(
            (artifact, artifact_length),
            (state, state_length),
            allowance,
        )
    } {
        Some((_, r)) => {
            reply(wire::replay(&r));
            0
        }
        None => 1,
    }
}

/// How a receipt differs from the replay's step of its turn
/// (`receipt::differences`), for the JSON `check`,
/// `{"receipt", "step", "run", "model", "royalty"}`: returns 0 and
/// `wire::differences`' array (empty when it matches), or 1 and
/// `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn receipt_differences(check: usize, check_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let parsed = unsafe { document(check, check_length) }.and_then(|v| wire::receipt_check(&v));
    match parsed {
        Ok((r, step, expected)) => {
            reply(wire::differences(&receipt::differences(
                &r, &step, &expected,
            )));
            0
        }
        Err(words) => error(&words),
    }
}

/// An upload's next step (`client::upload::next`) from what the chain
/// holds: the artifact, the model account's bytes (none: no account yet),
/// every bound weight account's bytes one after another, and the JSON
/// `setup` (`wire::upload_setup`). Returns 0 and `wire::upload_step`'s
/// JSON, or 1 and `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
#[allow(clippy::too_many_arguments)] // three buffers and the setup
pub unsafe extern "C" fn upload_next(
    artifact: usize,
    artifact_length: usize,
    model: usize,
    model_length: usize,
    weights: usize,
    weights_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let setup = unsafe { document(setup, setup_length) }.and_then(|v| wire::upload_setup(&v));
    let (config, owner, model_key, chunk, lengths) = match setup {
        Ok(s) => s,
        Err(words) => return error(&words),
    };
    let regions = (
        Region::new(artifact, artifact_length, Error::InvalidFormat),
        Region::new(model, model_length, Error::InvalidFormat),
        Region::new(weights, weights_length, Error::InvalidFormat),
    );
    let (artifact, model, weights) = match regions {
        (Ok(a), Ok(m), Ok(w)) => unsafe { (a.bytes(), m.bytes(), w.bytes()) },
        _ => return error("a buffer is outside the module's memory"),
    };
    if lengths.iter().sum::<usize>() != weights.len() {
        return error("weightLengths do not add up to the weight accounts' bytes");
    }
    let mut at = 0;
    let weights: Vec<Option<&[u8]>> = lengths
        .iter()
        .map(|&n| {
            at += n;
            Some(&weights[at - n..at])
        })
        .collect();
    let u = upload::Upload {
        artifact,
        config: &config,
        owner: &owner,
        model: &model_key,
        chunk,
    };
    let model = (!model.is_empty()).then_some(model);
    match upload::next(&u, model, &weights) {
        Ok(step) => {
            reply(wire::upload_step(&step));
            0
        }
        Err(words) => error(&words),
    }
}

/// An opening's sums and next step (`client::opening`) from the model
/// account's bytes, the bytes at the run's address (empty when there is no
/// account) and the JSON `setup` (`wire::opening_setup`): without `"rent"`,
/// the sums and the account's length (whose rent the host then reads);
/// with it, the deposit and the step too. Returns 0 and `wire::opening`'s
/// JSON, or 1 and `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn open_next(
    model: usize,
    model_length: usize,
    run: usize,
    run_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    use crate::client::opening::{self, Found, Opening};
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let setup = match unsafe { document(setup, setup_length) }.and_then(|v| wire::opening_setup(&v))
    {
        Ok(s) => s,
        Err(words) => return error(&words),
    };
    let regions = (
        Region::new(model, model_length, Error::InvalidFormat),
        Region::new(run, run_length, Error::InvalidFormat),
    );
    let (model, run) = match regions {
        (Ok(m), Ok(r)) => unsafe { (m.bytes(), r.bytes()) },
        _ => return error("a buffer is outside the module's memory"),
    };
    let Ok(account) = protocol::ModelAccount::read(model) else {
        return error(&format!(
            "{} is not a model account",
            base58::encode(&setup.model)
        ));
    };
    let config = match account.config() {
        Ok(c) => c,
        Err(e) => return error(&format!("the model's configuration does not check ({e})")),
    };
    let o = Opening {
        program: &setup.program,
        run: &setup.run,
        model: &setup.model,
        opener: &setup.opener,
        config: &config,
        royalty: account.royalty(),
        prompt_len: setup.prompt_len,
        max_tokens: setup.max_tokens,
        crank_deposit: setup.crank_deposit,
    };
    let sums = opening::deposit(&o, setup.rent.unwrap_or(0));
    let next = match (sums, setup.rent) {
        (Err(words), _) => return error(&words),
        (Ok(d), None) => (d, None),
        (Ok(d), Some(_)) => {
            let held = setup.run_owner.as_ref().map(|owner| Found {
                owner,
                lamports: 0,
                data: run,
            });
            match opening::next(&o, held.as_ref()) {
                Ok(step) => (d, Some((d, step))),
                Err(words) => return error(&words),
            }
        }
    };
    let (d, next) = next;
    reply(wire::opening(d.account_len, d.escrow, d.crank, next));
    0
}

/// Whether the signer may close the run (`client::opening::close`), from
/// the bytes at its address and the JSON `setup` (`wire::closing_setup`).
/// Returns 0 and `{"recovered"}` (the lamports closing returns), or 1 and
/// `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn close_check(
    run: usize,
    run_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    use crate::client::opening::{close, Found};
    // SAFETY (both blocks): the contract of the export; the buffers are only read.
    let setup = match unsafe { document(setup, setup_length) }.and_then(|v| wire::closing_setup(&v))
    {
        Ok(s) => s,
        Err(words) => return error(&words),
    };
    let data = match Region::new(run, run_length, Error::InvalidFormat) {
        Ok(r) => unsafe { r.bytes() },
        Err(_) => return error("the run's data is outside the module's memory"),
    };
    let held = setup.held.as_ref().map(|(owner, lamports)| Found {
        owner,
        lamports: *lamports,
        data,
    });
    match close(&setup.program, &setup.run, &setup.signer, held.as_ref()) {
        Ok(recovered) => {
            reply(Object::default().big("recovered", recovered).finish());
            0
        }
        Err(words) => error(&words),
    }
}

/// Whether an artifact is a model's (`client::artifact::check`): the model
/// account's bytes, the artifact, and `{"model"}` (its address, for the
/// words). Returns 0 and `{}`, or 1 and `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn artifact_check(
    model: usize,
    model_length: usize,
    artifact: usize,
    artifact_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let name = match unsafe { document(setup, setup_length) } {
        Ok(v) => match v.get("model").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => return error("artifact_check takes {\"model\": string}"),
        },
        Err(words) => return error(&words),
    };
    let regions = (
        Region::new(model, model_length, Error::InvalidFormat),
        Region::new(artifact, artifact_length, Error::InvalidFormat),
    );
    let (model, artifact) = match regions {
        (Ok(m), Ok(a)) => unsafe { (m.bytes(), a.bytes()) },
        _ => return error("a buffer is outside the module's memory"),
    };
    let Ok(account) = protocol::ModelAccount::read(model) else {
        return error(&format!("{name} is not a model account"));
    };
    match crate::client::artifact::check(&name, &account, artifact) {
        Ok(()) => {
            reply("{}".to_string());
            0
        }
        Err(words) => error(&words),
    }
}

/// An artifact from its sections (`client::artifact::assemble`): the
/// sections' bytes one after another and `{"model", "sectionLengths"}`.
/// Returns 0 with the artifact as the reply's bytes (not JSON), or 1 and
/// `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn artifact_assemble(
    sections: usize,
    sections_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    // SAFETY (both blocks): the contract of the export; the buffers are only read.
    let v = match unsafe { document(setup, setup_length) } {
        Ok(v) => v,
        Err(words) => return error(&words),
    };
    let name = v.get("model").and_then(Value::as_str);
    let lengths: Option<Vec<usize>> = v
        .get("sectionLengths")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(|n| n.as_u64().map(|n| n as usize)).collect());
    let (Some(name), Some(lengths)) = (name, lengths) else {
        return error("artifact_assemble takes {\"model\": string, \"sectionLengths\": [number]}");
    };
    let bytes = match Region::new(sections, sections_length, Error::InvalidFormat) {
        Ok(r) => unsafe { r.bytes() },
        Err(_) => return error("the sections are outside the module's memory"),
    };
    if lengths.iter().sum::<usize>() != bytes.len() {
        return error("sectionLengths do not add up to the sections' bytes");
    }
    let mut at = 0;
    let parts: Vec<&[u8]> = lengths
        .iter()
        .map(|&n| {
            at += n;
            &bytes[at - n..at]
        })
        .collect();
    match crate::client::artifact::assemble(name, &parts) {
        Ok(artifact) => {
            *REPLY.lock().unwrap_or_else(|e| e.into_inner()) = artifact;
            0
        }
        Err(words) => error(&words),
    }
}

/// Plans a finished run's delivery (`client::delivery::plan`, what the
/// CLI's crank sends) from the run account's data: returns 0 and
/// `{"refund", "program", "accounts": [{"address", "writable"}],
/// "computeUnits", "fee"}` (addresses base58, the fee a decimal string), or
/// 1 and `{"error": words, "reason": "noCallback" | "notFinished" |
/// "notARun"}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn delivery_plan(data: usize, data_length: usize) -> u32 {
    use crate::client::delivery::{plan, NotDeliverable};
    let data = match Region::new(data, data_length, Error::InvalidFormat) {
        // SAFETY: the contract of the export; the buffer is only read.
        Ok(r) => unsafe { r.bytes() },
        Err(_) => return error("the run's data is outside the module's memory"),
    };
    match plan(&[0; 32], data) {
        Ok(d) => {
            let accounts = json::array(d.accounts.iter().map(|(address, writable)| {
                Object::default()
                    .str("address", &base58::encode(address))
                    .bool("writable", *writable)
                    .finish()
            }));
            reply(
                Object::default()
                    .str("refund", &base58::encode(&d.refund))
                    .str("program", &base58::encode(&d.program))
                    .raw("accounts", &accounts)
                    .num("computeUnits", d.compute_units as u64)
                    .big("fee", d.fee)
                    .finish(),
            );
            0
        }
        Err(e) => {
            let reason = match e {
                NotDeliverable::NoCallback => "noCallback",
                NotDeliverable::NotFinished => "notFinished",
                NotDeliverable::NotARun(_) => "notARun",
            };
            reply(
                Object::default()
                    .str("error", &e.words("the run"))
                    .str("reason", reason)
                    .finish(),
            );
            1
        }
    }
}

/// Writes a section's digest (`protocol::section_digest`, the chain
/// `seal_section` checks) at `output`, 32 bytes; no JSON. Returns 0, or
/// `InvalidFormat` for a buffer outside memory.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn section_digest(bytes: usize, bytes_length: usize, output: usize) -> u32 {
    let run = || -> Result<(), Error> {
        let bytes = Region::new(bytes, bytes_length, Error::InvalidFormat)?;
        let output = Region::new(output, 32, Error::BufferTooSmall)?;
        // SAFETY: the contract of the export; the digest is made before
        // the output is borrowed.
        let digest = protocol::section_digest(unsafe { bytes.bytes() });
        unsafe { output.bytes_mut() }.copy_from_slice(&digest);
        Ok(())
    };
    super::status(run())
}

/// Writes a model's identity (`protocol::model_identity`, what
/// `seal_model` records) for the model at the 32-byte `address` whose
/// account holds `data`, at `output`, 32 bytes; no JSON.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn model_identity(
    address: usize,
    data: usize,
    data_length: usize,
    output: usize,
) -> u32 {
    let run = || -> Result<(), Error> {
        let address = Region::new(address, 32, Error::InvalidFormat)?;
        let data = Region::new(data, data_length, Error::InvalidFormat)?;
        let output = Region::new(output, 32, Error::BufferTooSmall)?;
        // SAFETY: as above.
        let address: &[u8; 32] = unsafe { address.bytes() }
            .try_into()
            .map_err(|_| Error::InvalidFormat)?;
        let identity = protocol::model_identity(address, unsafe { data.bytes() });
        unsafe { output.bytes_mut() }.copy_from_slice(&identity);
        Ok(())
    };
    super::status(run())
}

/// Replies what an upload of the artifact from nothing sends, and the
/// accounts it pays rent for (`client::upload::estimate`), a write
/// carrying `chunk` weight bytes: `{"accountLengths": [...],
/// "transactions", "writes", "signatures"}`. Returns 0, or 1 with
/// `{"error": words}` for an artifact that does not check.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn upload_estimate(
    chunk: u32,
    artifact: usize,
    artifact_length: usize,
) -> u32 {
    let artifact = match Region::new(artifact, artifact_length, Error::InvalidFormat) {
        // SAFETY: checked by `Region::new`; only read.
        Ok(a) => unsafe { a.bytes() },
        Err(_) => return error("a buffer is outside the module's memory"),
    };
    let metadata = match open_artifact(artifact) {
        Ok(m) => m,
        Err(e) => return error(&std::format!("the artifact does not check: {e}")),
    };
    if chunk == 0 {
        return error("chunk is at least one byte");
    }
    let e = upload::estimate(&metadata, chunk as usize);
    let lens = e.account_lens.iter().map(|l| l.to_string());
    reply(
        Object::default()
            .raw("accountLengths", &json::array(lens))
            .num("transactions", e.transactions as u64)
            .num("writes", e.writes as u64)
            .num("signatures", e.signatures as u64)
            .finish(),
    );
    0
}

/// What a wallet sends a session key for a run (`client::session_key`):
/// the JSON `what` (`wire::session_key_funding`) in; 0 and `{"funding"}`,
/// or 1 and `{"error": words}`.
///
/// # Safety
/// The caller's contract (the module comment of `wasm`).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn session_key_funding(what: usize, what_length: usize) -> u32 {
    use crate::client::session_key::funding;
    // SAFETY: the contract of the export; the buffer is only read.
    let (deposit, fees, f) =
        match unsafe { document(what, what_length) }.and_then(|v| wire::session_key_funding(&v)) {
            Ok(parts) => parts,
            Err(words) => return error(&words),
        };
    match funding(deposit, fees, &f) {
        Some(lamports) => {
            reply(Object::default().big("funding", lamports).finish());
            0
        }
        None => error(&format!(
            "a deposit of {deposit} and fees of {fees} lamports add up to more than 2^64 - 1"
        )),
    }
}

/// Replies the crank fee to offer for turns whose message costs
/// `turn_fee` lamports, and its basis in words
/// (`client::budget::crank_fee_advice`): `{"fee", "basis"}`.
/// `priced_by_cluster` 1 when the cluster priced the message, else 0.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn crank_fee_advice(turn_fee: u64, priced_by_cluster: u32) -> u32 {
    let (fee, basis) = crate::client::budget::crank_fee_advice(turn_fee, priced_by_cluster == 1);
    reply(
        Object::default()
            .big("fee", fee)
            .str("basis", &basis)
            .finish(),
    );
    0
}

/// The most weight bytes one `write` transaction carries, the owner
/// paying (`client::packing::write_chunk`): `version` 0 for a legacy
/// message, 1 for a version 0 one (anything else: 0).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn write_chunk(version: u32) -> u32 {
    message_version(version).map_or(0, |v| packing::write_chunk(v) as u32)
}

/// Replies the transactions that open a run (`client::packing::open_steps`)
/// for a prompt of `prompt_length` bytes: `[{"create", "stage": [start,
/// end] or null, "open": bytes staged before it, or null}]`. `version` as
/// `write_chunk`'s; `create` and `opener_is_payer` 0 or 1. Returns 0, or 1
/// with `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn open_steps(
    version: u32,
    prompt_length: u32,
    create: u32,
    opener_is_payer: u32,
) -> u32 {
    let Some(version) = message_version(version) else {
        return error("version is 0 (legacy) or 1 (version 0)");
    };
    let steps = packing::open_steps(
        version,
        prompt_length as usize,
        create == 1,
        opener_is_payer == 1,
    );
    let items = steps.iter().map(|s| {
        let o = Object::default().bool("create", s.create);
        let o = match &s.stage {
            Some(r) => o.raw(
                "stage",
                &json::array([r.start.to_string(), r.end.to_string()]),
            ),
            None => o.raw("stage", "null"),
        };
        match s.open {
            Some(staged) => o.num("open", staged as u64),
            None => o.raw("open", "null"),
        }
        .finish()
    });
    reply(json::array(items));
    0
}

fn message_version(version: u32) -> Option<packing::Version> {
    match version {
        0 => Some(packing::Version::Legacy),
        1 => Some(packing::Version::V0),
        _ => None,
    }
}

/// Replies the interface's sizes and codes (see the module's docs).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn interface() -> u32 {
    let words = crate::state::WORD_NAMES.iter().map(|w| {
        let mut s = String::new();
        json::string(&mut s, &wire::camel(w));
        s
    });
    let mut errors = Object::default();
    for e in Error::ALL {
        errors = errors.str(&e.code().to_string(), e.name());
    }
    let o = Object::default()
        .num("planLength", super::PLAN_LEN as u64)
        .num("stateLayoutLength", super::LAYOUT_LEN as u64)
        .num("differenceLength", super::DIFFERENCE_LEN as u64)
        .num("outOfRange", super::OUT_OF_RANGE as u64)
        .big("quoteError", super::QUOTE_ERROR)
        .raw("stateLayoutWords", &json::array(words))
        .raw("coreErrors", &errors.finish());
    reply(o.finish());
    0
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn reply_pointer() -> usize {
    REPLY.lock().unwrap_or_else(|e| e.into_inner()).as_ptr() as usize
}

/// The last reply's length in bytes.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn reply_length() -> usize {
    REPLY.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// A JSON document the host passed.
///
/// # Safety
/// The caller's contract (the module comment of `wasm`).
unsafe fn document(ptr: usize, len: usize) -> Result<Value, String> {
    let region = Region::new(ptr, len, Error::InvalidFormat)
        .map_err(|_| "the JSON buffer does not lie inside the module's memory".to_string())?;
    // SAFETY: checked by `Region::new`; read before anything is written.
    let text = core::str::from_utf8(unsafe { region.bytes() })
        .map_err(|_| "the JSON is not UTF-8".to_string())?;
    Value::parse(text)
}

/// The artifact's configuration and the run's replay from the state, or
/// `None` with the refusal replied (`{"error", "code", "turn"}`).
///
/// # Safety
/// The caller's contract (the module comment of `wasm`).
unsafe fn replayed(
    (artifact, artifact_length): (usize, usize),
    (state, state_length): (usize, usize),
    allowance: u32,
) -> Option<(crate::format::Config, replay::Replay)> {
    let regions = (
        Region::new(artifact, artifact_length, Error::InvalidFormat),
        Region::new(state, state_length, Error::InvalidState),
    );
    let (artifact, state) = match regions {
        // SAFETY: checked by `Region::new`; only read.
        (Ok(a), Ok(s)) => unsafe { (a.bytes(), s.bytes()) },
        (Err(e), _) | (_, Err(e)) => {
            refusal("a buffer is outside the module's memory", Some(e), 0);
            return None;
        }
    };
    let config = match open_artifact(artifact) {
        Ok(m) => m.config,
        Err(e) => {
            refusal("the artifact does not check", Some(e), 0);
            return None;
        }
    };
    match replay::replay(artifact, state, allowance) {
        Ok(r) => Some((config, r)),
        Err(e) => {
            let words = match e.turn {
                0 => "the run's state does not check".to_string(),
                t => std::format!("the replay of turn {t} failed"),
            };
            refusal(&words, Some(e.error), e.turn);
            None
        }
    }
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn crank_new(
    artifact: usize,
    artifact_length: usize,
    state: usize,
    state_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    let refuse = |words: &str, code: Option<Error>, turn: u64| {
        refusal(words, code, turn);
        0
    };
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let setup = match unsafe { document(setup, setup_length) }.and_then(|v| wire::params(&v)) {
        Ok(s) => s,
        Err(words) => return refuse(&words, None, 0),
    };
    let (params, allowance) = setup;
    let artifact = (artifact, artifact_length);
    let Some((config, replay)) = (unsafe { replayed(artifact, (state, state_length), allowance) })
    else {
        return 0;
    };
    let crank = Crank::new(config, replay, params);
    reply(
        Object::default()
            .num("remaining", crank.steps().len() as u64)
            .big("turnsBefore", crank.summary().turns_before)
            .finish(),
    );
    let mut cranks = CRANKS.lock().unwrap_or_else(|e| e.into_inner());
    let slot = cranks.iter().position(Option::is_none).unwrap_or_else(|| {
        cranks.push(None);
        cranks.len() - 1
    });
    cranks[slot] = Some(crank);
    slot as u32 + 1
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn crank_next(
    handle: u32,
    event: usize,
    event_length: usize,
    bytes: usize,
    bytes_length: usize,
) -> u32 {
    // SAFETY: the contract of the export; the buffers are only read.
    let parsed = unsafe { document(event, event_length) };
    let bytes = match Region::new(bytes, bytes_length, Error::InvalidState) {
        Ok(r) => unsafe { r.bytes() },
        Err(_) => return error("the state buffer does not lie inside the module's memory"),
    };
    let event = match parsed.and_then(|v| wire::event(&v, bytes)) {
        Ok(e) => e,
        Err(words) => return error(&words),
    };
    let mut cranks = CRANKS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Some(crank)) = cranks.get_mut((handle as usize).wrapping_sub(1)) else {
        return error(&std::format!("there is no crank {handle}"));
    };
    reply(wire::action(&crank.next(event)));
    0
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn crank_summary(handle: u32) -> u32 {
    let cranks = CRANKS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Some(crank)) = cranks.get((handle as usize).wrapping_sub(1)) else {
        return error(&std::format!("there is no crank {handle}"));
    };
    reply(wire::summary(crank.summary()));
    0
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn crank_free(handle: u32) {
    let mut cranks = CRANKS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = cranks.get_mut((handle as usize).wrapping_sub(1)) {
        *slot = None;
    }
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn batch_new(setup: usize, setup_length: usize) -> u32 {
    // SAFETY: the contract of the export; the buffer is only read.
    let (whats, options, per_signature) =
        match unsafe { document(setup, setup_length) }.and_then(|v| wire::batch_setup(&v)) {
            Ok(s) => s,
            Err(words) => {
                error(&words);
                return 0;
            }
        };
    reply("{}".to_string());
    let mut batches = BATCHES.lock().unwrap_or_else(|e| e.into_inner());
    let slot = batches.iter().position(Option::is_none).unwrap_or_else(|| {
        batches.push(None);
        batches.len() - 1
    });
    batches[slot] = Some(Batch::new(whats, options, per_signature));
    slot as u32 + 1
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn batch_next(handle: u32, event: usize, event_length: usize) -> u32 {
    // SAFETY: the contract of the export; the buffer is only read.
    let event = match unsafe { document(event, event_length) }.and_then(|v| wire::batch_event(&v)) {
        Ok(e) => e,
        Err(words) => return error(&words),
    };
    let mut batches = BATCHES.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Some(batch)) = batches.get_mut((handle as usize).wrapping_sub(1)) else {
        return error(&std::format!("there is no batch {handle}"));
    };
    let action = batch.next(event);
    reply(wire::batch_action(
        &action,
        &batch.take_landed(),
        &batch.summary(),
    ));
    0
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn batch_free(handle: u32) {
    let mut batches = BATCHES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = batches.get_mut((handle as usize).wrapping_sub(1)) {
        *slot = None;
    }
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn receipts(logs: usize, logs_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let v = match unsafe { document(logs, logs_length) } {
        Ok(v) => v,
        Err(words) => return error(&words),
    };
    let program = v.get("programId").and_then(Value::as_str);
    let lines = v.get("logs").and_then(Value::as_array);
    let (Some(program), Some(lines)) = (program, lines) else {
        return error("receipts takes {\"programId\": string, \"logs\": [string]}");
    };
    let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
    let found = receipt::from_logs(&lines, program);
    reply(json::array(found.iter().map(wire::receipt)));
    0
}

/// The end of a transaction's logs as every client quotes it in an error
/// (`client::errors::log_tail`): `{"logs": [string]}` in, `{"words"}` out
/// (empty for no logs). Returns 0, or 1 with `{"error": words}`.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn log_tail(logs: usize, logs_length: usize) -> u32 {
    // SAFETY: the contract of the export.
    let v = match unsafe { document(logs, logs_length) } {
        Ok(v) => v,
        Err(words) => return error(&words),
    };
    let Some(lines) = v.get("logs").and_then(Value::as_array) else {
        return error("log_tail takes {\"logs\": [string]}");
    };
    let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
    reply(
        Object::default()
            .str("words", &errors::log_tail(&lines))
            .finish(),
    );
    0
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn quote_run(
    artifact: usize,
    artifact_length: usize,
    prompt: usize,
    prompt_length: usize,
    setup: usize,
    setup_length: usize,
) -> u32 {
    let refuse = |words: &str, code: Option<Error>, turn: u64| {
        refusal(words, code, turn);
        1
    };
    // SAFETY (every block below): the contract of the export; the buffers
    // are only read.
    let setup = unsafe { document(setup, setup_length) }.and_then(|v| wire::quote_setup(&v));
    let (prices, max_tokens, temperature_q16, seed) = match setup {
        Ok(s) => s,
        Err(words) => return refuse(&words, None, 0),
    };
    let regions = (
        Region::new(artifact, artifact_length, Error::InvalidFormat),
        Region::new(prompt, prompt_length, Error::InvalidPrompt),
    );
    let (artifact, prompt) = match regions {
        (Ok(a), Ok(p)) => unsafe { (a.bytes(), p.bytes()) },
        (Err(e), _) | (_, Err(e)) => {
            return refuse("a buffer is outside the module's memory", Some(e), 0)
        }
    };
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    };
    match quote::quote(artifact, &params, &prices) {
        Ok(q) => {
            reply(wire::quote(&q));
            0
        }
        Err(e) => {
            let words = match e.turn {
                0 => "the run cannot be priced".to_string(),
                t => std::format!("the replay of turn {t} failed"),
            };
            refuse(&words, Some(e.error), e.turn)
        }
    }
}

#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn decimal_q16(text: usize, text_length: usize) -> u64 {
    let Ok(region) = Region::new(text, text_length, Error::InvalidPrompt) else {
        return u64::MAX;
    };
    // SAFETY: checked by `Region::new`; only read.
    let bytes = unsafe { region.bytes() };
    core::str::from_utf8(bytes)
        .ok()
        .and_then(crate::client::params::decimal_q16)
        .unwrap_or(u64::MAX)
}
