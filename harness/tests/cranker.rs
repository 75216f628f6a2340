//! `curta crank` as a person runs it, on one `curta-localnet` for the whole
//! file (stories260K runs):
//!
//! - Ctrl-C (SIGINT to the process) ends it with code 130 within a second,
//!   printing totals that are exactly the signer's balance change, its
//!   progress lines on the way;
//! - a second Ctrl-C in the first's grace ends it at once (130), saying so;
//! - piped (`curta crank 2>&1 | tee FILE` in a process group of its own,
//!   SIGINT to the group, which kills tee): code 130 within a second too;
//!   and a pipe whose reader is gone ends an idle cranker (code 141), which
//!   said what it waits for each pass;
//! - a signer that cannot pay the run's next turn is refused before
//!   anything is sent (no transaction of its in the validator's history, its
//!   balance unchanged), naming the turn, what it has and what is needed;
//!   one that runs short midway names the run's next turn;
//! - the in-flight journal is per signer: another key's command, and a
//!   read-only `run show`, leave the first key's entries alone; its own next
//!   sending command settles them.
//!
//! Needs `target/debug/curta` and `make build-sbf` (`make test-e2e`).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use curta_harness::curta::Curta;
use curta_replay::models::artifact;
use serde_json::Value;
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_rpc_client::rpc_client::RpcClient;
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::Transaction;

#[path = "common/e2e.rs"]
mod shared;
use shared::*;

/// The crank fee of the paid runs, and the --min-fee the crankers take.
const FEE: &str = "10000";
const MIN_FEE: &str = "6000";

fn balance(rpc: &RpcClient, key: &Pubkey) -> u64 {
    rpc.get_balance(key).expect("balance")
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// A `curta` process: its stderr lines as they come, its stdout as a
/// whole once it ends.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<Vec<String>>>,
    stdout: std::thread::JoinHandle<String>,
}

fn spawn(c: &Curta, args: &[&str]) -> Running {
    let mut cmd = c.command(args);
    cmd.env("CURTA_PROGRESS_INTERVAL_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("curta");
    let mut out = child.stdout.take().expect("stdout");
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = child.stderr.take().expect("stderr");
    let (tx, lines) = mpsc::channel();
    let stderr = Arc::new(Mutex::new(vec![]));
    let kept = stderr.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            kept.lock().unwrap().push(line.clone());
            let _ = tx.send(line);
        }
    });
    Running {
        child,
        lines,
        stderr,
        stdout,
    }
}

/// Waits for `count` stderr lines that `want` accepts.
fn wait_lines(r: &mut Running, what: &str, count: usize, want: impl Fn(&str) -> bool) {
    let mut seen = 0;
    while seen < count {
        wait_for(&mut r.child, &r.lines, what, &want);
        seen += 1;
    }
}

/// SIGINT to `pid` (a negative one: its process group).
fn sigint(pid: i64) {
    let ok = Command::new("kill")
        .args(["-INT", "--", &pid.to_string()])
        .status()
        .expect("kill -INT");
    assert!(ok.success());
}

