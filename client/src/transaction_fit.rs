//! Fitting instructions into transactions of at most 1,232 bytes: the
//! sizes of this client's (legacy) messages, and the opening's
//! transactions as the client core plans them (`curta_core::client::packing`,
//! whose size model the tests below hold to this serializer's).

use curta_core::inference::RunParams;
use curta_core::protocol::run::CrankFee;
use solana_instruction::Instruction;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_transaction::Transaction;

use crate::instructions::{self as ix, ModelKeys};
use curta_core::client::packing::{self, Version};

/// The most bytes a transaction may take on the wire.
pub const PACKET_DATA_SIZE: usize = 1232;

/// The size on the wire of a transaction of `ixs` paid by `payer`, with
/// every signature it needs.
pub fn transaction_size(ixs: &[Instruction], payer: &Pubkey) -> usize {
    let message = Message::new(ixs, Some(payer));
    let tx = Transaction::new_unsigned(message);
    bincode::serialized_size(&tx).map_or(usize::MAX, |n| n as usize)
}

/// Whether `ixs` fit one transaction paid by `payer`.
pub fn fits(ixs: &[Instruction], payer: &Pubkey) -> bool {
    transaction_size(ixs, payer) <= PACKET_DATA_SIZE
}

/// The most bytes of `data` that fit when `build(n)` makes the
/// instructions carrying its first `n` bytes (by bisection).
pub fn most_that_fit(
    len: usize,
    payer: &Pubkey,
    build: impl Fn(usize) -> Vec<Instruction>,
) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&build(mid), payer) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The transactions that create a run account and open it: `create` (the
/// System instruction) and the opening together when the prompt allows,
/// else the creation with the first part of the prompt staged
/// (`write_prompt`), more staging if needed, and the opening with the rest.
/// Every transaction is signed by the payer and the run; the last by the
/// opener too.
pub fn open_run_transactions(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    payer: &Pubkey,
    terms: (&RunParams, &CrankFee),
    create: Instruction,
) -> Vec<Vec<Instruction>> {
    open_transactions(program_id, keys, run, opener, payer, terms, Some(create))
}

/// `open_run_transactions` for a run account already created (by an
/// earlier attempt that stopped before the opening landed): the prompt
/// staged again from the start, then the opening. Staging writes the same
/// bytes to the same place, so repeating it is harmless.
pub fn open_created_run_transactions(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    payer: &Pubkey,
    terms: (&RunParams, &CrankFee),
) -> Vec<Vec<Instruction>> {
    open_transactions(program_id, keys, run, opener, payer, terms, None)
}

/// `open_run_transactions` with the creation (`Some`), or
/// `open_created_run_transactions` without it (`None`).
pub fn open_transactions(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    payer: &Pubkey,
    (params, crank): (&RunParams, &CrankFee),
    create: Option<Instruction>,
) -> Vec<Vec<Instruction>> {
    let prompt = params.prompt;
    // Legacy messages: what this client sends.
    let steps = packing::open_steps(
        Version::Legacy,
        prompt.len(),
        create.is_some(),
        opener == payer,
    );
    steps
        .into_iter()
        .map(|s| {
            let mut ixs: Vec<Instruction> = create.iter().filter(|_| s.create).cloned().collect();
            if let Some(r) = s.stage {
                ixs.push(ix::write_prompt(program_id, run, r.start, &prompt[r]));
            }
            if let Some(staged) = s.open {
                ixs.push(ix::open_run(
                    program_id, keys, run, opener, params, crank, staged,
                ));
            }
            ixs
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use curta_core::protocol::{Instruction as Ix, MAX_ACCOUNT_LEN};

    fn keys() -> ModelKeys {
        ModelKeys {
            config_account: Pubkey::new_unique(),
            model: Pubkey::new_unique(),
            owner: Pubkey::new_unique(),
            weights: vec![Pubkey::new_unique(); 3],
            royalty: u64::MAX,
            identity: [0xff; 32],
        }
    }

    fn create(payer: &Pubkey, run: &Pubkey, program: &Pubkey) -> Instruction {
        solana_system_interface::instruction::create_account(
            payer,
            run,
            1,
            MAX_ACCOUNT_LEN as u64,
            program,
        )
    }

    /// The figures `docs/program.md` gives.
    #[test]
    fn documented_sizes() {
        // The core's chunk, the owner paying, is what fits here.
        let (program, owner) = (Pubkey::new_unique(), Pubkey::new_unique());
        let most = crate::plans::most_write_bytes(&program, &ModelKeys { owner, ..keys() }, &owner);
        assert_eq!(packing::write_chunk(Version::Legacy), most);
        let (program, payer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let k = keys();
        // A write with the owner paying: 246 bytes besides the payload.
        let w = ix::write(&program, &k.model, &k.weights[1], &payer, 0, &[0; 986]);
        assert_eq!(transaction_size(&[w], &payer), PACKET_DATA_SIZE);
        // Create and open together: prompts up to 720 bytes with the
        // opener paying, 624 when another account pays.
        let run = Pubkey::new_unique();
        for (opener, most) in [(payer, 720), (Pubkey::new_unique(), 624)] {
            let prompt = vec![b'a'; most];
            let p = RunParams {
                prompt: &prompt,
                max_tokens: 1,
                temperature_q16: 0,
                seed: 0,
            };
            let ixs = [
                create(&payer, &run, &program),
                ix::open_run(&program, &k, &run, &opener, &p, &CrankFee::default(), 0),
            ];
            assert_eq!(transaction_size(&ixs, &payer), PACKET_DATA_SIZE);
        }
    }

    #[test]
    fn long_prompts_are_staged() {
        let (program, payer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let run = Pubkey::new_unique();
        for len in [0, 16, 748, 749, 1000, 1024] {
            let prompt: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let p = RunParams {
                prompt: &prompt,
                max_tokens: 1,
                temperature_q16: 0,
                seed: 0,
            };
            let txs = open_run_transactions(
                &program,
                &keys(),
                &run,
                &payer,
                &payer,
                (&p, &CrankFee::default()),
                create(&payer, &run, &program),
            );
            assert_eq!(txs.len(), if len <= 720 { 1 } else { 2 }, "{len}");
            // Every transaction fits, and the staged bytes and the inline
            // rest make the prompt.
            let mut rebuilt = vec![0u8; len];
            for tx in &txs {
                assert!(fits(tx, &payer));
                for i in tx.iter().filter(|i| i.program_id == program) {
                    match Ix::decode(&i.data).unwrap() {
                        Ix::WritePrompt { offset, bytes } => rebuilt
                            [offset as usize..offset as usize + bytes.len()]
                            .copy_from_slice(bytes),
                        Ix::OpenRun { staged, prompt, .. } => {
                            rebuilt[staged as usize..].copy_from_slice(prompt)
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
            assert_eq!(rebuilt, prompt);
            // The core's size model is this serializer's.
            for tx in &txs {
                let keys: std::collections::BTreeSet<Pubkey> = tx
                    .iter()
                    .flat_map(|i| i.accounts.iter().map(|m| m.pubkey).chain([i.program_id]))
                    .chain([payer])
                    .collect();
                let signers: std::collections::BTreeSet<Pubkey> = tx
                    .iter()
                    .flat_map(|i| i.accounts.iter().filter(|m| m.is_signer).map(|m| m.pubkey))
                    .chain([payer])
                    .collect();
                let shape = packing::Shape {
                    signers: signers.len(),
                    keys: keys.len(),
                    instructions: tx
                        .iter()
                        .map(|i| (i.accounts.len(), i.data.len()))
                        .collect(),
                };
                assert_eq!(
                    packing::size(Version::Legacy, &shape),
                    transaction_size(tx, &payer)
                );
            }
            // Already created: the same staging and opening, no creation.
            let again = open_created_run_transactions(
                &program,
                &keys(),
                &run,
                &payer,
                &payer,
                (&p, &CrankFee::default()),
            );
            assert!(again.len() <= txs.len(), "{len}");
            assert!(again.iter().all(|tx| fits(tx, &payer)), "{len}");
            let programs: Vec<Vec<Pubkey>> = again
                .iter()
                .map(|tx| tx.iter().map(|i| i.program_id).collect())
                .collect();
            assert!(programs.iter().flatten().all(|id| *id == program));
        }
    }
}
