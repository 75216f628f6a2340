//! Zero-copy views of the accounts in the runtime's serialized input.

use core::mem::size_of;

/// A 32-byte account address (public key).
pub type Address = [u8; 32];

/// The first byte of an account entry that is not a duplicate.
pub const NON_DUP_MARKER: u8 = u8::MAX;

/// Room the runtime leaves after each account's data so the program may grow
/// it (`MAX_PERMITTED_DATA_INCREASE`).
pub const MAX_PERMITTED_DATA_INCREASE: usize = 10 * 1024;

/// The System program's address: all zeros.
pub const SYSTEM_PROGRAM: Address = [0; 32];

/// Alignment of each account's data end (`BPF_ALIGN_OF_U128` is 8 on SBF).
pub const DATA_ALIGN: usize = 8;

/// The fixed part of a serialized, non-duplicate account, in the runtime's
/// layout (loader v2/v3, aligned). The data follows it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RuntimeAccount {
    /// `NON_DUP_MARKER` here (a duplicate entry has its original's index).
    pub dup_marker: u8,
    pub is_signer: u8,
    pub is_writable: u8,
    pub executable: u8,
    /// Padding in the input (the runtime keeps the original data length
    /// elsewhere); kept so the layout matches.
    pub padding: [u8; 4],
    pub key: Address,
    pub owner: Address,
    pub lamports: u64,
    pub data_len: u64,
}

const _: () = assert!(size_of::<RuntimeAccount>() == 88);

/// A view of one account in the input buffer. Copying it copies the pointer:
/// a duplicate account gets the same view as its original.
#[derive(Clone, Copy, Debug)]
pub struct AccountView {
    raw: *mut RuntimeAccount,
}

impl AccountView {
    /// # Safety
    /// `raw` points at a serialized account that stays valid and is not
    /// moved for as long as the view (and anything borrowed from it) is used.
    #[inline(always)]
    pub unsafe fn new_unchecked(raw: *mut RuntimeAccount) -> Self {
        Self { raw }
    }

    #[inline(always)]
    fn header(&self) -> &RuntimeAccount {
        // SAFETY: guaranteed by `new_unchecked`'s contract.
        unsafe { &*self.raw }
    }

    #[inline(always)]
    pub fn key(&self) -> &Address {
        &self.header().key
    }

    #[inline(always)]
    pub fn owner(&self) -> &Address {
        &self.header().owner
    }

    #[inline(always)]
    pub fn lamports(&self) -> u64 {
        self.header().lamports
    }

    /// Sets the account's lamports. The runtime checks the transaction's
    /// sum is unchanged and that only a program-owned account lost any.
    #[inline(always)]
    pub fn set_lamports(&self, lamports: u64) {
        // SAFETY: guaranteed by `new_unchecked`'s contract; the field is
        // plain data in the input buffer, which the runtime reads back.
        unsafe { (*self.raw).lamports = lamports }
    }

    #[inline(always)]
    pub fn is_signer(&self) -> bool {
        self.header().is_signer != 0
    }

    #[inline(always)]
    pub fn is_writable(&self) -> bool {
        self.header().is_writable != 0
    }

    #[inline(always)]
    pub fn executable(&self) -> bool {
        self.header().executable != 0
    }

    #[inline(always)]
    pub fn data_len(&self) -> usize {
        self.header().data_len as usize
    }

    /// The account's data.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        // SAFETY: the data follows the header in the input buffer.
        unsafe {
            core::slice::from_raw_parts(
                (self.raw as *const u8).add(size_of::<RuntimeAccount>()),
                self.data_len(),
            )
        }
    }

    /// Closes the account: no lamports, no data, owned by the System
    /// program, so no later instruction of the transaction can read it as
    /// anything or revive it (the runtime lets its owner change only once
    /// the data is empty). The caller moves the lamports out first.
    #[inline(always)]
    pub fn close(&self) {
        // SAFETY: guaranteed by `new_unchecked`'s contract; the runtime
        // reads these fields back after the instruction.
        unsafe {
            (*self.raw).lamports = 0;
            (*self.raw).data_len = 0;
            (*self.raw).owner = SYSTEM_PROGRAM;
        }
    }

    /// Sets the account's data length to `len`, as the runtime reads it back
    /// after the instruction (and before a cross-program invocation, which
    /// hands the callee the data at its new length), zeroing the bytes it
    /// grows by. Only the account's owner may change its length, and only
    /// while it is writable. `close` sets it to zero the same way.
    ///
    /// # Safety
    /// `len` is at most the account's length when the instruction began
    /// plus `MAX_PERMITTED_DATA_INCREASE`: the runtime left exactly that
    /// much room after the data in the input buffer, and past it lie the
    /// next account's bytes. No reference to this account's data may be
    /// alive.
    #[inline(always)]
    pub unsafe fn resize(&self, len: usize) {
        let old = self.data_len();
        // SAFETY: by the contract, `len` bytes from the data's start lie
        // in the account's room in the input buffer.
        unsafe {
            if len > old {
                core::ptr::write_bytes(
                    (self.raw as *mut u8).add(size_of::<RuntimeAccount>() + old),
                    0,
                    len - old,
                );
            }
            (*self.raw).data_len = len as u64;
        }
    }

    /// The serialized account this view reads, for building the runtime's
    /// own structures (`crate::cpi`).
    #[inline(always)]
    pub fn raw(&self) -> *mut RuntimeAccount {
        self.raw
    }

    /// The account's data, writable. The runtime only keeps the changes of
    /// a writable account owned by this program.
    ///
    /// # Safety
    /// No other reference to this account's data (through this view, a copy
    /// of it or a duplicate account) may be alive while the slice is.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn data_mut(&self) -> &mut [u8] {
        unsafe {
            core::slice::from_raw_parts_mut(
                (self.raw as *mut u8).add(size_of::<RuntimeAccount>()),
                self.data_len(),
            )
        }
    }
}
