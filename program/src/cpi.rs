//! Calling another program (cross-program invocation) through the C ABI's
//! `sol_invoke_signed_c`: `deliver` invokes a run's callback.
//!
//! The runtime reads C structs (`SolInstruction`, `SolAccountMeta`,
//! `SolAccountInfo`, `SolSignerSeeds`), built here on the stack from the
//! views of the input buffer: each account info points at the account's
//! key, lamports, owner and data where the runtime serialized them, which
//! is where it requires them to point, and where it writes back what the
//! callee changed (lamports, owner, data and its length).

use core::mem::size_of;

use crate::account::{AccountView, Address, RuntimeAccount};
use crate::error::{ProgramError, ProgramResult};
use crate::syscalls;

/// One account of the instruction to invoke (C's `SolAccountMeta`: the
/// address, then writable, then signer).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AccountMeta<'a> {
    pub address: &'a Address,
    pub is_writable: bool,
    pub is_signer: bool,
}

impl<'a> AccountMeta<'a> {
    #[inline(always)]
    pub fn new(address: &'a Address, is_writable: bool, is_signer: bool) -> Self {
        Self {
            address,
            is_writable,
            is_signer,
        }
    }
}

/// An instruction for another program.
pub struct Instruction<'a> {
    pub program_id: &'a Address,
    pub accounts: &'a [AccountMeta<'a>],
    pub data: &'a [u8],
}

/// C's `SolInstruction`.
#[repr(C)]
struct SolInstruction {
    program_id: *const Address,
    /// `accounts_len` `AccountMeta`s.
    accounts: *const u8,
    accounts_len: u64,
    data: *const u8,
    data_len: u64,
}

/// C's `SolAccountInfo`: pointers into the input buffer.
#[repr(C)]
#[derive(Clone, Copy)]
struct SolAccountInfo {
    key: *const Address,
    lamports: *mut u64,
    data_len: u64,
    data: *mut u8,
    owner: *mut Address,
    rent_epoch: u64,
    is_signer: bool,
    is_writable: bool,
    executable: bool,
}

impl SolAccountInfo {
    #[inline(always)]
    fn of(a: &AccountView) -> Self {
        let raw = a.raw();
        // SAFETY: `raw` is a serialized account (the view's contract); the
        // fields' addresses are taken without reading them.
        unsafe {
            SolAccountInfo {
                key: &raw const (*raw).key,
                lamports: &raw mut (*raw).lamports,
                data_len: (*raw).data_len,
                data: (raw as *mut u8).add(size_of::<RuntimeAccount>()),
                owner: &raw mut (*raw).owner,
                // Not read by the runtime for a call; the serialized value
                // lies after the data's room, so none is taken from there.
                rent_epoch: u64::MAX,
                is_signer: a.is_signer(),
                is_writable: a.is_writable(),
                executable: a.executable(),
            }
        }
    }
}

/// The most accounts `invoke_each` passes: a callback's most.
pub const MAX_INVOKE_ACCOUNTS: usize = curta_core::protocol::callback::MAX_ACCOUNTS;

/// Invokes `ix` with `accounts`, known only at run time (at most
/// `MAX_INVOKE_ACCOUNTS`; `InvalidArgument` past them), no program-derived
/// address signing. Every account `ix` names must be among `accounts`, and
/// may be writable in `ix` only if it is so here (otherwise the runtime
/// fails the instruction). A callee's error fails the whole instruction:
/// the runtime does not return it here.
///
/// Afterwards the views read what the callee left: lamports, owner, and the
/// data at its new length. No reference to any of these accounts' data may
/// be alive across the call.
#[inline(never)]
pub fn invoke_each(ix: &Instruction, accounts: &[AccountView]) -> ProgramResult {
    if accounts.len() > MAX_INVOKE_ACCOUNTS {
        return Err(ProgramError::INVALID_ARGUMENT);
    }
    let mut infos = [core::mem::MaybeUninit::<SolAccountInfo>::uninit(); MAX_INVOKE_ACCOUNTS];
    for (info, a) in infos.iter_mut().zip(accounts) {
        info.write(SolAccountInfo::of(a));
    }
    let sol_ix = SolInstruction {
        program_id: ix.program_id,
        accounts: ix.accounts.as_ptr() as *const u8,
        accounts_len: ix.accounts.len() as u64,
        data: ix.data.as_ptr(),
        data_len: ix.data.len() as u64,
    };
    // SAFETY: the first `accounts.len()` infos were written above; every
    // pointer is live for the call, and the structs are laid out as the
    // runtime reads them.
    let code = unsafe {
        syscalls::sol_invoke_signed_c(
            &sol_ix as *const SolInstruction as *const u8,
            infos.as_ptr() as *const u8,
            accounts.len() as u64,
            core::ptr::null(),
            0,
        )
    };
    match code {
        0 => Ok(()),
        // Not seen on SBF (see above); the host's shim returns it.
        _ => Err(ProgramError::INVALID_ARGUMENT),
    }
}
