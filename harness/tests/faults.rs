//! Under load and faults on a real validator (`make test-faults`): each
//! scenario on a `curta-localnet` of its own, started on free ports, the
//! `curta` binary run as a process exactly as a user runs it.
//!
//! - **Many runs at once**: eight stories260K runs from four openers (two
//!   `curta generate` processes each, mixed prompts and temperatures),
//!   opened, cranked and closed concurrently.
//! - **The validator dies**: SIGKILLed mid-upload and mid-crank, restarted
//!   on the same ledger; the client fails with one line saying that the
//!   same command resumes, and the same command, run again, finishes.
//! - **The payer runs out of lamports mid-crank**: the crank stops with
//!   one line saying so, and the run stays closable.
//!
//! In every scenario each run's final state is its golden receipt's (or
//! the native replay's), the validator's history shows every turn landed
//! exactly once, and every lamport is accounted for: what a signer lost is
//! the fees its transactions paid in the history plus the royalties, and
//! the rent and escrow came back at close. Figures are printed, not
//! asserted.
//!
//! Needs `target/debug/curta` and `target/deploy/curta_program.so`
//! (`make test-faults` builds both).

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use curta_harness::curta::Curta;
use curta_replay::manifest::RunSpec;
use curta_replay::models::artifact;
use curta_replay::receipt::Receipt;
use serde_json::Value;
use solana_keypair::read_keypair_file;
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::RpcClient;
use solana_signer::Signer;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

const ROYALTY: u64 = 7;

fn address(v: &Value, key: &str) -> Pubkey {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .parse()
        .expect("an address")
}

fn program_of(curta: &Curta) -> Pubkey {
    read_keypair_file(&curta.program)
        .expect("program keypair")
        .pubkey()
}

fn balance(rpc: &RpcClient, key: &Pubkey) -> u64 {
    rpc.get_balance(key).expect("balance")
}

/// Deploys the program and uploads stories260K with a royalty: the
/// model's address.
fn deploy_and_upload(curta: &Curta, dir: &std::path::Path) -> String {
    ok(curta.deploy(&so()));
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &artifact("stories260K")[..]).expect("artifact");
    let royalty = ROYALTY.to_string();
    let u = ok(curta.json(&[
        "model",
        "upload",
        &path.to_string_lossy(),
        "--royalty",
        &royalty,
    ]));
    u["model"].as_str().expect("model").to_string()
}

/// The golden receipt when there is one, else the native replay's.
fn expected(spec: &RunSpec) -> Receipt {
    Receipt::load(&spec.name).unwrap_or_else(|| native_receipt(spec))
}

fn custom(name: &str, prompt: &str, max_tokens: u32, temperature_q16: u32, seed: u64) -> RunSpec {
    RunSpec {
        name: name.into(),
        model: "stories260K".into(),
        prompt: prompt.as_bytes().to_vec(),
        max_tokens,
        temperature_q16,
        seed,
    }
}

/// The run's final state and text against the receipt, and its account
/// gone (closed).
fn check_run(rpc: &RpcClient, name: &str, g: &Value, receipt: &Receipt) {
    check_turns(name, g, receipt);
    // A resumed crank prints the text of its own turns: the run's ends so.
    let text = g["text_hex"].as_str().expect("text");
    match g["turns_before"].as_u64() {
        Some(0) => assert_eq!(text, hex(&receipt.text), "{name}: text"),
        _ => assert!(hex(&receipt.text).ends_with(text), "{name}: text"),
    }
    assert_eq!(g["closed"], true, "{name}");
    let run = address(g, "run");
    assert_eq!(rpc.get_account(&run).ok(), None, "{name}: closed");
}

