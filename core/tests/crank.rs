//! The crank's state machine, driven by a simulated chain through scripted
//! faults: a turn lost, two crankers racing, a blockhash expired, a payer
//! run dry, receipts and states that lie, a user who cancels, a run closed
//! under the crank. Each
//! scenario's whole conversation (every event, as JSON, and every action)
//! is in `tests/crank/NAME.json`, and the crank must say exactly that;
//! `sdk/test/crank.test.js` replays the same files through the WebAssembly
//! module, so both hosts' cranks give the same actions to the same events.
//! `CURTA_WRITE_CRANK_SCRIPTS=1` rewrites the files (say why in the commit).

use std::collections::BTreeMap;

use curta_core::client::crank::{Action, Crank, Event, Status, StopKind, Transaction};
use curta_core::client::replay::{initial_state, replay};
use curta_core::client::{base58, base64, wire};
use curta_core::convert::{
    convert, open_artifact, synthetic_checkpoint, synthetic_tokenizer, TINY,
};
use curta_core::inference::{plan_sections, turn_with, RunParams, TurnInput};
use curta_core::json::{Object, Value};
use curta_core::planner;
use curta_core::protocol::{event, CurtaError, TurnEvent};
use curta_core::state::StateBuffer;
use curta_core::{output_text, output_tokens, StateInfo};

const PROGRAM: &str = "Curta11111111111111111111111111111111111111";
const OTHER_PROGRAM: &str = "Other11111111111111111111111111111111111111";
const KEEP: u64 = 890_880;
/// A small allowance, so the tiny run takes several turns.
const ALLOWANCE: u32 = 100_000;

fn artifact() -> Vec<u8> {
    let ck = synthetic_checkpoint(&TINY, 3).unwrap();
    convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap()
}

/// Every scenario's run.
fn run_params() -> RunParams<'static> {
    RunParams {
        prompt: b"ab",
        max_tokens: 5,
        temperature_q16: 0,
        seed: 0,
    }
}

const CRANK_FEE: u64 = 2_000;
const CRANK_DEPOSIT: u64 = 5_000;

/// Every state of the run, from the first to the complete one.
fn states(artifact: &[u8], start: &[u8]) -> Vec<StateBuffer> {
    let m = open_artifact(artifact).unwrap();
    let mut out = vec![StateBuffer::from_bytes(start)];
    loop {
        let mut s = StateBuffer::from_bytes(out.last().unwrap());
        if StateInfo::read(&s).unwrap().complete {
            return out;
        }
        let plan = planner::plan_turn_with(m.config, &s, ALLOWANCE).unwrap();
        let sections = plan_sections(artifact, &m, &plan);
        let input = TurnInput {
            config: m.config,
            metadata: m.bytes,
            sections: &sections[..plan.section_count],
            allowance: ALLOWANCE,
        };
        turn_with(&input, Some(&plan), &mut s).unwrap();
        out.push(s);
    }
}

/// What goes wrong on the simulated chain.
#[derive(Default)]
struct Faults {
    /// Sends (counted from 0) the validator never sees.
    dropped: Vec<usize>,
    /// Another cranker lands a turn at each of these clock readings (ms).
    other_lands_at: Vec<u64>,
    /// The fee payer's balance before the crank, less each landed
    /// transaction's fee as it lands.
    balance: Option<u64>,
    /// Sends whose transaction logs its receipt from another program.
    forged_receipt: Vec<usize>,
    /// After this many turns land, the run is back at its initial state
    /// (closed and opened again).
    rewound_after: Option<u64>,
    /// Cancel after this many sends.
    cancel_after: Option<usize>,
    /// The run is closed as soon as it is complete.
    closed_when_complete: bool,
}

struct Landed {
    slot: u64,
    ok: bool,
    turn: u64,
    send: usize,
}