/// Waits for a child to end, at most `limit`: its status and how long it
/// took.
fn ended_within(child: &mut Child, limit: Duration) -> (ExitStatus, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status, start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("still running {limit:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until each signature has a confirmed status, for up to 30 s:
/// the signer's balance change each that landed caused (what it earned
/// less its fee), from the transaction's balances.
fn settled_change(rpc: &RpcClient, signer: &Pubkey, sigs: &[String]) -> i128 {
    let mut change = 0i128;
    for s in sigs {
        let sig: Signature = s.parse().expect("signature");
        let deadline = Instant::now() + Duration::from_secs(30);
        let landed = loop {
            let st = rpc.get_signature_statuses(&[sig]).expect("statuses").value[0].clone();
            if st.is_some() {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        if !landed {
            eprintln!("{s} never landed");
            continue;
        }
        // Its status may come before the node serves it at `confirmed`.
        let v: Value = loop {
            let v = shared::get_transaction(rpc, s, "base64");
            if !v.is_null() {
                break v;
            }
            assert!(Instant::now() < deadline, "{s} landed and cannot be read");
            std::thread::sleep(Duration::from_millis(200));
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(v["transaction"][0].as_str().expect("base64"))
            .expect("base64");
        let tx: Transaction = bincode::deserialize(&raw).expect("a legacy transaction");
        let i = tx
            .message
            .account_keys
            .iter()
            .position(|k| k == signer)
            .expect("the signer's transaction");
        let balances = |key: &str| v["meta"][key][i].as_u64().expect("a balance");
        change += balances("postBalances") as i128 - balances("preBalances") as i128;
    }
    change
}

/// A run opened by the validator's payer: its address.
fn open(curta: &Curta, model: &str, prompt: &str, max_tokens: &str, fee: Option<&str>) -> String {
    let mut args = vec![
        "run",
        "open",
        "--model",
        model,
        "--prompt",
        prompt,
        "--max-tokens",
        max_tokens,
    ];
    if let Some(f) = fee {
        args.extend(["--crank-fee", f]);
    }
    let o = ok(curta.json(&args));
    o["run"].as_str().expect("run").to_string()
}

fn turns_of(curta: &Curta, run: &str) -> u64 {
    n(&ok(curta.json(&["run", "show", run])), "turns")
}

/// A transfer of one lamport signed by `payer` (not sent), and its journal
/// line as the client writes it: signature, last valid block height, the
/// transaction's bytes in base64.
fn journal_line(rpc: &RpcClient, payer: &Keypair) -> (Signature, String) {
    let (hash, last_valid) = rpc
        .get_latest_blockhash_with_commitment(rpc.commitment())
        .expect("blockhash");
    let ix = solana_system_interface::instruction::transfer(
        &payer.pubkey(),
        &Pubkey::new_unique(),
        1_000_000,
    );
    let tx = Transaction::new_signed_with_payer(&[ix], Some(&payer.pubkey()), &[payer], hash);
    let b64 = base64::engine::general_purpose::STANDARD.encode(bincode::serialize(&tx).unwrap());
    (
        tx.signatures[0],
        format!("{} {last_valid} {b64}\n", tx.signatures[0]),
    )
}

fn landed(rpc: &RpcClient, sig: &Signature) -> bool {
    rpc.get_signature_statuses(&[*sig]).expect("statuses").value[0].is_some()
}

#[test]
fn a_person_runs_a_cranker() {
    let node = start();
    let rpc = rpc(&node);
    let dir = workdir("cranker");
    let curta = ok(Curta::new(&node, &dir));
    ok(curta.deploy(&so()));
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &artifact("stories260K")[..]).expect("artifact");
    let u = ok(curta.json(&["model", "upload", &path.to_string_lossy()]));
    let model = u["model"].as_str().expect("model").to_string();

    // 1. Ctrl-C: exit 130 within a second; the totals are the balance change.
    let long = open(&curta, &model, "Once upon a time", "48", Some(FEE));
    let (a, a_key) = funded(&curta, &dir, "cranker-a", "10");
    let a_before = balance(&rpc, &a_key.pubkey());
    let mut r = spawn(
        &a,
        &["crank", "--min-fee", MIN_FEE, "--window", "2", "--json"],
    );
    let progress =
        |l: &str| l.starts_with(&format!("run {long}: turn ")) && l.contains(" landed (");
    wait_lines(&mut r, "5 turns landed", 5, progress);
    sigint(r.child.id() as i64);
    let (status, took) = ended_within(&mut r.child, Duration::from_secs(3));
    eprintln!("curta crank ended {took:?} after Ctrl-C: {status:?}");
    assert_eq!(status.code(), Some(130), "{:?}", r.stderr.lock().unwrap());
    let stdout = r.stdout.join().expect("stdout");
    assert!(
        took < Duration::from_secs(1),
        "took {took:?}: {:#?}\n{stdout}",
        r.stderr.lock().unwrap()
    );
    let last = stdout.lines().last().expect("a pass printed");
    let pass: Value = serde_json::from_str(last).expect("one JSON object a line");
    eprintln!("interrupted pass: {pass}");
    assert_eq!(pass["interrupted"], Value::Bool(true), "{pass}");
    let totals = &pass["totals"];
    let run = &pass["runs"][0];
    assert_eq!(run["run"].as_str(), Some(long.as_str()), "{pass}");
    let stopped = &run["stopped"];
    let in_flight: Vec<String> = stopped["in_flight"]
        .as_array()
        .expect("in_flight")
        .iter()
        .map(|f| f["signature"].as_str().expect("signature").to_string())
        .collect();
    assert_eq!(n(totals, "in_flight"), in_flight.len() as u64, "{pass}");
    let (landed_turns, earned, fees) = (n(totals, "turns"), n(totals, "earned"), n(totals, "fees"));
    assert!(landed_turns >= 5, "{pass}");
    assert_eq!(
        earned,
        landed_turns * 10_000,
        "each turn landed paid the fee"
    );
    // The turns in flight at the stop that landed later are the only
    // change the totals do not count.
    let late = settled_change(&rpc, &a_key.pubkey(), &in_flight);
    let change = balance(&rpc, &a_key.pubkey()) as i128 - a_before as i128;
    assert_eq!(
        change - late,
        earned as i128 - fees as i128,
        "the totals are the balance change: {pass}"
    );
    // Its journal stays only when something was left in flight.
    let genesis = rpc.get_genesis_hash().expect("genesis").to_string();
    let a_journal = a
        .state_dir
        .join("inflight")
        .join(&genesis)
        .join(a_key.pubkey().to_string());
    let files = std::fs::read_dir(&a_journal).map_or(0, |d| d.count());
    assert_eq!(files, usize::from(!in_flight.is_empty()), "{a_journal:?}");
    let late_turns = turns_of(&curta, &long) - n(run, "turns_before") - landed_turns;
    assert!(late_turns <= in_flight.len() as u64, "{pass}");
    eprintln!(
        "interrupted after {landed_turns} turns ({} in flight, {late_turns} of them landed): \
         earned {earned}, spent {fees}, balance {change:+}",
        in_flight.len()
    );
    // The progress lines said each turn's place and the totals so far.
    let said = r.stderr.lock().unwrap().clone();
    let first = said.iter().find(|l| progress(l)).expect("a progress line");
    assert!(
        first.contains("(1/") && first.contains("| 1 run, 1 turn landed, earned 0.000010000 SOL"),
        "{first}"
    );

    // `run crank` too: 130 within a second, its figures the balance change.
    let a_before = balance(&rpc, &a_key.pubkey());
    let mut r = spawn(&a, &["run", "crank", &long, "--window", "2", "--json"]);
    wait_lines(&mut r, "3 turns landed", 3, |l| {
        l.starts_with("turn ") && l.contains(" landed in slot ")
    });
    sigint(r.child.id() as i64);
    let (status, took) = ended_within(&mut r.child, Duration::from_secs(3));
    eprintln!("curta run crank ended {took:?} after Ctrl-C: {status:?}");
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let c: Value = serde_json::from_str(r.stdout.join().unwrap().trim()).expect("its summary");
    let in_flight: Vec<String> = c["stopped"]["in_flight"]
        .as_array()
        .expect("in_flight")
        .iter()
        .map(|f| f["signature"].as_str().expect("signature").to_string())
        .collect();
    let late = settled_change(&rpc, &a_key.pubkey(), &in_flight);
    let change = balance(&rpc, &a_key.pubkey()) as i128 - a_before as i128;
    assert!(n(&c, "landed") >= 3, "{c}");
    assert_eq!(n(&c, "earned"), n(&c, "landed") * 10_000, "{c}");
    assert_eq!(
        change - late,
        n(&c, "earned") as i128 - n(&c, "spent") as i128,
        "{c}"
    );
    let said = r.stderr.lock().unwrap().join("\n");
    assert!(
        said.contains(&format!("interrupted: the run {long} stays open")),
        "{said}"
    );

    // Ctrl-C twice: the second ends the process at once, in the first's
    // grace (the stopped crank looking at what it has in flight), and
    // says so; still 130.
    let twice = open(&curta, &model, "Twice upon a time", "48", Some(FEE));
    let mut r = spawn(&a, &["run", "crank", &twice, "--window", "2"]);
    wait_lines(&mut r, "2 turns landed", 2, |l| {
        l.starts_with("turn ") && l.contains(" landed in slot ")
    });
    sigint(r.child.id() as i64);
    std::thread::sleep(Duration::from_millis(100));
    sigint(r.child.id() as i64);
    let (status, took) = ended_within(&mut r.child, Duration::from_secs(3));
    eprintln!("curta run crank ended {took:?} after two Ctrl-C: {status:?}");
    assert_eq!(status.code(), Some(130));
    let said = r.stderr.lock().unwrap().join("\n");
    assert!(said.contains("interrupted again: stopping now"), "{said}");
    // Closed, so the passes below find the runs they did.
    ok(curta.json(&["run", "close", &twice]));

    // 2. Piped through tee, SIGINT to the whole group (tee dies first):
    // exit 130 within a second all the same.
    let log = dir.join("crank.log");
    let mut tee = Command::new("tee");
    tee.arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0);
    // A shell runs a background job with SIGINT ignored, and tee inherits
    // that: it would outlive the Ctrl-C this scenario is about.
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        tee.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut tee = tee.spawn().expect("tee");
    let pgid = tee.id();
    let pipe = OwnedFd::from(tee.stdin.take().expect("tee's stdin"));
    let mut cmd = a.command(&["crank", "--min-fee", MIN_FEE, "--window", "2"]);
    cmd.env("CURTA_PROGRESS_INTERVAL_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::from(pipe.try_clone().expect("dup")))
        .stderr(Stdio::from(pipe))
        .process_group(pgid as i32);
    let mut piped = cmd.spawn().expect("curta crank | tee");
    // The pipe's write ends are curta's alone now: once it ends, tee reads
    // to the end, whatever signal reached it.
    drop(cmd);
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| progress(l))
        .count()
        < 3
    {
        assert!(Instant::now() < deadline, "no progress in the log");
        assert!(piped.try_wait().unwrap().is_none(), "curta ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    sigint(-(pgid as i64));
    let (status, took) = ended_within(&mut piped, Duration::from_secs(3));
    eprintln!("curta crank | tee ended {took:?} after Ctrl-C: {status:?}");
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let _ = tee.wait();

    // 3. A pipe whose reader is gone ends an idle cranker (141), which says
    // each pass what it waits for.
    let mut tee = Command::new("tee")
        .arg(dir.join("idle.log"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("tee");
    let pipe = OwnedFd::from(tee.stdin.take().expect("tee's stdin"));
    let mut cmd = a.command(&["crank", "--min-fee", "1000000000", "--interval", "0.3"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(pipe.try_clone().expect("dup")))
        .stderr(Stdio::from(pipe));
    let mut idle = cmd.spawn().expect("an idle cranker");
    let idle_line = "no run to crank; 1 skipped below --min-fee; waiting 0.3 s";
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(dir.join("idle.log"))
        .unwrap_or_default()
        .contains(idle_line)
    {
        assert!(Instant::now() < deadline, "no idle line");
        std::thread::sleep(Duration::from_millis(50));
    }
    tee.kill().expect("kill tee");
    let _ = tee.wait();
    let (status, took) = ended_within(&mut idle, Duration::from_secs(5));
    eprintln!("an idle cranker whose pipe closed ended {took:?} after: {status:?}");
    assert_eq!(status.code(), Some(141));

    // 4. A signer that cannot pay the run's next turn: refused before
    // anything is sent.
    let next = turns_of(&curta, &long) + 1;
    let empty_path = dir.join("empty.json");
    ok(curta.json(&["keygen", "-o", &empty_path.to_string_lossy()]));
    let empty = Curta {
        keypair: empty_path.clone(),
        state_dir: dir.join("state-empty"),
        ..curta.clone()
    };
    let empty_key = solana_keypair::read_keypair_file(&empty_path)
        .unwrap()
        .pubkey();
    for args in [
        &["crank", "--once", "--min-fee", MIN_FEE][..],
        &["run", "crank", &long][..],
    ] {
        let out = empty.command(args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{args:?} with an empty wallet: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let want = format!(
            "the signer {empty_key} cannot pay turn {next} (the run's next): it has 0.000000000 \
             SOL, and the turn's fee ("
        );
        assert!(stderr.contains(&want), "{stderr}");
        assert!(
            stderr.contains("`curta airdrop 1`") && stderr.contains("(nothing was sent)"),
            "{stderr}"
        );
    }
    assert_eq!(balance(&rpc, &empty_key), 0);
    assert!(history(&rpc, &empty_key).is_empty(), "nothing was sent");

    // A signer that runs short midway names the run's next turn.
    let free = open(&curta, &model, "Once upon a time", "12", None);
    let (poor, poor_key) = funded(&curta, &dir, "poor", "0.00093");
    let out = poor
        .command(&["run", "crank", &free, "--window", "4"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let done = turns_of(&curta, &free);
    let want = format!(
        "the signer {} ran out of lamports at turn {}: it has ",
        poor_key.pubkey(),
        done + 1
    );
    eprintln!("short midway after {done} turns: {stderr}");
    assert!(done > 0 && stderr.contains(&want), "{stderr}");

    // 5. The journal is per signer. Key A's entries (as the client writes
    // them): one in its own folder, one in the folder older clients shared.
    let cluster_dir = dir.join("state/inflight").join(&genesis);
    let a_dir = cluster_dir.join(a_key.pubkey().to_string());
    std::fs::create_dir_all(&a_dir).unwrap();
    let (own_sig, own_line) = journal_line(&rpc, &a_key);
    let (old_sig, old_line) = journal_line(&rpc, &a_key);
    std::fs::write(a_dir.join("4000001.txt"), own_line).unwrap();
    std::fs::write(cluster_dir.join("4000002.txt"), old_line).unwrap();
    // Key B (the validator's payer) shares the state folder: its sending
    // command, and a read-only `run show`, settle none of A's.
    let a_shared = Curta {
        state_dir: dir.join("state"),
        ..a.clone()
    };
    let held = balance(&rpc, &a_key.pubkey());
    let out = curta
        .command(&["crank", "--once", "--min-fee", "1000000000"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let b_said = String::from_utf8_lossy(&out.stderr);
    assert!(!b_said.contains("finishing"), "{b_said}");
    let shown = a_shared.command(&["run", "show", &long]).output().unwrap();
    assert!(shown.status.success());
    assert!(!String::from_utf8_lossy(&shown.stderr).contains("finishing"));
    assert!(a_dir.join("4000001.txt").is_file() && cluster_dir.join("4000002.txt").is_file());
    assert!(!landed(&rpc, &own_sig) && !landed(&rpc, &old_sig));
    assert_eq!(balance(&rpc, &a_key.pubkey()), held);
    // A's own next sending command settles both.
    let out = a_shared
        .command(&["crank", "--once", "--min-fee", "1000000000"])
        .output()
        .unwrap();
    let a_said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{a_said}");
    assert!(
        a_said.contains("finishing 2 transaction(s) an interrupted curta had in flight"),
        "{a_said}"
    );
    assert!(landed(&rpc, &own_sig) && landed(&rpc, &old_sig));
    assert!(!a_dir.join("4000001.txt").exists() && !cluster_dir.join("4000002.txt").exists());
    assert_eq!(
        balance(&rpc, &a_key.pubkey()),
        held - 2 * (1_000_000 + 5_000)
    );

    // 6. On a terminal (a pseudo-terminal, through `script`): a bar for the
    // run, then the pass and the totals. `script` is util-linux's (Debian's
    // bsdutils, an essential package).
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "`script` (util-linux) runs the terminal's check: install bsdutils"
    );
    ok(curta.json(&["run", "close", &long]));
    let short = open(&curta, &model, "Once upon a time", "6", Some(FEE));
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let line = [
        a.bin.to_string_lossy().as_ref(),
        "--url",
        &a.url,
        "--keypair",
        &a.keypair.to_string_lossy(),
        "--state-dir",
        &a.state_dir.to_string_lossy(),
        "--program-id",
        &a.program.to_string_lossy(),
        "crank",
        "--once",
        "--min-fee",
        MIN_FEE,
        "--window",
        "1",
    ]
    .map(quoted)
    .join(" ");
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HOME", a.state_dir.join("home"))
        .env("COLUMNS", "200")
        .stdin(Stdio::null())
        .output()
        .expect("script");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{screen}");
    let bar = format!("run {}… [", &short[..8]);
    assert!(
        screen.contains(&bar) && screen.contains(" turns turn "),
        "{screen}"
    );
    assert!(
        screen.contains("in all: 1 pass, 1 run, ") && screen.contains(" lamports a turn landed)"),
        "{screen}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
