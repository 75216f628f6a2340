//! `sdk/src/layout.js`: the sizes and offsets the SDK reads bytes with on
//! the JavaScript side, written from the interface's constants so that no
//! JavaScript file restates one (`curta-core layout` prints it; `make idl`
//! writes it; `make test-idl` checks it is current). The IDL gives the
//! fields; this gives what Codama has no node for: the header lengths of
//! the accounts that grow, the artifact's header and the state's.

use crate::planner::CHARGES;
use curta_interface::{callback, config, format, model, run, state, weight};
use std::fmt::Write;
use std::string::String;
use std::vec::Vec;

/// One exported constant: its name, value and what it is.
enum Constant {
    Number(&'static str, u64, &'static str),
    Text(&'static str, &'static str, &'static str),
}
use Constant::{Number, Text};

fn ascii(bytes: &'static [u8]) -> &'static str {
    core::str::from_utf8(bytes).expect("tags are ASCII")
}

fn constants() -> Vec<Constant> {
    vec![
        Text(
            "ARTIFACT_MAGIC",
            ascii(&format::MAGIC),
            "The artifact's magic.",
        ),
        Number(
            "SECTION_COUNT_OFFSET",
            format::header::SECTION_COUNT as u64,
            "Where the artifact header keeps the section count (u32).",
        ),
        Number(
            "CONFIG_OFFSET",
            format::header::CONFIG as u64,
            "Where the artifact header keeps the model configuration (seven u32).",
        ),
        Number(
            "MODEL_CONFIG_LEN",
            format::Config::LEN as u64,
            "The model configuration's encoded length: seven u32.",
        ),
        Number(
            "FLAGS_OFFSET",
            format::header::FLAGS as u64,
            "Where the artifact header keeps its flags (u32).",
        ),
        Number(
            "SECTION_TABLE",
            format::SECTION_TABLE as u64,
            "Where the section table starts; entry i is (u64 offset, u64 length).",
        ),
        Number(
            "SECTION_ENTRY_LEN",
            format::SECTION_ENTRY_LEN as u64,
            "Bytes per section table entry.",
        ),
        Number(
            "FLAG_SHARED_CLASSIFIER",
            format::FLAG_SHARED_CLASSIFIER as u64,
            "Flag bit 0: the classifier is the token embedding (llama2.c's shared weights).",
        ),
        Number(
            "FLAG_MEASURED_CHARGES",
            format::FLAG_MEASURED_CHARGES as u64,
            "Flag bit 1: turns are planned with the measured charge table (fewer, fuller turns) \
             rather than the specification's.",
        ),
        Number(
            "DEFAULT_ALLOWANCE",
            CHARGES.allowance as u64,
            "The default turn allowance in compute units, and the most a config may set.",
        ),
        Number(
            "MIN_ALLOWANCE",
            CHARGES.min_allowance as u64,
            "The least turn allowance a config may set.",
        ),
        Text("STATE_TAG", ascii(&state::STATE_TAG), "The state's tag."),
        Number(
            "STATE_HEADER_LEN",
            state::HEADER_LEN as u64,
            "The state header's length.",
        ),
        Number(
            "PHASE_DONE",
            state::Phase::Done as u64,
            "The phase of a complete run.",
        ),
        Number(
            "MAX_PROMPT_BYTES",
            state::MAX_PROMPT_BYTES as u64,
            "The longest prompt in bytes (UTF-8).",
        ),
        Number(
            "CONFIG_ACCOUNT_LEN",
            config::LEN as u64,
            "A Config account's length.",
        ),
        Number(
            "MODEL_HEADER_LEN",
            model::HEADER_LEN as u64,
            "A Model account's header; its section entries follow.",
        ),
        Number(
            "MODEL_SECTION_LEN",
            model::ENTRY_LEN as u64,
            "A Model account's section entry.",
        ),
        Number(
            "MODEL_SECTION_COUNT_OFFSET",
            model::SECTION_COUNT as u64,
            "Where a Model account keeps its section count (u32), which gives its length.",
        ),
        Number(
            "WEIGHT_HEADER_LEN",
            weight::HEADER_LEN as u64,
            "A Weight account's header; the section's bytes follow.",
        ),
        Number(
            "RUN_HEADER_LEN",
            run::HEADER_LEN as u64,
            "A Run account's header; the core state follows, then the callback record.",
        ),
        Number(
            "CALLBACK_FIXED_LEN",
            callback::FIXED_LEN as u64,
            "A callback record's fixed part; then 33 bytes an account, then its data.",
        ),
        Number(
            "CALLBACK_ACCOUNT_LEN",
            callback::ACCOUNT_LEN as u64,
            "A callback record's bytes for each account it names.",
        ),
        Number(
            "CALLBACK_MAX_LEN",
            callback::MAX_LEN as u64,
            "The longest callback record a Run account holds after its state.",
        ),
    ]
}

/// The module as `sdk/src/layout.js` holds it.
pub fn module() -> String {
    let mut out = String::from(
        "// @ts-check\n\
         // Generated by `curta-core layout` from curta-interface (`make idl` writes\n\
         // it, `make test-idl` checks it is current): do not edit. Sizes and\n\
         // offsets of the artifact, the state and the accounts (docs/format.md,\n\
         // docs/state.md, docs/program.md).\n",
    );
    for c in constants() {
        let (name, value, doc) = match c {
            Number(name, n, doc) => (name, n.to_string(), doc),
            Text(name, s, doc) => (name, std::format!("'{s}'"), doc),
        };
        let _ = write!(out, "\n/** {doc} */\nexport const {name} = {value};\n");
    }
    out.push_str(
        "\n/** Byte offsets of the state header's fields, by name. */\n\
         export const STATE_FIELDS = Object.freeze({\n",
    );
    for (name, offset, _) in state::field::ALL {
        let _ = writeln!(out, "  {}: {offset},", camel_words(name));
    }
    out.push_str("});\n");
    out
}

/// "prompt length" -> `promptLength`.
fn camel_words(words: &str) -> String {
    let mut out = String::new();
    for (i, w) in words.split(' ').enumerate() {
        let mut chars = w.chars();
        if let (true, Some(first)) = (i > 0, chars.next()) {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        } else {
            out.push_str(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_read_as_javascript() {
        let m = module();
        assert!(m.contains("export const RUN_HEADER_LEN = 256;\n"), "{m}");
        assert!(m.contains("export const STATE_TAG = 'CURTAST2';\n"), "{m}");
        assert!(m.contains("  promptLength: 28,\n"), "{m}");
        assert!(m.contains("  tokenizerBestPosition: 60,\n"), "{m}");
        assert!(
            m.contains("export const DEFAULT_ALLOWANCE = 1350000;\n"),
            "{m}"
        );
        assert_eq!(camel_words("tokenizer best id"), "tokenizerBestId");
    }
}
