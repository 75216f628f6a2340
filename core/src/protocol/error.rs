//! The program's own errors, each with its custom code, and the base above
//! which a core error is reported.

use crate::error::error_enum;

error_enum! {
    /// The program's own errors, reported as `InstructionError::Custom(code)`.
    /// `docs/program.md` lists when each is raised. A core error `n` inside
    /// an instruction is reported as `CORE_ERROR_BASE + n` (`CoreError`).
    pub enum CurtaError spelled_in "docs/program.md" {
        InvalidInstruction = 1 => "Unknown tag, or data of the wrong length",
        NotEnoughAccounts = 2 => "Fewer accounts than the instruction lists",
        WrongOwner = 3 => "An account that should be the program's is not (a closed one included)",
        MissingSigner = 4 => "A new account, the admin, new admin, owner, opener or a turn's cranker did not sign",
        NotWritable = 5 => "An account the instruction writes is read-only",
        WrongAccountKind = 6 => "An account of another kind (or uninitialized) in its place",
        InvalidAccountSize = 7 => "An account whose length is not what its kind needs",
        AlreadyInitialized = 8 => "Initializing an account already in use or not all zero (a stray byte, bytes staged in it), binding a bound section, reclaiming an initialized account",
        Unauthorized = 9 => "The signer is not the config's admin, the model's owner or the run's opener; or the royalty recipient is not the owner",
        WrongConfig = 10 => "A model's config account, or section zero's configuration or flags, differ",
        WrongModel = 11 => "A weight or run account of another model",
        WrongSection = 12 => "A weight account of another section, or not the one the model records",
        WrongAccountCount = 13 => "`turn` given more weight accounts than it reads (more than two, or more than its plan names)",
        DuplicateAccount = 14 => "One account in two roles that must differ (a run as its own opener, closing into itself, the owner as the cranker of a turn that pays a fee)",
        SectionLengthMismatch = 15 => "Section zero's length zero or over 10 MiB - 128",
        ModelNotWritable = 16 => "Binding, writing or sealing a model that is sealed or retired",
        ModelNotSealed = 17 => "Opening or advancing a run of a model not sealed (writing or retired)",
        WriteOutOfBounds = 18 => "A write past the end of its section",
        HashMismatch = 19 => "A section whose bytes do not match the digest given",
        EscrowTooSmall = 20 => "A run without its rent plus royalty x max tokens plus its crank deposit (or whose sum overflows), or whose escrow cannot cover a turn",
        StaleTurn = 21 => "A turn whose expected turn count is not the state's",
        UnsupportedRent = 22 => "A rent sysvar whose exemption threshold is not a whole number",
        SectionSealed = 23 => "Writing or sealing a section already sealed",
        SectionsNotSealed = 24 => "`seal_model` before every section is sealed",
        WeightsStillBound = 25 => "`close_model` while weight accounts are bound",
        ModelChanged = 26 => "`open_run` naming another identity than the model's; a `turn` of a run whose model is not the one it was opened on (closed and created again at its address)",
        RoyaltyMismatch = 27 => "`open_run` naming another royalty than the model's",
        InvalidCranker = 28 => "A turn's cranker that is not a System account (a wallet), or, when a fee is paid, not rent-exempt",
    }
}

/// Core error `n` (`crate::Error`) is reported as custom code `CORE_ERROR_BASE + n`.
pub const CORE_ERROR_BASE: u32 = 256;
