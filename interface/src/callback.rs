//! A run's callback: what `deliver` invokes once the run is finished, named
//! by its opener at opening (`open_run`'s `callback`) and kept in the run
//! account after the state (the run header's `callback_at`).
//!
//! The record, as `open_run` takes it and the run keeps it:
//!
//! | Offset | Type | Field |
//! |---|---|---|
//! | 0 | 32 bytes | The program to invoke |
//! | 32 | 32 bytes | The refund address: where the run's lamports go at delivery, but the delivery fee |
//! | 64 | u32 | Compute units the callback needs (what a deliverer adds to `deliver`'s own) |
//! | 68 | u8 | Account count, at most `MAX_ACCOUNTS` |
//! | 69 | u8 | Zero |
//! | 70 | u16 | Data length, at most `MAX_DATA` |
//! | 72 | 33 bytes each | The accounts, in order: the address, then a flags byte (bit 0: writable; no other bit) |
//! | 72 + 33 n | bytes | The instruction data |
//!
//! No account of a callback signs: `deliver` passes none of its signatures
//! on, so a callback can move nobody's lamports but its own program's
//! accounts'. The run's lamports move only after the callback returns, to
//! the refund address, which the opener chose: a program that opens runs
//! for its users names the user, who then gets everything back in the
//! delivery itself (`docs/program.md`, "Delivery").

use crate::bytes::read_u32;
use crate::Address;

/// The record's fixed part, before the accounts.
pub const FIXED_LEN: usize = 72;
/// Bytes per account entry: the address and a flags byte.
pub const ACCOUNT_LEN: usize = 33;
/// The most accounts a callback names: with `deliver`'s own four, its
/// transaction still fits 1,232 bytes with `MAX_DATA` bytes of data.
pub const MAX_ACCOUNTS: usize = 16;
/// The most instruction data a callback carries.
pub const MAX_DATA: usize = 256;
/// An account entry's flag: the callback writes the account.
pub const WRITABLE: u8 = 1;
/// The longest record.
pub const MAX_LEN: usize = FIXED_LEN + ACCOUNT_LEN * MAX_ACCOUNTS + MAX_DATA;

/// A record's length for `accounts` accounts and `data` bytes of data.
#[inline(always)]
pub const fn len(accounts: usize, data: usize) -> usize {
    FIXED_LEN + ACCOUNT_LEN * accounts + data
}

/// Why a record was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Shorter than its fixed part, or its length is not what its counts say.
    Length,
    /// More than `MAX_ACCOUNTS` accounts or `MAX_DATA` bytes of data.
    TooLarge,
    /// A flags byte with a bit other than `WRITABLE`, or the reserved byte
    /// not zero.
    Flags,
}

/// A callback record, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callback<'a>(&'a [u8]);

impl<'a> Callback<'a> {
    /// Reads a whole record: every length and flag checked.
    #[inline(always)]
    pub fn read(record: &'a [u8]) -> Result<Callback<'a>, Malformed> {
        if record.len() < FIXED_LEN {
            return Err(Malformed::Length);
        }
        let accounts = record[68] as usize;
        let data = u16::from_le_bytes([record[70], record[71]]) as usize;
        if accounts > MAX_ACCOUNTS || data > MAX_DATA {
            return Err(Malformed::TooLarge);
        }
        if record.len() != len(accounts, data) {
            return Err(Malformed::Length);
        }
        if record[69] != 0 {
            return Err(Malformed::Flags);
        }
        let c = Callback(record);
        if (0..accounts).any(|i| c.flags(i) & !WRITABLE != 0) {
            return Err(Malformed::Flags);
        }
        Ok(c)
    }
    /// The record's bytes, as the run keeps them.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
    /// The program `deliver` invokes.
    #[inline(always)]
    pub fn program(&self) -> &'a Address {
        crate::address(self.0, 0)
    }
    /// Where the run's lamports go at delivery, but the delivery fee.
    #[inline(always)]
    pub fn refund(&self) -> &'a Address {
        crate::address(self.0, 32)
    }
    /// The compute units the callback needs, as its opener stated them.
    #[inline(always)]
    pub fn compute_units(&self) -> u32 {
        read_u32(self.0, 64)
    }
    #[inline(always)]
    pub fn account_count(&self) -> usize {
        self.0[68] as usize
    }
    /// Account `i`'s address.
    #[inline(always)]
    pub fn account(&self, i: usize) -> &'a Address {
        crate::address(self.0, FIXED_LEN + ACCOUNT_LEN * i)
    }
    #[inline(always)]
    fn flags(&self, i: usize) -> u8 {
        self.0[FIXED_LEN + ACCOUNT_LEN * i + 32]
    }
    /// Whether the callback writes account `i`.
    #[inline(always)]
    pub fn is_writable(&self, i: usize) -> bool {
        self.flags(i) & WRITABLE != 0
    }
    /// The instruction data `deliver` sends.
    #[inline(always)]
    pub fn data(&self) -> &'a [u8] {
        &self.0[FIXED_LEN + ACCOUNT_LEN * self.account_count()..]
    }
}

