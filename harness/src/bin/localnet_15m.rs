//! `make localnet-15m`: the stories15M shape (deterministic synthetic
//! weights, llama2's tokenizer) on a local validator, under today's block
//! limits and the legacy ones: deploy, upload, and generate the golden
//! stories15m-synthetic-reference run (530 turns under the specification's
//! charges) and its measured-table twin (396 turns), printing turns per
//! block and seconds per token, and checking each final state against its
//! golden receipt. stories260K's reference run is measured beside them. The
//! report also goes to `target/localnet-15m.md`.
//!
//! `localnet-15m [WINDOW]`: turns in flight (default: the client's, 32).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use curta_harness::curta::Curta;
use curta_harness::localnet::Localnet;
use curta_harness::manifest::{self, RunSpec};
use curta_harness::models::{artifact, metadata};
use curta_harness::receipt::Receipt;

const RUNS: [&str; 3] = [
    "stories15m-synthetic-reference",
    "stories15m-synthetic-measured-reference",
    "stories260k-reference",
];

fn main() -> ExitCode {
    match report() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("localnet-15m failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn report() -> Result<(), String> {
    let window = std::env::args().nth(1);
    let dir = curta_harness::root().join("target/localnet-15m");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut runs = vec![];
    for name in RUNS {
        let spec = manifest::load()
            .into_iter()
            .find(|r| r.name == name)
            .ok_or(format!("{name} is not in golden/manifest.json"))?;
        let art = artifact(&spec.model);
        let path = dir.join(format!("{}.curta", spec.model));
        std::fs::write(&path, &art[..]).map_err(|e| format!("{}: {e}", path.display()))?;
        let golden = Receipt::load(name).ok_or(format!("no golden receipt for {name}"))?;
        runs.push((
            spec,
            path,
            art.len(),
            metadata(&art).section_count(),
            golden,
        ));
    }
    let so = curta_harness::deploy_dir().join("curta_program.so");

    let mut md = String::from("# Curta on curta-localnet\n\n");
    for (spec, _, len, sections, golden) in &runs {
        let _ = writeln!(
            md,
            "- {}: {:?}, {} tokens at T=0, {} turns; {} bytes of weights in {sections} sections.",
            spec.name,
            String::from_utf8_lossy(&spec.prompt),
            spec.max_tokens,
            golden.turns.len() - 1,
            len
        );
    }
    let _ = writeln!(
        md,
        "- Turns in flight: {}.\n",
        window.as_deref().unwrap_or("32 (the client's default)")
    );
    let _ = writeln!(
        md,
        "| Run | Block limits (block / account) | Upload | Upload txs | Turns | Resent | Blocks | Turns per block (max, mean) | Slots | Crank | s per token | Fees (SOL) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for legacy in [false, true] {
        let net = Localnet::builder().legacy_block_limits(legacy).start()?;
        let limits = net
            .block_limits()
            .map(|l| {
                format!(
                    "{}M / {}M",
                    l.block / 1_000_000,
                    l.writable_account / 1_000_000
                )
            })
            .unwrap_or_else(|| "?".into());
        eprintln!("validator at {} ({limits})", net.rpc_url());
        let tag = if legacy { "legacy" } else { "default" };
        let curta = Curta::new(&net, &dir.join(format!("{tag}-{}", std::process::id())))?;
        curta.deploy(&so)?;
        for (spec, path, _, _, golden) in &runs {
            let row = measure(&curta, spec, path, golden, window.as_deref())?;
            let row = format!("| {} | {limits} | {row}", spec.name);
            eprintln!("{row}");
            let _ = writeln!(md, "{row}");
        }
        net.stop()?;
    }
    let _ = writeln!(
        md,
        "\nEvery run's final state equals its golden receipt's. Resent: turns that ran out of \
         order (StaleTurn), paid and sent again. Blocks: those holding any of the run's turns; \
         slots: from the opening to the closing. Crank: from the first turn sent to the final \
         state checked."
    );
    print!("{md}");
    let out = curta_harness::root().join("target/localnet-15m.md");
    std::fs::write(&out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// Uploads and generates one run; the table's cells after the first two.
fn measure(
    curta: &Curta,
    spec: &RunSpec,
    path: &Path,
    golden: &Receipt,
    window: Option<&str>,
) -> Result<String, String> {
    let up = Instant::now();
    let u = curta.json(&["model", "upload", &path.to_string_lossy()])?;
    let upload_s = up.elapsed().as_secs_f64();
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
    let want = &golden.turns.last().ok_or("empty receipt")?.state_sha256;
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
    let turns = g["turns"].as_array().map_or(0, Vec::len);
    let crank_s = g["seconds"].as_f64().unwrap_or(0.0);
    let mean = turns as f64 / per_block.len().max(1) as f64;
    let fees = g["total_fees"].as_u64().unwrap_or(0);
    Ok(format!(
        "{upload_s:.1} s | {} | {turns} | {} | {} | {}, {mean:.1} | {} | {crank_s:.2} s | {:.3} | {}.{:09} |",
        u["transactions"],
        g["failed"].as_array().map_or(0, Vec::len),
        per_block.len(),
        per_block.iter().max().unwrap_or(&0),
        g["slots"],
        crank_s / spec.max_tokens as f64,
        fees / 1_000_000_000,
        fees % 1_000_000_000,
    ))
}
