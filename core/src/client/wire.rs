//! The crank's and the batch's setups, events, actions and summaries, and
//! turn receipts, as JSON: how a host across the WebAssembly interface
//! talks to the client core (`docs/client.md`, "The client core", gives
//! every field). Every `u64` is a decimal string, every `u32` a number,
//! bytes are base64 and hashes hex; field names are JavaScript's camelCase.

use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use super::base58;
use super::base64;
use super::batch;
use super::budget::LimitPolicy;
use super::crank::{
    hex, Action, Event, Options, Params, Status, Stop, Summary, Transaction, TurnRecord,
};
use super::keys::{Derivation, RunSeed};
use super::opening;
use super::quote::{Prices, Quote};
use super::receipt::{Difference, Expected, Receipt};
use super::replay::{Replay, Step};
use super::upload;
use crate::json::{array, Object, Value};
use crate::planner::CHARGES;
use crate::protocol::Address;
use crate::protocol::TurnEvent;

fn field<'v>(v: &'v Value, key: &str) -> Result<&'v Value, String> {
    v.get(key)
        .ok_or_else(|| format!("the field {key:?} is missing"))
}

fn u64_of(v: &Value, key: &str) -> Result<u64, String> {
    field(v, key)?
        .as_u64()
        .ok_or_else(|| format!("{key} must be a whole number from 0 to {}", u64::MAX))
}

fn u32_of(v: &Value, key: &str) -> Result<u32, String> {
    let n = u64_of(v, key)?;
    u32::try_from(n).map_err(|_| format!("{key} is {n}: at most {}", u32::MAX))
}

/// The optional `"allowance"`, 1,350,000 if absent: a run's turn allowance
/// (its header's, the config's at opening), or for a quote the config's.
pub fn allowance_of(v: &Value) -> Result<u32, String> {
    match v.get("allowance") {
        Some(_) => u32_of(v, "allowance"),
        None => Ok(CHARGES.allowance),
    }
}

fn str_of<'v>(v: &'v Value, key: &str) -> Result<&'v str, String> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| format!("{key} must be a string"))
}

fn address_of(v: &Value, key: &str) -> Result<Address, String> {
    let text = str_of(v, key)?;
    match base58::address_refusal(key, text) {
        None => Ok(base58::decode::<32>(text).unwrap_or_default()),
        Some(words) => Err(words),
    }
}

/// The crank's optional `"window"` (0: measured), `"cuLimit"`
/// (`"exact"`, `"uniform"` or a number), `"priorityRamp"` (true),
/// `"leaveToOthers"` and `"followFirst"` (false), and `"minPayment"`
/// (lamports a turn must pay its sender; absent: every turn).
fn options(v: &Value) -> Result<Options, String> {
    let mut options = Options::default();
    if let Some(w) = v.get("window") {
        let w = w.as_u64().filter(|w| *w <= 4096);
        let words = "window must be a number of turns from 1 to 4096, or 0 to measure it";
        options.window = w.ok_or(words)? as usize;
    }
    if let Some(limit) = v.get("cuLimit") {
        let text = match limit {
            Value::String(s) | Value::Number(s) => s.as_str(),
            _ => "",
        };
        options.limits = LimitPolicy::parse(text)?;
    }
    if let Some(ramp) = v.get("priorityRamp") {
        options.priority_ramp = ramp.as_bool().ok_or("priorityRamp must be true or false")?;
    }
    if let Some(leave) = v.get("leaveToOthers") {
        options.leave_to_others = leave
            .as_bool()
            .ok_or("leaveToOthers must be true or false")?;
    }
    if let Some(follow) = v.get("followFirst") {
        options.follow_first = follow
            .as_bool()
            .ok_or("followFirst must be true or false")?;
    }
    if v.get("minPayment").is_some() {
        options.min_payment = Some(u64_of(v, "minPayment")?);
    }
    Ok(options)
}

