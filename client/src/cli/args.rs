//! The command line's flags and commands, as the Solana CLI spells them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use curta_core::format::ChargeTable;

use crate::crank::{self, LimitPolicy};
use crate::errors::{Error, Result};
use crate::output::OutputFormat;
use crate::params::{self, Params};

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
    #[arg(short = 'u', long, global = true, value_name = "URL_OR_MONIKER", help_heading = GLOBAL)]
    pub url: Option<String>,
    /// The signer and fee payer: a keypair file [default: the Solana CLI
    /// config's, else ~/.config/solana/id.json; `curta keygen` makes one]
    #[arg(short = 'k', long, global = true, value_name = "KEYPAIR", help_heading = GLOBAL)]
    pub keypair: Option<PathBuf>,
    /// The curta program's address, or its keypair file [default: the
    /// address of target/deploy/curta_program-keypair.json]
    #[arg(long, global = true, value_name = "ADDRESS", help_heading = GLOBAL)]
    pub program_id: Option<String>,
    /// processed, confirmed or finalized [default: confirmed]
    #[arg(long, global = true, value_name = "LEVEL", help_heading = GLOBAL)]
    pub commitment: Option<String>,
    /// Print the outcome as JSON: `json` (indented) or `json-compact` (one line)
    #[arg(long, global = true, value_name = "FORMAT", value_parser = parse_output, help_heading = GLOBAL)]
    pub output: Option<OutputFormat>,
    /// The same as --output json-compact
    #[arg(long, global = true, conflicts_with = "output", help_heading = GLOBAL)]
    pub json: bool,
    /// Where the client journals in-flight transactions, so a command run
    /// again after a crash never pays twice [default: $CURTA_STATE_DIR,
    /// else $XDG_STATE_HOME/curta, else ~/.local/state/curta]
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    pub state_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// Where `--help` lists the flags every command takes, apart from its own.
const GLOBAL: &str = "Global options";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Deploy (or upgrade) the program through the upgradeable loader; prints its SHA-256
    Deploy {
        /// The program [default: target/deploy/curta_program.so]
        so: Option<PathBuf>,
        /// The program's keypair, for a first deploy [default:
        /// target/deploy/curta_program-keypair.json, created if missing]
        #[arg(long, value_name = "KEYPAIR")]
        program_keypair: Option<PathBuf>,
        #[command(flatten)]
        send: SendArgs,
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
        /// A .curta artifact (priced offline) or a model's address (priced on
        /// the cluster, against the signer's balance)
        #[arg(value_name = "ARTIFACT_OR_MODEL")]
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
        #[arg(long, value_name = "MODEL")]
        model: String,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        crank: CrankArgs,
        #[command(flatten)]
        artifact: ArtifactArg,
        /// Tells apart runs of the same model and parameters (a run's
        /// address derives from them, so the same question finds the same run)
        #[arg(long, default_value = "")]
        label: String,
        /// Leave the run open (its state readable with `run show`)
        #[arg(long)]
        keep: bool,
        /// Open the run and leave its turns to crankers (`curta crank`),
        /// paid by --crank-fee; follow it with `run show`, close it with
        /// `run close`
        #[arg(long)]
        no_crank: bool,
    },
    /// Crank every open run of the program (or of one model) that pays for
    /// its turns to its end, deliver every finished run that names a
    /// callback, and keep watching for new ones (permissionless: the signer
    /// pays the fees, the runs pay their crank fees). Runs are taken in the
    /// signer's own order (a hash of its key and the run's address), so
    /// crankers with different keys spread over the open runs; one that
    /// finds another cranker on its run leaves it to it, and comes back to
    /// it at the end of the pass if it is still unfinished
    ///
    /// Progress goes to stderr: a bar on a terminal, else a line a turn
    /// (at most one every 2 s) and one each idle pass. Each pass prints its
    /// runs, earned against spent and the profit per turn landed, then the
    /// totals since the start. Ctrl-C (or a closed stdout or stderr pipe)
    /// stops it within a second, printing the totals: turns landed, failed,
    /// earned and spent, which are the signer's balance change, and the
    /// turns still in flight, not counted (exit 130; 141 for a closed pipe).
    /// A second Ctrl-C ends it at once. A signer that cannot pay the next
    /// turn's fee and keep the rent-exempt minimum is refused before
    /// anything is sent (exit 1).
    Crank {
        /// Every open run of the program (the default)
        #[arg(long, conflicts_with = "model")]
        all: bool,
        /// Only this model's runs
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// One pass over the open runs, then exit
        #[arg(long)]
        once: bool,
        /// Seconds between passes
        #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
        interval: f64,
        /// Skip runs whose next turn pays less than this many lamports (the
        /// crank fee, or what is left of the run's deposit), leave a run
        /// where its turns start paying less, and skip deliveries whose fee
        /// is below it; 0 cranks every run, paid or not
        /// [default: what a turn costs the signer: the cluster's fee for
        /// the run's dearest turn's message, as `curta quote` asks it]
        #[arg(long, value_name = "LAMPORTS")]
        min_fee: Option<u64>,
        #[command(flatten)]
        crank: CrankArgs,
    },
    /// An account's balance [default: the signer's]
    Balance {
        /// An address or a keypair file
        #[arg(value_name = "ADDRESS")]
        address: Option<String>,
    },
    /// Ask the cluster's faucet for SOL (localnet, devnet, testnet) [default: to the signer]
    Airdrop {
        /// SOL, such as 2 or 0.5
        amount: String,
        /// An address or a keypair file
        #[arg(value_name = "ADDRESS")]
        to: Option<String>,
    },
    /// Write a new keypair file (as `solana-keygen new` does) and print its address
    Keygen {
        /// Where [default: the --keypair path, else the Solana CLI config's,
        /// else ~/.config/solana/id.json]
        #[arg(short = 'o', long, value_name = "FILE")]
        outfile: Option<PathBuf>,
        /// Replace a file that exists
        #[arg(long)]
        force: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ProgramCommand {
    /// Compare the deployed program with a local build, byte for byte
    Verify {
        /// The local build [default: target/deploy/curta_program.so]
        so: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Create the signer's config account (or show it, if it exists)
    Init {
        /// Turn allowance in compute units
        #[arg(long, default_value_t = curta_core::planner::CHARGES.allowance)]
        allowance: u32,
    },
    /// Show a config account [default: the signer's]
    Show {
        /// The config account's address
        config: Option<String>,
    },
    /// Change the turn allowance (the admin signs)
    SetAllowance {
        /// Compute units
        allowance: u32,
        /// The config account [default: the signer's]
        #[arg(long)]
        config: Option<String>,
    },
    /// Hand the config to a new admin (both sign)
    SetAdmin {
        /// The new admin's keypair file
        new_admin: PathBuf,
        /// The config account [default: the signer's]
        #[arg(long)]
        config: Option<String>,
    },
    /// Close the config and take back its rent (the admin signs); its
    /// models' runs can then neither open nor turn
    Close {
        /// The config account [default: the signer's]
        #[arg(long)]
        config: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ModelCommand {
    /// Upload an artifact (or a llama2.c checkpoint with --tokenizer); resumes an interrupted upload
    Upload {
        /// A .curta artifact, or a llama2.c checkpoint with --tokenizer
        #[arg(value_name = "ARTIFACT")]
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
        #[command(flatten)]
        send: SendArgs,
    },
    /// Show a model
    Show {
        /// The model's address
        #[arg(value_name = "MODEL")]
        model: String,
    },
    /// Close a model's weight accounts and the model, their rent back to the
    /// owner (its runs can then only be closed)
    Close {
        /// The model's address
        #[arg(value_name = "MODEL")]
        model: String,
    },
    /// List the signer's models, with what each and its weight accounts hold
    List,
}

#[derive(Subcommand, Debug)]
pub enum RunCommand {
    /// Open a run (or find it open); prints its address, rent and escrow
    Open {
        /// The model's address
        #[arg(long, value_name = "MODEL")]
        model: String,
        #[command(flatten)]
        run: RunArgs,
        /// Tells apart runs of the same model and parameters
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Crank a run to its end; resumes where it stopped
    ///
    /// Ctrl-C stops it within a second, printing what it did (turns that
    /// landed while it stopped included, those still in flight named, not
    /// counted) and how to resume or close the run (exit 130).
    Crank {
        /// The run's address
        #[arg(value_name = "RUN")]
        run: String,
        #[command(flatten)]
        crank: CrankArgs,
        #[command(flatten)]
        artifact: ArtifactArg,
    },
    /// Show a run
    Show {
        /// The run's address
        #[arg(value_name = "RUN")]
        run: String,
    },
    /// Close a run, its rent and unspent escrow back to the opener
    Close {
        /// The run's address
        #[arg(value_name = "RUN")]
        run: String,
    },
    /// List the signer's open runs, with what each holds
    List,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The prompt
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// The prompt, from a file
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Tokens to generate
    #[arg(long)]
    pub max_tokens: u32,
    /// 0 samples the likeliest token; above, a draw (at most 16)
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    pub temperature: String,
    /// The sampler's seed (a draw's randomness; unused at temperature 0)
    #[arg(long, default_value_t = 0, allow_hyphen_values = true, value_parser = parse_seed)]
    pub seed: u64,
    /// Lamports each turn pays whoever sends it (a cranker), from a deposit
    /// of this fee times the run's turns; what is left returns at close.
    /// `curta quote` recommends one
    #[arg(long, default_value_t = 0, value_name = "LAMPORTS")]
    pub crank_fee: u64,
}

#[derive(Args, Debug, Clone)]
pub struct ArtifactArg {
    /// The model's artifact, to replay turns without fetching the weights
    /// (checked against the model's digests)
    #[arg(long, value_name = "ARTIFACT")]
    pub artifact: Option<PathBuf>,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct CrankArgs {
    /// Turns in flight at once (0: measured, from the units a turn uses
    /// and how long a turn takes to land)
    #[arg(long, default_value_t = 0)]
    pub window: usize,
    /// The compute-unit limit of each turn: exact (the measured price of
    /// its chunks), uniform (the largest plan's, for every turn) or a number
    #[arg(long, default_value = "exact", value_parser = parse_limits)]
    pub cu_limit: LimitPolicy,
    /// No priority fee, instead of a ramp falling turn by turn; the
    /// scheduler then often runs turns in flight out of order, and they
    /// fail (StaleTurn) and are sent again
    #[arg(long)]
    pub no_priority_ramp: bool,
}

/// The flags of commands that send many transactions at once.
#[derive(Args, Debug, Clone, Copy)]
pub struct SendArgs {
    /// Transactions in flight at once when writing weights or the program
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub in_flight: usize,
}

fn parse_limits(s: &str) -> std::result::Result<LimitPolicy, String> {
    LimitPolicy::parse(s)
}

/// A seed, refused in words: 0 to 2^64 - 1.
fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    s.parse().map_err(|_| {
        let range = format!("a seed is a whole number from 0 to {}", u64::MAX);
        match s.starts_with('-') {
            true => format!("{s} is below zero: {range}"),
            false => format!("{s} is not one: {range}"),
        }
    })
}

fn parse_charges(s: &str) -> std::result::Result<ChargeTable, String> {
    ChargeTable::from_name(s)
        .ok_or_else(|| format!("{s}: the charge tables are `specification` and `measured`"))
}

fn parse_output(s: &str) -> std::result::Result<OutputFormat, String> {
    match s {
        "json" => Ok(OutputFormat::Json),
        "json-compact" => Ok(OutputFormat::JsonCompact),
        _ => Err(format!("{s}: the formats are `json` and `json-compact`")),
    }
}

impl Cli {
    pub fn output_format(&self) -> OutputFormat {
        match (self.output, self.json) {
            (Some(f), _) => f,
            (None, true) => OutputFormat::JsonCompact,
            (None, false) => OutputFormat::Display,
        }
    }
}

impl Default for CrankArgs {
    /// The flags' defaults.
    fn default() -> Self {
        let o = crank::Options::default();
        CrankArgs {
            window: o.window,
            cu_limit: o.limits,
            no_priority_ramp: !o.priority_ramp,
        }
    }
}

impl CrankArgs {
    pub fn options(&self) -> crank::Options {
        crank::Options {
            window: self.window,
            limits: self.cu_limit,
            priority_ramp: !self.no_priority_ramp,
            ..crank::Options::default()
        }
    }
}

impl RunArgs {
    pub fn params(&self) -> Result<Params> {
        let prompt = match (&self.prompt, &self.prompt_file) {
            (Some(p), None) => p.as_bytes().to_vec(),
            (None, Some(f)) => std::fs::read(f)
                .map_err(|e| Error::new(format!("cannot read {}: {e}", f.display())))?,
            _ => crate::bail!("give the prompt with --prompt or --prompt-file"),
        };
        Ok(Params {
            prompt,
            max_tokens: self.max_tokens,
            temperature_q16: params::temperature_q16(&self.temperature)?,
            seed: self.seed,
            crank_fee: self.crank_fee,
        })
    }
}
