//! The core's eight errors. Their numbers are part of the interface: the
//! WebAssembly exports return them and the program reports them.

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
pub(crate) use error_enum;

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
        /// The prompt's tokens plus max tokens, less one, exceed the context.
        ContextExceeded = 7 => "The prompt's tokens plus max tokens, less one, above the context (found by the turn that finishes tokenizing)",
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

#[cfg(feature = "std")]
impl std::error::Error for Error {}
