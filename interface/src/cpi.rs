//! Invoking Curta's run instructions from a program, in the style of
//! `pinocchio-system` (feature `pinocchio`): one struct per instruction,
//! its fields the accounts by role (`&AccountView`s) and the arguments,
//! then `invoke()` or `invoke_signed(&[Signer])`.
//!
//! ```ignore
//! use curta_interface::cpi::CloseRun;
//! CloseRun { program_id: curta.address(), run, opener: request }
//!     .invoke_signed(&[Signer::from(&seeds)])?;
//! ```
//!
//! The data is `Instruction::encode_into` into a buffer on the stack, and
//! each account's signer and writable flags are those of Curta's table for
//! the instruction (`accounts::OPEN_RUN`, `CLOSE_RUN`, `TURN`,
//! `TURN_WEIGHT`), so a builder cannot disagree with the program. The
//! accounts are passed through pinocchio's checked `invoke_signed`: each
//! account must be the one its place names, and a written one must not be
//! borrowed by the caller.
//!
//! A program that calls a builder on `bpfel-unknown-none` (upstream BPF)
//! needs static syscalls: `solana-define-syscall` with its
//! `unstable-static-syscalls` feature among its dependencies, as pinocchio
//! documents (`docs/sbf.md`).

use pinocchio::cpi::{invoke_signed, invoke_signed_with_bounds, Signer};
use pinocchio::error::ProgramError;
use pinocchio::instruction::{InstructionAccount, InstructionView};
use pinocchio::{AccountView, Address, ProgramResult};

use crate::accounts::{self, AccountRole};
use crate::callback;
use crate::instruction::{Instruction, OPEN_RUN_FIXED_LEN};
use crate::state::MAX_PROMPT_BYTES;

/// The most trailing weight accounts `Turn` passes (a turn's plan names
/// none, one or two).
pub const MAX_TURN_WEIGHTS: usize = 8;

/// The instruction account of `view` in the place `role` describes.
#[inline(always)]
fn account<'a>(view: &'a AccountView, role: &AccountRole) -> InstructionAccount<'a> {
    InstructionAccount::new(view.address(), role.writable, role.signer)
}

/// The instruction accounts of `views`, each with its place's flags.
#[inline(always)]
fn instruction_accounts<'a, const N: usize>(
    roles: &[AccountRole; N],
    views: &[&'a AccountView; N],
) -> [InstructionAccount<'a>; N] {
    core::array::from_fn(|i| account(views[i], &roles[i]))
}

/// `open_run`: opens `run` (created for the Curta program in the same
/// transaction, exactly its size, signing) on `model`, `opener` signing
/// and funding it. The arguments are `Instruction::OpenRun`'s.
///
/// Accounts (`accounts::OPEN_RUN`): 0 config, 1 model, 2 run (signs,
/// written), 3 opener (signs).
pub struct OpenRun<'a, 'b> {
    /// The Curta program.
    pub program_id: &'b Address,
    /// The model's config account.
    pub config: &'a AccountView,
    /// The model, sealed.
    pub model: &'a AccountView,
    /// The new run account.
    pub run: &'a AccountView,
    /// Who opens the run; it alone may close it.
    pub opener: &'a AccountView,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    /// The royalty per token the opener accepts (the model's).
    pub royalty: u64,
    /// The model identity the opener accepts (the model's).
    pub model_identity: &'b [u8; 32],
    /// Lamports per turn to each turn's sender.
    pub crank_fee: u64,
    /// Lamports put aside for the crank fees.
    pub crank_deposit: u64,
    /// Prompt bytes already staged by `write_prompt` (0 if none).
    pub staged: u32,
    /// Lamports `deliver` pays its sender (0 without a callback).
    pub delivery_fee: u64,
    /// The callback record (`callback`, at most `callback::MAX_LEN`
    /// bytes), empty for none.
    pub callback: &'b [u8],
    /// The prompt (its unstaged rest), at most `MAX_PROMPT_BYTES`.
    pub prompt: &'b [u8],
}

impl OpenRun<'_, '_> {
    #[inline(always)]
    pub fn invoke(&self) -> ProgramResult {
        self.invoke_signed(&[])
    }