/// A Rust name as the wire spells keys: `prompt_tokens` -> `promptTokens`.
pub fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// A crank's setup: its `Params` and the run's allowance (the Run account's
/// `allowance`, its config's at opening: not the config's now).
///
/// `{"programId", "run", "model", "owner", "payer"}` (base58), `"royalty"`,
/// `"crankFee"`, `"crankDeposit"`, `"keep"`, `"lamportsPerSignature"`
/// (u64), and optionally `"allowance"`, the run's
/// (1,350,000 by default), `"window"` (32), `"cuLimit"` (`"uniform"`,
/// `"exact"` or a number) and `"priorityRamp"` (true).
pub fn params(v: &Value) -> Result<(Params, u32), String> {
    let options = options(v)?;
    let allowance = allowance_of(v)?;
    let program_id = str_of(v, "programId")?;
    address_of(v, "programId")?;
    let params = Params {
        program_id: program_id.to_string(),
        run: address_of(v, "run")?,
        model: address_of(v, "model")?,
        royalty: u64_of(v, "royalty")?,
        crank_fee: u64_of(v, "crankFee")?,
        crank_deposit: u64_of(v, "crankDeposit")?,
        owner: address_of(v, "owner")?,
        payer: str_of(v, "payer")?.to_string(),
        keep: u64_of(v, "keep")?,
        lamports_per_signature: u64_of(v, "lamportsPerSignature")?,
        options,
    };
    Ok((params, allowance))
}

fn status(v: &Value) -> Result<Status, String> {
    Ok(match str_of(v, "status")? {
        "pending" => Status::Pending,
        "seen" => Status::Seen {
            slot: u64_of(v, "slot")?,
        },
        "landed" => Status::Landed {
            slot: u64_of(v, "slot")?,
        },
        "failed" => Status::Failed {
            slot: u64_of(v, "slot")?,
            fee: u64_of(v, "fee")?,
            custom: match v.get("custom") {
                None | Some(Value::Null) => None,
                Some(_) => Some(u32_of(v, "custom")?),
            },
            words: str_of(v, "words")?.to_string(),
            log_tail: v
                .get("logTail")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        },
        other => return Err(format!("status {other:?} is not pending, landed or failed")),
    })
}

fn transaction(v: &Value) -> Result<Transaction, String> {
    let logs = field(v, "logs")?
        .as_array()
        .ok_or("logs must be an array of strings")?;
    let logs = logs.iter().map(|l| l.as_str().map(str::to_string));
    Ok(Transaction {
        slot: u64_of(v, "slot")?,
        fee: u64_of(v, "fee")?,
        consumed_cu: u64_of(v, "consumedCu")?,
        logs: logs
            .collect::<Option<_>>()
            .ok_or("logs must be an array of strings")?,
    })
}

fn list<T>(v: &Value, key: &str, each: fn(&Value) -> Result<T, String>) -> Result<Vec<T>, String> {
    let items = field(v, key)?
        .as_array()
        .ok_or_else(|| format!("{key} must be an array"))?;
    items.iter().map(each).collect()
}

/// An event: `{"event": "start" | "sent" | "waited" | "statuses" |
/// "transactions" | "runState" | "height" | "cancel", ...}`. `runState`'s
/// state is `state`, the bytes passed beside the JSON.
pub fn event(v: &Value, state: &[u8]) -> Result<Event, String> {
    Ok(match str_of(v, "event")? {
        "start" => Event::Start,
        "sent" => Event::Sent {
            signature: str_of(v, "signature")?.to_string(),
            last_valid_height: u64_of(v, "lastValidHeight")?,
        },
        "waited" => Event::Waited {
            now_ms: u64_of(v, "nowMs")?,
        },
        "statuses" => Event::Statuses(list(v, "statuses", status)?),
        "transactions" => Event::Transactions(list(v, "transactions", transaction)?),
        "runState" => Event::RunState(state.to_vec()),
        "height" => Event::Height {
            height: u64_of(v, "height")?,
            balance: u64_of(v, "balance")?,
        },
        "cancel" => Event::Cancel,
        other => return Err(format!("event {other:?} is not one the crank takes")),
    })
}

fn strings(items: &[String]) -> String {
    array(items.iter().map(|s| {
        let mut out = String::new();
        crate::json::string(&mut out, s);
        out
    }))
}

fn numbers<T: ToString>(items: &[T]) -> String {
    array(items.iter().map(|n| n.to_string()))
}

fn stop(s: &Stop) -> String {
    let mut o = Object::default()
        .str("action", "stop")
        .str("kind", s.kind.name())
        .str("words", &s.words);
    o = match s.turn {
        Some(t) => o.big("turn", t),
        None => o.raw("turn", "null"),
    };
    for (key, value) in [("field", &s.field), ("signature", &s.signature)] {
        o = match value {
            Some(v) => o.str(key, v),
            None => o.raw(key, "null"),
        };
    }
    o.finish()
}

