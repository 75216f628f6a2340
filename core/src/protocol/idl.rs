//! The IDL, `idl/curta.json`: a Codama root node written from `schema`'s
//! tables, the account tables and the errors, and nothing else
//! (`curta-core idl` prints it; `make idl` writes it and the client
//! generated from it; `make test-idl` checks both are current).
//!
//! Zero gaps in a layout are the neighbouring field's padding
//! (`preOffsetTypeNode`, or `postOffsetTypeNode` at the end of a fixed
//! length), so no decoded object carries reserved bytes.

use super::catalog;
use super::schema::{AccountSchema, Field, InstructionSchema, Shape, Ty, TypeDef};
use super::{AccountRole, CurtaError, CORE_ERROR_BASE};
use std::string::String;
use std::vec::Vec;

/// The Codama standard version the IDL follows.
const CODAMA_VERSION: &str = "1.9.2";

/// The IDL's placeholder program address: the program has no fixed one.
pub const PLACEHOLDER_ADDRESS: &str = "Curta111111111111111111111111111111111111111";

const PROGRAM_DOCS: [&str; 2] = [
    "Curta: llama2 inference on Solana, one `turn` transaction at a time (`docs/program.md`).",
    "The program has no fixed address: this one is a placeholder; pass the deployed program id \
     (`programAddress`) to every builder.",
];

/// The IDL as `idl/curta.json` holds it (two-space indents, a final newline).
pub fn json() -> String {
    let program = Json::obj([
        (
            "accounts",
            Json::list(catalog::ACCOUNTS.iter().map(account)),
        ),
        (
            "instructions",
            Json::list(super::instruction::SCHEMAS.iter().map(instruction)),
        ),
        (
            "definedTypes",
            Json::list(catalog::TYPES.iter().map(|t| defined_type(t))),
        ),
        ("pdas", Json::List(Vec::new())),
        ("errors", Json::List(errors())),
        ("kind", Json::str("programNode")),
        ("name", Json::str("curta")),
        ("publicKey", Json::str(PLACEHOLDER_ADDRESS)),
        ("version", Json::str(env!("CARGO_PKG_VERSION"))),
        ("docs", docs(&PROGRAM_DOCS)),
    ]);
    let root = Json::obj([
        ("kind", Json::str("rootNode")),
        ("standard", Json::str("codama")),
        ("version", Json::str(CODAMA_VERSION)),
        ("program", program),
        ("additionalPrograms", Json::List(Vec::new())),
    ]);
    let mut out = String::new();
    root.write(&mut out, 0);
    out.push('\n');
    out
}

fn account(a: &AccountSchema) -> Json {
    let tag_docs = std::format!(
        "The account's tag, `{}`: a {} account.",
        text(&a.tag),
        capitalized(a.name)
    );
    let mut fields = std::vec![tag_field(&a.tag, &tag_docs)];
    fields.extend(struct_fields(8, a.fields, a.len));
    let mut node = std::vec![
        ("kind", Json::str("accountNode")),
        ("name", Json::str(a.name))
    ];
    if let Some(len) = a.len {
        node.push(("size", Json::Num(len as u64)));
    }
    let mut lines: Vec<String> = a.docs.iter().map(|d| String::from(*d)).collect();
    lines.extend(
        gaps(8, a.fields, a.len).map(|(from, to)| std::format!("Bytes {from} to {to} are zero.")),
    );
    node.extend([
        ("docs", Json::list(lines.into_iter().map(Json::Str))),
        ("data", struct_node(fields)),
        ("discriminators", discriminators()),
    ]);
    Json::Obj(node)
}

fn instruction(i: &InstructionSchema) -> Json {
    let tag_docs = std::format!("The instruction's tag, {}.", i.tag);
    let mut arguments = std::vec![Json::obj([
        ("kind", Json::str("instructionArgumentNode")),
        ("name", Json::str("discriminator")),
        ("defaultValueStrategy", Json::str("omitted")),
        ("docs", docs(&[&tag_docs])),
        ("type", number("u8")),
        (
            "defaultValue",
            Json::obj([
                ("kind", Json::str("numberValueNode")),
                ("number", Json::Num(i.tag as u64)),
            ]),
        ),
    ])];
    arguments.extend(i.args.iter().map(|f| {
        let mut node = std::vec![
            ("kind", Json::str("instructionArgumentNode")),
            ("name", Json::str(f.name)),
            ("docs", docs(f.docs)),
            ("type", type_node(&f.ty)),
        ];
        if f.ty == Ty::OptionalU64 {
            node.push((
                "defaultValue",
                Json::obj([("kind", Json::str("noneValueNode"))]),
            ));
        }
        Json::Obj(node)
    }));
    let remaining = i.remaining.iter().map(|r| {
        Json::obj([
            ("kind", Json::str("instructionRemainingAccountsNode")),
            ("isOptional", Json::Bool(true)),
            ("docs", docs(&[r.docs])),
            (
                "value",
                Json::obj([
                    ("kind", Json::str("argumentValueNode")),
                    ("name", Json::str(r.key)),
                ]),
            ),
        ])
    });
    Json::obj([
        ("accounts", Json::list(i.accounts.iter().map(account_meta))),
        ("arguments", Json::List(arguments)),
        ("extraArguments", Json::List(Vec::new())),
        ("remainingAccounts", Json::list(remaining)),
        ("byteDeltas", Json::List(Vec::new())),
        ("discriminators", discriminators()),
        ("kind", Json::str("instructionNode")),
        ("name", Json::str(i.name)),
        ("docs", docs(i.docs)),
        ("optionalAccountStrategy", Json::str("programId")),
    ])
}

