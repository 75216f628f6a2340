//! The weight artifact (`CURTAW01`): its header, the model `Config`, the
//! section layout, `Metadata` (the reader of section zero) and the lookups of
//! the tables it holds. `docs/format.md` describes the same bytes.
//!
//! Where every matrix lives is a function of the `Config` alone, so that the
//! planner, which sees no weights, names the same sections as the artifact.

pub use crate::bytes::{align8, read_u32, read_u64};
use crate::Error;

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"CURTAW01";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Where the section table starts: entry `i` is `(u64 offset, u64 length)`.
pub const SECTION_TABLE: usize = 128;
/// Bytes per section table entry.
pub const SECTION_ENTRY_LEN: usize = 16;
/// Entries in the exponential and SiLU tables.
pub const TABLE_LEN: usize = 4097;
/// The longest token text an artifact may hold (the output buffer reserves
/// this much per generated token).
pub const MAX_TOKEN_BYTES: usize = 128;
/// The most data one Solana account may hold (10 MiB): on chain each
/// section lives in one account.
pub const MAX_ACCOUNT_LEN: usize = 10 * 1024 * 1024;
/// What a weight account keeps before its section's bytes.
pub const WEIGHT_HEADER_LEN: usize = 128;
/// The most bytes one section may hold: an account less its header.
pub const MAX_SECTION_LEN: usize = MAX_ACCOUNT_LEN - WEIGHT_HEADER_LEN;
/// Header flag: the classifier is the token embedding (llama2.c's shared weights).
pub const FLAG_SHARED_CLASSIFIER: u32 = 1;
/// Header flag: the model's turns are planned with the measured charge
/// table (`planner::MEASURED_CHARGES`) rather than the specification's.
pub const FLAG_MEASURED_CHARGES: u32 = 2;
/// Every flag an artifact may set; the other bits are zero.
pub const KNOWN_FLAGS: u32 = FLAG_SHARED_CLASSIFIER | FLAG_MEASURED_CHARGES;

/// The table a model's turns are planned with, chosen when the model is made
/// (`FLAG_MEASURED_CHARGES`) and the same on every target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChargeTable {
    /// The specification's table (`planner::CHARGES`), sized for a kernel of
    /// about five compute units per multiply-accumulate.
    #[default]
    Specification,
    /// Curta's own program, measured, with margin (`planner::MEASURED_CHARGES`).
    Measured,
}

impl ChargeTable {
    /// The table an artifact's or a Model account's flags word chooses.
    #[inline(always)]
    pub const fn from_flags(flags: u32) -> ChargeTable {
        if flags & FLAG_MEASURED_CHARGES != 0 {
            ChargeTable::Measured
        } else {
            ChargeTable::Specification
        }
    }

    /// Its flag bit: 0 for the specification's table.
    #[inline(always)]
    pub const fn flag(self) -> u32 {
        match self {
            ChargeTable::Specification => 0,
            ChargeTable::Measured => FLAG_MEASURED_CHARGES,
        }
    }

    /// Its name, as `--charges` takes it: `specification` or `measured`.
    pub const fn name(self) -> &'static str {
        match self {
            ChargeTable::Specification => "specification",
            ChargeTable::Measured => "measured",
        }
    }

    /// Both tables, the default first.
    pub const ALL: [ChargeTable; 2] = [ChargeTable::Specification, ChargeTable::Measured];

    /// The table `name` names (`name`'s inverse), if any.
    pub fn from_name(name: &str) -> Option<ChargeTable> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The charge table section zero's flags choose, read without parsing the
/// rest: the specification's for bytes too short to hold the flags (which
/// `Metadata::new` then refuses).
#[inline(always)]
pub fn charge_table_of(metadata: &[u8]) -> ChargeTable {
    if metadata.len() < header::FLAGS + 4 {
        return ChargeTable::Specification;
    }
    ChargeTable::from_flags(read_u32(metadata, header::FLAGS))
}

