//! `curta-core`: convert a llama2.c checkpoint, inspect an artifact, quote a
//! run and run it turn by turn, natively.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use curta_core::convert::{convert_explained, open_artifact, Input};
use curta_core::format::{
    header, ChargeTable, LayerMatrix, Metadata, MAGIC, SECTION_TABLE, VERSION,
};
use curta_core::inference::{self, plan_sections, RunParams, TurnInput};
use curta_core::planner::{self, CHARGES};
use curta_core::protocol::RUN_HEADER_LEN;
use curta_core::sha256::{hex, sha256};
use curta_core::state::{self, StateBuffer, StateLayout, MAX_PROMPT_BYTES, MAX_TEMPERATURE_Q16};
use curta_core::{
    init_state, output_text, output_tokens, read_u32, read_u64, state_size, turn, Config, Error,
    Phase, StateInfo,
};

const USAGE: &str = "usage:
  curta-core convert CHECKPOINT TOKENIZER -o OUT.curta [--charges TABLE]
  curta-core synthesize (--shape stories15M | --config D,H,L,NH,NKV,V,S) [--seed S] -o OUT.bin
  curta-core inspect ARTIFACT [--json]
  curta-core quote ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N
                   [--temperature T | --temperature-q16 Q] [--allowance CU] [--json]
  curta-core run ARTIFACT (--prompt TEXT | --prompt-file FILE) --max-tokens N
                 [--temperature T | --temperature-q16 Q] [--seed S] [--allowance CU]
                 [--states DIR] [--json] [--verbose]
  curta-core plan ARTIFACT --state FILE [--allowance CU] [--json]
  curta-core --help | --version

--charges chooses the table the model's turns are planned with:
`specification` (the default, docs/spec.md's) or `measured` (Curta's own
program, measured, with margin: fewer, fuller turns). quote, run and plan
use the artifact's table.
--allowance is the config's turn allowance in compute units (22,096 to
1,350,000; 1,350,000 by default). `plan` prints the next turn of a state
(a file `run --states` writes, or a run account's bytes from offset 256):
the matrix sections it reads, whose weight accounts the turn names after
section zero's, its compute units, and the most tokens it can complete.";

/// A failure: a usage mistake, an I/O problem or a core error, which
/// carries what was wrong with which value when the binary can say.
enum Failure {
    Usage(String),
    Io(String),
    Core(Error, Option<String>),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e, None)
    }
}

