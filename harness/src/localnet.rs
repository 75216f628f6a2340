//! A `curta-localnet` validator as a child process, for tests: free ports,
//! a fresh ledger under `target/localnet/instances/`, a funded payer, and
//! the whole process group stopped on drop.
//!
//! ```no_run
//! let net = curta_harness::localnet::Localnet::start().expect("localnet");
//! println!("{} {}", net.rpc_url(), net.payer_path().display());
//! ```
//!
//! [`Localnet::kill`] SIGKILLs the validator and keeps its ledger, and
//! [`Localnet::restart`] starts it again on that ledger and the same ports
//! (`curta-localnet --keep-ledger`), for tests of a validator that dies.
//!
//! Each instance takes a block of 50 ports in 20000..32000 (below the
//! kernel's ephemeral range), held by a lock file for its lifetime, so
//! validators of parallel tests and test processes never share a port: the
//! validator binds its TPU sockets with SO_REUSEPORT, and two validators on
//! one port would take each other's transactions.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use solana_keypair::{read_keypair_file, Keypair};

/// The command that builds `curta-localnet` with the workspace's one
/// dependency graph (any other package selection rebuilds much of it).
pub const BUILD_COMMAND: &str =
    "cargo build -p curta-replay -p curta-harness -p curta-client --bins --tests";

const PORT_BASE: u16 = 20_000;
const PORT_BLOCK: u16 = 50;
const PORT_BLOCKS: u16 = 240;
/// Of a block: the validator's dynamic range, then RPC, PubSub, faucet.
const DYNAMIC_PORTS: u16 = 40;

static INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// The compute-unit limits the validator's cost tracker applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLimits {
    pub block: u64,
    pub writable_account: u64,
    pub vote: u64,
}

impl BlockLimits {
    /// Today's writable-account limit, and the legacy one
    /// (`LocalnetBuilder::legacy_block_limits`).
    pub const WRITABLE_ACCOUNT: u64 = 40_000_000;
    pub const LEGACY_WRITABLE_ACCOUNT: u64 = 12_000_000;
}

/// A slot's length, seconds.
pub const SLOT_SECONDS: f64 = 0.4;

/// The least time `compute_units` of one run's turns can take on a cluster:
/// every turn writes the run's account, and a block lets one account's
/// writes take at most `writable_account` units.
pub fn floor_seconds(compute_units: f64, writable_account: u64) -> f64 {
    compute_units / writable_account as f64 * SLOT_SECONDS
}

/// How to start a [`Localnet`].
#[derive(Clone, Debug)]
pub struct LocalnetBuilder {
    binary: Option<PathBuf>,
    programs: Vec<(String, PathBuf)>,
    legacy_block_limits: bool,
    args: Vec<OsString>,
    ready_timeout: Duration,
}

impl Default for LocalnetBuilder {
    fn default() -> Self {
        LocalnetBuilder {
            binary: None,
            programs: Vec::new(),
            legacy_block_limits: false,
            args: Vec::new(),
            // A cold start takes seconds; parallel tests on two cores more.
            ready_timeout: Duration::from_secs(180),
        }
    }
}

impl LocalnetBuilder {
    /// The `curta-localnet` executable [default: [`binary_path`]]; tests
    /// of this package pass `env!("CARGO_BIN_EXE_curta-localnet")`.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Preload an SBF program at `address` (an address or a keypair file).
    pub fn bpf_program(mut self, address: impl Into<String>, so_path: impl Into<PathBuf>) -> Self {
        self.programs.push((address.into(), so_path.into()));
        self
    }

    /// 60M compute units per block and 12M per writable account instead
    /// of 100M and 40M (`--legacy-block-limits`).
    pub fn legacy_block_limits(mut self, on: bool) -> Self {
        self.legacy_block_limits = on;
        self
    }

    /// Any other `curta-localnet` flag.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    pub fn start(self) -> Result<Localnet, String> {
        Localnet::start_with(self)
    }
}

/// A running `curta-localnet`; dropping it stops the validator and removes
/// its folder (a panicking test keeps the log and says where).
pub struct Localnet {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    dir: PathBuf,
    ledger: PathBuf,
    log: PathBuf,
    payer: PathBuf,
    rpc_url: String,
    websocket_url: String,
    faucet_addr: SocketAddr,
    block_limits: Option<BlockLimits>,
    status: Vec<String>,
    stderr: Arc<Mutex<Vec<String>>>,
    started_in: Duration,
    keep_log: bool,
    /// The executable and its flags, for [`Localnet::restart`].
    binary: PathBuf,
    args: Vec<OsString>,
    ready_timeout: Duration,
    _ports: File,
}

