//! The journal of transactions sent and not yet known to have landed or
//! expired, so that a command run again after a crash never pays twice.
//!
//! Before sending, a process appends each transaction (its signature, the
//! last block height its blockhash is valid for, and its bytes) to its own
//! file, which it holds locked while it runs. A later process first
//! settles the files of the processes that are gone (their lock is free):
//! every transaction of theirs that could still land it sends again (the
//! dead process meant to send it, and may have died before it did), then
//! waits until each has landed or can no longer land (the chain's block
//! height passed its last valid height), and removes the file. Only then
//! does it read the chain and decide what is missing, so nothing the dead
//! process sent can land after that decision and be paid for twice.
//!
//! Files live in `STATE_DIR/inflight/GENESIS_HASH/`, one folder per
//! cluster, one file per process.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

use base64::Engine;
use solana_signature::Signature;
use solana_transaction::Transaction;

use crate::errors::{Error, Result};

/// This process's journal.
pub struct Journal {
    dir: PathBuf,
    path: PathBuf,
    file: Mutex<Option<File>>,
}

/// One journaled transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub signature: Signature,
    pub last_valid_block_height: u64,
    /// The signed transaction, as sent.
    pub wire: Vec<u8>,
}

/// `CURTA_STATE_DIR`, else `$XDG_STATE_HOME/curta`, else
/// `~/.local/state/curta`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CURTA_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME") {
        return Path::new(&dir).join("curta");
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".local/state/curta")
}

impl Journal {
    /// The journal for a cluster (by its genesis hash) under `state_dir`.
    /// The file is created on the first transaction.
    pub fn new(state_dir: &Path, genesis_hash: &str) -> Journal {
        let dir = state_dir.join("inflight").join(genesis_hash);
        let path = dir.join(format!("{}.txt", std::process::id()));
        Journal {
            dir,
            path,
            file: Mutex::new(None),
        }
    }

    /// Appends a transaction before it is sent.
    pub fn record(&self, tx: &Transaction, last_valid_block_height: u64) -> Result<()> {
        let wire = bincode::serialize(tx)
            .map_err(|e| Error::new(format!("serializing a transaction: {e}")))?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(wire);
        let signature = tx.signatures[0];
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            fs::create_dir_all(&self.dir)
                .map_err(|e| Error::new(format!("cannot create {}: {e}", self.dir.display())))?;
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| Error::new(format!("cannot open {}: {e}", self.path.display())))?;
            // Held for the life of the process: a free lock means the
            // writer is gone. (Blocking: another process checking whether
            // this file is an orphan holds it for a moment.)
            f.lock()
                .map_err(|e| Error::new(format!("cannot lock {}: {e}", self.path.display())))?;
            *file = Some(f);
        }
        if let Some(f) = file.as_mut() {
            writeln!(f, "{signature} {last_valid_block_height} {b64}")
                .map_err(|e| Error::new(format!("cannot write {}: {e}", self.path.display())))?;
        }
        Ok(())
    }

    /// Marks a journaled transaction as never sent: the cluster refused it
    /// before taking it (in preflight), so it can never land and no later
    /// process need wait for it. Appended, as every entry is.
    pub fn forget(&self, signature: &Signature) -> Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = file.as_mut() {
            writeln!(f, "{FORGOTTEN}{signature}")
                .map_err(|e| Error::new(format!("cannot write {}: {e}", self.path.display())))?;
        }
        Ok(())
    }

    /// Removes the file of a process that is gone, once its entries are
    /// settled (`Cluster::settle_journal`).
    pub fn remove_orphan(&self, path: &Path) -> Result<()> {
        fs::remove_file(path)
            .map_err(|e| Error::new(format!("cannot remove {}: {e}", path.display())))
    }

    /// Removes this process's file: everything it sent is settled.
    pub fn close(&self) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.take().is_some() {
            let _ = fs::remove_file(&self.path);
        }
    }

    /// The files of processes that are gone, with their entries.
    pub fn orphans(&self) -> Vec<(PathBuf, Vec<Entry>)> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return vec![];
        };
        let mut out = vec![];
        for entry in dir.flatten() {
            let path = entry.path();
            if path == self.path {
                continue;
            }
            let Ok(file) = File::open(&path) else {
                continue;
            };
            // Still held: a live process's.
            if file.try_lock().is_err() {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap_or_default();
            out.push((path, parse(&text)));
        }
        out
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // A clean exit (errors included: everything sent was waited for
        // or is journaled in the file, which then stays).
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_some() && std::thread::panicking() {
            eprintln!("in-flight transactions kept in {}", self.path.display());
        }
    }
}

/// A line that marks the transaction of its signature as never sent.
const FORGOTTEN: &str = "- ";

fn parse(text: &str) -> Vec<Entry> {
    let forgotten: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix(FORGOTTEN))
        .map(str::trim)
        .collect();
    text.lines()
        .filter(|line| {
            let signature = line.split(' ').next().unwrap_or_default();
            !forgotten.contains(signature)
        })
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let signature = Signature::from_str(fields.next()?).ok()?;
            let last_valid_block_height = fields.next()?.trim().parse().ok()?;
            let wire = base64::engine::general_purpose::STANDARD
                .decode(fields.next()?.trim())
                .ok()?;
            Some(Entry {
                signature,
                last_valid_block_height,
                wire,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_live_files_are_left_alone() {
        let dir = std::env::temp_dir().join(format!("curta-journal-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let live = Journal::new(&dir, "genesis");
        let payer = solana_keypair::Keypair::new_from_array([5; 32]);
        let ix = solana_system_interface::instruction::transfer(
            &solana_signer::Signer::pubkey(&payer),
            &solana_pubkey::Pubkey::new_from_array([6; 32]),
            1,
        );
        let tx = Transaction::new_signed_with_payer(
            &[ix],
            Some(&solana_signer::Signer::pubkey(&payer)),
            &[&payer],
            solana_hash::Hash::new_from_array([9; 32]),
        );
        live.record(&tx, 42).unwrap();
        // Another journal in the same process sees this file as its own
        // writer's (locked), not an orphan.
        let mut other = Journal::new(&dir, "genesis");
        other.path = dir.join("inflight/genesis/other.txt");
        assert!(other.orphans().is_empty());
        // A file nobody holds is an orphan, read back exactly.
        let text = fs::read_to_string(&live.path).unwrap();
        fs::write(
            dir.join("inflight/genesis/dead.txt"),
            format!("{text}garbage\n"),
        )
        .unwrap();
        let orphans = other.orphans();
        let dead: Vec<_> = orphans
            .iter()
            .filter(|(p, _)| p.ends_with("dead.txt"))
            .collect();
        assert_eq!(dead[0].1.len(), 1);
        let e = &dead[0].1[0];
        assert_eq!(
            (e.signature, e.last_valid_block_height),
            (tx.signatures[0], 42)
        );
        assert_eq!(bincode::deserialize::<Transaction>(&e.wire).unwrap(), tx);
        // A transaction the cluster refused is forgotten: no one waits for it.
        live.forget(&tx.signatures[0]).unwrap();
        assert!(parse(&fs::read_to_string(&live.path).unwrap()).is_empty());
        live.close();
        assert!(!live.path.exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
