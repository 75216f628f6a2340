//! The WebAssembly interface: plain C functions over the module's linear
//! memory, for `@curta/sdk` and any other host. It only marshals: every
//! number the module computes comes from the same core functions the native
//! and SBF builds call. `docs/spec.md` ("WebAssembly exports") lists them:
//! `alloc`, `dealloc`, `state_size`, `state_layout`, `init_state`,
//! `plan_turn`, `plan_turn_with`, `turn_with_sections`, `turn_with_allowance`, `turn`,
//! `required_section`, `quote`, `convert`, `convert_with`, `result_len` and
//! `state_difference`; and the client core's (`client`), which speak JSON:
//! `reply_pointer`, `reply_length`, `crank_new`, `crank_next`,
//! `crank_summary`, `crank_free`, `receipts`, `quote_run` and `decimal_q16`.
//!
//! Conventions, shared by every export:
//! - Pointers and lengths are `u32` (`usize` on wasm32). A configuration is a
//!   pointer to 28 bytes, the seven `u32` of `Config::read`.
//! - The charge table a model's turns are planned with and whether its
//!   classifier is shared are in its artifact's flags
//!   (`FLAG_MEASURED_CHARGES`, `FLAG_SHARED_CLASSIFIER`), not in those 28
//!   bytes: the exports that take section zero (`turn_with_sections`,
//!   `turn_with_allowance`, `turn`, `quote`) read them there,
//!   `plan_turn_with` takes the flags word as a parameter, and `plan_turn`
//!   and `required_section` plan with the specification's table and a
//!   shared classifier (llama2.c's default).
//! - A buffer of length zero is empty whatever its pointer. A buffer of
//!   nonzero length whose pointer is zero, or which does not lie inside the
//!   linear memory, is refused with the error of the argument it is for:
//!   `InvalidConfig` (configuration), `InvalidState` (state), `InvalidPrompt`
//!   (prompt), `InvalidFormat` (metadata, checkpoint, tokenizer),
//!   `MissingWeights` (a weight section), `BufferTooSmall` (the output of
//!   `plan_turn`, `state_layout` or `state_difference`).
//! - A state that overlaps another buffer of the same call is `InvalidState`:
//!   the core holds the state mutably while it reads the others.
//! - Error results: 0 is success, else the core error's number (`Error::code`).
//! - Results that are counts or sizes use a value no success can take for
//!   an error: `state_size` and `required_section` return `0xFFFFFFFF`;
//!   `quote` returns `0xFFFFFFFF_0000000N` for core error `N` (no run takes
//!   2^64 - 2^32 turns); `convert` returns 0 and leaves the error's number in
//!   `result_len`, and why in words in the client core's reply buffer
//!   (`reply_pointer`, `reply_length`).
//!
//! The caller's side of the contract, which no check here can enforce: a
//! buffer is either one `alloc` returned or other memory the host owns, and
//! not the module's own stack, statics or allocator bookkeeping.
//!
//! With the `native-wasm` feature the same functions build natively (as
//! plain Rust `extern "C"` functions, not exported symbols), for the fuzz
//! target and the tests that call them with arbitrary pointers and lengths:
//! there the "linear memory" is a region each thread declares with
//! `memory::set_native`, and every check is the one the module runs.

// Every export takes addresses from the host and is unsafe for the reason the
// module comment gives; one contract for all of them, written once above.
#![allow(clippy::missing_safety_doc)]

pub mod client;

use core::fmt::Write;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::Layout;

use crate::convert::{Input, Refusal};
use crate::format::{flags_of, ChargeTable, Config};
use crate::inference::{self, TurnInput, TurnSections, WeightSection};
use crate::planner::{self, CHARGES};
use crate::state::{self, StateLayout};
use crate::{convert as converter, Error};

/// `alloc` hands out 8-byte-aligned memory: the core checks that a state is
/// aligned to eight before it carves its `i64` buffers.
const ALIGN: usize = 8;
// The interface's sizes and codes. Every caller reads them from here: Rust
// ones from this module, JavaScript from the `interface` export.