impl Localnet {
    /// A validator with no program and today's block limits.
    pub fn start() -> Result<Localnet, String> {
        Self::builder().start()
    }

    pub fn builder() -> LocalnetBuilder {
        LocalnetBuilder::default()
    }

    pub fn rpc_url(&self) -> &str {
        &self.rpc_url
    }

    pub fn websocket_url(&self) -> &str {
        &self.websocket_url
    }

    pub fn faucet_addr(&self) -> SocketAddr {
        self.faucet_addr
    }

    /// A keypair file (Solana CLI JSON) funded with 500,000,000 SOL.
    pub fn payer_path(&self) -> &Path {
        &self.payer
    }

    pub fn payer(&self) -> Keypair {
        read_keypair_file(&self.payer)
            .unwrap_or_else(|e| panic!("payer keypair {}: {e}", self.payer.display()))
    }

    pub fn ledger_path(&self) -> &Path {
        &self.ledger
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// From the validator's `Block limits:` status line.
    pub fn block_limits(&self) -> Option<BlockLimits> {
        self.block_limits
    }

    /// The status lines the validator printed, `JSON RPC URL: ...` last.
    pub fn status(&self) -> &[String] {
        &self.status
    }

    /// From spawning the process to the RPC answering `getLatestBlockhash`.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the validator (SIGTERM to its process group, SIGKILL after
    /// 30 s) and returns how it exited.
    pub fn stop(mut self) -> Result<ExitStatus, String> {
        self.stop_child()
    }

    fn start_with(b: LocalnetBuilder) -> Result<Localnet, String> {
        let binary = match b.binary {
            Some(p) => p,
            None => binary_path()?,
        };
        if !binary.is_file() {
            return Err(missing_binary(&binary));
        }
        let instances = target_dir().join("localnet/instances");
        remove_stale_instances(&instances);
        let dir = instances.join(format!(
            "{}-{}",
            std::process::id(),
            INSTANCES.fetch_add(1, Ordering::SeqCst)
        ));
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let (ports, base) = claim_ports()?;
        let ledger = dir.join("ledger");
        let log = dir.join("ledger.log");
        let payer = dir.join("payer.json");

        let mut args: Vec<OsString> = vec![
            "--ledger".into(),
            ledger.clone().into(),
            "--log".into(),
            log.clone().into(),
            "--payer-keypair".into(),
            payer.clone().into(),
            "--dynamic-port-range".into(),
            format!("{}-{}", base, base + DYNAMIC_PORTS).into(),
            "--gossip-port".into(),
            "0".into(),
            "--rpc-port".into(),
            (base + DYNAMIC_PORTS).to_string().into(),
            "--faucet-port".into(),
            (base + DYNAMIC_PORTS + 2).to_string().into(),
            "--stop-on-stdin-close".into(),
        ];
        for (address, so) in &b.programs {
            args.extend(["--bpf-program".into(), address.into(), so.clone().into()]);
        }
        if b.legacy_block_limits {
            args.push("--legacy-block-limits".into());
        }
        args.extend(b.args);

        let mut net = Localnet {
            stdin: None,
            child: None,
            dir,
            ledger,
            log,
            payer,
            rpc_url: String::new(),
            websocket_url: String::new(),
            faucet_addr: SocketAddr::from((Ipv4Addr::LOCALHOST, base + DYNAMIC_PORTS + 2)),
            block_limits: None,
            status: Vec::new(),
            stderr: Arc::new(Mutex::new(Vec::new())),
            started_in: Duration::ZERO,
            keep_log: false,
            binary,
            args,
            ready_timeout: b.ready_timeout,
            _ports: ports,
        };
        match net.spawn(&[]) {
            Ok(()) => Ok(net),
            Err(what) => Err(net.fail(&what)),
        }
    }

    /// SIGKILLs the validator's process group, as a crash or a power cut
    /// would stop it: nothing is flushed or cleaned up, and the ledger is
    /// kept for [`Localnet::restart`].
    pub fn kill(&mut self) -> Result<ExitStatus, String> {
        let Some(mut child) = self.child.take() else {
            return Err("the validator was already stopped".into());
        };
        let group = child.id() as libc::pid_t;
        // SAFETY: kill(2) on the child's process group.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let status = child
            .wait()
            .map_err(|e| format!("cannot wait for the validator: {e}"));
        self.stdin.take();
        status
    }

    /// Starts the validator again after [`Localnet::kill`], on the same ledger, ports and payer
    /// (`--keep-ledger`: the chain goes on from the last slot it wrote, the
    /// genesis flags no longer apply). The RPC URL stays the same.
    pub fn restart(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Err("the validator is running: kill it first".into());
        }
        self.status.clear();
        let rpc_url = std::mem::take(&mut self.rpc_url);
        self.spawn(&["--keep-ledger"]).map_err(|what| {
            self.keep_log = true;
            format!(
                "curta-localnet, restarted on {}: {what}",
                self.ledger.display()
            )
        })?;
        if self.rpc_url != rpc_url {
            return Err(format!("restarted at {}, not {rpc_url}", self.rpc_url));
        }
        Ok(())
    }