/// An action: `{"action": "send" | "wait" | "statuses" | "transactions" |
/// "readRun" | "height" | "done" | "stop", ...}`.
pub fn action(a: &Action) -> String {
    let o = Object::default();
    match a {
        Action::Send(s) => o
            .str("action", "send")
            .num("index", s.index as u64)
            .big("turn", s.turn)
            .big("expectedTurns", s.expected_turns)
            .raw("sections", &numbers(&s.sections))
            .num("cuLimit", s.cu_limit as u64)
            .big("microLamports", s.micro_lamports)
            .bool("freshBlockhash", s.fresh_blockhash)
            .finish(),
        Action::Wait { ms } => o.str("action", "wait").num("ms", *ms).finish(),
        Action::Statuses { signatures } => o
            .str("action", "statuses")
            .raw("signatures", &strings(signatures))
            .finish(),
        Action::Transactions { signatures } => o
            .str("action", "transactions")
            .raw("signatures", &strings(signatures))
            .finish(),
        Action::ReadRun => o.str("action", "readRun").finish(),
        Action::Height => o.str("action", "height").finish(),
        Action::Done => o.str("action", "done").finish(),
        Action::Stop(s) => stop(s),
    }
}

fn turn_record(t: &TurnRecord) -> String {
    Object::default()
        .big("turn", t.turn)
        .str("signature", &t.signature)
        .big("slot", t.slot)
        .num("cuLimit", t.cu_limit as u64)
        .num("estimatedCu", t.estimated_cu as u64)
        .num("charged", t.charged as u64)
        .big("programCu", t.program_cu)
        .big("consumedCu", t.consumed_cu)
        .big("fee", t.fee)
        .big("crankPaid", t.crank_paid)
        .num("generated", t.generated as u64)
        .raw("tokens", &numbers(&t.tokens))
        .str("text", &base64::encode(&t.text))
        .str("stateSha256", &hex(&t.state_sha256))
        .finish()
}

/// What a crank did: `turnsBefore`, `turns` (each `turn`, `signature`,
/// `slot`, `cuLimit`, `estimatedCu`, `charged`, `programCu`, `consumedCu`,
/// `fee`, `crankPaid`, `generated`, `tokens`, `text`, `stateSha256`),
/// `failed` (`turn`, `signature`, `slot`, `fee`, `error`), `turnsByOthers`,
/// `backedOff`, `backoffs` (how many times it backed off), `inFlightMost`
/// (the most turns it had in flight at once), `leftToOthers` (it left the
/// run to another cranker, `leaveToOthers`), `leftUnpaid` (it ended where
/// the turns stop paying `minPayment`), `closedAfter`
/// (closed after its last turn, before the final
/// read), `finalStateSha256`, `text`, `fees`, `earned` (crank fees
/// paid to the payer), `transactions`.
pub fn summary(s: &Summary) -> String {
    let failed = s.failed.iter().map(|f| {
        Object::default()
            .big("turn", f.turn)
            .str("signature", &f.signature)
            .big("slot", f.slot)
            .big("fee", f.fee)
            .str("error", &f.error)
            .finish()
    });
    Object::default()
        .big("turnsBefore", s.turns_before)
        .raw("turns", &array(s.turns.iter().map(turn_record)))
        .raw("failed", &array(failed))
        .big("turnsByOthers", s.turns_by_others)
        .bool("backedOff", s.backoffs > 0)
        .num("backoffs", s.backoffs as u64)
        .num("inFlightMost", s.in_flight_most as u64)
        .bool("leftToOthers", s.left_to_others)
        .bool("leftUnpaid", s.left_unpaid)
        .bool("closedAfter", s.closed_after)
        .str("finalStateSha256", &hex(&s.final_state_sha256))
        .str("text", &base64::encode(&s.text))
        .big("fees", s.fees())
        .big("earned", s.earned())
        .big("transactions", s.transactions())
        .finish()
}

