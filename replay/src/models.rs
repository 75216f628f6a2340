//! The artifacts runs use, by model name, each converted once per process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use curta_core::convert::{convert_explained, synthetic_checkpoint, SHAPES};
use curta_core::format::{ChargeTable, Config, SECTION_TABLE};
use curta_core::Metadata;

/// `CURTA_MODELS`, else the `models/` folder `scripts/fetch-models.sh` fills.
pub fn models_dir() -> PathBuf {
    match std::env::var("CURTA_MODELS") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => crate::root().join("models"),
    }
}

fn read(name: &str) -> Vec<u8> {
    let path = models_dir().join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models.sh)", path.display()))
}

/// The models a run may name, each planned with the specification's charges;
/// a name followed by `MEASURED` is the same model planned with the
/// measured table (`stories260K+measured`).
pub const MODELS: [&str; 5] = [
    "stories260K",
    "aidreams260K",
    "stories15M-synthetic",
    "stories42M-synthetic",
    "stories110M-synthetic",
];

/// The suffix of a model made of deterministic synthetic weights (seed 1)
/// of one of `curta_core::convert::SHAPES` and llama2's real tokenizer.
pub const SYNTHETIC: &str = "-synthetic";

/// The shape of a synthetic model (`stories42M-synthetic`), if it is one.
pub fn synthetic_shape(model: &str) -> Option<Config> {
    let shape = charges_of(model).0.strip_suffix(SYNTHETIC)?;
    SHAPES
        .iter()
        .find(|(name, _)| *name == shape)
        .map(|(_, c)| *c)
}

/// The suffix of a model name that chooses the measured charge table.
pub const MEASURED: &str = "+measured";

/// A model name's base model and charge table.
pub fn charges_of(model: &str) -> (&str, ChargeTable) {
    match model.strip_suffix(MEASURED) {
        Some(base) => (base, ChargeTable::Measured),
        None => (model, ChargeTable::Specification),
    }
}

/// The files a model is converted from: a checkpoint (none for the
/// synthetic one) and a tokenizer.
pub fn files(model: &str) -> &'static [&'static str] {
    match charges_of(model).0 {
        "stories260K" => &["stories260K.bin", "tok512.bin"],
        "aidreams260K" => &["aidreams260K.bin", "tok512-aidreams.bin"],
        _ if synthetic_shape(model).is_some() => &["tokenizer.bin"],
        other => panic!("unknown model {other}; known: {MODELS:?}"),
    }
}

/// Why a model cannot be had on this machine, if it cannot: the first of
/// its files missing from the models folder.
pub fn unavailable(model: &str) -> Option<String> {
    let dir = models_dir();
    files(model)
        .iter()
        .find(|f| !dir.join(f).exists())
        .map(|f| {
            format!(
                "{f} is not in {} and scripts/fetch-models.sh could not fetch it",
                dir.display()
            )
        })
}

fn build(model: &str) -> Vec<u8> {
    let (base, charges) = charges_of(model);
    let convert = |checkpoint: &[u8], tokenizer: &[u8]| {
        convert_explained(checkpoint, tokenizer, charges).map_err(|(_, r)| r.error)
    };
    let artifact = match (synthetic_shape(base), files(model)) {
        (Some(shape), [tokenizer]) => convert(
            &synthetic_checkpoint(&shape, 1).expect("valid shape"),
            &read(tokenizer),
        ),
        (_, [checkpoint, tokenizer]) => convert(&read(checkpoint), &read(tokenizer)),
        _ => unreachable!("every model names its files"),
    };
    artifact.unwrap_or_else(|e| panic!("converting {model}: {e}"))
}

/// The artifact of a model.
pub fn artifact(model: &str) -> Arc<Vec<u8>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Vec<u8>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(a) = cache.lock().expect("cache").get(model) {
        return a.clone();
    }
    let a = Arc::new(build(model));
    cache
        .lock()
        .expect("cache")
        .insert(model.to_string(), a.clone());
    a
}

/// Section zero of an artifact, parsed.
pub fn metadata(artifact: &[u8]) -> Metadata<'_> {
    let zero = curta_core::read_u64(artifact, SECTION_TABLE + 8) as usize;
    Metadata::new(&artifact[..zero]).expect("a converted artifact parses")
}

/// Section `i` of an artifact.
pub fn section<'a>(artifact: &'a [u8], m: &Metadata, i: usize) -> &'a [u8] {
    m.section_in(artifact, i)
}
