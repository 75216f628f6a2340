//! The client against an RPC that lies: `curta-localnet` started on free
//! ports, and the `curta` binary run through the harness's fault-injecting
//! proxy (`curta_harness::proxy`), exactly as a user runs it with `--url`.
//! Everything the test checks it reads from the validator directly, never
//! through the proxy.
//!
//! 1. Clean, through the proxy without faults: stories260K uploaded and
//!    the golden reference run generated, the times to beat.
//! 2. Faults, seeded: requests dropped, delayed, answered 429 and 503, cut
//!    mid-answer, stale slots and block heights, stale blockhashes, account
//!    reads refused as a node behind their `minContextSlot` refuses them
//!    (which the client's reads must name after it saw its transactions
//!    land, and get through). Another
//!    upload and the reference run again: the model sealed with every
//!    chunk written once, every turn's state the golden receipt's, every
//!    turn landed once, the fees exactly the landed transactions' (the
//!    quote's), the payer's balance down by exactly those fees.
//! 3. Blockhash expiry: the proxy accepts a crank's first window of turns
//!    and never forwards them. Each is sent again, with a fresh blockhash,
//!    only once the block height has passed its old one's last valid
//!    height, and each turn lands once.
//! 4. A rate limit that never lifts, six turns into a crank: `curta generate` ends with
//!    one line saying the RPC rate-limits, with the retries and seconds,
//!    and that the same command resumes; run again (the limit lifted), it
//!    resumes and finishes the golden run, and closes it.
//!
//! Needs `target/debug/curta` and `target/deploy/curta_program.so`
//! (`make test-rpc-faults` builds both).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use curta_core::protocol::Instruction as CurtaIx;
use curta_harness::curta::Curta;
use curta_harness::proxy::{Faults, Proxy};
use curta_replay::models::artifact;
use serde_json::Value;
use solana_keypair::read_keypair_file;
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::RpcClient;
use solana_signer::Signer;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

const NAME: &str = "stories260k-reference";

/// The faults of scenario 2 (about one request in four meets one).
fn lies(seed: u64) -> Faults {
    Faults {
        seed,
        drop: 0.04,
        delay: 0.08,
        delay_max: Duration::from_millis(800),
        too_many: 0.04,
        retry_after: 0,
        unavailable: 0.04,
        cut: 0.03,
        stale_slot: 0.5,
        stale_blockhash: 0.5,
        behind: 0.3,
        ..Faults::default()
    }
}

/// An upload's history (`check_upload_once`): sealed, no transaction
/// failed, every chunk written once, an uninterrupted upload's signatures.
/// Returns its transactions and fees.
fn check_upload(rpc: &RpcClient, curta: &Curta, program: &Pubkey, model: &str) -> (u64, u64) {
    let m = ok(curta.json(&["model", "show", model]));
    assert_eq!(m["status"], "sealed");
    let (_, transactions, fees) =
        check_upload_once(rpc, &model.parse().expect("model"), program, &m);
    (transactions, fees)
}

/// A run's history (`turn_history`): every turn landed once and in order,
/// a failed turn only ever early, and all `turns` done. Returns (turns
/// landed, failed turns, the turns' fees).
fn check_run(rpc: &RpcClient, program: &Pubkey, run: &Pubkey, turns: u64) -> (u64, u64, u64) {
    let h = turn_history(rpc, run, program);
    assert_eq!(h.done, turns, "turns landed");
    (h.done, h.stale, h.turn_fees)
}

/// `curta generate` of the reference run, checked against the golden
/// receipt, and (`whole`: not a resumed run) its text and the quote;
/// returns its JSON and seconds.
fn generate(
    curta: &Curta,
    rpc: &RpcClient,
    model: &str,
    label: &str,
    extra: &[&str],
    whole: bool,
) -> (Value, f64) {
    let spec = spec(NAME);
    let receipt = golden(NAME);
    let args = run_args(&spec);
    let payer = read_keypair_file(&curta.keypair).expect("payer").pubkey();
    let mut quote = vec!["quote", model];
    quote.extend(strs(&args));
    quote.extend(extra);
    let q = ok(curta.json(&quote));
    let before = rpc.get_balance(&payer).expect("balance");
    let mut g = vec!["generate", "--model", model, "--label", label];
    g.extend(strs(&args));
    g.extend(extra);
    let started = Instant::now();
    let out = ok(curta.json(&g));
    let seconds = started.elapsed().as_secs_f64();
    let after = rpc.get_balance(&payer).expect("balance");
    check_turns(NAME, &out, &receipt);
    assert_eq!(out["closed"], true);
    let fees = out["total_fees"].as_u64().expect("fees");
    if whole {
        assert_eq!(
            before - after,
            fees,
            "the payer's balance moved by the fees only"
        );
    } else {
        // What the closing returned came back, the fees went.
        let recovered = out["recovered"].as_u64().expect("recovered");
        assert_eq!(after + fees, before + recovered, "the payer's balance");
    }
    if whole {
        assert_eq!(out["text_hex"].as_str(), Some(hex(&receipt.text).as_str()));
    }
    if whole && out["failed"].as_array().map_or(0, Vec::len) == 0 {
        assert_eq!(Some(fees), q["fees"].as_u64(), "fees against the quote");
    }
    (out, seconds)
}

