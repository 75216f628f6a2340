//! `make bench-1b`: one generated token of the TinyLlama-1.1B shape
//! (deterministic synthetic weights, llama2's tokenizer, 169 sections of up
//! to 10 MiB) on the SBF VM, natively and through the WebAssembly module,
//! turn by turn, every state compared byte for byte. Prints its turns,
//! compute units and times, and what they mean on a cluster; writes
//! `target/bench-1b.md`. A benchmark to run and report, not a test.
//!
//! `bench-1b [specification|measured]` (both by default); `bench-1b
//! localnet` instead generates the token on `curta-localnet`, the model's
//! 170 accounts (1.1 GB) placed at genesis beside the program, with the
//! `curta` client, and checks its final state against the native one.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use curta_core::format::{ChargeTable, LayerMatrix};
use curta_harness::localnet::{floor_seconds, BlockLimits};
use curta_replay::manifest::RunSpec;
use curta_replay::models::{artifact, metadata, MEASURED};
use curta_replay::replay::replay_all;

const MODEL: &str = "tinyllama-1.1b-synthetic";

fn main() -> ExitCode {
    let tables: Vec<ChargeTable> = match std::env::args().nth(1).as_deref() {
        Some("localnet") => {
            return match on_localnet() {
                Ok(md) => {
                    print!("{md}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("bench-1b localnet: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        None => ChargeTable::ALL.to_vec(),
        Some(name) => match ChargeTable::from_name(name) {
            Some(t) => vec![t],
            None => {
                eprintln!("bench-1b: {name} is not specification or measured");
                return ExitCode::FAILURE;
            }
        },
    };
    let built = Instant::now();
    let art = artifact(MODEL);
    let m = metadata(&art);
    let c = m.config;
    eprintln!(
        "{MODEL}: {} bytes in {} sections, built in {:.1} s",
        art.len(),
        m.section_count(),
        built.elapsed().as_secs_f64()
    );
    // Multiply-accumulates of the one position (BOS) and the classifier.
    let layer: u64 = LayerMatrix::ALL
        .iter()
        .map(|w| {
            let (rows, cols) = w.shape(&c);
            rows as u64 * cols as u64
        })
        .sum();
    let macs = c.n_layers as u64 * layer + c.vocab_size as u64 * c.dim as u64;

    let mut md = format!(
        "# One token of the TinyLlama-1.1B shape on the SBF VM\n\n\
         {MODEL} ({c}): {} bytes in {} sections (each layer in {}). The empty prompt (BOS) \
         and one generated token at T=0: {macs} multiply-accumulates.\n\n\
         | Table | Turns | Bit-exact (SBF, native, WebAssembly) | Program CU, median / peak per turn | Program CU in all | CU per MAC | Floor on a cluster (s per token) | SBF VM | Native | WebAssembly |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        art.len(),
        m.section_count(),
        m.layout.sections_per_layer,
    );
    for table in tables {
        let model = match table {
            ChargeTable::Specification => MODEL.to_string(),
            ChargeTable::Measured => format!("{MODEL}{MEASURED}"),
        };
        let spec = RunSpec {
            name: format!("tinyllama-1.1b-one-token-{}", table.name()),
            model,
            prompt: vec![],
            max_tokens: 1,
            temperature_q16: 0,
            seed: 0,
        };
        let report = replay_all(std::slice::from_ref(&spec), &[None]).remove(0);
        let mut cu: Vec<u64> = report
            .receipt
            .turns
            .iter()
            .skip(1)
            .map(|t| t.program_cu)
            .collect();
        cu.sort_unstable();
        let total: u64 = cu.iter().sum();
        let t = &report.times;
        let row = format!(
            "| {} | {} | {} | {} / {} | {total} | {:.4} | {:.1} | {:.1} s | {:.1} s | {:.1} s |",
            table.name(),
            cu.len(),
            match &report.failure {
                None => "yes".to_string(),
                Some(f) => format!("no: {f}"),
            },
            cu.get(cu.len() / 2).copied().unwrap_or(0),
            cu.last().copied().unwrap_or(0),
            total as f64 / macs as f64,
            floor_seconds(total as f64, BlockLimits::WRITABLE_ACCOUNT),
            t.sbf.as_secs_f64(),
            t.native.as_secs_f64(),
            t.wasm.as_secs_f64(),
        );
        eprintln!("{row}");
        let _ = writeln!(md, "{row}");
        if report.failure.is_some() {
            print!("{md}");
            return ExitCode::FAILURE;
        }
    }
    let _ = writeln!(
        md,
        "\nThe floor: every turn of a run writes its run account, and a block lets one \
         account's writes take at most 40 million compute units, so a token takes at least \
         its compute units / 40M blocks of 0.4 s. CU per MAC counts the whole turn (attention, \
         norms, sampling and the turn's own units) over the matrices' multiply-accumulates."
    );
    print!("{md}");
    let out = curta_replay::root().join("target/bench-1b.md");
    if let Err(e) = std::fs::write(&out, &md) {
        eprintln!("{}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", out.display());
    ExitCode::SUCCESS
}

/// One token on `curta-localnet`: the config and the sealed model written
/// as `--account` files (each account's JSON, its data in base64), the
/// program at its harness address, then `curta generate`.
fn on_localnet() -> Result<String, String> {
    use curta_harness::curta::Curta;
    use curta_harness::localnet::Localnet;
    use curta_replay::program_test::{self, PROGRAM_ID};

    let art = artifact(MODEL);
    let m = metadata(&art);
    let dir = curta_replay::root().join("target/bench-1b");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let admin = solana_pubkey::Pubkey::new_unique();
    let (config, config_account) =
        program_test::preloaded_config(&admin, curta_core::planner::CHARGES.allowance);
    let (keys, accounts) = program_test::preloaded_model(&config, &art, &admin, 0);
    let so = curta_replay::deploy_dir().join("curta_program.so");
    let mut builder = Localnet::builder()
        .bpf_program(PROGRAM_ID.to_string(), so)
        .ready_timeout(std::time::Duration::from_secs(1800));
    let written = Instant::now();
    for (key, account) in std::iter::once((config, config_account)).chain(accounts) {
        use base64::Engine;
        let path = dir.join(format!("{key}.json"));
        let json = serde_json::json!({
            "pubkey": key.to_string(),
            "account": {
                "lamports": account.lamports,
                "data": [base64::engine::general_purpose::STANDARD.encode(&account.data), "base64"],
                "owner": account.owner.to_string(),
                "executable": false,
                "rentEpoch": 0,
                "space": account.data.len(),
            }
        });
        std::fs::write(&path, json.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        builder = builder.arg("--account").arg(key.to_string()).arg(&path);
    }
    eprintln!(
        "wrote {} account files in {:.1} s",
        m.section_count() + 2,
        written.elapsed().as_secs_f64()
    );
    let net = builder.start()?;
    eprintln!(
        "curta-localnet at {}, ready in {:.1} s",
        net.rpc_url(),
        net.started_in().as_secs_f64()
    );
    let curta = Curta {
        program: PROGRAM_ID.to_string().into(),
        ..Curta::new(&net, &dir)?
    };
    let model = keys.model.to_string();
    let g = curta.json(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        "",
        "--max-tokens",
        "1",
    ])?;
    net.stop()?;

    let spec = RunSpec {
        name: "tinyllama-1.1b-localnet".into(),
        model: MODEL.into(),
        prompt: vec![],
        max_tokens: 1,
        temperature_q16: 0,
        seed: 0,
    };
    let mut state = curta_replay::native::open(&m, &spec);
    while !curta_core::StateInfo::read(&state)
        .map_err(|e| format!("{e:?}"))?
        .complete
    {
        curta_replay::native::step(&art, &m, &mut state);
    }
    let native = curta_replay::sha256_hex(&state);
    let landed = g["final_state_sha256"].as_str().unwrap_or_default();
    if landed != native {
        return Err(format!(
            "the final state {landed} is not the native {native}"
        ));
    }
    let per_block: Vec<u64> = g["turns_per_slot"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p[1].as_u64()).collect())
        .unwrap_or_default();
    let turns = g["turns"].as_array().map_or(0, Vec::len);
    let md = format!(
        "\n## On curta-localnet\n\n{} accounts (1.1 GB) at genesis; `curta generate`: {turns} turns \
         in {} blocks (at most {} a block), {} slots, {:.1} s of crank, {} lamports of fees; \
         the final state is the native one.\n",
        m.section_count() + 2,
        per_block.len(),
        per_block.iter().max().unwrap_or(&0),
        g["slots"],
        g["seconds"].as_f64().unwrap_or(0.0),
        g["total_fees"],
    );
    let out = curta_replay::root().join("target/bench-1b-localnet.md");
    std::fs::write(&out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(md)
}
