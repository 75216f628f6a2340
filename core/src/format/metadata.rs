//! The reader of section zero: the header, the configuration, the section
//! table, the tables, the norms and the tokenizer.

use super::*;

/// A reader over section zero: the header, the configuration, the section
/// table, the tables, the norms and the tokenizer. `new` checks that every
/// offset and count fits; it reads nothing per token, so a turn can afford it.
#[derive(Clone, Copy, Debug)]
pub struct Metadata<'a> {
    /// Section zero's bytes.
    pub bytes: &'a [u8],
    pub config: Config,
    pub layout: Layout,
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

/// Whether `Metadata::parse` checks every entry of the section table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SectionTable {
    Checked,
    Unchecked,
}

impl<'a> Metadata<'a> {
    /// Parses section zero. `InvalidFormat` for a wrong tag or version, a
    /// section table that does not match the layout, or any array that does
    /// not fit; `InvalidConfig` for a configuration out of range.
    pub fn new(bytes: &'a [u8]) -> Result<Metadata<'a>, Error> {
        Self::parse(bytes, SectionTable::Checked)
    }

    /// `new`, less the check of each matrix section's place in the table:
    /// what a turn parses. A turn reads only the sections it is given, and
    /// checks each one's length against the layout itself; checking every
    /// entry would cost each turn of a model of many sections (110M has
    /// 16, a 1.1B shape hundreds) tens of compute units a section. The
    /// section accessors (`section_offset`, `section_len`, `section_in`,
    /// `artifact_len`) are not for a `Metadata` parsed this way.
    pub fn for_turn(bytes: &'a [u8]) -> Result<Metadata<'a>, Error> {
        Self::parse(bytes, SectionTable::Unchecked)
    }

    fn parse(bytes: &'a [u8], table: SectionTable) -> Result<Metadata<'a>, Error> {
        if bytes.len() < SECTION_TABLE || bytes[..8] != MAGIC {
            return Err(Error::InvalidFormat);
        }
        if read_u32(bytes, header::VERSION) != VERSION
            || bytes[header::RESERVED..header::LEN].iter().any(|&b| b != 0)
        {
            return Err(Error::InvalidFormat);
        }
        let config = Config::read(&bytes[header::CONFIG..header::CONFIG + Config::LEN])?;
        let flags = read_u32(bytes, header::FLAGS);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Error::InvalidFormat);
        }
        let config = config.with_flags(flags);
        let layout = Layout::new(&config)?;
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
        let checked = if table == SectionTable::Checked {
            count
        } else {
            1
        };
        for i in 1..checked {
            let entry = SECTION_TABLE + i as usize * SECTION_ENTRY_LEN;
            let offset = read_u64(bytes, entry);
            let len = read_u64(bytes, entry + 8);
            if offset != align8(end) || len != layout.section_len(&config, i) {
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

    /// Section `index`'s bytes in the whole artifact `artifact`; empty
    /// where the artifact does not hold them.
    #[inline(always)]
    pub fn section_in<'b>(&self, artifact: &'b [u8], index: usize) -> &'b [u8] {
        let offset = self.section_offset(index);
        artifact
            .get(offset..offset + self.section_len(index))
            .unwrap_or(&[])
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

    /// Where a layer's matrix sits: the piece holding `row`.
    #[inline(always)]
    pub fn matrix(&self, layer: u32, which: LayerMatrix, row: u32) -> MatrixRef {
        self.layout.matrix(&self.config, layer, which, row)
    }

    /// Where the token embedding's row `token` sits.
    #[inline(always)]
    pub fn embedding(&self, token: u32) -> MatrixRef {
        self.layout.embedding(&self.config, token)
    }

    /// Where the classifier's row `row` sits.
    #[inline(always)]
    pub fn classifier(&self, row: u32) -> MatrixRef {
        self.layout.classifier(&self.config, row)
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