/// Byte offsets of the header's fields. All integers are little-endian.
pub mod header {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 8;
    pub const SECTION_COUNT: usize = 12;
    pub const CONFIG: usize = 16;
    pub const FLAGS: usize = 44;
    pub const INV_SQRT_HEAD: usize = 48;
    pub const MAX_TOKEN_LEN: usize = 52;
    pub const EXP_TABLE: usize = 56;
    pub const SILU_TABLE: usize = 60;
    pub const ROPE_TABLE: usize = 64;
    pub const NORMS: usize = 68;
    pub const TOKEN_OFFSETS: usize = 72;
    pub const TOKEN_SCORES: usize = 76;
    pub const TOKEN_SORTED: usize = 80;
    pub const TOKEN_BYTES: usize = 84;
    pub const TOKEN_BYTES_LEN: usize = 88;
    /// Bytes 92..128 are reserved and zero.
    pub const RESERVED: usize = 92;
    pub const LEN: usize = 128;
}

/// A model's shape: llama2.c's seven header values, in its order, and the
/// charge table its turns are planned with. The WebAssembly interface passes
/// the seven values as seven `u32`s (28 bytes); the table is not among them
/// but in the artifact's flags (`FLAG_MEASURED_CHARGES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub dim: u32,
    pub hidden_dim: u32,
    pub n_layers: u32,
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub vocab_size: u32,
    pub seq_len: u32,
    pub charges: ChargeTable,
}

impl Config {
    /// The encoded size: seven `u32`.
    pub const LEN: usize = 28;

    /// Reads and validates a configuration from 28 little-endian bytes,
    /// planned with the specification's table (`with_charges` changes it).
    pub fn read(bytes: &[u8]) -> Result<Config, Error> {
        if bytes.len() < Self::LEN {
            return Err(Error::InvalidConfig);
        }
        let config = Config {
            dim: read_u32(bytes, 0),
            hidden_dim: read_u32(bytes, 4),
            n_layers: read_u32(bytes, 8),
            n_heads: read_u32(bytes, 12),
            n_kv_heads: read_u32(bytes, 16),
            vocab_size: read_u32(bytes, 20),
            seq_len: read_u32(bytes, 24),
            charges: ChargeTable::Specification,
        };
        config.validate()?;
        Ok(config)
    }

    /// The same shape, planned with `charges`.
    #[inline(always)]
    pub const fn with_charges(self, charges: ChargeTable) -> Config {
        Config { charges, ..self }
    }

    /// The 28 bytes `read` takes.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        let values = [
            self.dim,
            self.hidden_dim,
            self.n_layers,
            self.n_heads,
            self.n_kv_heads,
            self.vocab_size,
            self.seq_len,
        ];
        for (i, v) in values.iter().enumerate() {
            out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Checks every value against its range (`out_of_range`).
    #[inline(always)]
    pub fn validate(&self) -> Result<(), Error> {
        match self.out_of_range() {
            None => Ok(()),
            Some(_) => Err(Error::InvalidConfig),
        }
    }

    /// The first value outside its range, if any. The ranges keep every
    /// size the core computes inside 32 bits on every target
    /// (`docs/format.md`, "The configuration").
    #[inline(always)]
    pub fn out_of_range(&self) -> Option<OutOfRange> {
        let out = |name, value, rule| Some(OutOfRange { name, value, rule });
        if !(2..=8192).contains(&self.dim) {
            return out("dim", self.dim, "from 2 to 8192");
        }
        if !(1..=65536).contains(&self.hidden_dim) {
            return out("hidden_dim", self.hidden_dim, "from 1 to 65536");
        }
        if !(1..=256).contains(&self.n_layers) {
            return out("n_layers", self.n_layers, "from 1 to 256");
        }
        if !(1..=256).contains(&self.n_heads) {
            return out("n_heads", self.n_heads, "from 1 to 256");
        }
        if !(1..=self.n_heads).contains(&self.n_kv_heads) {
            return out("n_kv_heads", self.n_kv_heads, "from 1 to n_heads");
        }
        if !self.dim.is_multiple_of(self.n_heads) {
            return out("n_heads", self.n_heads, "a divisor of dim");
        }
        if !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return out("n_kv_heads", self.n_kv_heads, "a divisor of n_heads");
        }
        if !(self.dim / self.n_heads).is_multiple_of(2) {
            return out(
                "dim / n_heads",
                self.dim / self.n_heads,
                "even (rotary pairs)",
            );
        }
        // Byte fallback needs ids 3..=258.
        if !(259..=1 << 20).contains(&self.vocab_size) {
            return out("vocab_size", self.vocab_size, "from 259 to 1048576");
        }
        if !(1..=65536).contains(&self.seq_len) {
            return out("seq_len", self.seq_len, "from 1 to 65536");
        }
        None
    }

    /// Elements per attention head.
    #[inline(always)]
    pub fn head_size(&self) -> usize {
        (self.dim / self.n_heads) as usize
    }

    /// Elements of a key or value vector: `n_kv_heads` heads.
    #[inline(always)]
    pub fn kv_dim(&self) -> usize {
        self.head_size() * self.n_kv_heads as usize
    }
}