/// Waits for a process's exit (at most `limit`).
fn exit_of(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "curta still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_client_survives_an_rpc_that_lies() {
    let started = Instant::now();
    let net = start();
    let dir = workdir("rpc-faults");
    let direct = ok(Curta::new(&net, &dir));
    let rpc = rpc(&net);
    ok(direct.deploy(&so()));
    ok(direct.json(&["config", "init"]));
    let program = read_keypair_file(&direct.program)
        .expect("program")
        .pubkey();
    let proxy = Proxy::start(net.rpc_url(), Faults::default()).expect("proxy");
    let curta = Curta {
        url: proxy.url(),
        ..direct.clone()
    };
    let art = artifact("stories260K");
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &art[..]).expect("artifact");
    let path = path.to_string_lossy().into_owned();
    let receipt = golden(NAME);
    let turns = receipt.turns.len() as u64 - 1;

    // 1. Clean, through the proxy.
    let t = Instant::now();
    let u = ok(curta.json(&["model", "upload", &path, "--royalty", "0"]));
    let clean_upload = t.elapsed().as_secs_f64();
    let clean_model = u["model"].as_str().expect("model").to_string();
    let (clean_txs, _) = check_upload(&rpc, &curta, &program, &clean_model);
    let (g, clean_generate) = generate(&curta, &rpc, &clean_model, "clean", &[], true);
    let clean_crank = g["seconds"].as_f64().unwrap_or(0.0);
    let clean = proxy.counts();
    eprintln!(
        "clean: upload {clean_upload:.1} s ({clean_txs} transactions), generate \
         {clean_generate:.1} s ({turns} turns, crank {clean_crank:.1} s); {} requests",
        clean.requests
    );

    // 2. The RPC lies.
    proxy.set_faults(lies(20));
    let t = Instant::now();
    let u = ok(curta.json(&["model", "upload", &path, "--royalty", "1"]));
    let upload_s = t.elapsed().as_secs_f64();
    let after_upload = proxy.counts();
    eprintln!(
        "lies, upload: requests {}, {}",
        after_upload.requests - clean.requests,
        faults_since(&clean, &after_upload)
    );
    let model = u["model"].as_str().expect("model").to_string();
    assert_ne!(model, clean_model);
    let (txs, fees) = check_upload(&rpc, &curta, &program, &model);
    let (g, generate_s) = generate(&curta, &rpc, &model, "lies", &[], true);
    let faulted = proxy.counts();
    let run: Pubkey = g["run"].as_str().expect("run").parse().expect("key");
    let (_, stale, turn_fees) = check_run(&rpc, &program, &run, turns);
    eprintln!(
        "lies, upload: {upload_s:.1} s (+{:.1} s), {txs} transactions, {fees} lamports, each chunk \
         once",
        upload_s - clean_upload
    );
    eprintln!(
        "lies, generate: {generate_s:.1} s (+{:.1} s), {turns} turns each landed once, {stale} \
         failed and resent, {} lamports of fees ({turn_fees} the turns', the quote's: {})",
        generate_s - clean_generate,
        g["total_fees"],
        stale == 0
    );
    eprintln!(
        "lies, upload and generate: requests {} (clean {}), faults {}",
        faulted.requests - clean.requests,
        clean.requests,
        faults_since(&clean, &faulted)
    );
    assert!(
        faulted.faults() > clean.faults() + 20,
        "faults were injected"
    );
    // The client's account reads after its transactions landed named the
    // slot they landed in (minContextSlot), and it read again past a node
    // behind it.
    assert!(faulted.behind > clean.behind, "{faulted}");

    // 3. Blockhash expiry: a crank's first window swallowed.
    proxy.set_faults(Faults::default());
    let spec = spec(NAME);
    let args = run_args(&spec);
    let mut open = vec!["run", "open", "--model", &clean_model, "--label", "expiry"];
    open.extend(strs(&args));
    let o = ok(curta.json(&open));
    let run_s = o["run"].as_str().expect("run").to_string();
    let run: Pubkey = run_s.parse().expect("key");
    let window = 4;
    proxy.set_faults(Faults {
        swallow_sends: window,
        record_sends: true,
        ..Faults::default()
    });
    let before = proxy.counts();
    let t = Instant::now();
    let c = ok(curta.json(&["run", "crank", &run_s, "--window", &window.to_string()]));
    let crank_s = t.elapsed().as_secs_f64();
    let after = proxy.counts();
    check_turns(NAME, &c, &receipt);
    let (_, stale, turn_fees) = check_run(&rpc, &program, &run, turns);
    // Each swallowed turn was sent again only after its blockhash's last
    // valid block height had passed (the height the proxy saw when the
    // new one arrived, asked of the validator).
    let mut sends: BTreeMap<u64, Vec<_>> = BTreeMap::new();
    for s in proxy.sends() {
        for (ix, _) in curta_ixs(&s.tx, &program) {
            if let CurtaIx::Turn {
                expected_turns: Some(e),
            } = ix
            {
                sends.entry(e).or_default().push(s.clone());
            }
        }
    }
    let mut resent = BTreeSet::new();
    let mut waited = vec![];
    for (turn, sent) in &sends {
        for pair in sent.windows(2) {
            let (old, new) = (&pair[0], &pair[1]);
            if !old.swallowed || old.tx.signatures[0] == new.tx.signatures[0] {
                continue;
            }
            let last_valid = old.last_valid.expect("the proxy relayed its blockhash");
            assert!(
                new.height > last_valid,
                "turn {} sent again at block height {} while its first blockhash could land \
                 until {last_valid}",
                turn + 1,
                new.height
            );
            assert_ne!(
                old.tx.message.recent_blockhash, new.tx.message.recent_blockhash,
                "a fresh blockhash"
            );
            resent.insert(*turn);
            waited.push(new.height - old.height);
        }
    }
    assert_eq!(
        resent.len() as u64,
        window,
        "each swallowed turn sent again once"
    );
    eprintln!(
        "expiry: {} turns swallowed, each resent once after its blockhash expired (after {:?} \
         blocks), {turns} turns each landed once, {stale} failed, {turn_fees} lamports of turn \
         fees; crank {crank_s:.1} s (+{:.1} s on a clean crank), {} requests, {}",
        window,
        waited,
        crank_s - clean_crank,
        after.requests - before.requests,
        faults_since(&before, &after)
    );
    ok(curta.json(&["run", "close", &run_s]));

    // 4. A rate limit that never lifts, once six turns were sent.
    proxy.set_faults(Faults {
        record_sends: true,
        ..Faults::default()
    });
    let sent_before = proxy.sends().len();
    let mut g = vec!["generate", "--model", &clean_model, "--label", "limited"];
    g.extend(strs(&args));
    g.extend(["--window", "4"]);
    let (mut child, lines) = ok(curta.spawn(&g));
    let deadline = Instant::now() + Duration::from_secs(120);
    // The opening and six turns sent.
    while proxy.sends().len() < sent_before + 7 {
        assert!(Instant::now() < deadline, "no six turns sent in 120 s");
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "curta exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.set_faults(Faults {
        rate_limit_forever: true,
        ..Faults::default()
    });
    let limited = Instant::now();
    let before = proxy.counts();
    let status = exit_of(&mut child, Duration::from_secs(120));
    let gave_up_s = limited.elapsed().as_secs_f64();
    let after = proxy.counts();
    assert!(!status.success(), "curta gave up");
    let stderr: Vec<String> = lines.try_iter().collect();
    let error = stderr
        .iter()
        .find(|l| l.contains("rate-limits"))
        .unwrap_or_else(|| panic!("no rate-limit line in:\n{}", stderr.join("\n")));
    assert!(
        error.contains(&format!("the RPC at {} rate-limits (HTTP 429", proxy.url()))
            && error.contains("retries over")
            && !error.contains("Custom"),
        "{error}"
    );
    let tail = stderr[stderr.iter().position(|l| l == error).expect("line")..].join("\n");
    assert!(
        tail.contains("running the same command again resumes it"),
        "{tail}"
    );
    eprintln!(
        "rate limit: gave up {gave_up_s:.1} s after it began, {} requests answered 429; it said:\n  \
         {}",
        after.too_many - before.too_many,
        tail.replace('\n', "\n  ")
    );
    // The limit lifted, the same command resumes and finishes the run.
    proxy.set_faults(Faults::default());
    let (g, resume_s) = generate(
        &curta,
        &rpc,
        &clean_model,
        "limited",
        &["--window", "4"],
        false,
    );
    let resumed_at = g["turns_before"].as_u64().unwrap_or(0);
    assert!(resumed_at > 0, "resumed, not started over");
    let run: Pubkey = g["run"].as_str().expect("run").parse().expect("key");
    let (_, stale, _) = check_run(&rpc, &program, &run, turns);
    eprintln!(
        "rate limit: run again, resumed at turn {resumed_at}, finished and closed in {resume_s:.1} \
         s, every turn once ({stale} failed)"
    );
    eprintln!(
        "all rpc-fault scenarios: {:.1} s; proxy in all: {}",
        started.elapsed().as_secs_f64(),
        proxy.counts()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The faults between two counts, by kind.
fn faults_since(a: &curta_harness::proxy::Counts, b: &curta_harness::proxy::Counts) -> String {
    format!(
        "{} faults: {} dropped, {} delayed, {} HTTP 429, {} HTTP 503, {} cut mid-answer, {} stale \
         slots, {} stale blockhashes, {} reads behind their slot, {} sends swallowed",
        b.faults() - a.faults(),
        b.dropped - a.dropped,
        b.delayed - a.delayed,
        b.too_many - a.too_many,
        b.unavailable - a.unavailable,
        b.cut - a.cut,
        b.stale_slot - a.stale_slot,
        b.stale_blockhash - a.stale_blockhash,
        b.behind - a.behind,
        b.swallowed - a.swallowed
    )
}
