//! The row kernel, the forward pass's hot loop, and the tiled weight layout
//! it reads.
//!
//! A matrix's weight bytes are stored in tiles of four rows: within a tile,
//! each block of eight columns holds the four rows' eight bytes one row after
//! the other, and the last `cols mod 8` columns follow as four short rows. A
//! last tile of fewer rows has the same shape with its own row count. The
//! kernel then walks one pointer through a tile, reading every weight at a
//! fixed offset from it: on SBF that is a byte load, a multiply and an add
//! per weight, with one load of `x` per column shared by four rows.
//!
//! This module holds what every target shares: the layout, the walk over a
//! chunk's rows and tiles, and the checks before each primitive. The
//! primitives themselves (the inner loops) have two backends with one
//! interface: `portable` (plain Rust, the reference every target's results
//! equal) and `sbf` (hand-scheduled inline assembly). The choice is made
//! here, once.

// On SBF only the fallbacks the assembly needs are called.
#[cfg_attr(sbf, allow(dead_code))]
mod portable;
#[cfg(sbf)]
mod sbf;

// The one place the backend is chosen: SBF always takes the assembly (LLVM's
// own loops cost more than the planner charges), every other target the
// portable loops.
#[cfg(not(sbf))]
use portable as backend;
#[cfg(sbf)]
use sbf as backend;

#[cfg(all(sbf, not(any(target_arch = "bpf", target_arch = "sbf"))))]
compile_error!(
    "an SBF target whose architecture is neither bpf nor sbf: the row kernel's \
     assembly is written for those two, and LLVM's own loop costs more than the \
     planner charges"
);

/// The portable form of the tile kernel, which every target's result equals.
pub use portable::dot_blocks as dot_blocks_portable;

/// Rows per tile.
pub const TILE_ROWS: usize = 4;
/// Columns per block.
pub const BLOCK_COLS: usize = 8;

/// Where weight `(r, j)` of a `rows x cols` matrix sits among its bytes.
#[inline(always)]
pub fn tiled_index(rows: usize, cols: usize, r: usize, j: usize) -> usize {
    let tile = r / TILE_ROWS;
    let in_tile = (rows - tile * TILE_ROWS).min(TILE_ROWS);
    let row = r % TILE_ROWS;
    let full = cols - cols % BLOCK_COLS;
    let base = tile * TILE_ROWS * cols;
    if j < full {
        base + (j / BLOCK_COLS) * in_tile * BLOCK_COLS + row * BLOCK_COLS + j % BLOCK_COLS
    } else {
        base + full * in_tile + row * (cols - full) + (j - full)
    }
}

/// Calls `f(j, byte)` for every column `j` of row `r`, in order: the
/// embedding's row lookup, walking the tiles without an index per weight.
#[inline(always)]
pub fn for_row(weights: &[u8], rows: usize, cols: usize, r: usize, mut f: impl FnMut(usize, u8)) {
    let tile = r / TILE_ROWS;
    let in_tile = (rows - tile * TILE_ROWS).min(TILE_ROWS);
    let row = r % TILE_ROWS;
    let full = cols - cols % BLOCK_COLS;
    let base = tile * TILE_ROWS * cols;
    for b in 0..full / BLOCK_COLS {
        let at = base + b * in_tile * BLOCK_COLS + row * BLOCK_COLS;
        for (c, &byte) in weights[at..at + BLOCK_COLS].iter().enumerate() {
            f(b * BLOCK_COLS + c, byte);
        }
    }
    let rest = cols - full;
    let at = base + full * in_tile + row * rest;
    for (c, &byte) in weights[at..at + rest].iter().enumerate() {
        f(full + c, byte);
    }
}

/// One matrix chunk's inputs: the matrix's tiled `weights` (each weight plus
/// 128) and its `u32` row `scales`, the first row of the chunk `start`, the
/// input vector `x` (one value per column) and `bias`, `128 * sum(x)`
/// wrapping.
pub struct Rows<'a> {
    pub weights: &'a [u8],
    pub scales: &'a [u8],
    pub rows: usize,
    pub start: usize,
    pub x: &'a [i64],
    pub bias: i64,
}

/// The row kernel: for each row `r` of the chunk (`out[i]` is row
/// `start + i`), `((sum(byte[r][j] * x[j]) - bias) * scale[r]) >> 24`, every
/// product and sum wrapping in 64 bits, which equals the signed int8 dot
/// product. The same contract and the same results on every target.
#[inline(never)]
pub fn matvec(m: &Rows, out: &mut [i64]) {
    // Rows before the first whole tile, then whole tiles walked as zipped
    // chunks (no index arithmetic or bounds check per tile), then the rest.
    let lead = ((TILE_ROWS - m.start % TILE_ROWS) % TILE_ROWS).min(out.len());
    for (i, y) in out[..lead].iter_mut().enumerate() {
        *y = finish(m, m.start + i, dot_row(m, m.start + i));
    }
    let first = m.start + lead;
    let whole = (out.len() - lead) / TILE_ROWS * TILE_ROWS;
    tiles(m, first, &mut out[lead..lead + whole]);
    for r in first + whole..m.start + out.len() {
        out[r - m.start] = finish(m, r, dot_row(m, r));
    }
}

/// The largest of `max` and `values`, and its index (`first` is the index
/// of `values[0]`; `chosen` stands while nothing is larger): sampling's
/// maximum pass, the lowest index among equals. On SBF, 6 instructions an
/// entry, 8 where the maximum moves (11 are charged).
#[inline(always)]
pub fn argmax(values: &[i64], first: usize, max: &mut i64, chosen: &mut u32) {
    backend::argmax(values, first, max, chosen)
}