/// `state_size` and `required_section` for parameters or states out of range.
pub const OUT_OF_RANGE: u32 = u32::MAX;
/// `quote`'s error results: this, or'ed with the error's number.
pub const QUOTE_ERROR: u64 = 0xFFFF_FFFF_0000_0000;
/// The bytes `plan_turn` writes: five `u32`.
pub const PLAN_LEN: usize = 20;
/// The bytes `state_layout` writes: sixteen `u32` (`state::WORD_NAMES`).
pub const LAYOUT_LEN: usize = 4 * (state::BUFFER_COUNT + 2);
/// The bytes `state_difference` writes: two lengths and the words, which
/// are never longer.
pub const DIFFERENCE_LEN: usize = 256;

/// Whether `len` bytes at `ptr` lie inside the linear memory: on wasm32,
/// below its current size.
#[cfg(target_arch = "wasm32")]
mod memory {
    /// The size of a WebAssembly page.
    const PAGE: u64 = 65_536;

    #[inline(always)]
    pub fn contains(ptr: usize, len: usize) -> bool {
        // In u64: a buffer may end exactly at 4 GiB, past usize on wasm32.
        ptr as u64 + len as u64 <= core::arch::wasm32::memory_size::<0>() as u64 * PAGE
    }
}

/// Natively (the `native-wasm` feature) there is no linear memory: each
/// thread declares the region that stands for it, and a buffer outside that
/// region is refused as a buffer outside the linear memory is on wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub mod memory {
    use std::cell::Cell;

    std::thread_local! {
        static BOUNDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }

    /// Declares `[start, start + len)` this thread's linear memory: the
    /// exports then accept buffers inside it only. Until a thread declares
    /// one, every nonempty buffer is refused.
    pub fn set_native(start: usize, len: usize) {
        BOUNDS.with(|b| b.set((start as u64, start as u64 + len as u64)));
    }

    pub(super) fn contains(ptr: usize, len: usize) -> bool {
        let (start, end) = BOUNDS.with(Cell::get);
        let last = (ptr as u64).checked_add(len as u64);
        ptr as u64 >= start && last.is_some_and(|last| last <= end)
    }
}

/// `convert`'s last artifact length (or error number), for `result_len`. An
/// atomic rather than `static mut`: wasm32 without threads lowers it to a
/// plain load and store, and it needs no `unsafe`.
static RESULT_LEN: AtomicUsize = AtomicUsize::new(0);

/// A buffer the host passed: an address and a length in linear memory.
#[derive(Clone, Copy)]
struct Region {
    ptr: usize,
    len: usize,
}

impl Region {
    /// Checks that a nonempty buffer lies inside the linear memory (and is
    /// short enough to be a Rust slice); `err` otherwise.
    fn new(ptr: usize, len: usize, err: Error) -> Result<Region, Error> {
        if len == 0 {
            return Ok(Region { ptr: 0, len: 0 });
        }
        if ptr == 0 || len > isize::MAX as usize || !memory::contains(ptr, len) {
            return Err(err);
        }
        Ok(Region { ptr, len })
    }

    fn overlaps(self, other: Region) -> bool {
        // In u64: a buffer may end exactly at 4 GiB, past usize on wasm32.
        let (a, b) = (self.ptr as u64, other.ptr as u64);
        self.len != 0 && other.len != 0 && a < b + other.len as u64 && b < a + self.len as u64
    }

    /// # Safety
    /// The caller's contract (module comment), and no live `&mut` overlaps.
    unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `new` checked the range lies in linear memory; the host
        // vouches it is a buffer it owns.
        unsafe { core::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }

    /// # Safety
    /// As `bytes`, and no other live reference overlaps.
    unsafe fn bytes_mut<'a>(self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `bytes`; the callers check the other buffers of the
        // call do not overlap this one.
        unsafe { core::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}

fn status(result: Result<(), Error>) -> u32 {
    match result {
        Ok(()) => 0,
        Err(e) => e.code(),
    }
}

/// Reads and validates the 28-byte configuration at `ptr`.
unsafe fn read_config(ptr: usize) -> Result<Config, Error> {
    let region = Region::new(ptr, Config::LEN, Error::InvalidConfig)?;
    // SAFETY: checked by `Region::new`; the bytes are copied out at once.
    Config::read(unsafe { region.bytes() })
}

/// `config` with the table and the classifier section zero's flags give.
///
/// # Safety
/// The caller's contract (module comment); `metadata` from `Region::new`.
unsafe fn with_table_of(config: Config, metadata: Region) -> Config {
    // SAFETY: as the caller's; the flags word is copied out at once.
    config.with_flags(flags_of(unsafe { metadata.bytes() }))
}

/// Refuses a state that overlaps any of `others`.
fn state_apart(state: Region, others: &[Region]) -> Result<(), Error> {
    if others.iter().any(|r| r.overlaps(state)) {
        return Err(Error::InvalidState);
    }
    Ok(())
}

/// `length` zeroed bytes aligned to eight, or 0 when memory runs out. A
/// length of zero gets a non-null address that holds nothing.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn alloc(length: usize) -> usize {
    if length == 0 {
        // Never a heap address (the stack sits below the heap), and never
        // dereferenced: every export treats a zero length as empty.
        return ALIGN;
    }
    match Layout::from_size_align(length, ALIGN) {
        // SAFETY: the layout's size is nonzero.
        Ok(layout) => unsafe { std::alloc::alloc_zeroed(layout) as usize },
        Err(_) => 0,
    }
}

