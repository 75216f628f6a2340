//! Where two states first differ, in words: the header field or the buffer
//! element the first differing byte falls in, and both values there. The
//! client reports a chain state that is not its replay's this way, the
//! harness its replays', and `@curta/sdk` through the WebAssembly export
//! `state_difference`.

use core::fmt;

use super::{field, StateLayout, HEADER_LEN};
use crate::bytes::read_u32;
use crate::format::Config;

/// Where a byte of a state falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A header field, by its name in `field::ALL`.
    Field(&'static str),
    /// An element of a buffer, by the buffer's name in `StateLayout::regions`.
    Element { buffer: &'static str, index: usize },
    /// Past the header of a state whose header gives no layout.
    Unparsed,
}

/// The first difference between two states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Difference {
    /// The states' lengths differ.
    Lengths { expected: usize, actual: usize },
    /// The first differing byte, where it falls, and the value of the
    /// field or element there in each state (`width` bytes, little-endian).
    Value {
        offset: usize,
        place: Place,
        width: usize,
        expected: u64,
        actual: u64,
    },
}

/// Where `offset` falls in `state`: the place, the start of its field or
/// element, and its width in bytes.
pub fn locate(config: &Config, state: &[u8], offset: usize) -> (Place, usize, usize) {
    if offset < HEADER_LEN {
        if let Some(&(name, at, width)) = field::ALL
            .iter()
            .find(|(_, at, width)| (*at..at + width).contains(&offset))
        {
            return (Place::Field(name), at, width);
        }
    }
    let layout = if state.len() >= HEADER_LEN {
        let prompt_len = read_u32(state, field::PROMPT_LEN) as usize;
        StateLayout::new(config, prompt_len, read_u32(state, field::MAX_TOKENS)).ok()
    } else {
        None
    };
    let Some(layout) = layout else {
        return (Place::Unparsed, offset, 1);
    };
    let regions = layout.regions();
    let Some(region) = regions.iter().rev().find(|r| r.start <= offset) else {
        return (Place::Unparsed, offset, 1);
    };
    let index = (offset - region.start) / region.element;
    let place = Place::Element {
        buffer: region.name,
        index,
    };
    (place, region.start + index * region.element, region.element)
}

/// The first difference between `expected` and `actual`, or `None` for
/// equal states.
pub fn first_difference(config: &Config, expected: &[u8], actual: &[u8]) -> Option<Difference> {
    if expected.len() != actual.len() {
        return Some(Difference::Lengths {
            expected: expected.len(),
            actual: actual.len(),
        });
    }
    let offset = expected.iter().zip(actual).position(|(a, b)| a != b)?;
    let (place, start, width) = locate(config, expected, offset);
    let value = |state: &[u8]| {
        let mut word = [0u8; 8];
        let bytes = &state[start..(start + width).min(state.len())];
        word[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(word)
    };
    Some(Difference::Value {
        offset,
        place,
        width,
        expected: value(expected),
        actual: value(actual),
    })
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Place::Field(name) => write!(f, "header field {name}"),
            Place::Element { buffer, index } => write!(f, "buffer {buffer}, element {index}"),
            Place::Unparsed => f.write_str("somewhere in a state whose header does not parse"),
        }
    }
}

/// A value of `width` bytes: signed, then its bits in hexadecimal.
struct Shown(u64, usize);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let Shown(raw, width) = *self;
        match width {
            8 => write!(f, "{} (0x{raw:016x})", raw as i64),
            4 => write!(f, "{} (0x{:08x})", raw as u32 as i32, raw as u32),
            _ => write!(f, "{raw} (0x{raw:02x})"),
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            Difference::Lengths { expected, actual } => {
                write!(f, "state lengths differ: expected {expected}, got {actual}")
            }
            Difference::Value {
                offset,
                place,
                width,
                expected,
                actual,
            } => write!(
                f,
                "first difference at offset {offset}: {place}: expected {}, got {}",
                Shown(expected, width),
                Shown(actual, width)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::TINY;
    use crate::inference::init_state;
    use crate::state::StateBuffer;

    #[test]
    fn a_difference_is_named_by_the_header_and_the_layout() {
        let mut a = StateBuffer::new(crate::state_size(TINY, 2, 4).unwrap());
        init_state(TINY, &mut a, b"ab", 4, 0, 0).unwrap();
        assert_eq!(first_difference(&TINY, &a, &a), None);
        let mut b = a.to_vec();
        b[field::TURNS] = 7;
        assert_eq!(
            first_difference(&TINY, &a, &b).unwrap().to_string(),
            "first difference at offset 80: header field turns: expected 0 \
             (0x0000000000000000), got 7 (0x0000000000000007)"
        );
        let mut c = a.to_vec();
        c[field::POSITION] = 7;
        assert_eq!(
            first_difference(&TINY, &a, &c).unwrap().to_string(),
            "first difference at offset 20: header field position: expected 0 \
             (0x00000000), got 7 (0x00000007)"
        );
        let values = StateLayout::new(&TINY, 2, 4).unwrap().values;
        let mut d = a.to_vec();
        d[values + 4 * 3 + 1] = 1;
        assert_eq!(
            first_difference(&TINY, &a, &d),
            Some(Difference::Value {
                offset: values + 13,
                place: Place::Element {
                    buffer: "values",
                    index: 3
                },
                width: 4,
                expected: 0,
                actual: 256,
            })
        );
        assert_eq!(
            first_difference(&TINY, &a, &a[..100]).unwrap().to_string(),
            format!("state lengths differ: expected {}, got 100", a.len())
        );
        // Past the header of a state whose header gives no layout.
        let mut e = a.to_vec();
        e[field::MAX_TOKENS] = 0;
        let mut f = e.clone();
        f[200] = 1;
        assert_eq!(locate(&TINY, &e, 200), (Place::Unparsed, 200, 1));
        assert!(first_difference(&TINY, &e, &f)
            .unwrap()
            .to_string()
            .contains("somewhere in a state whose header does not parse"));
    }

    #[test]
    fn every_byte_of_the_header_is_a_field() {
        let mut at = 0;
        for (name, offset, width) in field::ALL {
            assert_eq!(offset, at, "{name}");
            at += width;
        }
        assert_eq!(at, HEADER_LEN);
    }
}
