//! Replays one run turn by turn on the three targets in lockstep: the SBF
//! VM (solana-program-test, metered), native curta-core and the WebAssembly
//! module; after every turn the three states must be equal byte for byte,
//! and equal to the golden receipt's when one is given. Stops at the first
//! difference, naming the turn, the offset and the field or buffer.

use std::time::{Duration, Instant};

use curta_core::planner::{self, CHARGES};
use curta_core::protocol::run;
use curta_core::state::diff::first_difference;
use curta_core::{output_text, output_tokens, StateInfo};
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::manifest::RunSpec;
use crate::models::{artifact, metadata};
use crate::native;
use crate::program_test::{self, Chain};
use crate::receipt::{Receipt, TurnRecord};
use crate::sha256_hex;
use crate::wasm::WasmCore;

/// Wall-clock time each target spent on the run's turns.
#[derive(Clone, Debug, Default)]
pub struct Times {
    pub native: Duration,
    pub sbf: Duration,
    pub wasm: Duration,
}

/// What one replay found: the receipt it would write, its times, and the
/// first failure, if any.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub spec: RunSpec,
    pub receipt: Receipt,
    pub times: Times,
    pub failure: Option<String>,
}

/// Replays `spec` on the three targets, checking against `golden` if given.
pub async fn replay(spec: &RunSpec, golden: Option<&Receipt>, wasm: &mut WasmCore) -> RunReport {
    let art = artifact(&spec.model);
    let m = metadata(&art);
    let cfg = m.config;
    let mut report = RunReport {
        spec: spec.clone(),
        receipt: Receipt {
            name: spec.name.clone(),
            model: spec.model.clone(),
            artifact_sha256: sha256_hex(&art),
            turns: vec![],
            tokens: vec![],
            text: vec![],
        },
        times: Times::default(),
        failure: None,
    };
    let fail = |report: &mut RunReport, message: String| {
        report.failure = Some(format!("{}: {message}", spec.name));
    };
    if let Some(g) = golden {
        if g.artifact_sha256 != report.receipt.artifact_sha256 {
            fail(
                &mut report,
                format!("the artifact of {} differs from the golden one", spec.model),
            );
            return report;
        }
    }

    // A bank with the config and the sealed model preloaded (the upload
    // path itself is exercised by the program tests).
    let admin = Keypair::new();
    let owner = Keypair::new();
    let opener = Keypair::new();
    let royalty = 1;
    let (pt, keys) = program_test::preloaded_bank(
        &admin.pubkey(),
        CHARGES.allowance,
        &art,
        &owner.pubkey(),
        royalty,
    );
    let mut c = Chain::start(pt).await;
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    c.fund(&opener.pubkey(), 1_000_000_000).await;
    let (run_key, out) = c
        .open_run(
            &keys,
            &cfg,
            spec,
            &opener,
            royalty * spec.max_tokens as u64,
            &Default::default(),
        )
        .await;
    if out.result.is_err() {
        fail(
            &mut report,
            format!("open_run failed on SBF: {:?} {:#?}", out.result, out.logs),
        );
        return report;
    }
    let mut state = native::open(&m, spec);
    let wasm_run = match wasm.open(&art, spec) {
        Ok(r) => r,
        Err(e) => {
            fail(&mut report, format!("open failed in WebAssembly: {e}"));
            return report;
        }
    };

    let mut turn = 0u64;
    let mut planner_cu = 0u32;
    let mut program_cu = 0u64;
    loop {
        // Compare the three states, and the golden hash.
        let onchain = c.data(&run_key).await;
        let onchain = &onchain[run::HEADER_LEN..];
        let in_module = wasm.state(&wasm_run);
        let sha = sha256_hex(&state);
        let difference = first_difference(&cfg, &state, onchain)
            .map(|d| format!("SBF differs from native: {d}"))
            .or_else(|| {
                first_difference(&cfg, &state, &in_module)
                    .map(|d| format!("WebAssembly differs from native: {d}"))
            });
        if let Some(d) = difference {
            fail(&mut report, format!("turn {turn}: {d}"));
            break;
        }
        let info = StateInfo::read(&state).expect("a checked state");
        let record = TurnRecord {
            turn,
            state_sha256: sha,
            generated: info.generated,
            planner_cu,
            program_cu,
        };
        if let Some(g) = golden {
            match g.turns.get(turn as usize) {
                Some(expected)
                    if expected.state_sha256 == record.state_sha256
                        && expected.planner_cu == planner_cu => {}
                Some(expected) => {
                    fail(
                        &mut report,
                        format!(
                            "turn {turn}: state or charge differs from golden: sha {} (golden {}), planner {planner_cu} (golden {})",
                            record.state_sha256, expected.state_sha256, expected.planner_cu
                        ),
                    );
                    break;
                }
                None => {
                    fail(
                        &mut report,
                        format!(
                            "turn {turn}: the golden receipt has only {} turns",
                            g.turns.len() - 1
                        ),
                    );
                    break;
                }
            }
        }
        report.receipt.turns.push(record);
        if info.complete {
            break;
        }

        // One more turn on each target.
        turn += 1;
        // What a client asks for the turn: the program must stay within it.
        let bound = planner::measured_price(cfg, &state, CHARGES.allowance)
            .expect("a planned turn has a price");
        let start = Instant::now();
        let result = native::step(&art, &m, &mut state);
        report.times.native += start.elapsed();
        planner_cu = result.work;

        let start = Instant::now();
        let out = c.turn(&keys, &run_key, &cfg, CHARGES.allowance).await;
        report.times.sbf += start.elapsed();
        if out.result.is_err() {
            fail(
                &mut report,
                format!(
                    "turn {turn} failed on SBF: {:?} {:#?}",
                    out.result, out.logs
                ),
            );
            break;
        }
        program_cu = out.program_cu;
        if program_cu > bound as u64 {
            fail(
                &mut report,
                format!(
                    "turn {turn}: the program used {program_cu} compute units, over the \
                     measured price of its chunks, {bound}, which a client asks for"
                ),
            );
            break;
        }

        let start = Instant::now();
        let stepped = wasm.step(&wasm_run);
        report.times.wasm += start.elapsed();
        if let Err(e) = stepped {
            fail(
                &mut report,
                format!("turn {turn} failed in WebAssembly with core error {e}"),
            );
            break;
        }
    }
    wasm.close(wasm_run);
    report.receipt.tokens = output_tokens(cfg, &state)
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    report.receipt.text = output_text(cfg, &state).to_vec();
    if report.failure.is_none() {
        if let Some(g) = golden {
            if g.turns.len() != report.receipt.turns.len()
                || g.tokens != report.receipt.tokens
                || g.text != report.receipt.text
            {
                fail(
                    &mut report,
                    "the run ends differently from the golden receipt".into(),
                );
            }
        }
    }
    report
}

/// Replays runs on `CURTA_JOBS` threads (default: the machine's cores),
/// each with its own bank, runtime and module, longest runs first (by the
/// golden receipt's turns). Reports come back in the order given.
pub fn replay_all(specs: &[RunSpec], golden: &[Option<Receipt>]) -> Vec<RunReport> {
    let jobs = std::env::var("CURTA_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, specs.len().max(1));
    let mut order: Vec<usize> = (0..specs.len()).collect();
    // Popped from the back: the longest runs last in the list.
    order.sort_by_key(|&i| golden[i].as_ref().map_or(usize::MAX, |g| g.turns.len()));
    let queue = std::sync::Mutex::new(order);
    let results = std::sync::Mutex::new(vec![None; specs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                let mut wasm = WasmCore::load_default()
                    .unwrap_or_else(|e| panic!("{e} (run `make build-wasm`)"));
                loop {
                    let Some(i) = queue.lock().expect("queue").pop() else {
                        break;
                    };
                    let report = runtime.block_on(replay(&specs[i], golden[i].as_ref(), &mut wasm));
                    results.lock().expect("results")[i] = Some(report);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every run replayed"))
        .collect()
}
