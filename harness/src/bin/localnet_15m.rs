//! `make localnet-15m`: the stories15M shape (deterministic synthetic
//! weights, llama2's tokenizer) on a local validator, under today's block
//! limits and the legacy ones: deploy, upload, and generate the golden
//! stories15m-synthetic-reference run (530 turns), printing turns per
//! block and seconds per token, and checking the final state against the
//! golden receipt. The report also goes to `target/localnet-15m.md`.
//!
//! `localnet-15m [WINDOW]`: turns in flight (default: the client's, 32).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use curta_harness::curta::Curta;
use curta_harness::localnet::Localnet;
use curta_harness::manifest;
use curta_harness::models::artifact;
use curta_harness::receipt::Receipt;
use serde_json::Value;

const RUN: &str = "stories15m-synthetic-reference";

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
    let spec = manifest::load()
        .into_iter()
        .find(|r| r.name == RUN)
        .ok_or(format!("{RUN} is not in golden/manifest.json"))?;
    let golden = Receipt::load(RUN).ok_or(format!("no golden receipt for {RUN}"))?;
    let dir = curta_harness::root().join("target/localnet-15m");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let art = artifact(&spec.model);
    let path = dir.join("stories15M-synthetic.curta");
    std::fs::write(&path, &art[..]).map_err(|e| format!("{}: {e}", path.display()))?;
    let so = curta_harness::deploy_dir().join("curta_program.so");
    let prompt = String::from_utf8_lossy(&spec.prompt).into_owned();
    let max_tokens = spec.max_tokens.to_string();

    let mut md = String::new();
    let _ = writeln!(
        md,
        "# stories15M shape on curta-localnet\n\nRun {RUN}: {:?}, {} tokens at T=0, {} bytes of \
         weights in {} sections.\n",
        prompt,
        spec.max_tokens,
        art.len(),
        curta_harness::models::metadata(&art).section_count()
    );
    let _ = writeln!(
        md,
        "| Block limits | Upload | Upload txs | Turns | Failed | Blocks | Turns per block (max, mean) | Slots | Crank s | s per token | Fees (SOL) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for legacy in [false, true] {
        let net = Localnet::builder().legacy_block_limits(legacy).start()?;
        let limits = net
            .block_limits()
            .map(|l| {
                format!(
                    "{}M / {}M per account",
                    l.block / 1_000_000,
                    l.writable_account / 1_000_000
                )
            })
            .unwrap_or_else(|| "?".into());
        eprintln!("validator at {} ({limits})", net.rpc_url());
        let tag = if legacy { "legacy" } else { "default" };
        let curta = Curta::new(&net, &dir.join(format!("{tag}-{}", std::process::id())))?;
        curta.deploy(&so)?;
        let up = Instant::now();
        let u = curta.json(&["model", "upload", &path.to_string_lossy()])?;
        let upload_s = up.elapsed().as_secs_f64();
        let model = u["model"].as_str().ok_or("no model")?.to_string();
        eprintln!(
            "uploaded {model} in {upload_s:.1} s ({} transactions)",
            u["transactions"]
        );
        let mut args = vec![
            "generate",
            "--model",
            &model,
            "--prompt",
            &prompt,
            "--max-tokens",
            &max_tokens,
        ];
        if let Some(w) = &window {
            args.extend(["--window", w]);
        }
        let g = curta.json(&args)?;
        let final_hash = g["final_state_sha256"].as_str().unwrap_or_default();
        let want = &golden.turns.last().ok_or("empty receipt")?.state_sha256;
        if final_hash != want {
            return Err(format!(
                "{tag}: the final state {final_hash} is not the golden {want}"
            ));
        }
        let per_block: Vec<u64> = g["turns_per_slot"]
            .as_array()
            .map(|a| a.iter().filter_map(|p| p[1].as_u64()).collect())
            .unwrap_or_default();
        let turns = g["turns"].as_array().map_or(0, Vec::len);
        let crank_s = g["seconds"].as_f64().unwrap_or(0.0);
        let tokens = spec.max_tokens as f64;
        let mean = turns as f64 / per_block.len().max(1) as f64;
        let row = format!(
            "| {limits} | {upload_s:.1} s | {} | {turns} | {} | {} | {}, {mean:.1} | {} | {crank_s:.2} | {:.3} | {} |",
            u["transactions"],
            g["failed"].as_array().map_or(0, Vec::len),
            per_block.len(),
            per_block.iter().max().unwrap_or(&0),
            g["slots"],
            crank_s / tokens,
            lamports(&g["total_fees"]),
        );
        eprintln!("{row}");
        let _ = writeln!(md, "{row}");
        net.stop()?;
    }
    let _ = writeln!(
        md,
        "\nEvery run's final state equals the golden receipt's. Turns per block count the blocks \
         that hold any of the run's turns; slots span the opening to the closing."
    );
    print!("{md}");
    let out = curta_harness::root().join("target/localnet-15m.md");
    std::fs::write(&out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn lamports(v: &Value) -> String {
    let l = v.as_u64().unwrap_or(0);
    format!("{}.{:09}", l / 1_000_000_000, l % 1_000_000_000)
}