impl core::fmt::Display for Config {
    /// llama2.c's names and the values: `dim 64, hidden_dim 172, ...`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "dim {}, hidden_dim {}, n_layers {}, n_heads {}, n_kv_heads {}, vocab_size {}, seq_len {}",
            self.dim,
            self.hidden_dim,
            self.n_layers,
            self.n_heads,
            self.n_kv_heads,
            self.vocab_size,
            self.seq_len
        )
    }
}

/// A configuration value outside its range: its name, its value and the
/// range, as `Config::out_of_range` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange {
    pub name: &'static str,
    pub value: u32,
    pub rule: &'static str,
}

impl core::fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} {} must be {}", self.name, self.value, self.rule)
    }
}

/// The seven matrices of a layer, in the order the forward pass reads them,
/// which is also their order inside a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerMatrix {
    Query = 0,
    Key = 1,
    Value = 2,
    AttentionOutput = 3,
    Gate = 4,
    Up = 5,
    Down = 6,
}

impl LayerMatrix {
    pub const ALL: [LayerMatrix; 7] = [
        LayerMatrix::Query,
        LayerMatrix::Key,
        LayerMatrix::Value,
        LayerMatrix::AttentionOutput,
        LayerMatrix::Gate,
        LayerMatrix::Up,
        LayerMatrix::Down,
    ];

    /// Rows (outputs) and columns (inputs) of this matrix.
    #[inline(always)]
    pub fn shape(self, config: &Config) -> (u32, u32) {
        let d = config.dim;
        let kv = config.kv_dim() as u32;
        let h = config.hidden_dim;
        match self {
            LayerMatrix::Query | LayerMatrix::AttentionOutput => (d, d),
            LayerMatrix::Key | LayerMatrix::Value => (kv, d),
            LayerMatrix::Gate | LayerMatrix::Up => (h, d),
            LayerMatrix::Down => (d, h),
        }
    }
}

/// Where one matrix sits: `rows` little-endian `u32` scales at `offset` in
/// section `section`, then `rows * cols` weight bytes (each weight plus 128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixRef {
    pub section: u32,
    pub offset: usize,
    pub rows: u32,
    pub cols: u32,
}

impl MatrixRef {
    /// Bytes the matrix occupies, padded to eight.
    #[inline(always)]
    pub fn byte_len(&self) -> usize {
        matrix_len(self.rows, self.cols) as usize
    }

    /// Where its weight bytes start, relative to the section.
    #[inline(always)]
    pub fn weights_offset(&self) -> usize {
        self.offset + 4 * self.rows as usize
    }
}

/// Bytes of a matrix blob: scales, weights, padding to eight.
#[inline(always)]
pub const fn matrix_len(rows: u32, cols: u32) -> u64 {
    align8(4 * rows as u64 + rows as u64 * cols as u64)
}

/// The matrix sections of a model, from its `Config` alone. Sections
/// `1..=layer_sections` hold whole layers, `layers_per_section` each; the
/// last section (the output section) holds the token embedding and, for an
/// unshared model, the classifier after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub layers_per_section: u32,
    pub layer_sections: u32,
    /// Bytes of one layer's seven matrices.
    pub layer_len: u64,
    /// Bytes of the embedding (and of an unshared classifier).
    pub table_len: u64,
}

impl Layout {
    /// The layout of a configuration; `InvalidConfig` when a layer does not
    /// fit one section.
    pub fn new(config: &Config) -> Result<Layout, Error> {
        let mut layer_len = 0u64;
        for m in LayerMatrix::ALL {
            let (rows, cols) = m.shape(config);
            layer_len += matrix_len(rows, cols);
        }
        let table_len = matrix_len(config.vocab_size, config.dim);
        let max = MAX_SECTION_LEN as u64;
        if layer_len > max || table_len > max {
            return Err(Error::InvalidConfig);
        }
        let layers_per_section = ((max / layer_len) as u32).min(config.n_layers);
        let layer_sections = config.n_layers.div_ceil(layers_per_section);
        Ok(Layout {
            layers_per_section,
            layer_sections,
            layer_len,
            table_len,
        })
    }

