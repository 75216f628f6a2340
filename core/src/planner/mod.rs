//! The turn planner: the compute charges, the chunk walk and `plan_turn`.
//! A turn is a run of chunks; the planner prices each chunk from the
//! configuration and the cursor alone, so every target cuts the forward
//! pass at the same places. `turn` walks the same chunks this module yields.
//! The charges themselves, both tables, are `charges`.

mod charges;

pub use charges::{charges_of, Charges, Linear, PerEight, CHARGES, MEASURED_CHARGES};

use crate::format::{Config, LayerMatrix, Layout};
use crate::state::{Cursor, Header, Phase, RunShape};
use crate::Error;

/// One chunk: `count` units of the work item at cursor `at` (the walker's
/// cursor, borrowed while the chunk runs: copying it would cost every
/// chunk on SBF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk<'c> {
    pub at: &'c Cursor,
    pub count: u32,
    /// The compute units charged, the chunk's 160 included.
    pub cost: u32,
    /// The matrix section it reads, or 0 for none.
    pub section: u32,
    /// Whether the chunk completes its work item.
    pub completes: bool,
}

impl Chunk<'_> {
    /// The chunk's kind, for a `Probe`: sampling's chunks that finish a
    /// token (and pay for it) are a kind apart.
    #[inline(always)]
    pub fn kind(&self, run: &RunShape) -> ChunkKind {
        let sub = match self.at.phase {
            Phase::Attention => self.at.stage,
            Phase::Sampling if self.completes && self.at.pass == run.last_pass() => {
                ChunkKind::FINISH + self.at.pass
            }
            Phase::Sampling => self.at.pass,
            _ => 0,
        };
        ChunkKind::new(self.at.phase, sub)
    }
}

/// What a chunk does, as the charges tell kinds apart: its phase, and the
/// attention stage, the sampling pass or the tokenizer step within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkKind(pub u32);

impl ChunkKind {
    /// Tokenizing: a character's lookup (phase 1), a pair's lookup (phase 2).
    pub const LOOKUP: u32 = 0;
    /// Tokenizing: a step between phases (phase 1 to 2, phase 2 to 3).
    pub const STEP: u32 = 1;
    /// Tokenizing: applying a merge (phase 2).
    pub const MERGE: u32 = 2;
    /// Sampling: the chunk that finishes pass `sub - FINISH` and the token.
    pub const FINISH: u32 = 4;

    #[inline(always)]
    pub const fn new(phase: Phase, sub: u32) -> ChunkKind {
        ChunkKind((phase as u32) << 8 | sub)
    }
    pub const fn phase(self) -> u32 {
        self.0 >> 8
    }
    pub const fn sub(self) -> u32 {
        self.0 & 0xFF
    }
}

/// Told of every chunk a turn runs, just after it runs: how compute units
/// are measured per chunk on a target (the program's `cost-probe` build).
/// Turns take `NoProbe`, which compiles to nothing.
pub trait Probe {
    /// The turn's chunks start.
    fn begin(&mut self);
    /// The walker has found the next chunk (a probe may take its measure
    /// apart from the chunk's own).
    fn walked(&mut self) {}
    /// A chunk ran: `describe` gives its kind, units and charge, asked for
    /// only after the probe has read its measure.
    fn chunk(&mut self, describe: impl FnOnce() -> (ChunkKind, u32, u32));
}

impl<T: Probe> Probe for &mut T {
    #[inline(always)]
    fn begin(&mut self) {
        (**self).begin()
    }
    #[inline(always)]
    fn walked(&mut self) {
        (**self).walked()
    }
    #[inline(always)]
    fn chunk(&mut self, describe: impl FnOnce() -> (ChunkKind, u32, u32)) {
        (**self).chunk(describe)
    }
}

/// The probe of every turn but a measured one.
pub struct NoProbe;

impl Probe for NoProbe {
    #[inline(always)]
    fn begin(&mut self) {}
    #[inline(always)]
    fn chunk(&mut self, _: impl FnOnce() -> (ChunkKind, u32, u32)) {}
}

/// The plan of one turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnPlan {
    /// The matrix sections the turn reads, in the order it reaches them.
    pub sections: [u32; 2],
    pub section_count: usize,
    pub estimated_cu: u32,
    /// The most tokens the turn can complete.
    pub max_generated: u32,
    /// Where the cursor stands after the turn. For a turn that tokenizes,
    /// which the planner cannot price without the vocabulary, this is the
    /// cursor the turn starts from (see `docs/state.md`).
    pub end: Cursor,
}

