//! Target `wasm_exports`: the WebAssembly interface (`curta_core::wasm`),
//! built natively with the `native-wasm` feature, called with arbitrary
//! pointers and lengths over an arena that stands for the linear memory
//! (`wasm::memory::set_native`).
//!
//! The arena holds a configuration, section zero, the matrix sections, a
//! prompt, a state, the outputs, and a checkpoint and tokenizer; each call's
//! pointers and lengths are mostly the right ones and sometimes zero, off by
//! a little, overlapping another buffer, outside the arena or anything at
//! all; the memory is sometimes declared smaller than the arena; and the
//! arena's bytes are sometimes overwritten.
//!
//! Checked: no panic and no access outside the arena (AddressSanitizer in
//! the fuzz build); results are a core error's number or success (or the
//! documented out-of-range values); and whenever every argument is the
//! right one, each export gives what the core gives natively, the state's
//! bytes included.

use curta_core::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
use curta_core::format::flags_of;
use curta_core::inference::{self, TurnInput, TurnSections, WeightSection};
use curta_core::planner::{self, CHARGES};
use curta_core::state::{self, StateBuffer, StateLayout};
use curta_core::wasm;
use curta_core::Error;

use crate::models::{self, Model};
use crate::source::Source;

/// The arena's size and where each buffer lives in it.
const ARENA: usize = 0x70000;
const CONFIG: usize = 0x40;
const OUTPUT: usize = 0x100;
const METADATA: usize = 0x1000;
const FIRST: usize = 0x20000;
const SECOND: usize = 0x28000;
const PROMPT: usize = 0x30000;
const STATE: usize = 0x31000;
const CHECKPOINT: usize = 0x50000;
const TOKENIZER: usize = 0x68000;
/// `quote` is not called for a state past this: its scratch state is
/// allocated natively, and the fuzzer's memory is bounded.
const QUOTE_LIMIT: usize = 1 << 22;

/// The arena: 8-aligned memory, reached through its address only while an
/// export runs.
struct Arena {
    words: Vec<u64>,
}

