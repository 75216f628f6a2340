//! Delivering a finished run (`deliver`): what its transaction names and
//! asks for, from the run account alone, and whether it pays its sender.
//! The `curta` CLI's crank and `@curta/sdk` (the module's `delivery_plan`)
//! build the same transaction from this.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::budget::{COMPUTE_BUDGET_OVERHEAD, MAX_TRANSACTION_CU};
use crate::protocol::{Address, RunAccount};
use crate::state::StateInfo;

/// What `deliver` spends besides its callback, with room: its checks, the
/// invocation and the closing (2,353 measured with the storyteller's
/// callback of three accounts, `replay/tests/storyteller.rs`).
pub const DELIVER_CU: u32 = 5_000;

/// A delivery to send: `deliver`'s accounts and what to ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub run: Address,
    /// Where the run's lamports go, but the fee.
    pub refund: Address,
    /// The program the callback invokes.
    pub program: Address,
    /// The callback's accounts in order, each with whether it is written.
    pub accounts: Vec<(Address, bool)>,
    /// The compute units to ask for: `deliver`'s, the callback's and the
    /// compute-budget instructions'.
    pub compute_units: u32,
    /// What the delivery pays its sender.
    pub fee: u64,
}

/// Why a run is not to be delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotDeliverable {
    /// Not a run, or its callback does not read.
    NotARun(String),
    /// It names no callback: its opener reads and closes it.
    NoCallback,
    /// More turns are needed first.
    NotFinished,
}

impl NotDeliverable {
    pub fn words(&self, run: &str) -> String {
        match self {
            NotDeliverable::NotARun(why) => format!("{run} cannot be delivered: {why}"),
            NotDeliverable::NoCallback => {
                format!("{run} names no callback: its opener reads it and closes it")
            }
            NotDeliverable::NotFinished => format!("{run} is not finished: crank it first"),
        }
    }
}

/// The delivery of the run at `address` whose account data is `data`.
pub fn plan(address: &Address, data: &[u8]) -> Result<Delivery, NotDeliverable> {
    let r = RunAccount::read(data)
        .map_err(|_| NotDeliverable::NotARun(String::from("it is not a Curta run")))?;
    let callback = match r.callback() {
        None => return Err(NotDeliverable::NoCallback),
        Some(Ok(c)) => c,
        Some(Err(e)) => {
            return Err(NotDeliverable::NotARun(format!(
                "its callback record does not read ({e:?})"
            )))
        }
    };
    let info = StateInfo::read(r.state())
        .map_err(|e| NotDeliverable::NotARun(format!("its state does not read ({e})")))?;
    if !info.complete {
        return Err(NotDeliverable::NotFinished);
    }
    let accounts = (0..callback.account_count())
        .map(|i| (*callback.account(i), callback.is_writable(i)))
        .collect();
    Ok(Delivery {
        run: *address,
        refund: *callback.refund(),
        program: *callback.program(),
        accounts,
        compute_units: DELIVER_CU
            .saturating_add(callback.compute_units())
            .saturating_add(COMPUTE_BUDGET_OVERHEAD)
            .min(MAX_TRANSACTION_CU),
        fee: r.delivery_fee(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::callback::{CallbackAccount, CallbackInit};
    use crate::protocol::{run, RunAccountMut, RunInit};

    fn run_with(callback: Option<&[u8]>, phase: u32) -> Vec<u8> {
        let state_len = 256;
        let record = callback.unwrap_or(&[]);
        let mut data = std::vec![0u8; run::HEADER_LEN + state_len + record.len()];
        RunAccountMut(&mut data).init(&RunInit {
            model: &[1; 32],
            model_identity: &[2; 32],
            opener: &[3; 32],
            royalty: 0,
            deposited: 0,
            crank_fee: 0,
            crank_deposit: 0,
            tokens_at: 0,
            text_at: 0,
            seed: 0,
            allowance: 1_350_000,
            callback_at: callback.map_or(0, |_| (run::HEADER_LEN + state_len) as u32),
            delivery_fee: 7_000,
        });
        let state = &mut data[run::HEADER_LEN..];
        state[..8].copy_from_slice(&crate::state::STATE_TAG);
        state[8..12].copy_from_slice(&phase.to_le_bytes());
        data[run::HEADER_LEN + state_len..].copy_from_slice(record);
        data
    }

    #[test]
    fn a_finished_run_with_a_callback_plans_its_delivery() {
        let (program, refund, request) = ([4u8; 32], [5u8; 32], [6u8; 32]);
        let accounts = [CallbackAccount {
            address: &request,
            writable: true,
        }];
        let init = CallbackInit {
            program: &program,
            refund: &refund,
            compute_units: 20_000,
            accounts: &accounts,
            data: &[3],
        };
        let mut record = [0u8; 128];
        let n = init.encode_into(&mut record).unwrap();
        let data = run_with(Some(&record[..n]), 20);
        let d = plan(&[9; 32], &data).unwrap();
        assert_eq!((d.refund, d.program, d.fee), (refund, program, 7_000));
        assert_eq!(d.accounts, std::vec![(request, true)]);
        assert_eq!(
            d.compute_units,
            DELIVER_CU + 20_000 + COMPUTE_BUDGET_OVERHEAD
        );
        assert_ne!(RunAccount::read(&data).unwrap().callback_at(), 0);
        assert_eq!(
            plan(&[9; 32], &run_with(Some(&record[..n]), 19)),
            Err(NotDeliverable::NotFinished)
        );
        let plain = run_with(None, 20);
        assert_eq!(plan(&[9; 32], &plain), Err(NotDeliverable::NoCallback));
        assert_eq!(RunAccount::read(&plain).unwrap().callback_at(), 0);
        assert!(matches!(
            plan(&[9; 32], &data[..data.len() - 1]),
            Err(NotDeliverable::NotARun(_))
        ));
    }
}