/// A turn receipt: `run`, `model` (base58), `turns`, `paid`, `crankPaid`
/// (u64), `generated`, `generatedThisTurn`, `charged`, `phase`,
/// `textLength`, `tokens`, `text` (base64).
pub fn receipt(r: &Receipt) -> String {
    let e = &r.event;
    Object::default()
        .str("run", &base58::encode(&e.run))
        .str("model", &base58::encode(&e.model))
        .big("turns", e.turns)
        .big("paid", e.paid)
        .big("crankPaid", e.crank_paid)
        .num("generated", e.generated as u64)
        .num("generatedThisTurn", e.generated_this_turn as u64)
        .num("charged", e.charged as u64)
        .num("phase", e.phase as u64)
        .num("textLength", e.text_len as u64)
        .raw("tokens", &numbers(&r.tokens))
        .str("text", &base64::encode(&r.text))
        .finish()
}

/// A run's parameters besides its prompt: `{"maxTokens",
/// "temperatureQ16" (0 if absent), "seed" (0 if absent)}`.
pub fn run_setup(v: &Value) -> Result<(u32, u32, u64), String> {
    let t = match v.get("temperatureQ16") {
        Some(_) => u32_of(v, "temperatureQ16")?,
        None => 0,
    };
    let seed = match v.get("seed") {
        Some(_) => u64_of(v, "seed")?,
        None => 0,
    };
    Ok((u32_of(v, "maxTokens")?, t, seed))
}

/// A quote's prices: `{"allowance", "royalty", "lamportsPerSignature",
/// "openTransactions", "rent"}`, the optional `"crankFee"` (0), and the
/// crank's optional `"window"`, `"cuLimit"` and `"priorityRamp"`; with the run's `"maxTokens"`,
/// `"temperatureQ16"` and `"seed"` (the prompt is passed as bytes).
pub fn quote_setup(v: &Value) -> Result<(Prices, u32, u32, u64), String> {
    let options = options(v)?;
    let prices = Prices {
        allowance: allowance_of(v)?,
        royalty: u64_of(v, "royalty")?,
        lamports_per_signature: u64_of(v, "lamportsPerSignature")?,
        crank: options,
        open_transactions: u64_of(v, "openTransactions")?,
        rent: u64_of(v, "rent")?,
        crank_fee: match v.get("crankFee") {
            Some(_) => u64_of(v, "crankFee")?,
            None => 0,
        },
    };
    let (max_tokens, t, seed) = run_setup(v)?;
    Ok((prices, max_tokens, t, seed))
}

/// A quote: `turns`, `turnsAtMost`, `tokens`, `openTransactions`,
/// `transactions`, `signatures`, `cuRequested`, `cuEstimated` (u64),
/// `cuLimitMax`, `cuPerTurn`, `baseFees`, `priorityFees`,
/// `turnPriorityFeeMax`, `turnPriceMax`, `fees`,
/// `accountLength`, `rent`, `escrow`, `royaltyPaid`, `crankFee`,
/// `crankDeposit`, `deposit` (u64), `text` (base64).
pub fn quote(q: &Quote) -> String {
    Object::default()
        .big("turns", q.turns)
        .big("turnsAtMost", q.turns_at_most)
        .num("tokens", q.tokens as u64)
        .big("openTransactions", q.open_transactions)
        .big("transactions", q.transactions)
        .big("signatures", q.signatures)
        .big("cuRequested", q.cu_requested)
        .big("cuEstimated", q.cu_estimated)
        .num("cuLimitMax", q.cu_limit_max as u64)
        .raw("cuPerTurn", &numbers(&q.cu_per_turn))
        .big("baseFees", q.base_fees)
        .big("priorityFees", q.priority_fees)
        .big("turnPriorityFeeMax", q.turn_priority_fee_max)
        .big("turnPriceMax", q.turn_price_max)
        .big("fees", q.fees())
        .big("accountLength", q.account_len as u64)
        .big("rent", q.rent)
        .big("escrow", q.escrow)
        .big("royaltyPaid", q.royalty_paid)
        .big("crankFee", q.crank.fee)
        .big("crankDeposit", q.crank.deposit)
        .big("deposit", q.deposit())
        .str("text", &base64::encode(&q.text))
        .finish()
}

fn bytes32_of(v: &Value, key: &str) -> Result<[u8; 32], String> {
    let text = str_of(v, key)?;
    base64::decode(text)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| format!("{key} must be 32 bytes in base64"))
}

