//! Fitting instructions into transactions of at most 1,232 bytes.

use curta_core::inference::RunParams;
use solana_instruction::Instruction;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_transaction::Transaction;

use crate::instructions::{self as ix, ModelKeys};

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
    params: &RunParams,
    create: Instruction,
) -> Vec<Vec<Instruction>> {
    open_transactions(program_id, keys, run, opener, payer, params, Some(create))
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
    params: &RunParams,
) -> Vec<Vec<Instruction>> {
    open_transactions(program_id, keys, run, opener, payer, params, None)
}

fn open_transactions(
    program_id: &Pubkey,
    keys: &ModelKeys,
    run: &Pubkey,
    opener: &Pubkey,
    payer: &Pubkey,
    params: &RunParams,
    create: Option<Instruction>,
) -> Vec<Vec<Instruction>> {
    let open = |staged: usize| ix::open_run(program_id, keys, run, opener, params, staged);
    let prompt = params.prompt;
    let mut out = vec![];
    let mut staged = 0;
    let mut first = create;
    // The opening, with the creation if it is still to send.
    let last = |first: &Option<Instruction>, staged: usize| {
        let mut ixs: Vec<Instruction> = first.iter().cloned().collect();
        ixs.push(open(staged));
        ixs
    };
    // Stage until the rest of the prompt fits the last transaction.
    while !fits(&last(&first, staged), payer) {
        let prefix: Vec<Instruction> = first.iter().cloned().collect();
        let n = most_that_fit(prompt.len() - staged, payer, |n| {
            let mut ixs = prefix.clone();
            ixs.push(ix::write_prompt(
                program_id,
                run,
                staged,
                &prompt[staged..staged + n],
            ));
            ixs
        });
        let mut ixs = prefix;
        ixs.push(ix::write_prompt(
            program_id,
            run,
            staged,
            &prompt[staged..staged + n],
        ));
        out.push(ixs);
        first = None;
        staged += n;
    }
    out.push(last(&first, staged));
    out
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
        let (program, payer) = (Pubkey::new_unique(), Pubkey::new_unique());
        let k = keys();
        // A write with the owner paying: 246 bytes besides the payload.
        let w = ix::write(&program, &k.model, &k.weights[1], &payer, 0, &[0; 986]);
        assert_eq!(transaction_size(&[w], &payer), PACKET_DATA_SIZE);
        // Create and open together: prompts up to 748 bytes with the
        // opener paying, 652 when another account pays.
        let run = Pubkey::new_unique();
        for (opener, most) in [(payer, 748), (Pubkey::new_unique(), 652)] {
            let prompt = vec![b'a'; most];
            let p = RunParams {
                prompt: &prompt,
                max_tokens: 1,
                temperature_q16: 0,
                seed: 0,
            };
            let ixs = [
                create(&payer, &run, &program),
                ix::open_run(&program, &k, &run, &opener, &p, 0),
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
                &p,
                create(&payer, &run, &program),
            );
            assert_eq!(txs.len(), if len <= 748 { 1 } else { 2 }, "{len}");
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
            // Already created: the same staging and opening, no creation.
            let again = open_created_run_transactions(&program, &keys(), &run, &payer, &payer, &p);
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