/// A core error with the value and the limit it broke.
fn refused(error: Error, reason: String) -> Failure {
    Failure::Core(error, Some(reason))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--help" | "-h" | "help") => {
            println!("curta-core {}\n{USAGE}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            println!("curta-core {}", env!("CARGO_PKG_VERSION"));
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

/// The parsed command line: positional arguments and `--flag value` pairs.
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Args {
    fn parse(args: &[String]) -> Result<Args, Failure> {
        const SWITCHES: [&str; 2] = ["--json", "--verbose"];
        let mut out = Args {
            positional: vec![],
            flags: vec![],
            switches: vec![],
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if SWITCHES.contains(&a.as_str()) {
                out.switches.push(a.clone());
            } else if a.starts_with('-') && a.len() > 1 {
                let value = it
                    .next()
                    .ok_or_else(|| Failure::Usage(format!("{a} needs a value")))?;
                out.flags.push((a.clone(), value.clone()));
            } else {
                out.positional.push(a.clone());
            }
        }
        Ok(out)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn has(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    fn check(&self, positional: usize, allowed: &[&str]) -> Result<(), Failure> {
        if self.positional.len() != positional {
            return Err(Failure::Usage(format!(
                "expected {positional} file argument(s)"
            )));
        }
        for (k, _) in &self.flags {
            if !allowed.contains(&k.as_str()) {
                return Err(Failure::Usage(format!("unknown option {k}")));
            }
        }
        Ok(())
    }
}

fn read(path: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::Io(format!("cannot read {path}: {e}")))
}

fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes)
        .map_err(|e| Failure::Io(format!("cannot write {}: {e}", path.display())))
}

fn dispatch(args: &[String]) -> Result<(), Failure> {
    let Some((command, rest)) = args.split_first() else {
        return Err(Failure::Usage("no command".into()));
    };
    let args = Args::parse(rest)?;
    match command.as_str() {
        "convert" => {
            args.check(2, &["-o", "--charges"])?;
            let out = args
                .get("-o")
                .ok_or_else(|| Failure::Usage("convert needs -o OUT".into()))?;
            let charges = match args.get("--charges") {
                None => ChargeTable::Specification,
                Some(name) => ChargeTable::from_name(name).ok_or_else(|| {
                    Failure::Usage(format!(
                        "--charges {name}: the tables are `specification` and `measured`"
                    ))
                })?,
            };
            let (checkpoint, tokenizer) = (&args.positional[0], &args.positional[1]);
            let (checkpoint_bytes, tokenizer_bytes) = (read(checkpoint)?, read(tokenizer)?);
            let artifact = convert_explained(&checkpoint_bytes, &tokenizer_bytes, charges)
                .map_err(|(input, r)| {
                    let (path, kind) = match input {
                        Input::Checkpoint => (checkpoint, "llama2.c checkpoint"),
                        Input::Tokenizer => (tokenizer, "llama2.c tokenizer for this checkpoint"),
                    };
                    refused(r.error, format!("{path} is not a {kind}: {}", r.reason))
                })?;
            write(std::path::Path::new(out), &artifact)?;
            let m = open_artifact(&artifact)?;
            println!(
                "wrote {out}: {} bytes, {} sections, {} charges",
                artifact.len(),
                m.section_count(),
                charges.name()
            );
            Ok(())
        }
        "synthesize" => {
            args.check(0, &["--shape", "--config", "--seed", "-o"])?;
            let config = match (args.get("--shape"), args.get("--config")) {
                (Some("stories15M"), None) => curta_core::convert::STORIES15M,
                (None, Some(list)) => {
                    let values: Vec<u32> = list.split(',').filter_map(|v| v.parse().ok()).collect();
                    if values.len() != 7 {
                        return Err(Failure::Usage("--config takes seven numbers".into()));
                    }
                    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                    Config::read(&bytes).map_err(|e| {
                        let config = Config {
                            dim: values[0],
                            hidden_dim: values[1],
                            n_layers: values[2],
                            n_heads: values[3],
                            n_kv_heads: values[4],
                            vocab_size: values[5],
                            seq_len: values[6],
                            charges: ChargeTable::Specification,
                        };
                        match config.out_of_range() {
                            Some(problem) => refused(e, format!("--config {list}: {problem}")),
                            None => e.into(),
                        }
                    })?
                }
                _ => return Err(Failure::Usage("give --shape stories15M or --config".into())),
            };
            let seed = args.get("--seed").map_or(Ok(1), |s| s.parse::<u64>());
            let seed = seed.map_err(|_| Failure::Usage("--seed takes a whole number".into()))?;
            let out = args
                .get("-o")
                .ok_or_else(|| Failure::Usage("synthesize needs -o OUT".into()))?;
            let checkpoint = curta_core::convert::synthetic_checkpoint(&config, seed)?;
            write(std::path::Path::new(out), &checkpoint)?;
            println!("wrote {out}: {} bytes", checkpoint.len());
            Ok(())
        }
        "inspect" => {
            args.check(1, &[])?;
            let path = &args.positional[0];
            let artifact = read(path)?;
            inspect(&open(path, &artifact)?, args.has("--json"));
            Ok(())
        }
        "plan" => {
            args.check(1, &["--state", "--allowance"])?;
            let path = &args.positional[0];
            let artifact = read(path)?;
            let m = open(path, &artifact)?;
            let state_path = args
                .get("--state")
                .ok_or_else(|| Failure::Usage("plan needs --state FILE".into()))?;
            let state = StateBuffer::from_bytes(&read(state_path)?);
            plan(&m, &state, allowance(&args)?, args.has("--json"))
        }
        "quote" | "run" => {
            let mut allowed = vec![
                "--prompt",
                "--prompt-file",
                "--max-tokens",
                "--temperature",
                "--temperature-q16",
                "--allowance",
            ];
            if command == "run" {
                allowed.extend(["--seed", "--states"]);
            }
            args.check(1, &allowed)?;
            let path = &args.positional[0];
            let artifact = read(path)?;
            let m = open(path, &artifact)?;
            let run = RunArgs::parse(&args)?;
            let output = Output {
                json: args.has("--json"),
                verbose: args.has("--verbose"),
            };
            let done = if command == "quote" {
                quote(&m, &run, output.json)
            } else {
                generate(&artifact, &m, &run, args.get("--states"), output)
            };
            done.map_err(|f| explain_run(f, &m, &run))
        }
        other => Err(Failure::Usage(format!("unknown command {other}"))),
    }
}

struct RunArgs {
    prompt: Vec<u8>,
    max_tokens: u32,
    temperature_q16: u32,
    /// The temperature as given, for messages.
    temperature: String,
    seed: u64,
    /// The config's turn allowance the run is planned under.
    allowance: u32,
}

/// `--allowance`, checked as the program checks a config's, or the default.
fn allowance(args: &Args) -> Result<u32, Failure> {
    let Some(text) = args.get("--allowance") else {
        return Ok(CHARGES.allowance);
    };
    let (min, max) = (CHARGES.min_allowance, CHARGES.allowance);
    match text.parse::<u32>() {
        Ok(a) if planner::check_allowance(a).is_ok() => Ok(a),
        _ => Err(refused(
            Error::InvalidConfig,
            format!("--allowance {text}: a turn allowance is {min} to {max} compute units"),
        )),
    }
}

impl RunArgs {
    fn parse(args: &Args) -> Result<RunArgs, Failure> {
        let prompt = match (args.get("--prompt"), args.get("--prompt-file")) {
            (Some(p), None) => p.as_bytes().to_vec(),
            (None, Some(f)) => read(f)?,
            _ => {
                return Err(Failure::Usage(
                    "give one of --prompt or --prompt-file".into(),
                ))
            }
        };
        let number = |name: &str| -> Result<Option<u64>, Failure> {
            args.get(name)
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| Failure::Usage(format!("{name} takes a whole number")))
                })
                .transpose()
        };
        let word = |name: &str| -> Result<Option<u32>, Failure> {
            match number(name)? {
                Some(n) if n > u32::MAX as u64 => Err(Failure::Usage(format!(
                    "{name} {n}: the most is {}",
                    u32::MAX
                ))),
                n => Ok(n.map(|n| n as u32)),
            }
        };
        let max_tokens = word("--max-tokens")?
            .ok_or_else(|| Failure::Usage("--max-tokens is required".into()))?;
        let (temperature_q16, temperature) =
            match (args.get("--temperature"), word("--temperature-q16")?) {
                (Some(_), Some(_)) => {
                    return Err(Failure::Usage(
                        "give --temperature or --temperature-q16".into(),
                    ))
                }
                (Some(t), None) => {
                    let q = decimal_q16(t)
                        .ok_or_else(|| Failure::Usage(format!("bad temperature {t}")))?;
                    (q.min(u32::MAX as u64) as u32, t.to_string())
                }
                (None, Some(q)) => (q, format!("{q}/65536")),
                (None, None) => (0, "0".into()),
            };
        Ok(RunArgs {
            prompt,
            max_tokens,
            temperature_q16,
            temperature,
            seed: number("--seed")?.unwrap_or(0),
            allowance: allowance(args)?,
        })
    }
}

