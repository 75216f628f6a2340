//! A Run account: a 256-byte header, then the core state. The constants
//! are the header's offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{address, tag_is, Address, Mismatch, RUN_TAG};
use crate::bytes::{read_u32, read_u64, write_u32, write_u64};
use crate::callback::{Callback, Malformed};
/// Why a finished run stopped (`Finished::reason`).
pub use crate::state::FinishReason;

pub const TAG: usize = 0;
pub const MODEL: usize = 8;
pub const OPENER: usize = 40;
/// The royalty per token, fixed when the run opens.
pub const ROYALTY: usize = 72;
/// Lamports escrowed at opening: royalty times max tokens.
pub const DEPOSITED: usize = 80;
/// Lamports still escrowed.
pub const ESCROW: usize = 88;
/// Lamports paid to the model's owner.
pub const PAID: usize = 96;
/// The identity of the model as the run was opened on it
/// (`model_identity`); every turn requires the model's to be the same.
pub const MODEL_IDENTITY: usize = 104;
/// Lamports paid to whoever sends a turn, per turn, fixed when the run opens.
pub const CRANK_FEE: usize = 136;
/// Lamports deposited at opening for the crank fees.
pub const CRANK_DEPOSITED: usize = 144;
/// Lamports paid to turns' senders so far (at most `CRANK_DEPOSITED`).
pub const CRANK_PAID: usize = 152;
/// Where in the account the generated token ids start (u32 each), and the
/// output text: written at opening, so a reader needs no model to find them.
pub const TOKENS_AT: usize = 160;
pub const TEXT_AT: usize = 164;
/// The sampler's seed as the opener chose it (the state's seed field is
/// the sampler's running state).
pub const SEED: usize = 168;
/// The turn allowance every turn of the run is planned and cut under: the
/// config's at opening, so no later `set_allowance` changes a run's turns.
pub const ALLOWANCE: usize = 176;
/// Where the run's callback record lies in the account (`callback`), right
/// after the state; 0 when the run has no callback. The state ends there.
pub const CALLBACK_AT: usize = 180;
/// Lamports the run pays whoever sends `deliver`, fixed at opening; held
/// in the run beside the escrow and the crank deposit.
pub const DELIVERY_FEE: usize = 184;
pub const HEADER_LEN: usize = 256;
/// Where the state keeps the prompt (its first buffer), and where
/// `write_prompt` stages it before `open_run`.
pub const PROMPT: usize = HEADER_LEN + crate::state::HEADER_LEN;

/// The size of a run account for a prompt of `prompt_len` bytes and
/// `max_tokens`, with a callback record of `callback_len` bytes
/// (`callback::len`, 0 for none): the header, the state
/// (`state::state_size`), then the record. The System `create_account`
/// that makes the run must give exactly this; an account holds at most
/// `MAX_ACCOUNT_LEN` (10 MiB). A `const fn`, so a program can size its
/// runs at compile time:
///
/// ```
/// use curta_interface::format::{ChargeTable, Config};
/// use curta_interface::run::account_size;
/// const STORIES260K: Config = Config {
///     dim: 64, hidden_dim: 172, n_layers: 5, n_heads: 8, n_kv_heads: 4,
///     vocab_size: 512, seq_len: 512, charges: ChargeTable::Specification,
///     shared_classifier: true,
/// };
/// const RUN: usize = match account_size(&STORIES260K, 16, 12, 0) {
///     Ok(n) => n,
///     Err(_) => panic!("not a run"),
/// };
/// assert_eq!(RUN, 256 + 48_048);
/// ```
pub const fn account_size(
    config: &crate::format::Config,
    prompt_len: usize,
    max_tokens: u32,
    callback_len: usize,
) -> Result<usize, crate::Error> {
    match crate::state::StateLayout::new(config, prompt_len, max_tokens) {
        Ok(layout) => Ok(HEADER_LEN + layout.size + callback_len),
        Err(e) => Err(e),
    }
}

/// A view of a Run account's data.
#[derive(Clone, Copy)]
pub struct RunAccount<'a>(pub &'a [u8]);

