//! The artifacts runs use, by model name, each converted once per process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use curta_core::convert::{convert, synthetic_checkpoint, STORIES15M};
use curta_core::format::SECTION_TABLE;
use curta_core::Metadata;

/// `CURTA_MODELS`, else `../shared/models` beside the repository, else the
/// `models/` folder `scripts/fetch-models.sh` fills.
pub fn models_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("CURTA_MODELS") {
        return PathBuf::from(dir);
    }
    let shared = crate::root().join("../shared/models");
    if shared.join("stories260K.bin").exists() {
        shared
    } else {
        crate::root().join("models")
    }
}

fn read(name: &str) -> Vec<u8> {
    let path = models_dir().join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fetch-models.sh)", path.display()))
}

/// The models a run may name.
pub const MODELS: [&str; 3] = ["stories260K", "aidreams260K", "stories15M-synthetic"];

fn build(model: &str) -> Vec<u8> {
    let artifact = match model {
        "stories260K" => convert(&read("stories260K.bin"), &read("tok512.bin")),
        "aidreams260K" => convert(&read("aidreams260K.bin"), &read("tok512-aidreams.bin")),
        // The stories15M shape: deterministic synthetic weights (seed 1)
        // with llama2's real tokenizer.
        "stories15M-synthetic" => convert(
            &synthetic_checkpoint(&STORIES15M, 1).expect("valid shape"),
            &read("tokenizer.bin"),
        ),
        other => panic!("unknown model {other}; known: {MODELS:?}"),
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
    let offset = m.section_offset(i);
    &artifact[offset..offset + m.section_len(i)]
}
