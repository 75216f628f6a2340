//! Crankers as a fleet on a real validator (`curta-localnet`): two `curta
//! crank --all --once` processes with different keys, started together,
//! over four paid stories260K runs and one that pays nothing. Each skips
//! the run that pays nothing (its next turn pays less than a turn costs:
//! the default `--min-fee`), takes the paid ones in its own order (a hash
//! of its key and the run's address, `curta_core::client::fleet`), leaves a
//! run it finds the other on to it and comes back to it at the end of its
//! pass. Every paid run ends complete, each of its turns landed once; each
//! cranker ends in profit, its balance moved by exactly what it earned
//! less its fees, and the transactions it reports (failed ones included)
//! are exactly those the chain shows it paid for.
//!
//! Needs `target/debug/curta` and `make build-sbf`'s program (`make
//! test-e2e` builds them).

use std::collections::BTreeMap;

use curta_core::client::fleet;
use curta_harness::curta::Curta;
use curta_replay::models::artifact;
use serde_json::Value;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

/// Each turn's crank fee: about four times a turn's fee today (5,257
/// lamports at the default window).
const FEE: u64 = 20_000;
const RUNS: u64 = 4;

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// A cranker's key, written as `curta keygen` writes one, funded by
/// airdrop: its `curta`.
fn cranker(curta: &Curta, dir: &std::path::Path, name: &str, key: &Keypair) -> Curta {
    let path = dir.join(format!("{name}.json"));
    let bytes = serde_json::to_string(&key.to_bytes().to_vec()).expect("JSON");
    std::fs::write(&path, bytes).expect("keypair file");
    let c = Curta {
        keypair: path,
        state_dir: dir.join(format!("state-{name}")),
        ..curta.clone()
    };
    ok(c.json(&["airdrop", "10"]));
    c
}

/// The runs in `key`'s order.
fn order_of(key: &Keypair, runs: &[Pubkey]) -> Vec<Pubkey> {
    let mut runs = runs.to_vec();
    fleet::order(&key.pubkey().to_bytes(), &mut runs, |r| r.to_bytes());
    runs
}