impl<'a> RunAccount<'a> {
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Result<Self, Mismatch> {
        if !tag_is(data, &RUN_TAG) {
            return Err(Mismatch::Kind);
        }
        if data.len() < HEADER_LEN + crate::state::HEADER_LEN {
            return Err(Mismatch::Size);
        }
        Ok(Self(data))
    }
    #[inline(always)]
    pub fn model(&self) -> &'a Address {
        address(self.0, MODEL)
    }
    #[inline(always)]
    pub fn opener(&self) -> &'a Address {
        address(self.0, OPENER)
    }
    #[inline(always)]
    pub fn royalty(&self) -> u64 {
        read_u64(self.0, ROYALTY)
    }
    #[inline(always)]
    pub fn deposited(&self) -> u64 {
        read_u64(self.0, DEPOSITED)
    }
    #[inline(always)]
    pub fn escrow(&self) -> u64 {
        read_u64(self.0, ESCROW)
    }
    #[inline(always)]
    pub fn paid(&self) -> u64 {
        read_u64(self.0, PAID)
    }
    /// The identity of the model the run was opened on.
    #[inline(always)]
    pub fn model_identity(&self) -> &'a Address {
        address(self.0, MODEL_IDENTITY)
    }
    /// The seed the opener chose.
    #[inline(always)]
    pub fn seed(&self) -> u64 {
        read_u64(self.0, SEED)
    }
    /// The turn allowance recorded at opening (0: a run opened by a
    /// program before it was recorded, which cannot turn).
    #[inline(always)]
    pub fn allowance(&self) -> u32 {
        read_u32(self.0, ALLOWANCE)
    }
    #[inline(always)]
    pub fn crank_fee(&self) -> u64 {
        read_u64(self.0, CRANK_FEE)
    }
    #[inline(always)]
    pub fn crank_deposited(&self) -> u64 {
        read_u64(self.0, CRANK_DEPOSITED)
    }
    #[inline(always)]
    pub fn crank_paid(&self) -> u64 {
        read_u64(self.0, CRANK_PAID)
    }
    /// What the next turn pays its sender: the fee, or what is left of the
    /// deposit when that is less.
    #[inline(always)]
    pub fn next_crank_payment(&self) -> u64 {
        let left = self.crank_deposited().saturating_sub(self.crank_paid());
        self.crank_fee().min(left)
    }
    /// The account offset of the callback record, 0 when there is none.
    #[inline(always)]
    pub fn callback_at(&self) -> usize {
        read_u32(self.0, CALLBACK_AT) as usize
    }
    /// The lamports `deliver` pays its sender.
    #[inline(always)]
    pub fn delivery_fee(&self) -> u64 {
        read_u64(self.0, DELIVERY_FEE)
    }
    /// Where the state ends: at the callback record, or the data's end
    /// (a client may read only the start of an account).
    #[inline(always)]
    fn state_end(&self) -> usize {
        state_end(self.0)
    }
    /// The core state.
    #[inline(always)]
    pub fn state(&self) -> &'a [u8] {
        &self.0[HEADER_LEN..self.state_end()]
    }
    /// The callback the run names, if any. `read` checked the record's
    /// place; `open_run` checked the record.
    #[inline(always)]
    pub fn callback(&self) -> Option<Result<Callback<'a>, Malformed>> {
        match self.callback_at() {
            0 => None,
            at => Some(
                self.0
                    .get(at..)
                    .map_or(Err(Malformed::Length), Callback::read),
            ),
        }
    }
}

/// What an opener offers whoever sends its run's turns: `fee` lamports a
/// turn, from `deposit` lamports put in the run at opening (both zero: no
/// fee, today's behaviour).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrankFee {
    pub fee: u64,
    pub deposit: u64,
}

impl CrankFee {
    /// `fee` for each of `turns` turns.
    pub fn for_turns(fee: u64, turns: u64) -> CrankFee {
        CrankFee {
            fee,
            deposit: fee.saturating_mul(turns),
        }
    }
}

/// What the turn after `turns_before` turns pays its sender, on a run opened
/// with this fee and deposit: every turn before it paid the fee while the
/// deposit lasted, so the program's `next_crank_payment` is this.
pub fn crank_payment(fee: u64, deposited: u64, turns_before: u64) -> u64 {
    deposited
        .saturating_sub(fee.saturating_mul(turns_before))
        .min(fee)
}

/// The version of the reading interface below (`docs/program.md`, "Reading
/// a finished run"): the checks and the fields it reads, which change only
/// with a new run tag.
pub const READ_INTERFACE: u32 = 1;

/// What a program that acts on a run expects of it.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// The Curta program the run must belong to.
    pub program_id: &'a Address,
    /// The model identity (`model_identity`) the text must come from.
    pub model_identity: &'a Address,
    /// Who must have opened the run: the reader itself, usually a PDA, so
    /// no one else's prompt is taken for its own.
    pub opener: &'a Address,
}

/// Why a run was not read, in the order the checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The account is not owned by the Curta program.
    NotCurta,
    /// Not a run (another tag, or a state or offsets that do not check).
    NotARun,
    /// The run is not finished: more turns are needed.
    NotFinished,
    /// The run was opened on another model.
    OtherModel,
    /// The run was opened by someone else.
    OtherOpener,
}

impl Refusal {
    pub const fn message(self) -> &'static str {
        match self {
            Refusal::NotCurta => "the account is not owned by the Curta program",
            Refusal::NotARun => "the account is not a Curta run",
            Refusal::NotFinished => "the run is not finished",
            Refusal::OtherModel => "the run was opened on another model",
            Refusal::OtherOpener => "the run was opened by someone else",
        }
    }
}

