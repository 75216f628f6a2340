//! The `curta` command line: flags as the Solana CLI spells them, one
//! subcommand per task, human output or `--json`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use curta_core::format::ChargeTable;
use serde_json::{json, Value};
use solana_keypair::{write_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::{self, CliConfig};
use crate::crank::{self, LimitPolicy, TurnRecord};
use crate::deploy;
use crate::errors::{Error, Result};
use crate::journal;
use crate::model::{self, ModelInfo};
use crate::output::{hex, print_json, sol, thousands};
use crate::params::{self, Params};
use crate::progress::{self, Progress};
use crate::quote::{self, Prices};
use crate::rpc::Cluster;
use crate::runs;
use crate::settings;
use crate::upload;

#[derive(Parser, Debug)]
#[command(
    name = "curta",
    version,
    about = "Deploy the curta program, upload models, and run LLM inference on Solana one \
             transaction at a time.",
    after_help = "Defaults come from the Solana CLI's config (~/.config/solana/cli/config.yml) when \
                  there is one. docs/client.md describes every command."
)]
pub struct Cli {
    /// RPC URL or moniker: localhost, devnet, testnet, mainnet-beta (or l, d, t, m)
    /// [default: the Solana CLI config's, else localhost]
    #[arg(short = 'u', long, global = true, value_name = "URL_OR_MONIKER")]
    url: Option<String>,
    /// The signer and fee payer: a keypair file [default: the Solana CLI
    /// config's, else ~/.config/solana/id.json]
    #[arg(short = 'k', long, global = true, value_name = "KEYPAIR")]
    keypair: Option<PathBuf>,
    /// The curta program's address, or its keypair file [default: the
    /// address of target/deploy/curta_program-keypair.json]
    #[arg(long, global = true, value_name = "ADDRESS")]
    program_id: Option<String>,
    /// processed, confirmed or finalized [default: confirmed]
    #[arg(long, global = true, value_name = "LEVEL")]
    commitment: Option<String>,
    /// Print one JSON object on stdout instead of text
    #[arg(long, global = true)]
    json: bool,
    /// Where the client journals in-flight transactions, so a command run
    /// again after a crash never pays twice [default: $CURTA_STATE_DIR,
    /// else $XDG_STATE_HOME/curta, else ~/.local/state/curta]
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Transactions in flight at once when writing weights or the program
    #[arg(long, global = true, default_value_t = 256, value_name = "N")]
    in_flight: usize,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Deploy (or upgrade) the program through the upgradeable loader; prints its SHA-256
    Deploy {
        /// The program [default: target/deploy/curta_program.so]
        so: Option<PathBuf>,
        /// The program's keypair, for a first deploy [default:
        /// target/deploy/curta_program-keypair.json, created if missing]
        #[arg(long, value_name = "KEYPAIR")]
        program_keypair: Option<PathBuf>,
    },
    /// The deployed program
    #[command(subcommand)]
    Program(ProgramCommand),
    /// The program's settings (a config account)
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Models: upload, show, close
    #[command(subcommand)]
    Model(ModelCommand),
    /// What a run costs: turns, transactions, compute units, fees, rent, royalty
    Quote {
        /// A .curta artifact (priced offline) or a model's address
        target: String,
        #[command(flatten)]
        run: RunArgs,
        /// Royalty per token, lamports (for an artifact; a model has its own)
        #[arg(long, default_value_t = 0)]
        royalty: u64,
        /// Turn allowance (for an artifact; a model's config has its own)
        #[arg(long, default_value_t = curta_core::planner::CHARGES.allowance)]
        allowance: u32,
        #[command(flatten)]
        crank: CrankArgs,
    },
    /// Runs: open, crank, show, close
    #[command(subcommand)]
    Run(RunCommand),
    /// Open a run, crank it to the end printing the text as it arrives, close it
    Generate {
        /// The model's address
        #[arg(long)]
        model: String,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        crank: CrankArgs,
        /// The model's artifact, to replay turns without fetching the weights
        #[arg(long, value_name = "ARTIFACT")]
        artifact: Option<PathBuf>,
        /// Tells apart runs of the same model and parameters
        #[arg(long, default_value = "")]
        label: String,
        /// Leave the run open (its state readable with `run show`)
        #[arg(long)]
        keep: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ProgramCommand {
    /// Compare the deployed program with a local build, byte for byte
    Verify {
        /// [default: target/deploy/curta_program.so]
        so: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Create the signer's config account (or show it, if it exists)
    Init {
        /// Turn allowance in compute units
        #[arg(long, default_value_t = curta_core::planner::CHARGES.allowance)]
        allowance: u32,
    },
    /// Show a config account [default: the signer's]
    Show { config: Option<String> },
    /// Change the turn allowance (the admin signs)
    SetAllowance {
        allowance: u32,
        #[arg(long)]
        config: Option<String>,
    },
    /// Hand the config to a new admin (both sign)
    SetAdmin {
        /// The new admin's keypair file
        new_admin: PathBuf,
        #[arg(long)]
        config: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum ModelCommand {
    /// Upload an artifact (or a llama2.c checkpoint with --tokenizer); resumes an interrupted upload
    Upload {
        artifact: PathBuf,
        /// The tokenizer, to convert a llama2.c checkpoint
        #[arg(long)]
        tokenizer: Option<PathBuf>,
        /// The table the model's turns are planned with: `specification` (the default) or
        /// `measured` (fewer, fuller turns); an artifact's must match
        #[arg(long, value_parser = parse_charges)]
        charges: Option<ChargeTable>,
        /// Royalty per generated token, lamports
        #[arg(long, default_value_t = 0)]
        royalty: u64,
        /// The config account [default: the signer's, created if missing]
        #[arg(long)]
        config: Option<String>,
    },
    /// Show a model
    Show { model: String },
    /// Close a model's weight accounts and the model (its runs can then only be closed)
    Close { model: String },
}

#[derive(Subcommand, Debug)]
enum RunCommand {
    /// Open a run (or find it open); prints its address
    Open {
        #[arg(long)]
        model: String,
        #[command(flatten)]
        run: RunArgs,
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Crank a run to its end; resumes where it stopped
    Crank {
        run: String,
        #[command(flatten)]
        crank: CrankArgs,
        #[arg(long, value_name = "ARTIFACT")]
        artifact: Option<PathBuf>,
    },
    /// Show a run
    Show { run: String },
    /// Close a run, its rent and unspent escrow back to the opener
    Close { run: String },
}

#[derive(Args, Debug, Clone)]
struct RunArgs {
    /// The prompt
    #[arg(long, conflicts_with = "prompt_file")]
    prompt: Option<String>,
    /// The prompt, from a file
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// Tokens to generate
    #[arg(long)]
    max_tokens: u32,
    /// 0 samples the likeliest token; above, a draw (at most 16)
    #[arg(long, default_value = "0")]
    temperature: String,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Args, Debug, Clone, Copy)]
struct CrankArgs {
    /// Turns in flight at once
    #[arg(long, default_value_t = 32)]
    window: usize,
    /// The compute-unit limit of each turn: uniform (one per run), exact
    /// (each turn's estimate) or a number
    #[arg(long, default_value = "uniform", value_parser = parse_limits)]
    cu_limit: LimitPolicy,
    /// Every turn the same priority fee (none) instead of a ramp falling by
    /// 4 lamports a turn; the scheduler then often runs turns in flight out
    /// of order, and they fail (StaleTurn) and are sent again
    #[arg(long)]
    no_priority_ramp: bool,
}

fn parse_limits(s: &str) -> std::result::Result<LimitPolicy, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

fn parse_charges(s: &str) -> std::result::Result<ChargeTable, String> {
    ChargeTable::from_name(s)
        .ok_or_else(|| format!("{s}: the charge tables are `specification` and `measured`"))
}

impl CrankArgs {
    fn options(&self) -> crank::Options {
        crank::Options {
            window: self.window,
            limits: self.cu_limit,
            priority_ramp: !self.no_priority_ramp,
        }
    }
}

impl RunArgs {
    fn params(&self) -> Result<Params> {
        let prompt = match (&self.prompt, &self.prompt_file) {
            (Some(p), None) => p.as_bytes().to_vec(),
            (None, Some(f)) => std::fs::read(f)
                .map_err(|e| Error::new(format!("cannot read {}: {e}", f.display())))?,
            _ => bail!("give the prompt with --prompt or --prompt-file"),
        };
        Ok(Params {
            prompt,
            max_tokens: self.max_tokens,
            temperature_q16: params::temperature_q16(&self.temperature)?,
            seed: self.seed,
        })
    }
}

/// Parses the command line and runs it; errors are printed in words.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The resolved global options.
struct Globals {
    url: String,
    keypair: PathBuf,
    commitment: String,
    state_dir: PathBuf,
    json: bool,
    in_flight: usize,
}

fn globals(cli: &Cli) -> Result<Globals> {
    let config = CliConfig::load();
    let url = cluster::resolve_url(
        cli.url
            .as_deref()
            .or(config.json_rpc_url.as_deref())
            .unwrap_or("localhost"),
    )?;
    Ok(Globals {
        url,
        keypair: cli
            .keypair
            .clone()
            .or(config.keypair_path)
            .unwrap_or_else(cluster::default_keypair_path),
        commitment: cli
            .commitment
            .clone()
            .or(config.commitment)
            .unwrap_or_else(|| "confirmed".into()),
        state_dir: cli
            .state_dir
            .clone()
            .unwrap_or_else(journal::default_state_dir),
        json: cli.json,
        in_flight: cli.in_flight.max(1),
    })
}

/// The program id: `--program-id` (an address or a keypair file), else
/// the program keypair file's address.
fn program_id(cli: &Cli) -> Result<Pubkey> {
    if let Some(p) = &cli.program_id {
        return cluster::address_or_keypair(p, "--program-id");
    }
    let path = Path::new(cluster::PROGRAM_KEYPAIR);
    if path.is_file() {
        return Ok(cluster::load_keypair(path, "program")?.pubkey());
    }
    bail!(
        "no program id: give --program-id, or run from the repository after `curta deploy` (which \
         creates {})",
        cluster::PROGRAM_KEYPAIR
    )
}

async fn connect(g: &Globals, program_id: Pubkey) -> Result<Cluster> {
    let commitment = cluster::parse_commitment(&g.commitment)?;
    let payer = cluster::load_keypair(&g.keypair, "signer")?;
    let c = Cluster::connect(g.url.clone(), commitment, payer, program_id, &g.state_dir).await?;
    // Whatever an interrupted curta left in flight lands or expires first.
    c.journal.settle(&c).await?;
    Ok(c)
}

fn addr(text: &str, what: &str) -> Result<Pubkey> {
    cluster::parse_address(text, what)
}

async fn run(cli: Cli) -> Result<()> {
    let g = globals(&cli)?;
    let result = dispatch(&cli, &g).await;
    result
}

async fn dispatch(cli: &Cli, g: &Globals) -> Result<()> {
    match &cli.command {
        Command::Deploy {
            so,
            program_keypair,
        } => {
            let so_path = so
                .clone()
                .unwrap_or_else(|| PathBuf::from(cluster::PROGRAM_SO));
            let bytes = std::fs::read(&so_path).map_err(|e| {
                Error::new(format!(
                    "cannot read {}: {e} (build it with `make build-sbf`)",
                    so_path.display()
                ))
            })?;
            let (keypair, id) = program_keypair_for_deploy(cli, program_keypair.as_deref())?;
            let c = connect(g, id).await?;
            let d = deploy::deploy(&c, &bytes, keypair.as_ref(), g.in_flight).await?;
            c.journal.close();
            if g.json {
                print_json(&json!({
                    "program_id": d.program_id.to_string(),
                    "sha256": hex(&d.so_sha256),
                    "bytes": d.so_len,
                    "action": d.action,
                    "buffer": d.buffer.map(|b| b.to_string()),
                    "bytes_written": d.bytes_written,
                    "transactions": d.summary.transactions,
                    "fees": d.summary.fees,
                    "seconds": d.seconds,
                }));
            } else {
                println!("program id: {}", d.program_id);
                println!("sha256: {}", hex(&d.so_sha256));
                println!(
                    "{} ({} bytes; {} transactions, fees {}, {:.1} s)",
                    d.action,
                    thousands(d.so_len as u64),
                    d.summary.transactions,
                    sol(d.summary.fees),
                    d.seconds
                );
            }
            Ok(())
        }
        Command::Program(ProgramCommand::Verify { so }) => {
            let so_path = so
                .clone()
                .unwrap_or_else(|| PathBuf::from(cluster::PROGRAM_SO));
            let bytes = std::fs::read(&so_path)
                .map_err(|e| Error::new(format!("cannot read {}: {e}", so_path.display())))?;
            let c = connect(g, program_id(cli)?).await?;
            let Some(p) = deploy::read_program(&c, &c.program_id).await? else {
                bail!("there is no program at {} on {}", c.program_id, c.url);
            };
            let cmp = deploy::compare(&p.bytes, &bytes);
            if g.json {
                print_json(&json!({
                    "program_id": c.program_id.to_string(),
                    "equal": cmp.equal,
                    "deployed_sha256": hex(&cmp.deployed_sha256),
                    "local_sha256": hex(&cmp.local_sha256),
                    "deployed_capacity": cmp.deployed_capacity,
                    "local_len": cmp.local_len,
                    "first_difference": cmp.first_difference,
                    "differing_bytes": cmp.differing_bytes,
                    "upgrade_authority": p.authority.map(|a| a.to_string()),
                    "last_deployed_slot": p.slot,
                }));
            } else {
                println!(
                    "program {} ({}): {}",
                    c.program_id,
                    so_path.display(),
                    cmp.describe()
                );
            }
            if cmp.equal {
                Ok(())
            } else {
                Err(Error::new("the deployed program is not the local build"))
            }
        }
        Command::Config(cmd) => config_command(cli, g, cmd).await,
        Command::Model(cmd) => model_command(cli, g, cmd).await,
        Command::Quote {
            target,
            run,
            royalty,
            allowance,
            crank,
        } => quote_command(cli, g, target, run, *royalty, *allowance, crank).await,
        Command::Run(cmd) => run_command(cli, g, cmd).await,
        Command::Generate {
            model,
            run,
            crank,
            artifact,
            label,
            keep,
        } => {
            let c = connect(g, program_id(cli)?).await?;
            let model = model::read_model(&c, &addr(model, "--model")?).await?;
            let local = artifact
                .as_deref()
                .map(|p| Artifact::load(p, None))
                .transpose()?;
            generate(&c, g, &model, &run.params()?, crank, local, label, *keep).await
        }
    }
}

/// The program keypair and id a deploy uses: `--program-keypair`, else
/// the default file (created when missing and no --program-id is given).
fn program_keypair_for_deploy(cli: &Cli, path: Option<&Path>) -> Result<(Option<Keypair>, Pubkey)> {
    let default = Path::new(cluster::PROGRAM_KEYPAIR);
    let path = path.unwrap_or(default);
    let keypair = if path.is_file() {
        Some(cluster::load_keypair(path, "program")?)
    } else if cli.program_id.is_none() {
        let k = Keypair::new();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))?;
        }
        write_keypair_file(&k, path)
            .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("created the program keypair {}", path.display());
        Some(k)
    } else {
        None
    };
    let id = match &cli.program_id {
        Some(p) => cluster::address_or_keypair(p, "--program-id")?,
        None => keypair
            .as_ref()
            .map(|k| k.pubkey())
            .ok_or_else(|| Error::new("no program id"))?,
    };
    Ok((keypair, id))
}

fn config_json(c: &model::ConfigInfo) -> Value {
    json!({
        "config": c.address.to_string(),
        "admin": c.admin.to_string(),
        "allowance": c.allowance,
    })
}

fn print_config(g: &Globals, c: &model::ConfigInfo, note: &str) {
    if g.json {
        print_json(&config_json(c));
    } else {
        println!("config: {}{note}", c.address);
        println!("admin: {}", c.admin);
        println!(
            "turn allowance: {} compute units",
            thousands(c.allowance as u64)
        );
    }
}

async fn config_command(cli: &Cli, g: &Globals, cmd: &ConfigCommand) -> Result<()> {
    let c = connect(g, program_id(cli)?).await?;
    let which = |given: &Option<String>| -> Result<Pubkey> {
        match given {
            Some(a) => addr(a, "config"),
            None => Ok(settings::default_config(&c)),
        }
    };
    match cmd {
        ConfigCommand::Init { allowance } => {
            let (info, created) = settings::init(&c, *allowance).await?;
            c.journal.close();
            print_config(g, &info, if created { " (created)" } else { " (exists)" });
        }
        ConfigCommand::Show { config } => {
            let info = model::read_config(&c, &which(config)?).await?;
            print_config(g, &info, "");
        }
        ConfigCommand::SetAllowance { allowance, config } => {
            let info = settings::set_allowance(&c, &which(config)?, *allowance).await?;
            c.journal.close();
            print_config(g, &info, "");
        }
        ConfigCommand::SetAdmin { new_admin, config } => {
            let new_admin = cluster::load_keypair(new_admin, "new admin")?;
            let info = settings::set_admin(&c, &which(config)?, &new_admin).await?;
            c.journal.close();
            print_config(g, &info, "");
        }
    }
    Ok(())
}

fn model_json(m: &ModelInfo) -> Value {
    let sections: Vec<Value> = m
        .sections
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "index": i,
                "weight": s.weight.map(|w| w.to_string()),
                "length": s.len,
                "digest": s.digest.map(|d| hex(&d)),
            })
        })
        .collect();
    let c = m.config;
    json!({
        "model": m.keys.model.to_string(),
        "config_account": m.keys.config_account.to_string(),
        "owner": m.keys.owner.to_string(),
        "royalty": m.royalty,
        "status": m.status_name(),
        "config": {
            "dim": c.dim, "hidden_dim": c.hidden_dim, "n_layers": c.n_layers,
            "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads,
            "vocab_size": c.vocab_size, "seq_len": c.seq_len,
        },
        "shared_classifier": m.flags & curta_core::format::FLAG_SHARED_CLASSIFIER != 0,
        "charges": c.charges.name(),
        "bound": m.bound,
        "sealed_sections": m.sealed_count,
        "sections": sections,
    })
}

