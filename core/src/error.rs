//! The core's eight errors. Their numbers are part of the interface: the
//! WebAssembly exports return them and the program reports them.

/// Declares an error enum from one list of variants and codes, and gives it
/// `ALL` (every variant, in code order), `from_code` and `name` (the
/// variant's name as written), so a new error is added in one place.
macro_rules! error_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident spelled_in $doc:literal {
            $($(#[$vmeta:meta])* $variant:ident = $code:literal,)+
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
        InvalidConfig = 1,
        /// Weights, a checkpoint or a tokenizer file that do not match their format.
        InvalidFormat = 2,
        /// A state with the wrong tag, size, cursor or alignment, or already complete.
        InvalidState = 3,
        /// `init_state` given a buffer whose length is not `state_size`.
        BufferTooSmall = 4,
        /// A turn without a matrix section it needs, or with one that is too short.
        MissingWeights = 5,
        /// A prompt or run parameter out of range.
        InvalidPrompt = 6,
        /// The prompt's tokens plus max tokens, less one, exceed the context.
        ContextExceeded = 7,
        /// A key or value that does not fit the cache's 32 bits.
        Arithmetic = 8,
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