/// One account a callback names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallbackAccount<'a> {
    pub address: &'a Address,
    pub writable: bool,
}

/// A callback to encode: what an opener names at opening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallbackInit<'a> {
    pub program: &'a Address,
    pub refund: &'a Address,
    pub compute_units: u32,
    pub accounts: &'a [CallbackAccount<'a>],
    pub data: &'a [u8],
}

impl CallbackInit<'_> {
    /// The record's length.
    #[inline(always)]
    pub const fn encoded_len(&self) -> usize {
        len(self.accounts.len(), self.data.len())
    }

    /// Writes the record into `out`, returning its length; `None` when
    /// `out` is too short or the callback is over the limits. No
    /// allocation: a program opening a run by CPI calls it.
    pub fn encode_into(&self, out: &mut [u8]) -> Option<usize> {
        if self.accounts.len() > MAX_ACCOUNTS || self.data.len() > MAX_DATA {
            return None;
        }
        let n = self.encoded_len();
        let out = out.get_mut(..n)?;
        out[..32].copy_from_slice(self.program);
        out[32..64].copy_from_slice(self.refund);
        out[64..68].copy_from_slice(&self.compute_units.to_le_bytes());
        out[68] = self.accounts.len() as u8;
        out[69] = 0;
        out[70..72].copy_from_slice(&(self.data.len() as u16).to_le_bytes());
        for (i, a) in self.accounts.iter().enumerate() {
            let at = FIXED_LEN + ACCOUNT_LEN * i;
            out[at..at + 32].copy_from_slice(a.address);
            out[at + 32] = if a.writable { WRITABLE } else { 0 };
        }
        out[len(self.accounts.len(), 0)..].copy_from_slice(self.data);
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_what_was_encoded() {
        let (program, a, b) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let accounts = [
            CallbackAccount {
                address: &a,
                writable: true,
            },
            CallbackAccount {
                address: &b,
                writable: false,
            },
        ];
        let init = CallbackInit {
            program: &program,
            refund: &b,
            compute_units: 25_000,
            accounts: &accounts,
            data: &[3, 9],
        };
        let mut out = [0u8; MAX_LEN];
        let n = init.encode_into(&mut out).unwrap();
        assert_eq!(n, len(2, 2));
        let c = Callback::read(&out[..n]).unwrap();
        assert_eq!((c.program(), c.compute_units()), (&program, 25_000));
        assert_eq!(c.refund(), &b);
        assert_eq!(c.account_count(), 2);
        assert_eq!((c.account(0), c.is_writable(0)), (&a, true));
        assert_eq!((c.account(1), c.is_writable(1)), (&b, false));
        assert_eq!(c.data(), &[3, 9]);
        assert_eq!(init.encode_into(&mut out[..n - 1]), None);
    }

    #[test]
    fn malformed_records_are_refused() {
        let program = [1u8; 32];
        let init = CallbackInit {
            program: &program,
            refund: &program,
            compute_units: 0,
            accounts: &[],
            data: &[7],
        };
        let mut out = [0u8; MAX_LEN];
        let n = init.encode_into(&mut out).unwrap();
        assert_eq!(Callback::read(&out[..n - 1]), Err(Malformed::Length));
        assert_eq!(
            Callback::read(&out[..FIXED_LEN - 1]),
            Err(Malformed::Length)
        );
        let mut long = out;
        long[70] = (MAX_DATA + 1) as u8;
        long[71] = ((MAX_DATA + 1) >> 8) as u8;
        assert_eq!(Callback::read(&long[..n]), Err(Malformed::TooLarge));
        let mut flagged = out;
        flagged[69] = 1;
        assert_eq!(Callback::read(&flagged[..n]), Err(Malformed::Flags));
        let one = [CallbackAccount {
            address: &program,
            writable: false,
        }];
        let n = CallbackInit {
            accounts: &one,
            ..init
        }
        .encode_into(&mut out)
        .unwrap();
        out[FIXED_LEN + 32] = 2;
        assert_eq!(Callback::read(&out[..n]), Err(Malformed::Flags));
        let many = [one[0]; MAX_ACCOUNTS + 1];
        let too_many = CallbackInit {
            accounts: &many,
            ..init
        };
        assert_eq!(too_many.encode_into(&mut [0u8; 2 * MAX_LEN]), None);
    }
}