    /// Spawns the process with the flags kept and `extra`, and waits for
    /// its status lines and its RPC; on failure, what went wrong.
    fn spawn(&mut self, extra: &[&str]) -> Result<(), String> {
        let mut cmd = Command::new(&self.binary);
        cmd.args(&self.args)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so stopping it reaches anything it started,
            // and a terminal's Ctrl-C reaches only the test, whose exit
            // closes the validator's stdin.
            .process_group(0);
        let spawned = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))?;

        let stderr = self.stderr.clone();
        {
            let pipe = child.stderr.take().expect("piped stderr");
            let tail = stderr;
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if tail.len() == 40 {
                        tail.remove(0);
                    }
                    tail.push(line);
                }
            });
        }
        let (lines, rx) = mpsc::channel();
        {
            let pipe = child.stdout.take().expect("piped stdout");
            // Keeps reading after start-up so the pipe never fills.
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = lines.send(line);
                }
            });
        }
        self.stdin = child.stdin.take();
        self.child = Some(child);

        let deadline = spawned + self.ready_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let done = self.read_status_line(&line);
                    self.status.push(line);
                    if done {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "printed no JSON RPC URL within {} s",
                        self.ready_timeout.as_secs()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("exited during start-up".into());
                }
            }
        }
        let rpc = rpc_addr(&self.rpc_url)?;
        loop {
            let health = rpc_call(rpc, "getHealth");
            let blockhash = rpc_call(rpc, "getLatestBlockhash");
            if matches!(&health, Ok(r) if r.contains("\"ok\""))
                && matches!(&blockhash, Ok(r) if r.contains("\"blockhash\""))
            {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "did not answer getHealth and getLatestBlockhash at {} (last: {health:?}, \
                     {blockhash:?})",
                    self.rpc_url
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.started_in = spawned.elapsed();
        Ok(())
    }

    /// Takes in one status line; true on the last (`JSON RPC URL`).
    fn read_status_line(&mut self, line: &str) -> bool {
        let Some((name, value)) = line.split_once(": ") else {
            return false;
        };
        match name {
            "Faucet address" => {
                if let Ok(addr) = value.parse() {
                    self.faucet_addr = addr;
                }
            }
            "WebSocket PubSub URL" => self.websocket_url = value.to_string(),
            "Block limits" => self.block_limits = parse_block_limits(value),
            "JSON RPC URL" => {
                self.rpc_url = value.to_string();
                return true;
            }
            _ => {}
        }
        false
    }

    /// Stops the validator and describes a failed start: its exit, output
    /// and the end of its log, which is kept.
    fn fail(mut self, what: &str) -> String {
        let exit = match self.stop_child() {
            Ok(status) => status.to_string(),
            Err(e) => e,
        };
        self.keep_log = true;
        let log = match fs::read_to_string(&self.log) {
            Ok(log) => {
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!(
                    "end of its log {}:\n  {}",
                    self.log.display(),
                    tail.join("\n  ")
                )
            }
            Err(_) => "no log".to_string(),
        };
        let stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        format!(
            "curta-localnet {what} ({exit})\nstdout:\n  {}\nstderr:\n  {}\n{log}",
            self.status.join("\n  "),
            stderr.join("\n  "),
        )
    }

    fn stop_child(&mut self) -> Result<ExitStatus, String> {
        let Some(mut child) = self.child.take() else {
            return Err("the validator was already stopped".into());
        };
        let group = child.id() as libc::pid_t;
        // SAFETY: kill(2) on the child's process group.
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    // SAFETY: as above.
                    unsafe { libc::kill(-group, libc::SIGKILL) };
                    break child.wait().map_err(|e| e.to_string());
                }
                Err(e) => break Err(format!("cannot wait for the validator: {e}")),
            }
        };
        // Whatever else is left in the group.
        // SAFETY: as above; ESRCH when the group is empty is fine.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        self.stdin.take();
        status
    }
}

