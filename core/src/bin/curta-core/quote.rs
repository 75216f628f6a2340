//! `quote`: the turns a run takes and the size of its state and account.

use curta_core::format::Metadata;
use curta_core::inference::{self, RunParams, TurnInput};
use curta_core::protocol::RUN_HEADER_LEN;
use curta_core::state::StateBuffer;
use curta_core::state_size;

use crate::args::{Args, RunArgs, RUN_FLAGS};
use crate::failure::{explain_run, Failure};
use crate::files::{open, read};

/// `quote ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N ...`.
pub fn command(args: &Args) -> Result<(), Failure> {
    args.check(1, &RUN_FLAGS)?;
    let path = &args.positional[0];
    let artifact = read(path)?;
    let m = open(path, &artifact)?;
    let run = RunArgs::parse(args)?;
    quote(&m, &run, args.has("--json")).map_err(|f| explain_run(f, &m, &run))
}

/// The turns a run takes under its allowance, counted in a scratch state.
pub fn quote_turns(m: &Metadata, run: &RunArgs) -> Result<u64, Failure> {
    let size = state_size(m.config, run.prompt.len(), run.max_tokens)?;
    let mut scratch = StateBuffer::new(size);
    let params = RunParams {
        prompt: &run.prompt,
        max_tokens: run.max_tokens,
        temperature_q16: run.temperature_q16,
        seed: run.seed,
    };
    let input = TurnInput {
        config: m.config,
        metadata: m.bytes,
        sections: &[],
        allowance: run.allowance,
    };
    Ok(inference::quote_turns_with(&input, &params, &mut scratch)?)
}

fn quote(m: &Metadata, run: &RunArgs, json: bool) -> Result<(), Failure> {
    let size = state_size(m.config, run.prompt.len(), run.max_tokens)?;
    let turns = quote_turns(m, run)?;
    if json {
        outln!(
            "{{\"turns\":{turns},\"state_size\":{size},\"account_size\":{}}}",
            size + RUN_HEADER_LEN
        );
    } else {
        outln!(
            "turns: {turns}\nstate size: {size} bytes\nrun account: {} bytes",
            size + RUN_HEADER_LEN
        );
    }
    Ok(())
}
