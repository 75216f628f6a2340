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
//! Files live in `STATE_DIR/inflight/GENESIS_HASH/FEE_PAYER/`, one folder
//! per cluster and signer (the fee payer of every transaction the process
//! sends), one file per process: a process settles only what its own
//! signer left in flight, never another key's. A file an older client left
//! directly in the cluster's folder (shared by every signer) is settled by
//! the signer that paid for its transactions: its entries of that fee payer
//! are settled, and the file is removed once it holds no one else's.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

use base64::Engine;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use solana_transaction::Transaction;

use crate::errors::{Error, Result};

/// This process's journal.
pub struct Journal {
    dir: PathBuf,
    /// The cluster's folder, where older clients kept every signer's files.
    shared: PathBuf,
    payer: Pubkey,
    path: PathBuf,
    file: Mutex<Option<File>>,
}

/// The file of a process that is gone, with its entries this signer
/// settles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    /// Whether the file goes once they are settled: it holds no other
    /// signer's entries.
    pub remove: bool,
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
    /// The journal of the fee payer `payer` on a cluster (by its genesis
    /// hash) under `state_dir`. The file is created on the first
    /// transaction.
    pub fn new(state_dir: &Path, genesis_hash: &str, payer: &Pubkey) -> Journal {
        let shared = state_dir.join("inflight").join(genesis_hash);
        let dir = shared.join(payer.to_string());
        let path = dir.join(format!("{}.txt", std::process::id()));
        Journal {
            dir,
            shared,
            payer: *payer,
            path,
            file: Mutex::new(None),
        }
    }

    /// The folder of this signer's files.
    pub fn dir(&self) -> &Path {
        &self.dir
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

    /// The files of this signer's processes that are gone, with their
    /// entries; and the files older clients left in the shared folder that
    /// hold entries this signer paid for, with those entries.
    pub fn orphans(&self) -> Vec<Orphan> {
        let mut out = vec![];
        for (path, entries) in unheld(&self.dir, &self.path) {
            out.push(Orphan {
                path,
                entries,
                remove: true,
            });
        }
        for (path, entries) in unheld(&self.shared, &self.path) {
            let all = entries.len();
            let mine: Vec<Entry> = entries
                .into_iter()
                .filter(|e| fee_payer(&e.wire) == Some(self.payer))
                .collect();
            if !mine.is_empty() {
                out.push(Orphan {
                    remove: mine.len() == all,
                    path,
                    entries: mine,
                });
            }
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
            crate::interrupt::say(format!(
                "in-flight transactions kept in {}",
                self.path.display()
            ));
        }
    }
}

/// The files directly in `dir` (not `own`) that no live process holds,
/// with their entries.
fn unheld(dir: &Path, own: &Path) -> Vec<(PathBuf, Vec<Entry>)> {
    let Ok(dir) = fs::read_dir(dir) else {
        return vec![];
    };
    let mut out = vec![];
    for entry in dir.flatten() {
        let path = entry.path();
        if path == own || !path.is_file() {
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

/// The fee payer of a journaled transaction (its first account).
fn fee_payer(wire: &[u8]) -> Option<Pubkey> {
    let tx: Transaction = bincode::deserialize(wire).ok()?;
    tx.message.account_keys.first().copied()
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
    use solana_signer::Signer;

    fn transfer(payer: &solana_keypair::Keypair, lamports: u64) -> Transaction {
        let ix = solana_system_interface::instruction::transfer(
            &payer.pubkey(),
            &Pubkey::new_from_array([6; 32]),
            lamports,
        );
        Transaction::new_signed_with_payer(
            &[ix],
            Some(&payer.pubkey()),
            &[payer],
            solana_hash::Hash::new_from_array([9; 32]),
        )
    }

    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("curta-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn entries_round_trip_and_live_files_are_left_alone() {
        let dir = test_dir("journal-test");
        let payer = solana_keypair::Keypair::new_from_array([5; 32]);
        let live = Journal::new(&dir, "genesis", &payer.pubkey());
        assert_eq!(
            live.path,
            dir.join(format!(
                "inflight/genesis/{}/{}.txt",
                payer.pubkey(),
                std::process::id()
            ))
        );
        let tx = transfer(&payer, 1);
        live.record(&tx, 42).unwrap();
        // Another journal in the same process sees this file as its own
        // writer's (locked), not an orphan.
        let mut other = Journal::new(&dir, "genesis", &payer.pubkey());
        other.path = other.dir.join("other.txt");
        assert!(other.orphans().is_empty());
        // A file nobody holds is an orphan, read back exactly.
        let text = fs::read_to_string(&live.path).unwrap();
        fs::write(other.dir.join("dead.txt"), format!("{text}garbage\n")).unwrap();
        let orphans = other.orphans();
        let dead: Vec<_> = orphans
            .iter()
            .filter(|o| o.path.ends_with("dead.txt"))
            .collect();
        assert_eq!(dead.len(), 1);
        assert!(dead[0].remove);
        assert_eq!(dead[0].entries.len(), 1);
        let e = &dead[0].entries[0];
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

    #[test]
    fn a_signer_settles_only_its_own() {
        let dir = test_dir("journal-signers");
        let (a, b) = (
            solana_keypair::Keypair::new_from_array([5; 32]),
            solana_keypair::Keypair::new_from_array([7; 32]),
        );
        let ja = Journal::new(&dir, "genesis", &a.pubkey());
        let jb = Journal::new(&dir, "genesis", &b.pubkey());
        // A's file of a process that is gone: A's orphan, never B's.
        fs::create_dir_all(&ja.dir).unwrap();
        let line = |tx: &Transaction| {
            let b64 =
                base64::engine::general_purpose::STANDARD.encode(bincode::serialize(tx).unwrap());
            format!("{} 42 {b64}\n", tx.signatures[0])
        };
        let (ta, tb) = (transfer(&a, 1), transfer(&b, 2));
        fs::write(ja.dir.join("1.txt"), line(&ta)).unwrap();
        assert!(jb.orphans().is_empty());
        let of_a = ja.orphans();
        assert_eq!(of_a.len(), 1);
        assert_eq!(of_a[0].entries[0].signature, ta.signatures[0]);
        // An older client's file in the shared folder: each signer settles
        // its own entries; the file goes only with no one else's in it.
        fs::write(
            ja.shared.join("2.txt"),
            format!("{}{}", line(&ta), line(&tb)),
        )
        .unwrap();
        fs::write(ja.shared.join("3.txt"), line(&tb)).unwrap();
        let of_b = jb.orphans();
        let mut found: Vec<(String, Vec<Signature>, bool)> = of_b
            .iter()
            .map(|o| {
                let name = o.path.file_name().unwrap().to_string_lossy().into_owned();
                (
                    name,
                    o.entries.iter().map(|e| e.signature).collect(),
                    o.remove,
                )
            })
            .collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("2.txt".to_string(), vec![tb.signatures[0]], false),
                ("3.txt".to_string(), vec![tb.signatures[0]], true),
            ]
        );
        let of_a: Vec<usize> = ja.orphans().iter().map(|o| o.entries.len()).collect();
        assert_eq!(
            of_a,
            vec![1, 1],
            "A's own file and its entry of the shared one"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
