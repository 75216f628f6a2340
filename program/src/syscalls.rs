//! The runtime's syscalls, called through function pointers whose addresses
//! are the murmur3-32 hashes of their names ("static syscalls").
//!
//! Why not `extern "C"`: sbpf-linker 0.1.9 internalizes undefined externs and
//! LLVM then drops their arguments, so the program builds and is wrong
//! (docs/sbf.md, trap 1). A call to a constant address is what the loader
//! resolves as a syscall. On the host the same functions are shims: logging
//! does nothing, memory syscalls use `core::ptr`, so the crate links and its
//! logic can be tested.

/// The hash of each syscall's name; `tests::hashes_match_names` recomputes
/// them with murmur3-32 (seed 0), as `solana-define-syscall` does.
pub mod hash {
    pub const SOL_LOG: u32 = 0x207559bd;
    pub const SOL_LOG_64: u32 = 0x5c2a3178;
    pub const SOL_LOG_DATA: u32 = 0x7317b434;
    pub const SOL_LOG_COMPUTE_UNITS: u32 = 0x52ba5096;
    pub const SOL_SHA256: u32 = 0x11f49d86;
    pub const SOL_MEMCPY: u32 = 0x717cc4a3;
    pub const SOL_MEMMOVE: u32 = 0x434371f8;
    pub const SOL_MEMSET: u32 = 0x3770fb22;
    pub const SOL_MEMCMP: u32 = 0x5fdcde31;
    pub const SOL_REMAINING_COMPUTE_UNITS: u32 = 0xedef5aee;
    pub const SOL_PANIC: u32 = 0x686093bb;
    pub const ABORT: u32 = 0xb6fc1a11;
    pub const SOL_GET_RENT_SYSVAR: u32 = 0xbf7188f6;
    pub const SOL_INVOKE_SIGNED_C: u32 = 0xa22b9c85;

    /// `(name, hash)` for every syscall above, for the test.
    pub const ALL: [(&str, u32); 14] = [
        ("sol_get_rent_sysvar", SOL_GET_RENT_SYSVAR),
        ("sol_log_", SOL_LOG),
        ("sol_log_64_", SOL_LOG_64),
        ("sol_log_data", SOL_LOG_DATA),
        ("sol_log_compute_units_", SOL_LOG_COMPUTE_UNITS),
        ("sol_sha256", SOL_SHA256),
        ("sol_memcpy_", SOL_MEMCPY),
        ("sol_memmove_", SOL_MEMMOVE),
        ("sol_memset_", SOL_MEMSET),
        ("sol_memcmp_", SOL_MEMCMP),
        ("sol_remaining_compute_units", SOL_REMAINING_COMPUTE_UNITS),
        ("sol_panic_", SOL_PANIC),
        ("abort", ABORT),
        ("sol_invoke_signed_c", SOL_INVOKE_SIGNED_C),
    ];
}

/// Declares `pub unsafe fn $name(..)` that calls the function pointer at
/// address `$hash` on SBF.
#[cfg(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf"))]
macro_rules! define_syscall {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $typ:ty),* $(,)?) $(-> $ret:ty)? = $hash:expr) => {
        $(#[$attr])*
        #[inline(always)]
        #[allow(clippy::missing_safety_doc)]
        pub unsafe fn $name($($arg: $typ),*) $(-> $ret)? {
            // SAFETY: the loader maps this address to the named syscall.
            let f: extern "C" fn($($typ),*) $(-> $ret)? =
                unsafe { core::mem::transmute($hash as usize) };
            f($($arg),*)
        }
    };
}

#[cfg(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf"))]
mod imp {
    use super::hash;

    define_syscall!(fn sol_log_(message: *const u8, len: u64) = hash::SOL_LOG);
    define_syscall!(fn sol_log_64_(a: u64, b: u64, c: u64, d: u64, e: u64) = hash::SOL_LOG_64);
    define_syscall!(
        /// `data` points at `len` `(ptr, len)` pairs, i.e. a `&[&[u8]]`.
        fn sol_log_data(data: *const u8, len: u64) = hash::SOL_LOG_DATA
    );
    define_syscall!(fn sol_log_compute_units_() = hash::SOL_LOG_COMPUTE_UNITS);
    define_syscall!(
        /// `vals` points at `val_len` `(ptr, len)` pairs; 32 bytes go to `out`.
        fn sol_sha256(vals: *const u8, val_len: u64, out: *mut u8) -> u64 = hash::SOL_SHA256
    );
    define_syscall!(fn sol_memcpy_(dst: *mut u8, src: *const u8, n: u64) = hash::SOL_MEMCPY);
    define_syscall!(fn sol_memmove_(dst: *mut u8, src: *const u8, n: u64) = hash::SOL_MEMMOVE);
    define_syscall!(fn sol_memset_(s: *mut u8, c: u8, n: u64) = hash::SOL_MEMSET);
    define_syscall!(
        fn sol_memcmp_(s1: *const u8, s2: *const u8, n: u64, result: *mut i32) = hash::SOL_MEMCMP
    );
    define_syscall!(fn sol_remaining_compute_units() -> u64 = hash::SOL_REMAINING_COMPUTE_UNITS);
    define_syscall!(
        fn sol_panic_(file: *const u8, len: u64, line: u64, column: u64) -> ! = hash::SOL_PANIC
    );
    define_syscall!(fn abort() -> ! = hash::ABORT);
    define_syscall!(
        /// Writes the Rent sysvar (17 bytes: u64 lamports per byte-year,
        /// f64 exemption threshold, u8 burn percent) to `out`.
        fn sol_get_rent_sysvar(out: *mut u8) -> u64 = hash::SOL_GET_RENT_SYSVAR
    );
    define_syscall!(
        /// Invokes another program (`crate::cpi`): `instruction` points at a
        /// C `SolInstruction`, `account_infos` at `account_infos_len` C
        /// `SolAccountInfo`s, `signers_seeds` at `signers_seeds_len` C
        /// `SolSignerSeeds` (each a list of `(ptr, len)` seeds).
        fn sol_invoke_signed_c(
            instruction: *const u8,
            account_infos: *const u8,
            account_infos_len: u64,
            signers_seeds: *const u8,
            signers_seeds_len: u64,
        ) -> u64 = hash::SOL_INVOKE_SIGNED_C
    );
}