/// A finished run's output, borrowed from its account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished<'a> {
    /// The generated token ids, four little-endian bytes each.
    pub tokens: &'a [u8],
    /// The output text (UTF-8 by construction: whole tokens' bytes).
    pub text: &'a [u8],
    /// Why the run stopped: an end token, max tokens or the model's
    /// context (`FinishReason::of`, from the state's header).
    pub reason: FinishReason,
}

impl Finished<'_> {
    pub fn token_count(&self) -> usize {
        self.tokens.len() / 4
    }
    pub fn token(&self, i: usize) -> u32 {
        read_u32(self.tokens, 4 * i)
    }
}

/// Reads a finished run for a program that acts on it: owner, tag,
/// complete, model identity, opener, then the output and why the run
/// stopped. `owner` is the account's owner as the runtime gives it.
pub fn read_finished<'a>(
    owner: &Address,
    data: &'a [u8],
    expected: &Expected,
) -> Result<Finished<'a>, Refusal> {
    if owner != expected.program_id {
        return Err(Refusal::NotCurta);
    }
    let run = RunAccount::read(data).map_err(|_| Refusal::NotARun)?;
    let state = crate::state::StateInfo::read(run.state()).map_err(|_| Refusal::NotARun)?;
    // A reason exactly when the run is complete.
    let Some(reason) = state.reason else {
        return Err(Refusal::NotFinished);
    };
    if run.model_identity() != expected.model_identity {
        return Err(Refusal::OtherModel);
    }
    if run.opener() != expected.opener {
        return Err(Refusal::OtherOpener);
    }
    let slice = |at: usize, len: usize| data.get(at..at.checked_add(len)?);
    let tokens = slice(
        read_u32(data, TOKENS_AT) as usize,
        4 * state.generated as usize,
    );
    let text = slice(read_u32(data, TEXT_AT) as usize, state.text_len as usize);
    match (tokens, text) {
        (Some(tokens), Some(text)) => Ok(Finished {
            tokens,
            text,
            reason,
        }),
        _ => Err(Refusal::NotARun),
    }
}

/// Where a run's state ends in `data`: at its callback record, or at the
/// data's end; never before the header's end.
#[inline(always)]
fn state_end(data: &[u8]) -> usize {
    match read_u32(data, CALLBACK_AT) as usize {
        0 => data.len(),
        at => at.clamp(HEADER_LEN, data.len()),
    }
}

/// The writer of a Run account's data.
pub struct RunAccountMut<'a>(pub &'a mut [u8]);

/// What `open_run` records in a run's header.
#[derive(Clone, Copy, Debug)]
pub struct RunInit<'a> {
    pub model: &'a Address,
    pub model_identity: &'a Address,
    pub opener: &'a Address,
    pub royalty: u64,
    /// The escrow: royalty times max tokens.
    pub deposited: u64,
    pub crank_fee: u64,
    pub crank_deposited: u64,
    /// Account offsets of the output token ids and text (`TOKENS_AT`).
    pub tokens_at: u32,
    pub text_at: u32,
    /// The seed the opener chose.
    pub seed: u64,
    /// The config's turn allowance at opening.
    pub allowance: u32,
    /// The callback record's account offset (0: none) and the fee its
    /// delivery pays.
    pub callback_at: u32,
    pub delivery_fee: u64,
}

impl<'a> RunAccountMut<'a> {
    /// Writes every field of a new run's header (exactly `run::HEADER_LEN`
    /// bytes, or more); the state is written separately.
    #[inline(always)]
    pub fn init(&mut self, r: &RunInit) {
        let d = &mut self.0[..HEADER_LEN];
        d.fill(0);
        d[TAG..TAG + 8].copy_from_slice(&RUN_TAG);
        d[MODEL..MODEL + 32].copy_from_slice(r.model);
        d[MODEL_IDENTITY..MODEL_IDENTITY + 32].copy_from_slice(r.model_identity);
        let (opener, royalty, deposited) = (r.opener, r.royalty, r.deposited);
        d[OPENER..OPENER + 32].copy_from_slice(opener);
        write_u64(d, ROYALTY, royalty);
        write_u64(d, DEPOSITED, deposited);
        write_u64(d, ESCROW, deposited);
        write_u64(d, CRANK_FEE, r.crank_fee);
        write_u64(d, CRANK_DEPOSITED, r.crank_deposited);
        write_u32(d, TOKENS_AT, r.tokens_at);
        write_u32(d, TEXT_AT, r.text_at);
        write_u64(d, SEED, r.seed);
        write_u32(d, ALLOWANCE, r.allowance);
        write_u32(d, CALLBACK_AT, r.callback_at);
        write_u64(d, DELIVERY_FEE, r.delivery_fee);
    }
    /// Records a crank fee paid: the total paid to senders after it.
    #[inline(always)]
    pub fn set_crank_paid(&mut self, paid: u64) {
        write_u64(self.0, CRANK_PAID, paid);
    }
    /// Records a payment to the model's owner: the escrow and the paid
    /// total after it.
    #[inline(always)]
    pub fn set_payments(&mut self, escrow: u64, paid: u64) {
        write_u64(self.0, ESCROW, escrow);
        write_u64(self.0, PAID, paid);
    }
    /// The header and the core state, apart: the state ends where the
    /// header's `callback_at` says.
    #[inline(always)]
    pub fn split(self) -> (RunAccountMut<'a>, &'a mut [u8]) {
        let end = state_end(self.0);
        let (header, state, _) = self.split_at(end);
        (header, state)
    }
    /// The header, the state up to account offset `end` and what follows
    /// it (the callback record's place), apart: `open_run`, before the
    /// header records `callback_at`. `end` is at least `HEADER_LEN` and at
    /// most the account's length.
    #[inline(always)]
    pub fn split_at(self, end: usize) -> (RunAccountMut<'a>, &'a mut [u8], &'a mut [u8]) {
        let (rest, tail) = self.0.split_at_mut(end);
        let (header, state) = rest.split_at_mut(HEADER_LEN);
        (RunAccountMut(header), state, tail)
    }
}

