//! Curta's on-chain program: a raw SBF entrypoint in the style of pinocchio,
//! with no framework, no allocator and no solana crates.
//!
//! On SBF (`target_arch = "bpf"` here, or platform-tools' `"sbf"` and `target_os = "solana"`)
//! the crate exports `entrypoint` and a panic handler; on the host it is a
//! plain library whose syscalls are shims, so its logic can be unit tested.
//! A program that calls Curta depends on `curta-interface` (its `pinocchio`
//! feature has the CPI builders), not on this crate.

#![no_std]

// Off SBF, link std for its panic handler (and the host cdylib's unwinding
// runtime); tests use it too.
#[cfg(not(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf")))]
extern crate std;

// The input writer (`entrypoint::input`) is for hosts: it allocates.
#[cfg(all(
    feature = "input-writer",
    any(target_os = "solana", target_arch = "bpf", target_arch = "sbf")
))]
compile_error!("the input-writer feature is for host builds: the SBF program has no allocator");

pub mod account;
pub mod checks;
pub mod cpi;
pub mod entrypoint;
pub mod error;
pub mod instructions;
pub mod log;
#[cfg(feature = "cost-probe")]
pub mod probe;
pub mod syscalls;
pub mod sysvar;

pub use account::{AccountView, Address};
pub use entrypoint::InstructionInput;
pub use error::{ProgramError, ProgramResult};

/// Reports the panic's location to the runtime, which fails the instruction.
/// Only on SBF: on the host, std's handler is the one linked.
#[cfg(any(target_os = "solana", target_arch = "bpf", target_arch = "sbf"))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    match info.location() {
        // SAFETY: the pointer and length come from a live `&str`.
        Some(loc) => unsafe {
            syscalls::sol_panic_(
                loc.file().as_ptr(),
                loc.file().len() as u64,
                u64::from(loc.line()),
                u64::from(loc.column()),
            )
        },
        None => {
            log::log("** PANICKED **");
            // SAFETY: `abort` takes no arguments and never returns.
            unsafe { syscalls::abort() }
        }
    }
}
