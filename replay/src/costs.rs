//! What each kind of chunk costs on the SBF VM, beside what the planner
//! charges for it. Runs are replayed on the measuring build of the program
//! (`make build-sbf-probe`: `curta_program_probe.so`), whose `turn` writes
//! the compute units left at marks between the turn's parts and around
//! every chunk into an extra account (`program/src/probe.rs`). Which chunk
//! lies between two marks, its kind, units and charge, comes from the same
//! turn run natively with a recording probe. Every chunk must cost at most
//! its charge, and every turn's own overhead (accounts, checks, payment,
//! receipt) at most the planner's 18,000.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use curta_core::inference::{plan_sections, turn_probed, TurnInput};
use curta_core::planner::{self, ChunkKind, Probe, CHARGES, MEASURED_CHARGES};
use curta_core::protocol::run;
use curta_core::state::StateBuffer;
use curta_core::{Metadata, Phase, StateInfo};
use solana_account::Account;
use solana_instruction::AccountMeta;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::manifest::RunSpec;
use crate::models::{artifact, metadata};
use crate::program_test::{self, Chain, PROGRAM_ID};

/// The probe account: room for about 8,000 marks a turn.
const PROBE_LEN: usize = 64 * 1024;

/// One chunk as measured.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub kind: ChunkKind,
    pub units: u32,
    pub charge: u32,
    /// Its compute units: the walker's finding it and running it.
    pub cost: u32,
}

