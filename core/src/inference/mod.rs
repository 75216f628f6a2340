//! Running a state: `init_state` starts one, `turn` advances it by the
//! chunks the planner gives one turn, and `quote_turns` counts the turns a
//! run takes. The forward pass itself is in `forward.rs` (phases 3 to 18),
//! `attention.rs` (phase 9) and `sample.rs` (phase 19); the tokenizing
//! phases are in `crate::tokenizer`.

mod attention;
mod forward;
mod sample;

use core::convert::Infallible;

use crate::format::{Config, Metadata};
use crate::planner::{self, NoProbe, Probe, TurnPlan, Walker, CHARGES};
use crate::state::{
    Buffers, Header, Phase, StateLayout, MAX_PROMPT_BYTES, MAX_TEMPERATURE_Q16, NO_TOKEN, ZERO_SEED,
};
use crate::tokenizer::{self, BOS, EOS};
use crate::Error;

use forward::{Forward, Heads};

/// A run's parameters, as `init_state` takes them.
#[derive(Clone, Copy, Debug)]
pub struct RunParams<'p> {
    pub prompt: &'p [u8],
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
}

/// What a buffer handed to `init_state_with` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateMemory {
    /// Anything: it is cleared first.
    Any,
    /// All zero already, as a freshly created account is: clearing it again
    /// would only cost compute units.
    Zeroed,
}

/// Writes a fresh header and the prompt into `state`, a buffer of exactly
/// `state_size` bytes, aligned to eight, and clears everything else.
#[inline(always)]
pub fn init_state(
    config: Config,
    state: &mut [u8],
    prompt: &[u8],
    max_tokens: u32,
    temperature_q16: u32,
    seed: u64,
) -> Result<(), Error> {
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed,
    };
    init_state_with(&config, &params, state, StateMemory::Any)
}

/// `init_state`, told what the buffer holds: a buffer known to be zero is
/// not cleared again (the bytes written are the same).
pub fn init_state_with(
    config: &Config,
    params: &RunParams,
    state: &mut [u8],
    memory: StateMemory,
) -> Result<(), Error> {
    config.validate()?;
    let prompt = params.prompt;
    if prompt.len() > MAX_PROMPT_BYTES
        || prompt.contains(&0)
        || core::str::from_utf8(prompt).is_err()
        || params.temperature_q16 > MAX_TEMPERATURE_Q16
    {
        return Err(Error::InvalidPrompt);
    }
    let layout = StateLayout::new(config, prompt.len(), params.max_tokens)?;
    if state.len() != layout.size {
        return Err(Error::BufferTooSmall);
    }
    if !(state.as_ptr() as usize).is_multiple_of(8) {
        return Err(Error::InvalidState);
    }
    if memory == StateMemory::Any {
        state.fill(0);
    }
    let header = Header {
        prompt_len: prompt.len() as u32,
        max_tokens: params.max_tokens,
        temperature: params.temperature_q16,
        seed: if params.seed == 0 {
            ZERO_SEED
        } else {
            params.seed
        },
        ..Header::default()
    };
    header.write(state);
    state[layout.prompt..layout.prompt + prompt.len()].copy_from_slice(prompt);
    Ok(())
}

/// One matrix section a turn reads: its index and its bytes.
#[derive(Clone, Copy, Debug)]
pub struct WeightSection<'a> {
    pub index: u32,
    pub bytes: &'a [u8],
}

impl WeightSection<'_> {
    /// A slot that holds no section.
    pub const EMPTY: WeightSection<'static> = WeightSection {
        index: 0,
        bytes: &[],
    };
}

/// The matrix sections one turn reads: at most two (a plan never names
/// more), in the order the caller gives them. Derefs to the slice `turn`
/// takes.
#[derive(Clone, Copy, Debug)]
pub struct TurnSections<'a> {
    slots: [WeightSection<'a>; 2],
    count: usize,
}

impl<'a> TurnSections<'a> {
    /// The most sections a turn reads.
    pub const MAX: usize = 2;

    /// Up to two sections: `section(i)` for each slot `i < count`; a count
    /// above two takes the first two.
    #[inline(always)]
    pub fn collect<E>(
        count: usize,
        mut section: impl FnMut(usize) -> Result<WeightSection<'a>, E>,
    ) -> Result<TurnSections<'a>, E> {
        let mut sections = TurnSections {
            slots: [WeightSection::EMPTY; 2],
            count: count.min(Self::MAX),
        };
        for (i, slot) in sections.slots[..sections.count].iter_mut().enumerate() {
            *slot = section(i)?;
        }
        Ok(sections)
    }
}

