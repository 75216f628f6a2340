//! The SBF kernel: the primitives of `kernel` as hand-scheduled inline
//! assembly, with the instruction counts the planner's charges rest on.
//! Each falls back to `portable` where its assembly does not apply; the
//! results are the same bits either way.

use super::{portable, BLOCK_COLS, TILE_ROWS};

/// One column `c` of `dot_row_blocks`: `x[c]` times the row's byte `c`.
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

/// One column `c` of a pair of blocks: `x[c]` times the four rows' bytes at
/// `base + c`, `base + 8 + c`, `base + 16 + c` and `base + 24 + c`, where
/// `base` is 0 for the first block and 24 (32 bytes on, less its 8 columns)
/// for the second.
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

/// One product of `dot_key_blocks`: `a[k] * sign_extend(b[k])`.
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

/// `kernel::argmax`: 6 instructions an entry, 8 where the maximum moves
/// (11 are charged).
#[inline(always)]
pub fn argmax(values: &[i64], first: usize, max: &mut i64, chosen: &mut u32) {
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
    portable::argmax(values, first, max, chosen)
}

/// `sum(byte * x)` over whole blocks: block `k`'s eight bytes at
/// `bytes[k * stride..]`, times `x[8k..8k + 8]`; 35 instructions a block.
#[inline(always)]
pub fn dot_row_blocks(bytes: &[u8], stride: usize, x: &[i64]) -> u64 {
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

/// The whole blocks of a tile: `blocks` holds `x.len() / 8` blocks of 32
/// bytes. Hand-scheduled: per column one load of `x`, then per row a
/// byte load, a multiply and an add (13 instructions per 4 weights), two
/// blocks per loop (3 more instructions per 64 weights): 3.30 compute units
/// per multiply-accumulate. LLVM's own schedule spills accumulators and
/// costs about 5.4.
#[inline(always)]
pub fn dot_blocks(blocks: &[u8], x: &[i64], acc: &mut [u64; TILE_ROWS]) {
    let n = x.len() / BLOCK_COLS;
    if blocks.len() < n * TILE_ROWS * BLOCK_COLS {
        return portable::dot_blocks(blocks, x, acc);
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

/// `kernel::scores` once its checks pass: for a head size that is a
/// multiple of 8, the whole walk is one hand-scheduled loop: 6 instructions
/// a product, 3 a block of 8 and 15 a position (LLVM's own recomputes every
/// address, 17 a product).
#[inline(always)]
pub fn scores(q: &[i64], keys: &[i32], stride: usize, inv: i64, out: &mut [i64], max: i64) -> i64 {
    if q.len() % 8 == 0 && !out.is_empty() {
        // SAFETY: `out.len()` positions of `q.len()` keys each, `stride`
        // apart, lie inside `keys` (checked by `kernel::scores`, the one
        // caller), and `q.len()` is a whole number of blocks of 8.
        return unsafe { scores_blocks(q, keys.as_ptr(), stride, inv, out, max) };
    }
    portable::scores_with(q, keys, stride, inv, out, max, dot_key)
}

/// `sum(a[i] * b[i])`, i64 by i32, wrapping, over slices of one length.
#[inline(always)]
pub fn dot_key(a: &[i64], b: &[i32]) -> i64 {
    if a.len() % 8 == 0 && a.len() == b.len() && !a.is_empty() {
        // SAFETY: both slices hold `a.len()` values, a multiple of 8.
        return unsafe { dot_key_blocks(a.as_ptr(), b.as_ptr(), a.len() / 8) };
    }
    portable::dot_key(a, b)
}

/// # Safety
/// `a` and `b` point at `8 * blocks` readable values each, `blocks >= 1`.
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

/// `sum(p[t] * v[t * stride])` where `v` holds every `v[t * stride]` (the
/// caller's check): 9 instructions a position.
#[inline(always)]
pub fn dot_values(p: &[i64], v: &[i32], stride: usize) -> i64 {
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
