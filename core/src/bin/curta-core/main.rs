//! `curta-core`: convert a llama2.c checkpoint, inspect an artifact, quote a
//! run and run it turn by turn, natively; print the program's IDL.
//!
//! One module per command; `args` is the command line's parser (the crate
//! keeps no dependencies), `failure` what a command can fail with and how it
//! is explained, `files` reading files and opening artifacts, `output` the
//! standard output every report is written to.

use std::process::ExitCode;

#[macro_use]
mod output;

mod args;
mod convert;
mod failure;
mod files;
mod inspect;
mod plan;
mod quote;
mod run;
mod synthesize;

use args::Args;
use failure::Failure;

const USAGE: &str = "usage:
  curta-core convert CHECKPOINT TOKENIZER -o OUT.curta [--charges TABLE]
  curta-core synthesize (--shape stories15M|stories42M|stories110M|tinyllama-1.1b | --config D,H,L,NH,NKV,V,S) [--seed S] -o OUT.bin
  curta-core inspect ARTIFACT [--json]
  curta-core quote ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N
                   [--temperature T | --temperature-q16 Q] [--allowance CU] [--json]
  curta-core run ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N
                 [--temperature T | --temperature-q16 Q] [--seed S] [--allowance CU]
                 [--states DIR] [--json] [--verbose]
  curta-core plan ARTIFACT --state FILE [--allowance CU] [--json]
  curta-core idl
  curta-core layout
  curta-core --help | --version

--charges chooses the table the model's turns are planned with:
`specification` (the default, docs/spec.md's) or `measured` (Curta's own
program, measured, with margin: fewer, fuller turns). quote, run and plan
use the artifact's table.
--allowance is the turn allowance in compute units (22,096 to 1,350,000;
1,350,000 by default): a run's, which it records from its config at
opening (offset 176 of its account). `plan` prints the next turn of a state
(a file `run --states` writes, or a run account's bytes from offset 256):
the matrix sections it reads, whose weight accounts the turn names after
section zero's, its compute units, and the most tokens it can complete.
`idl` prints the program's IDL (idl/curta.json), written from the
protocol's tables; `layout` the sizes and offsets the SDK reads bytes
with (sdk/src/layout.js), written from the same constants.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--help" | "-h" | "help") => {
            outln!("curta-core {}\n{USAGE}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            outln!("curta-core {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Io(message)) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
        Err(Failure::Core(e, reason)) => {
            match reason {
                Some(reason) => {
                    eprintln!("error: {reason} ({}, core error {})", e.name(), e.code())
                }
                None => eprintln!("error: {} (core error {})", e.name(), e.code()),
            }
            ExitCode::FAILURE
        }
    }
}

/// Runs the command `args` names with the rest of them.
fn dispatch(args: &[String]) -> Result<(), Failure> {
    let Some((command, rest)) = args.split_first() else {
        return Err(Failure::Usage("no command".into()));
    };
    let args = Args::parse(rest)?;
    if args.has("--help") || args.has("-h") {
        outln!("curta-core {}\n{USAGE}", env!("CARGO_PKG_VERSION"));
        return Ok(());
    }
    match command.as_str() {
        "convert" => convert::command(&args),
        "synthesize" => synthesize::command(&args),
        "inspect" => inspect::command(&args),
        "plan" => plan::command(&args),
        "quote" => quote::command(&args),
        "run" => run::command(&args),
        "idl" => {
            args.check(0, &[])?;
            let idl = curta_core::protocol::idl::json();
            std::io::Write::write_all(&mut output::stdout(), idl.as_bytes())
                .map_err(|e| Failure::Io(format!("writing the IDL: {e}")))
        }
        "layout" => {
            args.check(0, &[])?;
            let layout = curta_core::protocol::layout_js::module();
            std::io::Write::write_all(&mut output::stdout(), layout.as_bytes())
                .map_err(|e| Failure::Io(format!("writing the layout: {e}")))
        }
        other => Err(Failure::Usage(format!("unknown command {other}"))),
    }
}