/// The work item at a cursor: `total` units of which the cursor has done
/// `done`; each chunk pays `setup`, `per_unit` per unit and, when it
/// completes the item, `finish`. A vector operation is one unit. Of a
/// matrix split by rows across sections, the item is the piece holding row
/// `done`, and `total` the row it ends before (`advance` leaves the matrix
/// only at its last): no chunk spans two sections.
///
/// In 64 bits: SBF's arithmetic is 64-bit, and every 32-bit result would
/// cost two more instructions to truncate. No field more than needed: each
/// costs every chunk a store and a load.
#[derive(Clone, Copy, Debug)]
struct Work {
    total: u64,
    done: u64,
    setup: u64,
    per_unit: u64,
    finish: u64,
    section: u32,
}

impl Work {
    fn vector(cost: u32) -> Work {
        Work {
            total: 1,
            done: 0,
            setup: 0,
            per_unit: cost as u64,
            finish: 0,
            section: 0,
        }
    }
}

/// The positions attention covers at `position`: itself and all before it.
#[inline(always)]
fn positions_so_far(cursor: &Cursor) -> u32 {
    cursor.position + 1
}

/// Attention stage `stage` of one head, over `p` positions with head size
/// `q`: its count of units and the charge per unit.
#[inline(always)]
fn attention_stage(ch: &Charges, stage: u32, p: u32, q: u32) -> (u32, u32) {
    match stage {
        0 => (p, ch.score.of(q)),
        1 => (p, ch.exponential),
        2 => (p, ch.normalization),
        _ => (q, ch.weighted_value.of(p)),
    }
}

/// One whole head of attention, charged as its four stages' chunks would
/// be if each took all its units.
#[inline(always)]
fn head_charge(ch: &Charges, p: u32, q: u32) -> u32 {
    let mut total = 0;
    for stage in 0..4 {
        let (units, per_unit) = attention_stage(ch, stage, p, q);
        total += ch.chunk + ch.attention_setup[stage as usize] + units * per_unit;
    }
    total
}

/// The work item at cursor `c` in `walker`'s turn, priced from the
/// model's table; an embedding reads `walker.token`'s row. An embedding
/// split across sections that is not the turn's first chunk ends where it
/// starts, so no chunk of it fits (its section depends on a token the turn
/// may sample, which no plan made before the turn could name).
#[inline(always)]
fn work_at(walker: &Walker, c: &Cursor) -> Work {
    let (config, layout, run) = (&walker.config, &walker.layout, &walker.run);
    let ch = crate::planner::charges_of(config.charges);
    let d = config.dim;
    if let Some(which) = c.phase.layer_matrix() {
        let (rows, cols) = which.shape(config);
        let row = match which {
            LayerMatrix::Key | LayerMatrix::Value => ch.cache_row,
            _ => ch.row,
        };
        let (section, end) = layout.piece_end(c.layer, which, c.row, rows);
        return Work {
            total: end as u64,
            done: c.row as u64,
            setup: ch.matrix_setup.of(cols) as u64,
            per_unit: row.of(cols) as u64,
            finish: 0,
            section,
        };
    }
    match c.phase {
        Phase::Embedding => {
            let mut w = Work::vector(ch.embedding.of(d));
            w.section = layout.embedding(config, walker.token).section;
            if layout.embedding_split() && walker.used != ch.turn {
                w.total = 0;
            }
            w
        }
        Phase::AttentionNorm | Phase::FinalNorm => Work::vector(ch.rms_norm.of(d)),
        Phase::Rotary => Work::vector(ch.rotary.of(d)),
        Phase::Attention => {
            let q = config.head_size() as u32;
            let (total, per_unit) = attention_stage(ch, c.stage, positions_so_far(c), q);
            Work {
                total: total as u64,
                done: c.index as u64,
                setup: ch.attention_setup[(c.stage & 3) as usize] as u64,
                per_unit: per_unit as u64,
                finish: 0,
                section: 0,
            }
        }
        Phase::FfnNorm => Work::vector(ch.residual_norm.of(d)),
        Phase::Silu => Work::vector(ch.silu.of(config.hidden_dim)),
        Phase::Residual => Work::vector(ch.residual.of(d)),
        Phase::Classifier => {
            let piece = layout.classifier(config, c.row);
            Work {
                total: piece.end_row() as u64,
                done: c.row as u64,
                setup: ch.matrix_setup.of(d) as u64,
                per_unit: ch.row.of(d) as u64,
                finish: 0,
                section: piece.section,
            }
        }
        _ => {
            // Sampling: the pass that finishes the token pays for it.
            Work {
                total: config.vocab_size as u64,
                done: c.row as u64,
                setup: ch.sampling_setup as u64,
                per_unit: ch.sampling_entry[(c.pass % 3) as usize] as u64,
                finish: if c.pass == run.last_pass() {
                    ch.sampling_finish as u64
                } else {
                    0
                },
                section: 0,
            }
        }
    }
}