/// `sum(x)`, wrapping: a matrix chunk's setup. Eight at a time, in four
/// sums, which wrapping addition lets add up in any order.
#[inline(always)]
pub fn sum(x: &[i64]) -> i64 {
    let mut acc = [0i64; 4];
    let mut eights = x.chunks_exact(8);
    for e in &mut eights {
        acc[0] = acc[0].wrapping_add(e[0]).wrapping_add(e[4]);
        acc[1] = acc[1].wrapping_add(e[1]).wrapping_add(e[5]);
        acc[2] = acc[2].wrapping_add(e[2]).wrapping_add(e[6]);
        acc[3] = acc[3].wrapping_add(e[3]).wrapping_add(e[7]);
    }
    let mut total = acc[0]
        .wrapping_add(acc[1])
        .wrapping_add(acc[2])
        .wrapping_add(acc[3]);
    for &v in eights.remainder() {
        total = total.wrapping_add(v);
    }
    total
}

/// The whole tiles of a chunk, from row `first`, into `out` (a multiple of
/// four rows): walked as zipped chunks, with no index arithmetic or bounds
/// check per tile. A function of its own, so that the rows around the tiles
/// do not take registers from this loop.
#[inline(never)]
fn tiles(m: &Rows, first: usize, out: &mut [i64]) {
    let cols = m.x.len();
    let whole = out.len();
    let full = cols - cols % BLOCK_COLS;
    let rest = cols - full;
    let tiles = m.weights[first * cols..(first + whole) * cols].chunks_exact(TILE_ROWS * cols);
    let scales = m.scales[4 * first..4 * (first + whole)].chunks_exact(4 * TILE_ROWS);
    let outs = out.chunks_exact_mut(TILE_ROWS);
    for ((tile, scale), y) in tiles.zip(scales).zip(outs) {
        let mut acc = [0u64; TILE_ROWS];
        let (blocks, tail) = tile.split_at(full * TILE_ROWS);
        backend::dot_blocks(blocks, &m.x[..full], &mut acc);
        if rest != 0 {
            for (row, a) in acc.iter_mut().enumerate() {
                for (c, &x) in m.x[full..].iter().enumerate() {
                    *a = a.wrapping_add((tail[row * rest + c] as u64).wrapping_mul(x as u64));
                }
            }
        }
        for i in 0..TILE_ROWS {
            let s = crate::format::read_u32(scale, 4 * i) as i64;
            y[i] = (acc[i] as i64).wrapping_sub(m.bias).wrapping_mul(s) >> 24;
        }
    }
}

#[inline(always)]
fn finish(m: &Rows, r: usize, acc: u64) -> i64 {
    let scale = crate::format::read_u32(m.scales, 4 * r) as i64;
    (acc as i64).wrapping_sub(m.bias).wrapping_mul(scale) >> 24
}

/// One row's `sum(byte * x)`, for rows outside a whole tile of the chunk:
/// the row's eight bytes of each block of its tile, `in_tile * 8` bytes
/// apart, then its short row of the last `cols mod 8` columns. On SBF the
/// blocks are a hand-scheduled loop, 35 instructions a block.
#[inline(never)]
fn dot_row(m: &Rows, r: usize) -> u64 {
    let cols = m.x.len();
    let tile = r / TILE_ROWS;
    let in_tile = (m.rows - tile * TILE_ROWS).min(TILE_ROWS);
    let row = r % TILE_ROWS;
    let full = cols - cols % BLOCK_COLS;
    let base = tile * TILE_ROWS * cols;
    let stride = in_tile * BLOCK_COLS;
    let first = base + row * BLOCK_COLS;
    let mut acc = 0u64;
    if full != 0 {
        let span = (full / BLOCK_COLS - 1) * stride + BLOCK_COLS;
        acc = backend::dot_row_blocks(&m.weights[first..first + span], stride, &m.x[..full]);
    }
    let rest = cols - full;
    let at = base + full * in_tile + row * rest;
    for (&b, &x) in m.weights[at..at + rest].iter().zip(&m.x[full..]) {
        acc = acc.wrapping_add((b as u64).wrapping_mul(x as u64));
    }
    acc
}

/// Attention scores of one head over consecutive positions:
/// `out[t] = ((sum(q[i] * key_t[i]) >> 16) * inv) >> 24`, i64 by i32,
/// wrapping, where `key_t` is `q.len()` values at `keys[t * stride..]`;
/// returns the largest of `max` and the scores. On SBF, for a head size
/// that is a multiple of 8, the whole walk is one hand-scheduled loop: 6
/// instructions a product, 3 a block of 8 and 15 a position (LLVM's own
/// recomputes every address, 17 a product).
pub fn scores(q: &[i64], keys: &[i32], stride: usize, inv: i64, out: &mut [i64], max: i64) -> i64 {
    let hs = q.len();
    let fits = out.is_empty() || keys.len() >= (out.len() - 1) * stride + hs;
    if !fits || hs == 0 || stride < hs {
        return max;
    }
    backend::scores(q, keys, stride, inv, out, max)
}

/// `sum(p[t] * v[t * stride])`, i64 by i32, wrapping: attention's weighted
/// values, one output element over the positions (`v` starts at the element
/// in the first position's row). On SBF a hand-scheduled loop of 9
/// instructions a position.
#[inline(always)]
pub fn dot_values(p: &[i64], v: &[i32], stride: usize) -> i64 {
    let n = p.len();
    if n == 0 || stride == 0 || v.len() < (n - 1) * stride + 1 {
        let mut acc = 0i64;
        for (&x, &y) in p.iter().zip(v.iter().step_by(stride.max(1))) {
            acc = acc.wrapping_add(x.wrapping_mul(y as i64));
        }
        return acc;
    }
    backend::dot_values(p, v, stride)
}
