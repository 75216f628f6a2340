//! The WebAssembly replay: the same run, turn by turn, inside the
//! curta-core module (`make build-wasm`), run by the wasmi interpreter
//! through the exports `docs/spec.md` lists ("WebAssembly exports").
//!
//! Every buffer a call reads lives in the module's linear memory: a run
//! copies the artifact in once and addresses its sections inside that copy.
//! Memory can grow during any call, so nothing here holds a view of it
//! across a call: every read and write takes the memory afresh.
//!
//! A trap inside the module (a core panic, which the module's
//! `panic = "abort"` turns into `unreachable`) is not a core error: the
//! methods panic with the trap's message rather than return a number.

use std::path::{Path, PathBuf};

use curta_core::format::{header, read_u32, read_u64, Config, SECTION_ENTRY_LEN, SECTION_TABLE};
use curta_core::planner::CHARGES;
use wasmi::{Engine, Instance, Memory, Module, Store, TypedFunc};

use crate::manifest::RunSpec;

/// An export's result; a trap panics (module comment).
fn done<T>(export: &str, result: Result<T, wasmi::Error>) -> T {
    result.unwrap_or_else(|e| panic!("curta_core.wasm: {export} trapped: {e:#}"))
}

/// The curta-core WebAssembly module, instantiated once with wasmi.
pub struct WasmCore {
    store: Store<()>,
    memory: Memory,
    alloc: TypedFunc<u32, u32>,
    dealloc: TypedFunc<(u32, u32), ()>,
    state_size: TypedFunc<(u32, u32, u32), u32>,
    #[allow(clippy::type_complexity)] // the exports' signature (docs/spec.md)
    init_state: TypedFunc<(u32, u32, u32, u32, u32, u32, u32, u32, u32), u32>,
    plan_turn_with: TypedFunc<(u32, u32, u32, u32, u32, u32), u32>,
    #[allow(clippy::type_complexity)] // the exports' signature (docs/spec.md)
    turn_with_sections: TypedFunc<(u32, u32, u32, u32, u32, u32, u32, u32, u32), u32>,
    convert: TypedFunc<(u32, u32, u32, u32), u32>,
    result_len: TypedFunc<(), u32>,
    /// The bytes `plan_turn` writes (section count, first section, second
    /// section, estimated compute units, most tokens, each a `u32`), as
    /// the module's `interface` export gives it.
    plan_len: u32,
}

/// A buffer in the module's memory: address and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    ptr: u32,
    len: u32,
}

impl Span {
    const EMPTY: Span = Span { ptr: 0, len: 0 };
}

/// One run inside the module: the module-side addresses of its buffers.
/// Release it with [`WasmCore::close`] on the core that opened it.
#[derive(Debug)]
pub struct WasmRun {
    /// The artifact's copy; metadata and sections are addressed inside it.
    artifact: Span,
    /// The configuration: the 28 bytes of the artifact's header that hold
    /// it, the seven `u32` in the order the exports read them.
    config: u32,
    /// The artifact's flags word, which chooses the charge table.
    flags: u32,
    state: Span,
    /// Section zero.
    metadata: Span,
    /// Section `i` at index `i` (index 0 is section zero again).
    sections: Vec<Span>,
    /// `plan_turn`'s output.
    plan: u32,
}

impl WasmCore {
    /// Loads `target/wasm/curta_core.wasm` (or `CURTA_WASM` if set); errors as text.
    pub fn load_default() -> Result<WasmCore, String> {
        WasmCore::load(&default_path())
    }

