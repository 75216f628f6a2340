//! The runs the harness replays, listed in `golden/manifest.json`, not in
//! code: model, prompt (inline or from a file), max tokens, temperature
//! (16 fractional bits) and seed.

use serde_json::Value;

#[derive(Clone, Debug)]
pub struct RunSpec {
    pub name: String,
    pub model: String,
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
}

/// Reads `golden/manifest.json`.
pub fn load() -> Vec<RunSpec> {
    let path = crate::root().join("golden/manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<Vec<RunSpec>, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let runs = json["runs"].as_array().ok_or("no \"runs\" list")?;
    runs.iter()
        .map(|r| {
            let name = r["name"]
                .as_str()
                .ok_or("a run without a name")?
                .to_string();
            let field = |k: &str| r[k].as_u64().ok_or_else(|| format!("{name}: no {k}"));
            let prompt = match (r["prompt"].as_str(), r["prompt_file"].as_str()) {
                (Some(p), None) => p.as_bytes().to_vec(),
                (None, Some(f)) => std::fs::read(crate::root().join("golden").join(f))
                    .map_err(|e| format!("{name}: {f}: {e}"))?,
                _ => return Err(format!("{name}: give one of prompt or prompt_file")),
            };
            Ok(RunSpec {
                model: r["model"]
                    .as_str()
                    .ok_or_else(|| format!("{name}: no model"))?
                    .to_string(),
                prompt,
                max_tokens: field("max_tokens")? as u32,
                temperature_q16: field("temperature_q16")? as u32,
                seed: field("seed")?,
                name,
            })
        })
        .collect()
}

/// The runs whose names contain `filter` (all for an empty filter), from
/// the `CURTA_RUNS` variable, less those whose model this machine cannot
/// have (each skipped with a message on stderr).
pub fn selected() -> Vec<RunSpec> {
    let filter = std::env::var("CURTA_RUNS").unwrap_or_default();
    load()
        .into_iter()
        .filter(|r| filter.is_empty() || filter.split(',').any(|f| r.name.contains(f)))
        .filter(|r| match crate::models::unavailable(&r.model) {
            Some(why) => {
                eprintln!("skipping {}: {why}", r.name);
                false
            }
            None => true,
        })
        .collect()
}
