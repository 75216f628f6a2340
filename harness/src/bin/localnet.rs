//! `curta-localnet`: a local Solana validator for Curta, built on Agave's
//! test validator library (`TestValidatorGenesis`, the code Agave's
//! `solana-test-validator` binary wraps) and configured as that binary is:
//! transaction history, the full RPC API, a faucet, real fees and rent.
//!
//! It keeps its ledger under `target/` and starts it afresh every time; it
//! funds a payer keypair at genesis, prints its status lines (the
//! `JSON RPC URL: ...` line last, once the validator answers) and runs in
//! the foreground until SIGINT or SIGTERM. `curta-localnet --help` lists
//! the flags; the README's "Local validator" section says what they give.

use std::fs::{self, File};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agave_feature_set::{raise_account_cu_limit, raise_block_limits_to_100m};
use clap::Parser;
use solana_account::{AccountSharedData, WritableAccount};
use solana_commitment_config::CommitmentConfig;
use solana_faucet::faucet::{run_faucet, Faucet};
use solana_instruction::Instruction;
use solana_keypair::{read_keypair_file, write_keypair_file, Keypair};
use solana_net_utils::{parse_port_range, SocketAddrSpace};
use solana_pubkey::Pubkey;
use solana_rpc::rpc::JsonRpcConfig;
use solana_rpc_client::rpc_client::RpcClient;
use solana_signer::Signer;
use solana_test_validator::{TestValidator, TestValidatorGenesis, UpgradeableProgramInfo};
use solana_transaction::Transaction;

const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// The loader-v3 (upgradeable) loader, which `--bpf-program` deploys with.
const BPF_LOADER_UPGRADEABLE: Pubkey =
    Pubkey::from_str_const("BPFLoaderUpgradeab1e11111111111111111111111");

#[derive(Parser)]
#[command(
    name = "curta-localnet",
    version,
    about = "A local Solana validator (Agave 4.0's test validator) for Curta: ledger under target/, \
             JSON-RPC at http://127.0.0.1:8899, a faucet and a funded payer."
)]
struct Args {
    /// Ledger directory [default: target/localnet/ledger]. Removed at start
    /// and at exit unless --keep-ledger.
    #[arg(long, value_name = "DIR")]
    ledger: Option<PathBuf>,

    /// Reuse an existing ledger and leave it at exit. Genesis flags
    /// (--bpf-program, --payer-keypair funding, feature and block-limit
    /// flags) only apply when the ledger is created.
    #[arg(long)]
    keep_ledger: bool,

    /// The validator's log [default: LEDGER.log, beside the ledger so it
    /// outlives it]; `-` writes it to stderr. RUST_LOG sets the filter.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,

    /// JSON-RPC port (WebSocket PubSub on the next one); 0 picks a free pair.
    #[arg(long, default_value_t = 8899, value_name = "PORT")]
    rpc_port: u16,

    /// Faucet port, on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 9900, value_name = "PORT")]
    faucet_port: u16,

    /// SOL the faucet holds at genesis.
    #[arg(long, default_value_t = 1_000_000, value_name = "SOL")]
    faucet_sol: u64,

    /// Keypair file (Solana CLI JSON) funded with 500,000,000 SOL at
    /// genesis as the mint; created if missing [default:
    /// target/localnet/payer.json].
    #[arg(long, value_name = "PATH")]
    payer_keypair: Option<PathBuf>,

    /// Preload an SBF program, not upgradeable, as Agave's flag does;
    /// repeatable. By default no program is loaded.
    #[arg(long, num_args = 2, value_names = ["ADDRESS_OR_KEYPAIR", "SO_PATH"])]
    bpf_program: Vec<String>,

    /// Load an account at genesis from a JSON file, as `solana account
    /// --output json` writes one, as Agave's flag does; repeatable.
    #[arg(long, num_args = 2, value_names = ["ADDRESS", "JSON_FILE"])]
    account: Vec<String>,

    /// Deactivate the two features that raised the block limits (SIMD-0286
    /// and SIMD-0306): 60M compute units per block and 12M per writable
    /// account instead of 100M and 40M.
    #[arg(long)]
    legacy_block_limits: bool,

    /// Deactivate a feature at genesis; repeatable.
    #[arg(long, value_name = "FEATURE_ID")]
    deactivate_feature: Vec<Pubkey>,

