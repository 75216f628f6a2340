//! A Run account: a 256-byte header, then the core state. The constants
//! are the header's offsets.

use super::schema::{AccountSchema, Field, Ty};
use super::{tag_is, Address, Mismatch, RUN_TAG};
use crate::bytes::read_u32;
use crate::callback::{Callback, Malformed};
/// Why a finished run stopped (`Finished::reason`).
pub use crate::state::FinishReason;

pub const TAG: usize = 0;
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
    /// What the next turn pays its sender: the fee, or what is left of the
    /// deposit when that is less.
    #[inline(always)]
    pub fn next_crank_payment(&self) -> u64 {
        let left = self.crank_deposit().saturating_sub(self.crank_paid());
        self.crank_fee().min(left)
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
    let tokens = slice(run.tokens_at() as usize, 4 * state.generated as usize);
    let text = slice(run.text_at() as usize, state.text_len as usize);
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
    pub crank_deposit: u64,
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
        self.0[..HEADER_LEN].fill(0);
        self.0[TAG..TAG + 8].copy_from_slice(&RUN_TAG);
        self.set_model(r.model);
        self.set_opener(r.opener);
        self.set_royalty(r.royalty);
        self.set_deposited(r.deposited);
        self.set_escrow(r.deposited);
        self.set_model_identity(r.model_identity);
        self.set_crank_fee(r.crank_fee);
        self.set_crank_deposit(r.crank_deposit);
        self.set_tokens_at(r.tokens_at);
        self.set_text_at(r.text_at);
        self.set_seed(r.seed);
        self.set_allowance(r.allowance);
        self.set_callback_at(r.callback_at);
        self.set_delivery_fee(r.delivery_fee);
    }
    /// Records a payment to the model's owner: the escrow and the paid
    /// total after it.
    #[inline(always)]
    pub fn set_payments(&mut self, escrow: u64, paid: u64) {
        self.set_escrow(escrow);
        self.set_paid(paid);
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

fields! {
    RunAccount, RunAccountMut, FIELDS;
    MODEL = 8, "model", address, model, set_model,
        "The model the run was opened on.";
    OPENER = 40, "opener", address, opener, set_opener,
        "Who funded the run and gets the rest back.";
    ROYALTY = 72, "royalty", u64, royalty, set_royalty,
        "Royalty per token, fixed at opening.";
    DEPOSITED = 80, "deposited", u64, deposited, set_deposited,
        "The escrow at opening: royalty x max tokens.";
    ESCROW = 88, "escrow", u64, escrow, set_escrow,
        "Escrow still held (deposited = escrow + paid).";
    PAID = 96, "paid", u64, paid, set_paid,
        "Lamports paid to the model's owner.";
    MODEL_IDENTITY = 104, "modelIdentity", address as Ty::Bytes(32), model_identity, set_model_identity,
        "The identity of the model the run was opened on; every turn requires the same.";
    CRANK_FEE = 136, "crankFee", u64, crank_fee, set_crank_fee,
        "Lamports paid to each turn's sender (its cranker), fixed at opening; 0: none.";
    CRANK_DEPOSIT = 144, "crankDeposit", u64, crank_deposit, set_crank_deposit,
        "Lamports deposited at opening for crank fees.";
    CRANK_PAID = 152, "crankPaid", u64, crank_paid, set_crank_paid,
        "Crank fees paid so far (at most crankDeposit; what is left returns at closing).";
    TOKENS_AT = 160, "tokensAt", u32, tokens_at, set_tokens_at,
        "Account offset of the generated token ids (u32 each; state field `generated` of them).";
    TEXT_AT = 164, "textAt", u32, text_at, set_text_at,
        "Account offset of the output text (state field `text_len` bytes).";
    SEED = 168, "seed", u64, seed, set_seed,
        "The sampler's seed as the opener chose it (the state's seed field is the sampler's running state).";
    ALLOWANCE = 176, "allowance", u32, allowance, set_allowance,
        "The config's turn allowance at opening, which every turn of the run is planned and cut under (0: opened by an older program; it cannot turn).";
    CALLBACK_AT = 180, "callbackAt", count, callback_at, set_callback_at,
        "Account offset of the callback record `deliver` invokes (after the state, to the account's end); 0: no callback.";
    DELIVERY_FEE = 184, "deliveryFee", u64, delivery_fee, set_delivery_fee,
        "Lamports paid to whoever sends `deliver`, fixed at opening.";
    @rest [Field {
        at: HEADER_LEN,
        name: "state",
        ty: Ty::Rest,
        docs: &["The core state (`state.md`), from offset 256 to `callbackAt` (to the end when that is 0), then the callback record."],
    }]
}

/// The IDL's account.
pub const SCHEMA: AccountSchema = AccountSchema {
    name: "run",
    tag: RUN_TAG,
    len: None,
    docs: &["A run (`CURTARN1`, 256 + `state_size`): a 256-byte header, then the core state (`state.md`)."],
    fields: FIELDS,
};