/// Moves the cursor past a chunk of the item at it.
#[inline(always)]
fn advance(config: &Config, run: &RunShape, c: &mut Cursor, chunk: &Step) {
    let into_phase = |c: &mut Cursor, phase: Phase| {
        c.phase = phase;
        c.row = 0;
        c.stage = 0;
        c.index = 0;
        c.pass = 0;
    };
    if !chunk.completes {
        match c.phase {
            Phase::Attention => c.index += chunk.count,
            _ => c.row += chunk.count,
        }
        return;
    }
    match c.phase {
        Phase::Attention => {
            c.index = 0;
            if c.stage < 3 {
                c.stage += 1;
            } else if c.row + 1 < config.n_heads {
                c.stage = 0;
                c.row += 1;
            } else {
                into_phase(c, Phase::AttentionOutput);
            }
        }
        Phase::Residual => {
            if c.layer + 1 < config.n_layers {
                c.layer += 1;
                into_phase(c, Phase::AttentionNorm);
            } else if c.position + 1 < run.prompt_tokens {
                c.layer = 0;
                c.position += 1;
                into_phase(c, Phase::Embedding);
            } else {
                c.layer = 0;
                into_phase(c, Phase::FinalNorm);
            }
        }
        Phase::Sampling => {
            if c.pass < run.last_pass() {
                c.pass += 1;
                c.row = 0;
            } else {
                // The run completes at max tokens, or when the context has
                // no room for the next position.
                c.generated += 1;
                if c.generated >= run.max_tokens || c.position + 1 >= config.seq_len {
                    into_phase(c, Phase::Done);
                } else {
                    c.position += 1;
                    into_phase(c, Phase::Embedding);
                }
            }
        }
        // A matrix split by rows across sections goes on to its next piece.
        p => match matrix_rows(config, p) {
            Some(rows) if c.row + chunk.count < rows => c.row += chunk.count,
            _ => into_phase(c, p.next()),
        },
    }
}

/// The rows of the matrix a phase multiplies by, if it does.
#[inline(always)]
fn matrix_rows(config: &Config, phase: Phase) -> Option<u32> {
    match phase {
        Phase::Classifier => Some(config.vocab_size),
        p => Some(p.layer_matrix()?.shape(config).0),
    }
}

/// Steps a turn chunk by chunk. `turn` and `plan_turn` both drive it, so
/// they cut at the same places.
pub struct Walker {
    config: Config,
    layout: Layout,
    run: RunShape,
    pub cursor: Cursor,
    charges: &'static Charges,
    /// Compute units charged so far, the turn's own charge included.
    pub used: u32,
    allowance: u32,
    pub sections: [u32; 2],
    pub section_count: usize,
    pub max_generated: u32,
    /// The token whose embedding row the turn's first chunk reads, when
    /// that chunk is an embedding: which section it names depends on it
    /// where the embedding spans several (`Layout::embedding_split`).
    pub token: u32,
}

impl Walker {
    /// A walker from `cursor`, with `config`'s layout.
    pub fn new(
        (config, layout): (&Config, &Layout),
        run: &RunShape,
        cursor: &Cursor,
        allowance: u32,
    ) -> Result<Walker, Error> {
        check_allowance(allowance)?;
        let charges = crate::planner::charges_of(config.charges);
        Ok(Walker {
            config: *config,
            layout: *layout,
            run: *run,
            cursor: *cursor,
            charges,
            used: charges.turn,
            allowance,
            sections: [0; 2],
            section_count: 0,
            max_generated: 0,
            token: 0,
        })
    }

    /// What is left of the allowance.
    #[inline(always)]
    pub fn left(&self) -> u32 {
        self.allowance.saturating_sub(self.used)
    }

