//! The program's error, as the runtime reads it from the entrypoint's return.

use core::num::NonZeroU64;

/// An error code the entrypoint returns; zero is success, so it is never
/// zero. `Result<(), ProgramError>` is a single `u64` (the zero niche), which
/// SBF can return from a non-inlined call, unlike an aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct ProgramError(NonZeroU64);

/// What every instruction handler returns.
pub type ProgramResult = Result<(), ProgramError>;

/// The runtime's built-in errors sit in the high 32 bits, as in
/// `solana-program-error`'s `to_builtin!`.
const fn builtin(n: u64) -> ProgramError {
    match NonZeroU64::new(n << 32) {
        Some(v) => ProgramError(v),
        None => panic!("builtin error zero"),
    }
}

impl ProgramError {
    /// `InstructionError::InvalidArgument`.
    pub const INVALID_ARGUMENT: ProgramError = builtin(2);
    /// `InstructionError::InvalidInstructionData`.
    pub const INVALID_INSTRUCTION_DATA: ProgramError = builtin(3);

    /// `InstructionError::Custom(code)`; custom code zero is the runtime's
    /// `CUSTOM_ZERO`, since a zero return would read as success.
    pub const fn custom(code: u32) -> ProgramError {
        match NonZeroU64::new(code as u64) {
            Some(v) => ProgramError(v),
            None => builtin(1),
        }
    }

    /// The value the entrypoint returns to the runtime.
    pub const fn to_u64(self) -> u64 {
        self.0.get()
    }
}

pub use curta_core::protocol::{CurtaError, CORE_ERROR_BASE};

impl From<CurtaError> for ProgramError {
    #[inline(always)]
    fn from(e: CurtaError) -> Self {
        ProgramError::custom(e as u32)
    }
}

/// The program error for a core error: `CoreError`, code 256 + its number.
#[inline(always)]
pub fn core_error(e: curta_core::Error) -> ProgramError {
    ProgramError::custom(CORE_ERROR_BASE + e.code())
}

/// The entrypoint's return value for a handler's result.
#[inline(always)]
pub fn to_return_code(result: ProgramResult) -> u64 {
    match result {
        Ok(()) => 0,
        Err(e) => e.to_u64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_runtime() {
        assert_eq!(ProgramError::INVALID_INSTRUCTION_DATA.to_u64(), 3 << 32);
        assert_eq!(ProgramError::custom(0).to_u64(), 1 << 32);
        assert_eq!(ProgramError::custom(7).to_u64(), 7);
        assert_eq!(to_return_code(Ok(())), 0);
        assert_eq!(core::mem::size_of::<ProgramResult>(), 8);
        assert_eq!(ProgramError::from(CurtaError::HashMismatch).to_u64(), 19);
        assert_eq!(core_error(curta_core::Error::InvalidState).to_u64(), 259);
        for (i, e) in CurtaError::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i + 1);
            assert_eq!(CurtaError::from_code(i as u32 + 1), Some(*e));
        }
        assert_eq!(CurtaError::from_code(0), None);
    }
}
