//! Compute units per multiply-accumulate (`docs/sbf.md`, "The row kernel"):
//! the slope between two turns that differ only in the count of matrix
//! rows. Both start from the same state, put at row 0 of a matrix, under two
//! turn allowances that both end inside that matrix.

use curta_core::planner::{self, CHARGES};
use curta_core::state::{field, Header, Phase};
use solana_keypair::Keypair;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::manifest::RunSpec;
use crate::models::{artifact, metadata};
use crate::native;
use crate::program_test::{self, Chain};

/// The models whose slope the reports give: each shape's largest matrix.
pub const MODELS: [&str; 4] = [
    "stories260K",
    "stories15M-synthetic",
    "stories42M-synthetic",
    "stories110M-synthetic",
];

/// What one slope measurement found.
#[derive(Clone, Debug)]
pub struct Slope {
    pub model: String,
    pub matrix: &'static str,
    pub rows: [u32; 2],
    pub cols: u32,
    pub program_cu: [u64; 2],
}

impl Slope {
    /// Compute units per multiply-accumulate.
    pub fn cu_per_mac(&self) -> f64 {
        (self.program_cu[1] - self.program_cu[0]) as f64
            / ((self.rows[1] - self.rows[0]) as f64 * self.cols as f64)
    }
}

/// Measures the slope on `model`'s largest matrix per row: the classifier.
pub async fn measure(model: &str) -> Slope {
    let art = artifact(model);
    let m = metadata(&art);
    let cfg = m.config;
    // A state past tokenizing, put at row 0 of the classifier.
    let spec = RunSpec {
        name: "slope".into(),
        model: model.into(),
        prompt: b"Once upon a time".to_vec(),
        max_tokens: 4,
        temperature_q16: 0,
        seed: 0,
    };
    let mut state = native::open(&m, &spec);
    native::step(&art, &m, &mut state);
    // The classifier runs at the last prompt position.
    let prompt_tokens = Header::read(&state).expect("header").prompt_tokens;
    for (at, v) in [
        (field::PHASE, Phase::Classifier as u32),
        (field::POSITION, prompt_tokens - 1),
    ] {
        state[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    let h = Header::read(&state).expect("header");
    // Two allowances, for a fifth and four fifths of the rows one turn can
    // hold (or of the matrix, when smaller): both end inside the matrix, on
    // a whole tile of four rows, so that the slope is the tiles' own.
    let setup = CHARGES.turn + CHARGES.chunk + CHARGES.matrix_setup.of(cfg.dim);
    let row = CHARGES.row.of(cfg.dim);
    let most = ((CHARGES.allowance - setup) / row).min(cfg.vocab_size - 1);
    let tiles = |n: u32| n / 4 * 4;
    let allowances = [
        setup + tiles(most / 5) * row,
        setup + tiles(most * 4 / 5) * row,
    ];
    let mut rows = [0u32; 2];
    for (r, &a) in rows.iter_mut().zip(&allowances) {
        let plan = planner::plan_cursor(&cfg, &h.run_shape(), &h.cursor(), a).expect("plan");
        assert_eq!(
            plan.end.phase,
            Phase::Classifier,
            "the turn must end inside the classifier"
        );
        *r = plan.end.row;
    }

    let admin = Keypair::new();
    let owner = Keypair::new();
    let (pt, keys) =
        program_test::preloaded_bank(&admin.pubkey(), allowances[0], &art, &owner.pubkey(), 0);
    let run_key = Pubkey::new_unique();
    let mut c = Chain::start(pt).await;
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    let mut program_cu = [0u64; 2];
    for (cu, &a) in program_cu.iter_mut().zip(&allowances) {
        // The run's allowance is the one its turns are cut under.
        let run_account = program_test::preloaded_run(&keys, &owner.pubkey(), &cfg, &state, a);
        c.ctx.set_account(&run_key, &run_account.into());
        let out = c.turn(&keys, &run_key, &cfg, a).await;
        assert_eq!(out.result, Ok(()), "slope turn: {:#?}", out.logs);
        *cu = out.program_cu;
    }
    Slope {
        model: model.into(),
        matrix: "classifier",
        rows,
        cols: cfg.dim,
        program_cu,
    }
}