/// Host shims with the same signatures.
#[cfg(not(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf")))]
#[allow(clippy::missing_safety_doc)]
mod imp {
    pub unsafe fn sol_log_(_message: *const u8, _len: u64) {}
    pub unsafe fn sol_log_64_(_a: u64, _b: u64, _c: u64, _d: u64, _e: u64) {}
    pub unsafe fn sol_log_data(_data: *const u8, _len: u64) {}
    pub unsafe fn sol_log_compute_units_() {}
    /// curta-core's SHA-256 over the `(ptr, len)` pairs.
    pub unsafe fn sol_sha256(vals: *const u8, val_len: u64, out: *mut u8) -> u64 {
        let slices = unsafe { core::slice::from_raw_parts(vals as *const &[u8], val_len as usize) };
        let mut sha = curta_core::sha256::Sha256::new();
        for s in slices {
            sha.update(s);
        }
        unsafe { core::ptr::copy_nonoverlapping(sha.finish().as_ptr(), out, 32) };
        0
    }
    /// Mainnet's rent: 3,480 lamports per byte-year, threshold 2.0.
    pub unsafe fn sol_get_rent_sysvar(out: *mut u8) -> u64 {
        let mut rent = [0u8; 17];
        rent[..8].copy_from_slice(&3480u64.to_le_bytes());
        rent[8..16].copy_from_slice(&2.0f64.to_bits().to_le_bytes());
        unsafe { core::ptr::copy_nonoverlapping(rent.as_ptr(), out, 17) };
        0
    }
    pub unsafe fn sol_memcpy_(dst: *mut u8, src: *const u8, n: u64) {
        unsafe { core::ptr::copy_nonoverlapping(src, dst, n as usize) }
    }
    pub unsafe fn sol_memmove_(dst: *mut u8, src: *const u8, n: u64) {
        unsafe { core::ptr::copy(src, dst, n as usize) }
    }
    pub unsafe fn sol_memset_(s: *mut u8, c: u8, n: u64) {
        unsafe { core::ptr::write_bytes(s, c, n as usize) }
    }
    pub unsafe fn sol_memcmp_(s1: *const u8, s2: *const u8, n: u64, result: *mut i32) {
        let (a, b) = unsafe {
            (
                core::slice::from_raw_parts(s1, n as usize),
                core::slice::from_raw_parts(s2, n as usize),
            )
        };
        // The runtime reports the difference of the first unequal bytes.
        let r = a
            .iter()
            .zip(b)
            .find(|(x, y)| x != y)
            .map_or(0, |(x, y)| i32::from(*x) - i32::from(*y));
        unsafe { *result = r }
    }
    pub unsafe fn sol_remaining_compute_units() -> u64 {
        u64::MAX
    }
    pub unsafe fn sol_panic_(_file: *const u8, _len: u64, line: u64, column: u64) -> ! {
        panic!("sol_panic_ at line {line}, column {column}")
    }
    pub unsafe fn abort() -> ! {
        panic!("abort")
    }
    /// No other program to call on the host: always fails.
    pub unsafe fn sol_invoke_signed_c(
        _instruction: *const u8,
        _account_infos: *const u8,
        _account_infos_len: u64,
        _signers_seeds: *const u8,
        _signers_seeds_len: u64,
    ) -> u64 {
        1
    }
}

pub use imp::*;

/// SHA-256 of the concatenation of `parts`, by the runtime's `sol_sha256`.
#[inline(always)]
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // SAFETY: a `&[u8]` is laid out as the `(ptr, len)` pair the syscall
    // reads, and `out` has the 32 bytes it writes.
    unsafe {
        sol_sha256(
            parts.as_ptr() as *const u8,
            parts.len() as u64,
            out.as_mut_ptr(),
        )
    };
    out
}

#[cfg(test)]
mod tests {
    use super::hash;

    /// murmur3-32 (x86 variant), written from the reference algorithm rather
    /// than copied from the constants' source, to check them independently.
    fn murmur3_32(data: &[u8], seed: u32) -> u32 {
        const C1: u32 = 0xcc9e_2d51;
        const C2: u32 = 0x1b87_3593;
        let mix = |k: u32| k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        let mut h = seed;
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            h ^= mix(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let mut k = 0u32;
            for (i, b) in tail.iter().enumerate() {
                k |= u32::from(*b) << (8 * i);
            }
            h ^= mix(k);
        }
        h ^= data.len() as u32;
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^ (h >> 16)
    }

    #[test]
    fn murmur3_reference_vectors() {
        // Published test vectors of MurmurHash3_x86_32.
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514e_28b7);
        assert_eq!(murmur3_32(b"test", 0), 0xba6b_d213);
        assert_eq!(murmur3_32(b"Hello, world!", 0), 0xc036_3e43);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog", 0),
            0x2e4f_f723
        );
    }

    #[test]
    fn hashes_match_names() {
        // The one value docs/sbf.md records from a working program.
        assert_eq!(hash::SOL_LOG, 0x207559bd);
        for (name, h) in hash::ALL {
            assert_eq!(murmur3_32(name.as_bytes(), 0), h, "{name}");
        }
    }
}