impl Arena {
    fn base(&mut self) -> usize {
        self.words.as_mut_ptr() as usize
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the words viewed as bytes; no export runs meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, ARENA) }
    }
    fn put(&mut self, at: usize, bytes: &[u8]) {
        assert!(
            at + bytes.len() <= ARENA,
            "the arena's slot at {at:#x} is too small"
        );
        self.bytes()[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

/// One buffer argument: the right pointer and length, and whether the call
/// is given exactly them.
struct Arg {
    ptr: usize,
    len: usize,
    right: bool,
}

/// The tiny checkpoint and tokenizer `convert` is given.
fn conversion_inputs() -> &'static (Vec<u8>, Vec<u8>) {
    static I: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    I.get_or_init(|| {
        (
            synthetic_checkpoint(&TINY, 5).unwrap(),
            synthetic_tokenizer(TINY.vocab_size),
        )
    })
}

struct Harness {
    arena: Arena,
    model: &'static Model,
    prompt_len: usize,
    max_tokens: u32,
    /// The state's length in the arena: what the last `init_state` used.
    state_len: usize,
}

impl Harness {
    /// A buffer argument at arena offset `at` of `len` bytes, mostly as it
    /// is, sometimes perturbed.
    fn arg(&mut self, s: &mut Source, at: usize, len: usize) -> Arg {
        let base = self.arena.base();
        if !s.one_in(6) {
            return Arg {
                ptr: base + at,
                len,
                right: true,
            };
        }
        let (ptr, len) = match s.below(9) {
            0 => (0, len),
            1 => (base + at, 0),
            2 => (base + at + s.below(16) - s.below(8).min(at), len),
            3 => (base + at, len + 1 + s.below(64)),
            4 => (base + at, len.saturating_sub(1 + s.below(8))),
            5 => (base + s.below(ARENA + 64), s.below(0x10000)),
            6 => (base + at, s.u64() as usize),
            7 => (s.u64() as usize, s.below(0x10000)),
            _ => (base + ARENA - s.below(64), len),
        };
        Arg {
            ptr,
            len,
            right: false,
        }
    }

    fn config(&mut self, s: &mut Source) -> Arg {
        self.arg(s, CONFIG, 28)
    }

    fn state_arg(&mut self, s: &mut Source) -> Arg {
        let len = self.state_len;
        self.arg(s, STATE, len)
    }

    /// The configuration the arena holds now (the host may overwrite it).
    fn arena_config(&mut self) -> Result<curta_core::Config, Error> {
        curta_core::Config::read(&self.arena.bytes()[CONFIG..CONFIG + 28])
    }

    /// `len` bytes of the arena at `at`, copied out.
    fn copy(&mut self, at: usize, len: usize) -> Vec<u8> {
        self.arena.bytes()[at..at + len].to_vec()
    }

    fn state_bytes(&mut self) -> Vec<u8> {
        let len = self.state_len;
        self.arena.bytes()[STATE..STATE + len].to_vec()
    }
}

pub fn check(data: &[u8]) {
    let mut s = Source::new(data);
    let (mut h, whole) = setup(&mut s);
    for _ in 0..2 + s.below(24) {
        if s.is_empty() {
            break;
        }
        call(&mut h, &mut s, whole);
    }
    wasm::memory::set_native(0, 0);
}

/// The arena laid out for a model and a prompt, and the linear memory
/// declared: the whole arena (`true`), or less of it.
fn setup(s: &mut Source) -> (Harness, bool) {
    let model = if s.bool() {
        models::small()
    } else {
        models::tiny()
    };
    let mut h = Harness {
        arena: Arena {
            words: vec![0; ARENA / 8],
        },
        model,
        prompt_len: 0,
        max_tokens: 1,
        state_len: 0,
    };
    let config = model.config;
    h.arena.put(CONFIG, &config.to_bytes());
    h.arena.put(METADATA, model.zero());
    h.arena.put(FIRST, model.section(1));
    h.arena.put(SECOND, model.section(2));
    let (checkpoint, tokenizer) = conversion_inputs();
    h.arena.put(CHECKPOINT, checkpoint);
    h.arena.put(TOKENIZER, tokenizer);
    let prompt = crate::runs::prompt(s);
    h.arena.put(PROMPT, &prompt);
    h.prompt_len = prompt.len();
    h.max_tokens = 1 + s.below(config.seq_len as usize) as u32;
    let base = h.arena.base();
    let memory = if s.one_in(8) { s.below(ARENA) } else { ARENA };
    wasm::memory::set_native(base, memory);
    (h, memory == ARENA)
}

/// A seed: `prefix` for `setup`, then each op's bytes padded with the
/// zeros it reads after them (the right arguments), measured by running it.
pub fn seed(prefix: &[u8], ops: &[Vec<u8>]) -> Vec<u8> {
    let mut s = Source::new(prefix);
    let (mut h, whole) = setup(&mut s);
    let mut out = prefix[..prefix.len() - s.remaining()].to_vec();
    for op in ops {
        let mut bytes = op.clone();
        bytes.resize(op.len() + 4096, 0);
        let mut s = Source::new(&bytes);
        call(&mut h, &mut s, whole);
        out.extend_from_slice(&bytes[..bytes.len() - s.remaining()]);
    }
    wasm::memory::set_native(0, 0);
    out
}

/// One export, with the arguments the input picks.
fn call(h: &mut Harness, s: &mut Source, whole: bool) {
    let max_tokens = h.max_tokens;
    // The right configuration, or the error every export gives first.
    let arena_config = h.arena_config();
    let config = arena_config.unwrap_or(h.model.config);
    let code_of = |r: Result<(), Error>| -> u32 {
        match arena_config {
            Err(e) => e.code(),
            Ok(_) => r.map_or_else(|e| e.code(), |_| 0),
        }
    };
    match s.below(13) {
        0 => {
            let c = h.config(s);
            let (prompt_len, max) = (s.below(1100) as u32, s.u8() as u32);
            let got = unsafe { wasm::state_size(c.ptr, prompt_len, max) };
            if c.right && whole {
                let want = arena_config
                    .and_then(|c| state::state_size(c, prompt_len as usize, max))
                    .map_or(wasm::OUT_OF_RANGE, |n| n as u32);
                assert_eq!(got, want);
            }
        }
        1 => {
            let c = h.config(s);
            let out = h.arg(s, OUTPUT, wasm::LAYOUT_LEN);
            let (prompt_len, max) = (h.prompt_len as u32, max_tokens);
            let code = unsafe { wasm::state_layout(c.ptr, prompt_len, max, out.ptr) };
            assert!(code <= 8);
            if c.right && out.right && whole {
                let layout = StateLayout::new(&config, prompt_len as usize, max);
                assert_eq!(code, code_of(layout.map(|_| ())));
                if let (Ok(l), Ok(_)) = (layout, arena_config) {
                    let words: Vec<u8> =
                        l.to_words().iter().flat_map(|w| w.to_le_bytes()).collect();
                    assert_eq!(
                        &h.arena.bytes()[OUTPUT..OUTPUT + wasm::LAYOUT_LEN],
                        &words[..]
                    );
                }
            }
        }
        2 => {
            // init_state, with the state's length the one its parameters give.
            if s.one_in(4) {
                h.max_tokens = s.u8() as u32;
            }
            let max = h.max_tokens;
            let size = state::state_size(config, h.prompt_len, max).unwrap_or(s.below(4096));
            h.state_len = size.min(ARENA - STATE);
            let c = h.config(s);
            let st = h.state_arg(s);
            let p = h.arg(s, PROMPT, h.prompt_len);
            let temperature = if s.bool() { 0 } else { s.u32() % (17 << 16) };
            let seed = s.u64();
            let code = unsafe {
                wasm::init_state(
                    c.ptr,
                    st.ptr,
                    st.len,
                    p.ptr,
                    p.len,
                    max,
                    temperature,
                    seed as u32,
                    (seed >> 32) as u32,
                )
            };
            assert!(code <= 8);
            if c.right && st.right && p.right && whole {
                let prompt = h.copy(PROMPT, h.prompt_len);
                let mut native = StateBuffer::new(h.state_len);
                let want =
                    inference::init_state(config, &mut native, &prompt, max, temperature, seed);
                assert_eq!(code, code_of(want));
                if code == 0 {
                    assert!(h.state_bytes() == *native, "init_state's state");
                }
            }
        }
        3 => {
            let c = h.config(s);
            let st = h.state_arg(s);
            let out = h.arg(s, OUTPUT, wasm::PLAN_LEN);
            // `plan_turn`, or `plan_turn_with` under any flags word and
            // allowance (legal or not).
            let with = s.bool().then(|| (s.u32(), crate::runs::allowance(s)));
            let code = match with {
                None => unsafe { wasm::plan_turn(c.ptr, st.ptr, st.len, out.ptr) },
                Some((flags, allowance)) => unsafe {
                    wasm::plan_turn_with(c.ptr, flags, allowance, st.ptr, st.len, out.ptr)
                },
            };
            assert!(code <= 8);
            if c.right && st.right && out.right && whole {
                let native = StateBuffer::from_bytes(&h.state_bytes());
                let want = match with {
                    None => planner::plan_turn(config, &native),
                    Some((flags, allowance)) => {
                        planner::plan_turn_with(config.with_flags(flags), &native, allowance)
                    }
                };
                assert_eq!(code, code_of(want.as_ref().map(|_| ()).map_err(|e| *e)));
                if let (Ok(plan), Ok(_)) = (want, arena_config) {
                    let n = plan.section_count as u32;
                    let sec = |i: usize| {
                        if i < plan.section_count {
                            plan.sections[i]
                        } else {
                            0
                        }
                    };
                    let words = [n, sec(0), sec(1), plan.estimated_cu, plan.max_generated];
                    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                    assert_eq!(
                        &h.arena.bytes()[OUTPUT..OUTPUT + wasm::PLAN_LEN],
                        &bytes[..]
                    );
                }
            }
        }
        4..=6 => turn(h, s, whole, arena_config),
        7 => {
            let c = h.config(s);
            let st = h.state_arg(s);
            let got = unsafe { wasm::required_section(c.ptr, st.ptr, st.len) };
            if c.right && st.right && whole {
                let native = StateBuffer::from_bytes(&h.state_bytes());
                let want = arena_config
                    .and_then(|c| planner::plan_turn(c, &native))
                    .map_or(wasm::OUT_OF_RANGE, |p| {
                        if p.section_count == 0 {
                            0
                        } else {
                            p.sections[0]
                        }
                    });
                assert_eq!(got, want);
            }
        }
        8 => {
            let c = h.config(s);
            let zero_len = h.model.zero().len();
            let m = h.arg(s, METADATA, zero_len);
            let p = h.arg(s, PROMPT, h.prompt_len);
            let max = if s.bool() { max_tokens } else { s.u16() as u32 };
            let temperature = if s.bool() { 0 } else { 52_429 };
            // The scratch state is allocated natively: not past a bound.
            let config_read = read_config(h, c.ptr);
            if let Some(cfg) = config_read {
                if state::state_size(cfg, p.len, max).is_ok_and(|n| n > QUOTE_LIMIT) {
                    return;
                }
            }
            let got = unsafe { wasm::quote(c.ptr, m.ptr, m.len, p.ptr, p.len, max, temperature) };
            if got >> 32 == 0xFFFF_FFFF {
                assert!(
                    Error::from_code(got as u32).is_some(),
                    "quote's error {got:#x}"
                );
            }
            if c.right && m.right && p.right && whole {
                let prompt = h.copy(PROMPT, h.prompt_len);
                let metadata = h.copy(METADATA, zero_len);
                let size = arena_config.and_then(|c| state::state_size(c, prompt.len(), max));
                let want = size.and_then(|n| {
                    let mut scratch = StateBuffer::new(n);
                    // As the export: the charge table section zero's flags give.
                    inference::quote_turns(
                        config.with_flags(flags_of(&metadata)),
                        &metadata,
                        &prompt,
                        max,
                        temperature,
                        &mut scratch,
                    )
                });
                assert_eq!(
                    got,
                    want.unwrap_or_else(|e| wasm::QUOTE_ERROR | e.code() as u64)
                );
            }
        }
        9 => {
            let (checkpoint, tokenizer) = conversion_inputs();
            let ck = h.arg(s, CHECKPOINT, checkpoint.len());
            let tk = h.arg(s, TOKENIZER, tokenizer.len());
            let ptr = unsafe { wasm::convert(ck.ptr, ck.len, tk.ptr, tk.len) };
            let len = wasm::result_len();
            if ptr == 0 {
                assert!(
                    Error::from_code(len as u32).is_some(),
                    "convert's error {len}"
                );
            } else {
                // SAFETY: `convert` returned `len` bytes it allocated.
                let artifact =
                    unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }.to_vec();
                unsafe { wasm::dealloc(ptr, len) };
                if ck.right && tk.right && whole {
                    assert_eq!(Ok(artifact), convert(checkpoint, tokenizer));
                }
            }
            if ck.right && tk.right && whole {
                assert!(ptr != 0, "convert refused the tiny checkpoint");
            }
        }
        10 => {
            let len = s.below(5000);
            let ptr = wasm::alloc(len);
            assert!(ptr != 0 && ptr.is_multiple_of(8));
            if len > 0 {
                // SAFETY: `alloc` gave `len` zeroed bytes.
                let bytes = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
                assert!(bytes.iter().all(|&b| b == 0));
                bytes.fill(0xA5);
            }
            unsafe { wasm::dealloc(ptr, len) };
        }
        12 => {
            // The state against itself, section zero or the prompt (a byte
            // difference), or a prefix of itself (a length difference).
            let c = h.config(s);
            let expected = h.state_arg(s);
            let at = [STATE, METADATA, PROMPT][s.below(3)];
            let len = h.state_len - s.below(2) * s.below(h.state_len + 1);
            let actual = h.arg(s, at, len);
            let out = h.arg(s, OUTPUT, wasm::DIFFERENCE_LEN);
            let (want, got) = (h.copy(STATE, h.state_len), h.copy(at, len));
            let code = unsafe {
                let (e, a) = (expected.ptr, actual.ptr);
                wasm::state_difference(c.ptr, e, expected.len, a, actual.len, out.ptr)
            };
            assert!(code <= 8);
            if c.right && expected.right && actual.right && out.right && whole {
                assert_eq!(code, code_of(Ok(())));
                if arena_config.is_ok() {
                    let words = match state::diff::first_difference(&config, &want, &got) {
                        None => (String::new(), String::new()),
                        Some(d @ state::diff::Difference::Value { place, .. }) => {
                            (place.to_string(), d.to_string())
                        }
                        Some(d) => ("state length".into(), d.to_string()),
                    };
                    let written = h.copy(OUTPUT, wasm::DIFFERENCE_LEN);
                    let place_len = u32::from_le_bytes(written[..4].try_into().unwrap()) as usize;
                    let words_len = u32::from_le_bytes(written[4..8].try_into().unwrap()) as usize;
                    let place = &written[8..8 + place_len];
                    let report = &written[8 + place_len..8 + place_len + words_len];
                    assert_eq!((place, report), (words.0.as_bytes(), words.1.as_bytes()));
                }
            }
        }
        _ => {
            // The host overwrites its own memory: a state, a section, the
            // configuration...
            let at = [
                CONFIG,
                METADATA + s.below(256),
                FIRST + s.below(64),
                STATE + s.below(256),
                STATE + s.below(h.state_len + 1),
            ][s.below(5)];
            let bytes = s.string(8).to_vec();
            let n = bytes.len().min(ARENA - at);
            h.arena.bytes()[at..at + n].copy_from_slice(&bytes[..n]);
        }
    }
}