/// What an account is derived for (`client::keys`): `{"kind": "config",
/// "programId"}`, `{"kind": "model", "programId", "config",
/// "artifactSha256" (base64), "royalty"}`, `{"kind": "weight", "model",
/// "section"}`, `{"kind": "run", "model", "prompt" (base64), "maxTokens",
/// "temperatureQ16", "seed", "label"}` or `{"kind": "buffer", "programId",
/// "soSha256" (base64)}`; addresses in base58.
pub fn derivation(v: &Value) -> Result<Derivation, String> {
    Ok(match str_of(v, "kind")? {
        "config" => Derivation::config(&address_of(v, "programId")?),
        "model" => Derivation::model(
            &address_of(v, "programId")?,
            &address_of(v, "config")?,
            &bytes32_of(v, "artifactSha256")?,
            u64_of(v, "royalty")?,
        ),
        "weight" => Derivation::weight(&address_of(v, "model")?, u32_of(v, "section")?),
        "run" => {
            let prompt = str_of(v, "prompt")?;
            let prompt = base64::decode(prompt).ok_or("prompt must be base64")?;
            Derivation::run(&RunSeed {
                model: &address_of(v, "model")?,
                prompt: &prompt,
                max_tokens: u32_of(v, "maxTokens")?,
                temperature_q16: u32_of(v, "temperatureQ16")?,
                seed: u64_of(v, "seed")?,
                label: str_of(v, "label")?,
            })
        }
        "buffer" => Derivation::buffer(&address_of(v, "programId")?, &bytes32_of(v, "soSha256")?),
        other => {
            return Err(format!(
                "no account is derived for {other:?}: config, model, weight, run or buffer"
            ))
        }
    })
}

/// A derivation's hashed bytes around the secret: `{"beforeSecret",
/// "afterSecret"}`, base64.
pub fn derivation_bytes(d: &Derivation) -> String {
    Object::default()
        .str("beforeSecret", &base64::encode(&d.before_secret()))
        .str("afterSecret", &base64::encode(&d.after_secret()))
        .finish()
}

/// A replay: `{"initialSha256", "steps": [{"turnsBefore" (u64),
/// "sections", "estimatedCu", "boundCu", "charged", "generated", "generatedThisTurn",
/// "phase", "textLength", "tokens", "text" (base64), "stateSha256"}]}`,
/// hashes in hex.
pub fn replay(r: &Replay) -> String {
    let steps = r.steps.iter().map(|s| {
        Object::default()
            .big("turnsBefore", s.turns_before)
            .raw("sections", &numbers(&s.sections))
            .num("estimatedCu", s.estimated_cu as u64)
            .num("boundCu", s.bound_cu as u64)
            .num("charged", s.charged as u64)
            .num("generated", s.generated as u64)
            .num("generatedThisTurn", s.generated_this_turn as u64)
            .num("phase", s.phase as u64)
            .num("textLength", s.text_len as u64)
            .raw("tokens", &numbers(&s.tokens))
            .str("text", &base64::encode(&s.text))
            .str("stateSha256", &hex(&s.state_sha256))
            .finish()
    });
    Object::default()
        .str("initialSha256", &hex(&r.initial_sha256))
        .raw("steps", &array(steps))
        .finish()
}

fn u32s_of(v: &Value, key: &str) -> Result<Vec<u32>, String> {
    let items = field(v, key)?
        .as_array()
        .ok_or_else(|| format!("{key} must be an array"))?;
    items
        .iter()
        .map(|n| n.as_u64().and_then(|n| u32::try_from(n).ok()))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| format!("{key} must hold whole numbers below 2^32"))
}

fn base64_of(v: &Value, key: &str) -> Result<Vec<u8>, String> {
    base64::decode(str_of(v, key)?).ok_or_else(|| format!("{key} must be base64"))
}

/// A receipt as `receipt` writes it.
pub fn receipt_of(v: &Value) -> Result<Receipt, String> {
    Ok(Receipt {
        event: TurnEvent {
            run: address_of(v, "run")?,
            model: address_of(v, "model")?,
            turns: u64_of(v, "turns")?,
            paid: u64_of(v, "paid")?,
            generated: u32_of(v, "generated")?,
            generated_this_turn: u32_of(v, "generatedThisTurn")?,
            charged: u32_of(v, "charged")?,
            phase: u32_of(v, "phase")?,
            text_len: u32_of(v, "textLength")?,
            crank_paid: u64_of(v, "crankPaid")?,
        },
        tokens: u32s_of(v, "tokens")?,
        text: base64_of(v, "text")?,
    })
}

