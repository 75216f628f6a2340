//! The `curta` command line as a process, against a `curta-localnet`: the
//! demo, the stories15M figures and the end-to-end tests run exactly the
//! commands a user types, and read their `--output json` output (or their
//! text, where a person reads it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use crate::localnet::{Localnet, BUILD_COMMAND};

/// `target/debug/curta` (under CARGO_TARGET_DIR when set); `CURTA_BIN`
/// overrides it.
pub fn binary_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CURTA_BIN") {
        return Ok(PathBuf::from(p));
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => curta_replay::root().join(dir),
        None => curta_replay::root().join("target"),
    };
    let path = target.join("debug/curta");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no curta at {}: build it with `{BUILD_COMMAND}`",
            path.display()
        ))
    }
}

/// `curta` pointed at one validator, one signer, one program and a state
/// folder of its own.
#[derive(Clone, Debug)]
pub struct Curta {
    pub bin: PathBuf,
    pub url: String,
    pub keypair: PathBuf,
    /// The program's keypair file (created by the first `deploy`).
    pub program: PathBuf,
    pub state_dir: PathBuf,
}

impl Curta {
    /// The validator's funded payer signs; `dir` holds the program keypair
    /// and the client's journal.
    pub fn new(net: &Localnet, dir: &Path) -> Result<Curta, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Curta {
            bin: binary_path()?,
            url: net.rpc_url().to_string(),
            keypair: net.payer_path().to_path_buf(),
            program: dir.join("program-keypair.json"),
            state_dir: dir.join("state"),
        })
    }

    fn base(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--url")
            .arg(&self.url)
            .arg("--keypair")
            .arg(&self.keypair)
            .arg("--state-dir")
            .arg(&self.state_dir)
            // Never the user's Solana CLI config.
            .env("HOME", self.state_dir.join("home"))
            .env_remove("CURTA_STATE_DIR");
        cmd
    }

    /// `curta ARGS` for the deployed program.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.base();
        cmd.arg("--program-id").arg(&self.program).args(args);
        cmd
    }

    /// `curta deploy SO`, creating the program keypair.
    pub fn deploy(&self, so: &Path) -> Result<Value, String> {
        let mut cmd = self.base();
        cmd.arg("deploy")
            .arg(so)
            .arg("--program-keypair")
            .arg(&self.program)
            .arg("--json");
        json_of(cmd, "curta deploy")
    }

    /// `curta --output json ARGS`: the JSON object it prints, or its error.
    pub fn json(&self, args: &[&str]) -> Result<Value, String> {
        let mut cmd = self.command(args);
        cmd.args(["--output", "json"]);
        json_of(cmd, &format!("curta {}", args.join(" ")))
    }

    /// `curta --output json ARGS` as a newcomer runs it outside the
    /// repository: no --program-id, and no program keypair to find.
    pub fn json_elsewhere(&self, args: &[&str]) -> Result<Value, String> {
        let mut cmd = self.base();
        cmd.current_dir(std::env::temp_dir())
            .args(args)
            .args(["--output", "json"]);
        json_of(cmd, &format!("curta {} (elsewhere)", args.join(" ")))
    }

    /// `curta ARGS`: what it prints on stdout for a person, or its error.
    pub fn text(&self, args: &[&str]) -> Result<String, String> {
        let what = format!("curta {}", args.join(" "));
        let (stdout, stderr, ok) = output_of(self.command(args), &what)?;
        match ok {
            true => Ok(stdout),
            false => Err(format!("{what} failed:\n{stderr}{stdout}")),
        }
    }

    /// `curta ARGS` with its progress piped: a child and the lines of its
    /// stderr as they come (one a turn, or a step, when stderr is not a
    /// terminal).
    pub fn spawn(&self, args: &[&str]) -> Result<(Child, mpsc::Receiver<String>), String> {
        let mut cmd = self.command(args);
        cmd.env("CURTA_PROGRESS_INTERVAL_MS", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok((child, rx))
    }
}

/// A finished command's stdout, stderr and whether it succeeded.
fn output_of(mut cmd: Command, what: &str) -> Result<(String, String, bool), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run: {e}"))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    ))
}

/// The one JSON object a command prints as its whole stdout (indented or
/// on one line), or its error.
fn json_of(cmd: Command, what: &str) -> Result<Value, String> {
    let (stdout, stderr, ok) = output_of(cmd, what)?;
    if !ok {
        return Err(format!("{what} failed:\n{stderr}{stdout}"));
    }
    serde_json::from_str(stdout.trim())
        .map_err(|e| format!("{what}: no JSON on stdout ({e}):\n{stdout}\n{stderr}"))
}
