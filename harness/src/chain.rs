//! The solana-program-test driver: the program's `.so` in the metered SBF
//! VM, and the accounts and transactions a client would make.

use std::sync::Once;

use curta_core::protocol::{
    self, model, run, weight, Instruction as Ix, CONFIG_TAG, MODEL_TAG, WEIGHT_TAG,
};
use curta_core::{planner, Config, Metadata};
use solana_account::Account;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::{AccountMeta, Instruction};
use solana_keypair::Keypair;
use solana_program_test::{ProgramTest, ProgramTestContext};
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};

use crate::models::section;

/// Where the tests load the program.
pub const PROGRAM_ID: Pubkey = Pubkey::new_from_array([0xC7; 32]);
/// What one transaction may use; every transaction asks for all of it.
pub const CU_LIMIT: u32 = 1_400_000;
/// Bytes of weights one `write` transaction carries.
pub const WRITE_CHUNK: usize = 700;

/// Points solana-program-test at the `.so` unless the caller already did.
/// Once, before any test starts a bank: `set_var` races with readers.
fn sbf_out_dir() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dir = std::env::var_os("SBF_OUT_DIR")
            .map(Into::into)
            .unwrap_or_else(crate::deploy_dir);
        let so = dir.join("curta_program.so");
        assert!(
            so.exists(),
            "{} is missing: run `make build-sbf`",
            so.display()
        );
        std::env::set_var("SBF_OUT_DIR", &dir);
    });
}

/// A bank with the program loaded from its `.so`, never a native build.
pub fn program_test() -> ProgramTest {
    sbf_out_dir();
    let mut pt = ProgramTest::default();
    pt.prefer_bpf(true);
    pt.add_program("curta_program", PROGRAM_ID, None);
    pt
}

/// What a transaction did.
#[derive(Debug)]
pub struct Outcome {
    pub result: Result<(), TransactionError>,
    /// The program's own compute units, from its "consumed N of M" line.
    pub program_cu: u64,
    pub logs: Vec<String>,
}

impl Outcome {
    /// The custom error code the program failed with, if it did.
    pub fn custom_error(&self) -> Option<u32> {
        match &self.result {
            Err(TransactionError::InstructionError(
                _,
                solana_instruction::error::InstructionError::Custom(c),
            )) => Some(*c),
            _ => None,
        }
    }

    /// The receipts the program logged with `sol_log_data`.
    pub fn data(&self) -> Vec<Vec<Vec<u8>>> {
        self.logs
            .iter()
            .filter_map(|l| l.strip_prefix("Program data: "))
            .map(|l| l.split(' ').map(base64_decode).collect())
            .collect()
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let mut n = 0u32;
        for (i, d) in group.iter().enumerate() {
            n |= (*d as u32) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..group.len()]);
    }
    out
}

/// A model's accounts.
#[derive(Clone, Debug)]
pub struct ModelKeys {
    pub model: Pubkey,
    pub owner: Pubkey,
    pub weights: Vec<Pubkey>,
}

/// A running bank and the transactions sent to it.
pub struct Chain {
    pub ctx: ProgramTestContext,
    /// Makes every transaction unique, so two identical turns both run.
    nonce: u32,
}

impl Chain {
    pub async fn start(pt: ProgramTest) -> Chain {
        Chain {
            ctx: pt.start_with_context().await,
            nonce: 0,
        }
    }

    pub fn payer(&self) -> &Keypair {
        &self.ctx.payer
    }

