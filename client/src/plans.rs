//! The flows `curta` runs, as plans: each step's transactions, built from
//! what the chain holds and the artifact, with no I/O inside. Executors
//! send them: the RPC executor (`upload`, `runs`, `crank`, through
//! `sender`: windowed and journaled) and the harness's program-test
//! executor (`replay/src/program_test.rs`), so the SBF-VM tests send the very
//! transactions `curta` sends. The fuzz target's emulated runtime builds
//! its transactions with the same instruction codec (`curta_core::protocol`)
//! but in the orders and with the accounts its input chooses, which a plan
//! of the happy path never would; it stays free of the RPC client.

use curta_core::client::upload;
use curta_core::protocol::{self, model, weight};
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;

use crate::instructions::{self as ix, ModelKeys, ModelParams};
use crate::transaction_fit;

/// One transaction of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// What it does, for errors: "writing section 1 at offset 4,930".
    pub what: String,
    pub instructions: Vec<Instruction>,
    /// Who signs besides the payer: the accounts it creates.
    pub signers: Vec<Pubkey>,
    /// Its share of the progress (bytes written, say).
    pub units: u64,
}

/// Who an upload's transactions name: the program, who funds the
/// accounts it creates, and the model's owner (one signer in `curta`).
#[derive(Clone, Copy, Debug)]
pub struct Uploader<'a> {
    pub program: &'a Pubkey,
    pub payer: &'a Pubkey,
    pub owner: &'a Pubkey,
}

/// The model's account created (with its `lamports` of rent) and
/// initialized for `params`: one transaction.
pub fn create_model(
    u: Uploader,
    config: &Pubkey,
    model_key: &Pubkey,
    params: &ModelParams,
    sections: usize,
    lamports: u64,
) -> Planned {
    let len = model::len(sections);
    let create = solana_system_interface::instruction::create_account(
        u.payer, model_key, lamports, len as u64, u.program,
    );
    Planned {
        what: "creating the model".into(),
        instructions: vec![
            create,
            ix::init_model(u.program, config, model_key, u.owner, params),
        ],
        signers: vec![*model_key],
        units: 1,
    }
}

/// A weight account for section `i` (`len` bytes) created with its
/// `lamports` of rent and bound to the model: one transaction.
pub fn bind_weight(
    u: Uploader,
    model_key: &Pubkey,
    i: u32,
    weight_key: &Pubkey,
    len: usize,
    lamports: u64,
) -> Planned {
    let space = weight::HEADER_LEN + len;
    let create = solana_system_interface::instruction::create_account(
        u.payer,
        weight_key,
        lamports,
        space as u64,
        u.program,
    );
    Planned {
        what: format!("binding a weight account to section {i}"),
        instructions: vec![
            create,
            ix::bind_weight(u.program, model_key, weight_key, u.owner, i),
        ],
        signers: vec![*weight_key],
        units: 1,
    }
}

/// The most weight bytes one `write` transaction carries, `payer` paying
/// and no compute-budget instruction: 986 today when the owner pays (as
/// `curta` does), less when another payer signs too.
pub fn most_write_bytes(program: &Pubkey, keys: &ModelKeys, payer: &Pubkey) -> usize {
    transaction_fit::most_that_fit(protocol::MAX_ACCOUNT_LEN, payer, |n| {
        vec![ix::write(
            program,
            &keys.model,
            &keys.weights[0],
            &keys.owner,
            0,
            &vec![0; n],
        )]
    })
}

/// The writes of section `i`'s chunks whose bytes the weight account does
/// not hold yet (`held`: its bytes; `curta_core::client::upload`'s rule).
pub fn writes(
    program: &Pubkey,
    keys: &ModelKeys,
    i: usize,
    section: &[u8],
    held: &[u8],
    chunk: usize,
) -> Vec<Planned> {
    upload::missing_chunks(section, held, chunk)
        .map(|(offset, len)| write(program, keys, i, offset, &section[offset..offset + len]))
        .collect()
}

/// The write of `bytes` at `offset` of section `i`.
pub fn write(program: &Pubkey, keys: &ModelKeys, i: usize, offset: usize, bytes: &[u8]) -> Planned {
    Planned {
        what: format!("writing section {i} at offset {offset}"),
        instructions: vec![ix::write(
            program,
            &keys.model,
            &keys.weights[i],
            &keys.owner,
            offset as u64,
            bytes,
        )],
        signers: vec![],
        units: bytes.len() as u64,
    }
}

/// The `call`-th `seal_section` of section `i`: each asks for a slightly
/// different limit, so two calls are never the same transaction.
pub fn seal_section(
    program: &Pubkey,
    keys: &ModelKeys,
    i: usize,
    digest: &[u8; 32],
    call: usize,
) -> Planned {
    Planned {
        what: format!("sealing section {i}"),
        instructions: vec![
            ComputeBudgetInstruction::set_compute_unit_limit(upload::seal_cu(call)),
            ix::seal_section(program, &keys.model, &keys.weights[i], &keys.owner, digest),
        ],
        signers: vec![],
        units: 1,
    }
}

/// `seal_model`, once every section is sealed.
pub fn seal_model(program: &Pubkey, keys: &ModelKeys) -> Planned {
    Planned {
        what: "sealing the model".into(),
        instructions: vec![ix::seal_model(
            program,
            &keys.model,
            &keys.weights[0],
            &keys.owner,
        )],
        signers: vec![],
        units: 1,
    }
}

/// A turn (`instructions::turn`) after its compute-unit limit and a
/// priority price when there is one (micro-lamports per unit).
pub fn turn(turn: Instruction, cu_limit: u32, price: u64) -> Vec<Instruction> {
    let mut ixs = vec![ComputeBudgetInstruction::set_compute_unit_limit(cu_limit)];
    if price > 0 {
        ixs.push(ComputeBudgetInstruction::set_compute_unit_price(price));
    }
    ixs.push(turn);
    ixs
}
