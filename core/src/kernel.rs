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
    let end = m.start + out.len();
    let mut r = m.start;
    while r < end {
        if r.is_multiple_of(TILE_ROWS) && r + TILE_ROWS <= end {
            let mut acc = [0u64; TILE_ROWS];
            dot_tile(m, r, &mut acc);
            for (i, a) in acc.iter().enumerate() {
                out[r - m.start + i] = finish(m, r + i, *a);
            }
            r += TILE_ROWS;
        } else {
            out[r - m.start] = finish(m, r, dot_row(m, r));
            r += 1;
        }
    }
}

#[inline(always)]
fn finish(m: &Rows, r: usize, acc: u64) -> i64 {
    let s = &m.scales[4 * r..4 * r + 4];
    // One word load where the scales are aligned (always, in a section read
    // from an account or an artifact buffer); SBF would otherwise read the
    // four bytes one by one. Both give the same value on a little-endian
    // target.
    let scale = if (s.as_ptr() as usize).is_multiple_of(4) {
        // SAFETY: four readable bytes, aligned for a u32.
        unsafe { *(s.as_ptr() as *const u32) }
    } else {
        u32::from_le_bytes([s[0], s[1], s[2], s[3]])
    };
    (acc as i64).wrapping_sub(m.bias).wrapping_mul(scale as i64) >> 24
}

/// One row's `sum(byte * x)`, for rows outside a whole tile of the chunk.
fn dot_row(m: &Rows, r: usize) -> u64 {
    let cols = m.x.len();
    let mut acc = 0u64;
    for (j, &x) in m.x.iter().enumerate() {
        let b = m.weights[tiled_index(m.rows, cols, r, j)];
        acc = acc.wrapping_add((b as u64).wrapping_mul(x as u64));
    }
    acc
}

/// Four rows' `sum(byte * x)` over a whole tile starting at row `r`.
#[inline(always)]
fn dot_tile(m: &Rows, r: usize, acc: &mut [u64; TILE_ROWS]) {
    let cols = m.x.len();
    let full = cols - cols % BLOCK_COLS;
    let tile = &m.weights[r * cols..(r + TILE_ROWS) * cols];
    let (blocks, tail) = tile.split_at(full * TILE_ROWS);
    dot_blocks(blocks, &m.x[..full], acc);
    let rest = cols - full;
    for (row, a) in acc.iter_mut().enumerate() {
        for (c, &x) in m.x[full..].iter().enumerate() {
            *a = a.wrapping_add((tail[row * rest + c] as u64).wrapping_mul(x as u64));
        }
    }
}

/// The whole blocks of a tile: `blocks` holds `x.len() / 8` blocks of 32
/// bytes. On SBF, hand-scheduled: per column one load of `x`, then per row a
/// byte load, a multiply and an add (13 instructions per 4 weights), two
/// blocks per loop (3 more instructions per 64 weights): 3.30 compute units
/// per multiply-accumulate. LLVM's own schedule spills accumulators and
/// costs about 5.4.
#[cfg(target_arch = "bpf")]
#[inline(always)]
fn dot_blocks(blocks: &[u8], x: &[i64], acc: &mut [u64; TILE_ROWS]) {
    let n = x.len() / BLOCK_COLS;
    if blocks.len() < n * TILE_ROWS * BLOCK_COLS {
        return dot_blocks_portable(blocks, x, acc);
    }
    let [mut a0, mut a1, mut a2, mut a3] = *acc;
    let mut p = blocks.as_ptr();
    let mut xp = x.as_ptr();
    // SAFETY (both blocks): reads `n` blocks of 32 bytes from `blocks` and
    // `8 n` values from `x`, both checked above; writes only the named
    // registers.
    if n % 2 == 1 {
        unsafe {
            core::arch::asm!(
                column!(0), column!(1), column!(2), column!(3),
                column!(4), column!(5), column!(6), column!(7),
                p = in(reg) p,
                xp = in(reg) xp,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                a2 = inout(reg) a2,
                a3 = inout(reg) a3,
                xv = out(reg) _,
                t = out(reg) _,
                options(nostack, readonly),
            );
            p = p.add(TILE_ROWS * BLOCK_COLS);
            xp = xp.add(BLOCK_COLS);
        }
    }
    if n >= 2 {
        unsafe {
            let end = p.add((n / 2) * 2 * TILE_ROWS * BLOCK_COLS);
            core::arch::asm!(
                "2:",
                column!(0), column!(1), column!(2), column!(3),
                column!(4), column!(5), column!(6), column!(7),
                column!(8, 24), column!(9, 24), column!(10, 24), column!(11, 24),
                column!(12, 24), column!(13, 24), column!(14, 24), column!(15, 24),
                "{p} += 64",
                "{xp} += 128",
                "if {p} != {end} goto 2b",
                p = inout(reg) p,
                xp = inout(reg) xp,
                end = in(reg) end,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                a2 = inout(reg) a2,
                a3 = inout(reg) a3,
                xv = out(reg) _,
                t = out(reg) _,
                options(nostack, readonly),
            );
        }
    }
    let _ = (p, xp);
    *acc = [a0, a1, a2, a3];
}

