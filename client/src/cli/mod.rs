//! The `curta` command line: one module per command family, each returning
//! a typed outcome that `output::print` renders as text or JSON.
//!
//! | Module | Commands |
//! |---|---|
//! | `args` | Every flag and command |
//! | `deploy` | `deploy`, `program verify` |
//! | `config` | `config init`, `show`, `set-allowance`, `set-admin`, `close` |
//! | `model` | `model upload`, `show`, `list`, `close` |
//! | `quote` | `quote` |
//! | `run` | `run open`, `crank`, `show`, `close`; `crank`, every open run |
//! | `cranker` | `crank`'s progress, totals and Ctrl-C |
//! | `generate` | `generate` |
//! | `wallet` | `balance`, `airdrop`, `keygen` |

mod args;
mod config;
mod cranker;
mod deploy;
mod generate;
mod model;
mod quote;
mod run;
mod wallet;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::bail;
use crate::cli_config::{self, CliConfig};
use crate::cluster::Cluster;
use crate::errors::Result;
use crate::journal;
use crate::output::{self, Outcome, OutputFormat};

use args::{Cli, Command};

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
    let run = async {
        crate::interrupt::install();
        run(&cli).await
    };
    let code = match runtime.block_on(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stdout().flush();
            crate::interrupt::say(format!("error: {e}"));
            ExitCode::FAILURE
        }
    };
    // Stopped by Ctrl-C (130) or a closed output (141): whatever it said,
    // it ends at once, without waiting for anything the runtime holds.
    if crate::interrupt::happened() {
        runtime.shutdown_background();
        return ExitCode::from(crate::interrupt::exit_code());
    }
    code
}

/// The resolved global options.
pub(crate) struct Globals {
    url: String,
    keypair: PathBuf,
    commitment: String,
    state_dir: PathBuf,
    format: OutputFormat,
    program_id: Option<String>,
    /// A command that sends nothing (`read_only`) settles no journal.
    read_only: bool,
    /// The one connection a command makes, kept to close its journal when
    /// the command succeeds.
    cluster: tokio::sync::OnceCell<Cluster>,
}

impl Globals {
    fn new(cli: &Cli) -> Result<Globals> {
        let config = CliConfig::load();
        let url = cli_config::resolve_url(
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
                .unwrap_or_else(cli_config::default_keypair_path),
            commitment: cli
                .commitment
                .clone()
                .or(config.commitment)
                .unwrap_or_else(|| "confirmed".into()),
            state_dir: cli
                .state_dir
                .clone()
                .unwrap_or_else(journal::default_state_dir),
            format: cli.output_format(),
            program_id: cli.program_id.clone(),
            read_only: read_only(&cli.command),
            cluster: tokio::sync::OnceCell::new(),
        })
    }

    fn json(&self) -> bool {
        self.format.is_json()
    }

    /// The program id: `--program-id` (an address or a keypair file), else
    /// the program keypair file's address.
    fn program_id(&self) -> Result<Pubkey> {
        match self.configured_program_id()? {
            Some(p) => Ok(p),
            None => bail!(
                "no program id: give --program-id, or run from the repository after `curta \
                 deploy` (which creates {})",
                cli_config::PROGRAM_KEYPAIR
            ),
        }
    }

    fn configured_program_id(&self) -> Result<Option<Pubkey>> {
        if let Some(p) = &self.program_id {
            return cli_config::address_or_keypair(p, "--program-id").map(Some);
        }
        let path = Path::new(cli_config::PROGRAM_KEYPAIR);
        match path.is_file() {
            true => Ok(Some(cli_config::load_keypair(path, "program")?.pubkey())),
            false => Ok(None),
        }
    }

    /// The signer's keypair, read (and checked) before anything is created
    /// or sent.
    fn signer(&self) -> Result<solana_keypair::Keypair> {
        cli_config::load_keypair(&self.keypair, "signer")
    }

    /// Connects to the cluster for the curta program.
    async fn connect(&self) -> Result<&Cluster> {
        self.connect_to(self.program_id()?).await
    }

    /// Connects for the program `account` (a curta `what`: model or run)
    /// names, when neither --program-id nor the repository's program
    /// keypair names one: the account's owner.
    async fn connect_for(&self, account: &Pubkey, what: &str) -> Result<&Cluster> {
        if let Some(p) = self.configured_program_id()? {
            return self.connect_to(p).await;
        }
        let commitment = cli_config::parse_commitment(&self.commitment)?;
        match Cluster::owner_of(&self.url, commitment, account).await? {
            None => bail!(
                "there is no {what} account at {account} on {} (and no --program-id to say \
                 which program to use)",
                self.url
            ),
            Some(owner) if owner == solana_sdk_ids::system_program::id() => {
                bail!("{account} is a wallet (a System account), not a curta {what} account")
            }
            Some(owner) => self.connect_to(owner).await,
        }
    }

    /// Connects for `program_id`; for a command that sends, whatever an
    /// interrupted curta of the same signer left in flight lands or expires
    /// first (a read-only one has no decision a late landing could upset,
    /// and settles nothing).
    async fn connect_to(&self, program_id: Pubkey) -> Result<&Cluster> {
        self.cluster
            .get_or_try_init(|| async {
                let commitment = cli_config::parse_commitment(&self.commitment)?;
                let payer = self.signer()?;
                let url = self.url.clone();
                let c =
                    Cluster::connect(url, commitment, payer, program_id, &self.state_dir).await?;
                if !self.read_only {
                    c.settle_journal().await?;
                }
                Ok(c)
            })
            .await
    }

    /// Prints a command's outcome in the chosen format.
    fn print(&self, outcome: &dyn Outcome) {
        output::print(self.format, outcome)
    }
}