/// One turn: its chunks, its own parts, and what the program spent
/// outside its chunks.
#[derive(Clone, Debug)]
pub struct TurnCosts {
    pub chunks: Vec<Measured>,
    /// The turn's own parts, by name.
    pub parts: Vec<(&'static str, u64)>,
    /// The program's compute units less its chunks' and the probe's.
    pub overhead: u64,
    /// What the model's table charges a turn for that overhead.
    pub overhead_charge: u64,
}

/// The walker's finding a chunk: per chunk, and in the chunk's figures.
const WALK: &str = "finding each chunk";
/// The setup of the turn's loop over its chunks.
const SETUP: &str = "the loop's setup";

/// The turn's own parts, between the probe's marks.
const PARTS: [&str; 4] = [
    "accounts and checks",
    "the core's checks",
    "the core's end of turn",
    "payment and receipt",
];

/// What the native turn tells a recording probe, in order.
#[derive(Clone, Copy, Debug)]
enum Event {
    Begin,
    Walked,
    Chunk(ChunkKind, u32, u32),
}

#[derive(Default)]
struct Recorder(Vec<Event>);

impl Probe for Recorder {
    fn begin(&mut self) {
        self.0.push(Event::Begin);
    }
    fn walked(&mut self) {
        self.0.push(Event::Walked);
    }
    fn chunk(&mut self, describe: impl FnOnce() -> (ChunkKind, u32, u32)) {
        let (kind, units, charge) = describe();
        self.0.push(Event::Chunk(kind, units, charge));
    }
}

/// The events of the next turn from `state`, run natively on a copy.
fn native_events(art: &[u8], m: &Metadata, state: &[u8]) -> Vec<Event> {
    let mut copy = StateBuffer::from_bytes(state);
    let plan = planner::plan_turn(m.config, &copy).expect("a plan");
    let sections = plan_sections(art, m, &plan);
    let input = TurnInput {
        config: m.config,
        metadata: m.bytes,
        sections: &sections,
        allowance: CHARGES.allowance,
    };
    let mut recorder = Recorder::default();
    turn_probed(&input, Some(&plan), &mut copy, &mut recorder).expect("a native turn");
    recorder.0
}

/// Replays `spec` on the measuring build, turn by turn.
pub async fn measure(spec: &RunSpec) -> Vec<TurnCosts> {
    let art = artifact(&spec.model);
    let m = metadata(&art);
    let (admin, owner, opener) = (Keypair::new(), Keypair::new(), Keypair::new());
    let (pt, keys) = program_test::preload(
        program_test::program_test_of("curta_program_probe"),
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        (&owner.pubkey(), 1),
    );
    let mut c = Chain::start(pt).await;
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    c.fund(&opener.pubkey(), 1_000_000_000).await;
    let (run_key, out) = c
        .open_run(
            &keys,
            &m.config,
            spec,
            &opener,
            spec.max_tokens as u64,
            &Default::default(),
        )
        .await;
    assert_eq!(
        out.result,
        Ok(()),
        "{}: open_run: {:#?}",
        spec.name,
        out.logs
    );
    let probe = Pubkey::new_unique();
    let mut turns = vec![];
    loop {
        let data = c.data(&run_key).await;
        let state = &data[run::HEADER_LEN..];
        if StateInfo::read(state).expect("a state").complete {
            return turns;
        }
        let events = native_events(&art, &m, state);
        let fresh = Account {
            lamports: solana_rent::Rent::default().minimum_balance(PROBE_LEN),
            data: vec![0; PROBE_LEN],
            owner: PROGRAM_ID,
            executable: false,
            rent_epoch: 0,
        };
        c.ctx.set_account(&probe, &fresh.into());
        let mut ix = c
            .turn_ix(&keys, &run_key, &m.config, CHARGES.allowance)
            .await;
        ix.accounts.push(AccountMeta::new(probe, false));
        let out = c.send(&[ix], &[]).await;
        assert_eq!(out.result, Ok(()), "{}: turn: {:#?}", spec.name, out.logs);
        let per_turn = curta_core::planner::charges_of(m.config.charges).turn as u64;
        turns.push(read_turn(
            &c.data(&probe).await,
            &events,
            out.program_cu,
            per_turn,
        ));
    }
}

/// Pairs the probe's marks with the native turn's events.
/// `overhead_charge` is the model's table's per-turn charge.
fn read_turn(probe: &[u8], events: &[Event], program_cu: u64, overhead_charge: u64) -> TurnCosts {
    let word = |i: usize| curta_core::read_u64(probe, 8 * i);
    let marks: Vec<u64> = (1..=word(0) as usize).map(word).collect();
    // A mark's own cost: two back to back.
    let mark = marks[0] - marks[1];
    let between = |i: usize| (marks[i] - marks[i + 1]).saturating_sub(mark);
    // Marks: two for the calibration, the end of the checks, `begin`, then
    // the native turn's events after its `Begin`, then two more.
    let expected = 4 + events.len() - 1 + 2;
    assert_eq!(
        marks.len(),
        expected,
        "the probe's marks and the native turn's events disagree"
    );
    // The walker's first step in a turn also holds the loop's setup, which
    // the compiler puts after the core's last mark before it: a cost of
    // the turn, not of its first chunk. It is taken as what the first step
    // cost beyond the turn's median step.
    let walks: Vec<u64> = events
        .iter()
        .skip(1)
        .enumerate()
        .filter(|(_, e)| matches!(e, Event::Walked))
        .map(|(i, _)| between(3 + i))
        .collect();
    let setup = match walks.split_first() {
        Some((&first, rest)) if !rest.is_empty() => {
            let mut rest = rest.to_vec();
            rest.sort_unstable();
            first.saturating_sub(rest[rest.len() / 2])
        }
        _ => 0,
    };
    let mut chunks: Vec<Measured> = vec![];
    let mut parts = vec![(SETUP, setup)];
    let mut walk = 0;
    let mut first_walk = true;
    for (i, e) in events.iter().skip(1).enumerate() {
        let cost = between(3 + i);
        match *e {
            Event::Walked => {
                walk = if std::mem::take(&mut first_walk) {
                    cost - setup
                } else {
                    cost
                };
                parts.push((WALK, walk));
            }
            Event::Chunk(kind, units, charge) => chunks.push(Measured {
                kind,
                units,
                charge,
                cost: (cost + std::mem::take(&mut walk)) as u32,
            }),
            Event::Begin => unreachable!("one begin a turn"),
        }
    }
    let n = marks.len();
    parts.extend([
        (PARTS[0], between(1)),
        (PARTS[1], between(2)),
        (PARTS[2], between(n - 3)),
        (PARTS[3], between(n - 2)),
    ]);
    let in_chunks: u64 = chunks.iter().map(|c| c.cost as u64).sum();
    TurnCosts {
        overhead: program_cu.saturating_sub(in_chunks + n as u64 * mark),
        overhead_charge,
        chunks,
        parts,
    }
}

/// The name of a chunk kind, as the planner's tables call it.
pub fn kind_name(kind: ChunkKind) -> String {
    let phase = Phase::from_u32(kind.phase()).map_or("?".into(), |p| format!("{p:?}"));
    let sub = kind.sub();
    let what = match kind.phase() {
        1 | 2 => match sub {
            ChunkKind::LOOKUP => " lookup",
            ChunkKind::STEP => " step",
            _ => " merge",
        },
        9 => [" stage 0", " stage 1", " stage 2", " stage 3"][sub as usize & 3],
        19 => match sub {
            0 => " maximum pass",
            1 => " sum pass",
            2 => " draw pass",
            4 => " maximum pass, finishing the token",
            _ => " draw pass, finishing the token",
        },
        _ => "",
    };
    format!("{phase}{what}")
}

/// Per kind (and model, whose widths set the charges): what was seen.
#[derive(Clone, Debug, Default)]
pub struct KindStats {
    pub chunks: u64,
    /// Least-squares fits of cost and charge over units: `fixed + per_unit x units`.
    pub cost_fit: (f64, f64),
    pub charge_fit: (f64, f64),
    /// The chunk whose cost came closest to (or over) its charge.
    pub worst: Option<Measured>,
}

fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    if sxx == 0.0 {
        return (my, 0.0);
    }
    let slope = sxy / sxx;
    (my - slope * mx, slope)
}

