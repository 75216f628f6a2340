//! The rent-exempt minimum, from the Rent sysvar, without floating point
//! (SBF has none).
//!
//! Not pinocchio's `Rent::get()`: pinocchio 0.12 reads only the sysvar's
//! first field and takes it as lamports per byte, which holds once
//! SIMD-0194 has folded the exemption threshold into the rate (6,960 and
//! 1.0); before, the sysvar says 3,480 lamports per byte-year and a
//! threshold of 2.0, and that reading would be half the minimum. This
//! reads both fields and takes either.

use pinocchio::error::ProgramError;
use pinocchio::sysvars::{get_sysvar, rent::RENT_ID};

use crate::error::StoryError;

/// Bytes the runtime charges rent for beyond an account's data.
const ACCOUNT_STORAGE_OVERHEAD: u64 = 128;
/// The bits of the `f64` thresholds a cluster uses: 2.0 and 1.0.
const TWO: u64 = 0x4000_0000_0000_0000;
const ONE: u64 = 0x3ff0_0000_0000_0000;

/// `(128 + data_len) x rate x threshold` for the sysvar's first 16
/// bytes (the rate, u64; the threshold, f64 bits).
#[inline(always)]
pub fn minimum_balance_of(sysvar: &[u8; 16], data_len: usize) -> Result<u64, ProgramError> {
    let rate = u64::from_le_bytes([
        sysvar[0], sysvar[1], sysvar[2], sysvar[3], sysvar[4], sysvar[5], sysvar[6], sysvar[7],
    ]);
    let threshold = match u64::from_le_bytes([
        sysvar[8], sysvar[9], sysvar[10], sysvar[11], sysvar[12], sysvar[13], sysvar[14],
        sysvar[15],
    ]) {
        TWO => 2,
        ONE => 1,
        _ => return Err(StoryError::UnsupportedRent.into()),
    };
    // Account lengths stay below 2^24 and the rate below 2^24 on every
    // cluster, so the product cannot wrap (and SBF has no checked multiply).
    Ok((ACCOUNT_STORAGE_OVERHEAD + data_len as u64) * rate * threshold)
}

/// The rent-exempt minimum of an account of `data_len` bytes.
#[inline(always)]
pub fn minimum_balance(data_len: usize) -> Result<u64, ProgramError> {
    let mut sysvar = [0u8; 16];
    get_sysvar(&mut sysvar, &RENT_ID, 0)?;
    minimum_balance_of(&sysvar, data_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysvar(rate: u64, threshold: f64) -> [u8; 16] {
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&rate.to_le_bytes());
        s[8..].copy_from_slice(&threshold.to_bits().to_le_bytes());
        s
    }

    #[test]
    fn either_layout_gives_the_same_minimum() {
        // Mainnet's 890,880 lamports for an empty account, both ways.
        assert_eq!(minimum_balance_of(&sysvar(3_480, 2.0), 0), Ok(890_880));
        assert_eq!(minimum_balance_of(&sysvar(6_960, 1.0), 0), Ok(890_880));
        assert_eq!(
            minimum_balance_of(&sysvar(3_480, 2.5), 0),
            Err(StoryError::UnsupportedRent.into())
        );
        assert_eq!(TWO, 2.0f64.to_bits());
        assert_eq!(ONE, 1.0f64.to_bits());
    }
}
