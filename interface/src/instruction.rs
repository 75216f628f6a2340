//! The instruction codec: each instruction's tag, its fields and accounts
//! (the variants' docs), and its data's encoding.

use super::schema::{Field, InstructionSchema, Ty};
use super::{accounts, model};
use crate::bytes::{read_u32, read_u64};
use crate::format::Config;

/// The tags, here too for the paths that name them so.
pub use crate::tag;

/// A decoded instruction, borrowing its variable parts from the data. Each
/// variant's accounts, in order, are its table in `accounts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instruction<'a> {
    /// Creates the program's settings, administered by `admin`.
    ///
    /// Accounts: `accounts::INIT_CONFIG`.
    InitConfig { allowance: u32 },
    /// Changes the turn allowance (22,096 to 1,350,000 compute units).
    ///
    /// Accounts: `accounts::SET_ALLOWANCE`.
    SetAllowance { allowance: u32 },
    /// Hands the config to a new admin; both sign.
    ///
    /// Accounts: `accounts::SET_ADMIN`.
    SetAdmin,
    /// Creates a model of `config` owned by `owner`, with no weight account
    /// bound yet. Section lengths follow from the configuration, `flags`
    /// (`format::FLAG_SHARED_CLASSIFIER`) and section zero's length.
    ///
    /// Accounts: `accounts::INIT_MODEL`.
    InitModel {
        royalty: u64,
        /// The model's `Config`, 28 bytes.
        config: &'a [u8],
        flags: u32,
        zero_len: u64,
    },
    /// Binds a weight account to section `section` of a model being written.
    ///
    /// Accounts: `accounts::BIND_WEIGHT`.
    BindWeight { section: u32 },
    /// Copies `bytes` into a bound, unsealed section at `offset`.
    ///
    /// Accounts: `accounts::WRITE`.
    Write { offset: u64, bytes: &'a [u8] },
    /// Hashes up to `SEAL_BYTES_PER_CALL` more bytes of a section; when the
    /// last byte is hashed the chain must equal `digest`, and the section
    /// is sealed (immutable).
    ///
    /// Accounts: `accounts::SEAL_SECTION`.
    SealSection { digest: &'a [u8; 32] },
    /// Seals the model once every section is: runs may open from then on.
    ///
    /// Accounts: `accounts::SEAL_MODEL`.
    SealModel,
    /// Closes a weight account, its lamports to the owner; a sealed model
    /// is retired by it.
    ///
    /// Accounts: `accounts::CLOSE_WEIGHT`.
    CloseWeight,
    /// Closes a model with no weight account bound, its lamports to the owner.
    ///
    /// Accounts: `accounts::CLOSE_MODEL`.
    CloseModel,
    /// Opens a run of a sealed model: the state for the prompt,
    /// `max_tokens`, the temperature (16 fractional bits) and the seed. The
    /// prompt is the first `staged` bytes `write_prompt` left in the run
    /// account, then `prompt`. The run holds its rent plus royalty times
    /// max tokens, plus `crank_deposit`, from which each turn pays its
    /// sender `crank_fee` while it lasts. `royalty` and `model_identity` are
    /// what the opener saw and accepts: refused unless they are the model's.
    /// With a `callback`, the run also holds `delivery_fee`, which pays
    /// whoever sends `deliver` once the run is finished.
    ///
    /// Accounts: `accounts::OPEN_RUN`.
    OpenRun {
        max_tokens: u32,
        temperature_q16: u32,
        seed: u64,
        royalty: u64,
        model_identity: &'a [u8; 32],
        crank_fee: u64,
        crank_deposit: u64,
        staged: u32,
        /// Lamports `deliver` pays its sender, held in the run (0 without a
        /// callback).
        delivery_fee: u64,
        /// The callback record (`callback`), empty for none; the run keeps
        /// it after the state.
        callback: &'a [u8],
        prompt: &'a [u8],
    },
    /// Advances a run by one turn; anyone may send it, and the run pays
    /// its sender (the cranker, who signs) the crank fee. With
    /// `expected_turns`, refused unless the state has run exactly that many
    /// turns, so a stale or reordered turn fails before any work.
    ///
    /// Accounts: `accounts::TURN`.
    Turn { expected_turns: Option<u64> },
    /// Closes a run at any point, complete or not: its rent and unspent
    /// escrow go to the opener; royalties paid stay paid.
    ///
    /// Accounts: `accounts::CLOSE_RUN`.
    CloseRun,
    /// Closes an account created for the program but never initialized,
    /// signed by the account itself; its lamports go to `recipient`.
    ///
    /// Accounts: `accounts::RECLAIM`.
    Reclaim,
    /// Stages prompt bytes at `offset` of the prompt in a run account not
    /// yet opened, for a prompt too long to travel with `open_run`.
    ///
    /// Accounts: `accounts::WRITE_PROMPT`.
    WritePrompt { offset: u32, bytes: &'a [u8] },
    /// Closes a config, its lamports to the admin. Its models' runs can
    /// then neither open nor turn (each can still be closed), and the
    /// models and weights are closed as before.
    ///
    /// Accounts: `accounts::CLOSE_CONFIG`.
    CloseConfig,
    /// Delivers a finished run: invokes the callback the run names with
    /// its accounts and data (none signing), then pays its sender the
    /// run's delivery fee, gives the callback's refund address every other
    /// lamport of the run and closes the run. Anyone may send it, once.
    ///
    /// Accounts: `accounts::DELIVER`, then the callback's accounts in its
    /// order (`accounts::DELIVER_CALLBACK`).
    Deliver,
}

/// Fixed data lengths after the tag.
const INIT_MODEL_LEN: usize = 8 + Config::LEN + 4 + 8;
/// `open_run`'s fixed fields, before the callback record's bytes and the
/// prompt's: through `staged`, then the delivery fee and the callback
/// record's length.
pub const OPEN_RUN_FIXED_LEN: usize = 4 + 4 + 8 + 8 + 32 + 8 + 8 + 4 + 8 + 4;

impl<'a> Instruction<'a> {
    /// Decodes instruction data; `None` for an unknown tag or a wrong length.
    pub fn decode(data: &'a [u8]) -> Option<Instruction<'a>> {
        let (&t, rest) = data.split_first()?;
        let exact = |n: usize| rest.len() == n;
        Some(match t {
            tag::INIT_CONFIG if exact(4) => Instruction::InitConfig {
                allowance: read_u32(rest, 0),
            },
            tag::SET_ALLOWANCE if exact(4) => Instruction::SetAllowance {
                allowance: read_u32(rest, 0),
            },
            tag::SET_ADMIN if exact(0) => Instruction::SetAdmin,
            tag::INIT_MODEL if exact(INIT_MODEL_LEN) => Instruction::InitModel {
                royalty: read_u64(rest, 0),
                config: &rest[8..8 + Config::LEN],
                flags: read_u32(rest, 8 + Config::LEN),
                zero_len: read_u64(rest, 12 + Config::LEN),
            },
            tag::BIND_WEIGHT if exact(4) => Instruction::BindWeight {
                section: read_u32(rest, 0),
            },
            tag::WRITE if rest.len() >= 8 => Instruction::Write {
                offset: read_u64(rest, 0),
                bytes: &rest[8..],
            },
            tag::SEAL_SECTION if exact(32) => Instruction::SealSection {
                digest: rest.try_into().ok()?,
            },
            tag::SEAL_MODEL if exact(0) => Instruction::SealModel,
            tag::CLOSE_WEIGHT if exact(0) => Instruction::CloseWeight,
            tag::CLOSE_MODEL if exact(0) => Instruction::CloseModel,
            tag::OPEN_RUN if rest.len() >= OPEN_RUN_FIXED_LEN => {
                let (callback, prompt) =
                    rest[OPEN_RUN_FIXED_LEN..].split_at_checked(read_u32(rest, 84) as usize)?;
                Instruction::OpenRun {
                    max_tokens: read_u32(rest, 0),
                    temperature_q16: read_u32(rest, 4),
                    seed: read_u64(rest, 8),
                    royalty: read_u64(rest, 16),
                    model_identity: rest[24..56].try_into().ok()?,
                    crank_fee: read_u64(rest, 56),
                    crank_deposit: read_u64(rest, 64),
                    staged: read_u32(rest, 72),
                    delivery_fee: read_u64(rest, 76),
                    callback,
                    prompt,
                }
            }
            tag::TURN if exact(0) => Instruction::Turn {
                expected_turns: None,
            },
            tag::TURN if exact(8) => Instruction::Turn {
                expected_turns: Some(read_u64(rest, 0)),
            },
            tag::CLOSE_RUN if exact(0) => Instruction::CloseRun,
            tag::RECLAIM if exact(0) => Instruction::Reclaim,
            tag::WRITE_PROMPT if rest.len() >= 4 => Instruction::WritePrompt {
                offset: read_u32(rest, 0),
                bytes: &rest[4..],
            },
            tag::CLOSE_CONFIG if exact(0) => Instruction::CloseConfig,
            tag::DELIVER if exact(0) => Instruction::Deliver,
            _ => return None,
        })
    }

    /// Encodes the instruction's data into `out`, returning its length, or
    /// `None` when `out` is too short. No allocation: a program building a
    /// cross-program invocation calls it (`encoded_len` sizes `out`).
    pub fn encode_into(&self, out: &mut [u8]) -> Option<usize> {
        let mut w = Writer {
            out,
            at: 0,
            ok: true,
        };
        match *self {
            Instruction::InitConfig { allowance } => {
                w.put(&[tag::INIT_CONFIG]);
                w.put(&allowance.to_le_bytes());
            }
            Instruction::SetAllowance { allowance } => {
                w.put(&[tag::SET_ALLOWANCE]);
                w.put(&allowance.to_le_bytes());
            }
            Instruction::SetAdmin => w.put(&[tag::SET_ADMIN]),
            Instruction::InitModel {
                royalty,
                config,
                flags,
                zero_len,
            } => {
                w.put(&[tag::INIT_MODEL]);
                w.put(&royalty.to_le_bytes());
                w.put(config);
                w.put(&flags.to_le_bytes());
                w.put(&zero_len.to_le_bytes());
            }
            Instruction::BindWeight { section } => {
                w.put(&[tag::BIND_WEIGHT]);
                w.put(&section.to_le_bytes());
            }
            Instruction::Write { offset, bytes } => {
                w.put(&[tag::WRITE]);
                w.put(&offset.to_le_bytes());
                w.put(bytes);
            }
            Instruction::SealSection { digest } => {
                w.put(&[tag::SEAL_SECTION]);
                w.put(digest);
            }
            Instruction::SealModel => w.put(&[tag::SEAL_MODEL]),
            Instruction::CloseWeight => w.put(&[tag::CLOSE_WEIGHT]),
            Instruction::CloseModel => w.put(&[tag::CLOSE_MODEL]),
            Instruction::OpenRun {
                max_tokens,
                temperature_q16,
                seed,
                royalty,
                model_identity,
                crank_fee,
                crank_deposit,
                staged,
                delivery_fee,
                callback,
                prompt,
            } => {
                w.put(&[tag::OPEN_RUN]);
                w.put(&max_tokens.to_le_bytes());
                w.put(&temperature_q16.to_le_bytes());
                w.put(&seed.to_le_bytes());
                w.put(&royalty.to_le_bytes());
                w.put(model_identity);
                w.put(&crank_fee.to_le_bytes());
                w.put(&crank_deposit.to_le_bytes());
                w.put(&staged.to_le_bytes());
                w.put(&delivery_fee.to_le_bytes());
                w.put(&(callback.len() as u32).to_le_bytes());
                w.put(callback);
                w.put(prompt);
            }
            Instruction::Turn { expected_turns } => {
                w.put(&[tag::TURN]);
                if let Some(turns) = expected_turns {
                    w.put(&turns.to_le_bytes());
                }
            }
            Instruction::CloseRun => w.put(&[tag::CLOSE_RUN]),
            Instruction::Reclaim => w.put(&[tag::RECLAIM]),
            Instruction::WritePrompt { offset, bytes } => {
                w.put(&[tag::WRITE_PROMPT]);
                w.put(&offset.to_le_bytes());
                w.put(bytes);
            }
            Instruction::CloseConfig => w.put(&[tag::CLOSE_CONFIG]),
            Instruction::Deliver => w.put(&[tag::DELIVER]),
        }
        w.ok.then_some(w.at)
    }

    /// The encoded data's length.
    pub fn encoded_len(&self) -> usize {
        1 + match *self {
            Instruction::InitConfig { .. } | Instruction::SetAllowance { .. } => 4,
            Instruction::InitModel { .. } => INIT_MODEL_LEN,
            Instruction::BindWeight { .. } => 4,
            Instruction::Write { bytes, .. } => 8 + bytes.len(),
            Instruction::SealSection { .. } => 32,
            Instruction::OpenRun {
                callback, prompt, ..
            } => OPEN_RUN_FIXED_LEN + callback.len() + prompt.len(),
            Instruction::Turn { expected_turns } => 8 * expected_turns.is_some() as usize,
            Instruction::WritePrompt { bytes, .. } => 4 + bytes.len(),
            Instruction::SetAdmin
            | Instruction::SealModel
            | Instruction::CloseWeight
            | Instruction::CloseModel
            | Instruction::CloseRun
            | Instruction::Reclaim
            | Instruction::CloseConfig
            | Instruction::Deliver => 0,
        }
    }

    /// Encodes the instruction's data.
    #[cfg(any(feature = "std", test))]
    pub fn encode(&self) -> std::vec::Vec<u8> {
        let mut out = std::vec![0u8; self.encoded_len()];
        let n = self.encode_into(&mut out);
        debug_assert_eq!(n, Some(out.len()));
        out
    }
}

/// Appends bytes while they fit; `ok` turns false at the first that does not.
struct Writer<'o> {
    out: &'o mut [u8],
    at: usize,
    ok: bool,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        match self.out.get_mut(self.at..self.at + bytes.len()) {
            Some(dst) if self.ok => {
                dst.copy_from_slice(bytes);
                self.at += bytes.len();
            }
            _ => self.ok = false,
        }
    }
}

/// `init_config`'s and `set_allowance`'s one argument.
const ALLOWANCE_ARG: Field = Field {
    at: 1,
    name: "allowance",
    ty: Ty::U32,
    docs: &["Turn allowance in compute units, 22,096 to 1,350,000."],
};

/// Each instruction as the IDL gives it, in tag order.
pub const SCHEMAS: [InstructionSchema; 17] = [
    InstructionSchema {
        name: "initConfig",
        tag: tag::INIT_CONFIG,
        docs: &["Creates the settings, administered by `admin`."],
        accounts: &accounts::INIT_CONFIG,
        args: &[ALLOWANCE_ARG],
        remaining: None,
    },
    InstructionSchema {
        name: "setAllowance",
        tag: tag::SET_ALLOWANCE,
        docs: &["Changes the turn allowance."],
        accounts: &accounts::SET_ALLOWANCE,
        args: &[ALLOWANCE_ARG],
        remaining: None,
    },
    InstructionSchema {
        name: "setAdmin",
        tag: tag::SET_ADMIN,
        docs: &["Hands the config to a new admin; both sign."],
        accounts: &accounts::SET_ADMIN,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "initModel",
        tag: tag::INIT_MODEL,
        docs: &["Creates a model bound to a config, with no weight account bound yet."],
        accounts: &accounts::INIT_MODEL,
        args: &[
            Field {
                at: 1,
                name: "royalty",
                ty: Ty::U64,
                docs: &["Royalty in lamports per generated token."],
            },
            Field {
                at: 9,
                name: "modelConfig",
                ty: Ty::Defined(&model::MODEL_CONFIG_TYPE),
                docs: &["The model's configuration."],
            },
            Field {
                at: 37,
                name: "flags",
                ty: Ty::U32,
                docs: &["Flags: bit 0, shared classifier; bit 1, the measured charge table (section zero's own flags, which must match); no other bit."],
            },
            Field {
                at: 41,
                name: "sectionZeroLength",
                ty: Ty::U64,
                docs: &["Section zero's length in bytes, 1 to 10 MiB - 128."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "bindWeight",
        tag: tag::BIND_WEIGHT,
        docs: &["Binds a new weight account to a section of a model being written."],
        accounts: &accounts::BIND_WEIGHT,
        args: &[
            Field {
                at: 1,
                name: "section",
                ty: Ty::U32,
                docs: &["The section index, below the section count."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "write",
        tag: tag::WRITE,
        docs: &["Copies bytes into a bound, unsealed section."],
        accounts: &accounts::WRITE,
        args: &[
            Field {
                at: 1,
                name: "offset",
                ty: Ty::U64,
                docs: &["Where in the section the bytes go."],
            },
            Field {
                at: 9,
                name: "bytes",
                ty: Ty::Rest,
                docs: &["The bytes: the rest of the data (up to 986 in one transaction)."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "sealSection",
        tag: tag::SEAL_SECTION,
        docs: &["Hashes up to 2 MiB more of a section; when the last byte is hashed the chain must equal the digest, and the section is sealed."],
        accounts: &accounts::SEAL_SECTION,
        args: &[
            Field {
                at: 1,
                name: "digest",
                ty: Ty::Bytes(32),
                docs: &["The section's expected chained digest."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "sealModel",
        tag: tag::SEAL_MODEL,
        docs: &["Seals the model once every section is, and records its identity: runs may open."],
        accounts: &accounts::SEAL_MODEL,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "closeWeight",
        tag: tag::CLOSE_WEIGHT,
        docs: &["Closes a weight account, its lamports to the owner; retires a sealed model."],
        accounts: &accounts::CLOSE_WEIGHT,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "closeModel",
        tag: tag::CLOSE_MODEL,
        docs: &["Closes a model with no weight account bound, its lamports to the owner."],
        accounts: &accounts::CLOSE_MODEL,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "openRun",
        tag: tag::OPEN_RUN,
        docs: &["Opens a run of a sealed model; the run holds its rent plus royalty x max tokens plus the crank deposit.", "The prompt is the first `staged` bytes `writePrompt` left in the run account, then `prompt`."],
        accounts: &accounts::OPEN_RUN,
        args: &[
            Field {
                at: 1,
                name: "maxTokens",
                ty: Ty::U32,
                docs: &["The most tokens to generate."],
            },
            Field {
                at: 5,
                name: "temperatureQ16",
                ty: Ty::U32,
                docs: &["Temperature with 16 fractional bits, at most 16.0 (0: greedy)."],
            },
            Field {
                at: 9,
                name: "seed",
                ty: Ty::U64,
                docs: &["The sampler's seed."],
            },
            Field {
                at: 17,
                name: "royalty",
                ty: Ty::U64,
                docs: &["The royalty per token the opener accepts: must be the model's."],
            },
            Field {
                at: 25,
                name: "modelIdentity",
                ty: Ty::Bytes(32),
                docs: &["The model identity the opener accepts: must be the model's."],
            },
            Field {
                at: 57,
                name: "crankFee",
                ty: Ty::U64,
                docs: &["Lamports each turn pays its sender from the crank deposit (0: none)."],
            },
            Field {
                at: 65,
                name: "crankDeposit",
                ty: Ty::U64,
                docs: &["Lamports deposited for crank fees; what is left returns at closing."],
            },
            Field {
                at: 73,
                name: "staged",
                ty: Ty::U32,
                docs: &["How many of the prompt's bytes `writePrompt` left in the account (0: all travel here)."],
            },
            Field {
                at: 77,
                name: "deliveryFee",
                ty: Ty::U64,
                docs: &["Lamports `deliver` pays its sender, held in the run (0 without a callback)."],
            },
            Field {
                at: 85,
                name: "callback",
                ty: Ty::PrefixedBytes,
                docs: &["The callback record `deliver` invokes (program, compute units, accounts, data; `docs/program.md`, \"Delivery\"), after its u32 length; empty for none."],
            },
            Field {
                at: 89,
                name: "prompt",
                ty: Ty::Rest,
                docs: &["The rest of the prompt (UTF-8, no zero byte, 1,024 bytes in all at most): the rest of the data."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "turn",
        tag: tag::TURN,
        docs: &["Advances a run by one turn, pays its sender the crank fee and logs a receipt; anyone may send it.", "Remaining accounts: the weight accounts of the matrix sections the turn's plan names (none, one or two, any order)."],
        accounts: &accounts::TURN,
        args: &[
            Field {
                at: 1,
                name: "expectedTurns",
                ty: Ty::OptionalU64,
                docs: &["The state's turn count this turn requires (`StaleTurn` otherwise); absent, the data is the tag alone."],
            },
        ],
        remaining: Some(accounts::TURN_WEIGHT),
    },
    InstructionSchema {
        name: "closeRun",
        tag: tag::CLOSE_RUN,
        docs: &["Closes a run at any point: its rent and unspent escrow go to the opener."],
        accounts: &accounts::CLOSE_RUN,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "reclaim",
        tag: tag::RECLAIM,
        docs: &["Closes an account created for the program but never initialized; its lamports go to the recipient."],
        accounts: &accounts::RECLAIM,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "writePrompt",
        tag: tag::WRITE_PROMPT,
        docs: &["Stages prompt bytes in a run account not yet opened, for a prompt too long to travel with `openRun`."],
        accounts: &accounts::WRITE_PROMPT,
        args: &[
            Field {
                at: 1,
                name: "offset",
                ty: Ty::U32,
                docs: &["Where in the prompt the bytes go (account offset 384 + offset)."],
            },
            Field {
                at: 5,
                name: "bytes",
                ty: Ty::Rest,
                docs: &["The bytes: the rest of the data (1,024 bytes of prompt in all at most)."],
            },
        ],
        remaining: None,
    },
    InstructionSchema {
        name: "closeConfig",
        tag: tag::CLOSE_CONFIG,
        docs: &[
            "Closes a config, its lamports to the admin; its models' runs can then neither open \
             nor turn (each can still be closed).",
        ],
        accounts: &accounts::CLOSE_CONFIG,
        args: &[],
        remaining: None,
    },
    InstructionSchema {
        name: "deliver",
        tag: tag::DELIVER,
        docs: &[
            "Delivers a finished run: invokes the run's callback (no account signing), then pays the sender the delivery fee, \
             gives the callback's refund address the rest of the run's lamports and closes the run; anyone may send it.",
            "Remaining accounts: the callback's accounts, in the order and with the writability the run's callback record gives.",
        ],
        accounts: &accounts::DELIVER,
        args: &[],
        remaining: Some(accounts::DELIVER_CALLBACK),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_round_trips() {
        let config = [7u8; Config::LEN];
        let digest = [9u8; 32];
        let all = [
            Instruction::InitConfig { allowance: 5 },
            Instruction::SetAllowance { allowance: 6 },
            Instruction::SetAdmin,
            Instruction::InitModel {
                royalty: 1,
                config: &config,
                flags: 1,
                zero_len: 60_440,
            },
            Instruction::BindWeight { section: 2 },
            Instruction::Write {
                offset: 3,
                bytes: b"abc",
            },
            Instruction::SealSection { digest: &digest },
            Instruction::SealModel,
            Instruction::CloseWeight,
            Instruction::CloseModel,
            Instruction::OpenRun {
                max_tokens: 12,
                temperature_q16: 0,
                seed: 42,
                royalty: 1_000,
                model_identity: &digest,
                crank_fee: 5_000,
                crank_deposit: 100_000,
                staged: 3,
                delivery_fee: 0,
                callback: &[],
                prompt: b"Once",
            },
            Instruction::OpenRun {
                max_tokens: 12,
                temperature_q16: 0,
                seed: 42,
                royalty: 1_000,
                model_identity: &digest,
                crank_fee: 5_000,
                crank_deposit: 100_000,
                staged: 0,
                delivery_fee: 7_000,
                callback: &[1, 2, 3, 4, 5],
                prompt: b"upon",
            },
            Instruction::Turn {
                expected_turns: None,
            },
            Instruction::Turn {
                expected_turns: Some(7),
            },
            Instruction::CloseRun,
            Instruction::Reclaim,
            Instruction::WritePrompt {
                offset: 5,
                bytes: b"upon",
            },
            Instruction::CloseConfig,
            Instruction::Deliver,
        ];
        for ix in all {
            let data = ix.encode();
            assert_eq!(Instruction::decode(&data), Some(ix), "{ix:?}");
            let mut short = std::vec![0u8; data.len() - 1];
            assert_eq!(
                ix.encode_into(&mut short),
                None,
                "{ix:?} into a short buffer"
            );
            // One byte more or less is refused, except where the tail is
            // free-form (write, open_run) or optional (turn).
            let mut longer = data.clone();
            longer.push(0);
            let free = matches!(
                ix,
                Instruction::Write { .. }
                    | Instruction::OpenRun { .. }
                    | Instruction::Turn { .. }
                    | Instruction::WritePrompt { .. }
            );
            if !free {
                assert_eq!(Instruction::decode(&longer), None, "{ix:?} + 1 byte");
            }
        }
        assert_eq!(Instruction::decode(&[]), None);
        assert_eq!(Instruction::decode(&[tag::LAST + 1]), None);
        assert_eq!(Instruction::decode(&[tag::TURN, 1, 2, 3]), None);
    }
}
