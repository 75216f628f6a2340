//! The command line's parser: positional arguments, `--flag value` pairs and
//! switches; and the run parameters `quote` and `run` share.

use curta_core::planner::{self, CHARGES};
use curta_core::Error;

use crate::failure::{refused, Failure};
use crate::files::read;

/// The parsed command line: positional arguments and `--flag value` pairs.
pub struct Args {
    pub positional: Vec<String>,
    flags: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Args {
    pub fn parse(args: &[String]) -> Result<Args, Failure> {
        const SWITCHES: [&str; 4] = ["--json", "--verbose", "--help", "-h"];
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

    pub fn get(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    pub fn check(&self, positional: usize, allowed: &[&str]) -> Result<(), Failure> {
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

/// The options `quote` and `run` both take.
pub const RUN_FLAGS: [&str; 6] = [
    "--prompt",
    "--prompt-file",
    "--max-tokens",
    "--temperature",
    "--temperature-q16",
    "--allowance",
];

/// The run parameters of `quote` and `run`.
pub struct RunArgs {
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    /// The temperature as given, for messages.
    pub temperature: String,
    pub seed: u64,
    /// The config's turn allowance the run is planned under.
    pub allowance: u32,
}

/// `--allowance`, checked as the program checks a config's, or the default.
pub fn allowance(args: &Args) -> Result<u32, Failure> {
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
    pub fn parse(args: &Args) -> Result<RunArgs, Failure> {
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
                    let q = curta_core::client::params::decimal_q16(t)
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
