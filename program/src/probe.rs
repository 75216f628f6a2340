//! The `cost-probe` build's measuring probe: the compute units each part of
//! a turn took, read with `sol_remaining_compute_units` around it and
//! written into an account the harness reads back (`harness/src/costs.rs`).
//!
//! The probe account's layout: u32 records written, u32 the cost of one
//! probe read (two reads back to back), u32 the cost of writing a record,
//! then from offset 16 one record of 16 bytes per part: kind, units, charge
//! and measured compute units (u32 each), the measured figure still holding
//! one probe read. A chunk's kind is its `ChunkKind`; the turn's own parts
//! are the `PART_*` kinds.

use curta_core::planner::{ChunkKind, Probe};

use crate::syscalls::sol_remaining_compute_units;

/// The turn's own parts, each since the one before: the accounts and their
/// checks; the core's checks before its first chunk; the core's end of
/// turn; the payment and the receipt.
pub const PART_CHECKS: u32 = 0xFF00;
pub const PART_PROLOGUE: u32 = 0xFF02;
pub const PART_EPILOGUE: u32 = 0xFF03;
pub const PART_RECEIPT: u32 = 0xFF04;
/// The walker's finding of the chunk that follows.
pub const PART_WALK: u32 = 0xFF05;

const RECORDS: usize = 16;
const RECORD_LEN: usize = 16;

pub struct ComputeProbe<'a> {
    out: &'a mut [u8],
    count: usize,
    last: u64,
}

fn remaining() -> u64 {
    // SAFETY: the syscall takes no arguments.
    unsafe { sol_remaining_compute_units() }
}

fn put(out: &mut [u8], at: usize, v: u32) {
    if let Some(b) = out.get_mut(at..at + 4) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

impl<'a> ComputeProbe<'a> {
    /// Starts measuring: the cost of a read and of writing a record, then
    /// the first mark.
    pub fn new(out: &'a mut [u8]) -> Self {
        let mut probe = ComputeProbe {
            out,
            count: 0,
            last: 0,
        };
        let a = remaining();
        let b = remaining();
        probe.record(&[0; 4]);
        // The calibration's record is written again by the first mark.
        let c = remaining();
        probe.count = 0;
        put(probe.out, 4, (a - b) as u32);
        put(probe.out, 8, (b - c - (a - b)) as u32);
        probe.last = remaining();
        probe
    }

    /// Records what ran since the last mark as `kind`.
    pub fn mark(&mut self, kind: u32, units: u32, charge: u32) {
        self.mark_with(|| (ChunkKind(kind), units, charge));
    }

    /// `mark`, describing what ran only after the read.
    fn mark_with(&mut self, describe: impl FnOnce() -> (ChunkKind, u32, u32)) {
        let now = remaining();
        let (kind, units, charge) = describe();
        self.record(&[kind.0, units, charge, (self.last - now) as u32]);
        self.last = remaining();
    }

    /// Never inlined, so that writing a record costs the same in the
    /// calibration as in every mark.
    #[inline(never)]
    fn record(&mut self, values: &[u32; 4]) {
        let at = RECORDS + self.count * RECORD_LEN;
        if at + RECORD_LEN <= self.out.len() {
            for (i, &v) in values.iter().enumerate() {
                put(self.out, at + 4 * i, v);
            }
            self.count += 1;
            put(self.out, 0, self.count as u32);
        }
    }
}

impl Probe for ComputeProbe<'_> {
    fn begin(&mut self) {
        self.mark(PART_PROLOGUE, 0, 0);
    }

    fn walked(&mut self) {
        self.mark(PART_WALK, 0, 0);
    }

    fn chunk(&mut self, describe: impl FnOnce() -> (ChunkKind, u32, u32)) {
        self.mark_with(describe);
    }
}