    /// The next chunk of the turn, or `None` when the turn ends here: the
    /// run is complete, the chunk does not fit, it needs a third section,
    /// or it is an embedding that must start a turn (`work_at`).
    /// The cursor stays at the chunk (`chunk` borrows it) until `advance`.
    #[inline(always)]
    pub fn next_step(&mut self) -> Option<Step> {
        let at = &self.cursor;
        if at.phase.is_tokenizing() || at.phase == Phase::Done {
            return None;
        }
        let w = work_at(self, at);
        // A section is known, new with room for it, or a third: the turn
        // ends before it. (No section is 0, the slots' empty value.)
        let [first, second] = self.sections;
        let new_section = w.section != 0 && w.section != first && w.section != second;
        if new_section && second != 0 {
            return None;
        }
        let remaining = w.total - w.done;
        let chunk = self.charges.chunk as u64;
        let budget = (self.left() as u64).checked_sub(chunk + w.setup)?;
        let mut count = remaining.min(budget / w.per_unit);
        if count == remaining && count * w.per_unit + w.finish > budget {
            count -= 1;
        }
        if count == 0 {
            return None;
        }
        let completes = count == remaining;
        let cost = chunk + w.setup + count * w.per_unit + if completes { w.finish } else { 0 };
        if new_section {
            self.sections[self.section_count] = w.section;
            self.section_count += 1;
        }
        self.used += cost as u32;
        if completes && at.phase == Phase::Sampling && at.pass == self.run.last_pass() {
            self.max_generated += 1;
        }
        Some(Step {
            count: count as u32,
            cost: cost as u32,
            section: w.section,
            completes,
        })
    }

    /// The chunk `step` describes, at the cursor.
    #[inline(always)]
    pub fn chunk(&self, step: &Step) -> Chunk<'_> {
        Chunk {
            at: &self.cursor,
            count: step.count,
            cost: step.cost,
            section: step.section,
            completes: step.completes,
        }
    }

    /// Moves the cursor past the chunk `step` describes.
    #[inline(always)]
    pub fn advance(&mut self, step: &Step) {
        advance(&self.config, &self.run, &mut self.cursor, step);
    }
}

/// What `Walker::next_step` found: a chunk of `count` units at the cursor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub count: u32,
    /// The compute units charged, the chunk's 160 included.
    pub cost: u32,
    /// The matrix section it reads, or 0 for none.
    pub section: u32,
    /// Whether the chunk completes its work item.
    pub completes: bool,
}

impl Walker {
    /// At the start of a head (attention, stage 0, position 0), takes as
    /// many whole heads as fit what is left, each charged as its four
    /// chunks would be; returns whether it took any. Taking a head whole is
    /// what the chunk walk does when the head fits, so the cuts are the same.
    pub fn skip_whole_heads(&mut self) -> bool {
        let c = self.cursor;
        if c.phase != Phase::Attention || c.stage != 0 || c.index != 0 {
            return false;
        }
        let q = self.config.head_size() as u32;
        let head = head_charge(self.charges, positions_so_far(&c), q);
        let heads = (self.left() / head).min(self.config.n_heads - c.row);
        if heads == 0 {
            return false;
        }
        self.used += heads * head;
        self.cursor.row += heads;
        if self.cursor.row == self.config.n_heads {
            self.cursor.phase = Phase::AttentionOutput;
            self.cursor.row = 0;
        }
        true
    }
}

/// Refuses an allowance outside 22,096..=1,350,000 compute units (the same
/// in both tables).
pub fn check_allowance(allowance: u32) -> Result<(), Error> {
    if (CHARGES.min_allowance..=CHARGES.allowance).contains(&allowance) {
        Ok(())
    } else {
        Err(Error::InvalidConfig)
    }
}

/// The plan of the next turn of a state, with the default allowance.
pub fn plan_turn(config: Config, state: &[u8]) -> Result<TurnPlan, Error> {
    plan_turn_with(config, state, CHARGES.allowance)
}

/// The plan of the next turn of a state under an allowance.
pub fn plan_turn_with(config: Config, state: &[u8], allowance: u32) -> Result<TurnPlan, Error> {
    let header = Header::read_checked(&config, state)?;
    let token = match header.phase {
        Phase::Embedding => header.embedding_token(&config, state)?,
        _ => 0,
    };
    plan_walk(
        &config,
        &header.run_shape(),
        &header.cursor(),
        token,
        allowance,
    )
}

/// The plan of a turn that starts at `cursor`, where an embedding at the
/// cursor is taken to read token 0's row: the sections named may differ
/// from the turn's where the embedding spans several, never the cuts.
pub fn plan_cursor(
    config: &Config,
    run: &RunShape,
    cursor: &Cursor,
    allowance: u32,
) -> Result<TurnPlan, Error> {
    plan_walk(config, run, cursor, 0, allowance)
}

