//! Every account kind and defined type, in the IDL's order: the tables
//! `curta-core idl` writes `idl/curta.json` from, with the instructions'
//! `instruction::SCHEMAS`.

use crate::schema::{AccountSchema, TypeDef};

/// Every account kind, in the IDL's order.
pub const ACCOUNTS: [AccountSchema; 4] = [
    crate::config::SCHEMA,
    crate::model::SCHEMA,
    crate::weight::SCHEMA,
    crate::run::SCHEMA,
];

/// Every defined type, in the IDL's order.
pub const TYPES: [&TypeDef; 4] = [
    &crate::model::MODEL_CONFIG_TYPE,
    &crate::model::MODEL_STATUS_TYPE,
    &crate::model::SECTION_ENTRY_TYPE,
    &crate::event::TURN_RECEIPT_TYPE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Field, Shape, Ty};
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
