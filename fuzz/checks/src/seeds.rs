//! The targets' first corpus, built from the golden runs
//! (`golden/manifest.json` and `golden/receipts/`) and the models: each
//! seed is an input that decodes, through the targets' own decoders, to a
//! golden run's prompt and parameters on TINY or SMALL, an upload of a
//! model, a run opened and advanced, an instruction of each kind, and so
//! on. `make fuzz-seeds` writes them to `fuzz/corpus/<target>/`.

use std::path::Path;

use curta_core::convert::{synthetic_checkpoint, TINY};
use curta_core::planner::CHARGES;
use curta_core::protocol::{Instruction, TurnEvent};

use crate::models;

/// A golden run: its parameters and the text it generated.
#[derive(Clone, Debug)]
pub struct GoldenRun {
    pub name: String,
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    pub text: Vec<u8>,
    /// `(turn, generated, planner units)` of each turn of the receipt.
    pub turns: Vec<(u64, u32, u32)>,
}

/// A JSON string's value at `key` in `line` (escapes `\"`, `\\`, `\n` and
/// `\uXXXX` of the basic plane).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\": \""))? + key.len() + 5;
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

fn json_number(line: &str, key: &str) -> Option<u64> {
    let start = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let digits: String = line[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The golden runs, with their receipts' text and turns where present.
pub fn golden_runs(root: &Path) -> Vec<GoldenRun> {
    let golden = root.join("golden");
    let manifest =
        std::fs::read_to_string(golden.join("manifest.json")).expect("golden/manifest.json");
    let mut runs = vec![];
    for line in manifest.lines().filter(|l| l.contains("\"name\":")) {
        let name = json_string(line, "name").unwrap();
        let prompt = match json_string(line, "prompt") {
            Some(p) => p.into_bytes(),
            None => std::fs::read(golden.join(json_string(line, "prompt_file").unwrap())).unwrap(),
        };
        let receipt = std::fs::read_to_string(golden.join("receipts").join(format!("{name}.txt")))
            .unwrap_or_default();
        let mut text = vec![];
        let mut turns = vec![];
        for r in receipt.lines() {
            if let Some(hex) = r.strip_prefix("text_hex ") {
                text = (0..hex.len() / 2)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                    .collect();
            }
            let fields: Vec<&str> = r.split_whitespace().collect();
            if fields.len() == 5 && fields[0].parse::<u64>().is_ok() {
                turns.push((
                    fields[0].parse().unwrap(),
                    fields[2].parse().unwrap(),
                    fields[3].parse().unwrap(),
                ));
            }
        }
        runs.push(GoldenRun {
            name,
            prompt,
            max_tokens: json_number(line, "max_tokens").unwrap() as u32,
            temperature_q16: json_number(line, "temperature_q16").unwrap() as u32,
            seed: json_number(line, "seed").unwrap(),
            text,
            turns,
        });
    }
    assert!(!runs.is_empty(), "no golden runs in the manifest");
    runs
}

/// Writes the draws a decoder makes, in its order.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) -> &mut Enc {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Choice `c` of `Source::below(n)`.
    fn below(&mut self, c: usize, n: usize) -> &mut Enc {
        if n <= 1 {
            self
        } else if n <= 256 {
            self.u8(c as u8)
        } else if n <= 65_536 {
            self.u16(c as u16)
        } else {
            self.u32(c as u32)
        }
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Enc {
        self.0.extend_from_slice(b);
        self
    }
    /// `runs::prompt` drawing the input's bytes (its longest form).
    fn prompt(&mut self, p: &[u8]) -> &mut Enc {
        let p = &p[..p.len().min(40)];
        self.below(3, 4).below(p.len(), 41).bytes(p)
    }
    /// `runs::params_for` after the prompt: max tokens, temperature and
    /// seed, each in its raw form.
    fn params(&mut self, max_tokens: u32, temperature_q16: u32, seed: u64) -> &mut Enc {
        self.below(6, 8)
            .u32(max_tokens)
            .below(4, 8)
            .u32(temperature_q16)
            .u8(0)
            .u64(seed)
    }
    /// `runs::allowance` giving `a`.
    fn allowance(&mut self, a: u32) -> &mut Enc {
        self.below(2, 4).u32(a - CHARGES.min_allowance)
    }
}

/// Every target's seeds: `(target, name, bytes)`.
pub fn generate(root: &Path) -> Vec<(&'static str, String, Vec<u8>)> {
    let golden = golden_runs(root);
    let mut out = vec![];
    let models_dir = root.join("models");
    // A golden run on each small model: its prompt cut to what the context
    // holds (and once whole, to run into the context), its max tokens too.
    let variants = |g: &GoldenRun| {
        let mut v = vec![];
        for (choice, keep, max) in [(0u8, 5usize, 3u32), (1, 14, 8), (2, 4, 2)] {
            v.push((
                choice,
                g.prompt[..g.prompt.len().min(keep)].to_vec(),
                g.max_tokens.min(max),
            ));
        }
        v.push((1, g.prompt.clone(), g.max_tokens.min(24)));
        // The text the run generated, as the prompt of a continuation.
        v.push((1, g.text[..g.text.len().min(12)].to_vec(), 6));
        v
    };
    let lo = CHARGES.min_allowance;
    for g in &golden {
        for (i, (model, prompt, max)) in variants(g).into_iter().enumerate() {
            let name = format!("{}-{i}", g.name);
            // cut_invariance: the whole allowance against cuts at several.
            let allowances: [&[u32]; 3] = [&[lo], &[lo, 60_000, 250_000], &[37_000, 1_000_000]];
            let mut e = Enc::default();
            e.u8(model)
                .prompt(&prompt)
                .params(max, g.temperature_q16, g.seed);
            let a = allowances[i % 3];
            e.below(a.len() - 1, 6);
            for &x in a {
                e.allowance(x);
            }
            e.u8(0).u8(0x5A);
            out.push(("cut_invariance", name.clone(), e.0));
            // state: the run some turns in, then a turn checked.
            for k in [[0u8, 9][i % 2], [2, 40][i % 2]] {
                let mut e = Enc::default();
                e.u8(model)
                    .u8(0)
                    .prompt(&prompt)
                    .params(max, g.temperature_q16, g.seed);
                e.below(0, 4).u8(k).u8(0);
                out.push(("state", format!("{name}-turn{k}"), e.0));
            }
        }
        // wasm_exports: a run through the exports, with a quote and a conversion.
        for model in [0u8, 1] {
            let mut prefix = Enc::default();
            prefix
                .u8(model)
                .prompt(&g.prompt[..g.prompt.len().min(6 + 8 * model as usize)])
                .u8(1)
                .u8(0);
            let mut ops: Vec<Vec<u8>> = vec![vec![2], vec![3], vec![7]];
            ops.extend((0..6).map(|_| vec![4]));
            ops.extend([vec![8], vec![9], vec![0], vec![1], vec![10]]);
            out.push((
                "wasm_exports",
                format!("{}-{model}", g.name),
                crate::wasm::seed(&prefix.0, &ops),
            ));
        }
        // protocol: the instructions, with this run's parameters.
        let open = Instruction::OpenRun {
            max_tokens: g.max_tokens,
            temperature_q16: g.temperature_q16,
            seed: g.seed,
            royalty: 1_000,
            model_identity: &[7; 32],
            crank_fee: 5_000,
            crank_deposit: 100_000,
            staged: 0,
            delivery_fee: 0,
            callback: &[],
            prompt: &g.prompt[..g.prompt.len().min(64)],
        };
        out.push((
            "protocol",
            format!("{}-open", g.name),
            [&[0u8][..], &open.encode()].concat(),
        ));
        if let Some(&(turns, generated, charged)) = g.turns.last() {
            let event = TurnEvent {
                run: [1; 32],
                model: [2; 32],
                turns,
                paid: 0,
                generated,
                generated_this_turn: 1,
                charged,
                phase: 20,
                text_len: g.text.len() as u32,
                crank_paid: 5_000,
            };
            let mut field = [0u8; curta_core::protocol::event::LEN];
            event.encode(&mut field);
            out.push((
                "protocol",
                format!("{}-event", g.name),
                [&[3u8][..], &field].concat(),
            ));
        }
        out.push((
            "protocol",
            format!("{}-hash", g.name),
            [&[4u8, 2, 5, 60][..], &g.text].concat(),
        ));
        // program: upload, open this run, advance it, and close it all.
        let mut open = Enc::default();
        // The prompt, the model picked (one byte when one model exists),
        // then max tokens, temperature and seed.
        open.below(5, 24)
            .prompt(&g.prompt[..g.prompt.len().min(4)])
            .u8(0);
        open.params(g.max_tokens.min(3), g.temperature_q16, g.seed);
        // Upload TINY under a config of a small allowance (so its runs take
        // many turns): the model, a new config, its key, its admin, then
        // the allowance.
        let mut upload = Enc::default();
        upload
            .below(2, 24)
            .u8(0)
            .u8(0)
            .u8(0)
            .u8(0)
            .u8(0)
            .u8(0)
            .allowance(60_000);
        let mut actions = vec![upload.0, open.0];
        actions.extend((0..3).map(|_| vec![7, 31]));
        actions.extend([vec![18], vec![16], vec![16], vec![16], vec![17]]);
        out.push((
            "program",
            format!("{}-tiny", g.name),
            crate::program::seed(&actions),
        ));
    }
    let small = [
        vec![2, 2],
        vec![5],
        vec![7, 31],
        vec![7, 31],
        vec![14],
        vec![7, 31],
        vec![11],
    ];
    out.push((
        "program",
        "small-allowance".into(),
        crate::program::seed(&small),
    ));
    let instructions = [
        Instruction::InitConfig {
            allowance: CHARGES.allowance,
        },
        Instruction::SetAllowance { allowance: lo },
        Instruction::SetAdmin,
        Instruction::BindWeight { section: 1 },
        Instruction::Write {
            offset: 8,
            bytes: b"CURTAW01",
        },
        Instruction::SealSection { digest: &[7; 32] },
        Instruction::SealModel,
        Instruction::CloseWeight,
        Instruction::CloseModel,
        Instruction::Turn {
            expected_turns: Some(3),
        },
        Instruction::CloseRun,
        Instruction::Reclaim,
        Instruction::WritePrompt {
            offset: 0,
            bytes: b"Once",
        },
    ];
    for (i, ix) in instructions.iter().enumerate() {
        out.push((
            "protocol",
            format!("instruction-{i}"),
            [&[0u8][..], &ix.encode()].concat(),
        ));
    }
    let config = TINY.to_bytes();
    let init = Instruction::InitModel {
        royalty: 1000,
        config: &config,
        flags: 1,
        zero_len: models::tiny().zero().len() as u64,
    };
    out.push((
        "protocol",
        "instruction-init-model".into(),
        [&[0u8][..], &init.encode()].concat(),
    ));
    for kind in 0..4u8 {
        out.push((
            "protocol",
            format!("account-{kind}"),
            vec![2, kind, kind, 1, 1],
        ));
    }
    // protocol: the client core's wire, as a WebAssembly host sends it.
    let program = "Curta11111111111111111111111111111111111111";
    let mut field = [0u8; curta_core::protocol::event::LEN];
    TurnEvent {
        turns: 1,
        ..TurnEvent::default()
    }
    .encode(&mut field);
    let b64 = curta_core::client::base64::encode;
    let logs = format!(
        "{program}\nProgram {program} invoke [1]\nProgram data: {} {} {}\nProgram {program} success",
        b64(&field),
        b64(&433u32.to_le_bytes()),
        b64(b" Lily")
    );
    let wire = [
        ("wire-statuses", r#"{"event":"statuses","statuses":[{"status":"landed","slot":"7"},{"status":"failed","slot":"9","fee":"5000","custom":21,"words":"StaleTurn","logTail":""},{"status":"pending"}]}"#.to_string()),
        ("wire-setup", format!(r#"{{"programId":"{program}","run":"{program}","model":"{program}","payer":"{program}","royalty":"1000","keep":"890880","lamportsPerSignature":5000,"window":4,"cuLimit":"exact","priorityRamp":false,"openTransactions":"1","rent":"7","maxTokens":5}}"#)),
        ("wire-logs", logs),
    ];
    for (name, text) in wire {
        out.push((
            "protocol",
            name.into(),
            [&[5u8][..], text.as_bytes()].concat(),
        ));
    }
    // artifact: section zero's opening, patched zeros with a run, the
    // converter on real file openings and on small shapes.
    let zero = models::tiny().zero();
    out.push((
        "artifact",
        "tiny-zero-opening".into(),
        [&[0u8, 0][..], &zero[..256]].concat(),
    ));
    for (i, (model, at, value)) in [(0u8, 52u8, 200u8), (1, 44, 0), (0, 16, 9), (1, 12, 4)]
        .into_iter()
        .enumerate()
    {
        let mut e = Enc::default();
        e.u8(1)
            .u8(model)
            .below(0, 6)
            .below(0, 4)
            .u8(at)
            .below(0, 4)
            .u8(value)
            .u8(0);
        e.prompt(&golden[0].prompt[..5]);
        out.push(("artifact", format!("patched-zero-{i}"), e.0));
    }
    for (i, shape) in [
        [3u8, 0, 4, 0, 0, 7, 2],
        [0, 0, 0, 0, 0, 0, 0],
        [5, 1, 20, 2, 1, 39, 15],
    ]
    .into_iter()
    .enumerate()
    {
        let mut e = Enc::default();
        e.u8(3)
            .bytes(&shape)
            .u8(0)
            .u8(1)
            .u8(2)
            .u64(i as u64 + 1)
            .u8(0);
        out.push(("artifact", format!("shape-{i}"), e.0));
    }
    let checkpoint = std::fs::read(models_dir.join("stories260K.bin"))
        .unwrap_or_else(|_| synthetic_checkpoint(&TINY, 1).unwrap());
    let tokenizer = std::fs::read(models_dir.join("tok512.bin")).unwrap_or_default();
    let mut e = Enc::default();
    e.u8(2)
        .u16(28)
        .bytes(&checkpoint[..28])
        .bytes(&tokenizer[..tokenizer.len().min(200)]);
    out.push(("artifact", "stories260k-openings".into(), e.0));
    out
}
