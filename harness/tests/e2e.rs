//! End to end on a real validator: `curta-localnet` started on free ports,
//! and the `curta` binary run as a process, exactly as a user runs it.
//!
//! - The program is deployed through the upgradeable loader and verified
//!   byte for byte; stories260K is uploaded; the golden reference run and
//!   a T=0.8 run are generated: every turn's state hash, the tokens and the
//!   text equal the golden receipt's, and the transactions and fees equal
//!   the quote's.
//! - A client killed mid-upload and mid-crank, run again, reaches the
//!   golden final state, and the chain's history shows that nothing was
//!   paid twice: each weight chunk written once, each turn done once, no
//!   fee beyond an uninterrupted run's.
//! - Each SBPF version deploys where the cluster takes it: the v3 build
//!   anywhere here, the v0 fallback where SIMD-0500 is not active, refused
//!   before anything is sent where it is.
//! - Bad input is refused in words, naming the value and the limit.
//! - A model whose embedding spans two weight accounts uploads, and a run
//!   that embeds a token from the second and classifies over both ends in
//!   the native final state.
//!
//! Needs `target/debug/curta`, `target/deploy/curta_program.so` and
//! `target/deploy-v0/curta_program.so` (`make test-e2e` builds them).

use std::collections::BTreeMap;
use std::time::Instant;

use curta_client::keys;
use curta_harness::curta::Curta;
use curta_replay::models::artifact;
use serde_json::Value;
use solana_keypair::read_keypair_file;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

