//! The storyteller's instructions: the first byte of the data is the tag.
//! A client encodes `request`'s data with `Request::encode_into`;
//! `fulfill`, `cancel` and `receive` are their tag alone.

use curta_interface::bytes::{read_u32, read_u64};

pub const REQUEST: u8 = 0;
pub const FULFILL: u8 = 1;
pub const CANCEL: u8 = 2;
/// The callback Curta's `deliver` sends once the run is finished.
pub const RECEIVE: u8 = 3;

/// The compute units `receive` asks its deliverer for (646 on the SBF VM
/// for a 4-token story; the copy grows with the text).
pub const RECEIVE_CU: u32 = 4_000;
/// The length of the callback record `request` names (three accounts and
/// the one-byte data of `receive`): a run account the user creates is
/// `curta_interface::run::account_size(.., CALLBACK_LEN)` bytes.
pub const CALLBACK_LEN: usize = curta_interface::callback::len(3, 1);

/// `request`'s data after the tag: the run's parameters as Curta's
/// `open_run` takes them (the prompt whole, none of it staged), the royalty
/// and model identity the user accepts, and the crank fee and its deposit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    pub max_tokens: u32,
    pub temperature_q16: u32,
    pub seed: u64,
    pub royalty: u64,
    pub model_identity: &'a [u8; 32],
    pub crank_fee: u64,
    pub crank_deposit: u64,
    /// What the run pays whoever delivers the story to `receive`.
    pub delivery_fee: u64,
    /// The rest of the data.
    pub prompt: &'a [u8],
}

/// The fields before the prompt.
pub const REQUEST_FIXED_LEN: usize = 4 + 4 + 8 + 8 + 32 + 8 + 8 + 8;

impl<'a> Request<'a> {
    /// Decodes the data after the tag; `None` when it is too short.
    #[inline(always)]
    pub fn decode(rest: &'a [u8]) -> Option<Self> {
        if rest.len() < REQUEST_FIXED_LEN {
            return None;
        }
        Some(Request {
            max_tokens: read_u32(rest, 0),
            temperature_q16: read_u32(rest, 4),
            seed: read_u64(rest, 8),
            royalty: read_u64(rest, 16),
            model_identity: rest[24..56].try_into().ok()?,
            crank_fee: read_u64(rest, 56),
            crank_deposit: read_u64(rest, 64),
            delivery_fee: read_u64(rest, 72),
            prompt: &rest[REQUEST_FIXED_LEN..],
        })
    }

    /// The whole instruction data, tag first (for clients).
    pub fn encode_into(&self, out: &mut [u8]) -> Option<usize> {
        let len = 1 + REQUEST_FIXED_LEN + self.prompt.len();
        let out = out.get_mut(..len)?;
        out[0] = REQUEST;
        out[1..5].copy_from_slice(&self.max_tokens.to_le_bytes());
        out[5..9].copy_from_slice(&self.temperature_q16.to_le_bytes());
        out[9..17].copy_from_slice(&self.seed.to_le_bytes());
        out[17..25].copy_from_slice(&self.royalty.to_le_bytes());
        out[25..57].copy_from_slice(self.model_identity);
        out[57..65].copy_from_slice(&self.crank_fee.to_le_bytes());
        out[65..73].copy_from_slice(&self.crank_deposit.to_le_bytes());
        out[73..81].copy_from_slice(&self.delivery_fee.to_le_bytes());
        out[81..].copy_from_slice(self.prompt);
        Some(len)
    }

    pub fn encoded_len(&self) -> usize {
        1 + REQUEST_FIXED_LEN + self.prompt.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips() {
        let identity = [7u8; 32];
        let r = Request {
            max_tokens: 12,
            temperature_q16: 52_429,
            seed: 9,
            royalty: 1_000,
            model_identity: &identity,
            crank_fee: 10_000,
            crank_deposit: 200_000,
            delivery_fee: 30_000,
            prompt: b"Once upon a time",
        };
        let mut out = [0u8; 128];
        let n = r.encode_into(&mut out).unwrap();
        assert_eq!(n, r.encoded_len());
        assert_eq!(out[0], REQUEST);
        assert_eq!(Request::decode(&out[1..n]), Some(r));
        assert_eq!(r.encode_into(&mut out[..n - 1]), None);
        assert_eq!(Request::decode(&out[1..REQUEST_FIXED_LEN]), None);
    }
}
