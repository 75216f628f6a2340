//! The errors: the core's eight (`Error`), which the WebAssembly exports
//! return and the program reports as `CORE_ERROR_BASE + n`, and the
//! program's own (`CurtaError`). Their numbers are part of the interface.

/// Declares an error enum from one list of variants and codes, and gives it
/// `ALL` (every variant, in code order), `from_code`, `name` (the
/// variant's name as written) and `message`, so a new error is added in one place.
macro_rules! error_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident spelled_in $doc:literal {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal => $message:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $code,)+
        }

        impl $name {
            /// Every error, in code order.
            pub const ALL: [$name; [$($name::$variant),+].len()] = [$($name::$variant),+];

            /// The error with this code, if any.
            pub fn from_code(code: u32) -> Option<$name> {
                $name::ALL.iter().copied().find(|e| *e as u32 == code)
            }

            #[doc = concat!("The error's name, as `", $doc, "` spells it.")]
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)+
                }
            }

            /// When the error is raised, in a sentence: the IDL's message,
            /// and `docs/program.md`'s error tables.
            pub const fn message(self) -> &'static str {
                match self {
                    $($name::$variant => $message,)+
                }
            }
        }
    };
}

error_enum! {
    /// A core error. `Result<(), Error>` is one 32-bit word (zero is `Ok`), which
    /// SBF can return from a call without an aggregate.
    pub enum Error spelled_in "docs/spec.md" {
        /// A configuration value outside its range, or a turn allowance outside
        /// 22,096..=1,350,000 compute units.
        InvalidConfig = 1 => "A model configuration out of range, an allowance out of range, or no step of the run fits the allowance",
        /// Weights, a checkpoint or a tokenizer file that do not match their format.
        InvalidFormat = 2 => "Section zero that is not a `CURTAW01` artifact or does not fit its configuration; unknown flags",
        /// A state with the wrong tag, size, cursor or alignment, or already complete.
        InvalidState = 3 => "A turn on a complete run, or a run account whose state is damaged",
        /// `init_state` given a buffer whose length is not `state_size`.
        BufferTooSmall = 4 => "A run account whose size is not 256 + `state_size` for its prompt and max tokens",
        /// A turn without a matrix section it needs, or with one that is too short.
        MissingWeights = 5 => "A turn without a weight account its plan needs",
        /// A prompt or run parameter out of range.
        InvalidPrompt = 6 => "A prompt over 1,024 bytes, with a zero byte or not UTF-8; max tokens of zero or above the context; a temperature above 16",
        /// Never raised: a run that reaches the model's context completes
        /// there, its finish reason the context (`state::FinishReason`).
        /// Kept so the numbers after it stay the same.
        ContextExceeded = 7 => "Never raised (kept for its number): a run that reaches the context completes, its reason the context",
        /// A key or value that does not fit the cache's 32 bits.
        Arithmetic = 8 => "A key or value past the cache's 32 bits",
    }
}

impl Error {
    /// The error's number, 1 to 8.
    pub const fn code(self) -> u32 {
        self as u32
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} (core error {})", self.name(), self.code())
    }
}

#[cfg(any(feature = "std", test))]
impl std::error::Error for Error {}

// The program's own errors, each with its custom code, and the base above
// which a core error is reported.

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
        DuplicateAccount = 14 => "One account in two roles that must differ (a run as its own opener, closing into itself, the owner as the cranker of a turn that pays a fee, the deliverer among the callback's accounts)",
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
        InvalidCranker = 28 => "A turn's cranker or a delivery's sender that is not a System account (a wallet), or, when a fee is paid, not rent-exempt",
        RunNotFinished = 29 => "`deliver` of a run that is not complete",
        NoCallback = 30 => "`deliver` of a run opened without a callback",
        WrongCallback = 31 => "`deliver` given another program or other accounts than the run's callback names, or read-only where the callback writes",
        InvalidCallback = 32 => "`open_run` with a callback record that does not read (its lengths or flags), over 16 accounts or 256 bytes of data, or naming the Curta program; or a delivery fee without a callback",
    }
}

/// Core error `n` (`crate::Error`) is reported as custom code `CORE_ERROR_BASE + n`.
pub const CORE_ERROR_BASE: u32 = 256;
