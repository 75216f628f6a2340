//! The solana-program-test driver: the program's `.so` in the metered SBF
//! VM, and the accounts and transactions a client would make.

use std::sync::Once;

use curta_client::instructions::{self as ix, ModelKeys, ModelParams};
use curta_client::plans;
use curta_client::transaction_fit::{self, PACKET_DATA_SIZE};
use curta_core::format::Layout;
use curta_core::inference::RunParams;
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{
    self, model, run, weight, ConfigAccountMut, ModelAccount, ModelAccountMut, ModelInit,
    RunAccount, RunAccountMut, RunInit, WeightAccountMut,
};
use curta_core::{Config, Metadata};
use solana_account::Account;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_program_test::{ProgramTest, ProgramTestContext};
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};

use crate::manifest::RunSpec;
use crate::models::section;

/// Where the tests load the program.
pub const PROGRAM_ID: Pubkey = Pubkey::new_from_array([0xC7; 32]);
/// What one transaction may use; every transaction asks for all of it.
pub const CU_LIMIT: u32 = 1_400_000;

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
    program_test_of("curta_program")
}

/// A bank with `<name>.so` from the deploy folder as the program: the
/// production build, or `curta_program_probe` (`make build-sbf-probe`).
pub fn program_test_of(name: &'static str) -> ProgramTest {
    sbf_out_dir();
    let mut pt = ProgramTest::default();
    pt.prefer_bpf(true);
    pt.add_program(name, PROGRAM_ID, None);
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

    /// The turn receipts the program logged (`sol_log_data`).
    pub fn receipts(&self) -> Vec<curta_client::receipts::Receipt> {
        curta_client::receipts::from_logs(&self.logs, &PROGRAM_ID.to_string())
    }
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
    /// Every transaction must fit a packet (1,232 bytes), and must conserve
    /// lamports: the accounts it names lose exactly its fee between them.
    pub async fn send(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Outcome {
        self.nonce += 1;
        let mut all = vec![
            ComputeBudgetInstruction::set_compute_unit_limit(CU_LIMIT),
            // A different limit per transaction, far above what any needs:
            // otherwise two identical transactions would share a signature.
            ComputeBudgetInstruction::set_loaded_accounts_data_size_limit(
                64 * 1024 * 1024 - self.nonce,
            ),
        ];
        all.extend_from_slice(ixs);
        self.send_exact(&all, signers).await
    }

    /// Sends a plan's instructions (`curta_client::plans`), which ask for
    /// their own compute-unit limit, made unique as `send` makes its own.
    pub async fn send_planned(&mut self, ixs: &[Instruction], signers: &[&Keypair]) -> Outcome {
        self.nonce += 1;
        let mut all = ixs.to_vec();
        all.push(
            ComputeBudgetInstruction::set_loaded_accounts_data_size_limit(
                64 * 1024 * 1024 - self.nonce,
            ),
        );
        self.send_exact(&all, signers).await
    }

    /// Sends exactly these instructions in one transaction (the default
    /// compute budget), signed by the payer and `signers`, with the checks
    /// of `send`.
    pub async fn send_exact(&mut self, all: &[Instruction], signers: &[&Keypair]) -> Outcome {
        let payer = self.ctx.payer.insecure_clone();
        // The signers these instructions need, of those given.
        let needed = |k: &&&Keypair| {
            k.pubkey() != payer.pubkey()
                && all
                    .iter()
                    .flat_map(|ix| &ix.accounts)
                    .any(|a| a.is_signer && a.pubkey == k.pubkey())
        };
        let mut keys: Vec<&Keypair> = vec![&payer];
        keys.extend(signers.iter().filter(needed));
        let mut out;
        loop {
            let tx = Transaction::new_signed_with_payer(
                all,
                Some(&payer.pubkey()),
                &keys,
                self.ctx.last_blockhash,
            );
            let size = bincode::serialized_size(&tx).expect("a transaction serializes");
            assert!(
                size <= PACKET_DATA_SIZE as u64,
                "a transaction of {size} bytes: the limit is {PACKET_DATA_SIZE}"
            );
            let named = tx.message.account_keys.clone();
            let before = self.balances(&named).await;
            let fee = self
                .ctx
                .banks_client
                .get_fee_for_message(tx.message.clone())
                .await
                .expect("banks client")
                .expect("a fee for a fresh blockhash");
            out = self
                .ctx
                .banks_client
                .process_transaction_with_metadata(tx)
                .await
                .expect("banks client");
            // The bank moves on in wall-clock time and forgets old blockhashes.
            if out.result == Err(TransactionError::BlockhashNotFound) {
                self.ctx.last_blockhash = self
                    .ctx
                    .banks_client
                    .get_latest_blockhash()
                    .await
                    .expect("blockhash");
                continue;
            }
            let after = self.balances(&named).await;
            let (before, after): (u64, u64) = (before.iter().sum(), after.iter().sum());
            // A transaction that failed still paid its fee.
            assert_eq!(
                before - after,
                fee,
                "lamports not conserved: {before} before, {after} after, fee {fee}"
            );
            break;
        }
        let logs = out.metadata.map(|m| m.log_messages).unwrap_or_default();
        let program_cu = curta_client::cluster::program_units(&logs, &PROGRAM_ID);
        Outcome {
            result: out.result,
            program_cu,
            logs,
        }
    }

    async fn balances(&self, keys: &[Pubkey]) -> Vec<u64> {
        let mut out = vec![];
        for k in keys {
            out.push(
                self.ctx
                    .banks_client
                    .get_balance(*k)
                    .await
                    .expect("banks client"),
            );
        }
        out
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

    /// A keypair for a new account of `space` bytes owned by the program,
    /// funded with its rent plus `extra` lamports, and the System
    /// instruction that creates it: send it in the same transaction as the
    /// instruction that initializes the account.
    pub async fn create_ix(&mut self, space: usize, extra: u64) -> (Keypair, Instruction) {
        let account = Keypair::new();
        let ix = self.create_ix_for(&account.pubkey(), space, extra).await;
        (account, ix)
    }

    /// `create_ix` for an account whose key the caller holds.
    pub async fn create_ix_for(
        &mut self,
        account: &Pubkey,
        space: usize,
        extra: u64,
    ) -> Instruction {
        let lamports = self.rent(space).await + extra;
        solana_system_interface::instruction::create_account(
            &self.ctx.payer.pubkey(),
            account,
            lamports,
            space as u64,
            &PROGRAM_ID,
        )
    }

    /// A new account owned by the program, created in a transaction of its
    /// own (initializing it is then up to the caller).
    pub async fn create(&mut self, space: usize, extra: u64) -> Keypair {
        let (account, ix) = self.create_ix(space, extra).await;
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

    /// Creates and initializes a config account administered by `admin`,
    /// in one transaction.
    pub async fn init_config(&mut self, admin: &Keypair, allowance: u32) -> Pubkey {
        let (config, create) = self.create_ix(protocol::config::LEN, 0).await;
        let init = ix::init_config(&PROGRAM_ID, &config.pubkey(), &admin.pubkey(), allowance);
        let out = self.send(&[create, init], &[&config, admin]).await;
        assert_eq!(out.result, Ok(()), "init_config: {:#?}", out.logs);
        config.pubkey()
    }

    /// The real upload path: the model (at `model`'s address), then per
    /// section a weight account created and bound, written in chunks and
    /// sealed, then `seal_model`.
    pub async fn upload_model(
        &mut self,
        model: &Keypair,
        config: &Pubkey,
        artifact: &[u8],
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let keys = self
            .upload_model_unsealed(model, config, artifact, owner, royalty)
            .await;
        for (i, bytes) in sections_of(artifact).iter().enumerate() {
            self.seal_section(&keys, i, bytes, owner).await;
        }
        let seal = plans::seal_model(&PROGRAM_ID, &keys);
        let out = self.send(&seal.instructions, &[owner]).await;
        assert_eq!(out.result, Ok(()), "seal_model: {:#?}", out.logs);
        // Read again: sealing recorded the model's identity.
        self.model_keys(&keys.model).await
    }

    /// Sends `seal_section` until the section is sealed, as `curta` does
    /// (`plans::seal_section`).
    pub async fn seal_section(
        &mut self,
        keys: &ModelKeys,
        i: usize,
        bytes: &[u8],
        owner: &Keypair,
    ) {
        let digest = protocol::section_digest(bytes);
        for call in 0.. {
            let seal = plans::seal_section(&PROGRAM_ID, keys, i, &digest, call);
            let out = self.send_planned(&seal.instructions, &[owner]).await;
            assert_eq!(out.result, Ok(()), "seal_section {i}: {:#?}", out.logs);
            let data = self.data(&keys.weights[i]).await;
            if protocol::WeightAccount(&data).sealed() {
                return;
            }
        }
    }

    /// The upload path up to sealing: the model, its weight accounts bound,
    /// every section written.
    pub async fn upload_model_unsealed(
        &mut self,
        model: &Keypair,
        config: &Pubkey,
        artifact: &[u8],
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let m = crate::models::metadata(artifact);
        let keys = self.init_model(model, config, &m, owner, royalty).await;
        for (i, bytes) in sections_of(artifact).iter().enumerate() {
            self.write_section(&keys, i, bytes, owner).await;
        }
        keys
    }

    /// Creates and initializes a model at `model`'s address for the
    /// artifact `m` reads, then creates and binds each weight account (a
    /// transaction each), as `curta` does (`plans`).
    pub async fn init_model(
        &mut self,
        model: &Keypair,
        config: &Pubkey,
        m: &Metadata<'_>,
        owner: &Keypair,
        royalty: u64,
    ) -> ModelKeys {
        let params = model_params(m, royalty);
        let layout = Layout::new(&m.config).expect("a parsed artifact's layout");
        let count = layout.section_count() as usize;
        let payer = self.payer().pubkey();
        let lamports = self.rent(model::len(count)).await;
        let (program, owner_key) = (PROGRAM_ID, owner.pubkey());
        let uploader = plans::Uploader {
            program: &program,
            payer: &payer,
            owner: &owner_key,
        };
        let create =
            plans::create_model(uploader, config, &model.pubkey(), &params, count, lamports);
        let out = self.send(&create.instructions, &[model, owner]).await;
        assert_eq!(out.result, Ok(()), "init_model: {:#?}", out.logs);
        for i in 0..count {
            let len = m.section_len(i);
            let w = Keypair::new();
            let lamports = self.rent(weight::HEADER_LEN + len).await;
            let bind = plans::bind_weight(
                uploader,
                &model.pubkey(),
                i as u32,
                &w.pubkey(),
                len,
                lamports,
            );
            let out = self.send(&bind.instructions, &[&w, owner]).await;
            assert_eq!(out.result, Ok(()), "bind_weight {i}: {:#?}", out.logs);
        }
        self.model_keys(&model.pubkey()).await
    }

    /// A model's accounts, as its model account records them.
    pub async fn model_keys(&mut self, model_key: &Pubkey) -> ModelKeys {
        let data = self.data(model_key).await;
        let m = ModelAccount::read(&data).expect("a model account");
        ModelKeys::read(model_key, &m)
    }

    /// Writes the chunks of a section's bytes the weight account does not
    /// hold, in transactions as `curta` sends them (`plans::writes`).
    pub async fn write_section(
        &mut self,
        keys: &ModelKeys,
        i: usize,
        bytes: &[u8],
        owner: &Keypair,
    ) {
        let data = self.data(&keys.weights[i]).await;
        let held = protocol::WeightAccount(&data).bytes().to_vec();
        let chunk = plans::most_write_bytes(&PROGRAM_ID, keys, &self.payer().pubkey());
        for write in plans::writes(&PROGRAM_ID, keys, i, bytes, &held, chunk) {
            let out = self.send_exact(&write.instructions, &[owner]).await;
            assert_eq!(out.result, Ok(()), "{}: {:#?}", write.what, out.logs);
        }
    }

    /// A run account sized for `spec`, funded with rent plus `escrow` plus
    /// `crank`'s deposit, created and opened by `opener` as a client does: in one
    /// transaction, or with the prompt staged first when it is too long
    /// (`transaction_fit::open_run_transactions`). The outcome is the last
    /// transaction's.
    pub async fn open_run(
        &mut self,
        keys: &ModelKeys,
        cfg: &Config,
        spec: &RunSpec,
        opener: &Keypair,
        escrow: u64,
        crank: &CrankFee,
    ) -> (Pubkey, Outcome) {
        let size =
            curta_core::state_size(*cfg, spec.prompt.len(), spec.max_tokens).expect("run in range");
        let held = escrow + crank.deposit;
        let (run_account, create) = self.create_ix(run::HEADER_LEN + size, held).await;
        let params = run_params(spec);
        let payer = self.payer().pubkey();
        let txs = transaction_fit::open_run_transactions(
            &PROGRAM_ID,
            keys,
            &run_account.pubkey(),
            &opener.pubkey(),
            &payer,
            (&params, crank),
            create,
        );
        let mut out = None;
        for tx in txs {
            let o = self.send_exact(&tx, &[&run_account, opener]).await;
            if o.result.is_err() {
                return (run_account.pubkey(), o);
            }
            out = Some(o);
        }
        (run_account.pubkey(), out.expect("at least one transaction"))
    }

    /// One turn: the accounts its plan names, from the run's current state,
    /// sent and paid for by the payer, who is its cranker.
    pub async fn turn(
        &mut self,
        keys: &ModelKeys,
        run_key: &Pubkey,
        cfg: &Config,
        allowance: u32,
    ) -> Outcome {
        let payer = self.payer().pubkey();
        let ixs = self.turn_ixs(keys, run_key, cfg, allowance, &payer).await;
        self.send_planned(&ixs, &[]).await
    }

    /// One turn signed by `cranker`, who receives its crank fee; the payer
    /// pays the transaction's fee.
    pub async fn turn_by(
        &mut self,
        keys: &ModelKeys,
        run_key: &Pubkey,
        cfg: &Config,
        allowance: u32,
        cranker: &Keypair,
    ) -> Outcome {
        let ixs = self
            .turn_ixs(keys, run_key, cfg, allowance, &cranker.pubkey())
            .await;
        self.send_planned(&ixs, &[cranker]).await
    }

    async fn turn_ixs(
        &mut self,
        keys: &ModelKeys,
        run_key: &Pubkey,
        cfg: &Config,
        allowance: u32,
        cranker: &Pubkey,
    ) -> Vec<Instruction> {
        let data = self.data(run_key).await;
        let state = state_of(&data);
        let weights = keys.turn_weights(*cfg, state, allowance);
        let turns = curta_core::StateInfo::read(state).map(|s| s.turns).ok();
        let turn = ix::turn(&PROGRAM_ID, keys, run_key, cranker, &weights, turns);
        plans::turn(turn, CU_LIMIT, 0)
    }

    /// The turn instruction for a run's current state, expecting its turn count.
    pub async fn turn_ix(
        &mut self,
        keys: &ModelKeys,
        run_key: &Pubkey,
        cfg: &Config,
        allowance: u32,
    ) -> Instruction {
        let data = self.data(run_key).await;
        let state = state_of(&data);
        let weights = keys.turn_weights(*cfg, state, allowance);
        let turns = curta_core::StateInfo::read(state).map(|s| s.turns).ok();
        let payer = self.payer().pubkey();
        ix::turn(&PROGRAM_ID, keys, run_key, &payer, &weights, turns)
    }
}

/// What `init_model` records for an artifact.
pub fn model_params(m: &Metadata, royalty: u64) -> ModelParams {
    ModelParams {
        royalty,
        config: m.config,
        flags: m.flags(),
        zero_len: m.section_len(0) as u64,
    }
}

/// The sections of an artifact.
pub fn sections_of(artifact: &[u8]) -> Vec<&[u8]> {
    let m = crate::models::metadata(artifact);
    (0..m.section_count())
        .map(|i| section(artifact, &m, i))
        .collect()
}

pub fn seal_model_ix(keys: &ModelKeys) -> Instruction {
    ix::seal_model(&PROGRAM_ID, &keys.model, &keys.weights[0], &keys.owner)
}

/// A run's parameters, as the core and `open_run` take them.
pub fn run_params(spec: &RunSpec) -> RunParams<'_> {
    RunParams {
        prompt: &spec.prompt,
        max_tokens: spec.max_tokens,
        temperature_q16: spec.temperature_q16,
        seed: spec.seed,
    }
}

/// `open_run` with the whole prompt in the instruction.
pub fn open_run_ix(
    keys: &ModelKeys,
    run_key: &Pubkey,
    opener: &Pubkey,
    spec: &RunSpec,
) -> Instruction {
    ix::open_run(
        &PROGRAM_ID,
        keys,
        run_key,
        opener,
        &run_params(spec),
        &CrankFee::default(),
        0,
    )
}

pub fn close_run_ix(run_key: &Pubkey, opener: &Pubkey) -> Instruction {
    ix::close_run(&PROGRAM_ID, run_key, opener)
}

/// A rent-exempt account of the program holding `data`.
fn program_account(data: Vec<u8>) -> Account {
    Account {
        lamports: solana_rent::Rent::default().minimum_balance(data.len()),
        data,
        owner: PROGRAM_ID,
        executable: false,
        rent_epoch: 0,
    }
}

/// A run account of `keys`' model, opened by `opener` with no royalty or
/// crank fee under `allowance`, holding `state` (any cursor), built
/// host-side for a bank to preload: a turn from a chosen point.
pub fn preloaded_run(
    keys: &ModelKeys,
    opener: &Pubkey,
    cfg: &Config,
    state: &[u8],
    allowance: u32,
) -> Account {
    let h = curta_core::state::Header::read(state).expect("a state");
    let layout = curta_core::state::StateLayout::new(cfg, h.prompt_len as usize, h.max_tokens)
        .expect("the state's layout");
    let mut data = vec![0u8; run::HEADER_LEN];
    RunAccountMut(&mut data).init(&RunInit {
        model: keys.model.as_array(),
        model_identity: &keys.identity,
        opener: opener.as_array(),
        royalty: 0,
        deposited: 0,
        crank_fee: 0,
        crank_deposit: 0,
        tokens_at: (run::HEADER_LEN + layout.output_tokens) as u32,
        text_at: (run::HEADER_LEN + layout.output_text) as u32,
        seed: h.seed,
        allowance,
        callback_at: 0,
        delivery_fee: 0,
    });
    data.extend_from_slice(state);
    program_account(data)
}

/// The accounts of a sealed model, built host-side with the protocol's
/// writers for a bank to preload (`ProgramTest::add_account`): what the
/// upload path leaves behind.
pub fn preloaded_model(
    config: &Pubkey,
    artifact: &[u8],
    owner: &Pubkey,
    royalty: u64,
) -> (ModelKeys, Vec<(Pubkey, Account)>) {
    let m: Metadata = crate::models::metadata(artifact);
    let params = model_params(&m, royalty);
    let layout = Layout::new(&m.config).expect("a parsed artifact's layout");
    let count = m.section_count();
    let mut keys = ModelKeys {
        config_account: *config,
        model: Pubkey::new_unique(),
        owner: *owner,
        weights: (0..count).map(|_| Pubkey::new_unique()).collect(),
        royalty,
        identity: [0; 32],
    };
    let mut model_data = vec![0u8; model::len(count)];
    let mut writer = ModelAccountMut(&mut model_data);
    let init = ModelInit {
        royalty,
        config: &m.config,
        layout: &layout,
        flags: params.flags,
        zero_len: params.zero_len,
    };
    writer.init(config.as_array(), owner.as_array(), &init);
    let mut out = vec![];
    for (i, w_key) in keys.weights.iter().enumerate() {
        let bytes = section(artifact, &m, i);
        let digest = protocol::section_digest(bytes);
        writer.set_section_address(i, w_key.as_array());
        writer.set_section_digest(i, &digest);
        let mut w = vec![0u8; weight::HEADER_LEN + bytes.len()];
        let mut w_writer = WeightAccountMut(&mut w);
        w_writer.init(keys.model.as_array(), i as u32);
        w_writer.bytes_mut().copy_from_slice(bytes);
        w_writer.set_seal(bytes.len() as u64, &digest);
        out.push((*w_key, program_account(w)));
    }
    writer.set_bound(count as u32);
    writer.set_sealed_count(count as u32);
    writer.set_status(model::SEALED);
    keys.identity = protocol::model_identity(keys.model.as_array(), &model_data);
    ModelAccountMut(&mut model_data).set_model_identity(&keys.identity);
    out.push((keys.model, program_account(model_data)));
    (keys, out)
}

/// A bank with a config account and a sealed model preloaded, as
/// `init_config` and the upload path leave them: returns the bank to start
/// and the model's accounts (its config among them).
pub fn preloaded_bank(
    admin: &Pubkey,
    allowance: u32,
    artifact: &[u8],
    owner: &Pubkey,
    royalty: u64,
) -> (ProgramTest, ModelKeys) {
    preload(program_test(), admin, allowance, artifact, (owner, royalty))
}

/// `preloaded_bank` into a given bank.
pub fn preload(
    mut pt: ProgramTest,
    admin: &Pubkey,
    allowance: u32,
    artifact: &[u8],
    (owner, royalty): (&Pubkey, u64),
) -> (ProgramTest, ModelKeys) {
    let (config, config_account) = preloaded_config(admin, allowance);
    pt.add_account(config, config_account);
    let (keys, accounts) = preloaded_model(&config, artifact, owner, royalty);
    for (k, a) in accounts {
        pt.add_account(k, a);
    }
    (pt, keys)
}

/// A config account built host-side, for a bank to preload.
pub fn preloaded_config(admin: &Pubkey, allowance: u32) -> (Pubkey, Account) {
    let mut data = vec![0u8; protocol::config::LEN];
    ConfigAccountMut(&mut data).init(admin.as_array(), allowance);
    (Pubkey::new_unique(), program_account(data))
}

/// A run account's state: up to its callback record when it names one
/// (`RunAccount::state`), else everything after the header (so a test can
/// still hand the program bytes that are no run).
pub fn state_of(data: &[u8]) -> &[u8] {
    match RunAccount::read(data) {
        Ok(r) => r.state(),
        Err(_) => &data[run::HEADER_LEN.min(data.len())..],
    }
}
