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
    #[cfg(sbf)]
    if !values.is_empty() {
        let mut index = *chosen as u64;
        // SAFETY: `values.len()` readable values; writes only the named
        // registers.
        unsafe {
            let end = values.as_ptr().add(values.len());
            core::arch::asm!(
                "2:",
                "{v} = *(u64 *)({p} + 0)",
                "if {v} s<= {max} goto 3f",
                "{max} = {v}",
                "{chosen} = {i}",
                "3:",
                "{p} += 8",
                "{i} += 1",
                "if {p} != {end} goto 2b",
                p = inout(reg) values.as_ptr() => _,
                end = in(reg) end,
                i = inout(reg) first => _,
                v = out(reg) _,
                max = inout(reg) *max,
                chosen = inout(reg) index,
                options(nostack, readonly),
            );
        }
        *chosen = index as u32;
        return;
    }
    for (i, &v) in values.iter().enumerate() {
        if v > *max {
            *max = v;
            *chosen = (first + i) as u32;
        }
    }
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
        dot_blocks(blocks, &m.x[..full], &mut acc);
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
        acc = dot_row_blocks(&m.weights[first..first + span], stride, &m.x[..full]);
    }
    let rest = cols - full;
    let at = base + full * in_tile + row * rest;
    for (&b, &x) in m.weights[at..at + rest].iter().zip(&m.x[full..]) {
        acc = acc.wrapping_add((b as u64).wrapping_mul(x as u64));
    }
    acc
}

/// `sum(byte * x)` over whole blocks: block `k`'s eight bytes at
/// `bytes[k * stride..]`, times `x[8k..8k + 8]`.
#[cfg(not(sbf))]
#[inline(always)]
fn dot_row_blocks(bytes: &[u8], stride: usize, x: &[i64]) -> u64 {
    let mut acc = 0u64;
    for (k, xs) in x.chunks_exact(BLOCK_COLS).enumerate() {
        for (c, &x) in xs.iter().enumerate() {
            let b = bytes[k * stride + c];
            acc = acc.wrapping_add((b as u64).wrapping_mul(x as u64));
        }
    }
    acc
}

