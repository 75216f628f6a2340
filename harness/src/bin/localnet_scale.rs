//! `make localnet-scale`: the stories15M, stories42M and stories110M shapes
//! (deterministic synthetic weights, llama2's tokenizer), each planned with
//! the specification's charges and the measured ones, and stories260K's
//! reference run, on a local validator: deploy, upload, and generate each
//! golden run under today's block limits, and stories260K's and the
//! stories15M shape's under the legacy ones too (the bigger uploads take
//! minutes). Each final state is checked against its golden receipt. The
//! table: upload time, the model accounts' rent today and under SIMD-0437,
//! turns per block, the compute units a turn asks for and uses, turns in
//! flight, turns and seconds per generated token beside the floor a run
//! account's compute-unit limit sets (from what the turns ask for and
//! from what they use), and fees per generated token today and under
//! SIMD-0553 (with each turn's own limit, and with one uniform limit as
//! the crank asked before). The report also goes to
//! `target/localnet-scale.md`.
//!
//! `localnet-scale [WINDOW]`: turns in flight (default: the client's,
//! measured).
//! `CURTA_RUNS=name,...` measures only those of the runs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use curta_client::output::thousands;
use curta_core::client::budget::{
    scheduler_cost, turn_limit, LimitPolicy, LOADED_ACCOUNTS_COST, TURN_WRITES_BY_OWNER,
};
use curta_core::client::crank::MOST_ATTEMPTS;
use curta_core::client::replay::{initial_state, replay};
use curta_core::format::WEIGHT_HEADER_LEN;
use curta_core::inference::quote_turns;
use curta_core::inference::RunParams;
use curta_core::planner::CHARGES;
use curta_core::protocol::model;
use curta_core::state::StateBuffer;
use curta_harness::curta::Curta;
use curta_harness::localnet::{floor_seconds, BlockLimits, Localnet};
use curta_replay::manifest::{self, RunSpec};
use curta_replay::models::{artifact, metadata};
use curta_replay::receipt::Receipt;
use serde_json::Value;

/// The runs, each with whether it is also measured under the legacy limits.
const RUNS: [(&str, bool); 7] = [
    ("stories260k-reference", true),
    ("stories15m-synthetic-reference", true),
    ("stories15m-synthetic-measured-reference", true),
    ("stories42m-synthetic-split", false),
    ("stories42m-synthetic-measured-split", false),
    ("stories110m-synthetic-split", false),
    ("stories110m-synthetic-measured-split", false),
];

/// Rent today: the lamports a byte of a rent-exempt account holds.
const LAMPORTS_PER_BYTE: u64 = 6_960;
/// Under SIMD-0437: a tenth.
const LAMPORTS_PER_BYTE_SIMD_0437: u64 = 696;
/// The bytes the rent counts beside an account's data.
const ACCOUNT_OVERHEAD: u64 = 128;
/// A signature's fee today.
const SIGNATURE_FEE: f64 = 5_000.0;
/// A transaction's base fee under SIMD-0553 (beside half a lamport a
/// requested compute unit).
const SIMD_0553_BASE: f64 = 2_500.0;
const SOL: f64 = 1e9;

/// What is known of a run before it is sent.
struct Planned {
    spec: RunSpec,
    legacy: bool,
    path: PathBuf,
    golden: Receipt,
    /// The bytes uploaded (every section's) and the count of sections.
    weight_bytes: usize,
    sections: usize,
    /// The model account's and the weight accounts' data lengths.
    account_lens: Vec<usize>,
    /// Turns one more generated token takes (`quote_turns`).
    turns_per_token: u64,
    /// The largest planner charge of the golden receipt's turns.
    max_planned: u32,
    /// Each turn's limit as the crank asks it (`LimitPolicy::Exact`: the
    /// measured price of its chunks), from the run's replay.
    limits: Vec<u32>,
}

