//! `make demo`: converts stories260K, starts a local validator
//! (`curta-localnet`), and runs the `curta` commands a user would: deploy
//! the program through the upgradeable loader, upload the model, generate
//! a prompt one `turn` transaction at a time (the text printed as it
//! arrives, then the turns, compute units, fees, slots and time), and
//! stops the validator.
//!
//! `demo [PROMPT] [MAX_TOKENS]`, defaults "Once upon a time" and 12.

use std::process::{Command, ExitCode};
use std::time::Instant;

use curta_harness::curta::Curta;
use curta_harness::localnet::Localnet;
use curta_replay::models::{artifact, metadata};

fn main() -> ExitCode {
    match demo() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command with the terminal's stdout and stderr, echoing it first.
fn shell(mut cmd: Command, shown: &str) -> Result<(), String> {
    println!("\n$ {shown}");
    let status = cmd.status().map_err(|e| format!("{shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

fn demo() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let prompt = args
        .first()
        .cloned()
        .unwrap_or_else(|| "Once upon a time".into());
    let max_tokens = args.get(1).cloned().unwrap_or_else(|| "12".into());

    let dir = curta_replay::root().join("target/demo");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let started = Instant::now();
    let art = artifact("stories260K");
    let path = dir.join("stories260K.curta");
    std::fs::write(&path, &art[..]).map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "converted stories260K: {} ({} bytes in {} sections, {:.1} s)",
        path.display(),
        art.len(),
        metadata(&art).section_count(),
        started.elapsed().as_secs_f64()
    );

    let net = Localnet::start()?;
    println!(
        "local validator: {} (ready in {:.1} s; log {})",
        net.rpc_url(),
        net.started_in().as_secs_f64(),
        net.log_path().display()
    );
    let curta = Curta::new(&net, &dir.join(format!("run-{}", std::process::id())))?;
    let so = curta_replay::deploy_dir().join("curta_program.so");

    let mut deploy = Command::new(&curta.bin);
    deploy
        .args(["--url", &curta.url, "--keypair"])
        .arg(&curta.keypair)
        .arg("--state-dir")
        .arg(&curta.state_dir)
        .arg("deploy")
        .arg(&so)
        .arg("--program-keypair")
        .arg(&curta.program);
    shell(deploy, "curta deploy target/deploy/curta_program.so")?;

    let upload = curta.command(&["model", "upload", &path.to_string_lossy()]);
    let printed = shell_output(upload, "curta model upload target/demo/stories260K.curta")?;
    let model = printed
        .lines()
        .find_map(|l| l.strip_prefix("model: "))
        .ok_or("model upload printed no model")?
        .to_string();

    let generate = curta.command(&[
        "generate",
        "--model",
        &model,
        "--prompt",
        &prompt,
        "--max-tokens",
        &max_tokens,
    ]);
    shell(
        generate,
        &format!("curta generate --model {model} --prompt {prompt:?} --max-tokens {max_tokens}"),
    )?;

    let stopped = Instant::now();
    net.stop()?;
    println!(
        "\nstopped the validator ({:.1} s); the demo took {:.1} s",
        stopped.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs a command, echoing it and its stdout (stderr goes to the
/// terminal), and returns the stdout.
fn shell_output(mut cmd: Command, shown: &str) -> Result<String, String> {
    println!("\n$ {shown}");
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{shown}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{stdout}");
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{shown} failed ({})", out.status))
    }
}