/// The IDL's account: each field at its offset (the gaps are zero).
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "run",
    tag: RUN_TAG,
    len: None,
    docs: &["A run (`CURTARN1`, 256 + `state_size`): a 256-byte header, then the core state (`state.md`)."],
    fields: &[
        Field {
            at: MODEL,
            name: "model",
            ty: Ty::Address,
            docs: &["The model the run was opened on."],
        },
        Field {
            at: OPENER,
            name: "opener",
            ty: Ty::Address,
            docs: &["Who funded the run and gets the rest back."],
        },
        Field {
            at: ROYALTY,
            name: "royalty",
            ty: Ty::U64,
            docs: &["Royalty per token, fixed at opening."],
        },
        Field {
            at: DEPOSITED,
            name: "deposited",
            ty: Ty::U64,
            docs: &["The escrow at opening: royalty x max tokens."],
        },
        Field {
            at: ESCROW,
            name: "escrow",
            ty: Ty::U64,
            docs: &["Escrow still held (deposited = escrow + paid)."],
        },
        Field {
            at: PAID,
            name: "paid",
            ty: Ty::U64,
            docs: &["Lamports paid to the model's owner."],
        },
        Field {
            at: MODEL_IDENTITY,
            name: "modelIdentity",
            ty: Ty::Bytes(32),
            docs: &["The identity of the model the run was opened on; every turn requires the same."],
        },
        Field {
            at: CRANK_FEE,
            name: "crankFee",
            ty: Ty::U64,
            docs: &["Lamports paid to each turn's sender (its cranker), fixed at opening; 0: none."],
        },
        Field {
            at: CRANK_DEPOSITED,
            name: "crankDeposited",
            ty: Ty::U64,
            docs: &["Lamports deposited at opening for crank fees."],
        },
        Field {
            at: CRANK_PAID,
            name: "crankPaid",
            ty: Ty::U64,
            docs: &["Crank fees paid so far (at most crankDeposited; what is left returns at closing)."],
        },
        Field {
            at: TOKENS_AT,
            name: "tokensAt",
            ty: Ty::U32,
            docs: &["Account offset of the generated token ids (u32 each; state field `generated` of them)."],
        },
        Field {
            at: TEXT_AT,
            name: "textAt",
            ty: Ty::U32,
            docs: &["Account offset of the output text (state field `text_len` bytes)."],
        },
        Field {
            at: SEED,
            name: "seed",
            ty: Ty::U64,
            docs: &["The sampler's seed as the opener chose it (the state's seed field is the sampler's running state)."],
        },
        Field {
            at: ALLOWANCE,
            name: "allowance",
            ty: Ty::U32,
            docs: &["The config's turn allowance at opening, which every turn of the run is planned and cut under (0: opened by an older program; it cannot turn)."],
        },
        Field {
            at: CALLBACK_AT,
            name: "callbackAt",
            ty: Ty::U32,
            docs: &["Account offset of the callback record `deliver` invokes (after the state, to the account's end); 0: no callback."],
        },
        Field {
            at: DELIVERY_FEE,
            name: "deliveryFee",
            ty: Ty::U64,
            docs: &["Lamports paid to whoever sends `deliver`, fixed at opening."],
        },
        Field {
            at: HEADER_LEN,
            name: "state",
            ty: Ty::Rest,
            docs: &["The core state (`state.md`), from offset 256 to `callbackAt` (to the end when that is 0), then the callback record."],
        },
    ],
};
