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
