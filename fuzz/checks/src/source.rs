//! The fuzz input as a source of choices: every target draws its structure
//! (which model, which action, which field to change) from the bytes, so
//! libFuzzer's mutations of a few bytes move whole steps. Past the end of
//! the input every draw is zero, so every input decodes to something, and a
//! zero draw takes the common path (`one_in` is false, `below` the first
//! choice), so short inputs mostly do the right thing.

/// Draws little-endian integers, choices and byte strings from an input.
pub struct Source<'a> {
    data: &'a [u8],
}

impl<'a> Source<'a> {
    pub fn new(data: &'a [u8]) -> Source<'a> {
        Source { data }
    }

    /// The next `n` bytes, or fewer where the input ends.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.bytes(self.data.len())
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes not drawn yet.
    pub fn remaining(&self) -> usize {
        self.data.len()
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let b = self.bytes(N);
        out[..b.len()].copy_from_slice(b);
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// A choice among `n` (0 when `n` is 0), from one byte when `n` fits
    /// one, so a one-byte mutation changes one choice.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        if n <= 256 {
            self.u8() as usize % n
        } else if n <= 65_536 {
            self.u16() as usize % n
        } else {
            self.u32() as usize % n
        }
    }

    /// True about once in `n` draws, and false for a zero byte (so an input
    /// of zeros, or one that ran out, takes the common path).
    pub fn one_in(&mut self, n: u8) -> bool {
        let n = n.max(1);
        self.u8() % n == n - 1
    }

    /// A byte string of at most `max` bytes, its length drawn first.
    pub fn string(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max + 1);
        self.bytes(n)
    }
}