    /// Section zero, the layer sections and the output section.
    #[inline(always)]
    pub fn section_count(&self) -> u32 {
        self.layer_sections + 2
    }

    /// The section holding the embedding and the classifier.
    #[inline(always)]
    pub fn output_section(&self) -> u32 {
        self.layer_sections + 1
    }

    /// The section holding a layer's matrices.
    #[inline(always)]
    pub fn layer_section(&self, layer: u32) -> u32 {
        1 + layer / self.layers_per_section
    }

    /// The length of matrix section `index` (1 or more).
    pub fn section_len(&self, config: &Config, index: u32, shared_classifier: bool) -> u64 {
        if index == self.output_section() {
            if shared_classifier {
                self.table_len
            } else {
                2 * self.table_len
            }
        } else if index >= 1 && index <= self.layer_sections {
            let first = (index - 1) * self.layers_per_section;
            let layers = (config.n_layers - first).min(self.layers_per_section);
            layers as u64 * self.layer_len
        } else {
            0
        }
    }

    /// Where a layer's matrix sits.
    pub fn matrix(&self, config: &Config, layer: u32, which: LayerMatrix) -> MatrixRef {
        let mut offset = (layer % self.layers_per_section) as u64 * self.layer_len;
        for m in LayerMatrix::ALL {
            if m == which {
                break;
            }
            let (rows, cols) = m.shape(config);
            offset += matrix_len(rows, cols);
        }
        let (rows, cols) = which.shape(config);
        MatrixRef {
            section: self.layer_section(layer),
            offset: offset as usize,
            rows,
            cols,
        }
    }

    /// Where the token embedding sits.
    pub fn embedding(&self, config: &Config) -> MatrixRef {
        MatrixRef {
            section: self.output_section(),
            offset: 0,
            rows: config.vocab_size,
            cols: config.dim,
        }
    }

    /// Where the classifier sits: the embedding itself when shared.
    pub fn classifier(&self, config: &Config, shared_classifier: bool) -> MatrixRef {
        let mut m = self.embedding(config);
        if !shared_classifier {
            m.offset = self.table_len as usize;
        }
        m
    }
}

/// A reader over section zero: the header, the configuration, the section
/// table, the tables, the norms and the tokenizer. `new` checks that every
/// offset and count fits; it reads nothing per token, so a turn can afford it.
#[derive(Clone, Copy, Debug)]
pub struct Metadata<'a> {
    /// Section zero's bytes.
    pub bytes: &'a [u8],
    pub config: Config,
    pub layout: Layout,
    pub shared_classifier: bool,
    pub inv_sqrt_head: u32,
    pub max_token_len: u32,
    pub(crate) exp_table: usize,
    pub(crate) silu_table: usize,
    pub(crate) rope_table: usize,
    pub(crate) norms: usize,
    pub(crate) token_offsets: usize,
    pub(crate) token_scores: usize,
    pub(crate) token_sorted: usize,
    pub(crate) token_bytes: usize,
    pub(crate) token_bytes_len: usize,
}

/// Lengths in bytes of section zero's arrays, from the configuration.
pub struct ZeroArrays {
    pub exp_table: u64,
    pub silu_table: u64,
    pub rope_table: u64,
    pub norms: u64,
    pub token_offsets: u64,
    pub token_scores: u64,
    pub token_sorted: u64,
}

impl ZeroArrays {
    pub fn new(config: &Config) -> ZeroArrays {
        let vocab = config.vocab_size as u64;
        ZeroArrays {
            exp_table: 4 * TABLE_LEN as u64,
            silu_table: 4 * TABLE_LEN as u64,
            rope_table: 8 * config.seq_len as u64 * (config.head_size() as u64 / 2),
            norms: 4 * config.dim as u64 * (2 * config.n_layers as u64 + 1),
            token_offsets: 4 * (vocab + 1),
            token_scores: 4 * vocab,
            token_sorted: 4 * vocab,
        }
    }
}