impl<'a> core::ops::Deref for TurnSections<'a> {
    type Target = [WeightSection<'a>];
    #[inline(always)]
    fn deref(&self) -> &[WeightSection<'a>] {
        &self.slots[..self.count]
    }
}

/// The sections a plan names, sliced from a whole artifact whose section
/// zero `m` reads: what a native caller passes to `turn`. A section the
/// artifact lacks is passed empty, for `turn` to refuse (`MissingWeights`).
pub fn plan_sections<'a>(artifact: &'a [u8], m: &Metadata, plan: &TurnPlan) -> TurnSections<'a> {
    let found = TurnSections::collect(plan.section_count, |i| {
        let index = plan.sections[i];
        let bytes = m.section_in(artifact, index as usize);
        Ok::<_, Infallible>(WeightSection { index, bytes })
    });
    match found {
        Ok(sections) => sections,
        Err(never) => match never {},
    }
}

/// What a turn did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnResult {
    pub complete: bool,
    /// Tokens generated so far.
    pub generated: u32,
    pub generated_this_turn: u32,
    /// The last token this turn sampled, if any.
    pub token: Option<u32>,
    /// The compute units the planner charged.
    pub work: u32,
    /// How many matrix sections the turn read (0 to 2).
    pub sections_read: u32,
}

/// Everything a turn takes besides the state and its plan.
#[derive(Clone, Copy, Debug)]
pub struct TurnInput<'a> {
    pub config: Config,
    /// Section zero.
    pub metadata: &'a [u8],
    /// The matrix sections the plan names, in any order.
    pub sections: &'a [WeightSection<'a>],
    /// The turn's compute units: 22,096 to 1,350,000.
    pub allowance: u32,
}

/// Runs one turn with the default allowance, refusing it before any work
/// when a section its plan needs is missing.
#[inline(always)]
pub fn turn(
    config: Config,
    state: &mut [u8],
    metadata: &[u8],
    sections: &[WeightSection],
) -> Result<TurnResult, Error> {
    let input = TurnInput {
        config,
        metadata,
        sections,
        allowance: CHARGES.allowance,
    };
    let plan = planner::plan_turn_with(config, state, input.allowance)?;
    turn_with(&input, Some(&plan), state)
}

/// Runs one turn under `input`'s allowance: checks the state, the metadata
/// and the sections given, then walks the planner's chunks.
///
/// With `plan` (this state's, under that allowance), every section it
/// names must be among those given, or the turn is refused before any
/// work. Without one (the program's way: one walk, no planning first), a
/// missing section is found where a chunk first needs it: `MissingWeights`
/// with the header as it was but buffers possibly holding partial work, to
/// be discarded as after `Arithmetic` (on chain the transaction
/// reverts). Either way the turn cuts where the planner does, whatever
/// sections it was given.
#[inline(always)]
pub fn turn_with(
    input: &TurnInput,
    plan: Option<&TurnPlan>,
    state: &mut [u8],
) -> Result<TurnResult, Error> {
    run_turn(input, state, &mut (plan, NoProbe))
}

/// `turn_with`, telling `probe` of every chunk: for measuring each chunk's
/// cost on a target (the program's `cost-probe` build).
#[cfg(feature = "cost-probe")]
pub fn turn_probed<P: Probe>(
    input: &TurnInput,
    plan: Option<&TurnPlan>,
    state: &mut [u8],
    probe: P,
) -> Result<TurnResult, Error> {
    run_turn(input, state, &mut (plan, probe))
}

