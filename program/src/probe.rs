//! The `cost-probe` build's measuring probe: at every mark, the compute
//! units left (`sol_remaining_compute_units`), written into an account the
//! harness reads back (`replay/src/costs.rs`). A mark is the syscall and a
//! store, so the measure disturbs the code around it as little as can be;
//! the harness knows which chunk lies between two marks by walking the
//! same turn natively.
//!
//! The probe account's layout: u64 marks written, then one u64 per mark.
//! Marks, in order: two back to back (what a mark costs), the end of the
//! turn's account checks, the core's `begin`, then per chunk the walker's
//! finding it (`walked`, not in tokenizing turns) and its end (`chunk`),
//! then the end of the core's turn and the end of the receipt.

use curta_core::planner::{ChunkKind, Probe};

use crate::syscalls::sol_remaining_compute_units;

pub struct ComputeProbe<'a> {
    out: &'a mut [u8],
    count: usize,
}

impl<'a> ComputeProbe<'a> {
    /// Starts measuring with two marks back to back.
    pub fn new(out: &'a mut [u8]) -> Self {
        let mut probe = ComputeProbe { out, count: 0 };
        probe.mark();
        probe.mark();
        probe
    }

    /// The syscall and one aligned store (the account's data is 8-aligned
    /// in the input): a mark disturbs the code around it little.
    #[inline(always)]
    pub fn mark(&mut self) {
        // SAFETY: the syscall takes no arguments.
        let now = unsafe { sol_remaining_compute_units() };
        let at = 8 * (self.count + 1);
        if at + 8 <= self.out.len() {
            // SAFETY: in bounds (checked) and aligned to eight.
            unsafe { *(self.out.as_mut_ptr().add(at) as *mut u64) = now };
            self.count += 1;
        }
    }

    /// Records how many marks there are (once, at the end).
    pub fn finish(self) {
        if let Some(slot) = self.out.get_mut(..8) {
            slot.copy_from_slice(&(self.count as u64).to_le_bytes());
        }
    }
}

impl Probe for ComputeProbe<'_> {
    #[inline(always)]
    fn begin(&mut self) {
        self.mark();
    }

    #[inline(always)]
    fn walked(&mut self) {
        self.mark();
    }

    #[inline(always)]
    fn chunk(&mut self, _: impl FnOnce() -> (ChunkKind, u32, u32)) {
        self.mark();
    }
}