    /// Gossip port [default: the first port of --dynamic-port-range]; 0
    /// takes the first free port in that range.
    #[arg(long, value_name = "PORT")]
    gossip_port: Option<u16>,

    /// Ports for the validator's other sockets (gossip, TPU, TVU, repair).
    #[arg(long, default_value = "8000-10000", value_name = "MIN-MAX")]
    dynamic_port_range: String,

    /// Keep at most this many ledger shreds, as Agave's binary does.
    #[arg(long, default_value_t = 10_000, value_name = "SHREDS")]
    limit_ledger_size: u64,

    /// RPC worker threads [default: the CPU count, at least 4]; the
    /// library's default is one.
    #[arg(long, value_name = "N")]
    rpc_threads: Option<usize>,

    /// Stop when stdin reaches end of file: a parent that holds the pipe's
    /// other end then takes the validator down with it even if it is
    /// killed.
    #[arg(long)]
    stop_on_stdin_close: bool,
}

fn main() -> ExitCode {
    // Before any thread exists, so every thread the validator starts
    // inherits the mask and the two signals wait for `sigwait` below.
    let signals = block_stop_signals();
    let args = Args::parse();
    match run(args, &signals) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("curta-localnet: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args, signals: &libc::sigset_t) -> Result<(), String> {
    let started = Instant::now();
    // What can be checked without touching the disk, first.
    let programs = parse_programs(&args.bpf_program)?;
    let accounts = parse_accounts(&args.account)?;
    let port_range = parse_port_range(&args.dynamic_port_range)
        .filter(|(min, max)| min < max)
        .ok_or_else(|| {
            format!(
                "--dynamic-port-range {:?} is not MIN-MAX with MIN < MAX",
                args.dynamic_port_range
            )
        })?;
    let rpc_port = match args.rpc_port {
        0 => free_port_pair()?,
        u16::MAX => return Err("--rpc-port 65535 leaves no port for PubSub".into()),
        p => p,
    };
    check_ports(&args, rpc_port, port_range)?;

    let target = target_dir();
    let ledger = absolute(
        args.ledger
            .clone()
            .unwrap_or_else(|| target.join("localnet/ledger")),
    )?;
    let ledger_parent = ledger
        .parent()
        .ok_or_else(|| format!("ledger path {} has no parent folder", ledger.display()))?;
    fs::create_dir_all(ledger_parent)
        .map_err(|e| format!("cannot create {}: {e}", ledger_parent.display()))?;
    // Beside the ledger, not in it: the ledger is removed while it is held.
    let lock_path = sibling(&ledger, "lock");
    let lock = File::create(&lock_path)
        .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.try_lock().map_err(|_| {
        format!(
            "another curta-localnet is using the ledger {} (lock {})",
            ledger.display(),
            lock_path.display()
        )
    })?;
    if ledger.exists() && !args.keep_ledger {
        refuse_unless_ledger(&ledger)?;
        fs::remove_dir_all(&ledger)
            .map_err(|e| format!("cannot remove the old ledger {}: {e}", ledger.display()))?;
    }
    let reused = TestValidatorGenesis::ledger_exists(&ledger);
    fs::create_dir_all(&ledger).map_err(|e| format!("cannot create {}: {e}", ledger.display()))?;

    let plan = Plan {
        ledger: &ledger,
        reused,
        programs,
        accounts,
        port_range,
        rpc_port,
        started,
    };
    let served = serve(&args, &target, plan, signals);
    // After a failed start too: a fresh ledger every time, none left over.
    if !args.keep_ledger {
        if let Err(e) = fs::remove_dir_all(&ledger) {
            eprintln!(
                "curta-localnet: cannot remove the ledger {}: {e}",
                ledger.display()
            );
        }
    }
    drop(lock);
    served
}

/// What `run` checked and prepared.
struct Plan<'a> {
    ledger: &'a Path,
    reused: bool,
    programs: Vec<UpgradeableProgramInfo>,
    accounts: Vec<(Pubkey, AccountSharedData)>,
    port_range: (u16, u16),
    rpc_port: u16,
    started: Instant,
}