impl<'a> Metadata<'a> {
    /// Parses section zero. `InvalidFormat` for a wrong tag or version, a
    /// section table that does not match the layout, or any array that does
    /// not fit; `InvalidConfig` for a configuration out of range.
    pub fn new(bytes: &'a [u8]) -> Result<Metadata<'a>, Error> {
        if bytes.len() < SECTION_TABLE || bytes[..8] != MAGIC {
            return Err(Error::InvalidFormat);
        }
        if read_u32(bytes, header::VERSION) != VERSION
            || bytes[header::RESERVED..header::LEN].iter().any(|&b| b != 0)
        {
            return Err(Error::InvalidFormat);
        }
        let config = Config::read(&bytes[header::CONFIG..header::CONFIG + Config::LEN])?;
        let layout = Layout::new(&config)?;
        let flags = read_u32(bytes, header::FLAGS);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Error::InvalidFormat);
        }
        let config = config.with_charges(ChargeTable::from_flags(flags));
        let shared_classifier = flags & FLAG_SHARED_CLASSIFIER != 0;
        if !shared_classifier && 2 * layout.table_len > MAX_SECTION_LEN as u64 {
            return Err(Error::InvalidFormat);
        }
        let count = read_u32(bytes, header::SECTION_COUNT);
        if count != layout.section_count() {
            return Err(Error::InvalidFormat);
        }
        let table_end = SECTION_TABLE + count as usize * SECTION_ENTRY_LEN;
        if bytes.len() < table_end {
            return Err(Error::InvalidFormat);
        }
        // Section zero is this buffer; the others follow it in order, each
        // at the next multiple of eight, with the layout's lengths.
        if read_u64(bytes, SECTION_TABLE) != 0
            || read_u64(bytes, SECTION_TABLE + 8) != bytes.len() as u64
        {
            return Err(Error::InvalidFormat);
        }
        let mut end = bytes.len() as u64;
        for i in 1..count {
            let entry = SECTION_TABLE + i as usize * SECTION_ENTRY_LEN;
            let offset = read_u64(bytes, entry);
            let len = read_u64(bytes, entry + 8);
            if offset != align8(end) || len != layout.section_len(&config, i, shared_classifier) {
                return Err(Error::InvalidFormat);
            }
            end = offset + len;
        }