/// Whether a command only reads: it sends no transaction, so it settles
/// no journal (`Cluster::settle_journal`).
fn read_only(command: &Command) -> bool {
    use args::{ConfigCommand, ModelCommand, ProgramCommand, RunCommand};
    matches!(
        command,
        Command::Quote { .. }
            | Command::Program(ProgramCommand::Verify { .. })
            | Command::Config(ConfigCommand::Show { .. })
            | Command::Model(ModelCommand::Show { .. } | ModelCommand::List)
            | Command::Run(RunCommand::Show { .. } | RunCommand::List)
            | Command::Balance { .. }
    )
}

fn addr(text: &str, what: &str) -> Result<Pubkey> {
    cli_config::parse_address(text, what)
}

async fn run(cli: &Cli) -> Result<()> {
    let g = Globals::new(cli)?;
    command(cli, &g).await?;
    // Everything sent landed: this process's journal has nothing left to
    // settle. After an error it stays, for the next command to settle, and
    // after Ctrl-C too, unless the crank it stopped found nothing of its
    // own still in flight (it closes the journal itself).
    if let Some(c) = g.cluster.get() {
        if !crate::interrupt::happened() {
            c.journal.close();
        }
    }
    Ok(())
}

async fn command(cli: &Cli, g: &Globals) -> Result<()> {
    match &cli.command {
        Command::Deploy {
            so,
            program_keypair,
            send,
        } => deploy::deploy(g, so.as_deref(), program_keypair.as_deref(), send).await,
        Command::Program(args::ProgramCommand::Verify { so }) => {
            deploy::verify(g, so.as_deref()).await
        }
        Command::Config(cmd) => config::run(g, cmd).await,
        Command::Model(cmd) => model::run(g, cmd).await,
        Command::Quote {
            target,
            run,
            royalty,
            allowance,
            crank,
        } => quote::run(g, target, run, *royalty, *allowance, crank).await,
        Command::Run(cmd) => run::run(g, cmd).await,
        Command::Generate {
            model,
            run,
            crank,
            artifact,
            label,
            keep,
            no_crank,
        } => {
            let request = generate::Request {
                model,
                params: run.params()?,
                crank,
                artifact: artifact.artifact.as_deref(),
                label,
                keep: *keep,
                no_crank: *no_crank,
            };
            generate::run(g, request).await
        }
        Command::Crank {
            all: _,
            model,
            once,
            interval,
            min_fee,
            crank,
        } => run::crank_all(g, model.as_deref(), *once, *interval, *min_fee, crank).await,
        Command::Balance { address } => wallet::balance(g, address.as_deref()).await,
        Command::Airdrop { amount, to } => wallet::airdrop(g, amount, to.as_deref()).await,
        Command::Keygen { outfile, force } => wallet::keygen(g, outfile.as_deref(), *force),
    }
}