    /// Sends instructions in one transaction, after a compute budget
    /// instruction asking for `CU_LIMIT`, signed by the payer and `signers`.
    pub async fn send(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Outcome {
        self.nonce += 1;
        let mut all = vec![
            ComputeBudgetInstruction::set_compute_unit_limit(CU_LIMIT),
            // A different limit per transaction, far above what any needs:
            // otherwise a turn would repeat the last one's signature.
            ComputeBudgetInstruction::set_loaded_accounts_data_size_limit(
                64 * 1024 * 1024 - self.nonce,
            ),
        ];
        all.extend_from_slice(ixs);
        let mut keys: Vec<&Keypair> = vec![&self.ctx.payer];
        keys.extend(
            signers
                .iter()
                .filter(|k| k.pubkey() != self.ctx.payer.pubkey()),
        );
        let mut out;
        loop {
            let tx = Transaction::new_signed_with_payer(
                &all,
                Some(&self.ctx.payer.pubkey()),
                &keys,
                self.ctx.last_blockhash,
            );
            out = self
                .ctx
                .banks_client
                .process_transaction_with_metadata(tx)
                .await
                .expect("banks client");
            // The bank moves on in wall-clock time and forgets old blockhashes.
            if out.result != Err(TransactionError::BlockhashNotFound) {
                break;
            }
            self.ctx.last_blockhash = self
                .ctx
                .banks_client
                .get_latest_blockhash()
                .await
                .expect("blockhash");
        }
        let (logs, cu) = match out.metadata {
            Some(meta) => (meta.log_messages, 0),
            None => (vec![], 0),
        };
        let prefix = format!("Program {PROGRAM_ID} consumed ");
        let program_cu = logs
            .iter()
            .filter_map(|l| {
                l.strip_prefix(&prefix)?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum::<u64>()
            .max(cu);
        Outcome {
            result: out.result,
            program_cu,
            logs,
        }
    }

    pub async fn account(&mut self, key: &Pubkey) -> Option<Account> {
        self.ctx
            .banks_client
            .get_account(*key)
            .await
            .expect("banks client")
    }

    pub async fn data(&mut self, key: &Pubkey) -> Vec<u8> {
        self.account(key).await.map(|a| a.data).unwrap_or_default()
    }

    pub async fn lamports(&mut self, key: &Pubkey) -> u64 {
        self.account(key).await.map_or(0, |a| a.lamports)
    }

    pub async fn rent(&mut self, len: usize) -> u64 {
        self.ctx
            .banks_client
            .get_rent()
            .await
            .expect("rent")
            .minimum_balance(len)
    }

    /// A new account of `space` bytes owned by the program, funded with its
    /// rent plus `extra` lamports.
    pub async fn create(&mut self, space: usize, extra: u64) -> Keypair {
        let account = Keypair::new();
        let lamports = self.rent(space).await + extra;
        let ix = solana_system_interface::instruction::create_account(
            &self.ctx.payer.pubkey(),
            &account.pubkey(),
            lamports,
            space as u64,
            &PROGRAM_ID,
        );
        let out = self.send(&[ix], &[&account]).await;
        assert_eq!(out.result, Ok(()), "create_account: {:#?}", out.logs);
        account
    }

    /// Moves lamports from the payer to `to`.
    pub async fn fund(&mut self, to: &Pubkey, lamports: u64) {
        let ix =
            solana_system_interface::instruction::transfer(&self.ctx.payer.pubkey(), to, lamports);
        let out = self.send(&[ix], &[]).await;
        assert_eq!(out.result, Ok(()), "transfer: {:#?}", out.logs);
    }

    /// A config account initialized by `admin`.
    pub async fn init_config(&mut self, admin: &Keypair, allowance: u32) -> Pubkey {
        let config = self.create(protocol::config::LEN, 0).await;
        let ix = instruction(
            Ix::InitConfig { allowance },
            vec![
                AccountMeta::new(config.pubkey(), false),
                AccountMeta::new_readonly(admin.pubkey(), true),
            ],
        );
        let out = self.send(&[ix], &[admin]).await;
        assert_eq!(out.result, Ok(()), "init_config: {:#?}", out.logs);
        config.pubkey()
    }

    /// The real upload path: creates the model and weight accounts,
    /// `init_model`, `write` in chunks, then `seal_model` until sealed.
    pub async fn upload_model(
        &mut self,
        config: &Pubkey,
        artifact: &[u8],
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let keys = self
            .upload_model_unsealed(config, artifact, owner, royalty)
            .await;
        loop {
            let out = self.send(&[seal_ix(&keys)], &[owner]).await;
            assert_eq!(out.result, Ok(()), "seal_model: {:#?}", out.logs);
            let data = self.data(&keys.model).await;
            if protocol::ModelAccount(&data).status() == model::SEALED {
                return keys;
            }
        }
    }

    /// The upload path up to sealing: accounts, `init_model` and writes.
    pub async fn upload_model_unsealed(
        &mut self,
        config: &Pubkey,
        artifact: &[u8],
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let m = crate::models::metadata(artifact);
        let sections: Vec<&[u8]> = (0..m.section_count())
            .map(|i| section(artifact, &m, i))
            .collect();
        self.upload_sections(config, &m.config, &sections, owner, royalty)
            .await
    }

    /// The upload path up to sealing, from a model's sections as given.
    pub async fn upload_sections(
        &mut self,
        config: &Pubkey,
        cfg: &Config,
        sections: &[&[u8]],
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let model = self.create(model::len(sections.len()), 0).await;
        let mut weights = vec![];
        for s in sections {
            weights.push(self.create(weight::HEADER_LEN + s.len(), 0).await);
        }
        let keys = ModelKeys {
            model: model.pubkey(),
            owner: owner.pubkey(),
            weights: weights.iter().map(|k| k.pubkey()).collect(),
        };
        let out = self
            .send(
                &[init_model_ix(config, &keys, cfg, sections, royalty)],
                &[owner],
            )
            .await;
        assert_eq!(out.result, Ok(()), "init_model: {:#?}", out.logs);
        for (i, bytes) in sections.iter().enumerate() {
            for (k, chunk) in bytes.chunks(WRITE_CHUNK).enumerate() {
                let ix = write_ix(&keys, i, (k * WRITE_CHUNK) as u64, chunk);
                let out = self.send(&[ix], &[owner]).await;
                assert_eq!(
                    out.result,
                    Ok(()),
                    "write {i} at {}: {:#?}",
                    k * WRITE_CHUNK,
                    out.logs
                );
            }
        }
        keys
    }

    /// A run account sized for `spec`, funded with rent plus `escrow`
    /// lamports, opened by `opener`.
    pub async fn open_run(
        &mut self,
        config: &Pubkey,
        keys: &ModelKeys,
        cfg: &Config,
        spec: &crate::manifest::RunSpec,
        opener: &Keypair,
        escrow: u64,
    ) -> (Pubkey, Outcome) {
        let size =
            curta_core::state_size(*cfg, spec.prompt.len(), spec.max_tokens).expect("run in range");
        let run_account = self.create(run::HEADER_LEN + size, escrow).await;
        let ix = open_run_ix(config, keys, &run_account.pubkey(), &opener.pubkey(), spec);
        let out = self.send(&[ix], &[opener]).await;
        (run_account.pubkey(), out)
    }

    /// One turn: the accounts its plan names, from the run's current state.
    pub async fn turn(
        &mut self,
        config: &Pubkey,
        keys: &ModelKeys,
        run_key: &Pubkey,
        cfg: &Config,
        allowance: u32,
    ) -> Outcome {
        let data = self.data(run_key).await;
        let ix = turn_ix(
            config,
            keys,
            run_key,
            &data[run::HEADER_LEN..],
            cfg,
            allowance,
        );
        self.send(&[ix], &[]).await
    }
}

pub fn instruction(ix: Ix, accounts: Vec<AccountMeta>) -> Instruction {
    Instruction {
        program_id: PROGRAM_ID,
        accounts,
        data: ix.encode(),
    }
}

/// `init_model` with every section's length and digest.
pub fn init_model_ix(
    config: &Pubkey,
    keys: &ModelKeys,
    cfg: &Config,
    sections: &[&[u8]],
    royalty: u64,
) -> Instruction {
    let mut entries = vec![];
    for bytes in sections {
        entries.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        entries.extend_from_slice(&protocol::section_digest(bytes));
    }
    let config_bytes = cfg.to_bytes();
    let mut accounts = vec![
        AccountMeta::new_readonly(*config, false),
        AccountMeta::new(keys.model, false),
        AccountMeta::new_readonly(keys.owner, true),
    ];
    accounts.extend(keys.weights.iter().map(|w| AccountMeta::new(*w, false)));
    instruction(
        Ix::InitModel {
            royalty,
            config: &config_bytes,
            sections: &entries,
        },
        accounts,
    )
}

/// The sections of an artifact.
pub fn sections_of(artifact: &[u8]) -> Vec<&[u8]> {
    let m = crate::models::metadata(artifact);
    (0..m.section_count())
        .map(|i| section(artifact, &m, i))
        .collect()
}

pub fn write_ix(keys: &ModelKeys, section: usize, offset: u64, bytes: &[u8]) -> Instruction {
    instruction(
        Ix::Write { offset, bytes },
        vec![
            AccountMeta::new_readonly(keys.model, false),
            AccountMeta::new(keys.weights[section], false),
            AccountMeta::new_readonly(keys.owner, true),
        ],
    )
}

pub fn seal_ix(keys: &ModelKeys) -> Instruction {
    let mut accounts = vec![
        AccountMeta::new(keys.model, false),
        AccountMeta::new_readonly(keys.owner, true),
    ];
    accounts.extend(
        keys.weights
            .iter()
            .map(|w| AccountMeta::new_readonly(*w, false)),
    );
    instruction(Ix::SealModel, accounts)
}

pub fn open_run_ix(
    config: &Pubkey,
    keys: &ModelKeys,
    run_key: &Pubkey,
    opener: &Pubkey,
    spec: &crate::manifest::RunSpec,
) -> Instruction {
    instruction(
        Ix::OpenRun {
            max_tokens: spec.max_tokens,
            temperature_q16: spec.temperature_q16,
            seed: spec.seed,
            prompt: &spec.prompt,
        },
        vec![
            AccountMeta::new_readonly(*config, false),
            AccountMeta::new_readonly(keys.model, false),
            AccountMeta::new(*run_key, false),
            AccountMeta::new_readonly(*opener, true),
        ],
    )
}

/// The turn instruction for a state: the weight accounts its plan names.
pub fn turn_ix(
    config: &Pubkey,
    keys: &ModelKeys,
    run_key: &Pubkey,
    state: &[u8],
    cfg: &Config,
    allowance: u32,
) -> Instruction {
    let mut accounts = vec![
        AccountMeta::new_readonly(*config, false),
        AccountMeta::new_readonly(keys.model, false),
        AccountMeta::new(*run_key, false),
        AccountMeta::new(keys.owner, false),
        AccountMeta::new_readonly(keys.weights[0], false),
    ];
    if let Ok(plan) = planner::plan_turn_with(*cfg, state, allowance) {
        for &s in &plan.sections[..plan.section_count] {
            accounts.push(AccountMeta::new_readonly(keys.weights[s as usize], false));
        }
    }
    instruction(Ix::Turn, accounts)
}

pub fn close_run_ix(run_key: &Pubkey, opener: &Pubkey) -> Instruction {
    instruction(
        Ix::CloseRun,
        vec![
            AccountMeta::new(*run_key, false),
            AccountMeta::new(*opener, true),
        ],
    )
}

/// The accounts of a sealed model, built host-side for a bank to preload
/// (`ProgramTest::add_account`): what the upload path leaves behind.
pub fn preloaded_model(
    config: &Pubkey,
    artifact: &[u8],
    owner: &Pubkey,
    royalty: u64,
) -> (ModelKeys, Vec<(Pubkey, Account)>) {
    let m: Metadata = crate::models::metadata(artifact);
    let count = m.section_count();
    let keys = ModelKeys {
        model: Pubkey::new_unique(),
        owner: *owner,
        weights: (0..count).map(|_| Pubkey::new_unique()).collect(),
    };
    let rent = solana_rent::Rent::default();
    let account = |data: Vec<u8>| Account {
        lamports: rent.minimum_balance(data.len()),
        data,
        owner: PROGRAM_ID,
        executable: false,
        rent_epoch: 0,
    };
    let mut out = vec![];
    let mut model_data = vec![0u8; model::len(count)];
    model_data[..8].copy_from_slice(&MODEL_TAG);
    model_data[model::CONFIG_ACCOUNT..model::CONFIG_ACCOUNT + 32].copy_from_slice(config.as_ref());
    model_data[model::OWNER..model::OWNER + 32].copy_from_slice(owner.as_ref());
    model_data[model::ROYALTY..model::ROYALTY + 8].copy_from_slice(&royalty.to_le_bytes());
    model_data[model::MODEL_CONFIG..model::MODEL_CONFIG + 28].copy_from_slice(&m.config.to_bytes());
    model_data[model::SECTION_COUNT..model::SECTION_COUNT + 4]
        .copy_from_slice(&(count as u32).to_le_bytes());
    model_data[model::STATUS..model::STATUS + 4].copy_from_slice(&model::SEALED.to_le_bytes());
    model_data[model::SEAL_SECTION..model::SEAL_SECTION + 4]
        .copy_from_slice(&(count as u32).to_le_bytes());
    for i in 0..count {
        let bytes = section(artifact, &m, i);
        let at = model::HEADER_LEN + i * model::ENTRY_LEN;
        model_data[at..at + 32].copy_from_slice(keys.weights[i].as_ref());
        model_data[at + model::ENTRY_LENGTH..at + model::ENTRY_LENGTH + 8]
            .copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        model_data[at + model::ENTRY_DIGEST..at + model::ENTRY_LEN]
            .copy_from_slice(&protocol::section_digest(bytes));
        let mut w = vec![0u8; weight::HEADER_LEN];
        w[..8].copy_from_slice(&WEIGHT_TAG);
        w[weight::MODEL..weight::MODEL + 32].copy_from_slice(keys.model.as_ref());
        w[weight::SECTION..weight::SECTION + 4].copy_from_slice(&(i as u32).to_le_bytes());
        w[weight::LENGTH..weight::LENGTH + 8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        w.extend_from_slice(bytes);
        out.push((keys.weights[i], account(w)));
    }
    out.push((keys.model, account(model_data)));
    (keys, out)
}

/// A bank with a config account and a sealed model preloaded, as
/// `init_config` and the upload path leave them: returns the bank to start,
/// the config's address and the model's accounts.
pub fn preloaded_bank(
    admin: &Pubkey,
    allowance: u32,
    artifact: &[u8],
    owner: &Pubkey,
    royalty: u64,
) -> (ProgramTest, Pubkey, ModelKeys) {
    let mut pt = program_test();
    let (config, config_account) = preloaded_config(admin, allowance);
    pt.add_account(config, config_account);
    let (keys, accounts) = preloaded_model(&config, artifact, owner, royalty);
    for (k, a) in accounts {
        pt.add_account(k, a);
    }
    (pt, config, keys)
}

/// A config account built host-side, for a bank to preload.
pub fn preloaded_config(admin: &Pubkey, allowance: u32) -> (Pubkey, Account) {
    let mut data = vec![0u8; protocol::config::LEN];
    data[..8].copy_from_slice(&CONFIG_TAG);
    data[protocol::config::ADMIN..protocol::config::ADMIN + 32].copy_from_slice(admin.as_ref());
    data[protocol::config::ALLOWANCE..protocol::config::ALLOWANCE + 4]
        .copy_from_slice(&allowance.to_le_bytes());
    let rent = solana_rent::Rent::default();
    let account = Account {
        lamports: rent.minimum_balance(data.len()),
        data,
        owner: PROGRAM_ID,
        executable: false,
        rent_epoch: 0,
    };
    (Pubkey::new_unique(), account)
}
