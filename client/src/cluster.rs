//! The connection to a cluster: accounts, rent, blockhashes, signing,
//! sending a transaction until it lands (or saying in words why it did
//! not), and settling what an interrupted curta journaled. Bulk and
//! pipelined sending build on these (`sender`, `crank`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use solana_account_decoder_client_types::{UiAccount, UiAccountEncoding};
use solana_commitment_config::CommitmentConfig;
use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_message::Message;
use solana_pubkey::Pubkey;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client_api::client_error::ErrorKind;
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcSendTransactionConfig};
use solana_rpc_client_api::request::{RpcError, RpcRequest};
use solana_signature::Signature;
use solana_signer::Signer;
use solana_transaction::{Transaction, TransactionError};
use solana_transaction_status_client_types::TransactionStatus;

use crate::bail;
use crate::errors::{self, Context, Error, Result};
use crate::journal::Journal;

/// A cluster, the signer who pays, and the curta program's address.
pub struct Cluster {
    pub rpc: RpcClient,
    pub url: String,
    pub commitment: CommitmentConfig,
    pub payer: Arc<Keypair>,
    pub program_id: Pubkey,
    pub genesis_hash: String,
    pub journal: Journal,
    blockhash: Mutex<Option<Blockhash>>,
    lamports_per_signature: Mutex<Option<u64>>,
    /// The highest block height any answer gave: an RPC that answers from
    /// a stale node (or a cache) can say an earlier one, which must not
    /// make a transaction still able to land look expired, nor an expired
    /// one look alive.
    height_seen: AtomicU64,
    /// The highest slot a transaction this client saw land (at its
    /// commitment) landed in: every account read asks the node for a bank
    /// at least that recent (`minContextSlot`), so that what the client
    /// just did is in what it reads (a model right after `seal_model`
    /// sealed, a run right after `open_run` open), whichever node answers.
    slot_seen: AtomicU64,
}

/// A blockhash and the last block height a transaction using it can land in.
#[derive(Clone, Copy, Debug)]
pub struct Blockhash {
    pub hash: Hash,
    pub last_valid_block_height: u64,
    fetched: Instant,
}

/// A transaction that landed.
#[derive(Clone, Copy, Debug)]
pub struct Landed {
    pub signature: Signature,
    pub slot: u64,
}

/// What `getTransaction` says of a landed transaction.
#[derive(Clone, Debug, Default)]
pub struct TxInfo {
    pub slot: u64,
    pub fee: u64,
    pub err: Option<TransactionError>,
    pub logs: Vec<String>,
    pub compute_units: u64,
    /// The program each instruction called, in order.
    pub programs: Vec<Pubkey>,
}

/// How long a fetched blockhash is reused for new transactions: long
/// enough to sign batches with one, short enough that they keep most of
/// their ~60 s validity.
const BLOCKHASH_REUSE: Duration = Duration::from_secs(5);
/// How often a waiting sender polls signature statuses.
pub const POLL: Duration = Duration::from_millis(200);
/// An account as the RPC encoded it (`read_config`'s base64+zstd).
fn decoded(a: UiAccount, key: &Pubkey) -> Result<solana_account::Account> {
    match a.to_account() {
        Some(account) => Ok(account),
        None => {
            bail!("the RPC answered account {key} in an encoding other than the base64+zstd asked")
        }
    }
}

/// The most signatures one `getSignatureStatuses` takes.
const STATUS_BATCH: usize = 256;
/// The most accounts one `getMultipleAccounts` takes.
const ACCOUNT_BATCH: usize = 100;

/// Every request retried with backoff on a missing or unusable answer
/// (`transport`), the one place the client retries one.
fn rpc_client(url: &str, commitment: CommitmentConfig) -> RpcClient {
    RpcClient::new_sender(
        crate::transport::RetryingSender::new(
            url,
            Duration::from_secs(120),
            crate::transport::Policy::default(),
        ),
        solana_rpc_client::rpc_client::RpcClientConfig::with_commitment(commitment),
    )
}