/// Starts the faucet and the validator, prints the status, and runs until
/// a stop signal; the validator is closed when this returns.
fn serve(args: &Args, target: &Path, plan: Plan, signals: &libc::sigset_t) -> Result<(), String> {
    let Plan {
        ledger,
        reused,
        programs,
        accounts,
        port_range,
        rpc_port,
        started,
    } = plan;
    let log_path = match &args.log {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p.clone()),
        None => Some(sibling(ledger, "log")),
    };
    setup_log(log_path.as_deref())?;

    let payer_path = absolute(
        args.payer_keypair
            .clone()
            .unwrap_or_else(|| target.join("localnet/payer.json")),
    )?;
    let payer = load_or_create_keypair(&payer_path)?;
    let faucet_keypair = load_or_create_keypair(&ledger.join("faucet-keypair.json"))?;
    let faucet_pubkey = faucet_keypair.pubkey();
    let faucet_addr = start_faucet(faucet_keypair, args.faucet_port)?;

    let mut deactivate = args.deactivate_feature.clone();
    if args.legacy_block_limits {
        deactivate.push(raise_block_limits_to_100m::id());
        deactivate.push(raise_account_cu_limit::id());
    }
    let rpc_threads = args.rpc_threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(4, |n| n.get())
            .max(4)
    });

    let mut genesis = TestValidatorGenesis::default();
    genesis.max_ledger_shreds = Some(args.limit_ledger_size);
    // Large programs in genesis (the real binary lifts this cap too).
    genesis.max_genesis_archive_unpacked_size = Some(u64::MAX);
    genesis
        .ledger_path(ledger)
        .add_account(
            faucet_pubkey,
            AccountSharedData::new(
                args.faucet_sol.saturating_mul(LAMPORTS_PER_SOL),
                0,
                &solana_system_interface::program::ID,
            ),
        )
        .rpc_port(rpc_port)
        .rpc_config(JsonRpcConfig {
            // The library's default keeps no history: getTransaction and
            // getSignaturesForAddress would find nothing.
            enable_rpc_transaction_history: true,
            enable_extended_tx_metadata_storage: true,
            faucet_addr: Some(faucet_addr),
            rpc_threads,
            rpc_blocking_threads: (rpc_threads / 2).max(2),
            ..JsonRpcConfig::default_for_test()
        })
        .add_upgradeable_programs_with_path(&programs)
        .add_accounts(accounts)
        .deactivate_features(&deactivate)
        .bind_ip_addr(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .gossip_host(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .port_range(port_range)
        // The library fixes the gossip port at start-up to its own range's
        // first port, whatever range is set later.
        .gossip_port(args.gossip_port.unwrap_or(port_range.0));

    // Any exit of the validator (a fatal error included) wakes `sigwait`.
    let stopping = Arc::new(AtomicBool::new(false));
    {
        let stopping = stopping.clone();
        genesis
            .validator_exit
            .write()
            .expect("validator exit lock")
            .register_exit(Box::new(move || {
                if !stopping.load(Ordering::SeqCst) {
                    // SAFETY: kill(2) on our own pid with a valid signal.
                    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                }
            }));
    }

    let validator = genesis
        .start_with_mint_address(payer.pubkey(), SocketAddrSpace::new(true))
        .map_err(|e| {
            format!(
                "the validator did not start (ledger {}): {e}",
                ledger.display()
            )
        })?;
    let rpc = RpcClient::new_with_commitment(validator.rpc_url(), CommitmentConfig::processed());
    wait_for_programs(&rpc, &payer, &programs)?;

    print_status(&Status {
        validator: &validator,
        rpc: &rpc,
        ledger,
        log: log_path.as_deref(),
        reused,
        faucet_addr,
        payer: &payer,
        payer_path: &payer_path,
        programs: &programs,
        elapsed: started.elapsed(),
    })?;

    if args.stop_on_stdin_close {
        std::thread::spawn(|| {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            // SAFETY: kill(2) on our own pid with a valid signal.
            unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
        });
    }

    let signal = wait_signal(signals);
    stopping.store(true, Ordering::SeqCst);
    eprintln!(
        "curta-localnet: {} received, stopping (again to exit at once)",
        signal_name(signal)
    );
    let second = *signals;
    std::thread::spawn(move || {
        let s = wait_signal(&second);
        eprintln!(
            "curta-localnet: {}, exiting without cleanup",
            signal_name(s)
        );
        std::process::exit(130);
    });
    drop(rpc);
    // Closes the validator and joins its threads (the library leaves a
    // ledger it was given in place; `run` removes it).
    drop(validator);
    eprintln!("curta-localnet: stopped");
    Ok(())
}

/// The status block, in the order and words of Agave's binary; `JSON RPC
/// URL` comes last, so a reader that sees it knows every line before it.
struct Status<'a> {
    validator: &'a TestValidator,
    rpc: &'a RpcClient,
    ledger: &'a Path,
    log: Option<&'a Path>,
    reused: bool,
    faucet_addr: SocketAddr,
    payer: &'a Keypair,
    payer_path: &'a Path,
    programs: &'a [UpgradeableProgramInfo],
    elapsed: Duration,
}