/// The plan of a turn that starts at `cursor`, whose first embedding (if it
/// starts at one) reads `token`'s row.
fn plan_walk(
    config: &Config,
    run: &RunShape,
    cursor: &Cursor,
    token: u32,
    allowance: u32,
) -> Result<TurnPlan, Error> {
    check_allowance(allowance)?;
    if cursor.phase == Phase::Done {
        return Err(Error::InvalidState);
    }
    if cursor.phase.is_tokenizing() {
        return Ok(TurnPlan {
            sections: [0; 2],
            section_count: 0,
            estimated_cu: allowance,
            max_generated: 0,
            end: *cursor,
        });
    }
    let layout = Layout::new(config)?;
    let mut walker = Walker::new((config, &layout), run, cursor, allowance)?;
    walker.token = token;
    let mut chunks = 0;
    loop {
        // Whole attention heads in one step where they fit: the same cuts
        // as chunk by chunk, without walking four chunks per head (a plan
        // is made for every turn on chain, before the turn itself).
        if !walker.skip_whole_heads() {
            let Some(step) = walker.next_step() else {
                break;
            };
            walker.advance(&step);
        }
        chunks += 1;
    }
    if chunks == 0 {
        // Not even one chunk fits: the allowance is too small for this model.
        return Err(Error::InvalidConfig);
    }
    Ok(TurnPlan {
        sections: walker.sections,
        section_count: walker.section_count,
        estimated_cu: walker.used,
        max_generated: walker.max_generated,
        end: walker.cursor,
    })
}

/// What the chunks of the next turn of `state` cost under the measured
/// table, when that is less than the turn's plan: the compute units a
/// client asks for it (`docs/spec.md`, "A turn's measured price"). The turn
/// is planned with the model's own table, so the cuts are the program's;
/// only their price is the measured one, which bounds what Curta's program
/// spends on any chunk (`make test-costs`, and `make test-bitexact` on
/// every golden turn). A measured-planned turn's price is its plan; a
/// turn that tokenizes, which no plan prices, keeps the allowance.
pub fn measured_price(config: Config, state: &[u8], allowance: u32) -> Result<u32, Error> {
    let plan = plan_turn_with(config, state, allowance)?;
    let header = Header::read_checked(&config, state)?;
    if header.phase.is_tokenizing() || config.charges == crate::format::ChargeTable::Measured {
        return Ok(plan.estimated_cu);
    }
    let layout = Layout::new(&config)?;
    let run = header.run_shape();
    let mut walker = Walker::new((&config, &layout), &run, &header.cursor(), allowance)?;
    walker.token = match header.phase {
        Phase::Embedding => header.embedding_token(&config, state)?,
        _ => 0,
    };
    // A walker at the measured table, asked only for the price of the
    // work at a cursor.
    let measured = Config {
        charges: crate::format::ChargeTable::Measured,
        ..config
    };
    let pricer = Walker::new((&measured, &layout), &run, &header.cursor(), allowance)?;
    let ch = &MEASURED_CHARGES;
    let q = config.head_size() as u32;
    let mut price = ch.turn as u64;
    loop {
        let at = walker.cursor;
        if walker.skip_whole_heads() {
            let heads = match walker.cursor.phase {
                Phase::Attention => walker.cursor.row - at.row,
                _ => config.n_heads - at.row,
            };
            price += heads as u64 * head_charge(ch, positions_so_far(&at), q) as u64;
            continue;
        }
        let Some(step) = walker.next_step() else {
            break;
        };
        let w = work_at(&pricer, &walker.cursor);
        let finish = if step.completes { w.finish } else { 0 };
        price += ch.chunk as u64 + w.setup + step.count as u64 * w.per_unit + finish;
        walker.advance(&step);
    }
    Ok(plan.estimated_cu.min(price.min(u32::MAX as u64) as u32))
}

/// The count of turns from a cursor at or past the first embedding to the
/// end of the run (max tokens or the context), assuming no early end token.
pub(crate) fn count_turns(
    config: &Config,
    run: &RunShape,
    cursor: &Cursor,
    allowance: u32,
) -> Result<u64, Error> {
    let mut c = *cursor;
    let mut turns = 0u64;
    while c.phase != Phase::Done {
        c = plan_cursor(config, run, &c, allowance)?.end;
        turns += 1;
    }
    Ok(turns)
}