impl Drop for Localnet {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.stop_child();
        }
        if (self.keep_log || std::thread::panicking()) && self.log.exists() {
            let _ = fs::remove_dir_all(&self.ledger);
            eprintln!("curta-localnet log kept: {}", self.log.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// `target/debug/curta-localnet`, under CARGO_TARGET_DIR when that is set;
/// CURTA_LOCALNET_BIN overrides it.
pub fn binary_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CURTA_LOCALNET_BIN") {
        return Ok(PathBuf::from(p));
    }
    let path = target_dir().join("debug/curta-localnet");
    if path.is_file() {
        Ok(path)
    } else {
        Err(missing_binary(&path))
    }
}

fn missing_binary(path: &Path) -> String {
    format!(
        "no curta-localnet at {}: build it with `{BUILD_COMMAND}` (or `make localnet`)",
        path.display()
    )
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => curta_replay::root().join(dir),
        None => curta_replay::root().join("target"),
    }
}

/// Folders of test processes that are gone (a killed `cargo test`).
fn remove_stale_instances(instances: &Path) {
    let Ok(entries) = fs::read_dir(instances) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.split('-').next());
        if let Some(pid) = pid {
            if !Path::new("/proc").join(pid).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Claims a free block of ports; the lock (in the temporary folder, so
/// every checkout on the machine shares it) lasts as long as the file.
fn claim_ports() -> Result<(File, u16), String> {
    // SAFETY: getuid(2) cannot fail.
    let uid = unsafe { libc::getuid() };
    let locks = std::env::temp_dir().join(format!("curta-localnet-ports-{uid}"));
    fs::create_dir_all(&locks).map_err(|e| format!("cannot create {}: {e}", locks.display()))?;
    let first =
        (std::process::id() as usize + INSTANCES.load(Ordering::SeqCst) * 7) % PORT_BLOCKS as usize;
    for i in 0..PORT_BLOCKS as usize {
        let block = ((first + i) % PORT_BLOCKS as usize) as u16;
        let base = PORT_BASE + block * PORT_BLOCK;
        let path = locks.join(format!("{base}.lock"));
        let Ok(file) = File::create(&path) else {
            continue;
        };
        if file.try_lock().is_err() {
            continue;
        }
        let rpc = base + DYNAMIC_PORTS;
        let free = [rpc, rpc + 1, rpc + 2]
            .iter()
            .all(|&p| TcpListener::bind((Ipv4Addr::UNSPECIFIED, p)).is_ok());
        if free {
            return Ok((file, base));
        }
    }
    Err(format!(
        "no free block of {PORT_BLOCK} ports in {PORT_BASE}..{}",
        PORT_BASE + PORT_BLOCKS * PORT_BLOCK
    ))
}

fn parse_block_limits(value: &str) -> Option<BlockLimits> {
    // "100000000 per block, 40000000 per writable account, 36000000 for votes"
    let mut numbers = value
        .split(", ")
        .map(|part| part.split(' ').next().and_then(|n| n.parse().ok()));
    Some(BlockLimits {
        block: numbers.next()??,
        writable_account: numbers.next()??,
        vote: numbers.next()??,
    })
}

fn rpc_addr(url: &str) -> Result<SocketAddr, String> {
    url.strip_prefix("http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("JSON RPC URL {url:?} is not http://IP:PORT"))
}

/// One JSON-RPC call without parameters over plain HTTP: no client crate,
/// so it works inside or outside any async runtime.
fn rpc_call(addr: SocketAddr, method: &str) -> Result<String, String> {
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: \
         {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| format!("send {method}: {e}"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| format!("read {method}: {e}"))?;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_limits_line() {
        assert_eq!(
            parse_block_limits(
                "100000000 per block, 40000000 per writable account, 36000000 for votes"
            ),
            Some(BlockLimits {
                block: 100_000_000,
                writable_account: 40_000_000,
                vote: 36_000_000
            })
        );
        assert_eq!(parse_block_limits("soon"), None);
    }
}
