//! The model's shape (llama2.c's seven header values and the charge
//! table), its checks and its derived sizes.

use super::*;

/// A model's shape: llama2.c's seven header values, in its order, the
/// charge table its turns are planned with, and whether its classifier is
/// its embedding. The WebAssembly interface passes the seven values as seven
/// `u32`s (28 bytes); the other two are not among them but in the artifact's
/// flags (`FLAG_MEASURED_CHARGES`, `FLAG_SHARED_CLASSIFIER`), which
/// `with_flags` reads.
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
    /// The classifier is the token embedding (llama2.c's shared weights):
    /// where an unshared classifier lies depends on it (`Layout`).
    pub shared_classifier: bool,
}

impl Config {
    /// The encoded size: seven `u32`.
    pub const LEN: usize = 28;

    /// Reads and validates a configuration from 28 little-endian bytes,
    /// planned with the specification's table, its classifier shared
    /// (`with_flags` sets both from a flags word).
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
            shared_classifier: true,
        };
        config.validate()?;
        Ok(config)
    }

    /// The same shape, planned with `charges`.
    #[inline(always)]
    pub const fn with_charges(self, charges: ChargeTable) -> Config {
        Config { charges, ..self }
    }

    /// The same shape, with the charge table and the classifier an
    /// artifact's or a Model account's flags word gives.
    #[inline(always)]
    pub const fn with_flags(self, flags: u32) -> Config {
        Config {
            charges: ChargeTable::from_flags(flags),
            shared_classifier: flags & FLAG_SHARED_CLASSIFIER != 0,
            ..self
        }
    }

    /// The flags word that gives this configuration's charge table and
    /// classifier (`with_flags`' inverse).
    #[inline(always)]
    pub const fn flags(&self) -> u32 {
        let shared = if self.shared_classifier {
            FLAG_SHARED_CLASSIFIER
        } else {
            0
        };
        shared | self.charges.flag()
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
    pub const fn validate(&self) -> Result<(), Error> {
        match self.out_of_range() {
            None => Ok(()),
            Some(_) => Err(Error::InvalidConfig),
        }
    }

    /// The first value outside its range, if any. The ranges keep every
    /// size the core computes inside 32 bits on every target
    /// (`docs/format.md`, "The configuration"). A `const fn`, as the sizes
    /// that follow from it (`run::account_size`).
    #[inline(always)]
    pub const fn out_of_range(&self) -> Option<OutOfRange> {
        const fn out(name: &'static str, value: u32, rule: &'static str) -> Option<OutOfRange> {
            Some(OutOfRange { name, value, rule })
        }
        const fn within(value: u32, low: u32, high: u32) -> bool {
            low <= value && value <= high
        }
        if !within(self.dim, 2, 8192) {
            return out("dim", self.dim, "from 2 to 8192");
        }
        if !within(self.hidden_dim, 1, 65536) {
            return out("hidden_dim", self.hidden_dim, "from 1 to 65536");
        }
        if !within(self.n_layers, 1, 256) {
            return out("n_layers", self.n_layers, "from 1 to 256");
        }
        if !within(self.n_heads, 1, 256) {
            return out("n_heads", self.n_heads, "from 1 to 256");
        }
        if !within(self.n_kv_heads, 1, self.n_heads) {
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
        if !within(self.vocab_size, 259, 1 << 20) {
            return out("vocab_size", self.vocab_size, "from 259 to 1048576");
        }
        if !within(self.seq_len, 1, 65536) {
            return out("seq_len", self.seq_len, "from 1 to 65536");
        }
        None
    }

    /// Elements per attention head.
    #[inline(always)]
    pub const fn head_size(&self) -> usize {
        (self.dim / self.n_heads) as usize
    }

    /// Elements of a key or value vector: `n_kv_heads` heads.
    #[inline(always)]
    pub const fn kv_dim(&self) -> usize {
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
