//! `run`: a run generated turn by turn, its text streamed as it comes, its
//! states written when asked.

use std::io::{IsTerminal, Write};

use curta_core::format::Metadata;
use curta_core::inference::{self, plan_sections, TurnInput};
use curta_core::planner;
use curta_core::sha256::{hex, sha256};
use curta_core::state::{self, StateBuffer, StateLayout};
use curta_core::{init_state, output_text, output_tokens, state_size, Phase, StateInfo};

use crate::args::{Args, RunArgs, RUN_FLAGS};
use crate::failure::{explain_run, Failure};
use crate::files::{open, read, write};
use crate::quote::quote_turns;

/// `run ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N ...
/// [--seed S] [--states DIR] [--json] [--verbose]`.
pub fn command(args: &Args) -> Result<(), Failure> {
    let mut allowed = RUN_FLAGS.to_vec();
    allowed.extend(["--seed", "--states"]);
    args.check(1, &allowed)?;
    let path = &args.positional[0];
    let artifact = read(path)?;
    let m = open(path, &artifact)?;
    let run = RunArgs::parse(args)?;
    let output = Output {
        json: args.has("--json"),
        verbose: args.has("--verbose"),
    };
    generate(&artifact, &m, &run, args.get("--states"), output)
        .map_err(|f| explain_run(f, &m, &run))
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn json_string(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for ch in String::from_utf8_lossy(bytes).chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// How `run` reports: JSON at the end, and per-turn lines when verbose.
#[derive(Clone, Copy)]
struct Output {
    json: bool,
    verbose: bool,
}

/// `run`'s report of its turns on stderr: with `--verbose` one line per
/// turn; else, on a terminal, one line rewritten in place; else nothing.
struct Progress {
    verbose: bool,
    live: bool,
    /// The turns a run without an early end token takes.
    quoted: u64,
}

impl Progress {
    fn turn(&self, turns: u64, info: &StateInfo, max_tokens: u32) {
        let phase = match info.phase {
            Phase::Done => "done".to_string(),
            p => (p as u32).to_string(),
        };
        if self.verbose {
            eprintln!(
                "turn {turns} position {} phase {phase} tokens {}",
                info.position, info.generated
            );
        } else if self.live {
            eprint!(
                "\r\x1b[Kturn {turns} of {}: position {}, {} of {max_tokens} tokens",
                self.quoted, info.position, info.generated
            );
            std::io::stderr().flush().ok();
        }
    }

    /// Clears the live line.
    fn finish(&self) {
        if self.live {
            eprint!("\r\x1b[K");
        }
    }
}

fn generate(
    artifact: &[u8],
    m: &Metadata,
    run: &RunArgs,
    states: Option<&str>,
    output: Output,
) -> Result<(), Failure> {
    let config = m.config;
    let size = state_size(config, run.prompt.len(), run.max_tokens)?;
    let mut state = StateBuffer::new(size);
    init_state(
        config,
        &mut state,
        &run.prompt,
        run.max_tokens,
        run.temperature_q16,
        run.seed,
    )?;
    let dir = states.map(std::path::PathBuf::from);
    if let Some(dir) = &dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Io(format!("cannot create {}: {e}", dir.display())))?;
        write(&dir.join("000000.state"), &state)?;
    }
    let live = !output.verbose && std::io::stderr().is_terminal();
    let progress = Progress {
        verbose: output.verbose,
        live,
        quoted: if live { quote_turns(m, run)? } else { 0 },
    };
    // The text goes to stdout as it comes, unless the live line is on the
    // terminal: then at the end.
    let stream = !output.json && !live;
    let layout = StateLayout::new(&config, run.prompt.len(), run.max_tokens)?;
    let mut printed = 0usize;
    let mut stdout = crate::output::stdout();
    let mut turns = 0u64;
    while !StateInfo::read(&state)?.complete {
        let plan = planner::plan_turn_with(config, &state, run.allowance)?;
        let sections = plan_sections(artifact, m, &plan);
        let input = TurnInput {
            config,
            metadata: m.bytes,
            sections: &sections,
            allowance: run.allowance,
        };
        let stepped = inference::turn_with(&input, Some(&plan), &mut state);
        if stepped.is_err() {
            progress.finish();
        }
        stepped?;
        turns += 1;
        if let Some(dir) = &dir {
            write(&dir.join(format!("{turns:06}.state")), &state)?;
        }
        let info = StateInfo::read(&state)?;
        if stream {
            let text = &state[layout.output_text..layout.output_text + info.text_len as usize];
            stdout.write_all(&text[printed..]).ok();
            stdout.flush().ok();
            printed = text.len();
        }
        progress.turn(turns, &info, run.max_tokens);
    }
    progress.finish();
    let tokens = u32s(output_tokens(config, &state));
    let prompt_tokens = u32s(state::prompt_tokens(config, &state));
    let text = output_text(config, &state);
    // Why the run stopped (a complete run always has a reason).
    let reason = StateInfo::read(&state)?.reason;
    if output.json {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        outln!(
            "{{\"prompt_tokens\":[{}],\"tokens\":[{}],\"text\":{},\"turns\":{turns},\"state_sha256\":\"{}\",\"reason\":\"{}\"}}",
            list(&prompt_tokens),
            list(&tokens),
            json_string(text),
            String::from_utf8_lossy(&hex(&sha256(&state))),
            reason.map_or("", |r| r.name())
        );
    } else {
        stdout.write_all(&text[printed..]).ok();
        outln!();
        let why = reason.map_or(String::new(), |r| format!(", ended by {}", r.words()));
        eprintln!("{} tokens in {turns} turns{why}", tokens.len());
    }
    Ok(())
}