    #[inline(always)]
    pub fn invoke_signed(&self, signers: &[Signer]) -> ProgramResult {
        let mut data = [0u8; 1 + OPEN_RUN_FIXED_LEN + callback::MAX_LEN + MAX_PROMPT_BYTES];
        let len = Instruction::OpenRun {
            max_tokens: self.max_tokens,
            temperature_q16: self.temperature_q16,
            seed: self.seed,
            royalty: self.royalty,
            model_identity: self.model_identity,
            crank_fee: self.crank_fee,
            crank_deposit: self.crank_deposit,
            staged: self.staged,
            delivery_fee: self.delivery_fee,
            callback: self.callback,
            prompt: self.prompt,
        }
        .encode_into(&mut data)
        // Only a prompt or a record longer than any run takes does not fit.
        .ok_or(ProgramError::InvalidInstructionData)?;
        let views = [self.config, self.model, self.run, self.opener];
        let metas = instruction_accounts(&accounts::OPEN_RUN, &views);
        let instruction = InstructionView {
            program_id: self.program_id,
            data: &data[..len],
            accounts: &metas,
        };
        invoke_signed(&instruction, &views, signers)
    }
}

/// `close_run`: closes `run` at any point, finished or not; all its
/// lamports go to `opener`, who signs.
///
/// Accounts (`accounts::CLOSE_RUN`): 0 run (written), 1 opener (signs,
/// written).
pub struct CloseRun<'a, 'b> {
    /// The Curta program.
    pub program_id: &'b Address,
    pub run: &'a AccountView,
    pub opener: &'a AccountView,
}

impl CloseRun<'_, '_> {
    #[inline(always)]
    pub fn invoke(&self) -> ProgramResult {
        self.invoke_signed(&[])
    }

    #[inline(always)]
    pub fn invoke_signed(&self, signers: &[Signer]) -> ProgramResult {
        let mut data = [0u8; 1];
        let len = Instruction::CloseRun
            .encode_into(&mut data)
            .ok_or(ProgramError::InvalidInstructionData)?;
        let views = [self.run, self.opener];
        let metas = instruction_accounts(&accounts::CLOSE_RUN, &views);
        let instruction = InstructionView {
            program_id: self.program_id,
            data: &data[..len],
            accounts: &metas,
        };
        invoke_signed(&instruction, &views, signers)
    }
}

/// `turn`: advances `run` by one turn; `cranker` signs and receives the
/// crank fee, the model's `owner` the royalties. `weights` are the weight
/// accounts of the sections the turn's plan names (at most
/// `MAX_TURN_WEIGHTS`). With `expected_turns`, Curta refuses the turn
/// unless the state has run exactly that many turns.
///
/// Accounts (`accounts::TURN`, then `accounts::TURN_WEIGHT` each): 0
/// config, 1 model, 2 run (written), 3 owner (written), 4 section zero's
/// weight account, 5 cranker (signs, written), then the weights.
pub struct Turn<'a, 'b> {
    /// The Curta program.
    pub program_id: &'b Address,
    pub config: &'a AccountView,
    pub model: &'a AccountView,
    pub run: &'a AccountView,
    /// The model's owner.
    pub owner: &'a AccountView,
    /// Section zero's weight account.
    pub section_zero: &'a AccountView,
    /// Who sends the turn: a System account (a wallet) that signs.
    pub cranker: &'a AccountView,
    /// The weight accounts the turn's plan names, in any order.
    pub weights: &'a [AccountView],
    pub expected_turns: Option<u64>,
}

impl Turn<'_, '_> {
    #[inline(always)]
    pub fn invoke(&self) -> ProgramResult {
        self.invoke_signed(&[])
    }