#[test]
fn many_runs_at_once_from_four_openers() {
    let net = start();
    let dir = workdir("many");
    let owner = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    let model = deploy_and_upload(&owner, &dir);
    let program = program_of(&owner);
    let owner_key = net.payer().pubkey();

    let specs: Vec<RunSpec> = vec![
        spec("stories260k-reference"),
        spec("stories260k-t08-seed1"),
        spec("stories260k-t08-seed2"),
        spec("stories260k-utf8"),
        spec("stories260k-empty-prompt"),
        custom("lily-t05-seed3", "Lily and Ben", 16, 32_768, 3),
        custom("dog-t1-seed4", "The dog ran", 20, 65_536, 4),
        custom("once-t08-seed5", "Once upon a time", 24, 52_429, 5),
    ];
    let receipts: Vec<Receipt> = specs.iter().map(expected).collect();
    let openers: Vec<(Curta, Pubkey)> = (0..4)
        .map(|i| {
            let (c, k) = funded(&owner, &dir, &format!("opener{i}"), "100");
            (c, k.pubkey())
        })
        .collect();
    let before: Vec<u64> = openers.iter().map(|(_, k)| balance(&rpc, k)).collect();
    let owner_before = balance(&rpc, &owner_key);

    // Eight `curta generate` at once, two for each opener (sharing its
    // state folder, so its journal, as two commands of one user would).
    let started = Instant::now();
    let children: Vec<Child> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let args = run_args(spec);
            let generate = [&["generate", "--model", model.as_str()][..], &strs(&args)].concat();
            let mut cmd = openers[i % 4].0.command(&generate);
            cmd.args(["--output", "json"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            cmd.spawn().expect("curta generate")
        })
        .collect();
    let outputs: Vec<Value> = children
        .into_iter()
        .zip(&specs)
        .map(|(child, spec)| {
            let out = child.wait_with_output().expect("curta generate");
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{}: {stderr}{stdout}", spec.name);
            serde_json::from_str(stdout.trim()).expect("one JSON object")
        })
        .collect();
    let seconds = started.elapsed().as_secs_f64();

    // Each run golden (or replay) equal, closed, every turn landed once;
    // what each cost, in its history.
    let mut lost = [0u64; 4];
    let mut royalties = 0;
    let mut resent = 0;
    let mut per_slot: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut run_cu_in_slot = 0u64;
    let mut turns = 0;
    for (i, ((spec, receipt), g)) in specs.iter().zip(&receipts).zip(&outputs).enumerate() {
        let name = &spec.name;
        check_run(&rpc, name, g, receipt);
        let run = address(g, "run");
        let h = turn_history(&rpc, &run, &program);
        assert_eq!(
            h.done,
            receipt.turns.len() as u64 - 1,
            "{name}: turns landed"
        );
        let failed = g["failed"].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(h.stale, failed, "{name}: failed turns in the history");
        assert_eq!(
            g["total_fees"].as_u64(),
            Some(h.all_fees),
            "{name}: the fees printed are the history's"
        );
        let generated = receipt.turns.last().expect("turns").generated as u64;
        lost[i % 4] += h.all_fees + ROYALTY * generated;
        royalties += ROYALTY * generated;
        resent += failed;
        turns += h.done;
        let mut mine: BTreeMap<u64, u64> = BTreeMap::new();
        for &(slot, cu) in &h.landed {
            let e = per_slot.entry(slot).or_default();
            e.0 += 1;
            e.1 += cu;
            *mine.entry(slot).or_default() += cu;
        }
        run_cu_in_slot = run_cu_in_slot.max(mine.values().copied().max().unwrap_or(0));
    }
    // Every lamport: each opener lost its runs' fees and royalties (the
    // rent and escrow came back at close), and the model's owner gained
    // the royalties.
    for (i, (_, key)) in openers.iter().enumerate() {
        assert_eq!(
            before[i] - balance(&rpc, key),
            lost[i],
            "opener {i}: fees and royalties"
        );
    }
    assert_eq!(
        balance(&rpc, &owner_key) - owner_before,
        royalties,
        "the owner's royalties"
    );

    let blocks = per_slot.len() as u64;
    let most = per_slot.values().map(|v| v.0).max().unwrap_or(0);
    let block_cu = per_slot.values().map(|v| v.1).max().unwrap_or(0);
    eprintln!(
        "many runs: {} runs from 4 openers, {turns} turns in {blocks} blocks (at most {most} in one, \
         {:.1} a block), at most {block_cu} compute units of turns in a block and {run_cu_in_slot} \
         on one run account, {resent} turns resent, {seconds:.1} s for all",
        specs.len(),
        turns as f64 / blocks.max(1) as f64,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits for a stderr line that `done` accepts, returning the lines so
/// far; panics if the process exits first.
fn wait_line(child: &mut Child, lines: &Receiver<String>, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        match lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) if done(&line) => return,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                panic!("curta exited before {what}: {:?}", child.wait())
            }
        }
        assert!(Instant::now() < deadline, "no {what} in 300 s");
    }
}

/// The rest of a process's stderr, once it has exited (within two
/// minutes), and whether it succeeded.
fn finish(mut child: Child, lines: &Receiver<String>) -> (bool, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rest = vec![];
    loop {
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => rest.push(line),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("curta did not exit within 120 s; its stderr: {rest:?}");
                }
            }
        }
    }
    let status = child.wait().expect("wait");
    (status.success(), rest)
}

