//! The tokenizer stored in section zero: lookup, the three tokenizing phases
//! of a run (open, characters, merges) and decoding a token to text. It
//! follows llama2.c's `encode` and `decode` exactly.

use core::cmp::Ordering;

use crate::format::{read_u32, Metadata};
use crate::planner::{ChunkKind, Probe};
pub use crate::state::NO_TOKEN;
use crate::state::{Header, Phase};
use crate::Error;

/// The opening token.
pub const BOS: u32 = 1;
/// The closing token.
pub const EOS: u32 = 2;
/// Byte fallback: byte `b` is token `b + 3`.
pub const BYTE_TOKEN_OFFSET: u32 = 3;
/// The score key of llama2.c's starting best score, -1e10: a merge must
/// score strictly above it.
pub const MERGE_FLOOR_KEY: u32 = !0xD015_02F9;

/// Compares `t` with the concatenation `a ++ b`, bytewise as `strcmp` does.
#[inline(always)]
fn cmp_joined(t: &[u8], a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(t.len());
    match t[..n].cmp(&a[..n]) {
        Ordering::Equal if t.len() < a.len() => Ordering::Less,
        Ordering::Equal => t[n..].cmp(b),
        other => other,
    }
}

impl<'a> Metadata<'a> {
    /// A token's bytes; empty for an id out of range.
    #[inline(always)]
    pub fn token(&self, id: u32) -> &'a [u8] {
        if id >= self.config.vocab_size {
            return &[];
        }
        let at = self.token_offsets + 4 * id as usize;
        let start = read_u32(self.bytes, at) as usize;
        let end = read_u32(self.bytes, at + 4) as usize;
        if start > end || end > self.token_bytes_len {
            return &[];
        }
        &self.bytes[self.token_bytes + start..self.token_bytes + end]
    }

    /// A token's score key: a `u32` that sorts as the float score does.
    #[inline]
    pub fn score_key(&self, id: u32) -> u32 {
        read_u32(self.bytes, self.token_scores + 4 * id as usize)
    }

    /// The id of the token whose bytes are `a ++ b`, or `NO_TOKEN`: a binary
    /// search over the ids sorted by their bytes. Always an id in the
    /// vocabulary or `NO_TOKEN`, whatever section zero holds.
    pub fn lookup_joined(&self, a: &[u8], b: &[u8]) -> u32 {
        if a.len() + b.len() > self.max_token_len as usize {
            return NO_TOKEN;
        }
        let (mut lo, mut hi) = (0usize, self.config.vocab_size as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let id = read_u32(self.bytes, self.token_sorted + 4 * mid);
            match cmp_joined(self.token(id), a, b) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                // An id past the vocabulary reads as the empty token: only
                // a tokenizer that does not check holds one.
                Ordering::Equal if id >= self.config.vocab_size => return NO_TOKEN,
                Ordering::Equal => return id,
            }
        }
        NO_TOKEN
    }

    /// The id of the token whose bytes are `text`, or `NO_TOKEN`.
    #[inline]
    pub fn lookup(&self, text: &[u8]) -> u32 {
        self.lookup_joined(text, &[])
    }

    /// Checks the whole tokenizer: offsets in order and in bounds, every
    /// token at most `max_token_len` bytes, and the sorted ids a strictly
    /// increasing order of distinct tokens. Linear in the vocabulary, so it
    /// runs at conversion, at sealing and when a tool loads an artifact, not
    /// in every turn.
    pub fn check_tokenizer(&self) -> Result<(), Error> {
        let vocab = self.config.vocab_size;
        let mut previous_end = 0u32;
        for id in 0..vocab {
            let at = self.token_offsets + 4 * id as usize;
            let (start, end) = (read_u32(self.bytes, at), read_u32(self.bytes, at + 4));
            if start != previous_end || end < start || end as usize > self.token_bytes_len {
                return Err(Error::InvalidFormat);
            }
            if end - start > self.max_token_len {
                return Err(Error::InvalidFormat);
            }
            previous_end = end;
        }
        let mut seen_previous: Option<u32> = None;
        for i in 0..vocab as usize {
            let id = read_u32(self.bytes, self.token_sorted + 4 * i);
            if id >= vocab {
                return Err(Error::InvalidFormat);
            }
            if let Some(prev) = seen_previous {
                if self.token(prev) >= self.token(id) {
                    return Err(Error::InvalidFormat);
                }
            }
            seen_previous = Some(id);
        }
        Ok(())
    }

    /// Appends the text of `id`, sampled after `previous`, to `out`, and
    /// returns the count of bytes written: llama2.c's `decode`. A leading
    /// space is dropped right after the opening token, `<0xXX>` is that one
    /// byte, and tokens 1 and 2 have no text.
    pub fn decode_into(&self, previous: u32, id: u32, out: &mut [u8]) -> usize {
        if id == BOS || id == EOS {
            return 0;
        }
        let mut piece = self.token(id);
        if previous == BOS && piece.first() == Some(&b' ') {
            piece = &piece[1..];
        }
        if let Some(byte) = hex_byte_token(piece) {
            if let Some(slot) = out.first_mut() {
                *slot = byte;
                return 1;
            }
            return 0;
        }
        let n = piece.len().min(out.len());
        out[..n].copy_from_slice(&piece[..n]);
        n
    }
}

