//! The program's own errors, each with its custom code, and the base above
//! which a core error is reported.

use crate::error::error_enum;

error_enum! {
    /// The program's own errors, reported as `InstructionError::Custom(code)`.
    /// `docs/program.md` lists when each is raised. A core error `n` inside
    /// an instruction is reported as `CORE_ERROR_BASE + n` (`CoreError`).
    pub enum CurtaError spelled_in "docs/program.md" {
        InvalidInstruction = 1,
        NotEnoughAccounts = 2,
        WrongOwner = 3,
        MissingSigner = 4,
        NotWritable = 5,
        WrongAccountKind = 6,
        InvalidAccountSize = 7,
        AlreadyInitialized = 8,
        Unauthorized = 9,
        WrongConfig = 10,
        WrongModel = 11,
        WrongSection = 12,
        WrongAccountCount = 13,
        DuplicateAccount = 14,
        SectionLengthMismatch = 15,
        ModelNotWritable = 16,
        ModelNotSealed = 17,
        WriteOutOfBounds = 18,
        HashMismatch = 19,
        EscrowTooSmall = 20,
        StaleTurn = 21,
        UnsupportedRent = 22,
        SectionSealed = 23,
        SectionsNotSealed = 24,
        WeightsStillBound = 25,
        ModelChanged = 26,
        RoyaltyMismatch = 27,
    }
}

/// Core error `n` (`crate::Error`) is reported as custom code `CORE_ERROR_BASE + n`.
pub const CORE_ERROR_BASE: u32 = 256;
