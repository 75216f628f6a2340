//! Where each matrix and section of an artifact lies: a function of the
//! `Config` alone.

use super::*;

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

/// Where one matrix, or one piece of a matrix split by rows, sits: `rows`
/// little-endian `u32` scales at `offset` in section `section`, then
/// `rows * cols` weight bytes (each weight plus 128). The piece holds the
/// whole matrix's rows `first_row..first_row + rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixRef {
    pub section: u32,
    pub offset: usize,
    pub rows: u32,
    pub cols: u32,
    /// The whole matrix's row this piece starts at (0 for a whole matrix).
    pub first_row: u32,
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

    /// The whole matrix's row after this piece's last.
    #[inline(always)]
    pub fn end_row(&self) -> u32 {
        self.first_row + self.rows
    }
}

/// Bytes of a matrix blob: scales, weights, padding to eight.
#[inline(always)]
pub const fn matrix_len(rows: u32, cols: u32) -> u64 {
    align8(4 * rows as u64 + rows as u64 * cols as u64)
}

/// The most rows of `cols` columns one section holds, a multiple of four
/// (the kernel's tile, so that each piece of a split matrix is tiled as a
/// matrix of its own).
#[inline(always)]
pub const fn rows_per_section(cols: u32) -> u32 {
    ((MAX_SECTION_LEN as u64 / (4 + cols as u64)) as u32) & !3
}

/// Where one layer matrix lies among its layer's sections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Part {
    /// The section of its first piece, counted from the layer's first.
    section: u32,
    /// Its offset there, from the start of the layer's bytes in it.
    offset: u64,
    /// Rows per piece: all its rows when it is whole.
    rows: u32,
}

/// The matrix sections of a model, from its `Config` alone.
///
/// Sections `1..=layer_sections` hold the layers: whole layers,
/// `layers_per_section` each, when a layer fits a section; otherwise each
/// layer spans `sections_per_layer` sections of its own, its matrices
/// packed in order and a matrix larger than a section split by rows into
/// pieces of `rows_per_section` rows, each starting a section. The output
/// sections follow: the token embedding, whole or split the same way into
/// `table_sections`, then an unshared classifier, after the embedding in
/// the same section when both fit one, else in `table_sections` of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub layers_per_section: u32,
    pub sections_per_layer: u32,
    pub layer_sections: u32,
    /// Bytes of one layer's seven matrices, unsplit.
    pub layer_len: u64,
    /// Bytes of the whole embedding, unsplit (and of an unshared classifier).
    pub table_len: u64,
    /// Rows of the embedding (and of the classifier) per section: the
    /// whole vocabulary when it fits one.
    pub table_rows: u32,
    /// Sections the embedding spans.
    pub table_sections: u32,
    /// The section of the classifier's first row, and its offset there.
    classifier_section: u32,
    classifier_offset: u64,
    parts: [Part; 7],
}

impl Layout {
    /// The layout of a configuration; `InvalidConfig` when a section would
    /// not hold even four rows of a matrix (no configuration in range).
    pub fn new(config: &Config) -> Result<Layout, Error> {
        let max = MAX_SECTION_LEN as u64;
        let mut parts = [Part::default(); 7];
        let mut layer_len = 0u64;
        for (part, m) in parts.iter_mut().zip(LayerMatrix::ALL) {
            let (rows, cols) = m.shape(config);
            *part = Part {
                section: 0,
                offset: layer_len,
                rows,
            };
            layer_len += matrix_len(rows, cols);
        }
        let (layers_per_section, sections_per_layer) = if layer_len <= max {
            (((max / layer_len) as u32).min(config.n_layers), 1)
        } else {
            (1, pack_layer(config, &mut parts)?)
        };
        let layer_sections = config.n_layers.div_ceil(layers_per_section) * sections_per_layer;

        let vocab = config.vocab_size;
        let table_len = matrix_len(vocab, config.dim);
        let table_rows = if table_len <= max {
            vocab
        } else {
            rows_per_section(config.dim)
        };
        if table_rows == 0 {
            return Err(Error::InvalidConfig);
        }
        let table_sections = vocab.div_ceil(table_rows);
        let output = layer_sections + 1;
        let (classifier_section, classifier_offset) = if config.shared_classifier {
            (output, 0)
        } else if table_sections == 1 && 2 * table_len <= max {
            (output, table_len)
        } else {
            (output + table_sections, 0)
        };
        Ok(Layout {
            layers_per_section,
            sections_per_layer,
            layer_sections,
            layer_len,
            table_len,
            table_rows,
            table_sections,
            classifier_section,
            classifier_offset,
            parts,
        })
    }

    /// Section zero, the layer sections and the output sections.
    #[inline(always)]
    pub fn section_count(&self) -> u32 {
        let classifier_sections = if self.classifier_section > self.output_section() {
            self.table_sections
        } else {
            0
        };
        self.layer_sections + 1 + self.table_sections + classifier_sections
    }

    /// The first section of the embedding.
    #[inline(always)]
    pub fn output_section(&self) -> u32 {
        self.layer_sections + 1
    }

    /// Whether the embedding spans more than one section: then which
    /// section an embedding reads depends on the token, and a turn embeds
    /// only as its first chunk (`planner`).
    #[inline(always)]
    pub fn embedding_split(&self) -> bool {
        self.table_sections > 1
    }