/// A replay's step as `replay` writes it (its state's hash is not read).
pub fn step_of(v: &Value) -> Result<Step, String> {
    Ok(Step {
        turns_before: u64_of(v, "turnsBefore")?,
        sections: u32s_of(v, "sections")?,
        estimated_cu: u32_of(v, "estimatedCu")?,
        bound_cu: u32_of(v, "boundCu")?,
        charged: u32_of(v, "charged")?,
        generated: u32_of(v, "generated")?,
        generated_this_turn: u32_of(v, "generatedThisTurn")?,
        phase: u32_of(v, "phase")?,
        text_len: u32_of(v, "textLength")?,
        tokens: u32s_of(v, "tokens")?,
        text: base64_of(v, "text")?,
        state_sha256: [0; 32],
    })
}

/// `{"receipt", "step", "run", "model", "royalty", "crankFee",
/// "crankDeposit"}`: a receipt, the replay's step of its turn, and what
/// else it must say.
pub fn receipt_check(v: &Value) -> Result<(Receipt, Step, Expected), String> {
    let expected = Expected {
        run: address_of(v, "run")?,
        model: address_of(v, "model")?,
        royalty: u64_of(v, "royalty")?,
        crank_fee: u64_of(v, "crankFee")?,
        crank_deposit: u64_of(v, "crankDeposit")?,
    };
    Ok((
        receipt_of(field(v, "receipt")?)?,
        step_of(field(v, "step")?)?,
        expected,
    ))
}

/// How a receipt differs from the replay: `[{"field", "receipt",
/// "replay", "words"}]`, empty when it matches.
pub fn differences(found: &[Difference]) -> String {
    array(found.iter().map(|d| {
        Object::default()
            .str("field", d.field)
            .str("receipt", &d.receipt)
            .str("replay", &d.replay)
            .str("words", &d.to_string())
            .finish()
    }))
}

/// An upload's setup besides the bytes: `{"config", "owner", "model"}`
/// (base58), `"chunk"` (the most bytes a write carries) and
/// `"weightLengths"`, each bound weight account's length in the buffer of
/// their bytes, in section order (empty until every section has one).
pub fn upload_setup(v: &Value) -> Result<(Address, Address, Address, usize, Vec<usize>), String> {
    let lengths = field(v, "weightLengths")?
        .as_array()
        .ok_or("weightLengths must be an array")?
        .iter()
        .map(|n| n.as_u64().map(|n| n as usize))
        .collect::<Option<Vec<usize>>>()
        .ok_or("weightLengths must hold whole numbers")?;
    let chunk = u32_of(v, "chunk")? as usize;
    let (config, owner) = (address_of(v, "config")?, address_of(v, "owner")?);
    Ok((config, owner, address_of(v, "model")?, chunk, lengths))
}

/// An upload's next step: `{"step": "createModel", "length"}`, `{"step":
/// "bind", "sections": [{"section", "length"}]}` (the account's length),
/// `{"step": "write", "chunks": [{"section", "offset", "length"}]}`,
/// `{"step": "seal", "sections": [{"section", "cuLimits", "digest"}]}`
/// (one limit per call, two spare; the digest base64), `{"step": "sealModel"}` or `{"step": "done"}`.
pub fn upload_step(step: &upload::Step) -> String {
    let o = Object::default();
    match step {
        upload::Step::CreateModel { len } => o
            .str("step", "createModel")
            .num("length", *len as u64)
            .finish(),
        upload::Step::Bind(sections) => {
            let items = sections.iter().map(|&(section, len)| {
                Object::default()
                    .num("section", section as u64)
                    .num("length", len as u64)
                    .finish()
            });
            o.str("step", "bind")
                .raw("sections", &array(items))
                .finish()
        }
        upload::Step::Write(chunks) => {
            let items = chunks.iter().map(|c| {
                Object::default()
                    .num("section", c.section as u64)
                    .num("offset", c.offset as u64)
                    .num("length", c.len as u64)
                    .finish()
            });
            o.str("step", "write").raw("chunks", &array(items)).finish()
        }
        upload::Step::Seal(sections) => {
            let items = sections.iter().map(|s| {
                let limits: Vec<u32> = (0..s.calls + 2).map(upload::seal_cu).collect();
                Object::default()
                    .num("section", s.section as u64)
                    .raw("cuLimits", &numbers(&limits))
                    .str("digest", &base64::encode(&s.digest))
                    .finish()
            });
            o.str("step", "seal")
                .raw("sections", &array(items))
                .finish()
        }
        upload::Step::SealModel => o.str("step", "sealModel").finish(),
        upload::Step::Done => o.str("step", "done").finish(),
    }
}