    pub fn load(path: &Path) -> Result<WasmCore, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let engine = Engine::default();
        let module =
            Module::new(&engine, &bytes).map_err(|e| format!("{}: {e:#}", path.display()))?;
        let mut store = Store::new(&engine, ());
        // The module imports nothing: `wasm32-unknown-unknown` std has no host.
        let instance = Instance::new(&mut store, &module, &[])
            .map_err(|e| format!("{}: instantiating: {e:#}", path.display()))?;
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| format!("{}: no exported memory", path.display()))?;
        macro_rules! export {
            ($name:literal) => {
                instance
                    .get_typed_func(&mut store, $name)
                    .map_err(|e| format!("{}: export {}: {e:#}", path.display(), $name))?
            };
        }
        let interface: TypedFunc<(), u32> = export!("interface");
        let reply_pointer: TypedFunc<(), u32> = export!("reply_pointer");
        let reply_length: TypedFunc<(), u32> = export!("reply_length");
        done("interface", interface.call(&mut store, ()));
        let at = done("reply_pointer", reply_pointer.call(&mut store, ())) as usize;
        let len = done("reply_length", reply_length.call(&mut store, ())) as usize;
        let reply = memory
            .data(&store)
            .get(at..at + len)
            .ok_or_else(|| format!("{}: interface's reply outside memory", path.display()))?;
        let plan_len = serde_json::from_slice::<serde_json::Value>(reply)
            .ok()
            .and_then(|v| v["planLength"].as_u64())
            .ok_or_else(|| format!("{}: interface gave no planLength", path.display()))?;
        Ok(WasmCore {
            plan_len: plan_len as u32,
            alloc: export!("alloc"),
            dealloc: export!("dealloc"),
            state_size: export!("state_size"),
            init_state: export!("init_state"),
            plan_turn_with: export!("plan_turn_with"),
            turn_with_sections: export!("turn_with_sections"),
            convert: export!("convert"),
            result_len: export!("result_len"),
            memory,
            store,
        })
    }

    /// Copies the artifact and prompt in, `state_size` + `init_state` with the spec's params.
    pub fn open(&mut self, artifact: &[u8], spec: &RunSpec) -> Result<WasmRun, String> {
        let table = section_table(artifact)?;
        let prompt_len = u32::try_from(spec.prompt.len())
            .map_err(|_| format!("a prompt of {} bytes", spec.prompt.len()))?;
        let art = self.copy_in(artifact)?;
        let at = |s: (u32, u32)| Span {
            ptr: art.ptr + s.0,
            len: s.1,
        };
        let mut run = WasmRun {
            artifact: art,
            config: art.ptr + header::CONFIG as u32,
            flags: read_u32(artifact, header::FLAGS),
            state: Span::EMPTY,
            metadata: at(table[0]),
            sections: table.iter().map(|&s| at(s)).collect(),
            plan: 0,
        };
        match self.start(&mut run, spec, prompt_len) {
            Ok(()) => Ok(run),
            Err(e) => {
                self.close(run);
                Err(e)
            }
        }
    }

    /// `open`'s module calls after the artifact's copy: the plan buffer, the
    /// state, and the prompt for as long as `init_state` reads it.
    fn start(&mut self, run: &mut WasmRun, spec: &RunSpec, prompt_len: u32) -> Result<(), String> {
        run.plan = self.alloc(self.plan_len)?.ptr;
        let args = (run.config, prompt_len, spec.max_tokens);
        let size = done("state_size", self.state_size.call(&mut self.store, args));
        if size == u32::MAX {
            return Err(format!(
                "state_size: parameters out of range (prompt of {prompt_len} bytes, {} tokens)",
                spec.max_tokens
            ));
        }
        run.state = self.alloc(size)?;
        let prompt = self.copy_in(&spec.prompt)?;
        let (state, seed) = (run.state, spec.seed);
        let args = (
            run.config,
            state.ptr,
            state.len,
            prompt.ptr,
            prompt.len,
            spec.max_tokens,
            spec.temperature_q16,
            seed as u32,
            (seed >> 32) as u32,
        );
        let status = done("init_state", self.init_state.call(&mut self.store, args));
        self.free(prompt);
        match status {
            0 => Ok(()),
            e => Err(format!("init_state: core error {e}")),
        }
    }

    /// One turn: `plan_turn_with` (the artifact's flags, the default
    /// allowance; 20-byte output) to choose sections, then
    /// `turn_with_sections` with the sections the plan names (empty slots
    /// 0,0). Returns Err(core error number) on a core error.
    pub fn step(&mut self, run: &WasmRun) -> Result<(), u32> {
        let state = run.state;
        let allowance = CHARGES.allowance;
        let args = (
            run.config, run.flags, allowance, state.ptr, state.len, run.plan,
        );
        let status = done(
            "plan_turn_with",
            self.plan_turn_with.call(&mut self.store, args),
        );
        if status != 0 {
            return Err(status);
        }
        let plan = self.read(Span {
            ptr: run.plan,
            len: self.plan_len,
        });
        let word = |i: usize| read_u32(&plan, 4 * i);
        let count = word(0).min(2) as usize;
        let mut slots = [Span::EMPTY; 2];
        for (i, slot) in slots.iter_mut().enumerate().take(count) {
            // A section past the table goes in empty: the core answers
            // `MissingWeights`, as it does natively.
            let index = word(1 + i) as usize;
            *slot = run.sections.get(index).copied().unwrap_or(Span::EMPTY);
        }
        let (metadata, [first, second]) = (run.metadata, slots);
        let args = (
            run.config,
            state.ptr,
            state.len,
            metadata.ptr,
            metadata.len,
            first.ptr,
            first.len,
            second.ptr,
            second.len,
        );
        let turn = self.turn_with_sections.call(&mut self.store, args);
        let status = done("turn_with_sections", turn);
        match status {
            0 => Ok(()),
            e => Err(e),
        }
    }

    /// A copy of the run's current state bytes.
    pub fn state(&mut self, run: &WasmRun) -> Vec<u8> {
        self.read(run.state)
    }

    /// Frees the run's buffers (dealloc).
    pub fn close(&mut self, run: WasmRun) {
        self.free(run.state);
        self.free(Span {
            ptr: run.plan,
            len: self.plan_len,
        });
        self.free(run.artifact);
    }

    /// `convert` inside the module; Err(core error number) on failure.
    pub fn convert(&mut self, checkpoint: &[u8], tokenizer: &[u8]) -> Result<Vec<u8>, u32> {
        let mut copy = |bytes: &[u8]| {
            self.copy_in(bytes)
                .unwrap_or_else(|e| panic!("convert: copying in: {e}"))
        };
        let (checkpoint, tokenizer) = (copy(checkpoint), copy(tokenizer));
        let args = (checkpoint.ptr, checkpoint.len, tokenizer.ptr, tokenizer.len);
        let ptr = done("convert", self.convert.call(&mut self.store, args));
        let len = done("result_len", self.result_len.call(&mut self.store, ()));
        self.free(checkpoint);
        self.free(tokenizer);
        if ptr == 0 {
            return Err(len);
        }
        let artifact = Span { ptr, len };
        let bytes = self.read(artifact);
        self.free(artifact);
        Ok(bytes)
    }

    /// `length` bytes from `alloc`, or an error when the module runs out.
    fn alloc(&mut self, len: u32) -> Result<Span, String> {
        let ptr = done("alloc", self.alloc.call(&mut self.store, len));
        if ptr == 0 {
            return Err(format!("alloc({len}): out of module memory"));
        }
        Ok(Span { ptr, len })
    }

    fn free(&mut self, span: Span) {
        if span.ptr != 0 {
            let freed = self.dealloc.call(&mut self.store, (span.ptr, span.len));
            done("dealloc", freed);
        }
    }

    /// A fresh allocation holding `bytes`.
    fn copy_in(&mut self, bytes: &[u8]) -> Result<Span, String> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| format!("{} bytes do not fit a 32-bit memory", bytes.len()))?;
        let span = self.alloc(len)?;
        // A zero length's address holds nothing (`alloc`'s contract).
        if len != 0 {
            self.memory
                .write(&mut self.store, span.ptr as usize, bytes)
                .expect("alloc returns memory inside the module");
        }
        Ok(span)
    }

    /// A copy of a buffer, from the memory as it is now.
    fn read(&self, span: Span) -> Vec<u8> {
        if span.len == 0 {
            return Vec::new();
        }
        let (start, end) = (span.ptr as usize, span.ptr as usize + span.len as usize);
        self.memory.data(&self.store)[start..end].to_vec()
    }
}

