//! Safe wrappers over the logging syscalls.

use crate::syscalls;

/// Logs `msg` ("Program log: ..." in the transaction's logs).
#[inline(always)]
pub fn log(msg: &str) {
    // SAFETY: pointer and length of a live `&str`.
    unsafe { syscalls::sol_log_(msg.as_ptr(), msg.len() as u64) }
}

/// Logs five numbers in hex ("Program log: 0x1, 0x2, ...").
#[inline(always)]
pub fn log_64(a: u64, b: u64, c: u64, d: u64, e: u64) {
    // SAFETY: plain values.
    unsafe { syscalls::sol_log_64_(a, b, c, d, e) }
}

/// Logs each slice base64-encoded ("Program data: ...").
#[inline(always)]
pub fn log_data(data: &[&[u8]]) {
    // SAFETY: a `&[u8]` is laid out as the `(ptr, len)` pair the syscall reads.
    unsafe { syscalls::sol_log_data(data.as_ptr() as *const u8, data.len() as u64) }
}

/// Logs the compute units left ("Program consumption: N units remaining").
#[inline(always)]
pub fn log_compute_units() {
    // SAFETY: no arguments.
    unsafe { syscalls::sol_log_compute_units_() }
}
