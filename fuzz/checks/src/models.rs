//! The small models the targets run, converted once per process: `TINY`
//! (curta-core's test shape, shared classifier), `SMALL` (two layers,
//! grouped key-value heads, an unshared classifier and a tokenizer whose
//! characters merge), and `TINY` with keys that overflow the cache.

use std::sync::OnceLock;

use curta_core::convert::{
    convert, overflowing_checkpoint, synthetic_checkpoint, synthetic_tokenizer, TINY,
};
use curta_core::format::{header, Config, FLAG_MEASURED_CHARGES, SECTION_TABLE};
use curta_core::inference::WeightSection;
use curta_core::{read_u64, Metadata};

/// Two layers, four heads over two key-value heads, an unshared classifier.
pub const SMALL: Config = Config {
    dim: 8,
    hidden_dim: 12,
    n_layers: 2,
    n_heads: 4,
    n_kv_heads: 2,
    vocab_size: 284,
    seq_len: 24,
    charges: curta_core::format::ChargeTable::Specification,
    shared_classifier: false,
};

/// SMALL's tokens after the 3 specials and 256 byte tokens: characters and
/// pieces that merge, longer ones scoring higher, and multibyte characters.
const SMALL_TOKENS: [&str; 25] = [
    " ", "e", "t", "a", "o", "n", "h", "s", "i", "r", "d", "th", "he", "the", " t", " th", " the",
    "an", "nd", "and", " a", "in", "é", "ü", "漢",
];

/// A converted model: the whole artifact and where its sections lie.
pub struct Model {
    pub name: &'static str,
    pub artifact: Vec<u8>,
    pub config: Config,
}

impl Model {
    fn new(name: &'static str, checkpoint: &[u8], tokenizer: &[u8]) -> Model {
        let artifact = convert(checkpoint, tokenizer).expect("the fuzz models convert");
        let config = Metadata::new(&artifact[..zero_len(&artifact)])
            .unwrap()
            .config;
        Model {
            name,
            artifact,
            config,
        }
    }

    /// Section zero.
    pub fn zero(&self) -> &[u8] {
        &self.artifact[..zero_len(&self.artifact)]
    }

    pub fn metadata(&self) -> Metadata<'_> {
        Metadata::new(self.zero()).unwrap()
    }

    /// The bytes of section `index` (zero included).
    pub fn section(&self, index: usize) -> &[u8] {
        let m = self.metadata();
        let at = m.section_offset(index);
        &self.artifact[at..at + m.section_len(index)]
    }

    pub fn section_count(&self) -> usize {
        self.metadata().section_count()
    }

    /// Every matrix section, for a turn to find the ones its plan names.
    pub fn matrix_sections(&self) -> Vec<WeightSection<'_>> {
        (1..self.section_count())
            .map(|i| WeightSection {
                index: i as u32,
                bytes: self.section(i),
            })
            .collect()
    }
}

fn zero_len(artifact: &[u8]) -> usize {
    read_u64(artifact, SECTION_TABLE + 8) as usize
}

pub fn tiny() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        let checkpoint = synthetic_checkpoint(&TINY, 1).unwrap();
        Model::new("tiny", &checkpoint, &synthetic_tokenizer(TINY.vocab_size))
    })
}

pub fn small() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| Model::new("small", &small_checkpoint(), &small_tokenizer()))
}

/// TINY whose first position raises `Arithmetic` (its keys pass 32 bits).
pub fn overflowing() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        Model::new(
            "overflowing",
            &overflowing_checkpoint(),
            &synthetic_tokenizer(TINY.vocab_size),
        )
    })
}

/// `model` planned with the measured charge table: its artifact with section
/// zero's flag bit 1 set, which is all `convert_explained` with
/// `ChargeTable::Measured` changes.
pub fn measured(model: &Model) -> &'static Model {
    static M: [OnceLock<Model>; 3] = [const { OnceLock::new() }; 3];
    let slot = match model.name {
        "tiny" => 0,
        "small" => 1,
        _ => 2,
    };
    M[slot].get_or_init(|| {
        let mut artifact = model.artifact.clone();
        let flags = curta_core::read_u32(&artifact, header::FLAGS) | FLAG_MEASURED_CHARGES;
        artifact[header::FLAGS..header::FLAGS + 4].copy_from_slice(&flags.to_le_bytes());
        let config = Metadata::new(&artifact[..zero_len(&artifact)])
            .unwrap()
            .config;
        Model {
            name: model.name,
            artifact,
            config,
        }
    })
}

/// The models a target picks from with one byte.
pub fn pick(choice: u8) -> &'static Model {
    match choice % 3 {
        0 => tiny(),
        1 => small(),
        _ => overflowing(),
    }
}

/// SMALL's checkpoint: synthetic weights, then the vocabulary made negative
/// and a classifier appended (llama2.c's unshared form).
pub fn small_checkpoint() -> Vec<u8> {
    let shared = Config {
        shared_classifier: true,
        ..SMALL
    };
    let mut checkpoint = synthetic_checkpoint(&shared, 2).unwrap();
    checkpoint[20..24].copy_from_slice(&(-(SMALL.vocab_size as i32)).to_le_bytes());
    let (v, d) = (SMALL.vocab_size as usize, SMALL.dim as usize);
    // The embedding's floats, reversed: distinct from it, the same range.
    let embedding: Vec<u8> = checkpoint[28..28 + 4 * v * d].to_vec();
    for float in embedding.chunks_exact(4).rev() {
        checkpoint.extend_from_slice(float);
    }
    checkpoint
}

/// llama2.c's `tokenizer.bin` for SMALL.
pub fn small_tokenizer() -> Vec<u8> {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec(), b"<s>".to_vec(), b"</s>".to_vec()];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>").into_bytes()));
    tokens.extend(SMALL_TOKENS.iter().map(|t| t.as_bytes().to_vec()));
    assert_eq!(tokens.len(), SMALL.vocab_size as usize);
    let mut out = 8i32.to_le_bytes().to_vec();
    for (i, t) in tokens.iter().enumerate() {
        // Byte tokens score lowest; longer pieces score higher.
        let score: f32 = if i < 259 {
            -1000.0
        } else {
            t.len() as f32 * 10.0 - i as f32 / 100.0
        };
        out.extend_from_slice(&score.to_le_bytes());
        out.extend_from_slice(&(t.len() as i32).to_le_bytes());
        out.extend_from_slice(t);
    }
    out
}