fn account_meta(r: &AccountRole) -> Json {
    Json::obj([
        ("kind", Json::str("instructionAccountNode")),
        ("name", Json::str(r.key)),
        ("isWritable", Json::Bool(r.writable)),
        ("isSigner", Json::Bool(r.signer)),
        ("isOptional", Json::Bool(false)),
        ("docs", docs(&[r.docs])),
    ])
}

fn defined_type(t: &TypeDef) -> Json {
    let ty = match t.shape {
        Shape::Struct(fields) => {
            let mut nodes = Vec::new();
            let mut first = 0;
            if let Some(tag) = &t.tag {
                let tag_docs = std::format!("The event's discriminator, `{}`.", text(tag));
                nodes.push(tag_field(tag, &tag_docs));
                first = 8;
            }
            nodes.extend(struct_fields(first, fields, Some(t.len)));
            struct_node(nodes)
        }
        Shape::Enum(variants) => Json::obj([
            ("kind", Json::str("enumTypeNode")),
            (
                "variants",
                Json::list(variants.iter().map(|v| {
                    Json::obj([
                        ("kind", Json::str("enumEmptyVariantTypeNode")),
                        ("name", Json::str(v)),
                    ])
                })),
            ),
            ("size", number("u32")),
        ]),
    };
    Json::obj([
        ("kind", Json::str("definedTypeNode")),
        ("name", Json::str(t.name)),
        ("docs", docs(t.docs)),
        ("type", ty),
    ])
}

/// The fields from offset `first`, each gap before a field its pre-offset
/// and a gap before `len` the last field's post-offset.
fn struct_fields(first: usize, fields: &[Field], len: Option<usize>) -> Vec<Json> {
    let mut end = first;
    let count = fields.len();
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut ty = type_node(&f.ty);
            if f.at > end {
                ty = offset("preOffsetTypeNode", f.at - end, ty);
            }
            end = f.at + f.ty.size().unwrap_or(0);
            if let (true, Some(len)) = (i + 1 == count, len) {
                if len > end {
                    ty = offset("postOffsetTypeNode", len - end, ty);
                }
            }
            Json::obj([
                ("kind", Json::str("structFieldTypeNode")),
                ("name", Json::str(f.name)),
                ("docs", docs(f.docs)),
                ("type", ty),
            ])
        })
        .collect()
}

/// The zero gaps between `first`, the fields and `len`: (from, to).
fn gaps(
    first: usize,
    fields: &'static [Field],
    len: Option<usize>,
) -> impl Iterator<Item = (usize, usize)> {
    let ends =
        core::iter::once(first).chain(fields.iter().map(|f| f.at + f.ty.size().unwrap_or(0)));
    let starts = fields.iter().map(|f| f.at).chain(len);
    ends.zip(starts).filter(|(end, start)| start > end)
}

fn offset(kind: &str, by: usize, ty: Json) -> Json {
    Json::obj([
        ("kind", Json::str(kind)),
        ("offset", Json::Num(by as u64)),
        ("strategy", Json::str("padded")),
        ("type", ty),
    ])
}

fn tag_field(tag: &[u8; 8], tag_docs: &str) -> Json {
    Json::obj([
        ("kind", Json::str("structFieldTypeNode")),
        ("name", Json::str("discriminator")),
        ("defaultValueStrategy", Json::str("omitted")),
        ("docs", docs(&[tag_docs])),
        ("type", type_node(&Ty::Bytes(8))),
        (
            "defaultValue",
            Json::obj([
                ("kind", Json::str("bytesValueNode")),
                ("data", Json::Str(hex(tag))),
                ("encoding", Json::str("base16")),
            ]),
        ),
    ])
}

