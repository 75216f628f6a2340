//! The planner's charges: the specification's table and the measured one,
//! each a constant and per-unit terms for every kind of chunk
//! (`docs/spec.md`, "Charges" and "The measured table").

use crate::format::ChargeTable;

/// A vector operation's charge: `per_element * n + base`.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    pub per_element: u32,
    pub base: u32,
}

impl Linear {
    #[inline(always)]
    pub const fn of(&self, n: u32) -> u32 {
        self.per_element * n + self.base
    }
}

/// A row's charge: `per_eight * floor(n / 8) + per_rest * (n mod 8) + base`.
#[derive(Clone, Copy, Debug)]
pub struct PerEight {
    pub per_eight: u32,
    pub per_rest: u32,
    pub base: u32,
}

impl PerEight {
    #[inline(always)]
    pub const fn of(&self, n: u32) -> u32 {
        self.per_eight * (n / 8) + self.per_rest * (n % 8) + self.base
    }
}

/// Every compute-unit charge of the planner, in one of its two tables: the
/// specification's (`CHARGES`, `docs/spec.md`, "Charges") and the measured
/// one (`MEASURED_CHARGES`, `docs/spec.md`, "The measured table"). A model
/// chooses one (`Config::charges`); the turn limits are the same in both.
#[derive(Clone, Copy, Debug)]
pub struct Charges {
    /// Charged once per turn for the instruction: accounts, payment, event.
    pub turn: u32,
    /// Charged per chunk: reading the cursor, dispatching, writing it back.
    pub chunk: u32,
    /// The turn's allowance, and the range a configured allowance may take.
    pub allowance: u32,
    pub min_allowance: u32,
    /// What one transaction may use.
    pub transaction_limit: u32,
    /// Matrix chunk setup (summing the input vector), per column.
    pub matrix_setup: Linear,
    pub row: PerEight,
    pub cache_row: PerEight,
    pub embedding: Linear,
    pub rms_norm: Linear,
    pub rotary: Linear,
    pub residual_norm: Linear,
    pub silu: Linear,
    pub residual: Linear,
    /// Attention stages 0..=3: setup per chunk.
    pub attention_setup: [u32; 4],
    /// Stage 0, per position, over the head size q.
    pub score: PerEight,
    /// Stages 1 and 2, per position.
    pub exponential: u32,
    pub normalization: u32,
    /// Stage 3, per output element, over the positions p.
    pub weighted_value: Linear,
    pub sampling_setup: u32,
    /// Per vocabulary entry of passes 0 (maximum), 1 (sum) and 2 (draw).
    pub sampling_entry: [u32; 3],
    /// Finishing a token: advancing the generator, decoding, appending.
    pub sampling_finish: u32,
    /// A vocabulary lookup: `base + probes * (per_probe + per_byte * min(b, byte_cap))`.
    pub lookup_base: u32,
    pub lookup_per_probe: u32,
    pub lookup_per_byte: u32,
    pub lookup_byte_cap: u32,
    /// A step between tokenizer phases.
    pub tokenizer_step: u32,
    /// Applying a merge to t tokens.
    pub merge: Linear,
}

/// The planner's charges.
pub const CHARGES: Charges = Charges {
    turn: 18_000,
    chunk: 160,
    allowance: 1_350_000,
    min_allowance: 22_096,
    transaction_limit: 1_400_000,
    matrix_setup: Linear {
        per_element: 6,
        base: 350,
    },
    row: PerEight {
        per_eight: 37,
        per_rest: 8,
        base: 34,
    },
    cache_row: PerEight {
        per_eight: 37,
        per_rest: 8,
        base: 42,
    },
    embedding: Linear {
        per_element: 16,
        base: 512,
    },
    rms_norm: Linear {
        per_element: 48,
        base: 1_500,
    },
    rotary: Linear {
        per_element: 48,
        base: 512,
    },
    residual_norm: Linear {
        per_element: 56,
        base: 1_500,
    },
    silu: Linear {
        per_element: 24,
        base: 512,
    },
    residual: Linear {
        per_element: 8,
        base: 128,
    },
    attention_setup: [100, 80, 60, 60],
    score: PerEight {
        per_eight: 53,
        per_rest: 11,
        base: 25,
    },
    exponential: 23,
    normalization: 8,
    weighted_value: Linear {
        per_element: 11,
        base: 32,
    },
    sampling_setup: 350,
    sampling_entry: [11, 36, 42],
    sampling_finish: 4_000,
    lookup_base: 500,
    lookup_per_probe: 100,
    lookup_per_byte: 20,
    lookup_byte_cap: 128,
    tokenizer_step: 1_000,
    merge: Linear {
        per_element: 4,
        base: 1_000,
    },
};

/// The measured table: what Curta's own program spends on each kind of chunk
/// on the SBF VM, with at least 5% margin on every chunk measured
/// (`make test-costs`; `docs/spec.md`, "The measured table"). Per-unit terms
/// are the measured slopes plus 5%, rounded up; fixed terms cover the
/// costliest chunk seen plus 5%. Terms no model here exercises (a head size
/// or a width not a multiple of eight, token texts over 12 bytes) keep the
/// specification's per-unit figure.
pub const MEASURED_CHARGES: Charges = Charges {
    turn: 6_000,
    chunk: 160,
    matrix_setup: Linear {
        per_element: 10,
        base: 480,
    },
    row: PerEight {
        per_eight: 28,
        per_rest: 14,
        base: 15,
    },
    cache_row: PerEight {
        per_eight: 28,
        per_rest: 14,
        base: 32,
    },
    embedding: Linear {
        per_element: 12,
        base: 160,
    },
    rms_norm: Linear {
        per_element: 41,
        base: 380,
    },
    rotary: Linear {
        per_element: 42,
        base: 136,
    },
    residual_norm: Linear {
        per_element: 47,
        base: 380,
    },
    silu: Linear {
        per_element: 20,
        base: 40,
    },
    residual: Linear {
        per_element: 6,
        base: 32,
    },
    attention_setup: [272, 64, 272, 72],
    score: PerEight {
        per_eight: 52,
        per_rest: 11,
        base: 15,
    },
    exponential: 17,
    normalization: 8,
    weighted_value: Linear {
        per_element: 10,
        base: 34,
    },
    sampling_setup: 100,
    sampling_entry: [6, 36, 42],
    sampling_finish: 1_000,
    lookup_base: 0,
    lookup_per_probe: 140,
    lookup_per_byte: 20,
    lookup_byte_cap: 128,
    tokenizer_step: 900,
    merge: Linear {
        per_element: 3,
        base: 64,
    },
    ..CHARGES
};

/// The charges `table` holds.
#[inline(always)]
pub const fn charges_of(table: ChargeTable) -> &'static Charges {
    match table {
        ChargeTable::Specification => &CHARGES,
        ChargeTable::Measured => &MEASURED_CHARGES,
    }
}

impl Charges {
    /// One vocabulary lookup of `bytes` bytes: a binary search over the
    /// sorted ids, `floor(log2(vocabulary)) + 1` probes.
    #[inline(always)]
    pub fn lookup(&self, vocab_size: u32, bytes: usize) -> u32 {
        let probes = 32 - vocab_size.leading_zeros();
        let b = if bytes > self.lookup_byte_cap as usize {
            self.lookup_byte_cap
        } else {
            bytes as u32
        };
        self.lookup_base + probes * (self.lookup_per_probe + self.lookup_per_byte * b)
    }
}