/// Releases `length` bytes at `pointer` from `alloc` or `convert`. A zero
/// pointer or length does nothing.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn dealloc(pointer: usize, length: usize) {
    if pointer == 0 || length == 0 {
        return;
    }
    if let Ok(layout) = Layout::from_size_align(length, ALIGN) {
        // SAFETY: the host passes back what `alloc` gave it, with the same
        // length, and `alloc` used this same layout.
        unsafe { std::alloc::dealloc(pointer as *mut u8, layout) }
    }
}

/// The state's size, or `0xFFFFFFFF` for parameters out of range.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn state_size(config: usize, prompt_length: u32, max_tokens: u32) -> u32 {
    // SAFETY: the contract of the export.
    let size = unsafe { read_config(config) }
        .and_then(|c| state::state_size(c, prompt_length as usize, max_tokens));
    match size {
        // At most u32::MAX - 256 (`StateLayout::new`), never OUT_OF_RANGE.
        Ok(n) => n as u32,
        Err(_) => OUT_OF_RANGE,
    }
}

/// Writes where each buffer of such a state starts, as 16 little-endian
/// `u32` at `output` (64 bytes): the offsets of the prompt, prompt tokens,
/// output tokens, output text, x, xb, xb2, q, hb, hb2, logits, scores, keys
/// and values, then the state's size and its cache positions. Hosts read a
/// state's buffers through it rather than re-deriving the layout.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn state_layout(
    config: usize,
    prompt_length: u32,
    max_tokens: u32,
    output: usize,
) -> u32 {
    let run = || -> Result<(), Error> {
        // SAFETY: the contract of the export.
        let config = unsafe { read_config(config) }?;
        let output = Region::new(output, LAYOUT_LEN, Error::BufferTooSmall)?;
        let layout = StateLayout::new(&config, prompt_length as usize, max_tokens)?;
        write_words(unsafe { output.bytes_mut() }, &layout.to_words());
        Ok(())
    };
    status(run())
}

/// Writes where two states first differ at `output` (`DIFFERENCE_LEN`
/// bytes): the length of the place's words, the length of the whole
/// report, two little-endian `u32`, then both in UTF-8, as the core's
/// `state::diff` words them (the place, e.g. "header field turns", and
/// "first difference at offset 80: header field turns: expected 0 ...").
/// Equal states write two zero lengths. `expected` is the state whose
/// header places the buffers.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn state_difference(
    config: usize,
    expected: usize,
    expected_length: usize,
    actual: usize,
    actual_length: usize,
    output: usize,
) -> u32 {
    let run = || -> Result<(), Error> {
        // SAFETY (every block below): the contract of the export. The
        // states are only read, and the words are made before the output
        // is borrowed, so the buffers may overlap.
        let config = unsafe { read_config(config) }?;
        let expected = Region::new(expected, expected_length, Error::InvalidState)?;
        let actual = Region::new(actual, actual_length, Error::InvalidState)?;
        let output = Region::new(output, DIFFERENCE_LEN, Error::BufferTooSmall)?;
        let difference =
            unsafe { state::diff::first_difference(&config, expected.bytes(), actual.bytes()) };
        let mut text = Words::default();
        let place_len = match difference {
            None => 0,
            Some(d) => {
                match d {
                    state::diff::Difference::Value { place, .. } => write!(text, "{place}"),
                    state::diff::Difference::Lengths { .. } => text.write_str("state length"),
                }
                .map_err(|_| Error::BufferTooSmall)?;
                let place_len = text.len;
                write!(text, "{d}").map_err(|_| Error::BufferTooSmall)?;
                place_len
            }
        };
        let out = unsafe { output.bytes_mut() };
        write_words(out, &[place_len as u32, (text.len - place_len) as u32]);
        out[8..8 + text.len].copy_from_slice(&text.bytes[..text.len]);
        Ok(())
    };
    status(run())
}