/// The error a failed command printed: its lines that are not progress.
fn error_lines(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .map(String::as_str)
        .filter(|l| {
            !l.starts_with("turn ") && !l.starts_with("writing weights: ") && !l.trim().is_empty()
        })
        .collect()
}

#[test]
fn the_validator_dies_mid_upload_and_mid_crank() {
    let started = Instant::now();
    let mut net = start();
    let dir = workdir("validator-dies");
    let curta = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    let payer = net.payer().pubkey();
    ok(curta.deploy(&so()));
    let program = program_of(&curta);
    // The config first, so that the model's history is the upload's alone.
    ok(curta.json(&["config", "init"]));
    let path = dir.join("stories260K.curta");
    let art = artifact("stories260K");
    std::fs::write(&path, &art[..]).expect("artifact");
    let path = path.to_string_lossy().into_owned();
    let royalty = ROYALTY.to_string();
    let upload = [
        "model",
        "upload",
        &path,
        "--royalty",
        &royalty,
        "--in-flight",
        "32",
    ];

    // The validator SIGKILLed a third of the way through the weights.
    let (mut child, lines) = ok(curta.spawn(&upload));
    wait_line(
        &mut child,
        &lines,
        "a third of the weights",
        a_third_written,
    );
    let killed = Instant::now();
    ok(net.kill());
    let (succeeded, rest) = finish(child, &lines);
    let said = error_lines(&rest);
    eprintln!(
        "upload, validator killed: the client exited in {:.1} s saying {said:?}",
        killed.elapsed().as_secs_f64()
    );
    assert!(!succeeded, "an upload whose validator died: {rest:?}");
    let restarted = Instant::now();
    ok(net.restart());
    eprintln!(
        "restarted on the same ledger in {:.1} s",
        restarted.elapsed().as_secs_f64()
    );

    // The same command again: it finishes, each chunk written once.
    let resumed = Instant::now();
    let u = ok(curta.json(&upload));
    let model = u["model"].as_str().expect("model").to_string();
    let model_key: Pubkey = model.parse().expect("address");
    let m = ok(curta.json(&["model", "show", &model]));
    assert_eq!(m["status"], "sealed");
    let (writes, transactions, fees) = check_upload_once(&rpc, &model_key, &program, &m);
    eprintln!(
        "upload resumed in {:.1} s: {} bytes written of {}, {writes} writes, {transactions} \
         transactions, {fees} lamports in fees",
        resumed.elapsed().as_secs_f64(),
        u["bytes_written"],
        art.len()
    );

    // The validator SIGKILLed mid-crank under `curta generate`.
    let name = "stories260k-t08-seed1";
    let spec = spec(name);
    let receipt = golden(name);
    let args = run_args(&spec);
    let generate = [
        &["generate", "--model", model.as_str()][..],
        &strs(&args),
        &["--window", "4"],
    ]
    .concat();
    let total = receipt.turns.len() - 1;
    let before = balance(&rpc, &payer);
    // With JSON output the text does not stream, and progress comes a
    // line a turn.
    let spawned = [&generate[..], &["--output", "json"]].concat();
    let (mut child, lines) = ok(curta.spawn(&spawned));
    wait_line(&mut child, &lines, "six turns", |line| {
        line.starts_with("turn ")
            && line
                .split_once('(')
                .and_then(|(_, r)| r.split('/').next())
                .and_then(|k| k.parse::<u32>().ok())
                .is_some_and(|k| k >= 6)
    });
    let killed = Instant::now();
    ok(net.kill());
    let (succeeded, rest) = finish(child, &lines);
    let said = error_lines(&rest);
    eprintln!(
        "crank, validator killed: the client exited in {:.1} s saying {said:?}",
        killed.elapsed().as_secs_f64()
    );
    assert!(!succeeded, "a crank whose validator died: {rest:?}");
    // What it said: what happened, and that the same command resumes.
    let words = said.join("\n");
    assert!(
        words.contains("running the same command again resumes it")
            && words.contains("curta run close"),
        "{words}"
    );
    ok(net.restart());

    let resumed = Instant::now();
    let g = ok(curta.json(&generate));
    let rerun = resumed.elapsed().as_secs_f64();
    let resumed_at = g["turns_before"].as_u64().expect("turns before");
    assert!(
        (6..total as u64).contains(&resumed_at),
        "killed mid-crank: resumed at turn {resumed_at}"
    );
    check_run(&rpc, name, &g, &receipt);
    let run = address(&g, "run");
    let h = turn_history(&rpc, &run, &program);
    assert_eq!(h.done, total as u64, "{name}: every turn landed once");
    // Nothing paid twice: the payer lost exactly the fees of the run's
    // history (the royalty went to itself, the model's owner; the rent and
    // escrow came back at close), and without reorderings those are a
    // clean run's, the quote's.
    let after = balance(&rpc, &payer);
    assert_eq!(
        before - after,
        h.all_fees,
        "{name}: fees beyond the history's"
    );
    let q = ok(curta.json(
        &[
            &["quote", model.as_str()][..],
            &strs(&args),
            &["--window", "4"],
        ]
        .concat(),
    ));
    if h.stale == 0 {
        assert_eq!(
            Some(h.all_fees),
            q["fees"].as_u64(),
            "{name}: against the quote"
        );
    }
    eprintln!(
        "crank: resumed at turn {resumed_at} of {total}, {} transactions for {} turns ({} stale), \
         fees {} lamports (a clean run's quote: {}), the rerun {rerun:.1} s, {:.1} s for the \
         scenario",
        h.transactions,
        h.done,
        h.stale,
        h.all_fees,
        q["fees"],
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_payer_runs_out_mid_crank_and_the_run_stays_closable() {
    let net = start();
    let dir = workdir("out-of-lamports");
    let curta = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    let model = deploy_and_upload(&curta, &dir);
    let program = program_of(&curta);

    // The run opened by the validator's payer, cranked by a signer with
    // enough for a few turns' fees above the rent-exempt minimum.
    let name = "stories260k-t08-seed2";
    let (spec, receipt) = (spec(name), golden(name));
    let args = run_args(&spec);
    let opener = net.payer().pubkey();
    let opener_before = balance(&rpc, &opener);
    let o = ok(curta.json(
        &[
            &["run", "open", "--model", model.as_str()][..],
            &strs(&args),
        ]
        .concat(),
    ));
    let run = o["run"].as_str().expect("run").to_string();
    let run_key: Pubkey = run.parse().expect("address");
    let (poor, poor_kp) = funded(&curta, &dir, "poor", "0.00093");
    let poor_key = poor_kp.pubkey();
    let held = balance(&rpc, &poor_key);

    let crank = ["run", "crank", run.as_str(), "--window", "4"];
    let mut cmd = poor.command(&crank);
    cmd.stdin(Stdio::null());
    let out = cmd.output().expect("curta run crank");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = error_lines(&stderr.lines().map(String::from).collect::<Vec<_>>()).join("\n");
    eprintln!("crank out of lamports: {said:?}");
    assert!(!out.status.success(), "{stderr}");
    assert!(
        said.contains(&poor_key.to_string()) && said.contains("running the same command again"),
        "{said}"
    );
    let h = turn_history(&rpc, &run_key, &program);
    assert!(
        h.done < receipt.turns.len() as u64 - 1,
        "ran out before the end"
    );
    // The signer lost exactly the fees of the transactions it paid for in
    // the run's history (those that landed; the ones it could not pay were
    // dropped, costing nothing).
    let spent = held - balance(&rpc, &poor_key);
    let paid_by = |who: &Pubkey| -> u64 {
        history(&rpc, &run_key)
            .iter()
            .filter(|l| l.tx.message.account_keys[0] == *who)
            .map(|l| l.fee)
            .sum()
    };
    assert_eq!(spent, paid_by(&poor_key), "the poor cranker's fees");
    eprintln!(
        "the poor cranker landed {} turns and paid {spent} lamports",
        h.done
    );

    // The opener finishes it, and it closes with its rent and escrow.
    let c = ok(curta.json(&crank));
    check_turns(name, &c, &receipt);
    let h = turn_history(&rpc, &run_key, &program);
    assert_eq!(h.done, receipt.turns.len() as u64 - 1);
    let closed = ok(curta.json(&["run", "close", &run]));
    assert!(closed["recovered"].as_u64().expect("lamports") > 0);
    assert_eq!(rpc.get_account(&run_key).ok(), None);
    // The opener (the model's owner, so the royalties came back to it)
    // lost exactly the fees it paid: rent and escrow returned at close.
    assert_eq!(
        opener_before - balance(&rpc, &opener),
        paid_by(&opener),
        "the opener's fees"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
