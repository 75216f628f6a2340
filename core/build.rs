//! Sets `cfg(sbf)` for a build for Solana's VM, whichever toolchain names
//! it: this project's `bpfel-unknown-none` (target_arch "bpf") or Agave's
//! platform-tools (`cargo build-sbf`: target_arch "sbf", target_os
//! "solana"). The row kernel's assembly is chosen on it (`kernel/mod.rs`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sbf)");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch == "bpf" || arch == "sbf" || os == "solana" {
        println!("cargo::rustc-cfg=sbf");
    }
}