/// The words `state_difference` writes, on the stack.
struct Words {
    bytes: [u8; DIFFERENCE_LEN - 8],
    len: usize,
}

impl Default for Words {
    fn default() -> Words {
        Words {
            bytes: [0; DIFFERENCE_LEN - 8],
            len: 0,
        }
    }
}

impl core::fmt::Write for Words {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(core::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Writes `words` as little-endian `u32` at the start of `out`.
fn write_words(out: &mut [u8], words: &[u32]) {
    for (slot, word) in out.chunks_exact_mut(4).zip(words) {
        slot.copy_from_slice(&word.to_le_bytes());
    }
}

/// Starts a state; the seed is passed as its low and high 32 bits.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
#[allow(clippy::too_many_arguments)] // the export's signature (docs/spec.md)
pub unsafe extern "C" fn init_state(
    config: usize,
    state: usize,
    state_length: usize,
    prompt: usize,
    prompt_length: usize,
    max_tokens: u32,
    temperature_q16: u32,
    seed_low: u32,
    seed_high: u32,
) -> u32 {
    let run = || -> Result<(), Error> {
        // SAFETY (every block below): the contract of the export; the state
        // is checked apart from the prompt before both are borrowed.
        let config = unsafe { read_config(config) }?;
        let state = Region::new(state, state_length, Error::InvalidState)?;
        let prompt = Region::new(prompt, prompt_length, Error::InvalidPrompt)?;
        state_apart(state, &[prompt])?;
        let seed = (seed_high as u64) << 32 | seed_low as u64;
        let (state, prompt) = unsafe { (state.bytes_mut(), prompt.bytes()) };
        inference::init_state(config, state, prompt, max_tokens, temperature_q16, seed)
    };
    status(run())
}

/// Writes the next turn's plan at `output`: section count, first section,
/// second section, estimated compute units and the most tokens the turn can
/// complete, five little-endian `u32`. Unused section slots are 0. Planned
/// with the specification's table and the default allowance.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn plan_turn(
    config: usize,
    state: usize,
    state_length: usize,
    output: usize,
) -> u32 {
    // SAFETY: the same contract, passed on.
    unsafe { plan_turn_with(config, 0, CHARGES.allowance, state, state_length, output) }
}

/// `plan_turn` for a model's own table and a config account's allowance:
/// `flags` is the artifact's flags word (header offset 44; bit 1 chooses the
/// measured table, the other bits are not read), `allowance` 22,096 to
/// 1,350,000 compute units.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn plan_turn_with(
    config: usize,
    flags: u32,
    allowance: u32,
    state: usize,
    state_length: usize,
    output: usize,
) -> u32 {
    let run = || -> Result<(), Error> {
        // SAFETY: the contract of the export; the state's borrow ends with
        // the plan, before the output is written.
        let config = unsafe { read_config(config) }?.with_flags(flags);
        let state = Region::new(state, state_length, Error::InvalidState)?;
        let output = Region::new(output, PLAN_LEN, Error::BufferTooSmall)?;
        let plan = planner::plan_turn_with(config, unsafe { state.bytes() }, allowance)?;
        let count = plan.section_count.min(2);
        let section = |i: usize| if i < count { plan.sections[i] } else { 0 };
        let (cu, most) = (plan.estimated_cu, plan.max_generated);
        let words = [count as u32, section(0), section(1), cu, most];
        write_words(unsafe { output.bytes_mut() }, &words);
        Ok(())
    };
    status(run())
}

