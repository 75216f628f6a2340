//! The writer of the runtime's input buffer, in the format
//! [`deserialize`](super::deserialize) reads (loader v2/v3, aligned; the
//! entrypoint's docs give it field by field), and a reader of the accounts
//! it holds after the program ran. For hosts that build inputs: the
//! entrypoint's unit tests, and with the `input-writer` feature the fuzz
//! emulator (`curta-fuzz-checks`). Never in the SBF build, which has no
//! allocator.

use core::mem::size_of;
use std::vec::Vec;

use crate::account::{
    Address, RuntimeAccount, DATA_ALIGN, MAX_PERMITTED_DATA_INCREASE, NON_DUP_MARKER,
};

/// The rent epoch the runtime writes after each account: rent collection
/// is off, every account is exempt.
pub const RENT_EXEMPT_EPOCH: u64 = u64::MAX;

/// One account of an input, in the instruction's order: a full entry, or a
/// duplicate of the account at an earlier position.
pub enum InputAccount<'a> {
    Full {
        key: Address,
        owner: Address,
        lamports: u64,
        signer: bool,
        writable: bool,
        data: &'a [u8],
    },
    Dup(u8),
}

/// An input buffer as the runtime serializes it, held in `u64` words so it
/// is 8-byte aligned as the runtime's is.
pub struct InputBuffer {
    words: Vec<u64>,
    /// Where each position's account entry starts, in bytes: a duplicate's
    /// is its original's.
    entries: Vec<usize>,
}

impl InputBuffer {
    /// Serializes `accounts`, the instruction data and the program id.
    ///
    /// # Panics
    /// If a duplicate names a position not before its own.
    pub fn new(accounts: &[InputAccount], data: &[u8], program_id: &Address) -> InputBuffer {
        let mut b: Vec<u8> = Vec::new();
        let mut entries = Vec::with_capacity(accounts.len());
        b.extend_from_slice(&(accounts.len() as u64).to_le_bytes());
        for (position, account) in accounts.iter().enumerate() {
            match account {
                InputAccount::Dup(original) => {
                    let original = usize::from(*original);
                    assert!(original < position, "a duplicate names an earlier account");
                    entries.push(entries[original]);
                    b.extend_from_slice(&[original as u8, 0, 0, 0, 0, 0, 0, 0]);
                }
                InputAccount::Full {
                    key,
                    owner,
                    lamports,
                    signer,
                    writable,
                    data,
                } => {
                    entries.push(b.len());
                    // Marker, is_signer, is_writable, executable, padding.
                    b.extend_from_slice(&[NON_DUP_MARKER, *signer as u8, *writable as u8, 0]);
                    b.extend_from_slice(&[0; 4]);
                    b.extend_from_slice(key);
                    b.extend_from_slice(owner);
                    b.extend_from_slice(&lamports.to_le_bytes());
                    b.extend_from_slice(&(data.len() as u64).to_le_bytes());
                    b.extend_from_slice(data);
                    b.resize(b.len() + MAX_PERMITTED_DATA_INCREASE, 0);
                    b.resize(b.len().next_multiple_of(DATA_ALIGN), 0);
                    b.extend_from_slice(&RENT_EXEMPT_EPOCH.to_le_bytes());
                }
            }
        }
        b.extend_from_slice(&(data.len() as u64).to_le_bytes());
        b.extend_from_slice(data);
        b.extend_from_slice(program_id);
        b.resize(b.len().next_multiple_of(8), 0);
        let words = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        InputBuffer { words, entries }
    }

    /// The buffer for [`deserialize`](super::deserialize): 8-byte aligned,
    /// valid while `self` is neither dropped nor moved.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr() as *mut u8
    }

    /// The buffer's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the words viewed as bytes, borrowed from `self`.
        unsafe {
            core::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.words.len() * 8)
        }
    }

    /// The fixed part of the account at `position` (a duplicate's is its
    /// original's) as the buffer holds it now: after the program ran, its
    /// owner, lamports and data length as the program left them.
    pub fn header(&self, position: usize) -> &RuntimeAccount {
        let at = self.entries[position];
        let bytes = &self.bytes()[at..at + size_of::<RuntimeAccount>()];
        // SAFETY: an entry starts 8-aligned (every entry is a multiple of 8
        // bytes long, after the 8-byte count, in an 8-aligned buffer) and
        // holds a whole `RuntimeAccount`, a `repr(C)` of integers and bytes,
        // valid for any bits.
        unsafe { &*(bytes.as_ptr() as *const RuntimeAccount) }
    }

    /// The data of the account at `position`, of the length its header
    /// holds now.
    ///
    /// # Panics
    /// If that length reaches past the buffer.
    pub fn data(&self, position: usize) -> &[u8] {
        let start = self.entries[position] + size_of::<RuntimeAccount>();
        let len = self.header(position).data_len as usize;
        &self.bytes()[start..start + len]
    }
}

#[cfg(test)]
mod tests {
    use core::mem::MaybeUninit;

    use super::*;
    use crate::account::AccountView;
    use crate::entrypoint::{deserialize, MAX_ACCOUNTS};

    /// What the program writes through its views is what `header` and
    /// `data` read back, at a duplicate's position too.
    #[test]
    fn reads_back_what_the_program_left() {
        let data = [1u8, 2, 3, 4, 5];
        let accounts = [
            InputAccount::Full {
                key: [1; 32],
                owner: [2; 32],
                lamports: 10,
                signer: true,
                writable: true,
                data: &[9; 3],
            },
            InputAccount::Full {
                key: [3; 32],
                owner: [4; 32],
                lamports: 20,
                signer: false,
                writable: true,
                data: &data,
            },
            InputAccount::Dup(1),
        ];
        let mut buf = InputBuffer::new(&accounts, &[7], &[5; 32]);
        assert_eq!(buf.as_mut_ptr() as usize % DATA_ALIGN, 0);
        assert_eq!(buf.bytes().len() % 8, 0);
        assert_eq!((buf.header(0).lamports, buf.data(0)), (10, &[9u8; 3][..]));
        let mut views = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
        let ix = unsafe { deserialize(buf.as_mut_ptr(), &mut views) };
        ix.accounts[0].set_lamports(0);
        ix.accounts[2].set_lamports(30);
        unsafe { ix.accounts[2].data_mut()[0] = 8 };
        ix.accounts[0].close();
        let first = buf.header(0);
        assert_eq!(
            (first.owner, first.lamports, first.data_len),
            ([0; 32], 0, 0)
        );
        assert!(buf.data(0).is_empty());
        for position in [1, 2] {
            let header = buf.header(position);
            assert_eq!(
                (header.key, header.owner, header.lamports),
                ([3; 32], [4; 32], 30)
            );
            assert_eq!(buf.data(position), &[8, 2, 3, 4, 5]);
        }
    }

    #[test]
    #[should_panic(expected = "earlier account")]
    fn refuses_a_duplicate_of_a_later_account() {
        InputBuffer::new(&[InputAccount::Dup(0)], &[], &[0; 32]);
    }
}
