//! Each instruction's tag: its data's first byte.

pub const INIT_CONFIG: u8 = 0;
pub const SET_ALLOWANCE: u8 = 1;
pub const SET_ADMIN: u8 = 2;
pub const INIT_MODEL: u8 = 3;
pub const BIND_WEIGHT: u8 = 4;
pub const WRITE: u8 = 5;
pub const SEAL_SECTION: u8 = 6;
pub const SEAL_MODEL: u8 = 7;
pub const CLOSE_WEIGHT: u8 = 8;
pub const CLOSE_MODEL: u8 = 9;
pub const OPEN_RUN: u8 = 10;
pub const TURN: u8 = 11;
pub const CLOSE_RUN: u8 = 12;
pub const RECLAIM: u8 = 13;
pub const WRITE_PROMPT: u8 = 14;
pub const CLOSE_CONFIG: u8 = 15;
pub const DELIVER: u8 = 16;
/// The last tag.
pub const LAST: u8 = DELIVER;