/// Runs one turn with the sections its plan names, in the plan's order; a
/// slot the plan leaves out is not read (a caller passes it empty). Under
/// the default allowance, with the table section zero's flags choose.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
#[allow(clippy::too_many_arguments)] // the export's signature (docs/spec.md)
pub unsafe extern "C" fn turn_with_sections(
    config: usize,
    state: usize,
    state_length: usize,
    metadata: usize,
    metadata_length: usize,
    first: usize,
    first_length: usize,
    second: usize,
    second_length: usize,
) -> u32 {
    // SAFETY: the same contract, passed on.
    unsafe {
        turn_with_allowance(
            config,
            CHARGES.allowance,
            state,
            state_length,
            metadata,
            metadata_length,
            first,
            first_length,
            second,
            second_length,
        )
    }
}

/// `turn_with_sections` under a config account's allowance (22,096 to
/// 1,350,000 compute units), as the program runs a turn under it.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
#[allow(clippy::too_many_arguments)] // the export's signature (docs/spec.md)
pub unsafe extern "C" fn turn_with_allowance(
    config: usize,
    allowance: u32,
    state: usize,
    state_length: usize,
    metadata: usize,
    metadata_length: usize,
    first: usize,
    first_length: usize,
    second: usize,
    second_length: usize,
) -> u32 {
    let run = || -> Result<(), Error> {
        // SAFETY (every block below): the contract of the export; the state
        // is checked apart from every other buffer before any is borrowed.
        let config = unsafe { read_config(config) }?;
        let state = Region::new(state, state_length, Error::InvalidState)?;
        let metadata = Region::new(metadata, metadata_length, Error::InvalidFormat)?;
        let config = unsafe { with_table_of(config, metadata) };
        let slots = [
            Region::new(first, first_length, Error::MissingWeights)?,
            Region::new(second, second_length, Error::MissingWeights)?,
        ];
        state_apart(state, &[metadata, slots[0], slots[1]])?;
        let state = unsafe { state.bytes_mut() };
        // The plan gives the slots their section indices, and the turn
        // checks the sections against it rather than planning again.
        let plan = planner::plan_turn_with(config, state, allowance)?;
        let sections = TurnSections::collect(plan.section_count, |i| {
            let bytes = unsafe { slots[i].bytes() };
            let index = plan.sections[i];
            Ok::<_, Error>(WeightSection { index, bytes })
        })?;
        let input = TurnInput {
            config,
            metadata: unsafe { metadata.bytes() },
            sections: &sections,
            allowance,
        };
        inference::turn_with(&input, Some(&plan), state).map(|_| ())
    };
    status(run())
}

/// The count of turns a run takes, or `0xFFFFFFFF_0000000N` for core error
/// `N`. The scratch state is the module's own, freed before it returns.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn quote(
    config: usize,
    metadata: usize,
    metadata_length: usize,
    prompt: usize,
    prompt_length: usize,
    max_tokens: u32,
    temperature_q16: u32,
) -> u64 {
    let run = || -> Result<u64, Error> {
        // SAFETY (every block below): the contract of the export.
        let config = unsafe { read_config(config) }?;
        let metadata = Region::new(metadata, metadata_length, Error::InvalidFormat)?;
        let config = unsafe { with_table_of(config, metadata) };
        let prompt = Region::new(prompt, prompt_length, Error::InvalidPrompt)?;
        let size = state::state_size(config, prompt_length, max_tokens)?;
        // u64 words keep the scratch state aligned to eight; a failed
        // reservation is an error rather than the allocator's abort.
        let count = size.div_ceil(8);
        let mut words: Vec<u64> = Vec::new();
        let reserved = words.try_reserve_exact(count);
        reserved.map_err(|_| Error::BufferTooSmall)?;
        words.resize(count, 0);
        let bytes = words.as_mut_ptr() as *mut u8;
        // SAFETY: the words own at least `size` bytes, any byte pattern is a
        // valid u64, and the borrow of `words` lasts as long as this slice.
        let scratch = unsafe { core::slice::from_raw_parts_mut(bytes, size) };
        let (metadata, prompt) = unsafe { (metadata.bytes(), prompt.bytes()) };
        let temperature = temperature_q16;
        inference::quote_turns(config, metadata, prompt, max_tokens, temperature, scratch)
    };
    match run() {
        Ok(turns) => turns,
        Err(e) => QUOTE_ERROR | e.code() as u64,
    }
}