/// Every chunk of every turn given, by (model, kind).
pub fn stats(runs: &[(String, Vec<TurnCosts>)]) -> BTreeMap<(String, ChunkKind), KindStats> {
    let mut all: BTreeMap<(String, ChunkKind), Vec<Measured>> = BTreeMap::new();
    for (model, turns) in runs {
        for c in turns.iter().flat_map(|t| &t.chunks) {
            all.entry((model.clone(), c.kind)).or_default().push(*c);
        }
    }
    all.into_iter()
        .map(|(key, chunks)| {
            let points = |f: fn(&Measured) -> u32| -> Vec<(f64, f64)> {
                chunks
                    .iter()
                    .map(|c| (c.units as f64, f(c) as f64))
                    .collect()
            };
            let ratio = |c: &Measured| c.cost as f64 / c.charge as f64;
            let worst = chunks
                .iter()
                .copied()
                .max_by(|a, b| ratio(a).total_cmp(&ratio(b)));
            let stats = KindStats {
                chunks: chunks.len() as u64,
                cost_fit: fit(&points(|c| c.cost)),
                charge_fit: fit(&points(|c| c.charge)),
                worst,
            };
            (key, stats)
        })
        .collect()
}

/// The chunks that cost more than their charge, and the turns whose own
/// overhead passed the planner's per-turn charge.
pub fn overruns(runs: &[(String, Vec<TurnCosts>)]) -> Vec<String> {
    let mut out = vec![];
    for (name, turns) in runs {
        for (i, t) in turns.iter().enumerate() {
            for c in t.chunks.iter().filter(|c| c.cost > c.charge) {
                out.push(format!(
                    "{name} turn {}: {} of {} units cost {} CU, charged {}",
                    i + 1,
                    kind_name(c.kind),
                    c.units,
                    c.cost,
                    c.charge
                ));
            }
            if t.overhead > t.overhead_charge {
                out.push(format!(
                    "{name} turn {}: the turn's own overhead is {} CU, charged {}",
                    i + 1,
                    t.overhead,
                    t.overhead_charge
                ));
            }
        }
    }
    out
}

/// The report's section: per model and kind, the measured and charged
/// compute units per unit and fixed, and the chunk nearest its charge;
/// then the turns' own overhead.
pub fn render(runs: &[(String, Vec<TurnCosts>)], models: &BTreeMap<String, String>) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Compute units of each kind of chunk on the SBF VM (the measuring build), beside the \
         planner's charge: fits of cost and charge over a chunk's units (per unit, and fixed: \
         setup plus the chunk's 160), and the chunk whose cost came nearest its charge.\n"
    );
    let _ = writeln!(
        md,
        "| Model | Chunk | Chunks | Per unit: cost | charge | Fixed: cost | charge | Nearest: units | cost | charge | margin |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let by_model: Vec<(String, Vec<TurnCosts>)> = runs
        .iter()
        .map(|(name, t)| (models.get(name).cloned().unwrap_or_default(), t.clone()))
        .collect();
    for ((model, kind), s) in stats(&by_model) {
        let w = s.worst.expect("a kind seen has a chunk");
        let _ = writeln!(
            md,
            "| {model} | {} | {} | {:.1} | {:.1} | {:.0} | {:.0} | {} | {} | {} | {:.1}% |",
            kind_name(kind),
            s.chunks,
            s.cost_fit.1,
            s.charge_fit.1,
            s.cost_fit.0,
            s.charge_fit.0,
            w.units,
            w.cost,
            w.charge,
            100.0 * (w.charge as f64 / w.cost.max(1) as f64 - 1.0)
        );
    }
    let overheads: Vec<(u64, &str, usize)> = runs
        .iter()
        .flat_map(|(name, t)| {
            t.iter()
                .enumerate()
                .map(move |(i, t)| (t.overhead, name.as_str(), i + 1))
        })
        .collect();
    let (peak, at, turn) = overheads.iter().max().copied().unwrap_or((0, "", 0));
    let mean = overheads.iter().map(|o| o.0).sum::<u64>() as f64 / overheads.len().max(1) as f64;
    let _ = writeln!(
        md,
        "\nA turn's own compute units (accounts, checks, payment, receipt), outside its chunks: \
         peak {peak} ({at}, turn {turn}), mean {mean:.0}, over {} turns; charged {} by the \
         specification's table, {} by the measured one. By part (finding each chunk: per chunk, \
         in the chunks' figures above), mean and peak:\n",
        overheads.len(),
        CHARGES.turn,
        MEASURED_CHARGES.turn
    );
    let _ = writeln!(md, "| Part | Mean | Peak |\n|---|---|---|");
    for name in [WALK, SETUP].iter().chain(&PARTS).copied() {
        let seen: Vec<u64> = runs
            .iter()
            .flat_map(|(_, t)| t.iter().flat_map(|t| &t.parts))
            .filter(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .collect();
        let mean = seen.iter().map(|&c| c as f64).sum::<f64>() / seen.len().max(1) as f64;
        let peak = seen.iter().max().copied().unwrap_or(0);
        let _ = writeln!(md, "| {name} | {mean:.0} | {peak} |");
    }
    md
}
