//! Little-endian integers in byte buffers, and the alignment every buffer of
//! an artifact and a state keeps. The readers never fail: bytes past the
//! end read as zero, so a reader over untrusted bytes cannot panic.

#[cfg(target_endian = "big")]
compile_error!("curta-core keeps artifacts and states little-endian in memory on every target");

/// Reads a little-endian `u32`; bytes past the end of `bytes` read as zero.
#[inline(always)]
pub fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    match bytes.get(offset..offset.wrapping_add(4)) {
        // One word load where the bytes are aligned, as the tables and
        // scales of an artifact are: SBF would otherwise load four bytes and
        // shift them together. The same value on every (little-endian) target.
        Some(b) if (b.as_ptr() as usize).is_multiple_of(4) => {
            // SAFETY: four readable bytes, aligned for a u32.
            u32::from_le(unsafe { *(b.as_ptr() as *const u32) })
        }
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Reads a little-endian `u64`; bytes past the end of `bytes` read as zero.
#[inline(always)]
pub fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    match bytes.get(offset..offset.wrapping_add(8)) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}

/// Writes a little-endian `u32`; the caller owns the bounds.
#[inline(always)]
pub fn write_u32(bytes: &mut [u8], offset: usize, value: u32) {
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

/// Writes a little-endian `u64`; the caller owns the bounds.
#[inline(always)]
pub fn write_u64(bytes: &mut [u8], offset: usize, value: u64) {
    bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

/// `n` rounded up to a multiple of eight: where the next buffer starts.
#[inline(always)]
pub const fn align8(n: u64) -> u64 {
    (n + 7) & !7
}

/// Views bytes as integers of the machine's (little-endian) order; the
/// length is rounded down to whole elements.
///
/// Panics if `bytes` is not aligned for `T`: callers carve only buffers
/// that a checked state or artifact guarantees aligned.
#[inline(always)]
pub fn cast<T: Copy>(bytes: &mut [u8]) -> &mut [T] {
    let size = core::mem::size_of::<T>();
    assert!((bytes.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>()));
    // SAFETY: the pointer is aligned for T (checked above), the length is
    // rounded down to whole elements, every bit pattern is a valid integer
    // (T is only ever u32, i32 or i64), and the borrow of `bytes` is moved
    // into the result.
    unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, bytes.len() / size) }
}
