//! Opening and closing a run as functions of what the chain holds. A host
//! derives the run's address (`keys`), reads the account there, and asks
//! `next`: create it and open, finish an opening an interrupted attempt
//! began, or nothing (the run is open already); anything else is refused
//! in words, before a lamport moves. `deposit` is what the opening puts in
//! the run, and `close` checks a run before its opener closes it. How the
//! transactions carry the prompt is `packing::open_steps`.

use crate::client::base58;
use crate::format::Config;
use crate::protocol::{run, Address, RunAccount, RUN_TAG};
use std::format;
use std::string::{String, ToString};

/// A run to open: who opens it on which model, and its sizes.
#[derive(Clone, Copy, Debug)]
pub struct Opening<'a> {
    /// The Curta program, which must own the run's account.
    pub program: &'a Address,
    pub run: &'a Address,
    pub model: &'a Address,
    pub opener: &'a Address,
    /// The model's configuration (its flags' classifier applied).
    pub config: &'a Config,
    /// The model's royalty per token.
    pub royalty: u64,
    pub prompt_len: usize,
    pub max_tokens: u32,
    /// Lamports deposited for the crank fees (0: no fee).
    pub crank_deposit: u64,
}

/// An account as read from the chain.
#[derive(Clone, Copy, Debug)]
pub struct Found<'a> {
    pub owner: &'a Address,
    pub lamports: u64,
    pub data: &'a [u8],
}

/// What an opening puts in the run account, all of which closing returns
/// but what the run paid out: its rent, the escrow (royalty times max
/// tokens) and the crank deposit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deposit {
    pub account_len: usize,
    pub rent: u64,
    pub escrow: u64,
    pub crank: u64,
    /// The `create_account`'s lamports: the three together.
    pub total: u64,
}

/// The run account's length for this opening (no callback record: a
/// callback is named by a program opening by CPI).
pub fn account_len(o: &Opening) -> Result<usize, String> {
    run::account_size(o.config, o.prompt_len, o.max_tokens, 0).map_err(|e| e.to_string())
}

/// What the opening deposits, with `rent` the rent exemption of
/// `account_len` bytes as the cluster gives it.
pub fn deposit(o: &Opening, rent: u64) -> Result<Deposit, String> {
    let escrow = o
        .royalty
        .checked_mul(o.max_tokens as u64)
        .ok_or("the royalty times max tokens overflows 64 bits")?;
    let total = rent
        .checked_add(escrow)
        .and_then(|n| n.checked_add(o.crank_deposit))
        .ok_or("the rent, escrow and crank deposit together overflow 64 bits")?;
    Ok(Deposit {
        account_len: account_len(o)?,
        rent,
        escrow,
        crank: o.crank_deposit,
        total,
    })
}

/// What opening does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// No account yet: create it with `Deposit::total` and open
    /// (`open_steps` with the creation).
    Create,
    /// An attempt that stopped before the opening landed created the
    /// account, which holds the deposit already: stage the prompt again
    /// (the same bytes to the same place) and open (`open_steps` without
    /// the creation).
    Finish,
    /// The run is open: nothing to send.
    Opened,
}

impl Step {
    /// Whether this step locks the deposit (creates the account).
    pub fn locks(self) -> bool {
        self == Step::Create
    }
}

/// The next step of opening `o`, from the account at the run's address
/// (`None`: no account). Refused: an account another program owns, a run
/// of another model or opener, an account of the program of another
/// length, or one with anything but staged prompt bytes in it.
pub fn next(o: &Opening, found: Option<&Found>) -> Result<Step, String> {
    let Some(a) = found else {
        return Ok(Step::Create);
    };
    let name = base58::encode(o.run);
    if a.owner != o.program {
        return Err(format!(
            "{name} (this run's address) is held by {}, not the curta program",
            base58::encode(a.owner)
        ));
    }
    if a.data.starts_with(&RUN_TAG) {
        let r = RunAccount::read(a.data).map_err(|_| format!("{name} is damaged"))?;
        if r.model() != o.model || r.opener() != o.opener {
            return Err(format!("{name} is a run of another model or opener"));
        }
        return Ok(Step::Opened);
    }
    // Staging writes only the prompt's place (`PromptStage`), and no tag.
    let unopened = a
        .data
        .get(..run::PROMPT)
        .is_some_and(|h| h.iter().all(|&b| b == 0));
    if a.data.len() == account_len(o)? && unopened {
        return Ok(Step::Finish);
    }
    Err(format!("{name} (this run's address) holds something else"))
}