/// The configuration at `ptr` when it lies in the arena.
fn read_config(h: &mut Harness, ptr: usize) -> Option<curta_core::Config> {
    let base = h.arena.base();
    let at = ptr.checked_sub(base)?;
    let bytes = h.arena.bytes().get(at..at.checked_add(28)?)?;
    curta_core::Config::read(bytes).ok()
}

/// `turn_with_sections` or `turn`, against the core's own turn.
fn turn(
    h: &mut Harness,
    s: &mut Source,
    whole: bool,
    arena_config: Result<curta_core::Config, Error>,
) {
    let model = h.model;
    let zero_len = model.zero().len();
    // As the export: the charge table section zero's flags give.
    let flags = flags_of(&h.copy(METADATA, zero_len));
    let config = arena_config.unwrap_or(model.config).with_flags(flags);
    let single = s.one_in(3);
    let c = h.config(s);
    let st = h.state_arg(s);
    let m = h.arg(s, METADATA, zero_len);
    // The sections in the plan's order, when the state has a plan. Both
    // models have two matrix sections: 1 (the layers) at FIRST and 2 (the
    // embedding and classifier) at SECOND.
    let native = StateBuffer::from_bytes(&h.state_bytes());
    let plan = planner::plan_turn(config, &native).ok();
    let slot = |i: usize| -> (usize, usize) {
        match plan {
            Some(p) if i < p.section_count => {
                let index = p.sections[i] as usize;
                (
                    if index == 1 { FIRST } else { SECOND },
                    model.section(index).len(),
                )
            }
            _ => (SECOND, 0),
        }
    };
    let ((a_at, a_len), (b_at, b_len)) = (slot(0), slot(1));
    let first = h.arg(s, a_at, a_len);
    let second = h.arg(s, b_at, b_len);
    let code = unsafe {
        if single {
            wasm::turn(c.ptr, st.ptr, st.len, m.ptr, m.len, first.ptr, first.len)
        } else {
            wasm::turn_with_sections(
                c.ptr, st.ptr, st.len, m.ptr, m.len, first.ptr, first.len, second.ptr, second.len,
            )
        }
    };
    assert!(code <= 8);
    if !(c.right && st.right && m.right && first.right && (single || second.right) && whole) {
        return;
    }
    let mut native = native;
    let metadata = h.copy(METADATA, zero_len);
    let bytes = [h.copy(a_at, a_len), h.copy(b_at, b_len)];
    let want = match (arena_config, plan) {
        (Err(e), _) => Err(e),
        (Ok(_), None) => planner::plan_turn(config, &native).map(|_| ()),
        (Ok(_), Some(plan)) => {
            // `turn` passes its second slot empty.
            let count = plan.section_count;
            let sections = TurnSections::collect(count, |i| {
                let bytes: &[u8] = if single && i == 1 { &[] } else { &bytes[i] };
                Ok::<_, Error>(WeightSection {
                    index: plan.sections[i],
                    bytes,
                })
            })
            .unwrap();
            let input = TurnInput {
                config,
                metadata: &metadata,
                sections: &sections,
                allowance: CHARGES.allowance,
            };
            inference::turn_with(&input, Some(&plan), &mut native).map(|_| ())
        }
    };
    assert_eq!(code, want.map_or_else(|e| e.code(), |_| 0));
    assert!(h.state_bytes() == *native, "the state after a turn");
}