#[test]
fn two_crankers_spread_over_paid_runs_and_each_earns() {
    let net = start();
    let dir = workdir("fleet");
    let curta = ok(Curta::new(&net, &dir));
    ok(curta.deploy(&so()));
    let program = solana_keypair::read_keypair_file(&curta.program)
        .expect("program")
        .pubkey();
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &artifact("stories260K")[..]).expect("artifact");
    let u = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    let model = u["model"].as_str().expect("model").to_string();
    let rpc = rpc(&net);

    // Four paid runs, and one that pays nothing.
    let fee = FEE.to_string();
    let mut paid: Vec<Pubkey> = vec![];
    for seed in 1..=RUNS {
        let o = ok(curta.json(&[
            "run",
            "open",
            "--model",
            &model,
            "--prompt",
            "Once upon a time",
            "--max-tokens",
            "16",
            "--temperature",
            "0.8",
            "--seed",
            &seed.to_string(),
            "--crank-fee",
            &fee,
        ]));
        assert_eq!(n(&o, "crank_fee"), FEE, "{o}");
        paid.push(o["run"].as_str().expect("run").parse().expect("address"));
    }
    let free = ok(curta.json(&[
        "run",
        "open",
        "--model",
        &model,
        "--prompt",
        "Once",
        "--max-tokens",
        "4",
    ]));
    let free = free["run"].as_str().expect("run").to_string();

    // Two crankers whose orders start on different runs (three pairs of
    // keys in four do): where they meet is what is measured.
    let (a, b) = loop {
        let (a, b) = (Keypair::new(), Keypair::new());
        if order_of(&a, &paid)[0] != order_of(&b, &paid)[0] {
            break (a, b);
        }
    };
    let crankers = [
        ("A", cranker(&curta, &dir, "cranker-a", &a), &a),
        ("B", cranker(&curta, &dir, "cranker-b", &b), &b),
    ];
    let befores: Vec<u64> = crankers
        .iter()
        .map(|(_, _, k)| rpc.get_balance(&k.pubkey()).expect("balance"))
        .collect();

    // Started together; each prints its pass.
    let started = std::time::Instant::now();
    let children: Vec<_> = crankers
        .iter()
        .map(|(_, c, _)| spawn_json(c, &["crank", "--all", "--once"]))
        .collect();
    let passes: Vec<Value> = children.into_iter().map(json_of).collect();
    let seconds = started.elapsed().as_secs_f64();

    let mut landed: BTreeMap<String, u64> = BTreeMap::new();
    for (((who, _, key), pass), before) in crankers.iter().zip(&passes).zip(&befores) {
        eprintln!("cranker {who}: {pass}");
        assert_eq!(pass["refused"].as_array().map(Vec::len), Some(0), "{pass}");
        // The run that pays nothing is skipped by default.
        assert_eq!(n(pass, "skipped_below_min_fee"), 1, "{who}: {pass}");
        let runs = pass["runs"].as_array().expect("runs");
        assert!(runs
            .iter()
            .all(|r| r["run"].as_str() != Some(free.as_str())));
        // Its own order: each run taken once, in the hash's order (the
        // runs another finished before this one read them left out), then
        // the runs it left to the other, come back to.
        let order = order_of(key, &paid);
        let (mut first, mut left, mut again) = (vec![], vec![], vec![]);
        for r in runs {
            let run: Pubkey = r["run"].as_str().expect("run").parse().expect("address");
            match first.contains(&run) {
                false => first.push(run),
                true => again.push(run),
            }
            if r["left_to_others"] == true {
                left.push(run);
            }
            // Failed turns are its own, resent or lost to the other.
            assert_eq!(
                n(r, "failed"),
                n(r, "failed_resent") + n(r, "failed_to_others"),
                "{r}"
            );
            *landed.entry(run.to_string()).or_default() += n(r, "turns");
        }
        let mut in_order = order.iter().filter(|r| first.contains(r));
        assert!(
            first.iter().all(|r| in_order.next() == Some(r)),
            "{who} took the runs in its order {order:?}: {first:?}"
        );
        assert!(
            again.iter().all(|r| left.contains(r)),
            "{who} came back only to runs it left: {pass}"
        );
        // In profit, exactly as it reports.
        let (earned, fees) = (n(pass, "earned"), n(pass, "fees"));
        let turns = n(pass, "turns");
        assert_eq!(earned, FEE * turns, "{who}: paid for each turn: {pass}");
        let after = rpc.get_balance(&key.pubkey()).expect("balance");
        assert_eq!(
            after as i128 - *before as i128,
            earned as i128 - fees as i128,
            "{who}: its balance moved by what it earned less its fees"
        );
        assert!(earned > fees, "{who} ends in profit: {pass}");
        // Its transactions, failed ones included, as the chain shows them.
        let paid_by: Vec<Landed> = history(&rpc, &key.pubkey())
            .into_iter()
            .filter(|l| l.tx.message.account_keys[0] == key.pubkey())
            .collect();
        let failed_on_chain = paid_by.iter().filter(|l| l.err.is_some()).count() as u64;
        assert_eq!(
            (paid_by.len() as u64, failed_on_chain),
            (n(pass, "transactions"), n(pass, "failed")),
            "{who}: the transactions it reports are those it paid for"
        );
        assert_eq!(
            paid_by.iter().map(|l| l.fee).sum::<u64>(),
            fees,
            "{who}: its fees"
        );
        eprintln!(
            "cranker {who}: {turns} turns landed, {} failed ({} resent, {} lost to the other), {} \
             by the other, {} runs left to it; earned {earned}, fees {fees}: profit {} ({} a turn \
             landed)",
            n(pass, "failed"),
            runs.iter().map(|r| n(r, "failed_resent")).sum::<u64>(),
            runs.iter().map(|r| n(r, "failed_to_others")).sum::<u64>(),
            n(pass, "turns_by_others"),
            n(pass, "left_to_others"),
            earned - fees,
            (earned - fees) / turns.max(1)
        );
    }
    eprintln!("fleet: {RUNS} runs in {seconds:.1} s");

    // Every paid run complete, each turn landed once (by one or the
    // other), every turn's fee paid from its deposit; the free run left.
    for run in &paid {
        let s = ok(curta.json(&["run", "show", &run.to_string()]));
        assert_eq!(s["complete"], true, "{s}");
        let turns = n(&s, "turns");
        assert_eq!(landed.get(&run.to_string()).copied(), Some(turns), "{s}");
        assert_eq!(n(&s, "crank_paid"), FEE * turns, "{s}");
        // On the chain too: each turn landed once.
        let done = history(&rpc, run)
            .iter()
            .filter(|l| l.err.is_none())
            .flat_map(|l| curta_ixs(&l.tx, &program))
            .filter(|(ix, _)| matches!(ix, curta_core::protocol::Instruction::Turn { .. }))
            .count() as u64;
        assert_eq!(done, turns, "{run}");
    }
    let s = ok(curta.json(&["run", "show", &free]));
    assert_eq!(n(&s, "turns"), 0, "the run paying nothing was left: {s}");
    let _ = std::fs::remove_dir_all(&dir);
}