/// One column `c` of a pair of blocks: `x[c]` times the four rows' bytes at
/// `base + c`, `base + 8 + c`, `base + 16 + c` and `base + 24 + c`, where
/// `base` is 0 for the first block and 24 (32 bytes on, less its 8 columns)
/// for the second.
#[cfg(target_arch = "bpf")]
macro_rules! column {
    ($c:literal) => {
        column!($c, 0)
    };
    ($c:literal, $base:literal) => {
        concat!(
            "{xv} = *(u64 *)({xp} + ",
            $c,
            " * 8)\n",
            "{t} = *(u8 *)({p} + ",
            $base,
            " + ",
            $c,
            ")\n{t} *= {xv}\n{a0} += {t}\n",
            "{t} = *(u8 *)({p} + ",
            $base,
            " + 8 + ",
            $c,
            ")\n{t} *= {xv}\n{a1} += {t}\n",
            "{t} = *(u8 *)({p} + ",
            $base,
            " + 16 + ",
            $c,
            ")\n{t} *= {xv}\n{a2} += {t}\n",
            "{t} = *(u8 *)({p} + ",
            $base,
            " + 24 + ",
            $c,
            ")\n{t} *= {xv}\n{a3} += {t}",
        )
    };
}
#[cfg(target_arch = "bpf")]
use column;

#[cfg(not(target_arch = "bpf"))]
#[inline(always)]
fn dot_blocks(blocks: &[u8], x: &[i64], acc: &mut [u64; TILE_ROWS]) {
    dot_blocks_portable(blocks, x, acc)
}

/// The portable form of `dot_blocks`, which every target's result equals.
#[inline(always)]
pub fn dot_blocks_portable(blocks: &[u8], x: &[i64], acc: &mut [u64; TILE_ROWS]) {
    let [mut a0, mut a1, mut a2, mut a3] = *acc;
    for (b, xs) in blocks
        .chunks_exact(TILE_ROWS * BLOCK_COLS)
        .zip(x.chunks_exact(BLOCK_COLS))
    {
        for c in 0..BLOCK_COLS {
            let x = xs[c] as u64;
            a0 = a0.wrapping_add((b[c] as u64).wrapping_mul(x));
            a1 = a1.wrapping_add((b[BLOCK_COLS + c] as u64).wrapping_mul(x));
            a2 = a2.wrapping_add((b[2 * BLOCK_COLS + c] as u64).wrapping_mul(x));
            a3 = a3.wrapping_add((b[3 * BLOCK_COLS + c] as u64).wrapping_mul(x));
        }
    }
    *acc = [a0, a1, a2, a3];
}
