//! Golden receipts: per run, per turn, the state's SHA-256, the tokens so
//! far, the planner's charge and the program's compute units; then the
//! tokens and the text. Small text files that review well in a diff,
//! written only by `make golden`.

use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRecord {
    pub turn: u64,
    pub state_sha256: String,
    pub generated: u32,
    pub planner_cu: u32,
    pub program_cu: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub name: String,
    pub model: String,
    pub artifact_sha256: String,
    /// Turn 0 is the state after `open_run`.
    pub turns: Vec<TurnRecord>,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
}

pub fn path(name: &str) -> PathBuf {
    crate::root()
        .join("golden/receipts")
        .join(format!("{name}.txt"))
}

impl Receipt {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# curta receipt: written by `make golden`; change only with a commit that says why"
        );
        let _ = writeln!(out, "run {}", self.name);
        let _ = writeln!(out, "model {} {}", self.model, self.artifact_sha256);
        let _ = writeln!(out, "# turn state_sha256 generated planner_cu program_cu");
        for t in &self.turns {
            let _ = writeln!(
                out,
                "{} {} {} {} {}",
                t.turn, t.state_sha256, t.generated, t.planner_cu, t.program_cu
            );
        }
        let tokens: Vec<String> = self.tokens.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "tokens {}", tokens.join(" "));
        let _ = writeln!(
            out,
            "text {}",
            serde_json::Value::String(String::from_utf8_lossy(&self.text).into())
        );
        let _ = writeln!(out, "text_hex {}", hex(&self.text));
        out
    }

    pub fn parse(text: &str) -> Result<Receipt, String> {
        let mut r = Receipt {
            name: String::new(),
            model: String::new(),
            artifact_sha256: String::new(),
            turns: vec![],
            tokens: vec![],
            text: vec![],
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "run" => r.name = rest.to_string(),
                "model" => {
                    let (m, sha) = rest.split_once(' ').ok_or("model line")?;
                    r.model = m.to_string();
                    r.artifact_sha256 = sha.to_string();
                }
                "tokens" => {
                    r.tokens = rest
                        .split_whitespace()
                        .map(|t| t.parse().map_err(|_| format!("token {t}")))
                        .collect::<Result<_, _>>()?
                }
                "text" => {}
                "text_hex" => r.text = unhex(rest)?,
                _ => {
                    let f: Vec<&str> = line.split_whitespace().collect();
                    if f.len() != 5 {
                        return Err(format!("bad line: {line}"));
                    }
                    let n = |s: &str| {
                        s.parse::<u64>()
                            .map_err(|_| format!("bad number in: {line}"))
                    };
                    r.turns.push(TurnRecord {
                        turn: n(f[0])?,
                        state_sha256: f[1].to_string(),
                        generated: n(f[2])? as u32,
                        planner_cu: n(f[3])? as u32,
                        program_cu: n(f[4])?,
                    });
                }
            }
        }
        Ok(r)
    }

    /// The golden receipt of a run, if `make golden` has written one.
    pub fn load(name: &str) -> Option<Receipt> {
        let text = std::fs::read_to_string(path(name)).ok()?;
        Some(Receipt::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path(name).display())))
    }

    pub fn save(&self) {
        let p = path(&self.name);
        std::fs::create_dir_all(p.parent().expect("receipts folder"))
            .expect("create golden/receipts");
        std::fs::write(&p, self.render()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err("odd hex".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| "bad hex".to_string()))
        .collect()
}