impl Cluster {
    /// Connects (asking the cluster's genesis hash, which names the
    /// journal's folder and proves the URL answers).
    pub async fn connect(
        url: String,
        commitment: CommitmentConfig,
        payer: Keypair,
        program_id: Pubkey,
        state_dir: &std::path::Path,
    ) -> Result<Cluster> {
        let rpc = rpc_client(&url, commitment);
        let genesis_hash = rpc
            .get_genesis_hash()
            .await
            .map_err(|e| Error::from(e).context(format!("connecting to {url}")))?
            .to_string();
        let journal = Journal::new(state_dir, &genesis_hash, &payer.pubkey());
        Ok(Cluster {
            rpc,
            url,
            commitment,
            payer: Arc::new(payer),
            program_id,
            genesis_hash,
            journal,
            blockhash: Mutex::new(None),
            lamports_per_signature: Mutex::new(None),
            height_seen: AtomicU64::new(0),
            slot_seen: AtomicU64::new(0),
        })
    }

    /// The program that owns `key`, before connecting for a program: how
    /// a model or a run names its program outside the repository. `None`
    /// when there is no account at `key`.
    pub async fn owner_of(
        url: &str,
        commitment: CommitmentConfig,
        key: &Pubkey,
    ) -> Result<Option<Pubkey>> {
        Ok(rpc_client(url, commitment)
            .get_account_with_commitment(key, commitment)
            .await
            .map_err(|e| Error::from(e).context(format!("reading account {key} on {url}")))?
            .value
            .map(|a| a.owner))
    }

    pub fn payer_key(&self) -> Pubkey {
        self.payer.pubkey()
    }

    /// How account reads are asked: at the commitment, from a bank no
    /// older than `slot_seen`.
    fn read_config(&self) -> RpcAccountInfoConfig {
        let seen = self.slot_seen.load(Ordering::Relaxed);
        RpcAccountInfoConfig {
            encoding: Some(UiAccountEncoding::Base64Zstd),
            commitment: Some(self.commitment),
            min_context_slot: (seen > 0).then_some(seen),
            data_slice: None,
        }
    }

    /// Notes the slot a transaction landed in (`slot_seen`).
    pub fn saw_slot(&self, slot: u64) {
        self.slot_seen.fetch_max(slot, Ordering::Relaxed);
    }

    /// An account, or `None` if there is none (a closed account included).
    pub async fn account(&self, key: &Pubkey) -> Result<Option<solana_account::Account>> {
        let found = self
            .rpc
            .get_ui_account_with_config(key, self.read_config())
            .await
            .context(format!("reading account {key}"))?
            .value;
        found.map(|a| decoded(a, key)).transpose()
    }

