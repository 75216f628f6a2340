//! `docs/program.md` lists each instruction's accounts in words; the
//! tables in `protocol::accounts` are what the client, the fuzz target and
//! the generated client's check use. They must say the same: every
//! account's place, name, and whether it signs and is written.

use curta_core::protocol::catalog;
use curta_core::protocol::schema::{Field, Shape};
use curta_core::protocol::{accounts, AccountRole};

/// An account as the docs give it: its place, its name, and its flags
/// (`**w s**`: written and signing).
#[derive(Debug, PartialEq, Eq)]
struct Listed {
    index: usize,
    name: String,
    signer: bool,
    writable: bool,
}

fn program_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/program.md");
    std::fs::read_to_string(path).expect("docs/program.md")
}

/// The text of the section `### N \`name\``, up to the next heading.
fn section<'a>(doc: &'a str, tag: u8, name: &str) -> &'a str {
    let heading = format!("\n### {tag} `{name}`");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("no section {heading:?} in docs/program.md"));
    let body = &doc[start + heading.len()..];
    &body[..body.find("\n#").unwrap_or(body.len())]
}

/// The flags of a `(**w s**, ...)` or `**w**` mark.
fn flags(text: &str) -> (bool, bool) {
    let Some(start) = text.find("**") else {
        return (false, false);
    };
    let rest = &text[start + 2..];
    let bold = &rest[..rest.find("**").unwrap_or(0)];
    (bold.contains('s'), bold.contains('w'))
}

/// "Accounts: 0 config (**w s**, *new*, 128 bytes), 1 admin (**s**)."
fn from_prose(body: &str) -> Vec<Listed> {
    let start = body.find("Accounts: ").expect("an Accounts: sentence") + "Accounts: ".len();
    let text: String = body[start..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let end = text.find(". ").unwrap_or(text.len() - 1);
    let list = &text[..end];
    // Entries start with their number; parentheses may hold commas.
    let mut entries = vec![];
    let (mut depth, mut from) = (0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(list[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    entries.push(list[from..].trim());
    entries
        .into_iter()
        .map(|e| {
            let (index, rest) = e.split_once(' ').expect("a number, then a name");
            let name = rest.split(" (").next().unwrap_or(rest);
            let (signer, writable) = flags(rest);
            Listed {
                index: index.parse().unwrap_or_else(|_| panic!("{e:?}")),
                name: name.to_string(),
                signer,
                writable,
            }
        })
        .collect()
}

/// `turn`'s table: "| 2 | run | **w** |".
fn from_table(body: &str) -> Vec<Listed> {
    body.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let index = cells.get(1)?.parse().ok()?;
            let name = cells[2].split(" (").next().unwrap_or(cells[2]);
            let (signer, writable) = flags(cells.get(3).unwrap_or(&""));
            Some(Listed {
                index,
                name: name.to_string(),
                signer,
                writable,
            })
        })
        .collect()
}

fn table(roles: &[AccountRole]) -> Vec<Listed> {
    roles
        .iter()
        .enumerate()
        .map(|(index, r)| Listed {
            index,
            name: r.name.to_string(),
            signer: r.signer,
            writable: r.writable,
        })
        .collect()
}

#[test]
fn the_docs_list_each_instruction_s_accounts_as_its_table() {
    use curta_core::protocol::tag;
    let doc = program_md();
    let names = [
        (tag::INIT_CONFIG, "init_config"),
        (tag::SET_ALLOWANCE, "set_allowance"),
        (tag::SET_ADMIN, "set_admin"),
        (tag::INIT_MODEL, "init_model"),
        (tag::BIND_WEIGHT, "bind_weight"),
        (tag::WRITE, "write"),
        (tag::SEAL_SECTION, "seal_section"),
        (tag::SEAL_MODEL, "seal_model"),
        (tag::CLOSE_WEIGHT, "close_weight"),
        (tag::CLOSE_MODEL, "close_model"),
        (tag::OPEN_RUN, "open_run"),
        (tag::TURN, "turn"),
        (tag::CLOSE_RUN, "close_run"),
        (tag::RECLAIM, "reclaim"),
        (tag::WRITE_PROMPT, "write_prompt"),
        (tag::CLOSE_CONFIG, "close_config"),
        (tag::DELIVER, "deliver"),
    ];
    for (t, name) in names {
        let body = section(&doc, t, name);
        let listed = match t {
            tag::TURN | tag::DELIVER => from_table(body),
            _ => from_prose(body),
        };
        let roles = accounts::of(t).expect("a table");
        assert_eq!(
            listed,
            table(roles),
            "`{name}`: docs/program.md against protocol::accounts"
        );
    }
}

/// The offsets of the first table after `heading`, each row's leading
/// number (a model's `160 + 72 i` rows are the entries at 160), repeats
/// merged.
fn table_offsets(doc: &str, heading: &str) -> Vec<usize> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?} in docs/program.md"));
    let mut offsets: Vec<usize> = vec![];
    let rows = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    for row in rows {
        let cell = row.split('|').nth(1).unwrap_or("").trim();
        let lead: String = cell.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(at) = lead.parse() {
            if offsets.last() != Some(&at) {
                offsets.push(at);
            }
        }
    }
    offsets
}

/// The offsets a layout's table must list: the tag, each zero gap and
/// each field.
fn schema_offsets(fields: &[Field], len: Option<usize>) -> Vec<usize> {
    let mut offsets = vec![0];
    let mut end = 8;
    for f in fields {
        if f.at > end {
            offsets.push(end);
        }
        offsets.push(f.at);
        end = f.at + f.ty.size().unwrap_or(0);
    }
    if len.is_some_and(|len| len > end) {
        offsets.push(end);
    }
    offsets
}

#[test]
fn the_docs_lay_out_each_account_and_the_receipt_as_the_schema() {
    let doc = program_md();
    for a in catalog::ACCOUNTS {
        let tag = std::str::from_utf8(&a.tag).unwrap();
        let heading = format!("(`{tag}`,");
        assert_eq!(
            table_offsets(&doc, &heading),
            schema_offsets(a.fields, a.len),
            "{}: docs/program.md's table against protocol::schema",
            a.name
        );
    }
    let receipt = &curta_core::protocol::event::TURN_RECEIPT_TYPE;
    let Shape::Struct(fields) = receipt.shape else {
        panic!("the receipt is a struct");
    };
    assert_eq!(
        table_offsets(&doc, "## The turn receipt"),
        schema_offsets(fields, Some(receipt.len)),
        "the receipt: docs/program.md's table against protocol::schema"
    );
}

#[test]
fn the_docs_error_tables_are_the_errors_names_and_messages() {
    use curta_core::protocol::{CurtaError, CORE_ERROR_BASE};
    let doc = program_md();
    let start = doc.find("\n## Errors").expect("an Errors section");
    let section = &doc[start..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let rows: Vec<(u32, String, String)> = section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Some((
                cells.get(1)?.parse().ok()?,
                cells[2].into(),
                cells[3].into(),
            ))
        })
        .collect();
    let own = CurtaError::ALL
        .iter()
        .map(|e| (*e as u32, e.name().into(), e.message().into()));
    let core = curta_core::Error::ALL.iter().map(|e| {
        (
            CORE_ERROR_BASE + e.code(),
            e.name().into(),
            e.message().into(),
        )
    });
    assert_eq!(rows, own.chain(core).collect::<Vec<_>>());
}