fn main() -> ExitCode {
    match report() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("localnet-scale failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn report() -> Result<(), String> {
    let window = std::env::args().nth(1);
    let only: Option<Vec<String>> = std::env::var("CURTA_RUNS")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let dir = curta_replay::root().join("target/localnet-scale");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let manifest = manifest::load();
    let mut runs = vec![];
    for (name, legacy) in RUNS {
        if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
            continue;
        }
        let spec = manifest
            .iter()
            .find(|r| r.name == name)
            .ok_or(format!("{name} is not in golden/manifest.json"))?
            .clone();
        let started = Instant::now();
        let art = artifact(&spec.model);
        let path = dir.join(format!("{}.curta", spec.model));
        std::fs::write(&path, &art[..]).map_err(|e| format!("{}: {e}", path.display()))?;
        let golden = Receipt::load(name).ok_or(format!("no golden receipt for {name}"))?;
        let m = metadata(&art);
        let sections = m.section_count();
        let lens: Vec<usize> = (0..sections).map(|i| m.section_len(i)).collect();
        let mut account_lens = vec![model::len(sections)];
        account_lens.extend(lens.iter().map(|l| WEIGHT_HEADER_LEN + l));
        let quote = |max_tokens: u32| -> Result<u64, String> {
            let size = curta_core::state_size(m.config, spec.prompt.len(), max_tokens)
                .map_err(|e| format!("{name}: state size: {e:?}"))?;
            let mut scratch = StateBuffer::new(size);
            quote_turns(
                m.config,
                m.bytes,
                &spec.prompt,
                max_tokens,
                spec.temperature_q16,
                &mut scratch,
            )
            .map_err(|e| format!("{name}: quote_turns({max_tokens}): {e:?}"))
        };
        let (quoted, one_more) = (quote(spec.max_tokens)?, quote(spec.max_tokens + 1)?);
        if quoted != golden.turns.len() as u64 - 1 {
            return Err(format!(
                "{name}: quote_turns gives {quoted} turns, the golden receipt {}",
                golden.turns.len() - 1
            ));
        }
        let max_planned = golden.turns.iter().map(|t| t.planner_cu).max().unwrap_or(0);
        let params = RunParams {
            prompt: &spec.prompt,
            max_tokens: spec.max_tokens,
            temperature_q16: spec.temperature_q16,
            seed: spec.seed,
        };
        let start = initial_state(&art, &params).map_err(|e| format!("{name}: {e:?}"))?;
        let steps = replay(&art, &start, CHARGES.allowance)
            .map_err(|e| {
                format!(
                    "{name}: the replay failed at turn {}: {:?}",
                    e.turn, e.error
                )
            })?
            .steps;
        let limits = LimitPolicy::Exact.limits(&steps);
        eprintln!(
            "{name}: {} bytes in {sections} sections, {quoted} turns, {} more a token \
             ({:.1} s)",
            lens.iter().sum::<usize>(),
            one_more - quoted,
            started.elapsed().as_secs_f64()
        );
        runs.push(Planned {
            legacy,
            path,
            golden,
            weight_bytes: lens.iter().sum(),
            sections,
            account_lens,
            turns_per_token: one_more - quoted,
            max_planned,
            limits,
            spec,
        });
    }
    let so = curta_replay::deploy_dir().join("curta_program.so");

    let mut md = String::from("# Curta on curta-localnet: the scale table\n\n");
    for r in &runs {
        let _ = writeln!(
            md,
            "- {}: {}, {:?}, {} tokens at T=0, {} turns ({} a generated token); {} bytes of \
             weights in {} sections; the largest planner charge of a turn {} compute units.",
            r.spec.name,
            r.spec.model,
            String::from_utf8_lossy(&r.spec.prompt),
            r.spec.max_tokens,
            thousands(r.golden.turns.len() as u64 - 1),
            r.turns_per_token,
            thousands(r.weight_bytes as u64),
            r.sections,
            thousands(r.max_planned as u64),
        );
    }
    let _ = writeln!(
        md,
        "- Turns in flight: {}.\n",
        window
            .as_deref()
            .unwrap_or("measured (the client's default)")
    );
    let _ = writeln!(
        md,
        "| Run | Block limits (block / account) | Upload | Weights | Model rent, today / SIMD-0437 (SOL) | Run rent (SOL) | Turns | Turns per token | CU a turn: asked mean, max / used mean, max | In flight (most) | Resent | Blocks (turns per block: max, mean) | Crank | s per token | Floor s per token, from asked / used | x floor, asked / used | Fees per token, today / SIMD-0553 / SIMD-0553 at one uniform limit (SOL) |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for legacy in [false, true] {
        let these: Vec<&Planned> = runs.iter().filter(|r| !legacy || r.legacy).collect();
        if these.is_empty() {
            continue;
        }
        let net = Localnet::builder().legacy_block_limits(legacy).start()?;
        let limits = net.block_limits();
        let limits_cell = limits
            .map(|l| {
                format!(
                    "{}M / {}M",
                    l.block / 1_000_000,
                    l.writable_account / 1_000_000
                )
            })
            .unwrap_or_else(|| "?".into());
        let account_limit = limits.map_or(
            if legacy {
                BlockLimits::LEGACY_WRITABLE_ACCOUNT
            } else {
                BlockLimits::WRITABLE_ACCOUNT
            },
            |l| l.writable_account,
        );
        eprintln!("validator at {} ({limits_cell})", net.rpc_url());
        let tag = if legacy { "legacy" } else { "default" };
        let curta = Curta::new(&net, &dir.join(format!("{tag}-{}", std::process::id())))?;
        curta.deploy(&so)?;
        for r in these {
            let row = measure(&curta, r, account_limit, window.as_deref())?;
            let row = format!("| {} | {limits_cell} | {row}", r.spec.name);
            eprintln!("{row}");
            let _ = writeln!(md, "{row}");
        }
        net.stop()?;
    }
    let _ = writeln!(
        md,
        "\nEvery run's final state equals its golden receipt's. Upload: seconds and \
         transactions. Weights: the bytes uploaded and their sections. Model rent: the \
         rent-exempt minimum of the model's accounts (the Model account and a weight account \
         per section, each (data + 128) bytes) at 6,960 lamports a byte (today) and 696 \
         (SIMD-0437), returned by `model close`. Run rent: the run account's, returned when the \
         run closes. Turns per token: what one more generated token adds to the quote \
         (quote_turns for max tokens + 1 less for max tokens). Resent: turns that ran out of \
         order (StaleTurn), paid and sent again. Blocks: those holding any of the run's turns. \
         CU a turn: the compute-unit limits the landed turns asked for (each its own plan's) \
         and the units they used (the whole transaction's). In flight: the most turns the \
         crank had sent and not yet seen run. Crank: from the first turn sent to the final \
         state checked. s per token: the crank's seconds per turn times turns per token (the \
         run's measured turn rate). Floor s per token: every turn writes the run account, \
         which takes at most the account limit's compute units a block, 0.4 s: turns per token \
         times a turn's mean cost over that limit, times 0.4 s, where the cost is what the \
         scheduler reserves (the limit asked plus 17,709 for the signature, the two write \
         locks (the run, and the owner, who cranks its own runs here), the instruction data and the 64 MiB of loaded accounts a turn may read) or \
         what the turn used (its units plus 1,325, the loaded accounts not counted). Fees per \
         token today: the mean landed turn's fee times turns per token; under SIMD-0553: turns \
         per token times (2,500 lamports + half the compute-unit limit each turn asked for + \
         the same priority fee, the mean fee less 5,000), and the same at one uniform limit \
         for every turn, the largest plan's (the crank's requests before they were exact)."
    );
    print!("{md}");
    let out = curta_replay::root().join("target/localnet-scale.md");
    std::fs::write(&out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// Uploads and generates one run; the table's cells after the first two.
fn measure(
    curta: &Curta,
    r: &Planned,
    account_limit: u64,
    window: Option<&str>,
) -> Result<String, String> {
    let spec = &r.spec;
    let path: &Path = &r.path;
    let up = Instant::now();
    let u = curta.json(&["model", "upload", &path.to_string_lossy()])?;
    let upload_s = up.elapsed().as_secs_f64();
    eprintln!(
        "{}: uploaded in {upload_s:.1} s, {} transactions",
        spec.name, u["transactions"]
    );
    let model = u["model"].as_str().ok_or("no model")?.to_string();
    let prompt = String::from_utf8_lossy(&spec.prompt).into_owned();
    let max_tokens = spec.max_tokens.to_string();
    let mut args = vec![
        "generate",
        "--model",
        &model,
        "--prompt",
        &prompt,
        "--max-tokens",
        &max_tokens,
    ];
    if let Some(w) = window {
        args.extend(["--window", w]);
    }
    let g = curta.json(&args)?;
    // The whole report, turn by turn, beside the client's state.
    let saved = curta
        .state_dir
        .with_file_name(format!("{}.json", spec.name));
    std::fs::write(&saved, g.to_string()).map_err(|e| format!("{}: {e}", saved.display()))?;
    let final_hash = g["final_state_sha256"].as_str().unwrap_or_default();
    let want = &r.golden.turns.last().ok_or("empty receipt")?.state_sha256;
    if final_hash != want {
        return Err(format!(
            "{}: the final state {final_hash} is not the golden {want}",
            spec.name
        ));
    }
    let per_block: Vec<u64> = g["turns_per_slot"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p[1].as_u64()).collect())
        .unwrap_or_default();
    let landed: &[Value] = g["turns"].as_array().map_or(&[], Vec::as_slice);
    let turns = landed.len() as f64;
    let field = |t: &Value, k: &str| t[k].as_u64().unwrap_or(0) as f64;
    let mean_fee = landed.iter().map(|t| field(t, "fee")).sum::<f64>() / turns.max(1.0);
    let mean = |k: &str| landed.iter().map(|t| field(t, k)).sum::<f64>() / turns.max(1.0);
    let most = |k: &str| landed.iter().map(|t| field(t, k)).fold(0.0, f64::max);
    // Each turn asks for the measured price of its chunks (a turn sent
    // again for one unit more each time, to be another transaction).
    for t in landed {
        let turn = t["turn"].as_u64().unwrap_or(0) as usize;
        let exact = r.limits.get(turn.wrapping_sub(1)).copied().unwrap_or(0) as f64;
        if !(exact..=exact + MOST_ATTEMPTS as f64).contains(&field(t, "cu_limit")) {
            return Err(format!(
                "{}: turn {turn} asked for {} compute units, its measured price being {exact}",
                spec.name, t["cu_limit"]
            ));
        }
    }
    let (asked, used) = (mean("cu_limit"), mean("consumed_cu"));
    // What the scheduler reserves for a turn, and what one used costs the
    // account (the signature, two write locks and the data, 1,325).
    let cost_asked = landed
        .iter()
        .map(|t| {
            scheduler_cost(
                field(t, "cu_limit") as u32,
                field(t, "fee") > SIGNATURE_FEE,
                TURN_WRITES_BY_OWNER,
            ) as f64
        })
        .sum::<f64>()
        / turns.max(1.0);
    let cost_used =
        used + (scheduler_cost(0, true, TURN_WRITES_BY_OWNER) - LOADED_ACCOUNTS_COST) as f64;
    let crank_s = g["seconds"].as_f64().unwrap_or(0.0);
    let tpt = r.turns_per_token as f64;
    let s_per_token = crank_s * tpt / turns.max(1.0);
    let floor_asked = floor_seconds(tpt * cost_asked, account_limit);
    let floor_used = floor_seconds(tpt * cost_used, account_limit);
    let priority = (mean_fee - SIGNATURE_FEE).max(0.0);
    let fee_today = mean_fee * tpt;
    let fee_0553 = tpt * (SIMD_0553_BASE + (asked / 2.0).ceil() + priority);
    let uniform = turn_limit(r.max_planned) as f64;
    let fee_0553_uniform = tpt * (SIMD_0553_BASE + (uniform / 2.0).ceil() + priority);
    let rent = |per_byte: u64| {
        r.account_lens
            .iter()
            .map(|&l| (l as u64 + ACCOUNT_OVERHEAD) * per_byte)
            .sum::<u64>()
    };
    let (rent_today, rent_0437) = (rent(LAMPORTS_PER_BYTE), rent(LAMPORTS_PER_BYTE_SIMD_0437));
    if let Some(charged) = u["rent"].as_u64() {
        if charged != rent_today {
            eprintln!(
                "{}: the upload paid {charged} lamports of rent, not {rent_today}",
                spec.name
            );
        }
    }
    let mean_block = turns / per_block.len().max(1) as f64;
    Ok(format!(
        "{upload_s:.1} s, {} txs | {} bytes, {} sections | {} / {} | {} | {} | {} | {}, {} / {}, {} | {} | {} | {} ({}, {mean_block:.1}) | {crank_s:.2} s | {s_per_token:.3} | {floor_asked:.3} / {floor_used:.3} | {:.2} / {:.2} | {} / {} / {} |",
        thousands(u["transactions"].as_u64().unwrap_or(0)),
        thousands(r.weight_bytes as u64),
        r.sections,
        sol(rent_today as f64, 3),
        sol(rent_0437 as f64, 3),
        sol(g["rent"].as_u64().unwrap_or(0) as f64, 3),
        thousands(landed.len() as u64),
        r.turns_per_token,
        thousands(asked.round() as u64),
        thousands(most("cu_limit") as u64),
        thousands(used.round() as u64),
        thousands(most("consumed_cu") as u64),
        g["in_flight_most"],
        g["failed"].as_array().map_or(0, Vec::len),
        per_block.len(),
        per_block.iter().max().unwrap_or(&0),
        s_per_token / floor_asked.max(f64::MIN_POSITIVE),
        s_per_token / floor_used.max(f64::MIN_POSITIVE),
        sol(fee_today.round(), 9),
        sol(fee_0553.round(), 9),
        sol(fee_0553_uniform.round(), 9),
    ))
}

/// Lamports as SOL with `decimals` places and thousands separators.
fn sol(lamports: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, lamports / SOL);
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    let whole = thousands(whole.parse().unwrap_or(0));
    match frac {
        "" => whole,
        f => format!("{whole}.{f}"),
    }
}