/// A non-negative decimal as a value with 16 fractional bits, rounded to
/// nearest (ties up), in integers so every platform agrees.
fn decimal_q16(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        || whole.len() > 6
        || fraction.len() > 12
    {
        return None;
    }
    let scale = 10u64.pow(fraction.len() as u32);
    let numerator =
        whole.parse::<u64>().unwrap_or(0) * scale + fraction.parse::<u64>().unwrap_or(0);
    Some((numerator * 65_536 * 2 + scale) / (2 * scale))
}

fn inspect(m: &Metadata, json: bool) {
    let c = m.config;
    let mut matrices = vec![("embedding".to_string(), m.embedding())];
    for layer in 0..c.n_layers {
        for which in LayerMatrix::ALL {
            matrices.push((format!("layer{layer}.{which:?}"), m.matrix(layer, which)));
        }
    }
    matrices.push(("classifier".to_string(), m.classifier()));
    if json {
        let sections: Vec<String> = (0..m.section_count())
            .map(|i| {
                format!(
                    "{{\"index\":{i},\"offset\":{},\"length\":{}}}",
                    m.section_offset(i),
                    m.section_len(i)
                )
            })
            .collect();
        let mats: Vec<String> = matrices
            .iter()
            .map(|(name, r)| {
                format!(
                    "{{\"name\":\"{name}\",\"section\":{},\"offset\":{},\"rows\":{},\"cols\":{}}}",
                    r.section, r.offset, r.rows, r.cols
                )
            })
            .collect();
        println!(
            "{{\"config\":{{\"dim\":{},\"hidden_dim\":{},\"n_layers\":{},\"n_heads\":{},\"n_kv_heads\":{},\"vocab_size\":{},\"seq_len\":{}}},\"charges\":\"{}\",\"shared_classifier\":{},\"artifact_len\":{},\"sections\":[{}],\"matrices\":[{}]}}",
            c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
            c.charges.name(), m.shared_classifier, m.artifact_len(), sections.join(","), mats.join(",")
        );
        return;
    }
    println!(
        "config: dim {} hidden {} layers {} heads {} kv heads {} vocab {} context {}",
        c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len
    );
    println!(
        "classifier: {}",
        if m.shared_classifier {
            "shared with the embedding"
        } else {
            "its own"
        }
    );
    println!("charges: the {} table", c.charges.name());
    println!("artifact: {} bytes", m.artifact_len());
    for i in 0..m.section_count() {
        println!(
            "section {i}: offset {} length {}",
            m.section_offset(i),
            m.section_len(i)
        );
    }
    for (name, r) in &matrices {
        println!(
            "{name}: section {} offset {} {}x{}",
            r.section, r.offset, r.rows, r.cols
        );
    }
}