    /// Several accounts, in order.
    pub async fn accounts(&self, keys: &[Pubkey]) -> Result<Vec<Option<solana_account::Account>>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(ACCOUNT_BATCH) {
            let found = self
                .rpc
                .get_multiple_ui_accounts_with_config(chunk, self.read_config())
                .await
                .context("reading accounts")?
                .value;
            for (a, key) in found.into_iter().zip(chunk) {
                out.push(a.map(|a| decoded(a, key)).transpose()?);
            }
        }
        Ok(out)
    }

    /// The program's accounts whose bytes at each offset of `filters` are
    /// those given (`getProgramAccounts` with memcmp filters), each with
    /// the first `slice` bytes of its data.
    pub async fn program_accounts(
        &self,
        filters: &[(usize, &[u8])],
        slice: usize,
    ) -> Result<Vec<(Pubkey, Vec<u8>)>> {
        let found = self.program_accounts_held(filters, slice).await?;
        Ok(found.into_iter().map(|(k, d, _)| (k, d)).collect())
    }

    /// `program_accounts`, with each account's lamports.
    pub async fn program_accounts_held(
        &self,
        filters: &[(usize, &[u8])],
        slice: usize,
    ) -> Result<Vec<(Pubkey, Vec<u8>, u64)>> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let filters: Vec<Value> = filters
            .iter()
            .map(|(offset, bytes)| {
                json!({"memcmp": {"offset": offset, "bytes": b64.encode(bytes), "encoding": "base64"}})
            })
            .collect();
        let mut config = json!({
            "encoding": "base64",
            "commitment": self.commitment.commitment.to_string(),
            "dataSlice": {"offset": 0, "length": slice},
            "filters": filters,
        });
        if let Some(slot) = self.read_config().min_context_slot {
            config["minContextSlot"] = json!(slot);
        }
        let params = json!([self.program_id.to_string(), config]);
        let found: Value = self
            .rpc
            .send(RpcRequest::GetProgramAccounts, params)
            .await
            .context("asking the program's accounts (getProgramAccounts)")?;
        let mut out = vec![];
        for item in found.as_array().into_iter().flatten() {
            let key = item["pubkey"].as_str().and_then(|k| k.parse().ok());
            let data = item["account"]["data"][0]
                .as_str()
                .and_then(|d| b64.decode(d).ok());
            let lamports = item["account"]["lamports"].as_u64();
            match (key, data, lamports) {
                (Some(k), Some(d), Some(l)) => out.push((k, d, l)),
                _ => bail!("getProgramAccounts answered an entry it cannot read: {item}"),
            }
        }
        Ok(out)
    }

    /// An account's data, or empty when there is no account.
    pub async fn data(&self, key: &Pubkey) -> Result<Vec<u8>> {
        Ok(self.account(key).await?.map(|a| a.data).unwrap_or_default())
    }

    pub async fn balance(&self, key: &Pubkey) -> Result<u64> {
        Ok(self
            .rpc
            .get_balance_with_commitment(key, self.commitment)
            .await
            .context(format!("reading the balance of {key}"))?
            .value)
    }

    /// The rent-exempt minimum of an account of `len` bytes.
    pub async fn rent(&self, len: usize) -> Result<u64> {
        self.rpc
            .get_minimum_balance_for_rent_exemption(len)
            .await
            .context("asking the rent-exempt minimum")
    }

    /// The block height: the highest any answer has given (see
    /// `height_seen`).
    pub async fn block_height(&self) -> Result<u64> {
        let h = self
            .rpc
            .get_block_height_with_commitment(self.commitment)
            .await
            .context("asking the block height")?;
        Ok(self.saw_height(h))
    }

    fn saw_height(&self, h: u64) -> u64 {
        self.height_seen.fetch_max(h, Ordering::Relaxed).max(h)
    }

    pub async fn slot(&self) -> Result<u64> {
        self.rpc
            .get_slot_with_commitment(self.commitment)
            .await
            .context("asking the slot")
    }

    /// A recent blockhash, reused for a few seconds.
    pub async fn blockhash(&self) -> Result<Blockhash> {
        if let Some(b) = *self.blockhash.lock().unwrap_or_else(|e| e.into_inner()) {
            if b.fetched.elapsed() < BLOCKHASH_REUSE {
                return Ok(b);
            }
        }
        self.fresh_blockhash().await
    }

    /// The latest blockhash, asked now. An answer older than one already
    /// seen (a stale node's, or a cache's: its last valid block height is
    /// below the previous blockhash's, or already passed) is asked again,
    /// a few times, then taken: a transaction signed with it is sent again
    /// only once its height has passed, so it costs time, never a fee.
    pub async fn fresh_blockhash(&self) -> Result<Blockhash> {
        let floor = self
            .blockhash
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map_or(0, |b| b.last_valid_block_height);
        let mut tries = 0;
        let (hash, last_valid_block_height) = loop {
            let (hash, last_valid) = self
                .rpc
                .get_latest_blockhash_with_commitment(self.commitment)
                .await
                .context("asking a recent blockhash")?;
            let height = self.height_seen.load(Ordering::Relaxed);
            tries += 1;
            if (last_valid >= floor && last_valid > height) || tries >= 5 {
                break (hash, last_valid);
            }
            tokio::time::sleep(POLL).await;
        };
        let b = Blockhash {
            hash,
            last_valid_block_height,
            fetched: Instant::now(),
        };
        *self.blockhash.lock().unwrap_or_else(|e| e.into_inner()) = Some(b);
        Ok(b)
    }

    /// Lamports per signature (5,000 on today's clusters).
    pub async fn lamports_per_signature(&self) -> Result<u64> {
        if let Some(l) = *self
            .lamports_per_signature
            .lock()
            .unwrap_or_else(|e| e.into_inner())
        {
            return Ok(l);
        }
        let b = self.blockhash().await?;
        let ix =
            solana_system_interface::instruction::transfer(&self.payer_key(), &self.payer_key(), 0);
        let message = Message::new_with_blockhash(&[ix], Some(&self.payer_key()), &b.hash);
        let fee = self
            .rpc
            .get_fee_for_message(&message)
            .await
            .context("asking the fee of a transaction")?;
        *self
            .lamports_per_signature
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(fee);
        Ok(fee)
    }

    /// What the cluster charges for a transaction of `ixs` paid by the
    /// payer alone (its own schedule: signatures, priority, and whatever
    /// else it prices, such as SIMD-0553's requested compute units).
    pub async fn fee_for(&self, ixs: &[Instruction]) -> Result<u64> {
        let b = self.blockhash().await?;
        let message = Message::new_with_blockhash(ixs, Some(&self.payer_key()), &b.hash);
        self.rpc
            .get_fee_for_message(&message)
            .await
            .context("asking the fee of a transaction")
    }

    /// A transaction of `ixs` paid by the payer, signed by it and those of
    /// `signers` the instructions need.
    pub fn sign(
        &self,
        ixs: &[Instruction],
        signers: &[&Keypair],
        blockhash: &Hash,
    ) -> Result<Transaction> {
        let payer = self.payer_key();
        let message = Message::new(ixs, Some(&payer));
        let needed = &message.account_keys[..message.header.num_required_signatures as usize];
        let mut keys: Vec<&Keypair> = vec![&self.payer];
        for key in needed.iter().skip(1) {
            match signers.iter().find(|k| k.pubkey() == *key) {
                Some(k) => keys.push(k),
                None => bail!("the transaction needs the signature of {key}, which is not at hand"),
            }
        }
        let mut tx = Transaction::new_unsigned(message);
        tx.try_sign(&keys, *blockhash)
            .map_err(|e| Error::new(format!("signing a transaction: {e}")))?;
        Ok(tx)
    }

    /// Sends a transaction an interrupted process journaled (no preflight:
    /// it may have landed already).
    pub async fn rebroadcast(&self, tx: &Transaction) -> Result<Signature> {
        let config = RpcSendTransactionConfig {
            skip_preflight: true,
            ..RpcSendTransactionConfig::default()
        };
        Ok(self.rpc.send_transaction_with_config(tx, config).await?)
    }

    /// Journals a transaction, then sends it once (the transport retrying
    /// a missing answer). Its signature when the node took it, and when
    /// what became of it is unknown (no answer): then it is in flight as
    /// far as the caller can tell. An error only when the node refused it.
    pub async fn send(
        &self,
        tx: &Transaction,
        last_valid: u64,
        preflight: bool,
    ) -> Result<Signature> {
        self.journal.record(tx, last_valid)?;
        let config = RpcSendTransactionConfig {
            skip_preflight: !preflight,
            preflight_commitment: Some(self.commitment.commitment),
            ..RpcSendTransactionConfig::default()
        };
        match self.rpc.send_transaction_with_config(tx, config).await {
            Ok(signature) => Ok(signature),
            // An earlier attempt of this very transaction reached the node
            // (the transport sent it again after the answer was lost): it
            // is in flight or landed, not refused, and its status will say.
            Err(e) if already_processed(&e) => Ok(tx.signatures[0]),
            // The node answered with an error (a preflight refusal, a
            // transaction it cannot read): it did not take the
            // transaction, which can never land.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::RpcError(RpcError::RpcResponseError { .. })
                ) =>
            {
                self.journal.forget(&tx.signatures[0])?;
                Err(self.refusal(tx, &e).await)
            }
            // No answer, after the transport's retries: the transaction
            // may have reached the cluster and may land. It stays in the
            // journal and in flight, as if sent; its status will say, and
            // only once its blockhash can no longer land is it signed anew.
            // Sending it blind with another blockhash could pay twice. (An
            // RPC that is gone for good fails the next status poll.)
            Err(_) => Ok(tx.signatures[0]),
        }
    }

    /// Why the node refused a transaction: a preflight failure decoded by
    /// the program that raised it, with the signer's balance when it was
    /// short of lamports; any other failure as `rpc_error` words it.
    async fn refusal(
        &self,
        tx: &Transaction,
        e: &solana_rpc_client_api::client_error::Error,
    ) -> Error {
        use solana_rpc_client_api::request::RpcResponseErrorData;
        let ErrorKind::RpcError(RpcError::RpcResponseError {
            data: RpcResponseErrorData::SendTransactionPreflightFailure(sim),
            ..
        }) = e.kind()
        else {
            return Error::new(errors::rpc_error(e));
        };
        let Some(err) = &sim.err else {
            return Error::new(errors::rpc_error(e));
        };
        let err: TransactionError = err.clone().into();
        let programs = errors::instruction_programs(&tx.message);
        let mut out = format!(
            "refused in simulation: {}",
            errors::transaction_error(&err, &programs, &self.program_id)
        );
        if errors::is_short_of_lamports(&err, &programs) {
            let signer = self.payer_key();
            if let Ok(balance) = self.balance(&signer).await {
                out.push_str(&format!(
                    "; the signer {signer} has {}: {}",
                    crate::output::sol(balance),
                    crate::funds::how_to_fund(&signer, 0)
                ));
            }
        }
        if let Some(logs) = &sim.logs {
            out.push_str(&errors::log_tail(logs));
        }
        Error::new(out)
    }

    /// Sends again every transaction of this signer's processes that are
    /// gone (`Journal::orphans`: never another signer's) that could still
    /// land, waits until each has landed or expired, then removes its file.
    /// Returns how many were still open. Only commands that send call it:
    /// a read-only one has nothing to protect from a late landing.
    pub async fn settle_journal(&self) -> Result<usize> {
        let orphans = self.journal.orphans();
        if orphans.is_empty() {
            return Ok(0);
        }
        let height = self.block_height().await?;
        // Only a transaction whose blockhash is still valid can land.
        let open: Vec<&crate::journal::Entry> = orphans
            .iter()
            .flat_map(|o| &o.entries)
            .filter(|e| e.last_valid_block_height >= height)
            .collect();
        let waited = open.len();
        if waited > 0 {
            crate::interrupt::say(format!(
                "finishing {waited} transaction(s) an interrupted curta had in flight (sent again, \
                 waited for until they land or expire)"
            ));
        }
        let sigs: Vec<Signature> = open.iter().map(|e| e.signature).collect();
        let statuses = self.statuses(&sigs).await?;
        let mut pending: std::collections::HashMap<Signature, u64> = Default::default();
        for (e, status) in open.iter().zip(statuses) {
            if status.is_some_and(|s| s.satisfies_commitment(self.commitment)) {
                continue;
            }
            if let Ok(tx) = bincode::deserialize::<Transaction>(&e.wire) {
                // Landed already or not, sending it again is harmless: the
                // cluster takes one signature once.
                let _ = self.rebroadcast(&tx).await;
            }
            pending.insert(e.signature, e.last_valid_block_height);
        }
        let mut told = Instant::now();
        while !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(400)).await;
            let sigs: Vec<Signature> = pending.keys().copied().collect();
            let statuses = self.statuses(&sigs).await?;
            for (sig, status) in sigs.iter().zip(statuses) {
                if status.is_some_and(|s| s.satisfies_commitment(self.commitment)) {
                    pending.remove(sig);
                }
            }
            let height = self.block_height().await?;
            pending.retain(|_, last_valid| *last_valid >= height);
            // What it waits for, every few seconds: a wait of up to a
            // blockhash's life (about a minute) must not look like a hang.
            if let Some(last) = pending.values().max() {
                if told.elapsed() >= Duration::from_secs(5) {
                    told = Instant::now();
                    let blocks = last + 1 - height;
                    crate::interrupt::say(format!(
                        "waiting for {} of them to land, or to expire at block height {} (now {height}, \
                         about {} s)",
                        pending.len(),
                        last + 1,
                        blocks * 2 / 5
                    ));
                }
            }
        }
        for o in orphans.iter().filter(|o| o.remove) {
            self.journal.remove_orphan(&o.path)?;
        }
        Ok(waited)
    }

    /// Statuses of signatures, in order (any number); the slots of those
    /// that landed at the commitment are noted (`slot_seen`).
    pub async fn statuses(&self, sigs: &[Signature]) -> Result<Vec<Option<TransactionStatus>>> {
        let mut out = Vec::with_capacity(sigs.len());
        for chunk in sigs.chunks(STATUS_BATCH) {
            out.extend(
                self.rpc
                    .get_signature_statuses(chunk)
                    .await
                    .context("asking signature statuses")?
                    .value,
            );
        }
        for status in out.iter().flatten() {
            if status.satisfies_commitment(self.commitment) {
                self.saw_slot(status.slot);
            }
        }
        Ok(out)
    }

    /// Sends `ixs` and waits until they land at the commitment, signing
    /// again with a new blockhash if one expires unseen. A transaction that
    /// lands and fails is an error naming `what`, the program error and the
    /// end of the program's log.
    pub async fn send_and_confirm(
        &self,
        what: &str,
        ixs: &[Instruction],
        signers: &[&Keypair],
        preflight: bool,
    ) -> Result<Landed> {
        for _attempt in 0..5 {
            let b = self.blockhash().await?;
            let tx = self.sign(ixs, signers, &b.hash)?;
            let sig = self
                .send(&tx, b.last_valid_block_height, preflight)
                .await
                .map_err(|e| e.context(what))?;
            if let Some(landed) = self.confirm(what, &sig, b.last_valid_block_height).await? {
                return Ok(landed);
            }
            // Expired: no copy of it can land any more, so send anew.
            self.fresh_blockhash().await?;
        }
        bail!("{what}: the transaction expired five times without landing; is the cluster overloaded?")
    }

    /// Waits for one signature: `Some` when it landed, `None` when its
    /// blockhash expired first, an error when it failed.
    pub async fn confirm(
        &self,
        what: &str,
        sig: &Signature,
        last_valid: u64,
    ) -> Result<Option<Landed>> {
        let mut checked_height = Instant::now();
        loop {
            if let Some(status) = self.statuses(&[*sig]).await?.pop().flatten() {
                if status.satisfies_commitment(self.commitment) {
                    if let Some(err) = status.err {
                        return Err(self.failure(what, sig, &err).await);
                    }
                    return Ok(Some(Landed {
                        signature: *sig,
                        slot: status.slot,
                    }));
                }
            } else if checked_height.elapsed() > Duration::from_secs(2) {
                checked_height = Instant::now();
                if self.block_height().await? > last_valid {
                    return Ok(None);
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The error of a landed, failed transaction, with its log.
    pub async fn failure(&self, what: &str, sig: &Signature, err: &TransactionError) -> Error {
        let info = self.transaction(sig).await.unwrap_or_default();
        Error::new(format!(
            "{what} failed: {} (transaction {sig}){}",
            errors::transaction_error(err, &info.programs, &self.program_id),
            errors::log_tail(&info.logs)
        ))
    }

    /// A landed transaction's slot, fee, error, logs and compute units
    /// (`getTransaction`, asked again for a while: a node may answer a
    /// status before it serves the transaction).
    pub async fn transaction(&self, sig: &Signature) -> Result<TxInfo> {
        let params = json!([sig.to_string(), {
            "encoding": "json",
            "commitment": self.commitment.commitment.to_string(),
            "maxSupportedTransactionVersion": 0,
        }]);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found: Value = self
                .rpc
                .send(RpcRequest::GetTransaction, params.clone())
                .await
                .context(format!("getTransaction {sig}"))?;
            if !found.is_null() {
                return tx_info(&found).context(format!("getTransaction {sig}"));
            }
            if Instant::now() > deadline {
                bail!(
                    "getTransaction {sig}: the node keeps no history of it (a validator started \
                     without transaction history?)"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Reads `getTransaction`'s JSON.
fn tx_info(v: &Value) -> Result<TxInfo> {
    let meta = &v["meta"];
    if meta.is_null() {
        bail!("no status metadata");
    }
    let err = match &meta["err"] {
        Value::Null => None,
        e => Some(
            serde_json::from_value::<TransactionError>(e.clone())
                .map_err(|_| Error::new(format!("an error the client cannot read: {e}")))?,
        ),
    };
    let logs = meta["logMessages"]
        .as_array()
        .map(|lines| {
            lines
                .iter()
                .filter_map(|l| l.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let message = &v["transaction"]["message"];
    let keys: Vec<Pubkey> = message["accountKeys"]
        .as_array()
        .map(|keys| {
            keys.iter()
                .filter_map(|k| k.as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let programs = message["instructions"]
        .as_array()
        .map(|ixs| {
            ixs.iter()
                .filter_map(|ix| keys.get(ix["programIdIndex"].as_u64()? as usize).copied())
                .collect()
        })
        .unwrap_or_default();
    Ok(TxInfo {
        slot: v["slot"].as_u64().unwrap_or(0),
        programs,
        fee: meta["fee"].as_u64().unwrap_or(0),
        err,
        logs,
        compute_units: meta["computeUnitsConsumed"].as_u64().unwrap_or(0),
    })
}

/// Whether a send was refused only because the node has already seen the
/// same transaction: a preflight "already processed", which a resent copy of
/// one that reached the node gets.
fn already_processed(e: &solana_rpc_client_api::client_error::Error) -> bool {
    e.get_transaction_error() == Some(TransactionError::AlreadyProcessed)
}

/// The compute units the program `program_id` reported in a log, summed
/// over its invocations (the client core's rule).
pub fn program_units(logs: &[String], program_id: &Pubkey) -> u64 {
    curta_core::client::receipt::program_units(logs, &program_id.to_string())
}

pub use curta_core::client::budget::priority_fee;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_already_processed_is_not_a_refusal() {
        use solana_rpc_client_api::client_error::Error as ClientError;
        let seen = ClientError::from(ErrorKind::TransactionError(
            TransactionError::AlreadyProcessed,
        ));
        assert!(already_processed(&seen));
        let poor = ClientError::from(ErrorKind::TransactionError(
            TransactionError::InsufficientFundsForFee,
        ));
        assert!(!already_processed(&poor));
        assert!(!already_processed(&ClientError::from(ErrorKind::Custom(
            "no answer".into()
        ))));
    }
    use solana_instruction::error::InstructionError;

    #[test]
    fn get_transaction_json() {
        let v = json!({
            "slot": 77,
            "meta": {
                "err": {"InstructionError": [2, {"Custom": 21}]},
                "fee": 5000,
                "logMessages": ["Program X invoke [1]", "Program X consumed 1200 of 1350300 compute units"],
                "computeUnitsConsumed": 1500
            },
            "transaction": {"message": {
                "accountKeys": [
                    "11111111111111111111111111111111",
                    "ComputeBudget111111111111111111111111111111",
                ],
                "instructions": [{"programIdIndex": 1}, {"programIdIndex": 0}],
            }}
        });
        let info = tx_info(&v).unwrap();
        assert_eq!(info.slot, 77);
        assert_eq!(info.fee, 5000);
        assert_eq!(info.compute_units, 1500);
        assert_eq!(
            info.err,
            Some(TransactionError::InstructionError(
                2,
                InstructionError::Custom(21)
            ))
        );
        assert_eq!(info.logs.len(), 2);
        assert_eq!(
            info.programs,
            [
                solana_sdk_ids::compute_budget::id(),
                solana_sdk_ids::system_program::id()
            ]
        );
        assert!(tx_info(&json!({"slot": 1})).is_err());
    }

    #[test]
    fn program_units_and_priority_fees() {
        let id = Pubkey::new_from_array([9; 32]);
        let logs = vec![
            format!("Program {id} invoke [1]"),
            format!("Program {id} consumed 1026674 of 1350300 compute units"),
            "Program ComputeBudget111111111111111111111111111111 consumed 150 of 1 compute units"
                .to_string(),
        ];
        assert_eq!(program_units(&logs, &id), 1_026_674);
        assert_eq!(priority_fee(0, 1_400_000), 0);
        assert_eq!(priority_fee(1, 1_350_300), 2);
        assert_eq!(priority_fee(1_000_000, 1_000), 1_000);
    }
}