        let arrays = ZeroArrays::new(&config);
        let token_bytes_len = read_u32(bytes, header::TOKEN_BYTES_LEN) as u64;
        // An array's offset, checked to be aligned, after the section table
        // and inside section zero.
        let place = |field: usize, len: u64| -> Result<usize, Error> {
            let offset = read_u32(bytes, field) as u64;
            let inside = offset.is_multiple_of(8)
                && offset >= table_end as u64
                && offset + len <= bytes.len() as u64;
            inside
                .then_some(offset as usize)
                .ok_or(Error::InvalidFormat)
        };
        let m = Metadata {
            bytes,
            config,
            layout,
            shared_classifier,
            inv_sqrt_head: read_u32(bytes, header::INV_SQRT_HEAD),
            max_token_len: read_u32(bytes, header::MAX_TOKEN_LEN),
            exp_table: place(header::EXP_TABLE, arrays.exp_table)?,
            silu_table: place(header::SILU_TABLE, arrays.silu_table)?,
            rope_table: place(header::ROPE_TABLE, arrays.rope_table)?,
            norms: place(header::NORMS, arrays.norms)?,
            token_offsets: place(header::TOKEN_OFFSETS, arrays.token_offsets)?,
            token_scores: place(header::TOKEN_SCORES, arrays.token_scores)?,
            token_sorted: place(header::TOKEN_SORTED, arrays.token_sorted)?,
            token_bytes: place(header::TOKEN_BYTES, token_bytes_len)?,
            token_bytes_len: token_bytes_len as usize,
        };
        if m.max_token_len as usize > MAX_TOKEN_BYTES {
            return Err(Error::InvalidFormat);
        }
        Ok(m)
    }

    /// The count of sections, section zero included.
    #[inline(always)]
    pub fn section_count(&self) -> usize {
        self.layout.section_count() as usize
    }

    /// Where section `index` starts in the artifact; 0 past the table.
    #[inline(always)]
    pub fn section_offset(&self, index: usize) -> usize {
        self.section_entry(index, 0)
    }

    /// The length of section `index`; 0 past the table.
    #[inline(always)]
    pub fn section_len(&self, index: usize) -> usize {
        self.section_entry(index, 8)
    }

    fn section_entry(&self, index: usize, field: usize) -> usize {
        if index >= self.section_count() {
            return 0;
        }
        read_u64(
            self.bytes,
            SECTION_TABLE + index * SECTION_ENTRY_LEN + field,
        ) as usize
    }

    /// The header's flags word (`KNOWN_FLAGS` bits only: `new` checked).
    #[inline(always)]
    pub fn flags(&self) -> u32 {
        read_u32(self.bytes, header::FLAGS)
    }

    /// The full length of the artifact this section zero describes.
    pub fn artifact_len(&self) -> usize {
        let last = self.section_count() - 1;
        self.section_offset(last) + self.section_len(last)
    }

    /// Where a layer's matrix sits.
    #[inline(always)]
    pub fn matrix(&self, layer: u32, which: LayerMatrix) -> MatrixRef {
        self.layout.matrix(&self.config, layer, which)
    }

    /// Where the token embedding sits.
    #[inline(always)]
    pub fn embedding(&self) -> MatrixRef {
        self.layout.embedding(&self.config)
    }

    /// Where the classifier sits.
    #[inline(always)]
    pub fn classifier(&self) -> MatrixRef {
        self.layout.classifier(&self.config, self.shared_classifier)
    }

    /// Entry `index` of the exponential table (`fixed::exp_index` picks it).
    #[inline(always)]
    pub fn exp_entry(&self, index: usize) -> u32 {
        read_u32(self.bytes, self.exp_table + 4 * index)
    }

    /// `len` words of section zero from byte `at`, when they are aligned
    /// in memory (an artifact's tables always are): loops index them
    /// without reading each word byte by byte.
    #[inline(always)]
    fn words(&self, at: usize, len: usize) -> Option<&'a [u32]> {
        let bytes = self.bytes.get(at..at + 4 * len)?;
        // SAFETY: any four bytes are a valid u32; `align_to` only returns a
        // middle of whole, aligned words.
        let (head, words, _) = unsafe { bytes.align_to::<u32>() };
        (head.is_empty() && words.len() == len).then_some(words)
    }

    /// The exponential table as words (see `words`).
    #[inline(always)]
    pub fn exp_words(&self) -> Option<&'a [u32]> {
        self.words(self.exp_table, TABLE_LEN)
    }

    /// The SiLU table as words (see `words`).
    #[inline(always)]
    pub fn silu_words(&self) -> Option<&'a [u32]> {
        self.words(self.silu_table, TABLE_LEN)
    }

    /// The rotary table's row for `position` as words: the cosine and sine
    /// of each pair in turn (see `words`).
    #[inline(always)]
    pub fn rope_words(&self, position: u32) -> Option<&'a [u32]> {
        let half = self.config.head_size() / 2;
        self.words(self.rope_table + 8 * position as usize * half, 2 * half)
    }

    /// Entry `index` of the SiLU table, 16 fractional bits (`fixed::silu`
    /// picks it).
    #[inline(always)]
    pub fn silu_entry(&self, index: usize) -> i64 {
        read_u32(self.bytes, self.silu_table + 4 * index) as i32 as i64
    }

    /// The cosine and sine (24 fractional bits) of pair `pair` at `position`.
    #[inline(always)]
    pub fn rope(&self, position: u32, pair: usize) -> (i64, i64) {
        let half = self.config.head_size() / 2;
        let at = self.rope_table + 8 * (position as usize * half + pair);
        (
            read_u32(self.bytes, at) as i32 as i64,
            read_u32(self.bytes, at + 4) as i32 as i64,
        )
    }

    /// A normalization weight vector (24 fractional bits): `0..n_layers` for
    /// attention, `n_layers..2 * n_layers` for feed-forward, `2 * n_layers`
    /// for the final normalization.
    #[inline(always)]
    pub fn norm(&self, index: u32) -> &'a [u8] {
        let len = 4 * self.config.dim as usize;
        let start = self.norms + index as usize * len;
        &self.bytes[start..start + len]
    }

    /// Index of the attention normalization of `layer` for `norm`.
    pub fn attention_norm(&self, layer: u32) -> u32 {
        layer
    }

    /// Index of the feed-forward normalization of `layer` for `norm`.
    pub fn ffn_norm(&self, layer: u32) -> u32 {
        self.config.n_layers + layer
    }

    /// Index of the final normalization for `norm`.
    pub fn final_norm(&self) -> u32 {
        2 * self.config.n_layers
    }
}