fn print_status(s: &Status) -> Result<(), String> {
    let rpc_err = |what: &str, e: solana_rpc_client_api::client_error::Error| {
        format!("the validator's RPC did not answer {what}: {e}")
    };
    let identity = s
        .rpc
        .get_identity()
        .map_err(|e| rpc_err("getIdentity", e))?;
    let genesis_hash = s
        .rpc
        .get_genesis_hash()
        .map_err(|e| rpc_err("getGenesisHash", e))?;
    let version = s.rpc.get_version().map_err(|e| rpc_err("getVersion", e))?;
    let payer_lamports = s
        .rpc
        .get_balance(&s.payer.pubkey())
        .map_err(|e| rpc_err("getBalance", e))?;
    let bank = s
        .validator
        .bank_forks()
        .read()
        .expect("bank forks")
        .working_bank();
    let (account_limit, block_limit, vote_limit) = {
        let tracker = bank.read_cost_tracker().expect("cost tracker");
        (
            tracker.get_account_limit(),
            tracker.get_block_limit(),
            tracker.get_vote_limit(),
        )
    };

    let mut lines = vec![
        (
            "Ledger location",
            format!(
                "{}{}",
                s.ledger.display(),
                if s.reused { " (kept)" } else { "" }
            ),
        ),
        (
            "Log",
            s.log.map_or("stderr".into(), |p| p.display().to_string()),
        ),
        ("Identity", identity.to_string()),
        ("Genesis Hash", genesis_hash.to_string()),
        ("Version", version.solana_core),
        ("Gossip Address", s.validator.gossip().to_string()),
        ("TPU Address", s.validator.tpu_quic().to_string()),
        ("Faucet address", s.faucet_addr.to_string()),
        (
            "Payer",
            format!(
                "{} ({}, {} SOL)",
                s.payer.pubkey(),
                s.payer_path.display(),
                payer_lamports / LAMPORTS_PER_SOL
            ),
        ),
    ];
    for p in s.programs {
        lines.push((
            "Program",
            format!("{} ({})", p.program_id, p.program_path.display()),
        ));
    }
    lines.extend([
        // Compute units, as the working bank's cost tracker holds them.
        (
            "Block limits",
            format!(
                "{block_limit} per block, {account_limit} per writable account, {vote_limit} for \
                 votes"
            ),
        ),
        ("Startup", format!("{:.1} s", s.elapsed.as_secs_f64())),
        ("WebSocket PubSub URL", s.validator.rpc_pubsub_url()),
        ("JSON RPC URL", s.validator.rpc_url()),
    ]);
    let mut out = io::stdout().lock();
    lines
        .iter()
        .try_for_each(|(name, value)| writeln!(out, "{name}: {value}"))
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    if payer_lamports == 0 {
        eprintln!(
            "curta-localnet: warning: the payer {} has no lamports (a kept ledger funds the payer \
             it was created with)",
            s.payer.pubkey()
        );
    }
    Ok(())
}

