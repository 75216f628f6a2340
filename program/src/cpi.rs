//! Calling another program (cross-program invocation) through the C ABI's
//! `sol_invoke_signed_c`, and program-derived addresses. Curta itself calls
//! no other program; a program built on this crate's plumbing does
//! (`examples/storyteller`, with the `no-entrypoint` feature).
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

/// The seeds of one program-derived address that signs, its bump last: a
/// `&[u8]` is the `(ptr, len)` pair of C's `SolSignerSeed`, and a slice of
/// them the pair of `SolSignerSeeds`, as `syscalls::sha256` relies on.
pub type Signer<'a> = &'a [&'a [u8]];

/// Invokes `ix` with `accounts`, the calling program signing for the
/// addresses `signers` derive. Every account `ix` names must be among
/// `accounts` (in any order), and may be writable or signing in `ix` only if
/// it is so here or, for signing, one of `signers` derives it (otherwise the
/// runtime fails the instruction). A callee's error fails the whole
/// instruction: the runtime does not return it here.
///
/// Afterwards the views read what the callee left: lamports, owner, and the
/// data at its new length. No reference to any of these accounts' data may
/// be alive across the call.
#[inline(never)]
pub fn invoke_signed<const N: usize>(
    ix: &Instruction,
    accounts: &[&AccountView; N],
    signers: &[Signer],
) -> ProgramResult {
    let infos: [SolAccountInfo; N] = core::array::from_fn(|i| SolAccountInfo::of(accounts[i]));
    let sol_ix = SolInstruction {
        program_id: ix.program_id,
        accounts: ix.accounts.as_ptr() as *const u8,
        accounts_len: ix.accounts.len() as u64,
        data: ix.data.as_ptr(),
        data_len: ix.data.len() as u64,
    };
    // SAFETY: every pointer above is live for the call, and the structs are
    // laid out as the runtime reads them.
    let code = unsafe {
        syscalls::sol_invoke_signed_c(
            &sol_ix as *const SolInstruction as *const u8,
            infos.as_ptr() as *const u8,
            N as u64,
            signers.as_ptr() as *const u8,
            signers.len() as u64,
        )
    };
    match code {
        0 => Ok(()),
        // Not seen on SBF (see above); the host's shim returns it.
        _ => Err(ProgramError::INVALID_ARGUMENT),
    }
}

/// Invokes `ix` with no program-derived signer.
#[inline(always)]
pub fn invoke<const N: usize>(ix: &Instruction, accounts: &[&AccountView; N]) -> ProgramResult {
    invoke_signed(ix, accounts, &[])
}

/// The program-derived address of `seeds` under `program_id`, and its bump:
/// the first of 255, 254, ... that, appended to the seeds, gives an address
/// off the curve. Each try costs the runtime's `create_program_address`
/// price (1,500 compute units); half of all seeds need one.
#[inline(always)]
pub fn find_program_address(
    seeds: &[&[u8]],
    program_id: &Address,
    address: &mut Address,
    bump: &mut u8,
) -> ProgramResult {
    // SAFETY: `(ptr, len)` pairs of live slices; 32 bytes and one byte out.
    let code = unsafe {
        syscalls::sol_try_find_program_address(
            seeds.as_ptr() as *const u8,
            seeds.len() as u64,
            program_id.as_ptr(),
            address.as_mut_ptr(),
            bump,
        )
    };
    match code {
        0 => Ok(()),
        _ => Err(ProgramError::INVALID_ARGUMENT),
    }
}

/// The program-derived address of `seeds` (the bump among them), or an
/// error when they give an address on the curve.
#[inline(always)]
pub fn create_program_address(
    seeds: &[&[u8]],
    program_id: &Address,
    address: &mut Address,
) -> ProgramResult {
    // SAFETY: `(ptr, len)` pairs of live slices; 32 bytes out.
    let code = unsafe {
        syscalls::sol_create_program_address(
            seeds.as_ptr() as *const u8,
            seeds.len() as u64,
            program_id.as_ptr(),
            address.as_mut_ptr(),
        )
    };
    match code {
        0 => Ok(()),
        _ => Err(ProgramError::INVALID_ARGUMENT),
    }
}