/// The turns a run takes under its allowance, counted in a scratch state.
fn quote_turns(m: &Metadata, run: &RunArgs) -> Result<u64, Failure> {
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
        println!(
            "{{\"turns\":{turns},\"state_size\":{size},\"account_size\":{}}}",
            size + RUN_HEADER_LEN
        );
    } else {
        println!(
            "turns: {turns}\nstate size: {size} bytes\nrun account: {} bytes",
            size + RUN_HEADER_LEN
        );
    }
    Ok(())
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
    let mut stdout = std::io::stdout();
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
    if output.json {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        println!(
            "{{\"prompt_tokens\":[{}],\"tokens\":[{}],\"text\":{},\"turns\":{turns},\"state_sha256\":\"{}\"}}",
            list(&prompt_tokens),
            list(&tokens),
            json_string(text),
            String::from_utf8_lossy(&hex(&sha256(&state)))
        );
    } else {
        stdout.write_all(&text[printed..]).ok();
        println!();
        eprintln!("{} tokens in {turns} turns", tokens.len());
    }
    Ok(())
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
    // What a client asks for: the estimate and the two compute-budget
    // instructions (docs/program.md, "Compute units").
    let limit = (p.estimated_cu + 300).min(1_400_000);
    if json {
        let list: Vec<String> = sections.iter().map(u32::to_string).collect();
        println!(
            "{{\"turn\":{},\"expected_turns\":{},\"tokenizing\":{tokenizing},\"sections\":[{}],\"estimated_cu\":{},\"compute_unit_limit\":{limit},\"max_generated\":{}}}",
            info.turns + 1,
            info.turns,
            list.join(","),
            p.estimated_cu,
            p.max_generated
        );
    } else {
        let names: Vec<String> = sections.iter().map(|s| format!("section {s}")).collect();
        println!(
            "turn {} (expected turn count {}: the turns the state has run)",
            info.turns + 1,
            info.turns
        );
        println!(
            "reads: section 0{}{}",
            if names.is_empty() { "" } else { ", " },
            names.join(", ")
        );
        println!(
            "compute units: {} estimated{}; ask for {limit}",
            p.estimated_cu,
            if tokenizing {
                " (a tokenizing turn is priced at the allowance)"
            } else {
                ""
            }
        );
        println!("completes at most {} tokens", p.max_generated);
    }
    Ok(())
}

