//! Whether the signer can pay: a command that locks rent or escrow checks
//! the signer's balance against all it will spend before sending anything,
//! and names each part when it is short.

use solana_pubkey::Pubkey;

use crate::bail;
use crate::cluster::Cluster;
use crate::errors::Result;
use crate::output::sol;

/// What a command will spend, part by part (`rent`, `escrow`, `fees`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needed {
    pub parts: Vec<(&'static str, u64)>,
}

impl Needed {
    pub fn new() -> Needed {
        Needed::default()
    }

    pub fn with(mut self, part: &'static str, lamports: u64) -> Needed {
        if lamports > 0 {
            self.parts.push((part, lamports));
        }
        self
    }

    pub fn total(&self) -> u64 {
        self.parts.iter().map(|(_, l)| l).sum()
    }

    /// `0.002 SOL of rent, 0.1 SOL of escrow and 0.0001 SOL of fees`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(what, l)| format!("{} of {what}", sol(*l)))
            .collect();
        match parts.split_last() {
            None => "nothing".into(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }
}

/// How to get SOL, for a message about a balance `short` lamports short:
/// an airdrop of that much, in whole SOL (at least 1).
pub fn how_to_fund(signer: &Pubkey, short: u64) -> String {
    let whole = short.div_ceil(1_000_000_000).max(1);
    format!(
        "fund it: `curta airdrop {whole}` on localnet, devnet or testnet, or send SOL to {signer}"
    )
}

/// Refuses, before anything is sent, what the signer's balance cannot pay.
pub async fn ensure(cluster: &Cluster, what: &str, needed: &Needed) -> Result<u64> {
    let signer = cluster.payer_key();
    let balance = cluster.balance(&signer).await?;
    if balance < needed.total() {
        bail!(
            "the signer {signer} has {}, and {what} needs {}: {}; {} (nothing was sent)",
            sol(balance),
            sol(needed.total()),
            needed.describe(),
            how_to_fund(&signer, needed.total() - balance)
        );
    }
    Ok(balance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_airdrop_of_what_is_short() {
        let k = Pubkey::new_from_array([1; 32]);
        assert!(how_to_fund(&k, 4_039_000_000).contains("`curta airdrop 5`"));
        assert!(how_to_fund(&k, 5_000).contains("`curta airdrop 1`"));
    }

    #[test]
    fn parts_in_words() {
        assert_eq!(Needed::new().describe(), "nothing");
        let n = Needed::new()
            .with("rent", 2_000_000)
            .with("escrow", 0)
            .with("fees", 15_000);
        assert_eq!(n.total(), 2_015_000);
        assert_eq!(
            n.describe(),
            "0.002000000 SOL of rent and 0.000015000 SOL of fees"
        );
        let three = n.clone().with("escrow", 1);
        assert_eq!(
            three.describe(),
            "0.002000000 SOL of rent, 0.000015000 SOL of fees and 0.000000001 SOL of escrow"
        );
    }
}