#[cfg(sbf)]
#[inline(always)]
fn dot_row_blocks(bytes: &[u8], stride: usize, x: &[i64]) -> u64 {
    let mut acc = 0u64;
    // SAFETY: `x` holds whole blocks, at least one (the caller's), and
    // `bytes` every block's eight bytes `stride` apart; writes only the
    // named registers.
    unsafe {
        let end = x.as_ptr().add(x.len());
        core::arch::asm!(
            "2:",
            row_product!(0), row_product!(1), row_product!(2), row_product!(3),
            row_product!(4), row_product!(5), row_product!(6), row_product!(7),
            "{p} += {stride}",
            "{xp} += 64",
            "if {xp} != {end} goto 2b",
            p = inout(reg) bytes.as_ptr() => _,
            stride = in(reg) stride,
            xp = inout(reg) x.as_ptr() => _,
            end = in(reg) end,
            acc = inout(reg) acc,
            xv = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    acc
}

/// One column `c` of `dot_row_blocks`: `x[c]` times the row's byte `c`.
#[cfg(sbf)]
macro_rules! row_product {
    ($c:literal) => {
        concat!(
            "{xv} = *(u64 *)({xp} + ",
            $c,
            " * 8)\n{t} = *(u8 *)({p} + ",
            $c,
            ")\n{t} *= {xv}\n{acc} += {t}",
        )
    };
}
#[cfg(sbf)]
use row_product;

/// The whole blocks of a tile: `blocks` holds `x.len() / 8` blocks of 32
/// bytes. On SBF, hand-scheduled: per column one load of `x`, then per row a
/// byte load, a multiply and an add (13 instructions per 4 weights), two
/// blocks per loop (3 more instructions per 64 weights): 3.30 compute units
/// per multiply-accumulate. LLVM's own schedule spills accumulators and
/// costs about 5.4.
#[cfg(sbf)]
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
#[cfg(sbf)]
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
#[cfg(sbf)]
use column;

#[cfg(not(sbf))]
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

/// Attention scores of one head over consecutive positions:
/// `out[t] = ((sum(q[i] * key_t[i]) >> 16) * inv) >> 24`, i64 by i32,
/// wrapping, where `key_t` is `q.len()` values at `keys[t * stride..]`;
/// returns the largest of `max` and the scores. On SBF, for a head size
/// that is a multiple of 8, the whole walk is one hand-scheduled loop: 6
/// instructions a product, 3 a block of 8 and 15 a position (LLVM's own
/// recomputes every address, 17 a product).
pub fn scores(
    q: &[i64],
    keys: &[i32],
    stride: usize,
    inv: i64,
    out: &mut [i64],
    mut max: i64,
) -> i64 {
    let hs = q.len();
    let fits = out.is_empty() || keys.len() >= (out.len() - 1) * stride + hs;
    if !fits || hs == 0 || stride < hs {
        return max;
    }
    #[cfg(sbf)]
    if hs % 8 == 0 && !out.is_empty() {
        // SAFETY: `out.len()` positions of `hs` keys each, `stride` apart,
        // lie inside `keys` (checked above), and `hs` is a whole number of
        // blocks of 8.
        return unsafe { scores_blocks(q, keys.as_ptr(), stride, inv, out, max) };
    }
    for (t, score) in out.iter_mut().enumerate() {
        let dot = dot_key(q, &keys[t * stride..t * stride + hs]);
        *score = (dot >> 16).wrapping_mul(inv) >> 24;
        if *score > max {
            max = *score;
        }
    }
    max
}

/// `sum(a[i] * b[i])`, i64 by i32, wrapping, over slices of one length.
#[inline(always)]
fn dot_key(a: &[i64], b: &[i32]) -> i64 {
    #[cfg(sbf)]
    if a.len() % 8 == 0 && a.len() == b.len() && !a.is_empty() {
        // SAFETY: both slices hold `a.len()` values, a multiple of 8.
        return unsafe { dot_key_blocks(a.as_ptr(), b.as_ptr(), a.len() / 8) };
    }
    let mut acc = 0i64;
    for (&x, &y) in a.iter().zip(b) {
        acc = acc.wrapping_add(x.wrapping_mul(y as i64));
    }
    acc
}

/// One product of `dot_key_blocks`: `a[k] * sign_extend(b[k])`.
#[cfg(sbf)]
macro_rules! key_product {
    ($k:literal) => {
        concat!(
            "{x} = *(u64 *)({a} + ",
            $k,
            " * 8)\n",
            "{y} = *(u32 *)({b} + ",
            $k,
            " * 4)\n",
            "{y} <<= 32\n{y} s>>= 32\n{x} *= {y}\n{acc} += {x}",
        )
    };
}

/// # Safety
/// `a` and `b` point at `8 * blocks` readable values each, `blocks >= 1`.
#[cfg(sbf)]
#[inline(always)]
unsafe fn dot_key_blocks(a: *const i64, b: *const i32, blocks: usize) -> i64 {
    let mut acc = 0i64;
    // SAFETY: the caller's; writes only the named registers.
    unsafe {
        let end = a.add(8 * blocks);
        core::arch::asm!(
            "2:",
            key_product!(0), key_product!(1), key_product!(2), key_product!(3),
            key_product!(4), key_product!(5), key_product!(6), key_product!(7),
            "{a} += 64",
            "{b} += 32",
            "if {a} != {end} goto 2b",
            a = inout(reg) a => _,
            b = inout(reg) b => _,
            end = in(reg) end,
            acc = inout(reg) acc,
            x = out(reg) _,
            y = out(reg) _,
            options(nostack, readonly),
        );
    }
    acc
}

/// `scores` for a head size that is a whole number of blocks of 8: per
/// position, the dot product block by block, the score stored and the
/// largest kept, without leaving the loop. `inv`, the step to the next
/// position and the end are read from memory each position, so the loop
/// fits SBF's ten registers.
///
/// # Safety
/// `keys` points at `out.len()` positions of `q.len()` values, `stride`
/// values apart; `q.len()` is a non-zero multiple of 8; `out` is not empty.
#[cfg(sbf)]
#[inline(always)]
unsafe fn scores_blocks(
    q: &[i64],
    keys: *const i32,
    stride: usize,
    inv: i64,
    out: &mut [i64],
    max: i64,
) -> i64 {
    let mut max = max;
    // What the loop reads from memory: inv, the bytes from a position's
    // last key to the next's first, and the end of `out`.
    let consts: [u64; 3] = [
        inv as u64,
        (4 * (stride - q.len())) as u64,
        out.as_mut_ptr().wrapping_add(out.len()) as u64,
    ];
    // SAFETY: the caller's; writes only `out` and the named registers.
    unsafe {
        let q_end = q.as_ptr().add(q.len());
        core::arch::asm!(
            "2:",
            "{acc} = 0",
            "{a} = {q}",
            "3:",
            key_product!(0), key_product!(1), key_product!(2), key_product!(3),
            key_product!(4), key_product!(5), key_product!(6), key_product!(7),
            "{a} += 64",
            "{b} += 32",
            "if {a} != {q_end} goto 3b",
            "{acc} s>>= 16",
            "{x} = *(u64 *)({c} + 0)",
            "{acc} *= {x}",
            "{acc} s>>= 24",
            "*(u64 *)({out} + 0) = {acc}",
            "if {acc} s<= {max} goto 4f",
            "{max} = {acc}",
            "4:",
            "{out} += 8",
            "{x} = *(u64 *)({c} + 8)",
            "{b} += {x}",
            "{x} = *(u64 *)({c} + 16)",
            "if {out} != {x} goto 2b",
            q = in(reg) q.as_ptr(),
            q_end = in(reg) q_end,
            a = out(reg) _,
            b = inout(reg) keys => _,
            out = inout(reg) out.as_mut_ptr() => _,
            c = in(reg) consts.as_ptr(),
            max = inout(reg) max,
            acc = out(reg) _,
            x = out(reg) _,
            y = out(reg) _,
            options(nostack),
        );
    }
    max
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
    dot_values_checked(p, v, stride)
}

#[cfg(not(sbf))]
#[inline(always)]
fn dot_values_checked(p: &[i64], v: &[i32], stride: usize) -> i64 {
    let mut acc = 0i64;
    for (t, &x) in p.iter().enumerate() {
        acc = acc.wrapping_add(x.wrapping_mul(v[t * stride] as i64));
    }
    acc
}

#[cfg(sbf)]
#[inline(always)]
fn dot_values_checked(p: &[i64], v: &[i32], stride: usize) -> i64 {
    let mut acc = 0i64;
    // SAFETY: `p.len() >= 1` values of `p` and `v[t * stride]` for each of
    // them, inside `v` (checked by the caller); writes only named registers.
    unsafe {
        let end = p.as_ptr().add(p.len());
        core::arch::asm!(
            "2:",
            "{x} = *(u64 *)({p} + 0)",
            "{y} = *(u32 *)({v} + 0)",
            "{y} <<= 32",
            "{y} s>>= 32",
            "{x} *= {y}",
            "{acc} += {x}",
            "{p} += 8",
            "{v} += {step}",
            "if {p} != {end} goto 2b",
            p = inout(reg) p.as_ptr() => _,
            v = inout(reg) v.as_ptr() => _,
            step = in(reg) stride * 4,
            end = in(reg) end,
            acc = inout(reg) acc,
            x = out(reg) _,
            y = out(reg) _,
            options(nostack, readonly),
        );
    }
    acc
}
