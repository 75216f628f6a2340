//! Instruction dispatch. For now two instructions that exercise the
//! toolchain and let compute-unit costs be measured:
//! - `[0]`: ping; logs and succeeds.
//! - `[1, count: u32 LE, ..]`: `count` int8 multiply-adds over the
//!   instruction data, so the compute units per iteration can be read off.
//!
//! Anything else fails with `InvalidInstructionData`.

use crate::entrypoint::InstructionInput;
use crate::error::{ProgramError, ProgramResult};
use crate::log;

pub const PING: u8 = 0;
pub const SPIN: u8 = 1;

pub fn process_instruction(ix: &InstructionInput) -> ProgramResult {
    match ix.data {
        [PING] => {
            log::log("curta: ping");
            Ok(())
        }
        [SPIN, a, b, c, d, ..] => {
            let count = u32::from_le_bytes([*a, *b, *c, *d]);
            let acc = spin(count, ix.data);
            log::log_64(u64::from(count), u64::from(acc as u32), 0, 0, 0);
            Ok(())
        }
        _ => Err(ProgramError::INVALID_INSTRUCTION_DATA),
    }
}

/// `count` steps of `acc += data[j] * data[j - 1]` (as int8, wrapping at
/// i32), walking `data` cyclically: one load, one multiply and one add a
/// step, like the model's int8 dot products. `data` is never empty.
#[inline(never)]
pub fn spin(count: u32, data: &[u8]) -> i32 {
    let mut acc: i32 = 0;
    let mut prev: i32 = 0;
    let mut remaining = count as usize;
    // Whole passes over a slice: no index wrap or bounds check in the loop
    // body, so the per-step cost is close to that of a plain kernel loop.
    while remaining > 0 {
        let n = remaining.min(data.len());
        for &b in &data[..n] {
            let x = i32::from(b as i8);
            acc = acc.wrapping_add(x * prev);
            prev = x;
        }
        remaining -= n;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entrypoint::tests::serialize;
    use crate::entrypoint::{deserialize, MAX_ACCOUNTS};
    use core::mem::MaybeUninit;

    fn run(data: &[u8]) -> ProgramResult {
        let mut buf = serialize(&[], data, &[0; 32]);
        let mut views = [const { MaybeUninit::uninit() }; MAX_ACCOUNTS];
        let ix = unsafe { deserialize(buf.as_mut_ptr() as *mut u8, &mut views) };
        process_instruction(&ix)
    }

    #[test]
    fn ping_succeeds() {
        assert_eq!(run(&[PING]), Ok(()));
    }

    #[test]
    fn unknown_or_malformed_fails() {
        for data in [&[][..], &[2], &[PING, 0], &[SPIN, 1, 0, 0], &[0xFF]] {
            assert_eq!(
                run(data),
                Err(ProgramError::INVALID_INSTRUCTION_DATA),
                "{data:?}"
            );
        }
    }

    #[test]
    fn spin_runs() {
        assert_eq!(run(&[SPIN, 100, 0, 0, 0, 3, 0xFF]), Ok(()));
        // data = [1, 2, 0, 0, 0]: steps multiply 1*0, 2*1, 0*2, 0, 0, then 1*0, 2*1.
        assert_eq!(spin(7, &[1, 2, 0, 0, 0]), 4);
        // -1 * -1 as int8 is +1 for each step after the first.
        assert_eq!(spin(10, &[0xFF]), 9);
        assert_eq!(spin(0, &[5]), 0);
    }
}
