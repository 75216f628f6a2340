//! One declaration per account field. `fields!` derives from it the
//! field's offset constant, its reader on the account's view, its writer on
//! the account's writer and its entry in the IDL's table, so the offset,
//! the accessors and the IDL cannot disagree.
//!
//! ```text
//! fields! {
//!     RunAccount, RunAccountMut, FIELDS;
//!     ROYALTY = 72, "royalty", u64, royalty, set_royalty, "Royalty per token.";
//!     ...
//!     @rest [Field { .. }]
//! }
//! ```
//!
//! A field is `CONST = offset, "idlName", kind [as idl_type], reader,
//! writer, "docs";`. Kinds: `address` (`&Address` both ways), `u64`, `u32`,
//! `count` (a u32 read as a `usize`: a count or an offset) and `bytes N`
//! (`&[u8; N]` both ways); `as` gives the IDL a type other than the kind's
//! own (`Ty::Bytes(32)` for a digest, a defined type). `@rest` lists fields
//! with no accessors (what runs to the data's end), appended to the table.

macro_rules! fields {
    (
        $view:ident, $writer:ident, $table:ident;
        $(
            $konst:ident = $at:expr, $name:literal, $kind:ident $($len:literal)? $(as $idl:expr)?,
            $get:ident, $set:ident, $doc:literal;
        )*
        @rest [$($rest:expr),* $(,)?]
    ) => {
        $(
            #[doc = $doc]
            pub const $konst: usize = $at;
            fields!(@access $view, $writer, $konst, $kind $($len)?, $get, $set, $doc);
        )*
        /// The IDL's fields, in order of offset (the gaps are zero).
        pub(crate) const $table: &[$crate::schema::Field] = &[
            $(
                $crate::schema::Field {
                    at: $konst,
                    name: $name,
                    ty: fields!(@idl $kind $($len)? $(, $idl)?),
                    docs: &[$doc],
                },
            )*
            $($rest),*
        ];
    };

    (@access $view:ident, $writer:ident, $at:ident, address, $get:ident, $set:ident, $doc:literal) => {
        impl<'a> $view<'a> {
            #[doc = $doc]
            #[inline(always)]
            pub fn $get(&self) -> &'a $crate::Address {
                $crate::address(self.0, $at)
            }
        }
        impl $writer<'_> {
            #[inline(always)]
            pub fn $set(&mut self, value: &$crate::Address) {
                self.0[$at..$at + 32].copy_from_slice(value);
            }
        }
    };
    (@access $view:ident, $writer:ident, $at:ident, bytes $len:literal, $get:ident, $set:ident, $doc:literal) => {
        impl<'a> $view<'a> {
            #[doc = $doc]
            #[inline(always)]
            pub fn $get(&self) -> &'a [u8; $len] {
                // The views check the length before reading.
                self.0[$at..$at + $len].try_into().unwrap_or(&[0; $len])
            }
        }
        impl $writer<'_> {
            #[inline(always)]
            pub fn $set(&mut self, value: &[u8; $len]) {
                self.0[$at..$at + $len].copy_from_slice(value);
            }
        }
    };
    (@access $view:ident, $writer:ident, $at:ident, u64, $get:ident, $set:ident, $doc:literal) => {
        fields!(@int $view, $writer, $at, $get, $set, $doc, u64, read_u64, write_u64, u64);
    };
    (@access $view:ident, $writer:ident, $at:ident, u32, $get:ident, $set:ident, $doc:literal) => {
        fields!(@int $view, $writer, $at, $get, $set, $doc, u32, read_u32, write_u32, u32);
    };
    (@access $view:ident, $writer:ident, $at:ident, count, $get:ident, $set:ident, $doc:literal) => {
        fields!(@int $view, $writer, $at, $get, $set, $doc, u32, read_u32, write_u32, usize);
    };
    // An integer stored as `$stored`, read as `$read_as`.
    (
        @int $view:ident, $writer:ident, $at:ident, $get:ident, $set:ident, $doc:literal,
        $stored:ty, $read:ident, $write:ident, $read_as:ty
    ) => {
        impl $view<'_> {
            #[doc = $doc]
            #[inline(always)]
            pub fn $get(&self) -> $read_as {
                $crate::bytes::$read(self.0, $at) as $read_as
            }
        }
        impl $writer<'_> {
            #[inline(always)]
            pub fn $set(&mut self, value: $stored) {
                $crate::bytes::$write(self.0, $at, value);
            }
        }
    };

    (@idl $kind:ident $($len:literal)?, $idl:expr) => { $idl };
    (@idl address) => { $crate::schema::Ty::Address };
    (@idl bytes $len:literal) => { $crate::schema::Ty::Bytes($len) };
    (@idl u64) => { $crate::schema::Ty::U64 };
    (@idl u32) => { $crate::schema::Ty::U32 };
    (@idl count) => { $crate::schema::Ty::U32 };
}