/// A chain that lands what is sent on the next wait, in order.
struct Chain {
    states: Vec<StateBuffer>,
    params: Value,
    faults: Faults,
    turns: u64,
    now_ms: u64,
    slot: u64,
    sends: usize,
    /// Sent and not landed: (signature, expected turns, send number, last valid height).
    in_flight: Vec<(String, u64, usize, u64)>,
    landed: BTreeMap<String, Landed>,
    /// The fees of the transactions landed (`TURN_FEE` a turn that ran,
    /// `FAILED_FEE` one that failed).
    fees: u64,
}

const TURN_FEE: u64 = 5_256;
const FAILED_FEE: u64 = 5_000;

impl Chain {
    fn height(&self) -> u64 {
        self.slot
    }

    fn land(&mut self) {
        self.slot += 1;
        while self
            .faults
            .other_lands_at
            .first()
            .is_some_and(|&t| t <= self.now_ms)
        {
            self.faults.other_lands_at.remove(0);
            if (self.turns as usize) + 1 < self.states.len() {
                self.turns += 1;
            }
        }
        for (sig, expected, send, last_valid) in std::mem::take(&mut self.in_flight) {
            if self.faults.dropped.contains(&send) {
                continue;
            }
            if last_valid < self.height() {
                continue;
            }
            let ok = expected == self.turns && (self.turns as usize) + 1 < self.states.len();
            if ok {
                self.turns += 1;
            }
            self.fees += match ok {
                true => TURN_FEE,
                false => FAILED_FEE,
            };
            let turn = expected + 1;
            let slot = self.slot;
            self.landed.insert(
                sig,
                Landed {
                    slot,
                    ok,
                    turn,
                    send,
                },
            );
            if self.faults.rewound_after == Some(self.turns) {
                self.faults.rewound_after = None;
                self.turns = 0;
            }
        }
    }

    fn state(&self) -> &[u8] {
        let complete = self.turns as usize + 1 == self.states.len();
        match complete && self.faults.closed_when_complete {
            true => &[],
            false => &self.states[self.turns as usize],
        }
    }

    fn logs(&self, l: &Landed) -> Vec<String> {
        let (before, after) = (
            &self.states[l.turn as usize - 1],
            &self.states[l.turn as usize],
        );
        let (b, a) = (
            StateInfo::read(before).unwrap(),
            StateInfo::read(after).unwrap(),
        );
        let tokens = &output_tokens(TINY, after)[4 * b.generated as usize..];
        let text = &output_text(TINY, after)[b.text_len as usize..];
        let run = base58::decode::<32>(self.params.get("run").unwrap().as_str().unwrap()).unwrap();
        let model =
            base58::decode::<32>(self.params.get("model").unwrap().as_str().unwrap()).unwrap();
        let royalty = self.params.get("royalty").unwrap().as_u64().unwrap();
        let mut fixed = [0u8; event::LEN];
        let artifact = artifact();
        let steps = replay(&artifact, before, ALLOWANCE).unwrap().steps;
        TurnEvent {
            run,
            model,
            turns: l.turn,
            paid: royalty * (a.generated - b.generated) as u64,
            generated: a.generated,
            generated_this_turn: a.generated - b.generated,
            charged: steps[0].charged,
            phase: a.phase as u32,
            text_len: a.text_len,
            crank_paid: curta_core::protocol::run::crank_payment(
                CRANK_FEE,
                CRANK_DEPOSIT,
                l.turn - 1,
            ),
        }
        .encode(&mut fixed);
        let program = match self.faults.forged_receipt.contains(&l.send) {
            true => OTHER_PROGRAM,
            false => PROGRAM,
        };
        let fields = [
            base64::encode(&fixed),
            base64::encode(tokens),
            base64::encode(text),
        ];
        vec![
            format!("Program {program} invoke [1]"),
            format!("Program data: {}", fields.join(" ")),
            format!("Program {program} consumed 4321 of 5000 compute units"),
            format!("Program {program} success"),
        ]
    }

