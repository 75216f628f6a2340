//! `plan`: the next turn of a state, as a client needs it to send the turn.

use curta_core::format::Metadata;
use curta_core::planner;
use curta_core::state::{self, StateBuffer};
use curta_core::{state_size, Error, StateInfo};

use crate::args::{allowance, Args};
use crate::failure::{refused, Failure};
use crate::files::{open, read};

/// `plan ARTIFACT --state FILE [--allowance CU] [--json]`.
pub fn command(args: &Args) -> Result<(), Failure> {
    args.check(1, &["--state", "--allowance"])?;
    let path = &args.positional[0];
    let artifact = read(path)?;
    let m = open(path, &artifact)?;
    let state_path = args
        .get("--state")
        .ok_or_else(|| Failure::Usage("plan needs --state FILE".into()))?;
    let state = StateBuffer::from_bytes(&read(state_path)?);
    plan(&m, &state, allowance(args)?, args.has("--json"))
}

/// The next turn's plan for a state, as a client needs it to send the turn:
/// the sections whose weight accounts it names, and its compute units.
fn plan(m: &Metadata, state: &[u8], allowance: u32, json: bool) -> Result<(), Failure> {
    let not_state = |e| refused(e, "the --state file is not a Curta state (state.md)".into());
    let header = state::Header::read(state).map_err(not_state)?;
    let expected = state_size(m.config, header.prompt_len as usize, header.max_tokens)?;
    if state.len() != expected {
        return Err(refused(
            Error::BufferTooSmall,
            format!(
                "the state is {} bytes: this model's for a prompt of {} bytes and max tokens {} is {expected}",
                state.len(),
                header.prompt_len,
                header.max_tokens
            ),
        ));
    }
    let info = StateInfo::read(state).map_err(not_state)?;
    if info.complete {
        return Err(refused(
            Error::InvalidState,
            "the run is complete: it has no next turn".into(),
        ));
    }
    let p = planner::plan_turn_with(m.config, state, allowance)?;
    let sections = &p.sections[..p.section_count];
    let tokenizing = info.phase.is_tokenizing();
    // What a client asks for: the measured price of the turn's chunks and
    // the two compute-budget instructions (docs/spec.md, "A turn's measured
    // price").
    let bound = planner::measured_price(m.config, state, allowance)?;
    let limit = curta_core::client::budget::turn_limit(bound);
    if json {
        let list: Vec<String> = sections.iter().map(u32::to_string).collect();
        outln!(
            "{{\"turn\":{},\"expected_turns\":{},\"tokenizing\":{tokenizing},\"sections\":[{}],\"estimated_cu\":{},\"bound_cu\":{bound},\"compute_unit_limit\":{limit},\"max_generated\":{}}}",
            info.turns + 1,
            info.turns,
            list.join(","),
            p.estimated_cu,
            p.max_generated
        );
    } else {
        let names: Vec<String> = sections.iter().map(|s| format!("section {s}")).collect();
        outln!(
            "turn {} (expected turn count {}: the turns the state has run)",
            info.turns + 1,
            info.turns
        );
        outln!(
            "reads: section 0{}{}",
            if names.is_empty() { "" } else { ", " },
            names.join(", ")
        );
        outln!(
            "compute units: {} estimated, {bound} at the measured table{}; ask for {limit}",
            p.estimated_cu,
            if tokenizing {
                " (a tokenizing turn is priced at the allowance)"
            } else {
                ""
            }
        );
        outln!("completes at most {} tokens", p.max_generated);
    }
    Ok(())
}
