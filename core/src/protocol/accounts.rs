//! Each instruction's accounts, in order, as one table: the account's
//! name, whether it signs and whether the instruction writes it. The
//! client's builders (`curta_client::instructions`), the fuzz target's
//! generator and a test of `docs/program.md` all read these tables; the
//! generated IDL client is checked against the builders' accounts
//! (`make test-idl`). The program's handlers check the same roles, each
//! where its error order needs it (`docs/program.md` gives the order).

use super::tag;

/// One account of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountRole {
    pub name: &'static str,
    pub signer: bool,
    pub writable: bool,
}

const fn role(name: &'static str, signer: bool, writable: bool) -> AccountRole {
    AccountRole {
        name,
        signer,
        writable,
    }
}

/// An account the instruction reads.
const fn read(name: &'static str) -> AccountRole {
    role(name, false, false)
}

/// An account the instruction writes.
const fn write(name: &'static str) -> AccountRole {
    role(name, false, true)
}

/// A signer the instruction only reads.
const fn sign(name: &'static str) -> AccountRole {
    role(name, true, false)
}

/// A signer the instruction writes (a new account, or one paid back).
const fn sign_write(name: &'static str) -> AccountRole {
    role(name, true, true)
}

/// `init_config`. The config is new: created for the program (System
/// `create_account`, owned by it, exactly `config::LEN` bytes), still zero,
/// and signing; so is every account marked new below.
pub const INIT_CONFIG: [AccountRole; 2] = [sign_write("config"), sign("admin")];
/// `set_allowance`.
pub const SET_ALLOWANCE: [AccountRole; 2] = [write("config"), sign("admin")];
/// `set_admin`: both admins sign.
pub const SET_ADMIN: [AccountRole; 3] = [write("config"), sign("admin"), sign("new admin")];
/// `init_model`. The model is new, `model::len(sections)` bytes.
pub const INIT_MODEL: [AccountRole; 3] =
    [read("config account"), sign_write("model"), sign("owner")];
/// `bind_weight`. The weight account is new, `weight::HEADER_LEN` plus the
/// section's length.
pub const BIND_WEIGHT: [AccountRole; 3] = [write("model"), sign_write("weight"), sign("owner")];
/// `write`.
pub const WRITE: [AccountRole; 3] = [read("model"), write("weight"), sign("owner")];
/// `seal_section`.
pub const SEAL_SECTION: [AccountRole; 3] = [write("model"), write("weight"), sign("owner")];
/// `seal_model`.
pub const SEAL_MODEL: [AccountRole; 3] = [
    write("model"),
    read("section zero's weight account"),
    sign("owner"),
];
/// `close_weight`: the owner receives the weight account's lamports.
pub const CLOSE_WEIGHT: [AccountRole; 3] = [write("model"), write("weight"), sign_write("owner")];
/// `close_model`: the owner receives the model's lamports.
pub const CLOSE_MODEL: [AccountRole; 2] = [write("model"), sign_write("owner")];
/// `open_run`. The run is new, `run::HEADER_LEN` plus `state_size` bytes.
pub const OPEN_RUN: [AccountRole; 4] = [
    read("config account"),
    read("model"),
    sign_write("run"),
    sign("opener"),
];
/// `turn`: anyone may send it; the model's owner receives the royalties.
/// Then the weight accounts of the matrix sections the turn's plan names,
/// read only: none, one or two (`TURN_WEIGHT`).
pub const TURN: [AccountRole; 5] = [
    read("config account"),
    read("model"),
    write("run"),
    write("the model's owner"),
    read("section zero's weight account"),
];
/// Each of the turn's trailing weight accounts.
pub const TURN_WEIGHT: AccountRole = read("a weight account the turn's plan names");
/// `close_run`: the opener receives the run's lamports.
pub const CLOSE_RUN: [AccountRole; 2] = [write("run"), sign_write("opener")];
/// `reclaim`: an account created for the program and never initialized
/// signs for itself; the recipient receives its lamports.
pub const RECLAIM: [AccountRole; 2] = [sign_write("account"), write("recipient")];
/// `write_prompt`: the run is created for the program and not opened yet.
pub const WRITE_PROMPT: [AccountRole; 1] = [sign_write("run")];

/// The fixed accounts of the instruction with `tag` (a turn's trailing
/// weight accounts apart), or `None` for an unknown tag.
pub fn of(instruction_tag: u8) -> Option<&'static [AccountRole]> {
    Some(match instruction_tag {
        tag::INIT_CONFIG => &INIT_CONFIG,
        tag::SET_ALLOWANCE => &SET_ALLOWANCE,
        tag::SET_ADMIN => &SET_ADMIN,
        tag::INIT_MODEL => &INIT_MODEL,
        tag::BIND_WEIGHT => &BIND_WEIGHT,
        tag::WRITE => &WRITE,
        tag::SEAL_SECTION => &SEAL_SECTION,
        tag::SEAL_MODEL => &SEAL_MODEL,
        tag::CLOSE_WEIGHT => &CLOSE_WEIGHT,
        tag::CLOSE_MODEL => &CLOSE_MODEL,
        tag::OPEN_RUN => &OPEN_RUN,
        tag::TURN => &TURN,
        tag::CLOSE_RUN => &CLOSE_RUN,
        tag::RECLAIM => &RECLAIM,
        tag::WRITE_PROMPT => &WRITE_PROMPT,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_has_its_table() {
        for t in 0..=tag::WRITE_PROMPT {
            let roles = of(t).unwrap_or_else(|| panic!("tag {t}"));
            assert!(!roles.is_empty(), "tag {t}");
        }
        assert_eq!(of(tag::WRITE_PROMPT + 1), None);
        // A new account signs and is written; so is every account paid back.
        assert_eq!(INIT_CONFIG[0], sign_write("config"));
        assert!(TURN.iter().all(|r| !r.signer), "anyone may send a turn");
        const { assert!(!TURN_WEIGHT.signer && !TURN_WEIGHT.writable) };
    }
}
