//! The Rent sysvar, read without floating point (SBF has none).

use crate::error::{CurtaError, ProgramError};
use crate::syscalls;

/// Bytes the runtime charges rent for beyond an account's data.
const ACCOUNT_STORAGE_OVERHEAD: u64 = 128;

/// A non-negative `f64` that is a whole number below 2^32, from its bits.
fn whole_number(bits: u64) -> Option<u64> {
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1075;
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    if bits >> 63 != 0 || !(-52..=-21).contains(&exponent) {
        return None;
    }
    let shift = (-exponent) as u32;
    (mantissa & ((1 << shift) - 1) == 0).then_some(mantissa >> shift)
}

/// The rent-exempt minimum of an account of `data_len` bytes, into `out`:
/// `(128 + len) * lamports per byte-year * exemption threshold`, for a
/// threshold that is a whole number (2.0 on every cluster).
pub fn minimum_balance(data_len: usize, out: &mut u64) -> Result<(), ProgramError> {
    let mut rent = [0u8; 24];
    // SAFETY: the syscall writes the 17 bytes of the Rent sysvar.
    unsafe { syscalls::sol_get_rent_sysvar(rent.as_mut_ptr()) };
    let per_byte_year = u64::from_le_bytes(rent[..8].try_into().unwrap_or([0; 8]));
    let threshold = u64::from_le_bytes(rent[8..16].try_into().unwrap_or([0; 8]));
    let threshold = whole_number(threshold).ok_or(CurtaError::UnsupportedRent)?;
    // Account lengths stay below 2^24 and the rate below 2^24 on every
    // cluster, so the product cannot wrap; SBF has no checked multiply.
    *out = (ACCOUNT_STORAGE_OVERHEAD + data_len as u64) * per_byte_year * threshold;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_from_float_bits() {
        assert_eq!(whole_number(2.0f64.to_bits()), Some(2));
        assert_eq!(whole_number(1.0f64.to_bits()), Some(1));
        assert_eq!(whole_number(3.0f64.to_bits()), Some(3));
        assert_eq!(whole_number(2.5f64.to_bits()), None);
        assert_eq!(whole_number((-2.0f64).to_bits()), None);
        assert_eq!(whole_number(0.0f64.to_bits()), None);
    }

    #[test]
    fn mainnet_minimum_balance() {
        let mut out = 0;
        minimum_balance(0, &mut out).unwrap();
        assert_eq!(out, 890_880);
    }
}
