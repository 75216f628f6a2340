//! The request account (`STORYRQ1`), the storyteller's own, at the
//! program-derived address `[SEED, run address]`:
//!
//! | Offset | Type | Field |
//! |---|---|---|
//! | 0 | 8 bytes | Tag |
//! | 8 | 32 bytes | User: who asked and paid, and gets the lamports back |
//! | 40 | 32 bytes | Run: the Curta run the request opened |
//! | 72 | 32 bytes | The Curta program the run belongs to |
//! | 104 | 32 bytes | The model identity the user asked for |
//! | 136 | u8 | The address's bump seed |
//! | 137 | u8 | Fulfilled: 1 once `fulfill` has copied the text, else 0 |
//! | 138 | 2 bytes | Zero |
//! | 140 | u32 | Text length: 0 until `fulfill` |
//! | 144 | bytes | The text, once fulfilled |

use curta_interface::bytes::read_u32;
use curta_interface::Address;

pub const TAG: [u8; 8] = *b"STORYRQ1";
/// The first seed of a request's address; the run's address is the second.
pub const SEED: &[u8] = b"request";

pub const USER: usize = 8;
pub const RUN: usize = 40;
pub const CURTA_PROGRAM: usize = 72;
pub const MODEL_IDENTITY: usize = 104;
pub const BUMP: usize = 136;
pub const FULFILLED: usize = 137;
pub const TEXT_LEN: usize = 140;
pub const HEADER_LEN: usize = 144;

/// A view of a request account's data.
#[derive(Clone, Copy)]
pub struct Request<'a>(pub &'a [u8]);

#[inline(always)]
fn address(data: &[u8], at: usize) -> &Address {
    // `read` checked the data holds the header.
    data[at..at + 32].try_into().unwrap_or(&[0; 32])
}

impl<'a> Request<'a> {
    /// The data if it is a request: tagged, and at least its header long.
    #[inline(always)]
    pub fn read(data: &'a [u8]) -> Option<Self> {
        (data.len() >= HEADER_LEN && data[..8] == TAG).then_some(Self(data))
    }
    #[inline(always)]
    pub fn user(&self) -> &'a Address {
        address(self.0, USER)
    }
    #[inline(always)]
    pub fn run(&self) -> &'a Address {
        address(self.0, RUN)
    }
    #[inline(always)]
    pub fn curta_program(&self) -> &'a Address {
        address(self.0, CURTA_PROGRAM)
    }
    #[inline(always)]
    pub fn model_identity(&self) -> &'a Address {
        address(self.0, MODEL_IDENTITY)
    }
    #[inline(always)]
    pub fn bump(&self) -> u8 {
        self.0[BUMP]
    }
    /// Whether `fulfill` has copied the text in (and closed the run).
    #[inline(always)]
    pub fn fulfilled(&self) -> bool {
        self.0[FULFILLED] != 0
    }
    /// The story, once fulfilled (empty before).
    #[inline(always)]
    pub fn text(&self) -> &'a [u8] {
        let len = read_u32(self.0, TEXT_LEN) as usize;
        self.0.get(HEADER_LEN..HEADER_LEN + len).unwrap_or(&[])
    }
}

/// The bytes whose rent a new request holds: its header and the longest
/// text its run can write (128 bytes a token, at most the 10 KiB an
/// instruction may grow an account by), so `receive` can store the story
/// with no one paying more; what the text does not need goes back to the
/// user then.
pub const fn funded_len(max_tokens: u32) -> usize {
    let room = curta_interface::format::MAX_TOKEN_BYTES * max_tokens as usize;
    // pinocchio's MAX_PERMITTED_DATA_INCREASE, which the client half has not.
    const MAX_GROWTH: usize = 10 * 1024;
    HEADER_LEN + if room < MAX_GROWTH { room } else { MAX_GROWTH }
}

/// What `request` records.
pub struct RequestInit<'a> {
    pub user: &'a Address,
    pub run: &'a Address,
    pub curta_program: &'a Address,
    pub model_identity: &'a Address,
    pub bump: u8,
}

/// Writes every field of a new request's header (`HEADER_LEN` bytes).
#[inline(always)]
pub fn init(data: &mut [u8], r: &RequestInit) {
    let d = &mut data[..HEADER_LEN];
    d.fill(0);
    d[..8].copy_from_slice(&TAG);
    d[USER..USER + 32].copy_from_slice(r.user);
    d[RUN..RUN + 32].copy_from_slice(r.run);
    d[CURTA_PROGRAM..CURTA_PROGRAM + 32].copy_from_slice(r.curta_program);
    d[MODEL_IDENTITY..MODEL_IDENTITY + 32].copy_from_slice(r.model_identity);
    d[BUMP] = r.bump;
}

/// Writes the text after the header, its length, and marks the request
/// fulfilled; `data` is exactly `HEADER_LEN + text.len()` bytes.
#[inline(always)]
pub fn set_text(data: &mut [u8], text: &[u8]) {
    data[FULFILLED] = 1;
    data[TEXT_LEN..TEXT_LEN + 4].copy_from_slice(&(text.len() as u32).to_le_bytes());
    data[HEADER_LEN..].copy_from_slice(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_what_was_written() {
        let (user, run, curta, identity) = ([1u8; 32], [2u8; 32], [3u8; 32], [4u8; 32]);
        let mut data = [0xAAu8; HEADER_LEN + 5];
        init(
            &mut data,
            &RequestInit {
                user: &user,
                run: &run,
                curta_program: &curta,
                model_identity: &identity,
                bump: 254,
            },
        );
        let r = Request::read(&data[..HEADER_LEN]).unwrap();
        assert_eq!((r.user(), r.run()), (&user, &run));
        assert_eq!((r.curta_program(), r.model_identity()), (&curta, &identity));
        assert_eq!((r.bump(), r.text(), r.fulfilled()), (254, &b""[..], false));
        set_text(&mut data, b"hello");
        let r = Request::read(&data).unwrap();
        assert_eq!((r.text(), r.fulfilled()), (&b"hello"[..], true));
        assert!(Request::read(&data[..HEADER_LEN - 1]).is_none());
        data[0] = 0;
        assert!(Request::read(&data).is_none());
    }
}