    /// The first section holding a layer's matrices.
    #[inline(always)]
    pub fn layer_section(&self, layer: u32) -> u32 {
        1 + layer / self.layers_per_section * self.sections_per_layer
    }

    /// The length of matrix section `index` (1 or more); 0 past the last.
    pub fn section_len(&self, config: &Config, index: u32) -> u64 {
        let output = self.output_section();
        if index == 0 {
            0
        } else if index < output {
            if self.sections_per_layer == 1 {
                let first = (index - 1) * self.layers_per_section;
                let layers = (config.n_layers - first).min(self.layers_per_section);
                return layers as u64 * self.layer_len;
            }
            // The pieces of one layer that fall in this one of its sections.
            let local = (index - 1) % self.sections_per_layer;
            let mut len = 0;
            for (part, m) in self.parts.iter().zip(LayerMatrix::ALL) {
                let (rows, cols) = m.shape(config);
                let pieces = rows.div_ceil(part.rows);
                if (part.section..part.section + pieces).contains(&local) {
                    let first = (local - part.section) * part.rows;
                    let end = part.offset + matrix_len(part.rows.min(rows - first), cols);
                    len = len.max(end);
                }
            }
            len
        } else if index < output + self.table_sections {
            if self.classifier_offset > 0 {
                // The embedding and an unshared classifier together.
                return 2 * self.table_len;
            }
            let piece = self.table_piece(config, output, index - output, 0);
            piece.byte_len() as u64
        } else if index < self.section_count() {
            let piece = index - self.classifier_section;
            self.table_piece(config, self.classifier_section, piece, 0)
                .byte_len() as u64
        } else {
            0
        }
    }

    /// Where a layer's matrix sits: the piece holding `row` (any row of a
    /// whole matrix gives the whole).
    #[inline(always)]
    pub fn matrix(&self, config: &Config, layer: u32, which: LayerMatrix, row: u32) -> MatrixRef {
        let part = self.parts[which as usize];
        let (rows, cols) = which.shape(config);
        let piece = row / part.rows;
        let first_row = piece * part.rows;
        MatrixRef {
            section: self.layer_section(layer) + part.section + piece,
            offset: ((layer % self.layers_per_section) as u64 * self.layer_len + part.offset)
                as usize,
            rows: part.rows.min(rows - first_row),
            cols,
            first_row,
        }
    }

    /// The section of the piece of a layer's matrix (of `rows` rows) that
    /// holds `row`, and the row that piece ends before: what the planner
    /// needs of `matrix`, for every chunk.
    #[inline(always)]
    pub fn piece_end(&self, layer: u32, which: LayerMatrix, row: u32, rows: u32) -> (u32, u32) {
        let part = &self.parts[which as usize];
        let first = self.layer_section(layer) + part.section;
        if part.rows == rows {
            return (first, rows);
        }
        let piece = row / part.rows;
        (first + piece, ((piece + 1) * part.rows).min(rows))
    }

    /// Where the token embedding's row `token` sits.
    #[inline(always)]
    pub fn embedding(&self, config: &Config, token: u32) -> MatrixRef {
        self.table_piece(config, self.output_section(), token / self.table_rows, 0)
    }

    /// Where the classifier's row `row` sits: the embedding itself when shared.
    #[inline(always)]
    pub fn classifier(&self, config: &Config, row: u32) -> MatrixRef {
        let piece = row / self.table_rows;
        self.table_piece(
            config,
            self.classifier_section,
            piece,
            self.classifier_offset,
        )
    }

    /// Piece `piece` of a vocabulary-by-dim table whose first piece is in
    /// section `first`.
    #[inline(always)]
    fn table_piece(&self, config: &Config, first: u32, piece: u32, offset: u64) -> MatrixRef {
        let first_row = piece * self.table_rows;
        MatrixRef {
            section: first + piece,
            offset: offset as usize,
            rows: self.table_rows.min(config.vocab_size - first_row),
            cols: config.dim,
            first_row,
        }
    }
}

/// Packs a layer larger than a section into sections of its own: each
/// matrix after the one before in the same section when it fits there,
/// else from a new section; a matrix larger than a section split by rows,
/// each piece starting a section. Returns the sections a layer spans.
/// (Apart: only models past stories110M's size need it.)
#[cold]
#[inline(never)]
fn pack_layer(config: &Config, parts: &mut [Part; 7]) -> Result<u32, Error> {
    let max = MAX_SECTION_LEN as u64;
    let (mut section, mut used) = (0u32, 0u64);
    for (part, m) in parts.iter_mut().zip(LayerMatrix::ALL) {
        let (rows, cols) = m.shape(config);
        let len = matrix_len(rows, cols);
        if len <= max {
            if used + len > max {
                (section, used) = (section + 1, 0);
            }
            *part = Part {
                section,
                offset: used,
                rows,
            };
            used += len;
            continue;
        }
        let per = rows_per_section(cols);
        if per == 0 {
            return Err(Error::InvalidConfig);
        }
        if used > 0 {
            section += 1;
        }
        *part = Part {
            section,
            offset: 0,
            rows: per,
        };
        let pieces = rows.div_ceil(per);
        section += pieces - 1;
        used = matrix_len(rows - (pieces - 1) * per, cols);
    }
    Ok(section + 1)
}