    /// The host's answer to an action, as the crank takes it and as JSON.
    fn answer(&mut self, action: &Action) -> (Event, String) {
        match action {
            Action::Send(s) => {
                if self.faults.cancel_after == Some(self.sends) {
                    return (Event::Cancel, r#"{"event":"cancel"}"#.into());
                }
                let signature = format!("sig{}", self.sends);
                let last_valid = self.height() + 15;
                self.in_flight
                    .push((signature.clone(), s.expected_turns, self.sends, last_valid));
                self.sends += 1;
                let json = Object::default()
                    .str("event", "sent")
                    .str("signature", &signature)
                    .big("lastValidHeight", last_valid)
                    .finish();
                (
                    Event::Sent {
                        signature,
                        last_valid_height: last_valid,
                    },
                    json,
                )
            }
            Action::Wait { ms } => {
                self.now_ms += ms;
                self.land();
                let json = Object::default()
                    .str("event", "waited")
                    .big("nowMs", self.now_ms)
                    .finish();
                (
                    Event::Waited {
                        now_ms: self.now_ms,
                    },
                    json,
                )
            }
            Action::Statuses { signatures } => {
                let mut statuses = vec![];
                let mut json = vec![];
                for sig in signatures {
                    let (status, text) = match self.landed.get(sig) {
                        None => (Status::Pending, r#"{"status":"pending"}"#.to_string()),
                        // Landed in the last slot: run, not yet confirmed.
                        Some(l) if l.ok && l.slot == self.slot => (
                            Status::Seen { slot: l.slot },
                            Object::default()
                                .str("status", "seen")
                                .big("slot", l.slot)
                                .finish(),
                        ),
                        Some(l) if l.ok => (
                            Status::Landed { slot: l.slot },
                            Object::default()
                                .str("status", "landed")
                                .big("slot", l.slot)
                                .finish(),
                        ),
                        Some(l) => {
                            let words = "custom program error: StaleTurn (21)".to_string();
                            let code = CurtaError::StaleTurn as u32;
                            let status = Status::Failed {
                                slot: l.slot,
                                fee: FAILED_FEE,
                                custom: Some(code),
                                words: words.clone(),
                                log_tail: String::new(),
                            };
                            let text = Object::default()
                                .str("status", "failed")
                                .big("slot", l.slot)
                                .big("fee", FAILED_FEE)
                                .num("custom", code as u64)
                                .str("words", &words)
                                .str("logTail", "")
                                .finish();
                            (status, text)
                        }
                    };
                    statuses.push(status);
                    json.push(text);
                }
                let json = format!(r#"{{"event":"statuses","statuses":[{}]}}"#, json.join(","));
                (Event::Statuses(statuses), json)
            }
            Action::Transactions { signatures } => {
                let mut txs = vec![];
                let mut json = vec![];
                for sig in signatures {
                    let l = &self.landed[sig];
                    let logs = self.logs(l);
                    let mut list = String::from("[");
                    for (i, line) in logs.iter().enumerate() {
                        if i > 0 {
                            list.push(',');
                        }
                        curta_core::json::string(&mut list, line);
                    }
                    list.push(']');
                    json.push(
                        Object::default()
                            .big("slot", l.slot)
                            .big("fee", TURN_FEE)
                            .big("consumedCu", 4_621)
                            .raw("logs", &list)
                            .finish(),
                    );
                    txs.push(Transaction {
                        slot: l.slot,
                        fee: TURN_FEE,
                        consumed_cu: 4_621,
                        logs,
                    });
                }
                let json = format!(
                    r#"{{"event":"transactions","transactions":[{}]}}"#,
                    json.join(",")
                );
                (Event::Transactions(txs), json)
            }
            Action::ReadRun => (
                Event::RunState(self.state().to_vec()),
                r#"{"event":"runState"}"#.into(),
            ),
            Action::Height => {
                let balance = self.faults.balance.unwrap_or(1_000_000_000) - self.fees;
                let json = Object::default()
                    .str("event", "height")
                    .big("height", self.height())
                    .big("balance", balance)
                    .finish();
                (
                    Event::Height {
                        height: self.height(),
                        balance,
                    },
                    json,
                )
            }
            Action::Done | Action::Stop(_) => unreachable!("the conversation is over"),
        }
    }
}

/// Runs a scenario; returns the crank's last action and its summary, after
/// checking the conversation against (or writing) `tests/crank/NAME.json`.
fn scenario(
    name: &str,
    window: u32,
    faults: Faults,
) -> (Action, curta_core::client::crank::Summary) {
    let (last, summary, _) = scenario_with(name, window, faults, &[]);
    (last, summary)
}

/// `scenario` with these options of the crank's setup set, as JSON
/// (`leaveToOthers`, `followFirst`, `minPayment`).
fn scenario_with(
    name: &str,
    window: u32,
    faults: Faults,
    options: &[(&str, &str)],
) -> (Action, curta_core::client::crank::Summary, u64) {
    let artifact = artifact();
    let params = run_params();
    let start = initial_state(&artifact, &params).unwrap();
    let setup = Object::default()
        .str("programId", PROGRAM)
        .str("run", &base58::encode(&[7; 32]))
        .str("model", &base58::encode(&[9; 32]))
        .big("royalty", 1_000)
        // A deposit that runs out part way: the receipts then pay less.
        .big("crankFee", CRANK_FEE)
        .big("crankDeposit", CRANK_DEPOSIT)
        .str("owner", &base58::encode(&[6; 32]))
        .str("payer", &base58::encode(&[5; 32]))
        .big("keep", KEEP)
        .big("lamportsPerSignature", 5_000)
        .num("allowance", ALLOWANCE as u64)
        .num("window", window as u64)
        .str("cuLimit", "exact")
        .bool("priorityRamp", true);
    let setup = options
        .iter()
        .fold(setup, |o, (key, value)| o.raw(key, value))
        .finish();
    let setup_value = Value::parse(&setup).unwrap();
    let (p, allowance) = wire::params(&setup_value).unwrap();
    let config = open_artifact(&artifact).unwrap().config;
    let mut crank = Crank::new(config, replay(&artifact, &start, allowance).unwrap(), p);
    let mut chain = Chain {
        states: states(&artifact, &start),
        params: setup_value,
        faults,
        turns: 0,
        now_ms: 0,
        slot: 100,
        sends: 0,
        in_flight: vec![],
        landed: BTreeMap::new(),
        fees: 0,
    };
    let mut conversation = vec![];
    let (mut event, mut event_json) = (Event::Start, r#"{"event":"start"}"#.to_string());
    let last = loop {
        // The event goes in as the WebAssembly host sends it: its JSON.
        let bytes = match &event {
            Event::RunState(s) => s.clone(),
            _ => vec![],
        };
        let from_json = wire::event(&Value::parse(&event_json).unwrap(), &bytes).unwrap();
        assert_eq!(from_json, event, "{event_json}");
        let action = crank.next(from_json);
        let mut line = Object::default().raw("event", &event_json);
        if !bytes.is_empty() {
            line = line.str("state", &base64::encode(&bytes));
        }
        conversation.push(line.raw("action", &wire::action(&action)).finish());
        if matches!(action, Action::Done | Action::Stop(_)) {
            break action;
        }
        assert!(conversation.len() < 2_000, "{name} does not end");
        (event, event_json) = chain.answer(&action);
    };
    let summary = crank.summary().clone();
    let file = format!(
        "{{\"artifact\":\"{}\",\"state\":\"{}\",\"setup\":{setup},\n\"conversation\":[\n{}\n],\n\"summary\":{}}}\n",
        base64::encode(&artifact),
        base64::encode(&start),
        conversation.join(",\n"),
        wire::summary(&summary)
    );
    let path = format!("{}/tests/crank/{name}.json", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("CURTA_WRITE_CRANK_SCRIPTS").is_some() {
        std::fs::write(&path, &file).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == file,
        "{path} is not what the crank says now (CURTA_WRITE_CRANK_SCRIPTS=1 rewrites it)"
    );
    (last, summary, chain.fees)
}

fn turns_of(summary: &curta_core::client::crank::Summary) -> u64 {
    summary.turns_before + summary.turns.len() as u64 + summary.turns_by_others
}

fn run_turns() -> u64 {
    let a = artifact();
    let params = run_params();
    replay(&a, &initial_state(&a, &params).unwrap(), ALLOWANCE)
        .unwrap()
        .steps
        .len() as u64
}

/// A crank whose payer owns the model stops before sending anything while
/// a crank fee is due: the program refuses the owner as a fee's recipient.
#[test]
fn the_models_owner_is_not_paid_to_crank() {
    let artifact = artifact();
    let start = initial_state(&artifact, &run_params()).unwrap();
    let payer = base58::encode(&[5; 32]);
    let setup = |deposit: u64| {
        let v = Object::default()
            .str("programId", PROGRAM)
            .str("run", &base58::encode(&[7; 32]))
            .str("model", &base58::encode(&[9; 32]))
            .big("royalty", 1_000)
            .big("crankFee", CRANK_FEE)
            .big("crankDeposit", deposit)
            .str("owner", &payer)
            .str("payer", &payer)
            .big("keep", KEEP)
            .big("lamportsPerSignature", 5_000)
            .num("allowance", ALLOWANCE as u64)
            .finish();
        wire::params(&Value::parse(&v).unwrap()).unwrap().0
    };
    let config = open_artifact(&artifact).unwrap().config;
    let crank = |deposit| {
        let r = replay(&artifact, &start, ALLOWANCE).unwrap();
        Crank::new(config, r, setup(deposit)).next(Event::Start)
    };
    match crank(CRANK_DEPOSIT) {
        Action::Stop(s) => {
            assert_eq!(s.kind, StopKind::Refused);
            assert!(
                s.words.contains("which the model's owner (the signer,"),
                "{}",
                s.words
            );
        }
        other => panic!("{other:?}"),
    }
    // No fee left to pay: the owner cranks as anyone.
    assert!(!matches!(crank(0), Action::Stop(_)));
}

#[test]
fn a_clean_crank_lands_every_turn_once() {
    // The window measured (0): every turn of the tiny run at once.
    let (last, s) = scenario("clean", 0, Faults::default());
    assert_eq!(last, Action::Done);
    assert_eq!(s.turns.len() as u64, run_turns());
    assert!(s.failed.is_empty());
    assert_eq!((s.turns_by_others, s.backoffs), (0, 0));
    assert!(s
        .turns
        .iter()
        .all(|t| t.program_cu == 4_321 && t.fee == TURN_FEE));
}

#[test]
fn a_lost_turn_is_sent_again_once_its_blockhash_expires() {
    let (last, s) = scenario(
        "lost-turn",
        4,
        // The first of the second ramp's three turns (the tiny run's turn
        // limits differ enough that its five turns make two ramps).
        Faults {
            dropped: vec![2],
            ..Faults::default()
        },
    );
    assert_eq!(last, Action::Done);
    assert_eq!(s.turns.len() as u64, run_turns());
    // The turns after it failed with StaleTurn and were sent again after it.
    assert_eq!(s.failed.len(), 2, "{:?}", s.failed);
    // Each turn asks for what the clean run's asks; a resent turn for one
    // unit more.
    let (_, clean) = scenario("clean", 0, Faults::default());
    let limits = |s: &curta_core::client::crank::Summary| -> Vec<u32> {
        s.turns.iter().map(|t| t.cu_limit).collect()
    };
    let mut resent = limits(&clean);
    for limit in &mut resent[2..] {
        *limit += 1;
    }
    assert_eq!(limits(&s), resent);
}

#[test]
fn two_crankers_racing_back_off_and_take_over() {
    let other = vec![50, 900, 1_700];
    let (last, s) = scenario(
        "racing",
        4,
        Faults {
            other_lands_at: other,
            ..Faults::default()
        },
    );
    assert_eq!(last, Action::Done);
    // One encounter, costing at most the window in flight.
    assert_eq!(s.backoffs, 1);
    assert!(s.failed.len() <= 4 * s.backoffs as usize);
    assert!(s.turns_by_others > 0);
    assert_eq!(turns_of(&s), run_turns());
}

/// A fleet's cranker (`curta crank`) that finds another cranker on the
/// run leaves it to it: the crank is done once its own turns have settled,
/// the run not complete, every turn it landed checked and its failed ones
/// counted as its own. Until a turn of its own lands it sends one at a
/// time, so the encounter costs one failed turn.
#[test]
fn a_cranker_that_finds_another_leaves_the_run_to_it() {
    let (last, s, _) = scenario_with(
        "leaving",
        4,
        Faults {
            other_lands_at: vec![50, 900, 1_700],
            ..Faults::default()
        },
        &[("leaveToOthers", "true")],
    );
    assert_eq!(last, Action::Done);
    assert!(s.left_to_others);
    assert_eq!(s.backoffs, 0, "it did not follow");
    assert!(s.turns_by_others > 0);
    assert!(turns_of(&s) < run_turns(), "the run is left unfinished");
    // It sent one turn, a probe, before one of its own landed: that one
    // failed, not a window.
    assert_eq!((s.turns.len(), s.failed.len()), (0, 1));
    // The other's turn failed this one's: never one it landed.
    assert!(s
        .failed
        .iter()
        .all(|f| s.turns.iter().all(|t| t.turn != f.turn)));
}

/// A fleet's cranker sends only the turns that pay it what it asks: the
/// deposit (5,000) pays 2,000, 2,000, then 1,000, so at 1,500 a turn it
/// lands two and ends there, the run unfinished, nothing sent past them.
#[test]
fn a_cranker_ends_where_the_turns_stop_paying() {
    let (last, s, _) = scenario_with(
        "unpaid",
        4,
        Faults::default(),
        &[("minPayment", "\"1500\"")],
    );
    assert_eq!(last, Action::Done);
    assert!(s.left_unpaid && !s.left_to_others);
    assert_eq!(s.turns.len(), 2);
    assert!(s.failed.is_empty());
    assert!(s.turns.iter().all(|t| t.crank_paid == CRANK_FEE));
    assert!(turns_of(&s) < run_turns());
    assert_eq!(s.transactions(), 2, "no turn sent past the paid ones");
    // A floor the first turn does not reach: nothing is sent at all.
    let (last, s, _) = scenario_with(
        "unpaid-at-once",
        4,
        Faults::default(),
        &[("minPayment", "\"2001\"")],
    );
    assert_eq!(last, Action::Done);
    assert!(s.left_unpaid);
    assert_eq!(s.transactions(), 0);
}

/// Come back to a run left to another cranker, a crank first follows
/// whoever moves it, sending nothing, and takes it over once it stands
/// still: no turn of its own fails.
#[test]
fn a_cranker_coming_back_follows_first() {
    let (last, s, _) = scenario_with(
        "following-first",
        4,
        Faults {
            other_lands_at: vec![50, 900],
            ..Faults::default()
        },
        &[("followFirst", "true")],
    );
    assert_eq!(last, Action::Done);
    assert!(!s.left_to_others);
    assert!(s.failed.is_empty(), "{:?}", s.failed);
    assert_eq!(s.turns_by_others, 2);
    assert_eq!(turns_of(&s), run_turns());
}

#[test]
fn a_payer_with_little_to_spare_never_risks_what_finishing_needs() {
    // A ramp's first turn is lost (turn 3, the second ramp's first): every
    // turn sent behind it fails and is paid for. A payer rich enough sends
    // the ramp's two others behind it...
    let lost = || Faults {
        dropped: vec![2],
        ..Faults::default()
    };
    let (last, rich, _) = scenario_with("lost-first-rich", 0, lost(), &[]);
    assert_eq!(last, Action::Done);
    assert_eq!(rich.failed.len(), 2, "{} failed", rich.failed.len());
    // ...one with the turns' fees and one failed turn to spare sends no
    // more behind it than it can lose, and finishes the run.
    let need = run_turns() * TURN_FEE + FAILED_FEE;
    let (last, tight, fees) = scenario_with(
        "lost-first-tight",
        0,
        Faults {
            balance: Some(KEEP + need),
            ..lost()
        },
        &[],
    );
    assert_eq!(last, Action::Done);
    assert_eq!(tight.turns.len() as u64, run_turns());
    assert!(tight.failed.len() <= 1, "{} failed", tight.failed.len());
    assert!(fees <= need, "{fees} lamports spent of {need}");
}

#[test]
fn a_payer_run_dry_stops_in_words() {
    // One that cannot pay the first turn is refused before any send.
    let (last, s) = scenario(
        "out-of-funds",
        1,
        Faults {
            balance: Some(KEEP + 5_000),
            ..Faults::default()
        },
    );
    let Action::Stop(stop) = last else {
        panic!("{last:?}")
    };
    assert_eq!((stop.kind, stop.turn), (StopKind::OutOfFunds, Some(1)));
    assert_eq!((s.in_flight_most, s.transactions()), (0, 0));
    assert!(
        stop.words.contains("cannot pay turn 1 (the run's next):"),
        "{}",
        stop.words
    );
    // One that can pay two turns stops at the third, naming it.
    let (last, s) = scenario(
        "out-of-funds-midway",
        1,
        Faults {
            balance: Some(KEEP + 2 * 5_600),
            ..Faults::default()
        },
    );
    let Action::Stop(stop) = last else {
        panic!("{last:?}")
    };
    assert_eq!((stop.kind, stop.turn), (StopKind::OutOfFunds, Some(3)));
    assert_eq!(s.turns.len(), 2);
    assert!(
        stop.words.contains("ran out of lamports at turn 3:"),
        "{}",
        stop.words
    );
}

#[test]
fn a_receipt_another_program_logged_is_no_receipt() {
    let (last, _) = scenario(
        "forged-receipt",
        2,
        Faults {
            forged_receipt: vec![0],
            ..Faults::default()
        },
    );
    let Action::Stop(stop) = last else {
        panic!("{last:?}")
    };
    assert_eq!(
        (stop.kind, stop.turn, stop.field.as_deref()),
        (StopKind::Mismatch, Some(1), Some("receipt"))
    );
    assert!(
        stop.words.contains("logged 0 receipts, not one"),
        "{}",
        stop.words
    );
}

#[test]
fn a_run_found_rewound_names_the_initial_state() {
    let a = artifact();
    let params = run_params();
    let start = initial_state(&a, &params).unwrap();
    let initial = curta_core::client::crank::hex(&curta_core::sha256::sha256(&start));
    // Two turns land, then the run is back at turn 0 (someone closed and
    // opened it again): the next turn fails, and the run is behind the crank.
    let faults = Faults {
        rewound_after: Some(2),
        ..Faults::default()
    };
    let (last, _) = scenario("rewound", 1, faults);
    let Action::Stop(stop) = last else {
        panic!("{last:?}")
    };
    assert_eq!(stop.kind, StopKind::Mismatch);
    assert!(
        stop.words.contains(&format!("{initial} replayed")),
        "{}",
        stop.words
    );
}

#[test]
fn a_cancelled_crank_stops_and_says_how_to_resume() {
    let (last, s) = scenario(
        "cancelled",
        4,
        Faults {
            cancel_after: Some(2),
            ..Faults::default()
        },
    );
    let Action::Stop(stop) = last else {
        panic!("{last:?}")
    };
    assert_eq!(stop.kind, StopKind::Cancelled);
    assert!(s.turns.is_empty());
}

/// An opener that closes its run as soon as the last turn lands (a
/// program taking its text, a page) leaves the crank no final state to
/// read: every turn landed and its receipt was checked, so the crank is
/// done, and says the run was closed after.
#[test]
fn a_run_closed_after_its_last_turn_is_done() {
    let faults = Faults {
        closed_when_complete: true,
        ..Faults::default()
    };
    let (last, s) = scenario("closed", 4, faults);
    assert_eq!(last, Action::Done);
    assert!(s.closed_after);
    assert_eq!(
        s.turns.len() as u64,
        run_turns(),
        "every turn landed and was checked"
    );
}