/// Converts a llama2.c checkpoint and tokenizer. Returns the artifact's
/// address (memory from `alloc`, released with `dealloc(pointer,
/// result_len())`), with `result_len` its length; or 0, with `result_len`
/// the core error's number (`BufferTooSmall` when memory runs out for the
/// copy; the converter's own allocations abort instead) and the refusal in
/// words in the reply (`client::reply_refusal`). The artifact is planned
/// with the specification's charges.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn convert(
    checkpoint: usize,
    checkpoint_length: usize,
    tokenizer: usize,
    tokenizer_length: usize,
) -> usize {
    // SAFETY: the same contract, passed on.
    unsafe {
        convert_with(
            checkpoint,
            checkpoint_length,
            tokenizer,
            tokenizer_length,
            0,
        )
    }
}

/// `convert`, planned with the table `flags` chooses: bit 1
/// (`FLAG_MEASURED_CHARGES`) for the measured one; the other bits are not
/// read (the classifier's bit comes from the checkpoint).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn convert_with(
    checkpoint: usize,
    checkpoint_length: usize,
    tokenizer: usize,
    tokenizer_length: usize,
    flags: u32,
) -> usize {
    let outside = |input: Input| {
        move |error| {
            let reason = "its buffer does not lie inside the module's memory".into();
            (Some(input), Refusal { error, reason })
        }
    };
    let run = || -> Result<(usize, usize), (Option<Input>, Refusal)> {
        // SAFETY (every block below): the contract of the export; the
        // artifact is copied into a fresh allocation no input overlaps.
        let checkpoint = Region::new(checkpoint, checkpoint_length, Error::InvalidFormat)
            .map_err(outside(Input::Checkpoint))?;
        let tokenizer = Region::new(tokenizer, tokenizer_length, Error::InvalidFormat)
            .map_err(outside(Input::Tokenizer))?;
        let (checkpoint, tokenizer) = unsafe { (checkpoint.bytes(), tokenizer.bytes()) };
        let charges = ChargeTable::from_flags(flags);
        let artifact = converter::convert_explained(checkpoint, tokenizer, charges)
            .map_err(|(input, refusal)| (Some(input), refusal))?;
        // Copied into `alloc`'s layout so that `dealloc(pointer, length)`
        // releases it like any other buffer.
        let len = artifact.len();
        let out = alloc(len);
        if out == 0 {
            let reason = format!("the module's memory cannot hold the {len}-byte artifact");
            return Err((
                None,
                Refusal {
                    error: Error::BufferTooSmall,
                    reason,
                },
            ));
        }
        unsafe { Region { ptr: out, len }.bytes_mut() }.copy_from_slice(&artifact);
        Ok((out, len))
    };
    let (pointer, len) = match run() {
        Ok(done) => done,
        Err((input, refusal)) => {
            client::reply_refusal(input, &refusal);
            (0, refusal.error.code() as usize)
        }
    };
    RESULT_LEN.store(len, Ordering::Relaxed);
    pointer
}

/// The length of `convert`'s last artifact, or its error's number when it
/// returned 0.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub extern "C" fn result_len() -> usize {
    RESULT_LEN.load(Ordering::Relaxed)
}

/// The first section the next turn reads: 0 for a turn that reads section
/// zero alone, `0xFFFFFFFF` when the state or configuration does not check.
/// Planned as `plan_turn` plans (`plan_turn_with` for a model's own table).
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn required_section(config: usize, state: usize, state_length: usize) -> u32 {
    let run = || -> Result<u32, Error> {
        // SAFETY: the contract of the export.
        let config = unsafe { read_config(config) }?;
        let state = Region::new(state, state_length, Error::InvalidState)?;
        let plan = planner::plan_turn(config, unsafe { state.bytes() })?;
        let first = plan.sections[0];
        Ok(if plan.section_count == 0 { 0 } else { first })
    };
    run().unwrap_or(OUT_OF_RANGE)
}

/// Runs a turn whose plan names at most one section; a plan that names two
/// is `MissingWeights`, as the core reports a missing section.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub unsafe extern "C" fn turn(
    config: usize,
    state: usize,
    state_length: usize,
    metadata: usize,
    metadata_length: usize,
    weights: usize,
    weights_length: usize,
) -> u32 {
    // SAFETY: the same contract, passed on; the second slot is empty.
    unsafe {
        turn_with_sections(
            config,
            state,
            state_length,
            metadata,
            metadata_length,
            weights,
            weights_length,
            0,
            0,
        )
    }
}