/// The plan and the probe travel together, by reference: a non-inlined SBF
/// call takes at most five arguments, and a slice is two.
fn run_turn<P: Probe>(
    input: &TurnInput,
    state: &mut [u8],
    (plan, probe): &mut (Option<&TurnPlan>, P),
) -> Result<TurnResult, Error> {
    let plan = *plan;
    let config = input.config;
    planner::check_allowance(input.allowance)?;
    let m = Metadata::for_turn(input.metadata)?;
    if m.config != config {
        return Err(Error::InvalidConfig);
    }
    let mut h = Header::read_checked(&config, state)?;
    if h.phase == Phase::Done {
        return Err(Error::InvalidState);
    }
    let layout = StateLayout::new(&config, h.prompt_len as usize, h.max_tokens)?;
    let generated_before = h.generated;
    let mut result = TurnResult::default();

    if h.phase.is_tokenizing() {
        let b = Buffers::carve(state, &layout);
        let per_turn = crate::planner::charges_of(config.charges).turn;
        let used = tokenizer::tokenize(
            &m,
            &mut h,
            (b.prompt, b.prompt_tokens),
            input.allowance - per_turn,
            probe,
        )?;
        if used == 0 {
            return Err(Error::InvalidConfig);
        }
        result.work = per_turn + used;
    } else {
        // The sections given, each long enough for what it holds; a plan,
        // if given, names none that is missing.
        let mut given = [(u32::MAX, &[][..]); 2];
        for (slot, s) in given.iter_mut().zip(input.sections) {
            let need = m.layout.section_len(&config, s.index) as usize;
            if need == 0 || s.bytes.len() < need {
                return Err(Error::MissingWeights);
            }
            *slot = (s.index, s.bytes);
        }
        if let Some(plan) = plan {
            let named = &plan.sections[..plan.section_count];
            if named.iter().any(|&i| given.iter().all(|&(g, _)| g != i)) {
                return Err(Error::MissingWeights);
            }
        }
        let shape = (&config, &m.layout);
        let mut walker = Walker::new(shape, &h.run_shape(), &h.cursor(), input.allowance)?;
        if h.phase == Phase::Embedding && m.layout.embedding_split() {
            walker.token = h.embedding_token(&config, state)?;
        }
        let mut pass = Forward {
            m: &m,
            sections: given,
            b: Buffers::carve(state, &layout),
            cache_positions: layout.cache_positions,
            heads: Heads::new(&m),
            sampled: NO_TOKEN,
        };
        let mut ended = false;
        probe.begin();
        let mut first = true;
        while let Some(step) = walker.next_step() {
            probe.walked();
            first = false;
            let chunk = walker.chunk(&step);
            pass.run(&mut h, &chunk)?;
            probe.chunk(|| (chunk.kind(&h.run_shape()), chunk.count, chunk.cost));
            walker.advance(&step);
            if pass.sampled != NO_TOKEN {
                result.token = Some(pass.sampled);
                ended = pass.sampled == BOS || pass.sampled == EOS;
                pass.sampled = NO_TOKEN;
                if ended {
                    break;
                }
            }
        }
        if first {
            // Not even one chunk fits: the allowance is too small for this
            // model (nothing was written).
            return Err(Error::InvalidConfig);
        }
        h.set_cursor(&walker.cursor);
        if ended {
            h.phase = Phase::Done;
        }
        result.work = walker.used;
        result.sections_read = walker.section_count as u32;
    }
    // Wraps: a count, and any u64 in a state a caller made up.
    h.turns = h.turns.wrapping_add(1);
    h.write(state);
    result.complete = h.phase == Phase::Done;
    result.generated = h.generated;
    result.generated_this_turn = h.generated - generated_before;
    Ok(result)
}

/// The count of turns a run takes: tokenizes the prompt in `scratch` (a
/// buffer of `state_size` bytes), then steps the planner to max tokens or
/// the end of the context, whichever comes first (a prompt past the context
/// ends with tokenizing). A run that samples token 1 or 2 early ends in
/// fewer.
#[inline(always)]
pub fn quote_turns(
    config: Config,
    metadata: &[u8],
    prompt: &[u8],
    max_tokens: u32,
    temperature_q16: u32,
    scratch: &mut [u8],
) -> Result<u64, Error> {
    let params = RunParams {
        prompt,
        max_tokens,
        temperature_q16,
        seed: 0,
    };
    let input = TurnInput {
        config,
        metadata,
        sections: &[],
        allowance: CHARGES.allowance,
    };
    quote_turns_with(&input, &params, scratch)
}

/// `quote_turns` under `input`'s allowance (its sections are not read:
/// after tokenizing, the count comes from the planner). Also `quote_turns`'
/// work behind its inlined shim: SBF calls take at most five arguments.
pub fn quote_turns_with(
    input: &TurnInput,
    params: &RunParams,
    scratch: &mut [u8],
) -> Result<u64, Error> {
    init_state_with(&input.config, params, scratch, StateMemory::Any)?;
    let mut turns = 0u64;
    let mut h = Header::read(scratch)?;
    while h.phase.is_tokenizing() {
        turn_with(input, None, scratch)?;
        turns += 1;
        h = Header::read(scratch)?;
    }
    let rest = planner::count_turns(&input.config, &h.run_shape(), &h.cursor(), input.allowance)?;
    Ok(turns + rest)
}
