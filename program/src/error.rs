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
    }
}
