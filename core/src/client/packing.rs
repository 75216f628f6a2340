//! Fitting Curta's instructions into transactions of at most 1,232 bytes:
//! a message's size on the wire, computed from its shape, and the plans
//! built on it (how many weight bytes a `write` carries; how an opening
//! stages a prompt too long for one transaction). The clients build the
//! instructions the plans name; both message versions are sized (a version
//! 0 message, `@solana/kit`'s, is two bytes longer than a legacy one).

use std::vec::Vec;

/// The most bytes a transaction may take on the wire.
pub const PACKET_DATA_SIZE: usize = 1232;

/// A transaction message's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Legacy,
    /// Version 0, with no address lookup table.
    V0,
}

/// What a transaction's size depends on: its signatures, its distinct
/// account keys (programs included) and each instruction's account count
/// and data length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub signers: usize,
    pub keys: usize,
    /// (accounts, data bytes) of each instruction.
    pub instructions: Vec<(usize, usize)>,
}

/// The bytes of a length in the wire's compact-u16 form.
fn compact(n: usize) -> usize {
    match n {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => 3,
    }
}

/// The transaction's size on the wire, signatures included.
pub fn size(version: Version, s: &Shape) -> usize {
    let instructions: usize = s
        .instructions
        .iter()
        .map(|&(accounts, data)| 1 + compact(accounts) + accounts + compact(data) + data)
        .sum();
    let message =
        3 + compact(s.keys) + 32 * s.keys + 32 + compact(s.instructions.len()) + instructions;
    let versioned = match version {
        Version::Legacy => 0,
        // The version prefix, and an empty list of lookup tables.
        Version::V0 => 2,
    };
    compact(s.signers) + 64 * s.signers + message + versioned
}

/// System `create_account`'s data: a u32 tag, lamports, space and owner.
const CREATE_ACCOUNT_DATA: usize = 4 + 8 + 8 + 32;
/// `write`'s data before its bytes: the tag and the offset.
const WRITE_DATA: usize = 1 + 8;
/// `write_prompt`'s data before its bytes: the tag and the offset.
const WRITE_PROMPT_DATA: usize = 1 + 4;
/// `open_run`'s data before the prompt's bytes.
const OPEN_RUN_DATA: usize = 1 + crate::protocol::OPEN_RUN_FIXED_LEN;

/// The most bytes of `len` that fit when `shape(n)` is the transaction
/// carrying `n` of them (its size grows with `n`).
fn most_that_fit(version: Version, len: usize, shape: impl Fn(usize) -> Shape) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if size(version, &shape(mid)) <= PACKET_DATA_SIZE {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The most weight bytes one `write` transaction carries, the model's
/// owner paying (its one signer): 986 in a legacy message, 984 in a
/// version 0 one. Keys: the owner, the model, the weight account, the
/// program.
pub fn write_chunk(version: Version) -> usize {
    most_that_fit(version, crate::protocol::MAX_ACCOUNT_LEN, |n| Shape {
        signers: 1,
        keys: 4,
        instructions: std::vec![(3, WRITE_DATA + n)],
    })
}

/// One transaction of an opening: the account's creation (with the
/// payer's System `create_account`), then either prompt bytes staged
/// (`write_prompt` of `stage`, a range of the prompt) or the opening with
/// the prompt's bytes from `staged` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenStep {
    pub create: bool,
    pub stage: Option<core::ops::Range<usize>>,
    /// The opening, given the count of bytes staged before it.
    pub open: Option<usize>,
}

/// The transactions that open a run with a prompt of `prompt_len` bytes:
/// the creation (when `create`) and the opening together when the prompt
/// fits, else the creation with the prompt's first part staged, more
/// staging if needed, and the opening with the rest. `opener_is_payer`:
/// the opener signs as the fee payer (one signature and key fewer).
pub fn open_steps(
    version: Version,
    prompt_len: usize,
    create: bool,
    opener_is_payer: bool,
) -> Vec<OpenStep> {
    let opener = usize::from(!opener_is_payer);
    // The payer, the run, the program; the System program with a creation.
    let base_keys = |create: bool| 3 + usize::from(create);
    let creation = |create: bool| {
        create
            .then_some((2, CREATE_ACCOUNT_DATA))
            .into_iter()
            .collect::<Vec<_>>()
    };
    // The opening: the config and the model too, and the opener.
    let opening = |create: bool, rest: usize| {
        let mut instructions = creation(create);
        instructions.push((4, OPEN_RUN_DATA + rest));
        Shape {
            signers: 2 + opener,
            keys: base_keys(create) + 2 + opener,
            instructions,
        }
    };
    let staging = |create: bool, n: usize| {
        let mut instructions = creation(create);
        instructions.push((1, WRITE_PROMPT_DATA + n));
        Shape {
            signers: 2,
            keys: base_keys(create),
            instructions,
        }
    };
    let fits = |s: &Shape| size(version, s) <= PACKET_DATA_SIZE;
    let mut out = Vec::new();
    let (mut staged, mut first) = (0, create);
    while !fits(&opening(first, prompt_len - staged)) {
        let n = most_that_fit(version, prompt_len - staged, |n| staging(first, n));
        if n == 0 {
            break;
        }
        out.push(OpenStep {
            create: first,
            stage: Some(staged..staged + n),
            open: None,
        });
        first = false;
        staged += n;
    }
    out.push(OpenStep {
        create: first,
        stage: None,
        open: Some(staged),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures `docs/program.md` gives.
    #[test]
    fn documented_sizes() {
        assert_eq!(write_chunk(Version::Legacy), 986);
        assert_eq!(write_chunk(Version::V0), 984);
        // Created and opened together: prompts up to 720 bytes with the
        // opener paying, 624 when another account pays (legacy).
        for (opener_is_payer, most) in [(true, 720), (false, 624)] {
            let steps = open_steps(Version::Legacy, most, true, opener_is_payer);
            assert_eq!(steps.len(), 1, "{most}");
            let steps = open_steps(Version::Legacy, most + 1, true, opener_is_payer);
            assert_eq!(steps.len(), 2, "{}", most + 1);
        }
        assert_eq!(open_steps(Version::V0, 718, true, true).len(), 1);
        assert_eq!(open_steps(Version::V0, 719, true, true).len(), 2);
    }

    #[test]
    fn long_prompts_are_staged_and_the_parts_make_the_prompt() {
        for version in [Version::Legacy, Version::V0] {
            for len in [0, 16, 748, 749, 1000, 1024] {
                for create in [true, false] {
                    let steps = open_steps(version, len, create, true);
                    let mut next = 0;
                    for (i, s) in steps.iter().enumerate() {
                        assert_eq!(s.create, create && i == 0, "{len}");
                        if let Some(r) = &s.stage {
                            assert_eq!(r.start, next);
                            next = r.end;
                        }
                    }
                    let last = steps.last().unwrap();
                    assert_eq!(last.open, Some(next), "{len}: the opening takes the rest");
                    assert!(steps.len() <= 2, "{len}: at most one staging");
                }
            }
        }
    }
}