#[test]
fn deploy_upload_and_generate_the_golden_runs() {
    let net = start();
    let dir = workdir("golden");
    let curta = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    let payer = net.payer().pubkey();

    // A deploy refused in simulation (a signer with no lamports) leaves
    // nothing in flight: the next command, with the same state folder,
    // finds no transaction to wait for.
    let so = so();
    let unfunded = dir.join("unfunded.json");
    solana_keypair::write_keypair_file(&solana_keypair::Keypair::new(), &unfunded)
        .expect("a keypair file");
    let broke = Curta {
        keypair: unfunded,
        program: dir.join("unfunded-program.json"),
        ..curta.clone()
    };
    for attempt in 0..2 {
        let refused = broke
            .deploy(&so)
            .expect_err("a deploy its signer cannot pay for");
        assert!(
            !refused.contains("in flight"),
            "attempt {attempt}: {refused}"
        );
    }

    // Deployed through the loader, and the same bytes as the local build.
    let d = ok(curta.deploy(&so));
    let bytes = std::fs::read(&so).expect("the .so");
    assert_eq!(d["action"], "deployed");
    assert_eq!(
        d["sha256"].as_str(),
        Some(curta_replay::sha256_hex(&bytes).as_str())
    );
    let v = ok(curta.json(&["program", "verify", &so.to_string_lossy()]));
    assert_eq!(v["equal"], true, "{v}");
    assert_eq!(
        v["upgrade_authority"].as_str(),
        Some(payer.to_string().as_str())
    );
    // Deploying the same build again sends nothing.
    assert_eq!(ok(curta.deploy(&so))["action"], "unchanged");

    // stories260K uploaded and sealed.
    let art = artifact("stories260K");
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &art[..]).expect("artifact");
    let started = Instant::now();
    let before = rpc.get_balance(&payer).expect("balance");
    let u = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    let spent = before - rpc.get_balance(&payer).expect("balance");
    // What it cost, in full: the fees, the rent the model and its three
    // weight accounts hold (which `model close` returns) and the rent of
    // the config the first upload creates.
    let printed: u64 = ["fees", "config_fees", "rent", "config_rent"]
        .iter()
        .map(|k| u[k].as_u64().unwrap_or_else(|| panic!("{k}: {u}")))
        .sum();
    assert_eq!(spent, printed, "{u}");
    assert_eq!(u["balance_change"].as_i64(), Some(-(spent as i64)));
    assert_eq!(u["weight_accounts"], 3);
    assert!(u["config_rent"].as_u64() > Some(0), "{u}");
    eprintln!(
        "upload: {} bytes in {} transactions, {:.1} s",
        u["bytes_written"],
        u["transactions"],
        started.elapsed().as_secs_f64()
    );
    let model = u["model"].as_str().expect("model").to_string();
    let m = ok(curta.json(&["model", "show", &model]));
    assert_eq!(m["status"], "sealed");
    assert_eq!(m["sections"].as_array().map(Vec::len), Some(3));
    // Uploading again finds it sealed and sends nothing.
    let again = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    assert_eq!(
        (again["model"].as_str(), again["already_sealed"].as_bool()),
        (Some(model.as_str()), Some(true))
    );
    assert_eq!(again["transactions"], 0);
    // The signer's models list it, with what it and its weight accounts
    // hold: the rent the upload locked, which `model close` returns.
    let listed = ok(curta.json(&["model", "list"]));
    let entry = listed["models"]
        .as_array()
        .and_then(|l| l.iter().find(|m| m["model"].as_str() == Some(&model)))
        .unwrap_or_else(|| panic!("{model} not in {listed}"));
    assert_eq!(
        (
            &entry["status"],
            &entry["weight_accounts"],
            &entry["lamports"]
        ),
        (&"sealed".into(), &3.into(), &u["rent"]),
        "{entry}"
    );
    // Outside the repository a model names its program: no --program-id.
    let quote = ["--prompt", "Once", "--max-tokens", "4"];
    let quoted = ok(curta.json_elsewhere(&[&["quote", &model][..], &quote].concat()));
    assert!(quoted["turns"].as_u64() > Some(0), "{quoted}");
    let payer_s = payer.to_string();
    let wallet = curta
        .json_elsewhere(&[&["quote", &payer_s][..], &quote].concat())
        .expect_err("a wallet is not a model");
    assert!(
        wallet.contains(&format!(
            "{payer} is a wallet (a System account), not a curta model account"
        )),
        "{wallet}"
    );

    // A signer made, funded and read with curta alone.
    let poor_path = dir.join("poor.json");
    let poor_file = poor_path.to_string_lossy().into_owned();
    let made = ok(curta.json(&["keygen", "-o", &poor_file]));
    let poor_key = made["address"].as_str().expect("address").to_string();
    let poor_pubkey: Pubkey = poor_key.parse().expect("an address");
    let poor = Curta {
        keypair: poor_path.clone(),
        ..curta.clone()
    };
    let dropped = ok(poor.json(&["airdrop", "0.001"]));
    assert_eq!(dropped["balance"], 1_000_000, "{dropped}");
    assert_eq!(ok(poor.json(&["balance"]))["lamports"], 1_000_000);
    assert_eq!(
        ok(curta.json(&["balance", &poor_file]))["lamports"],
        1_000_000
    );
    assert_eq!(ok(poor.text(&["balance"])), "0.001000000 SOL\n");
    // More than the faucet holds: said so, not as a bare custom error.
    let e = poor
        .json(&["airdrop", "1000000000"])
        .expect_err("more than the faucet holds");
    assert!(
        e.contains("cannot give") && e.contains("it holds less"),
        "{e}"
    );
    // Its config's create_account fails in the System program: named as
    // the System program's error, with the signer's balance.
    let e = poor
        .json(&["config", "init"])
        .expect_err("a config its signer cannot pay the rent of");
    assert!(
        e.contains("the System program's ResultWithNegativeLamports (its error 1)")
            && e.contains(&format!("the signer {poor_key} has 0.001000000 SOL"))
            && !e.contains("InvalidInstruction"),
        "{e}"
    );
    // A run and an upload it cannot pay for are refused before anything
    // is sent, each part named.
    let held = rpc.get_balance(&poor_pubkey).expect("balance");
    let e = poor
        .json(&[
            "generate",
            "--model",
            &model,
            "--prompt",
            "Once upon a time",
            "--max-tokens",
            "12",
        ])
        .expect_err("a run its signer cannot pay for");
    assert!(
        e.contains(&format!(
            "the signer {poor_key} has 0.001000000 SOL, and this run needs"
        )) && e.contains("of rent")
            && e.contains("of fees")
            && e.contains("`curta airdrop 1`")
            && e.contains("(nothing was sent)"),
        "{e}"
    );
    let e = poor
        .json(&["model", "upload", &path.to_string_lossy()])
        .expect_err("an upload its signer cannot pay for");
    assert!(
        e.contains("and this upload needs") && e.contains("of config rent"),
        "{e}"
    );
    assert_eq!(rpc.get_balance(&poor_pubkey).expect("balance"), held);

    // A run past the context is not refused: it ends when the context is
    // full, and its quote says so: the 5 prompt tokens leave room for 508
    // of the 510 asked, in the turns the native replay takes (a quote
    // sends nothing).
    let before = rpc.get_balance(&payer).expect("balance");
    let past = [
        "quote",
        &model,
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "510",
    ];
    let q = ok(curta.json(&past));
    assert_eq!(q["tokens"].as_u64(), Some(508), "{q}");
    assert_eq!(q["turns"], q["turns_at_most"], "{q}");
    assert_eq!(rpc.get_balance(&payer).expect("balance"), before);

    for name in ["stories260k-reference", "stories260k-t08-seed1"] {
        let spec = spec(name);
        let receipt = golden(name);
        let args = run_args(&spec);
        let mut quote = vec!["quote", &model];
        quote.extend(strs(&args));
        let q = ok(curta.json(&quote));
        assert_eq!(
            q["turns"].as_u64(),
            Some(receipt.turns.len() as u64 - 1),
            "{name}"
        );

        let before = rpc.get_balance(&payer).expect("balance");
        let mut generate = vec!["generate", "--model", &model];
        generate.extend(strs(&args));
        let started = Instant::now();
        let g = ok(curta.json(&generate));
        let seconds = started.elapsed().as_secs_f64();
        let after = rpc.get_balance(&payer).expect("balance");

        check_turns(name, &g, &receipt);
        assert_eq!(
            g["turns"].as_array().map(Vec::len),
            Some(receipt.turns.len() - 1)
        );
        let tokens: Vec<u64> = g["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .flat_map(|t| t["tokens"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t.as_u64())
            .collect();
        assert_eq!(
            tokens,
            receipt.tokens.iter().map(|&t| t as u64).collect::<Vec<_>>(),
            "{name}: tokens"
        );
        assert_eq!(
            g["text_hex"].as_str(),
            Some(hex(&receipt.text).as_str()),
            "{name}: text"
        );
        assert_eq!(
            g["text"].as_str(),
            Some(String::from_utf8_lossy(&receipt.text).as_ref()),
            "{name}: text"
        );
        assert_eq!(g["closed"], true);

        // What it cost: the run's rent came back, the royalty (zero) went
        // nowhere, so the payer lost exactly the fees; and without resent
        // turns, exactly the quote's transactions and fees.
        let failed = g["failed"].as_array().map_or(0, Vec::len) as u64;
        let fees = g["total_fees"].as_u64().expect("fees");
        assert_eq!(before - after, fees, "{name}: balance change");
        assert_eq!(
            g["total_transactions"].as_u64(),
            Some(q["transactions"].as_u64().expect("quote") + failed),
            "{name}: transactions"
        );
        if failed == 0 {
            assert_eq!(
                Some(fees),
                q["fees"].as_u64(),
                "{name}: fees against the quote"
            );
        }
        let per_slot: Vec<u64> = g["turns_per_slot"]
            .as_array()
            .expect("turns per slot")
            .iter()
            .filter_map(|p| p[1].as_u64())
            .collect();
        eprintln!(
            "{name}: {} turns ({failed} resent) in {} blocks (at most {} in one), {} transactions, \
             fees {fees} lamports, {} program compute units, slots {}, {:.2} s crank, {seconds:.2} s \
             in all",
            receipt.turns.len() - 1,
            per_slot.len(),
            per_slot.iter().max().unwrap_or(&0),
            g["total_transactions"],
            g["program_cu"],
            g["slots"],
            g["seconds"].as_f64().unwrap_or(0.0),
        );
    }

    // The same checkpoint converted and uploaded with the measured charge
    // table: another model, whose reference run takes 16 turns, each state
    // its golden receipt's.
    let models = curta_replay::models::models_dir();
    let (checkpoint, tokenizer) = (models.join("stories260K.bin"), models.join("tok512.bin"));
    let (checkpoint, tokenizer) = (checkpoint.to_string_lossy(), tokenizer.to_string_lossy());
    let upload = ["model", "upload", &checkpoint, "--tokenizer", &tokenizer];
    let u = ok(curta.json(&[&upload[..], &["--charges", "measured"]].concat()));
    let measured = u["model"].as_str().expect("model").to_string();
    assert_ne!(measured, model);
    let m = ok(curta.json(&["model", "show", &measured]));
    assert_eq!(
        (m["status"].as_str(), m["charges"].as_str()),
        (Some("sealed"), Some("measured"))
    );
    let name = "stories260k-measured-reference";
    let (spec, receipt) = (spec(name), golden(name));
    let args = run_args(&spec);
    let q = ok(curta.json(&[&["quote", measured.as_str()][..], &strs(&args)].concat()));
    assert_eq!(q["turns"].as_u64(), Some(16));
    let g = ok(curta.json(
        &[
            &["generate", "--model", measured.as_str()][..],
            &strs(&args),
        ]
        .concat(),
    ));
    check_turns(name, &g, &receipt);
    // An artifact of one table is not uploaded as the other's: refused
    // before anything is sent.
    let measured_path = dir.join("stories260K-measured.curta");
    std::fs::write(&measured_path, &artifact("stories260K+measured")[..]).expect("artifact");
    let refused = curta.json(&[
        "model",
        "upload",
        &measured_path.to_string_lossy(),
        "--charges",
        "specification",
    ]);
    let e = refused.expect_err("an upload under the other table");
    assert!(
        e.contains("measured charge table") && e.contains("--charges"),
        "{e}"
    );

    // A prompt too long to travel with open_run (1,000 bytes) is staged
    // first: two transactions, and the run holds it whole.
    let long = curta_replay::root().join("golden/prompts/near-limit.txt");
    let prompt = std::fs::read(&long).expect("the near-limit prompt");
    let long = long.to_string_lossy();
    let open = [
        "run",
        "open",
        "--model",
        &model,
        "--prompt-file",
        &long,
        "--max-tokens",
        "8",
    ];
    let before = rpc.get_balance(&payer).expect("balance");
    let o = ok(curta.json(&open));
    assert_eq!(
        (o["opened_now"].as_bool(), o["transactions"].as_u64()),
        (Some(true), Some(2))
    );
    // The printed rent, escrow and fees are what the opener paid.
    let spent = before - rpc.get_balance(&payer).expect("balance");
    let printed: u64 = ["rent", "escrow", "fees"]
        .iter()
        .map(|k| o[k].as_u64().unwrap_or_else(|| panic!("{k}: {o}")))
        .sum();
    assert_eq!(spent, printed, "{o}");
    let run = o["run"].as_str().expect("run").to_string();
    let s = ok(curta.json(&["run", "show", &run]));
    assert_eq!(s["prompt"].as_str().map(str::as_bytes), Some(&prompt[..]));
    assert_eq!(
        (s["turns"].as_u64(), s["complete"].as_bool()),
        (Some(0), Some(false))
    );
    // Opening it again finds it open and sends nothing.
    let again = ok(curta.json(&open));
    assert_eq!(
        (again["run"].as_str(), again["opened_now"].as_bool()),
        (Some(run.as_str()), Some(false))
    );
    // The signer's open runs list it, with what it holds: what closing returns.
    let listed = ok(curta.json(&["run", "list"]));
    let find = |l: &serde_json::Value| {
        l["runs"].as_array().and_then(|r| {
            r.iter()
                .find(|r| r["run"].as_str() == Some(run.as_str()))
                .cloned()
        })
    };
    let entry = find(&listed).unwrap_or_else(|| panic!("{run} not in {listed}"));
    assert_eq!(entry["lamports"].as_u64(), o["deposit"].as_u64(), "{entry}");
    assert_eq!(
        (entry["turns"].as_u64(), entry["complete"].as_bool()),
        (Some(0), Some(false))
    );
    let closed = ok(curta.json(&["run", "close", &run]));
    assert_eq!(closed["recovered"].as_u64(), o["deposit"].as_u64());
    assert!(
        find(&ok(curta.json(&["run", "list"]))).is_none(),
        "closed, not listed"
    );

    // A finished run cranked again: nothing to send, said in words.
    let kept = [
        "generate",
        "--model",
        measured.as_str(),
        "--prompt",
        "Once",
        "--max-tokens",
        "2",
        "--keep",
    ];
    let kept = ok(curta.json(&kept));
    let run = kept["run"].as_str().expect("run").to_string();
    let said = ok(curta.text(&["run", "crank", &run]));
    assert!(
        said.starts_with(&format!("run {run} is complete after "))
            && said.ends_with(": no turn to send\n"),
        "{said}"
    );
    // Its model closed under it: the run can only be closed, and the
    // error says how.
    ok(curta.json(&["model", "close", &measured]));
    let e = curta
        .json(&["run", "crank", &run])
        .expect_err("a run whose model is closed");
    assert!(
        e.contains(&format!(
            "run {run}'s model {measured} was closed: the run can only be closed now, and \
             `curta run close {run}` returns its "
        )),
        "{e}"
    );
    ok(curta.json(&["run", "close", &run]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn killed_mid_upload_and_mid_crank_resumes_paying_nothing_twice() {
    let started = Instant::now();
    let net = start();
    let dir = workdir("resume");
    let curta = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    let payer = net.payer();
    ok(curta.deploy(&so()));
    let program = read_keypair_file(&curta.program)
        .expect("program keypair")
        .pubkey();
    let c = ok(curta.json(&["config", "init"]));
    let config: Pubkey = c["config"]
        .as_str()
        .expect("config")
        .parse()
        .expect("address");

    let art = artifact("stories260K");
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &art[..]).expect("artifact");
    let path = path.to_string_lossy().into_owned();
    // The model's address, derived as the client derives it.
    let royalty = 7u64;
    let model = keys::model(
        &payer,
        &program,
        &config,
        &curta_core::sha256::sha256(&art),
        royalty,
    )
    .pubkey();

    // Ctrl-C a third of the way through writing the weights: the process
    // ends at once (130), saying the model is not sealed and how to resume.
    let (mut child, lines) = ok(curta.spawn(&[
        "model",
        "upload",
        &path,
        "--royalty",
        "7",
        "--in-flight",
        "32",
    ]));
    wait_for(
        &mut child,
        &lines,
        "a third of the weights",
        a_third_written,
    );
    let status = interrupt(&mut child);
    let said = lines.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(130), "interrupted: {said}");
    assert!(
        said.contains(&format!(
            "interrupted: the model {model} is not sealed: running the same command again \
             resumes the upload"
        )),
        "what Ctrl-C said: {said}"
    );
    // Its journal is left for the next process (which settles it first
    // thing, whatever the command).
    let journals = std::fs::read_dir(curta.state_dir.join("inflight"))
        .expect("the journal folder")
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .count();
    assert_eq!(journals, 1, "the killed process's journal");
    let m = ok(curta.json(&["model", "show", &model.to_string()]));
    assert_eq!(m["status"], "writing", "killed before sealing");

    // Run again: it finishes, writing only what is missing.
    let u = ok(curta.json(&["model", "upload", &path, "--royalty", "7"]));
    assert_eq!(u["model"].as_str(), Some(model.to_string().as_str()));
    assert!(u["bytes_written"].as_u64().expect("bytes") < art.len() as u64);
    let m = ok(curta.json(&["model", "show", &model.to_string()]));
    assert_eq!(m["status"], "sealed");

    // Each chunk was written exactly once, and no transaction failed: the
    // fees are an uninterrupted upload's. Every transaction of the upload
    // names the model (a write reads it), so its history holds them all.
    let (writes, transactions, fees) = check_upload_once(&rpc, &model, &program, &m);
    eprintln!(
        "upload: {writes} writes, {transactions} transactions, {fees} lamports in fees ({:.1} s)",
        started.elapsed().as_secs_f64()
    );

    // Killed with 6 of the reference run's 20 turns landed, four in flight.
    let name = "stories260k-reference";
    let spec = spec(name);
    let receipt = golden(name);
    let args = run_args(&spec);
    let mut open = vec!["run", "open", "--model"];
    let model_s = model.to_string();
    open.push(&model_s);
    open.extend(strs(&args));
    let o = ok(curta.json(&open));
    let run = o["run"].as_str().expect("run").to_string();
    let run_key: Pubkey = run.parse().expect("address");
    let (mut child, lines) = ok(curta.spawn(&["run", "crank", &run, "--window", "4"]));
    wait_for(&mut child, &lines, "six turns", |line| {
        line.starts_with("turn ")
            && line
                .split_once('(')
                .and_then(|(_, r)| r.split('/').next())
                .and_then(|k| k.parse::<u32>().ok())
                .is_some_and(|k| k >= 6)
    });
    child.kill().expect("kill");
    child.wait().expect("wait");

    // Run again: it waits for what was in flight, then finishes from the
    // chain's state.
    let c = ok(curta.json(&["run", "crank", &run, "--window", "4"]));
    let resumed_at = c["turns_before"].as_u64().expect("turns before");
    assert!(
        (6..20).contains(&resumed_at),
        "killed mid-crank: resumed at turn {resumed_at}"
    );
    check_turns(name, &c, &receipt);
    let s = ok(curta.json(&["run", "show", &run]));
    assert_eq!(s["complete"], true);
    assert_eq!(s["text_hex"].as_str(), Some(hex(&receipt.text).as_str()));
    assert_eq!(s["paid"].as_u64(), Some(royalty * spec.max_tokens as u64));

    // The run's history: every turn done once, in order; a turn that
    // failed (a reordering) only ever ran early, never after its turn was
    // done, so no turn was paid for twice.
    let TurnHistory {
        done,
        stale,
        turn_fees,
        ..
    } = turn_history(&rpc, &run_key, &program);
    assert_eq!(done, receipt.turns.len() as u64 - 1);
    // Without reorderings, exactly the quote's fees for the turns (the
    // quote's fees less the opening's two signatures and the closing's one).
    let mut quote = vec!["quote", &model_s];
    quote.extend(strs(&args));
    quote.extend(["--window", "4"]);
    let q = ok(curta.json(&quote));
    if stale == 0 {
        assert_eq!(Some(turn_fees), q["fees"].as_u64().map(|f| f - 3 * 5_000));
    }
    eprintln!(
        "crank: resumed at turn {resumed_at}, {done} turns, {stale} stale, {turn_fees} lamports \
         ({:.1} s)",
        started.elapsed().as_secs_f64()
    );

    let closed = ok(curta.json(&["run", "close", &run]));
    assert!(closed["recovered"].as_u64().expect("lamports") > 0);
    assert_eq!(rpc.get_account(&run_key).ok(), None);

    // Ctrl-C in `generate`'s crank: the crank stops sending, and the
    // command says the run stays open, how to resume it and how to close
    // it (exit 130); the same command then finishes and closes the run.
    let name = "stories260k-t08-seed1";
    let spec = shared::spec(name);
    let args = run_args(&spec);
    let mut generate = vec!["generate", "--model", &model_s, "--window", "2"];
    generate.extend(strs(&args));
    let mut piped = generate.clone();
    // JSON on stdout: the progress is a line a turn on stderr.
    piped.extend(["--output", "json"]);
    let (mut child, lines) = ok(curta.spawn(&piped));
    wait_for(&mut child, &lines, "three turns", |line| {
        line.starts_with("turn ") && line.contains(" (3/")
    });
    let status = interrupt(&mut child);
    let said: Vec<String> = lines.iter().collect();
    let said = said.join("\n");
    assert_eq!(status.code(), Some(130), "interrupted: {said}");
    let run = said
        .split_once("The run ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run named in: {said}"))
        .to_string();
    assert!(
        said.contains("error: the crank was stopped")
            && said.contains(&format!("The run {run} stays open"))
            && said.contains(&format!("`curta run close {run}`")),
        "what Ctrl-C said: {said}"
    );
    // The signer's open runs list it.
    let listed = ok(curta.json(&["run", "list"]));
    assert!(listed.to_string().contains(&run), "{listed}");
    let c = ok(curta.json(&generate));
    assert_eq!(c["run"].as_str(), Some(run.as_str()), "{c}");
    let resumed_at = c["turns_before"].as_u64().expect("turns before");
    assert!(resumed_at >= 3, "resumed at turn {resumed_at}");
    check_turns(name, &c, &native_receipt(&spec));
    assert_eq!(c["closed"], true, "{c}");
    eprintln!("interrupted at turn 3 or later, resumed at turn {resumed_at}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two `curta crank` processes with different signers race over the same
/// open runs: every run finishes golden-equal, every turn lands exactly
/// once (by one or the other), and what the race cost is bounded: a
/// cranker that finds the run moved by someone else sends nothing while
/// the other moves it, and takes over when it stops, so each run costs it
/// at most a window of failed turns each time it finds the other (its
/// `backoffs`; how often depends on the machine's load: a cranker that
/// stands still for three reads is taken over), and at most one more for
/// its own turns landing out of order.
#[test]
fn racing_crankers_finish_every_run_once() {
    let net = start();
    let dir = workdir("race");
    let curta = ok(Curta::new(&net, &dir));
    ok(curta.deploy(&so()));
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &artifact("stories260K")[..]).expect("artifact");
    let u = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    let model = u["model"].as_str().expect("model").to_string();

    // Three golden runs opened, none cranked.
    let names = [
        "stories260k-t08-seed1",
        "stories260k-t08-seed2",
        "stories260k-reference",
    ];
    let mut runs = BTreeMap::new();
    for name in names {
        let args = run_args(&spec(name));
        let open = [
            &["run", "open", "--model", model.as_str()][..],
            &strs(&args),
        ]
        .concat();
        let o = ok(curta.json(&open));
        runs.insert(o["run"].as_str().expect("run").to_string(), name);
    }

    // A second cranker with a signer of its own, funded by airdrop.
    let other_path = dir.join("other.json");
    ok(curta.json(&["keygen", "-o", &other_path.to_string_lossy()]));
    let other = Curta {
        keypair: other_path,
        state_dir: dir.join("state-other"),
        ..curta.clone()
    };
    ok(other.json(&["airdrop", "10"]));

    let window = 8;
    // The runs pay no crank fee: --min-fee 0 cranks them all the same.
    let crank = [
        "crank",
        "--once",
        "--min-fee",
        "0",
        "--window",
        &window.to_string(),
        "--model",
        model.as_str(),
    ];
    let started = Instant::now();
    let racers: Vec<_> = [&curta, &other]
        .iter()
        .map(|c| spawn_json(c, &crank))
        .collect();
    let passes: Vec<Value> = racers.into_iter().map(json_of).collect();
    let seconds = started.elapsed().as_secs_f64();

    let mut landed_by: BTreeMap<String, u64> = BTreeMap::new();
    for (who, pass) in ["payer", "other"].iter().zip(&passes) {
        assert_eq!(pass["refused"].as_array().map(Vec::len), Some(0), "{pass}");
        let (turns, failed, others) = (
            pass["turns"].as_u64().expect("turns"),
            pass["failed"].as_u64().expect("failed"),
            pass["turns_by_others"].as_u64().expect("turns by others"),
        );
        for r in pass["runs"].as_array().expect("runs") {
            let (failed, backoffs) = (r["failed"].as_u64(), r["backoffs"].as_u64());
            let (failed, backoffs) = (failed.expect("failed"), backoffs.expect("backoffs"));
            assert!(
                failed <= window * (backoffs + 1),
                "{who}: {failed} failed turns on a run it backed off {backoffs} times, more \
                 than a window each time and one more: {pass}"
            );
        }
        eprintln!(
            "{who}: {turns} turns landed, {failed} failed, {others} seen landed by the other, {} \
             transactions ({:.2} per turn landed), fees {} lamports",
            pass["transactions"],
            pass["transactions"].as_u64().unwrap_or(0) as f64 / turns.max(1) as f64,
            pass["fees"]
        );
        for r in pass["runs"].as_array().expect("runs") {
            *landed_by
                .entry(r["run"].as_str().expect("run").into())
                .or_default() += r["turns"].as_u64().expect("turns");
        }
    }
    eprintln!("race: {} runs in {seconds:.1} s", runs.len());

    // Every run complete, its final state the golden one, each of its
    // turns landed once: the two crankers' landed turns add up to it.
    for (run, name) in &runs {
        let receipt = golden(name);
        let s = ok(curta.json(&["run", "show", run]));
        assert_eq!(s["complete"], true, "{name}: {s}");
        assert_eq!(
            s["text_hex"].as_str(),
            Some(hex(&receipt.text).as_str()),
            "{name}"
        );
        let turns = s["turns"].as_u64().expect("turns");
        assert_eq!(turns, receipt.turns.len() as u64 - 1, "{name}");
        assert_eq!(
            landed_by.get(run).copied(),
            Some(turns),
            "{name}: turns landed once"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The v0 fallback (`make build-sbf-v0`) deploys on a cluster without
/// SIMD-0500; where its feature account says it is active, `curta deploy`
/// refuses it before anything is sent, in words, and the v3 build deploys.
/// The feature account is planted at genesis (`--account`): Agave 4.0 has
/// no such feature, so the loader's own refusal is not what is exercised
/// (docs/sbf.md).
#[test]
fn each_sbpf_version_deploys_where_the_cluster_takes_it() {
    let v0 = so_v0();
    let dir = workdir("sbpf-versions");

    let net = start();
    let curta = ok(Curta::new(&net, &dir.join("without-simd-0500")));
    let d = ok(curta.deploy(&v0));
    assert_eq!(d["action"], "deployed", "{d}");
    let v = ok(curta.json(&["program", "verify", &v0.to_string_lossy()]));
    assert_eq!(v["equal"], true, "{v}");
    drop(net);

    // SIMD-0500's feature, activated at slot 0: bincode's Some(0u64).
    let feature_id = curta_client::deploy::V3_ONLY_FEATURE.to_string();
    let feature = dir.join("simd-0500.json");
    let activated = serde_json::json!({
        "pubkey": feature_id,
        "account": {
            "lamports": 1_000_000,
            "data": ["AQAAAAAAAAAA", "base64"],
            "owner": solana_sdk_ids::feature::id().to_string(),
            "executable": false,
            "rentEpoch": 0,
        },
    });
    std::fs::write(&feature, activated.to_string()).expect("the feature account's file");
    let net = start_with(&["--account".as_ref(), feature_id.as_ref(), feature.as_ref()]);
    let curta = ok(Curta::new(&net, &dir.join("with-simd-0500")));
    let rpc = rpc(&net);
    let payer = net.payer().pubkey();
    let before = rpc.get_balance(&payer).expect("balance");
    let refused = curta
        .deploy(&v0)
        .expect_err("a v0 build where SIMD-0500 is active");
    for says in [
        "nothing was sent: this cluster deploys only SBPF v3 programs (SIMD-0500: its feature \
         disable_sbpf_v0_v1_v2_deployment, B8JJXCy5amZyWG9r7EnUYLwzXSXTxG7GZ1qZ1qggo83g, is \
         active), and this build is SBPF v0 (ELF e_flags 0)",
        "Build the v3 program with `make build-sbf`",
    ] {
        assert!(refused.contains(says), "{refused}");
    }
    assert_eq!(rpc.get_balance(&payer).expect("balance"), before);
    let d = ok(curta.deploy(&so()));
    assert_eq!(d["action"], "deployed", "{d}");
}

#[test]
fn bad_input_is_refused_in_words() {
    let dir = workdir("errors");
    let art = artifact("stories260K");
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &art[..]).expect("artifact");
    let bin = ok(curta_harness::curta::binary_path());
    let curta = |args: &[&str]| {
        let out = std::process::Command::new(&bin)
            .args(args)
            .env("HOME", &dir)
            .output()
            .expect("curta");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let p = path.to_string_lossy().into_owned();

    // Priced offline, exactly.
    let (code, out, err) = curta(&[
        "quote",
        &p,
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "12",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let q: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(
        (q["turns"].as_u64(), q["transactions"].as_u64()),
        (Some(20), Some(22))
    );
    assert_eq!(q["signatures"].as_u64(), Some(23));
    assert_eq!(q["cu_limit"].as_u64(), Some(1_350_300));
    // Each turn asks for the measured price of its chunks (the first, which
    // tokenizes, the allowance), and the ramp's priority fees order them:
    // 780 lamports put the first, the dearest to schedule, ahead of the
    // second, then down to none.
    assert_eq!(q["cu_requested"].as_u64(), Some(20_665_308));
    assert_eq!(q["priority_fees"].as_u64(), Some(1_198));
    assert_eq!(q["recommended_crank_fee"].as_u64(), Some(7_225));

    for (args, says) in [
        (
            vec![
                "quote",
                &p,
                "--prompt",
                "Once upon a time",
                "--max-tokens",
                "513",
            ],
            "--max-tokens 513 is out of range: 1 to the model's context, 512",
        ),
        (
            vec![
                "quote",
                &p,
                "--prompt",
                "x",
                "--max-tokens",
                "4",
                "--temperature",
                "17",
            ],
            "--temperature 17 is above the most, 16",
        ),
        (
            // Eighteen digits: once an overflow in the rounding.
            vec![
                "quote",
                &p,
                "--prompt",
                "x",
                "--max-tokens",
                "4",
                "--temperature",
                "999999.999999999999",
            ],
            "--temperature 999999.999999999999 is above the most, 16",
        ),
        (
            vec![
                "quote",
                &p,
                "--prompt",
                "x",
                "--max-tokens",
                "4",
                "--allowance",
                "5",
            ],
            "the allowance 5 is out of range: 22096 to 1350000 compute units",
        ),
        (
            vec![
                "quote",
                "no-such-file",
                "--prompt",
                "x",
                "--max-tokens",
                "4",
            ],
            "\"no-such-file\" is neither a file nor a model's address",
        ),
        (
            vec![
                "--url",
                "moon",
                "run",
                "show",
                "11111111111111111111111111111111",
            ],
            "--url \"moon\" is neither a moniker",
        ),
        (
            vec![
                "--program-id",
                "11111111111111111111111111111111",
                "--keypair",
                "/nonexistent.json",
                "run",
                "show",
                "11111111111111111111111111111111",
            ],
            "cannot read the signer keypair /nonexistent.json",
        ),
        (
            vec!["model", "upload", "Cargo.toml"],
            "is not a curta artifact (it does not open with CURTAW01)",
        ),
        (
            vec![
                "quote",
                &p,
                "--prompt",
                "x",
                "--max-tokens",
                "4",
                "--temperature",
                "-1",
            ],
            "--temperature -1 is below zero: it is 0 (the likeliest token) to 16",
        ),
        (
            vec!["keygen", "-o", "Cargo.toml"],
            "Cargo.toml exists: give --force to replace it",
        ),
        (
            vec!["airdrop", "1.5e3"],
            "\"1.5e3\" is not an amount of SOL such as 2 or 0.5",
        ),
    ] {
        let (code, _, err) = curta(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A usage error, as clap's (exit code 2), in words: once a bare
    // "unexpected argument '-3'".
    {
        let args = [
            "quote",
            &p,
            "--prompt",
            "x",
            "--max-tokens",
            "4",
            "--seed",
            "-3",
        ];
        let (code, _, err) = curta(&args);
        assert_eq!(code, Some(2), "{err}");
        let says = "-3 is below zero: a seed is a whole number from 0 to 18446744073709551615";
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A format that is not one is a usage error (exit code 2, as clap's).
    let (code, _, err) = curta(&[
        "quote",
        &p,
        "--prompt",
        "x",
        "--max-tokens",
        "4",
        "--output",
        "yaml",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("yaml: the formats are `json` and `json-compact`"),
        "{err}"
    );
    // A deploy whose signer is missing creates no program keypair.
    let program = dir.join("new-program.json");
    let (so, program_file) = (so(), program.to_string_lossy().into_owned());
    let (code, _, err) = curta(&[
        "--keypair",
        "/nonexistent.json",
        "deploy",
        &so.to_string_lossy(),
        "--program-keypair",
        &program_file,
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot read the signer keypair /nonexistent.json")
            && err.contains("curta keygen"),
        "{err}"
    );
    assert!(!program.exists(), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The smallest model whose embedding spans two weight accounts with
/// llama2's tokenizer: 32,000 rows of 328 weights are 10,624,000 bytes, so
/// rows 0 to 31,579 fill one section and rows 31,580 to 31,999 (漢, 31,652,
/// among them) the next (`docs/format.md`, "Sections").
const SPLIT_EMBEDDING: curta_core::Config = curta_core::Config {
    dim: 328,
    hidden_dim: 32,
    n_layers: 1,
    n_heads: 4,
    n_kv_heads: 4,
    vocab_size: 32_000,
    seq_len: 32,
    charges: curta_core::format::ChargeTable::Specification,
    shared_classifier: true,
};

#[test]
fn a_model_split_across_sections_uploads_and_generates() {
    use curta_core::convert::{convert, synthetic_checkpoint};
    let net = start();
    let dir = workdir("split");
    let curta = ok(Curta::new(&net, &dir));
    ok(curta.deploy(&so()));
    let tokenizer = std::fs::read(curta_replay::models::models_dir().join("tokenizer.bin"))
        .expect("llama2's tokenizer.bin (scripts/fetch-models.sh)");
    let checkpoint = synthetic_checkpoint(&SPLIT_EMBEDDING, 1).expect("a valid shape");
    let art = convert(&checkpoint, &tokenizer).expect("it converts");
    let m = curta_replay::models::metadata(&art);
    assert_eq!((m.section_count(), m.layout.table_sections), (4, 2));
    let path = dir.join("split.curta");
    std::fs::write(&path, &art).expect("artifact");

    let started = Instant::now();
    let u = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    assert_eq!(u["weight_accounts"], 4, "{u}");
    eprintln!(
        "upload: {} bytes in {} transactions, {:.1} s",
        u["bytes_written"],
        u["transactions"],
        started.elapsed().as_secs_f64()
    );
    let model = u["model"].as_str().expect("model").to_string();

    // "girls bid 漢" embeds token 31,652 from the second piece, and every
    // classifier reads both.
    let spec = curta_replay::manifest::RunSpec {
        name: "split".into(),
        model: "split".into(),
        prompt: "girls bid 漢".as_bytes().to_vec(),
        max_tokens: 3,
        temperature_q16: 0,
        seed: 0,
    };
    let mut state = curta_replay::native::open(&m, &spec);
    let mut turns = 0;
    while !curta_core::StateInfo::read(&state).expect("state").complete {
        curta_replay::native::step(&art, &m, &mut state);
        turns += 1;
    }
    let mut args = vec!["generate".to_string(), "--model".into(), model];
    args.extend(run_args(&spec));
    let g = ok(curta.json(&strs(&args)));
    assert_eq!(g["turns"].as_array().map(Vec::len), Some(turns), "{g}");
    assert_eq!(
        g["final_state_sha256"].as_str(),
        Some(curta_replay::sha256_hex(&state).as_str()),
        "the chain's final state is the native one"
    );
    let prompt_tokens = curta_core::state::prompt_tokens(m.config, &state).to_vec();
    assert!(prompt_tokens
        .chunks_exact(4)
        .any(|t| u32::from_le_bytes(t.try_into().unwrap()) == 31_652));
}