/// Checks that `signer` may close the run at `run_address`, from the
/// account there; gives the lamports closing returns to the opener.
pub fn close(
    program: &Address,
    run_address: &Address,
    signer: &Address,
    found: Option<&Found>,
) -> Result<u64, String> {
    let name = base58::encode(run_address);
    let Some(a) = found else {
        return Err(format!(
            "there is no run account at {name} (closed already?)"
        ));
    };
    if a.owner != program {
        return Err(format!(
            "{name} is not an account of the curta program {}",
            base58::encode(program)
        ));
    }
    let r = RunAccount::read(a.data).map_err(|_| format!("{name} is not an opened run"))?;
    if r.opener() != signer {
        return Err(format!(
            "run {name} was opened by {}, not the signer {}: only its opener can close it",
            base58::encode(r.opener()),
            base58::encode(signer)
        ));
    }
    Ok(a.lamports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ChargeTable;
    use crate::protocol::{RunAccountMut, RunInit};
    use std::vec;

    const CONFIG: Config = Config {
        dim: 64,
        hidden_dim: 172,
        n_layers: 5,
        n_heads: 8,
        n_kv_heads: 4,
        vocab_size: 512,
        seq_len: 512,
        charges: ChargeTable::Specification,
        shared_classifier: true,
    };

    fn opening() -> Opening<'static> {
        Opening {
            program: &[1; 32],
            run: &[2; 32],
            model: &[3; 32],
            opener: &[4; 32],
            config: &CONFIG,
            royalty: 10,
            prompt_len: 16,
            max_tokens: 12,
            crank_deposit: 500,
        }
    }

    fn opened(model: &Address, opener: &Address) -> std::vec::Vec<u8> {
        let mut data = vec![0u8; account_len(&opening()).unwrap()];
        RunAccountMut(&mut data).init(&RunInit {
            model,
            model_identity: &[9; 32],
            opener,
            royalty: 10,
            deposited: 120,
            crank_fee: 0,
            crank_deposit: 0,
            tokens_at: 0,
            text_at: 0,
            seed: 0,
            allowance: 1_350_000,
            callback_at: 0,
            delivery_fee: 0,
        });
        data
    }

    #[test]
    fn the_deposit_is_rent_escrow_and_crank_deposit() {
        let o = opening();
        assert_eq!(account_len(&o), Ok(256 + 48_048));
        let d = deposit(&o, 1_000).unwrap();
        assert_eq!(
            (d.rent, d.escrow, d.crank, d.total),
            (1_000, 120, 500, 1_620)
        );
        let greedy = Opening {
            royalty: u64::MAX,
            ..o
        };
        assert_eq!(
            deposit(&greedy, 0),
            Err("the royalty times max tokens overflows 64 bits".to_string())
        );
        assert_eq!(
            deposit(&o, u64::MAX),
            Err("the rent, escrow and crank deposit together overflow 64 bits".to_string())
        );
    }

    /// `next` for the account `owner` holds at the run's address.
    fn step_for(owner: &Address, data: &[u8]) -> Result<Step, String> {
        let held = Found {
            owner,
            lamports: 7,
            data,
        };
        next(&opening(), Some(&held))
    }

    #[test]
    fn each_thing_at_the_runs_address_gives_its_step() {
        let (program, stranger) = ([1; 32], [5; 32]);
        assert_eq!(next(&opening(), None), Ok(Step::Create));
        let len = account_len(&opening()).unwrap();
        let created = vec![0u8; len];
        assert_eq!(step_for(&program, &created), Ok(Step::Finish));
        // Staged prompt bytes are still an unopened account.
        let mut staged = created.clone();
        staged[run::PROMPT..run::PROMPT + 3].copy_from_slice(b"abc");
        assert_eq!(step_for(&program, &staged), Ok(Step::Finish));
        let open = opened(&[3; 32], &[4; 32]);
        assert_eq!(step_for(&program, &open), Ok(Step::Opened));
        let run = base58::encode(&[2; 32]);
        assert_eq!(
            step_for(&stranger, &created),
            Err(format!(
                "{run} (this run's address) is held by {}, not the curta program",
                base58::encode(&stranger)
            ))
        );
        for other in [opened(&[8; 32], &[4; 32]), opened(&[3; 32], &[8; 32])] {
            assert_eq!(
                step_for(&program, &other),
                Err(format!("{run} is a run of another model or opener"))
            );
        }
        assert_eq!(
            step_for(&program, &open[..100]),
            Err(format!("{run} is damaged"))
        );
        let mut stray = created.clone();
        stray[run::PROMPT - 1] = 1;
        for other in [&created[..len - 1], &stray] {
            assert_eq!(
                step_for(&program, other),
                Err(format!("{run} (this run's address) holds something else"))
            );
        }
        assert!(Step::Create.locks() && !Step::Finish.locks() && !Step::Opened.locks());
    }

    #[test]
    fn only_the_opener_closes_a_run_of_the_program() {
        let (program, run, opener) = ([1; 32], [2; 32], [4; 32]);
        let data = opened(&[3; 32], &opener);
        let held = |owner| Found {
            owner,
            lamports: 9_999,
            data: &data,
        };
        let name = base58::encode(&run);
        assert_eq!(
            close(&program, &run, &opener, Some(&held(&program))),
            Ok(9_999)
        );
        assert_eq!(
            close(&program, &run, &opener, None),
            Err(format!(
                "there is no run account at {name} (closed already?)"
            ))
        );
        assert_eq!(
            close(&program, &run, &opener, Some(&held(&[6; 32]))),
            Err(format!(
                "{name} is not an account of the curta program {}",
                base58::encode(&program)
            ))
        );
        assert_eq!(
            close(&program, &run, &[8; 32], Some(&held(&program))),
            Err(format!(
                "run {name} was opened by {}, not the signer {}: only its opener can close it",
                base58::encode(&opener),
                base58::encode(&[8; 32])
            ))
        );
        let created = vec![0u8; 400];
        let unopened = Found {
            owner: &program,
            lamports: 1,
            data: &created,
        };
        assert_eq!(
            close(&program, &run, &opener, Some(&unopened)),
            Err(format!("{name} is not an opened run"))
        );
    }
}
