//! What the IDL says of the protocol's bytes: each layout's fields (name,
//! type, docs) at the offsets its module defines, each instruction's
//! arguments, and the defined types. `idl` (std) writes `idl/curta.json`
//! from these tables and nothing else, so the IDL cannot drift from the
//! readers: the offsets here are the readers' own constants. The program
//! never reads them, so none of this is linked into it.

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

/// Every account kind, in the IDL's order.
pub const ACCOUNTS: [AccountSchema; 4] = [
    super::config::SCHEMA,
    super::model::SCHEMA,
    super::weight::SCHEMA,
    super::run::SCHEMA,
];

/// Every defined type, in the IDL's order.
pub const TYPES: [&TypeDef; 4] = [
    &super::model::MODEL_CONFIG_TYPE,
    &super::model::MODEL_STATUS_TYPE,
    &super::model::SECTION_ENTRY_TYPE,
    &super::event::TURN_RECEIPT_TYPE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{instruction, tag};

    /// Fields in order, none overlapping the next, and only the last one
    /// running to the end of the data.
    fn check(what: &str, first: usize, fields: &[Field], len: Option<usize>) {
        let mut end = Some(first);
        for f in fields {
            let at = end.unwrap_or_else(|| panic!("{what}.{}: after a field to the end", f.name));
            assert!(
                f.at >= at,
                "{what}.{} at {} overlaps the field before (to {at})",
                f.name,
                f.at
            );
            end = match f.ty {
                Ty::PrefixedBytes => Some(f.at + 4),
                ty => ty.size().map(|n| f.at + n),
            };
        }
        if let (Some(len), Some(end)) = (len, end) {
            assert!(end <= len, "{what}: fields to {end}, the kind holds {len}");
        }
    }

    #[test]
    fn layouts_are_in_order_and_fit() {
        for a in ACCOUNTS {
            check(a.name, 8, a.fields, a.len);
        }
        for t in TYPES {
            if let Shape::Struct(fields) = t.shape {
                let first = if t.tag.is_some() { 8 } else { 0 };
                check(t.name, first, fields, Some(t.len));
            }
        }
        for i in instruction::SCHEMAS {
            check(i.name, 1, i.args, None);
            // Arguments follow each other with no gap.
            let mut at = 1;
            for f in i.args {
                assert_eq!(f.at, at, "{}.{}", i.name, f.name);
                at += if f.ty.is_prefixed() {
                    4
                } else {
                    f.ty.size().unwrap_or(0)
                };
            }
        }
    }

    #[test]
    fn every_instruction_has_its_schema_in_tag_order() {
        for (t, i) in instruction::SCHEMAS.iter().enumerate() {
            assert_eq!(i.tag as usize, t, "{}", i.name);
            assert_eq!(Some(i.accounts), crate::accounts::of(i.tag), "{}", i.name);
        }
        assert_eq!(instruction::SCHEMAS.len(), tag::LAST as usize + 1);
    }
}
