//! A session key: a fresh key a wallet funds in one transaction, which
//! then runs one run for it (opens and cranks it, or, when crankers send
//! the turns, is named its opener) and closes it, and sends back what it
//! holds. The page's "Sign once" flow uses it through the SDK
//! (`sessionKeyFunding`, `sendBack`); what the wallet sends is written here
//! once.

/// What a session key's funding depends on besides the run's quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Funding {
    /// The cluster's fee for one signature.
    pub lamports_per_signature: u64,
    /// The rent exemption of an account with no data: a fee payer keeps it
    /// while it holds anything.
    pub key_rent: u64,
    /// Crankers send the turns: the wallet's own transaction opens the run
    /// and pays its deposits, and the key only closes it.
    pub crankers: bool,
}

/// The lamports a wallet sends a session key for a run whose opening puts
/// `deposit` in it (rent, escrow, crank deposit) and whose transactions pay
/// `fees`: with crankers, the key's two signatures (the close and the
/// transfer back); else the deposit, every fee, half the fees again for
/// turns resent after a reordering, and the transfer back's signature.
/// Both add the key's rent exemption. What is not spent comes back. `None`
/// when the sum does not fit a u64. The margin bounds the crank's window,
/// not the other way round: the crank keeps the close's fee and never sends
/// a turn whose failure would leave the rest unpaid (`crank`'s
/// `affordable`), so a run with many reorderings is slower, never short.
pub fn funding(deposit: u64, fees: u64, f: &Funding) -> Option<u64> {
    let spent = match f.crankers {
        true => f.lamports_per_signature.checked_mul(2)?,
        false => deposit
            .checked_add(fees)?
            .checked_add(f.lamports_per_signature)?
            .checked_add(fees.div_ceil(2))?,
    };
    spent.checked_add(f.key_rent)
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Funding = Funding {
        lamports_per_signature: 5_000,
        key_rent: 890_880,
        crankers: false,
    };

    #[test]
    fn the_key_gets_what_its_transactions_spend_and_its_rent() {
        // Cranking itself: the deposit, the fees and half again, the
        // transfer back, the rent exemption.
        assert_eq!(
            funding(1_000_000, 100_001, &F),
            Some(1_000_000 + 100_001 + 5_000 + 50_001 + 890_880)
        );
        // Crankers crank: the close and the transfer back, the rent.
        let crankers = Funding {
            crankers: true,
            ..F
        };
        assert_eq!(
            funding(1_000_000, 100_001, &crankers),
            Some(10_000 + 890_880)
        );
        assert_eq!(funding(u64::MAX, 1, &F), None);
    }
}