fn type_node(ty: &Ty) -> Json {
    match ty {
        Ty::U8 => number("u8"),
        Ty::U32 => number("u32"),
        Ty::U64 => number("u64"),
        Ty::Address => Json::obj([("kind", Json::str("publicKeyTypeNode"))]),
        Ty::Bytes(n) => Json::obj([
            ("kind", Json::str("fixedSizeTypeNode")),
            ("size", Json::Num(*n as u64)),
            ("type", type_node(&Ty::Rest)),
        ]),
        Ty::Rest => Json::obj([("kind", Json::str("bytesTypeNode"))]),
        Ty::PrefixedBytes => Json::obj([
            ("kind", Json::str("sizePrefixTypeNode")),
            ("type", type_node(&Ty::Rest)),
            ("prefix", number("u32")),
        ]),
        Ty::RestOf(t) => Json::obj([
            ("kind", Json::str("arrayTypeNode")),
            ("item", link(t)),
            (
                "count",
                Json::obj([("kind", Json::str("remainderCountNode"))]),
            ),
        ]),
        Ty::OptionalU64 => Json::obj([
            ("kind", Json::str("remainderOptionTypeNode")),
            ("item", number("u64")),
        ]),
        Ty::Defined(t) => link(t),
    }
}

fn link(t: &TypeDef) -> Json {
    Json::obj([
        ("kind", Json::str("definedTypeLinkNode")),
        ("name", Json::str(t.name)),
    ])
}

fn number(format: &str) -> Json {
    Json::obj([
        ("kind", Json::str("numberTypeNode")),
        ("format", Json::str(format)),
        ("endian", Json::str("le")),
    ])
}

fn struct_node(fields: Vec<Json>) -> Json {
    Json::obj([
        ("kind", Json::str("structTypeNode")),
        ("fields", Json::List(fields)),
    ])
}

fn discriminators() -> Json {
    Json::List(std::vec![Json::obj([
        ("kind", Json::str("fieldDiscriminatorNode")),
        ("name", Json::str("discriminator")),
        ("offset", Json::Num(0)),
    ])])
}

/// The program's errors, then each core error at `CORE_ERROR_BASE + n`.
fn errors() -> Vec<Json> {
    let error = |name: &str, code: u32, message: &str, doc: String| {
        Json::obj([
            ("kind", Json::str("errorNode")),
            ("name", Json::Str(lower_first(name))),
            ("code", Json::Num(code as u64)),
            ("message", Json::str(message)),
            ("docs", Json::List(std::vec![Json::Str(doc)])),
        ])
    };
    let own = CurtaError::ALL.iter().map(|e| {
        let code = *e as u32;
        error(
            e.name(),
            code,
            e.message(),
            std::format!("{} ({code}).", e.name()),
        )
    });
    let core = crate::Error::ALL.iter().map(|e| {
        let n = e.code();
        let doc = std::format!(
            "Core error {n}, {}, reported as {CORE_ERROR_BASE} + {n}.",
            e.name()
        );
        error(e.name(), CORE_ERROR_BASE + n, e.message(), doc)
    });
    own.chain(core).collect()
}

fn docs(lines: &[&str]) -> Json {
    Json::list(lines.iter().map(|l| Json::str(l)))
}

fn text(tag: &[u8; 8]) -> String {
    tag.iter().map(|&b| b as char).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| std::format!("{b:02x}")).collect()
}

fn capitalized(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn lower_first(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// A JSON value whose objects keep their keys' order, written as
/// `JSON.stringify(value, null, 2)` writes it.
enum Json {
    Str(String),
    Num(u64),
    Bool(bool),
    List(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

impl Json {
    fn str(s: &str) -> Json {
        Json::Str(s.into())
    }
    fn obj<const N: usize>(pairs: [(&'static str, Json); N]) -> Json {
        Json::Obj(pairs.into())
    }
    fn list(items: impl Iterator<Item = Json>) -> Json {
        Json::List(items.collect())
    }

    fn write(&self, out: &mut String, depth: usize) {
        let indent = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(core::iter::repeat_n(' ', 2 * depth));
        };
        match self {
            Json::Str(s) => crate::json::string(out, s),
            Json::Num(n) => out.push_str(&n.to_string()),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::List(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(pairs) if pairs.is_empty() => out.push_str("{}"),
            Json::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    indent(out, depth + 1);
                    item.write(out, depth + 1);
                }
                indent(out, depth);
                out.push(']');
            }
            Json::Obj(pairs) => {
                out.push('{');
                for (i, (key, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    indent(out, depth + 1);
                    crate::json::string(out, key);
                    out.push_str(": ");
                    value.write(out, depth + 1);
                }
                indent(out, depth);
                out.push('}');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_idl_is_the_generators() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../idl/curta.json");
        let committed = std::fs::read_to_string(path).expect("idl/curta.json");
        assert!(
            committed == super::json(),
            "idl/curta.json is stale: run `make idl`"
        );
    }
}