async fn model_command(cli: &Cli, g: &Globals, cmd: &ModelCommand) -> Result<()> {
    // An upload's artifact is read (and checked) before anything else.
    let local = match cmd {
        ModelCommand::Upload {
            artifact,
            tokenizer,
            charges,
            ..
        } => Some(Artifact::load_with(
            artifact,
            tokenizer.as_deref(),
            *charges,
        )?),
        _ => None,
    };
    let c = connect(g, program_id(cli)?).await?;
    match cmd {
        ModelCommand::Upload {
            royalty, config, ..
        } => {
            let a = local.ok_or_else(|| Error::new("no artifact"))?;
            let config = match config {
                Some(text) => addr(text, "--config")?,
                None => {
                    let (info, created) =
                        settings::init(&c, curta_core::planner::CHARGES.allowance).await?;
                    if created {
                        eprintln!(
                            "created the signer's config {} (allowance {})",
                            info.address,
                            thousands(info.allowance as u64)
                        );
                    }
                    info.address
                }
            };
            let u = upload::upload(&c, &a, &config, *royalty, g.in_flight).await?;
            c.journal.close();
            if g.json {
                print_json(&json!({
                    "model": u.model.to_string(),
                    "config": u.config.to_string(),
                    "artifact_sha256": a.sha256_hex(),
                    "artifact_len": u.artifact_len,
                    "sections": u.sections,
                    "already_sealed": u.already,
                    "bytes_written": u.bytes_written,
                    "transactions": u.summary.transactions,
                    "fees": u.summary.fees,
                    "seconds": u.seconds,
                }));
            } else {
                println!("model: {}", u.model);
                println!(
                    "{} ({} bytes in {} sections; {} bytes written in {} transactions, fees {}, \
                     {:.1} s)",
                    if u.already {
                        "already sealed"
                    } else {
                        "sealed"
                    },
                    thousands(u.artifact_len as u64),
                    u.sections,
                    thousands(u.bytes_written),
                    u.summary.transactions,
                    sol(u.summary.fees),
                    u.seconds
                );
            }
        }
        ModelCommand::Show { model } => {
            let m = model::read_model(&c, &addr(model, "model")?).await?;
            if g.json {
                print_json(&model_json(&m));
            } else {
                let cfg = m.config;
                println!("model: {}", m.keys.model);
                println!("status: {}", m.status_name());
                println!("owner: {}", m.keys.owner);
                println!("config account: {}", m.keys.config_account);
                println!("royalty: {} lamports per token", thousands(m.royalty));
                println!(
                    "configuration: dim {} hidden {} layers {} heads {} kv heads {} vocab {} context {}",
                    cfg.dim, cfg.hidden_dim, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads,
                    cfg.vocab_size, cfg.seq_len
                );
                println!("charges: the {} table", cfg.charges.name());
                for (i, s) in m.sections.iter().enumerate() {
                    println!(
                        "section {i}: {} bytes, {}, {}",
                        thousands(s.len),
                        s.weight.map_or("unbound".to_string(), |w| w.to_string()),
                        s.digest
                            .map_or("not sealed".to_string(), |d| format!("sealed {}", hex(&d)))
                    );
                }
            }
        }
        ModelCommand::Close { model } => {
            let key = addr(model, "model")?;
            let m = model::read_model(&c, &key).await?;
            if m.keys.owner != c.payer_key() {
                bail!("model {key} is owned by {}, not the signer", m.keys.owner);
            }
            let mut recovered = 0;
            let mut transactions = 0;
            for (i, s) in m.sections.iter().enumerate() {
                let Some(w) = s.weight else { continue };
                recovered += c.account(&w).await?.map_or(0, |a| a.lamports);
                let ix = crate::instructions::close_weight(&c.program_id, &key, &w, &c.payer_key());
                c.send_and_confirm(
                    &format!("closing section {i}'s weight account"),
                    &[ix],
                    &[],
                    true,
                )
                .await?;
                transactions += 1;
            }
            recovered += c.account(&key).await?.map_or(0, |a| a.lamports);
            let ix = crate::instructions::close_model(&c.program_id, &key, &c.payer_key());
            c.send_and_confirm("closing the model", &[ix], &[], true)
                .await?;
            transactions += 1;
            c.journal.close();
            if g.json {
                print_json(
                    &json!({"model": key.to_string(), "recovered": recovered, "transactions": transactions}),
                );
            } else {
                println!("closed model {key}: {} back to the owner", sol(recovered));
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn quote_command(
    cli: &Cli,
    g: &Globals,
    target: &str,
    run: &RunArgs,
    royalty: u64,
    allowance: u32,
    crank: &CrankArgs,
) -> Result<()> {
    let params = run.params()?;
    let path = Path::new(target);
    let (artifact, prices, rent, what) = if path.is_file() {
        let a = Artifact::load(path, None)?;
        settings::check(allowance)?;
        let prices = Prices {
            allowance,
            royalty,
            lamports_per_signature: 5_000,
            limits: crank.cu_limit,
            priority_ramp: !crank.no_priority_ramp,
            window: crank.window,
        };
        params.check(&a.metadata().config)?;
        let rent = quote::default_rent(quote::account_len(&a, &params.as_run_params())?);
        (a, prices, rent, format!("artifact {target}"))
    } else {
        let key = cluster::parse_address(target, "the quote's target").map_err(|_| {
            Error::new(format!(
                "{target:?} is neither a file nor a model's address"
            ))
        })?;
        let c = connect(g, program_id(cli)?).await?;
        let m = model::read_model(&c, &key).await?;
        let a = model::fetch_artifact(&c, &m).await?;
        params.check(&m.config)?;
        let prices = Prices {
            allowance: model::read_config(&c, &m.keys.config_account)
                .await?
                .allowance,
            royalty: m.royalty,
            lamports_per_signature: c.lamports_per_signature().await?,
            limits: crank.cu_limit,
            priority_ramp: !crank.no_priority_ramp,
            window: crank.window,
        };
        let rent = c
            .rent(quote::account_len(&a, &params.as_run_params())?)
            .await?;
        (a, prices, rent, format!("model {key}"))
    };
    let q = quote::quote(&artifact, &params.as_run_params(), &prices, rent)?;
    if g.json {
        print_json(&json!({
            "turns": q.turns,
            "turns_at_most": q.turns_at_most,
            "tokens": q.tokens,
            "transactions": q.transactions,
            "open_transactions": q.open_transactions,
            "signatures": q.signatures,
            "cu_requested": q.cu_requested,
            "cu_estimated": q.cu_estimated,
            "cu_limit": q.cu_limit_max,
            "base_fees": q.base_fees,
            "priority_fees": q.priority_fees,
            "fees": q.fees(),
            "account_len": q.account_len,
            "rent": q.rent,
            "escrow": q.escrow,
            "royalty_paid": q.royalty_paid,
            "text": String::from_utf8_lossy(&q.text),
        }));
    } else {
        println!(
            "{what}, {} tokens at temperature {}:",
            params.max_tokens,
            params::temperature_text(params.temperature_q16)
        );
        println!(
            "turns: {} ({} at most, without an early end token)",
            q.turns, q.turns_at_most
        );
        println!(
            "transactions: {} ({} to open, {} turns, 1 to close)",
            q.transactions, q.open_transactions, q.turns
        );
        println!(
            "compute units: {} asked ({} per turn at most), {} estimated",
            thousands(q.cu_requested),
            thousands(q.cu_limit_max as u64),
            thousands(q.cu_estimated)
        );
        println!(
            "fees: {} ({} signatures; priority {})",
            sol(q.fees()),
            q.signatures,
            sol(q.priority_fees)
        );
        println!(
            "rent deposit: {} for the {}-byte run account, returned when it closes",
            sol(q.rent),
            thousands(q.account_len as u64)
        );
        println!(
            "royalty: {} escrowed, {} paid for {} tokens",
            sol(q.escrow),
            sol(q.royalty_paid),
            q.tokens
        );
    }
    Ok(())
}

async fn run_command(cli: &Cli, g: &Globals, cmd: &RunCommand) -> Result<()> {
    let c = connect(g, program_id(cli)?).await?;
    match cmd {
        RunCommand::Open { model, run, label } => {
            let m = model::read_model(&c, &addr(model, "--model")?).await?;
            let o = runs::open(&c, &m, &run.params()?, label).await?;
            c.journal.close();
            if g.json {
                print_json(&json!({
                    "run": o.run.to_string(),
                    "opened_now": o.opened_now,
                    "account_len": o.account_len,
                    "deposit": o.deposit,
                    "transactions": o.summary.transactions,
                    "fees": o.summary.fees,
                }));
            } else {
                println!("run: {}", o.run);
                if !o.opened_now {
                    println!("(open already)");
                }
            }
        }
        RunCommand::Crank {
            run,
            crank,
            artifact,
        } => {
            let key = addr(run, "run")?;
            let local = artifact
                .as_deref()
                .map(|p| Artifact::load(p, None))
                .transpose()?;
            let ctx = crank::context(&c, &key, local).await?;
            let started = Instant::now();
            let out = crank_with_progress(&c, &ctx, crank, false).await?;
            c.journal.close();
            report_crank(g, &out, started.elapsed().as_secs_f64(), None);
        }
        RunCommand::Show { run } => {
            let (v, _) = runs::show(&c, &addr(run, "run")?).await?;
            if g.json {
                print_json(&json!({
                    "run": v.run.to_string(),
                    "model": v.model.to_string(),
                    "opener": v.opener.to_string(),
                    "lamports": v.lamports,
                    "royalty": v.royalty,
                    "deposited": v.deposited,
                    "escrow": v.escrow,
                    "paid": v.paid,
                    "prompt": String::from_utf8_lossy(&v.prompt),
                    "max_tokens": v.max_tokens,
                    "temperature_q16": v.temperature_q16,
                    "seed": v.seed,
                    "phase": v.info.phase as u32,
                    "turns": v.info.turns,
                    "generated": v.info.generated,
                    "complete": v.info.complete,
                    "text": String::from_utf8_lossy(&v.text),
                    "text_hex": hex(&v.text),
                }));
            } else {
                println!("run: {}", v.run);
                println!("model: {}", v.model);
                println!("opener: {}", v.opener);
                println!(
                    "{}: {} turns, {} of {} tokens",
                    if v.info.complete {
                        "complete"
                    } else {
                        "in progress"
                    },
                    v.info.turns,
                    v.info.generated,
                    v.max_tokens
                );
                println!("prompt: {:?}", String::from_utf8_lossy(&v.prompt));
                println!("text: {:?}", String::from_utf8_lossy(&v.text));
                println!(
                    "royalty: {} lamports per token; {} paid, {} escrowed",
                    v.royalty,
                    sol(v.paid),
                    sol(v.escrow)
                );
            }
        }
        RunCommand::Close { run } => {
            let key = addr(run, "run")?;
            let (recovered, _) = runs::close(&c, &key).await?;
            c.journal.close();
            if g.json {
                print_json(&json!({"run": key.to_string(), "recovered": recovered}));
            } else {
                println!("closed run {key}: {} back to the opener", sol(recovered));
            }
        }
    }
    Ok(())
}

/// Cranks with a progress bar (or a line per turn when stderr is not a
/// terminal); `stream` prints the text to stdout as it arrives instead.
async fn crank_with_progress(
    c: &Cluster,
    ctx: &crank::RunContext,
    args: &CrankArgs,
    stream: bool,
) -> Result<crank::Cranked> {
    let info = curta_core::StateInfo::read(&ctx.state)?;
    let total = crate::replay::replay(&ctx.artifact, &ctx.state, ctx.allowance)?
        .steps
        .len() as u64;
    let first = info.turns;
    let bar = (!stream && progress::interactive()).then(|| Progress::new("turns", total, "turns"));
    // A line a turn when stderr is not a terminal, unless the text itself
    // streams (the lines would cut it up where both go to one place).
    let plain = !progress::interactive() && !stream;
    crank::crank(c, ctx, args.options(), |t: &TurnRecord| {
        if let Some(b) = &bar {
            b.inc(1);
        }
        if plain {
            eprintln!(
                "turn {} ({}/{}) landed in slot {}: {} compute units",
                t.turn,
                t.turn - first,
                total,
                t.slot,
                thousands(t.program_cu)
            );
        }
        if stream {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&t.text);
            let _ = out.flush();
        }
    })
    .await
}

fn turns_json(out: &crank::Cranked) -> Vec<Value> {
    out.turns
        .iter()
        .map(|t| {
            json!({
                "turn": t.turn,
                "signature": t.signature.to_string(),
                "slot": t.slot,
                "cu_limit": t.cu_limit,
                "estimated_cu": t.estimated_cu,
                "program_cu": t.program_cu,
                "consumed_cu": t.consumed_cu,
                "fee": t.fee,
                "generated": t.generated,
                "tokens": t.tokens,
                "text_hex": hex(&t.text),
                "state_sha256": hex(&t.state_sha256),
            })
        })
        .collect()
}

fn crank_json(out: &crank::Cranked) -> Value {
    let per_slot = out.turns_per_slot();
    json!({
        "run": out.run.to_string(),
        "model": out.model.to_string(),
        "turns_before": out.turns_before,
        "turns": turns_json(out),
        "failed": out.failed.iter().map(|f| json!({
            "turn": f.turn, "signature": f.signature.to_string(), "slot": f.slot,
            "fee": f.fee, "error": f.error,
        })).collect::<Vec<_>>(),
        "turns_by_others": out.turns_by_others,
        "transactions": out.transactions(),
        "fees": out.fees(),
        "program_cu": out.program_cu(),
        "turns_per_slot": per_slot.iter().map(|(s, n)| json!([s, n])).collect::<Vec<_>>(),
        "final_state_sha256": hex(&out.final_state_sha256),
        "text_hex": hex(&out.text),
        "seconds": out.seconds,
    })
}

/// The crank's figures, in words (stdout) or JSON.
fn report_crank(g: &Globals, out: &crank::Cranked, seconds: f64, extra: Option<Value>) {
    if g.json {
        let mut v = crank_json(out);
        if let (Some(obj), Some(Value::Object(more))) = (v.as_object_mut(), extra) {
            obj.extend(more);
        }
        print_json(&v);
        return;
    }
    let per_slot = out.turns_per_slot();
    let slots = match (out.turns.first(), out.turns.last()) {
        (Some(a), Some(b)) => b.slot - a.slot + 1,
        _ => 0,
    };
    let most = per_slot.iter().map(|(_, n)| *n).max().unwrap_or(0);
    println!(
        "turns: {} landed{} in {} slots ({} blocks; at most {} in one), {:.2} s",
        out.turns.len(),
        if out.failed.is_empty() {
            String::new()
        } else {
            format!(", {} failed and resent", out.failed.len())
        },
        slots,
        per_slot.len(),
        most,
        seconds
    );
    println!(
        "compute units: {} used by the program ({} asked)",
        thousands(out.program_cu()),
        thousands(out.turns.iter().map(|t| t.cu_limit as u64).sum())
    );
    println!(
        "fees: {} ({} transactions)",
        sol(out.fees()),
        out.transactions()
    );
}

#[allow(clippy::too_many_arguments)]
async fn generate(
    c: &Cluster,
    g: &Globals,
    model: &ModelInfo,
    params: &Params,
    crank_args: &CrankArgs,
    local: Option<Artifact>,
    label: &str,
    keep: bool,
) -> Result<()> {
    let started = Instant::now();
    let before = c.balance(&c.payer_key()).await?;
    let opened = runs::open(c, model, params, label).await?;
    let ctx = crank::context(c, &opened.run, local).await?;
    if opened.opened_now {
        // The state open_run wrote must be init_state's, byte for byte.
        let fresh = crate::replay::initial_state(&ctx.artifact, &params.as_run_params())?;
        if let Some(d) = crate::diff::first_difference(&model.config, &fresh, &ctx.state) {
            bail!("the opened run's state is not init_state's: {d}");
        }
    }
    let first_slot = opened.summary.first_slot;
    if !g.json {
        print!("{}", String::from_utf8_lossy(&params.prompt));
        // Text already generated (a resumed run) comes first.
        let done = curta_core::output_text(model.config, &ctx.state);
        print!("{}", String::from_utf8_lossy(done));
        let _ = std::io::stdout().flush();
    }
    let out = crank_with_progress(c, &ctx, crank_args, !g.json).await?;
    let mut closed = None;
    if !keep {
        closed = Some(runs::close(c, &opened.run).await?);
    }
    c.journal.close();
    let after = c.balance(&c.payer_key()).await?;
    let seconds = started.elapsed().as_secs_f64();
    let fees = opened.summary.fees + out.fees() + closed.as_ref().map_or(0, |(_, s)| s.fees);
    let transactions = opened.summary.transactions
        + out.transactions()
        + closed.as_ref().map_or(0, |(_, s)| s.transactions);
    let last_slot = closed
        .as_ref()
        .map(|(_, s)| s.last_slot)
        .or(out.turns.last().map(|t| t.slot))
        .unwrap_or(first_slot);
    let slots = if first_slot > 0 {
        last_slot - first_slot + 1
    } else {
        0
    };
    if g.json {
        let extra = json!({
            "prompt": String::from_utf8_lossy(&params.prompt),
            "open_transactions": opened.summary.transactions,
            "opened_now": opened.opened_now,
            "closed": closed.is_some(),
            "total_transactions": transactions,
            "total_fees": fees,
            "first_slot": first_slot,
            "last_slot": last_slot,
            "slots": slots,
            "balance_change": before as i128 - after as i128,
            "wall_seconds": seconds,
        });
        report_crank(g, &out, seconds, Some(extra));
    } else {
        println!();
        println!(
            "run: {}{}",
            opened.run,
            if keep { " (kept open)" } else { " (closed)" }
        );
        report_crank(g, &out, out.seconds, None);
        println!(
            "in all: {transactions} transactions, fees {}, slots {first_slot} to {last_slot} ({slots}), \
             {:.2} s wall time",
            sol(fees),
            seconds
        );
        if out.turns.len() > 1 {
            let tokens = out.turns.last().map_or(0, |t| t.generated) as f64;
            if tokens > 0.0 {
                println!("{:.2} s per token while cranking", out.seconds / tokens);
            }
        }
    }
    Ok(())
}
