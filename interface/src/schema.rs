//! The types the IDL's tables are made of: a layout's fields (name, type,
//! docs, offset), an instruction's arguments, the defined types. Each
//! account module declares its fields with `fields!`, each instruction its
//! arguments in `instruction::SCHEMAS`, and `catalog` lists them; `idl`
//! (std) writes `idl/curta.json` from those tables and nothing else, so the
//! IDL cannot drift from the readers. The program never reads them, so
//! none of this is linked into it.

use super::AccountRole;

/// A field's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    U8,
    U32,
    U64,
    Address,
    /// Bytes of a fixed length.
    Bytes(usize),
    /// The rest of the data, as bytes.
    Rest,
    /// Bytes after their length, a u32 (an instruction's argument that is
    /// followed by others).
    PrefixedBytes,
    /// The rest of the data, as entries of a defined type.
    RestOf(&'static TypeDef),
    /// A u64 if the data goes on, none if it ends here.
    OptionalU64,
    /// A defined type.
    Defined(&'static TypeDef),
}

impl Ty {
    /// The length in bytes; `None` for what runs to the end of the data.
    pub const fn size(&self) -> Option<usize> {
        Some(match self {
            Ty::U8 => 1,
            Ty::U32 => 4,
            Ty::U64 => 8,
            Ty::Address => 32,
            Ty::Bytes(n) => *n,
            Ty::Defined(t) => t.len,
            Ty::Rest | Ty::RestOf(_) | Ty::OptionalU64 | Ty::PrefixedBytes => return None,
        })
    }

    /// Whether the field's length varies but is carried in the data, so
    /// fields may follow it (their offsets then count it as empty).
    pub const fn is_prefixed(&self) -> bool {
        matches!(self, Ty::PrefixedBytes)
    }
}

/// A field at its offset in a layout (an instruction's offsets count the
/// tag byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub at: usize,
    /// The IDL's name, lower camel case.
    pub name: &'static str,
    pub ty: Ty,
    pub docs: &'static [&'static str],
}

/// A named type the layouts use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeDef {
    pub name: &'static str,
    /// The tag its bytes open with, if any (the fields follow it).
    pub tag: Option<[u8; 8]>,
    pub docs: &'static [&'static str],
    pub len: usize,
    pub shape: Shape,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Struct(&'static [Field]),
    /// A u32 whose values are the variants, in order from zero.
    Enum(&'static [&'static str]),
}

/// An account kind's data: its tag, then `fields`. A gap between fields is
/// zero (reserved); `len` is the fixed length, if the kind has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountSchema {
    pub name: &'static str,
    pub tag: [u8; 8],
    pub len: Option<usize>,
    pub docs: &'static [&'static str],
    pub fields: &'static [Field],
}

/// An instruction: its tag, then `args`; its accounts are its table in
/// `accounts`, then any number of `remaining`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstructionSchema {
    pub name: &'static str,
    pub tag: u8,
    pub docs: &'static [&'static str],
    pub accounts: &'static [AccountRole],
    pub args: &'static [Field],
    /// Trailing accounts of this role, any number (the builders take them
    /// as a list named by its key).
    pub remaining: Option<AccountRole>,
}