    #[inline(always)]
    pub fn invoke_signed(&self, signers: &[Signer]) -> ProgramResult {
        const FIXED: usize = accounts::TURN.len();
        const MAX: usize = FIXED + MAX_TURN_WEIGHTS;
        let n = FIXED + self.weights.len();
        if self.weights.len() > MAX_TURN_WEIGHTS {
            return Err(ProgramError::InvalidArgument);
        }
        let mut data = [0u8; 1 + 8];
        let len = Instruction::Turn {
            expected_turns: self.expected_turns,
        }
        .encode_into(&mut data)
        .ok_or(ProgramError::InvalidInstructionData)?;
        let fixed = [
            self.config,
            self.model,
            self.run,
            self.owner,
            self.section_zero,
            self.cranker,
        ];
        // Past `n` the arrays repeat the config; only their first `n` are
        // passed.
        let views: [&AccountView; MAX] = core::array::from_fn(|i| match i {
            i if i < FIXED => fixed[i],
            i if i < n => &self.weights[i - FIXED],
            _ => self.config,
        });
        let metas: [InstructionAccount; MAX] = core::array::from_fn(|i| match i {
            i if i < FIXED => account(views[i], &accounts::TURN[i]),
            _ => account(views[i], &accounts::TURN_WEIGHT),
        });
        let instruction = InstructionView {
            program_id: self.program_id,
            data: &data[..len],
            accounts: &metas[..n],
        };
        invoke_signed_with_bounds::<MAX, _>(&instruction, &views[..n], signers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinocchio::account::{RuntimeAccount, NOT_BORROWED};

    /// A runtime account with no data, at `address`.
    fn runtime(address: u8, signer: bool, writable: bool) -> RuntimeAccount {
        RuntimeAccount {
            borrow_state: NOT_BORROWED,
            is_signer: signer as u8,
            is_writable: writable as u8,
            address: Address::new_from_array([address; 32]),
            ..RuntimeAccount::default()
        }
    }

    fn view(account: &mut RuntimeAccount) -> AccountView {
        // SAFETY: the account outlives the view; no data follows it, and
        // the builders read none.
        unsafe { AccountView::new_unchecked(account) }
    }

    #[test]
    fn builders_pass_their_checks_and_bound_the_weights() {
        let curta = Address::new_from_array([9; 32]);
        let mut raw: [RuntimeAccount; 10] =
            core::array::from_fn(|i| runtime(i as u8, i == 2 || i == 3, true));
        let v: [AccountView; 10] = core::array::from_fn(|i| view(&mut raw[i]));
        let identity = [7; 32];
        let open = OpenRun {
            program_id: &curta,
            config: &v[0],
            model: &v[1],
            run: &v[2],
            opener: &v[3],
            max_tokens: 4,
            temperature_q16: 0,
            seed: 0,
            royalty: 1,
            model_identity: &identity,
            crank_fee: 0,
            crank_deposit: 0,
            staged: 0,
            delivery_fee: 0,
            callback: &[2; callback::MAX_LEN],
            prompt: &[1; MAX_PROMPT_BYTES],
        };
        assert_eq!(open.invoke(), Ok(()));
        let long = [1; MAX_PROMPT_BYTES + 1];
        let too_long = OpenRun {
            prompt: &long,
            ..open
        };
        assert_eq!(too_long.invoke(), Err(ProgramError::InvalidInstructionData));
        let long = [2; callback::MAX_LEN + 1];
        let too_long = OpenRun {
            callback: &long,
            ..open
        };
        assert_eq!(too_long.invoke(), Err(ProgramError::InvalidInstructionData));
        let close = CloseRun {
            program_id: &curta,
            run: &v[2],
            opener: &v[3],
        };
        assert_eq!(close.invoke(), Ok(()));
        for weights in [0, 1, 2, 4] {
            let turn = Turn {
                program_id: &curta,
                config: &v[0],
                model: &v[1],
                run: &v[2],
                owner: &v[3],
                section_zero: &v[4],
                cranker: &v[5],
                weights: &v[6..6 + weights],
                expected_turns: Some(3),
            };
            assert_eq!(turn.invoke(), Ok(()), "{weights} weights");
        }
        // A written account the caller still borrows is refused.
        let mut run = v[2].clone();
        let data = run.try_borrow_mut().unwrap();
        assert_eq!(close.invoke(), Err(ProgramError::AccountBorrowFailed));
        drop(data);
        assert_eq!(close.invoke(), Ok(()));
    }

    #[test]
    fn turn_takes_at_most_its_bound_of_weights() {
        let curta = Address::new_from_array([9; 32]);
        let mut raw: [RuntimeAccount; 6 + MAX_TURN_WEIGHTS + 1] =
            core::array::from_fn(|i| runtime(i as u8, i == 5, true));
        let v: [AccountView; 6 + MAX_TURN_WEIGHTS + 1] =
            core::array::from_fn(|i| view(&mut raw[i]));
        let turn = |weights: &[AccountView]| {
            Turn {
                program_id: &curta,
                config: &v[0],
                model: &v[1],
                run: &v[2],
                owner: &v[3],
                section_zero: &v[4],
                cranker: &v[5],
                weights,
                expected_turns: None,
            }
            .invoke()
        };
        assert_eq!(turn(&v[6..6 + MAX_TURN_WEIGHTS]), Ok(()));
        assert_eq!(turn(&v[6..]), Err(ProgramError::InvalidArgument));
    }
}
