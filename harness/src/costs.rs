//! What each kind of chunk costs on the SBF VM, beside what the planner
//! charges for it. Runs are replayed on the measuring build of the program
//! (`make build-sbf-probe`: `curta_program_probe.so`), whose `turn` writes
//! each chunk's kind, units, charge and measured compute units into an
//! extra account (`program/src/probe.rs`). Every chunk must cost at most
//! its charge, and every turn's own overhead (accounts, planning, payment,
//! receipt) at most the planner's 18,000.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use curta_core::format::read_u32;
use curta_core::planner::{ChunkKind, CHARGES};
use curta_core::protocol::run;
use curta_core::{Phase, StateInfo};
use solana_account::Account;
use solana_instruction::AccountMeta;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::chain::{self, Chain, PROGRAM_ID};
use crate::manifest::RunSpec;
use crate::models::{artifact, metadata};

/// The probe account: room for 4,095 chunks a turn.
const PROBE_LEN: usize = 64 * 1024;
const RECORDS: usize = 16;
const RECORD_LEN: usize = 16;

/// One chunk as the probe saw it.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub kind: ChunkKind,
    pub units: u32,
    pub charge: u32,
    /// Its compute units, the probe's own read taken out.
    pub cost: u32,
}

/// One turn: its chunks, its own parts, and what the program spent
/// outside its chunks.
#[derive(Clone, Debug)]
pub struct TurnCosts {
    pub chunks: Vec<Measured>,
    /// The turn's own parts (`program/src/probe.rs`'s `PART_*`), by name.
    pub parts: Vec<(&'static str, u32)>,
    /// The program's compute units less its chunks' and the probe's.
    pub overhead: u64,
}

/// The probe's record of the walker finding the next chunk.
const WALK: u32 = 0xFF05;

/// The turn's own parts, as the probe records them.
const PARTS: [(u32, &str); 5] = [
    (0xFF00, "accounts and checks"),
    (0xFF02, "the core's checks"),
    (0xFF05, "finding each chunk"),
    (0xFF03, "the core's end of turn"),
    (0xFF04, "payment and receipt"),
];

/// Replays `spec` on the measuring build, turn by turn.
pub async fn measure(spec: &RunSpec) -> Vec<TurnCosts> {
    let art = artifact(&spec.model);
    let m = metadata(&art);
    let (admin, owner, opener) = (Keypair::new(), Keypair::new(), Keypair::new());
    let (pt, keys) = chain::preload(
        chain::program_test_of("curta_program_probe"),
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        (&owner.pubkey(), 1),
    );
    let mut c = Chain::start(pt).await;
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    c.fund(&opener.pubkey(), 1_000_000_000).await;
    let (run_key, out) = c
        .open_run(&keys, &m.config, spec, &opener, spec.max_tokens as u64)
        .await;
    assert_eq!(out.result, Ok(()), "{}: open_run: {:#?}", spec.name, out.logs);
    let probe = Pubkey::new_unique();
    let mut turns = vec![];
    loop {
        let data = c.data(&run_key).await;
        if StateInfo::read(&data[run::HEADER_LEN..]).expect("a state").complete {
            return turns;
        }
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
        turns.push(read_turn(&c.data(&probe).await, out.program_cu));
    }
}

/// Parses the probe account after a turn that used `program_cu`.
fn read_turn(probe: &[u8], program_cu: u64) -> TurnCosts {
    let count = read_u32(probe, 0) as usize;
    let read = read_u32(probe, 4);
    let write = read_u32(probe, 8);
    let records: Vec<Measured> = (0..count)
        .map(|i| {
            let at = RECORDS + i * RECORD_LEN;
            Measured {
                kind: ChunkKind(read_u32(probe, at)),
                units: read_u32(probe, at + 4),
                charge: read_u32(probe, at + 8),
                cost: read_u32(probe, at + 12).saturating_sub(read),
            }
        })
        .collect();
    // A chunk's cost includes the walker's finding it (the chunk's 160 is
    // for that too), which the probe records apart, just before it.
    let mut parts = vec![];
    let mut chunks: Vec<Measured> = vec![];
    let mut walk = 0;
    for r in records {
        if r.kind.0 < 0xFF00 {
            chunks.push(Measured {
                cost: r.cost + std::mem::take(&mut walk),
                ..r
            });
            continue;
        }
        let name = PARTS
            .iter()
            .find(|(k, _)| *k == r.kind.0)
            .map_or("?", |(_, n)| n);
        if r.kind.0 == WALK {
            walk = r.cost;
        }
        parts.push((name, r.cost));
    }
    let in_chunks: u64 = chunks.iter().map(|c| c.cost as u64).sum();
    // Each record holds one read (taken out of its cost); besides, the
    // probe read four times and wrote once before the first record, and
    // wrote and read once after each.
    let probe_reads = (4 + 2 * count as u64) * read as u64 + (1 + count as u64) * write as u64;
    TurnCosts {
        overhead: program_cu.saturating_sub(in_chunks + probe_reads),
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
            if t.overhead > CHARGES.turn as u64 {
                out.push(format!(
                    "{name} turn {}: the turn's own overhead is {} CU, charged {}",
                    i + 1,
                    t.overhead,
                    CHARGES.turn
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
        "| Model | Chunk | Chunks | Per unit: cost | charge | Fixed: cost | charge | Nearest: units | cost | charge |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    let by_model: Vec<(String, Vec<TurnCosts>)> = runs
        .iter()
        .map(|(name, t)| (models.get(name).cloned().unwrap_or_default(), t.clone()))
        .collect();
    for ((model, kind), s) in stats(&by_model) {
        let w = s.worst.expect("a kind seen has a chunk");
        let _ = writeln!(
            md,
            "| {model} | {} | {} | {:.1} | {:.1} | {:.0} | {:.0} | {} | {} | {} |",
            kind_name(kind),
            s.chunks,
            s.cost_fit.1,
            s.charge_fit.1,
            s.cost_fit.0,
            s.charge_fit.0,
            w.units,
            w.cost,
            w.charge
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
         peak {peak} ({at}, turn {turn}), mean {mean:.0}, over {} turns; charged {}. By part \
         (finding each chunk: per chunk, in the chunks' figures above), mean and peak:\n",
        overheads.len(),
        CHARGES.turn
    );
    let _ = writeln!(md, "| Part | Mean | Peak |\n|---|---|---|");
    for (_, name) in PARTS {
        let seen: Vec<u32> = runs
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