/// The byte of a token written `<0xXX>` (either case of hex digit).
fn hex_byte_token(piece: &[u8]) -> Option<u8> {
    if piece.len() != 6 || &piece[..3] != b"<0x" || piece[5] != b'>' {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    Some(digit(piece[3])? << 4 | digit(piece[4])?)
}

/// The byte length of the character starting at `at`: its lead byte and up
/// to three continuation bytes, as llama2.c groups them.
#[inline]
fn character_len(prompt: &[u8], at: usize) -> usize {
    let mut len = 1;
    while len < 4 && at + len < prompt.len() && prompt[at + len] & 0xC0 == 0x80 {
        len += 1;
    }
    len
}

/// The tokenizing part of a turn: phases 0 to 2, chunk by chunk, each chunk
/// charged from the planner's table with the byte lengths it really looks
/// up. Returns the compute units charged; stops at the first chunk that does
/// not fit `left`, and after the chunk that finishes tokenizing.
pub(crate) fn tokenize<P: Probe>(
    m: &Metadata,
    h: &mut Header,
    (prompt, tokens): (&[u8], &mut [u32]),
    left: u32,
    probe: &mut P,
) -> Result<u32, Error> {
    let ch = crate::planner::charges_of(m.config.charges);
    let vocab = m.config.vocab_size;
    let mut used = 0u32;
    probe.begin();
    loop {
        let phase = h.phase;
        let fits = |cost: u32| used + cost + ch.chunk <= left;
        match h.phase {
            Phase::Open => {
                let cost = ch.tokenizer_step
                    + if prompt.is_empty() {
                        0
                    } else {
                        ch.lookup(vocab, 1)
                    };
                if !fits(cost) {
                    break;
                }
                tokens[0] = BOS;
                h.prompt_tokens = 1;
                if !prompt.is_empty() {
                    let space = m.lookup(b" ");
                    tokens[1] = if space == NO_TOKEN {
                        b' ' as u32 + BYTE_TOKEN_OFFSET
                    } else {
                        space
                    };
                    h.prompt_tokens = 2;
                }
                h.tok_byte = 0;
                h.phase = Phase::Characters;
                used += cost + ch.chunk;
                probe.chunk(|| (ChunkKind::new(phase, ChunkKind::STEP), 1, cost + ch.chunk));
            }
            Phase::Characters if (h.tok_byte as usize) < prompt.len() => {
                let at = h.tok_byte as usize;
                let len = character_len(prompt, at);
                let cost = ch.lookup(vocab, len);
                if !fits(cost) {
                    break;
                }
                let character = &prompt[at..at + len];
                let id = m.lookup(character);
                if id != NO_TOKEN {
                    tokens[h.prompt_tokens as usize] = id;
                    h.prompt_tokens += 1;
                } else {
                    for &b in character {
                        tokens[h.prompt_tokens as usize] = b as u32 + BYTE_TOKEN_OFFSET;
                        h.prompt_tokens += 1;
                    }
                }
                h.tok_byte += len as u32;
                used += cost + ch.chunk;
                probe.chunk(|| (ChunkKind::new(phase, ChunkKind::LOOKUP), 1, cost + ch.chunk));
            }
            Phase::Characters => {
                if !fits(ch.tokenizer_step) {
                    break;
                }
                h.phase = Phase::Merges;
                start_merge_scan(h);
                used += ch.tokenizer_step + ch.chunk;
                let kind = ChunkKind::new(phase, ChunkKind::STEP);
                probe.chunk(|| (kind, 1, ch.tokenizer_step + ch.chunk));
            }
            _ if h.tok_pair + 1 < h.prompt_tokens => {
                let i = h.tok_pair as usize;
                let (a, b) = (m.token(tokens[i]), m.token(tokens[i + 1]));
                let cost = ch.lookup(vocab, a.len() + b.len());
                if !fits(cost) {
                    break;
                }
                let id = m.lookup_joined(a, b);
                if id != NO_TOKEN && m.score_key(id) > h.tok_best_key {
                    h.tok_best_pos = h.tok_pair;
                    h.tok_best_key = m.score_key(id);
                    h.tok_best_id = id;
                }
                h.tok_pair += 1;
                used += cost + ch.chunk;
                probe.chunk(|| (ChunkKind::new(phase, ChunkKind::LOOKUP), 1, cost + ch.chunk));
            }
            _ if h.tok_best_id != NO_TOKEN => {
                let n = h.prompt_tokens as usize;
                let cost = ch.merge.of(n as u32);
                if !fits(cost) {
                    break;
                }
                let at = h.tok_best_pos as usize;
                tokens[at] = h.tok_best_id;
                tokens.copy_within(at + 2..n, at + 1);
                tokens[n - 1] = 0;
                h.prompt_tokens -= 1;
                start_merge_scan(h);
                used += cost + ch.chunk;
                probe.chunk(|| (ChunkKind::new(phase, ChunkKind::MERGE), 1, cost + ch.chunk));
            }
            _ => {
                if !fits(ch.tokenizer_step) {
                    break;
                }
                // The first token becomes the current one: in the
                // vocabulary, as the embedding checks every prompt token
                // (a lookup in a malformed tokenizer can give any id).
                if tokens[0] >= m.config.vocab_size {
                    return Err(Error::InvalidState);
                }
                // A prompt whose tokens alone pass the context completes
                // here, with no token generated and the cursor where the
                // first embedding would be (`docs/state.md`, "The cursor").
                h.phase = if h.prompt_tokens > m.config.seq_len {
                    Phase::Done
                } else {
                    Phase::Embedding
                };
                h.position = 0;
                h.layer = 0;
                h.row = 0;
                h.token = tokens[0];
                used += ch.tokenizer_step + ch.chunk;
                let kind = ChunkKind::new(phase, ChunkKind::STEP);
                probe.chunk(|| (kind, 1, ch.tokenizer_step + ch.chunk));
                break;
            }
        }
    }
    Ok(used)
}

fn start_merge_scan(h: &mut Header) {
    h.tok_pair = 0;
    h.tok_best_pos = 0;
    h.tok_best_key = MERGE_FLOOR_KEY;
    h.tok_best_id = NO_TOKEN;
}