/// An opening's setup (`client::opening`): `{"program", "run", "model",
/// "opener"` (base58), `"promptLength", "maxTokens", "crankDeposit"`, and
/// once the host has them, `"rent"` (of `accountLength` bytes) and
/// `"runOwner"` (the account at the run's address, base58; absent or null:
/// no account)`}`.
pub struct OpeningSetup {
    pub program: Address,
    pub run: Address,
    pub model: Address,
    pub opener: Address,
    pub prompt_len: usize,
    pub max_tokens: u32,
    pub crank_deposit: u64,
    pub rent: Option<u64>,
    pub run_owner: Option<Address>,
}

fn optional<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.get(key).filter(|f| !matches!(f, Value::Null))
}

pub fn opening_setup(v: &Value) -> Result<OpeningSetup, String> {
    Ok(OpeningSetup {
        program: address_of(v, "program")?,
        run: address_of(v, "run")?,
        model: address_of(v, "model")?,
        opener: address_of(v, "opener")?,
        prompt_len: u32_of(v, "promptLength")? as usize,
        max_tokens: u32_of(v, "maxTokens")?,
        crank_deposit: u64_of(v, "crankDeposit")?,
        rent: optional(v, "rent").map(|_| u64_of(v, "rent")).transpose()?,
        run_owner: optional(v, "runOwner")
            .map(|_| address_of(v, "runOwner"))
            .transpose()?,
    })
}

/// An opening's sums and, once the rent is known, its next step:
/// `{"accountLength", "escrow", "crankDeposit"}`, with `"rent", "deposit"`
/// (what `create_account` gives), `"step"` (`"create"`, `"finish"` or
/// `"opened"`) and `"locks"` (whether the step puts the deposit in).
pub fn opening(
    account_len: usize,
    escrow: u64,
    crank: u64,
    next: Option<(opening::Deposit, opening::Step)>,
) -> String {
    let o = Object::default()
        .num("accountLength", account_len as u64)
        .big("escrow", escrow)
        .big("crankDeposit", crank);
    let Some((d, step)) = next else {
        return o.finish();
    };
    let name = match step {
        opening::Step::Create => "create",
        opening::Step::Finish => "finish",
        opening::Step::Opened => "opened",
    };
    o.big("rent", d.rent)
        .big("deposit", d.total)
        .str("step", name)
        .bool("locks", step.locks())
        .finish()
}

/// A closing's setup: `{"program", "run", "signer"`, `"runOwner"` and
/// `"runLamports"` (the account at the run's address; absent or null: no
/// account)`}`.
pub struct ClosingSetup {
    pub program: Address,
    pub run: Address,
    pub signer: Address,
    /// The account's owner and lamports.
    pub held: Option<(Address, u64)>,
}

pub fn closing_setup(v: &Value) -> Result<ClosingSetup, String> {
    let held = match optional(v, "runOwner") {
        None => None,
        Some(_) => Some((address_of(v, "runOwner")?, u64_of(v, "runLamports")?)),
    };
    Ok(ClosingSetup {
        program: address_of(v, "program")?,
        run: address_of(v, "run")?,
        signer: address_of(v, "signer")?,
        held,
    })
}

/// A session key's funding (`session_key::funding`): `{"deposit", "fees",
/// "lamportsPerSignature", "keyRent", "crankers"}`.
pub fn session_key_funding(v: &Value) -> Result<(u64, u64, super::session_key::Funding), String> {
    let crankers = field(v, "crankers")?
        .as_bool()
        .ok_or("crankers must be true or false")?;
    let funding = super::session_key::Funding {
        lamports_per_signature: u64_of(v, "lamportsPerSignature")?,
        key_rent: u64_of(v, "keyRent")?,
        crankers,
    };
    Ok((u64_of(v, "deposit")?, u64_of(v, "fees")?, funding))
}