/// `CURTA_WASM`, else `target/wasm/curta_core.wasm`.
fn default_path() -> PathBuf {
    match std::env::var_os("CURTA_WASM") {
        Some(p) => PathBuf::from(p),
        None => crate::root().join("target/wasm/curta_core.wasm"),
    }
}

/// The artifact's section table, offsets and lengths checked to lie inside
/// it: section `i`'s entry is at `128 + 16 i`, section zero is metadata.
fn section_table(artifact: &[u8]) -> Result<Vec<(u32, u32)>, String> {
    let count = read_u32(artifact, header::SECTION_COUNT) as usize;
    let table_end = SECTION_TABLE + count * SECTION_ENTRY_LEN;
    if count == 0 || artifact.len() < table_end || artifact.len() < header::CONFIG + Config::LEN {
        return Err(format!(
            "an artifact of {} bytes with {count} sections",
            artifact.len()
        ));
    }
    (0..count)
        .map(|i| {
            let entry = SECTION_TABLE + i * SECTION_ENTRY_LEN;
            let (offset, len) = (read_u64(artifact, entry), read_u64(artifact, entry + 8));
            match offset.checked_add(len) {
                Some(end) if end <= artifact.len() as u64 => Ok((offset as u32, len as u32)),
                _ => Err(format!(
                    "section {i} ({len} bytes at {offset}) outside the artifact's {} bytes",
                    artifact.len()
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::{models, native};

    fn core() -> WasmCore {
        let path = default_path();
        assert!(
            path.exists(),
            "{} is missing: run `make build-wasm` first",
            path.display()
        );
        WasmCore::load(&path).unwrap_or_else(|e| panic!("{e} (run `make build-wasm`)"))
    }

    /// The reference run, turn by turn, in the module and natively: every
    /// state equal byte for byte, 20 turns.
    #[test]
    fn reference_run_matches_native() {
        let start = Instant::now();
        let mut wasm = core();
        let load = start.elapsed();
        let artifact = models::artifact("stories260K");
        let m = models::metadata(&artifact);
        let spec = RunSpec {
            name: "stories260k-reference".into(),
            model: "stories260K".into(),
            prompt: b"Once upon a time".to_vec(),
            max_tokens: 12,
            temperature_q16: 0,
            seed: 0,
        };
        let run = wasm.open(&artifact, &spec).expect("open in the module");
        let mut state = native::open(&m, &spec);
        assert!(wasm.state(&run) == *state, "the states differ after init");

        let (mut in_module, mut natively) = (Duration::ZERO, Duration::ZERO);
        let mut turns = 0;
        loop {
            let start = Instant::now();
            let result = native::step(&artifact, &m, &mut state);
            natively += start.elapsed();
            let start = Instant::now();
            let stepped = wasm.step(&run);
            in_module += start.elapsed();
            turns += 1;
            assert_eq!(stepped, Ok(()), "turn {turns} failed in the module");
            assert!(
                wasm.state(&run) == *state,
                "the states differ after turn {turns}"
            );
            if result.complete {
                break;
            }
            assert!(turns < 20, "not complete after 20 turns");
        }
        assert_eq!(turns, 20, "the reference run takes 20 turns");
        // A complete state takes no more turns: `InvalidState` (3).
        assert_eq!(wasm.step(&run), Err(3));
        wasm.close(run);
        println!(
            "load and compile {:.0} ms; {turns} turns: module {:.3} ms/turn, native {:.3} ms/turn",
            load.as_secs_f64() * 1e3,
            in_module.as_secs_f64() * 1e3 / turns as f64,
            natively.as_secs_f64() * 1e3 / turns as f64,
        );
    }

    /// Parameters `init_state` refuses are an error, and the core stays
    /// usable.
    #[test]
    fn open_refuses_bad_parameters() {
        let mut wasm = core();
        let artifact = models::artifact("stories260K");
        let mut spec = RunSpec {
            name: "bad".into(),
            model: "stories260K".into(),
            prompt: b"Once upon a time".to_vec(),
            max_tokens: 12,
            temperature_q16: 17 << 16,
            seed: 0,
        };
        let err = wasm
            .open(&artifact, &spec)
            .expect_err("a temperature above 16");
        assert!(err.contains("core error 6"), "{err}");
        spec.temperature_q16 = 0;
        let run = wasm.open(&artifact, &spec).expect("open after an error");
        assert_eq!(wasm.step(&run), Ok(()));
        wasm.close(run);
        assert!(wasm.open(&artifact[..100], &spec).is_err());
    }

    /// `convert` in the module gives the native artifact, byte for byte.
    #[test]
    fn convert_matches_native() {
        let mut wasm = core();
        let read = |name: &str| {
            let path = models::models_dir().join(name);
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        let converted = wasm
            .convert(&read("stories260K.bin"), &read("tok512.bin"))
            .unwrap_or_else(|e| panic!("convert in the module: core error {e}"));
        assert!(
            converted == *models::artifact("stories260K"),
            "the artifacts differ"
        );
        // A malformed checkpoint is `InvalidFormat` (2).
        assert_eq!(
            wasm.convert(b"not a checkpoint", &read("tok512.bin")),
            Err(2)
        );
    }
}