/// Opens an artifact, saying what is wrong with a file that is not one.
fn open<'a>(path: &str, artifact: &'a [u8]) -> Result<Metadata<'a>, Failure> {
    open_artifact(artifact).map_err(|e| {
        let not = |why: String| refused(e, format!("{path} is not a Curta artifact: {why}"));
        let zero = read_u64(artifact, SECTION_TABLE + 8);
        if artifact.len() < SECTION_TABLE || artifact[..8] != MAGIC {
            not(format!(
                "it does not open with {}",
                String::from_utf8_lossy(&MAGIC)
            ))
        } else if read_u32(artifact, header::VERSION) != VERSION {
            not(format!(
                "format version {}: this build reads version {VERSION}",
                read_u32(artifact, header::VERSION)
            ))
        } else if let Some(problem) = Config::read(&artifact[header::CONFIG..])
            .err()
            .and_then(|_| config_at(artifact).out_of_range())
        {
            not(format!("its configuration has {problem}"))
        } else if zero > artifact.len() as u64 {
            not(format!(
                "it is {} bytes, shorter than its section zero ({zero} bytes)",
                artifact.len()
            ))
        } else {
            match Metadata::new(&artifact[..zero as usize]) {
                Ok(m) if m.artifact_len() != artifact.len() => not(format!(
                    "it is {} bytes; its section table describes {}",
                    artifact.len(),
                    m.artifact_len()
                )),
                Ok(_) => not("its tokenizer does not check".into()),
                Err(_) => not("its header, section table or tables do not check".into()),
            }
        }
    })
}

/// The configuration in an artifact's header, unchecked.
fn config_at(artifact: &[u8]) -> Config {
    let word = |i: usize| read_u32(artifact, header::CONFIG + 4 * i);
    Config {
        dim: word(0),
        hidden_dim: word(1),
        n_layers: word(2),
        n_heads: word(3),
        n_kv_heads: word(4),
        vocab_size: word(5),
        seq_len: word(6),
        charges: curta_core::format::charge_table_of(artifact),
    }
}

/// Names the value and the limit behind a core error of `quote` or `run`.
fn explain_run(failure: Failure, m: &Metadata, run: &RunArgs) -> Failure {
    let e = match failure {
        Failure::Core(e, None) => e,
        other => return other,
    };
    let context = m.config.seq_len;
    let prompt = &run.prompt;
    let reason = match e {
        Error::InvalidPrompt if prompt.len() > MAX_PROMPT_BYTES => format!(
            "a prompt of {} bytes: the longest is {MAX_PROMPT_BYTES}",
            prompt.len()
        ),
        Error::InvalidPrompt if prompt.contains(&0) => format!(
            "the prompt holds a zero byte at byte {}",
            prompt.iter().position(|&b| b == 0).unwrap_or(0)
        ),
        Error::InvalidPrompt if std::str::from_utf8(prompt).is_err() => format!(
            "the prompt is not UTF-8 from byte {}",
            std::str::from_utf8(prompt).err().map_or(0, |u| u.valid_up_to())
        ),
        Error::InvalidPrompt if run.max_tokens == 0 => {
            "max tokens 0: a run generates at least 1 token".into()
        }
        Error::InvalidPrompt if run.max_tokens > context => format!(
            "max tokens {}: the context is {context} positions",
            run.max_tokens
        ),
        Error::InvalidPrompt if run.temperature_q16 > MAX_TEMPERATURE_Q16 => format!(
            "temperature {}: the highest is {}",
            run.temperature,
            MAX_TEMPERATURE_Q16 >> 16
        ),
        Error::ContextExceeded => match prompt_token_count(m, prompt) {
            Some(tokens) => format!(
                "the prompt's {tokens} tokens and max tokens {} need {} positions: the context is {context}",
                run.max_tokens,
                tokens as u64 + run.max_tokens as u64 - 1
            ),
            None => format!("the prompt and max tokens {} pass the context of {context} positions", run.max_tokens),
        },
        Error::InvalidConfig => format!(
            "a state for a prompt of {} bytes and max tokens {} would pass 4 GiB",
            prompt.len(),
            run.max_tokens
        ),
        _ => return e.into(),
    };
    refused(e, reason)
}

/// The count of tokens the prompt encodes to (tokenized for one token to
/// come, which always fits).
fn prompt_token_count(m: &Metadata, prompt: &[u8]) -> Option<u32> {
    let mut state = StateBuffer::new(state_size(m.config, prompt.len(), 1).ok()?);
    init_state(m.config, &mut state, prompt, 1, 0, 0).ok()?;
    while StateInfo::read(&state).ok()?.phase.is_tokenizing() {
        turn(m.config, &mut state, m.bytes, &[]).ok()?;
    }
    Some(StateInfo::read(&state).ok()?.prompt_tokens)
}