/// A batch's setup: `{"whats": [string], "lamportsPerSignature", and the
/// optional "inFlight" (256) and "mostExpiries" (8)}`, one `what` per job.
pub fn batch_setup(v: &Value) -> Result<(Vec<String>, batch::Options, u64), String> {
    let whats = list(v, "whats", |w| {
        w.as_str()
            .map(str::to_string)
            .ok_or_else(|| "whats must be an array of strings".to_string())
    })?;
    let mut options = batch::Options::default();
    if v.get("inFlight").is_some() {
        options.in_flight = u32_of(v, "inFlight")? as usize;
    }
    if v.get("mostExpiries").is_some() {
        options.most_expiries = u32_of(v, "mostExpiries")?;
    }
    Ok((whats, options, u64_of(v, "lamportsPerSignature")?))
}

fn batch_sent(v: &Value) -> Result<batch::Sent, String> {
    if let Some(words) = v.get("refused") {
        let words = words.as_str().ok_or("refused must be a string")?;
        return Ok(batch::Sent::Refused {
            words: words.to_string(),
        });
    }
    Ok(batch::Sent::Taken {
        signature: str_of(v, "signature")?.to_string(),
        last_valid_height: u64_of(v, "lastValidHeight")?,
        signatures: u64_of(v, "signatures")?,
    })
}

fn batch_landing(v: &Value) -> Result<Option<batch::Landing>, String> {
    if matches!(v, Value::Null) {
        return Ok(None);
    }
    let failed = field(v, "failed")?
        .as_bool()
        .ok_or("failed must be true or false")?;
    Ok(Some(batch::Landing {
        slot: u64_of(v, "slot")?,
        failed,
    }))
}

/// A batch's event: `{"event": "start" | "sent" | "waited" | "statuses" |
/// "height", ...}`; a sent job is `{"signature", "lastValidHeight",
/// "signatures"}` or `{"refused": words}`, a status null or `{"slot",
/// "failed"}`.
pub fn batch_event(v: &Value) -> Result<batch::Event, String> {
    Ok(match str_of(v, "event")? {
        "start" => batch::Event::Start,
        "sent" => batch::Event::Sent(list(v, "sent", batch_sent)?),
        "waited" => batch::Event::Waited {
            now_ms: u64_of(v, "nowMs")?,
        },
        "statuses" => batch::Event::Statuses(list(v, "statuses", batch_landing)?),
        "height" => batch::Event::Height {
            height: u64_of(v, "height")?,
        },
        other => return Err(format!("event {other:?} is not one a batch takes")),
    })
}

/// A batch's action: `{"action": "sign" | "wait" | "statuses" | "height" |
/// "done" | "stop", ..., "landed": [the jobs that landed since the last
/// action]}`; `done` carries the summary.
pub fn batch_action(a: &batch::Action, landed: &[usize], summary: &batch::Summary) -> String {
    let o = Object::default();
    let o = match a {
        batch::Action::Sign {
            jobs,
            fresh_blockhash,
        } => o
            .str("action", "sign")
            .raw("jobs", &numbers(jobs))
            .bool("freshBlockhash", *fresh_blockhash),
        batch::Action::Wait { ms } => o.str("action", "wait").num("ms", *ms),
        batch::Action::Statuses { signatures } => o
            .str("action", "statuses")
            .raw("signatures", &strings(signatures)),
        batch::Action::Height => o.str("action", "height"),
        batch::Action::Done => o
            .str("action", "done")
            .big("transactions", summary.transactions)
            .big("fees", summary.fees)
            .big("firstSlot", summary.first_slot)
            .big("lastSlot", summary.last_slot),
        batch::Action::Stop(batch::Stop::Failed { job, signature }) => o
            .str("action", "stop")
            .str("kind", "failed")
            .num("job", *job as u64)
            .str("signature", signature),
        batch::Action::Stop(batch::Stop::GaveUp { job, words }) => o
            .str("action", "stop")
            .str("kind", "gaveUp")
            .num("job", *job as u64)
            .str("words", words),
    };
    o.raw("landed", &numbers(landed)).finish()
}
