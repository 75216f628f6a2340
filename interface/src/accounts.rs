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
    /// The builders' and the IDL's name for it, lower camel case.
    pub key: &'static str,
    /// Its name in `docs/program.md`'s account lists.
    pub name: &'static str,
    pub signer: bool,
    pub writable: bool,
    /// What the IDL says of it.
    pub docs: &'static str,
}

const fn role(
    (key, name, docs): (&'static str, &'static str, &'static str),
    signer: bool,
    writable: bool,
) -> AccountRole {
    AccountRole {
        key,
        name,
        signer,
        writable,
        docs,
    }
}

/// An account the instruction reads: (key, name, docs).
const fn read(a: (&'static str, &'static str, &'static str)) -> AccountRole {
    role(a, false, false)
}

/// An account the instruction writes.
const fn write(a: (&'static str, &'static str, &'static str)) -> AccountRole {
    role(a, false, true)
}

/// A signer the instruction only reads.
const fn sign(a: (&'static str, &'static str, &'static str)) -> AccountRole {
    role(a, true, false)
}

/// A signer the instruction writes (a new account, or one paid back).
const fn sign_write(a: (&'static str, &'static str, &'static str)) -> AccountRole {
    role(a, true, true)
}

/// A new account's docs: created by System `create_account` for the
/// program with exactly its size, still zero, and signing.
macro_rules! new_account {
    ($what:literal, $size:literal) => {
        concat!(
            "The ",
            $what,
            " (new: created for the program with exactly its size, all zero, and signing; ",
            $size,
            ")."
        )
    };
}

const OWNER: (&str, &str, &str) = ("owner", "owner", "The model's owner.");
const MODEL: (&str, &str, &str) = ("model", "model", "The model.");
const SECTION_ZERO: (&str, &str, &str) = (
    "sectionZero",
    "section zero's weight account",
    "Section zero's weight account.",
);
const CONFIG: (&str, &str, &str) = ("config", "config", "The config account.");
const ADMIN: (&str, &str, &str) = ("admin", "admin", "The config's admin.");

/// `init_config`. The config is new: created for the program (System
/// `create_account`, owned by it, exactly `config::LEN` bytes), still zero,
/// and signing; so is every account marked new below.
pub const INIT_CONFIG: [AccountRole; 2] = [
    sign_write((
        "config",
        "config",
        new_account!("config account", "128 bytes"),
    )),
    sign(("admin", "admin", "The admin.")),
];
/// `set_allowance`.
pub const SET_ALLOWANCE: [AccountRole; 2] = [write(CONFIG), sign(ADMIN)];
/// `set_admin`: both admins sign.
pub const SET_ADMIN: [AccountRole; 3] = [
    write(CONFIG),
    sign(ADMIN),
    sign(("newAdmin", "new admin", "The new admin.")),
];
/// `init_model`. The model is new, `model::len(sections)` bytes.
pub const INIT_MODEL: [AccountRole; 3] = [
    read((
        "config",
        "config account",
        "The config account the model binds to.",
    )),
    sign_write((
        "model",
        "model",
        new_account!("model account", "160 + 72 x sections bytes"),
    )),
    sign(OWNER),
];
/// `bind_weight`. The weight account is new, `weight::HEADER_LEN` plus the
/// section's length.
pub const BIND_WEIGHT: [AccountRole; 3] = [
    write(MODEL),
    sign_write((
        "weight",
        "weight",
        new_account!("weight account", "128 + the section's length"),
    )),
    sign(OWNER),
];
const SECTION_WEIGHT: (&str, &str, &str) = ("weight", "weight", "The section's weight account.");
/// `write`.
pub const WRITE: [AccountRole; 3] = [
    read(("model", "model", "The model, being written.")),
    write(SECTION_WEIGHT),
    sign(OWNER),
];
/// `seal_section`.
pub const SEAL_SECTION: [AccountRole; 3] = [write(MODEL), write(SECTION_WEIGHT), sign(OWNER)];
/// `seal_model`.
pub const SEAL_MODEL: [AccountRole; 3] = [write(MODEL), read(SECTION_ZERO), sign(OWNER)];
const OWNER_PAID: (&str, &str, &str) = (
    "owner",
    "owner",
    "The model's owner, who receives the lamports.",
);
/// `close_weight`: the owner receives the weight account's lamports.
pub const CLOSE_WEIGHT: [AccountRole; 3] = [
    write(MODEL),
    write(("weight", "weight", "The weight account to close.")),
    sign_write(OWNER_PAID),
];
/// `close_model`: the owner receives the model's lamports.
pub const CLOSE_MODEL: [AccountRole; 2] = [write(MODEL), sign_write(OWNER_PAID)];
const RUN_CONFIG: (&str, &str, &str) = ("config", "config account", "The model's config account.");
/// `open_run`. The run is new, `run::HEADER_LEN` plus `state_size` bytes.
pub const OPEN_RUN: [AccountRole; 4] = [
    read(RUN_CONFIG),
    read((
        "model",
        "model",
        "The model, sealed and bound to that config.",
    )),
    sign_write((
        "run",
        "run",
        "The run account (new: created for the program with exactly its size, all zero, \
         and signing, except for a staged prompt from offset 384; 256 + state_size bytes).",
    )),
    sign((
        "opener",
        "opener",
        "Who opens and funds the run (not the run).",
    )),
];
/// `turn`: anyone may send it; the model's owner receives the royalties and
/// the sender, who signs as the cranker, the crank fee. Then the weight
/// accounts of the matrix sections the turn's plan names, read only: none,
/// one or two (`TURN_WEIGHT`).
pub const TURN: [AccountRole; 6] = [
    read(RUN_CONFIG),
    read(("model", "model", "The model (sealed).")),
    write(("run", "run", "The run.")),
    write((
        "owner",
        "the model's owner",
        "The model's owner, who receives the royalties.",
    )),
    read(SECTION_ZERO),
    sign_write((
        "cranker",
        "cranker",
        "Who sends the turn and receives its crank fee: a System account (a wallet); \
         when a fee is due, rent-exempt and not the owner.",
    )),
];
/// Each of the turn's trailing weight accounts.
pub const TURN_WEIGHT: AccountRole = read((
    "weights",
    "a weight account the turn's plan names",
    "The weight accounts of the matrix sections the turn's plan names (`plan_turn`): \
     none, one or two, in any order.",
));
/// `close_run`: the opener receives the run's lamports.
pub const CLOSE_RUN: [AccountRole; 2] = [
    write(("run", "run", "The run.")),
    sign_write((
        "opener",
        "opener",
        "The run's opener, who receives the lamports.",
    )),
];
/// `reclaim`: an account created for the program and never initialized
/// signs for itself; the recipient receives its lamports.
pub const RECLAIM: [AccountRole; 2] = [
    sign_write((
        "account",
        "account",
        "The account (owned by the program, still zero), signing for itself.",
    )),
    write((
        "recipient",
        "recipient",
        "Who receives the lamports (not the account).",
    )),
];
/// `write_prompt`: the run is created for the program and not opened yet.
pub const WRITE_PROMPT: [AccountRole; 1] = [sign_write((
    "run",
    "run",
    "The run account: created for the program, not yet opened, signing for itself.",
))];

/// `close_config`: the admin receives the config's lamports.
pub const CLOSE_CONFIG: [AccountRole; 2] = [
    write(CONFIG),
    sign_write((
        "admin",
        "admin",
        "The config's admin, who receives the lamports.",
    )),
];
/// `deliver`: anyone sends it once the run is finished and receives the
/// delivery fee; the callback's refund address receives the rest of the
/// run's lamports. Then the callback's accounts (`DELIVER_CALLBACK`).
pub const DELIVER: [AccountRole; 4] = [
    write((
        "run",
        "run",
        "The run, finished, with a callback; closed by the delivery.",
    )),
    write((
        "refund",
        "refund",
        "The callback's refund address, which receives the run's lamports but the delivery fee.",
    )),
    sign_write((
        "deliverer",
        "deliverer",
        "Who sends the delivery and receives its fee: a System account (a wallet), \
         none of the callback's accounts; rent-exempt when a fee is due.",
    )),
    read((
        "callbackProgram",
        "callback program",
        "The program the run's callback names.",
    )),
];
/// Each of the delivery's trailing accounts.
pub const DELIVER_CALLBACK: AccountRole = read((
    "callbackAccounts",
    "an account the callback names",
    "The accounts the run's callback names, in its order, each writable where the record says so.",
));

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
        tag::CLOSE_CONFIG => &CLOSE_CONFIG,
        tag::DELIVER => &DELIVER,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_has_its_table() {
        for t in 0..=tag::LAST {
            let roles = of(t).unwrap_or_else(|| panic!("tag {t}"));
            assert!(!roles.is_empty(), "tag {t}");
        }
        assert_eq!(of(tag::LAST + 1), None);
        // A new account signs and is written; so is every account paid back.
        assert!(INIT_CONFIG[0].signer && INIT_CONFIG[0].writable);
        // Anyone may send a turn: its one signer is whoever sends it.
        assert_eq!(TURN.iter().filter(|r| r.signer).count(), 1);
        const { assert!(!TURN_WEIGHT.signer && !TURN_WEIGHT.writable) };
    }
}