/// Programs put in genesis are not runnable in the first slot; simulate an
/// empty instruction to each until the loader stops saying it is not
/// deployed, as the library's own `start` does (its
/// `start_with_mint_address` does not).
fn wait_for_programs(
    rpc: &RpcClient,
    payer: &Keypair,
    programs: &[UpgradeableProgramInfo],
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for p in programs {
        loop {
            let blockhash = rpc
                .get_latest_blockhash()
                .map_err(|e| format!("getLatestBlockhash failed: {e}"))?;
            let tx = Transaction::new_signed_with_payer(
                &[Instruction::new_with_bytes(p.program_id, &[], vec![])],
                Some(&payer.pubkey()),
                &[payer],
                blockhash,
            );
            let deployed = match rpc.simulate_transaction(&tx) {
                Ok(r) => !format!("{:?}", r.value.err).contains("not deployed"),
                Err(_) => false,
            };
            if deployed {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the program {} ({}) was not runnable after 30 s",
                    p.program_id,
                    p.program_path.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Runs the faucet (Agave's, as the real binary does) on 127.0.0.1 in its
/// own thread and returns the address it bound.
fn start_faucet(keypair: Keypair, port: u16) -> Result<SocketAddr, String> {
    let faucet = Arc::new(Mutex::new(Faucet::new(keypair, None, None, None)));
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let (sender, receiver) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("curtaFaucet".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("faucet runtime");
            runtime.block_on(run_faucet(faucet, addr, Some(sender)));
        })
        .map_err(|e| format!("cannot start the faucet thread: {e}"))?;
    receiver
        .recv()
        .map_err(|_| "the faucet thread ended before binding".to_string())?
        .map_err(|e| format!("the faucet did not start on port {port}: {e}"))
}

/// A port another process holds (another validator, most often) is one
/// line naming the flag that moves it, said before anything is created:
/// the library would panic deep in its start-up, leaving a lock and a log.
fn check_ports(args: &Args, rpc_port: u16, port_range: (u16, u16)) -> Result<(), String> {
    let rpc_fix = "Choose another with --rpc-port PORT (0 picks a free pair).";
    let gossip_fix = "Choose another with --gossip-port PORT (0 takes a free one in \
                      --dynamic-port-range) and a --dynamic-port-range MIN-MAX apart from the \
                      other validator's.";
    let wanted = [
        (rpc_port, "JSON-RPC", false, rpc_fix),
        (
            rpc_port.wrapping_add(1),
            "PubSub, the JSON-RPC port + 1",
            false,
            rpc_fix,
        ),
        (
            args.faucet_port,
            "the faucet",
            false,
            "Choose another with --faucet-port PORT (0 picks a free one).",
        ),
        (
            args.gossip_port.unwrap_or(port_range.0),
            "gossip",
            true,
            gossip_fix,
        ),
    ];
    for (port, what, udp, fix) in wanted {
        let addr = (Ipv4Addr::UNSPECIFIED, port);
        let free = TcpListener::bind(addr).is_ok() && (!udp || UdpSocket::bind(addr).is_ok());
        if port != 0 && !free {
            return Err(format!(
                "port {port} ({what}) is in use, by another validator? {fix}"
            ));
        }
    }
    Ok(())
}

/// Two free consecutive TCP ports (JSON-RPC and PubSub), from the kernel's
/// ephemeral range, away from the validator's dynamic port range.
fn free_port_pair() -> Result<u16, String> {
    for _ in 0..64 {
        let first = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
            .map_err(|e| format!("cannot bind a free port: {e}"))?;
        let port = first.local_addr().map_err(|e| e.to_string())?.port();
        if port < u16::MAX && TcpListener::bind((Ipv4Addr::UNSPECIFIED, port + 1)).is_ok() {
            return Ok(port);
        }
    }
    Err("found no two free consecutive ports for JSON-RPC and PubSub".into())
}

fn setup_log(path: Option<&Path>) -> Result<(), String> {
    let mut builder = env_logger::Builder::from_env(
        env_logger::Env::new().default_filter_or("solana=info,agave=info,solana_metrics=warn"),
    );
    builder.format_timestamp_millis();
    if let Some(path) = path {
        let file = File::create(path)
            .map_err(|e| format!("cannot create the log {}: {e}", path.display()))?;
        builder.target(env_logger::Target::Pipe(Box::new(file)));
    }
    builder
        .try_init()
        .map_err(|e| format!("cannot set up logging: {e}"))
}

/// Removing a folder is only safe when this program made it: `--ledger`
/// pointed at some other folder by mistake must not lose it.
fn refuse_unless_ledger(dir: &Path) -> Result<(), String> {
    let mut entries =
        fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    // Written first of all by every start, before genesis.
    if entries.next().is_none() || dir.join("faucet-keypair.json").exists() {
        Ok(())
    } else {
        Err(format!(
            "{} is not empty and holds no curta-localnet ledger; refusing to remove it",
            dir.display()
        ))
    }
}

fn load_or_create_keypair(path: &Path) -> Result<Keypair, String> {
    if path.exists() {
        return read_keypair_file(path)
            .map_err(|e| format!("{} is not a keypair file: {e}", path.display()));
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let keypair = Keypair::new();
    write_keypair_file(&keypair, path)
        .map_err(|e| format!("cannot write the keypair {}: {e}", path.display()))?;
    Ok(keypair)
}

fn parse_programs(pairs: &[String]) -> Result<Vec<UpgradeableProgramInfo>, String> {
    pairs
        .chunks(2)
        .map(|pair| {
            let [address, so_path] = pair else {
                unreachable!("clap takes two values per --bpf-program")
            };
            Ok(UpgradeableProgramInfo {
                program_id: parse_address(address)?,
                loader: BPF_LOADER_UPGRADEABLE,
                upgrade_authority: Pubkey::default(),
                program_path: existing_file("--bpf-program program file", so_path)?,
            })
        })
        .collect()
}

/// `--account ADDRESS JSON_FILE` pairs, each file read as `solana account
/// --output json` writes one: `{"account": {"lamports", "data": [BASE64,
/// "base64"], "owner", "executable", "rentEpoch"}}` (its "pubkey" is
/// ignored: ADDRESS says where). Read here, not by the library's
/// `add_accounts_from_json_files`, which panics on an unreadable file or
/// an undecodable account instead of saying which.
fn parse_accounts(pairs: &[String]) -> Result<Vec<(Pubkey, AccountSharedData)>, String> {
    use base64::Engine;
    pairs
        .chunks(2)
        .map(|pair| {
            let [address, file] = pair else {
                unreachable!("clap takes two values per --account")
            };
            let address = address
                .parse::<Pubkey>()
                .map_err(|e| format!("--account address {address:?} is not an address: {e}"))?;
            let path = existing_file("--account JSON file", file)?;
            let bad = |why: String| format!("--account JSON file {file}: {why}");
            let text = fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
            let json: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
            let account = &json["account"];
            let lamports = account["lamports"]
                .as_u64()
                .ok_or_else(|| bad("no account.lamports".into()))?;
            let owner = account["owner"]
                .as_str()
                .and_then(|o| o.parse::<Pubkey>().ok())
                .ok_or_else(|| bad("no account.owner address".into()))?;
            let data = match account["data"].as_array().map(Vec::as_slice) {
                Some([data, encoding]) if encoding == "base64" => data
                    .as_str()
                    .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
                    .ok_or_else(|| bad("account.data[0] is not base64".into()))?,
                _ => return Err(bad("account.data is not [BASE64, \"base64\"]".into())),
            };
            let mut shared = AccountSharedData::new(lamports, data.len(), &owner);
            shared.set_data_from_slice(&data);
            shared.set_executable(account["executable"].as_bool().unwrap_or(false));
            shared.set_rent_epoch(account["rentEpoch"].as_u64().unwrap_or(u64::MAX));
            Ok((address, shared))
        })
        .collect()
}

fn parse_address(s: &str) -> Result<Pubkey, String> {
    if let Ok(pubkey) = s.parse::<Pubkey>() {
        return Ok(pubkey);
    }
    read_keypair_file(s).map(|k| k.pubkey()).map_err(|e| {
        format!("--bpf-program address {s:?} is neither an address nor a keypair file: {e}")
    })
}

/// `s` as a path, when a file is there: `what` names it for the error.
fn existing_file(what: &str, s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{what} {s} does not exist"))
    }
}

/// CARGO_TARGET_DIR when set, else the workspace's `target/`.
fn target_dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

fn absolute(p: PathBuf) -> Result<PathBuf, String> {
    std::path::absolute(&p).map_err(|e| format!("bad path {}: {e}", p.display()))
}

/// `DIR` -> `DIR.ext`, next to it.
fn sibling(dir: &Path, ext: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(ext);
    dir.with_file_name(name)
}

fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: plain libc calls on a local, zero-initialized sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn wait_signal(set: &libc::sigset_t) -> libc::c_int {
    let mut signal = 0;
    // SAFETY: `set` is initialized and its signals are blocked in every thread.
    while unsafe { libc::sigwait(set, &mut signal) } != 0 {}
    signal
}

fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
