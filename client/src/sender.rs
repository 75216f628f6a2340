//! Sending many independent transactions at once (weight and program
//! writes, bindings, closings): up to a window of them in flight, statuses
//! polled in batches, any whose blockhash expires unseen signed again and
//! resent. Every one is journaled before it is sent (`journal`). The
//! crank's window (`crank`) is a loop of its own on purpose: its turns must
//! land in order, and it goes back on `StaleTurn` and follows another
//! cranker, where these transactions land in any order.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_signature::Signature;

use crate::bail;
use crate::cluster::{Cluster, POLL};
use crate::errors::Result;
use crate::progress::Progress;

/// One transaction to land: its instructions and the signers they need
/// besides the payer.
pub struct Job {
    /// What it does, for errors: "write to section 1 at offset 4,930".
    pub what: String,
    pub instructions: Vec<Instruction>,
    pub signers: Vec<Arc<Keypair>>,
    /// Its share of the progress (bytes written, say).
    pub units: u64,
}

impl Job {
    /// A plan's transaction, with the keypairs of the accounts it creates.
    pub fn of(planned: crate::plans::Planned, signers: Vec<Arc<Keypair>>) -> Job {
        Job {
            what: planned.what,
            instructions: planned.instructions,
            signers,
            units: planned.units,
        }
    }
}

/// How many transactions to keep in flight, and whether to simulate each
/// before sending (off for bulk writes: a failure is seen in its status).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub in_flight: usize,
    pub preflight: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            in_flight: 256,
            preflight: false,
        }
    }
}

/// What a batch cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub transactions: u64,
    pub fees: u64,
    pub first_slot: u64,
    pub last_slot: u64,
}

impl Summary {
    pub fn add(&mut self, other: &Summary) {
        if other.transactions == 0 {
            return;
        }
        if self.transactions == 0 {
            self.first_slot = other.first_slot;
        }
        self.first_slot = self.first_slot.min(other.first_slot);
        self.last_slot = self.last_slot.max(other.last_slot);
        self.transactions += other.transactions;
        self.fees += other.fees;
    }

    fn landed(&mut self, slot: u64, fee: u64) {
        self.first_slot = if self.transactions == 0 {
            slot
        } else {
            self.first_slot.min(slot)
        };
        self.last_slot = self.last_slot.max(slot);
        self.transactions += 1;
        self.fees += fee;
    }
}

/// HTTP requests sending transactions at once.
const CONCURRENT_SENDS: usize = 16;
/// Attempts to hand one transaction to the RPC before giving up.
const SEND_ATTEMPTS: u32 = 4;

struct Flight {
    job: usize,
    last_valid: u64,
    signatures: u64,
}

/// Lands every job (in any order); stops at the first that fails on chain.
pub async fn send_all(
    cluster: &Cluster,
    jobs: &[Job],
    opts: Options,
    progress: Option<&Progress>,
) -> Result<Summary> {
    let mut summary = Summary::default();
    if jobs.is_empty() {
        return Ok(summary);
    }
    let per_signature = cluster.lamports_per_signature().await?;
    let mut queue: VecDeque<usize> = (0..jobs.len()).collect();
    let mut attempts = vec![0u32; jobs.len()];
    let mut flying: HashMap<Signature, Flight> = HashMap::new();
    let mut sending = FuturesUnordered::new();
    let mut polled = Instant::now();
    let mut height_checked = Instant::now();
    loop {
        while flying.len() + sending.len() < opts.in_flight.max(1)
            && sending.len() < CONCURRENT_SENDS
        {
            let Some(j) = queue.pop_front() else { break };
            let b = cluster.blockhash().await?;
            let signers: Vec<&Keypair> = jobs[j].signers.iter().map(|k| k.as_ref()).collect();
            let tx = cluster.sign(&jobs[j].instructions, &signers, &b.hash)?;
            let flight = Flight {
                job: j,
                last_valid: b.last_valid_block_height,
                signatures: tx.signatures.len() as u64,
            };
            sending.push(async move {
                let sent = cluster.send(&tx, flight.last_valid, opts.preflight).await;
                (flight, sent)
            });
        }
        if queue.is_empty() && flying.is_empty() && sending.is_empty() {
            return Ok(summary);
        }
        let wait = POLL.saturating_sub(polled.elapsed());
        tokio::select! {
            Some((flight, sent)) = sending.next(), if !sending.is_empty() => {
                match sent {
                    Ok(sig) => {
                        flying.insert(sig, flight);
                    }
                    Err(e) => {
                        attempts[flight.job] += 1;
                        if attempts[flight.job] >= SEND_ATTEMPTS {
                            return Err(e.context(&jobs[flight.job].what));
                        }
                        queue.push_back(flight.job);
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
            }
            _ = tokio::time::sleep(wait) => {}
        }
        if polled.elapsed() < POLL || flying.is_empty() {
            continue;
        }
        polled = Instant::now();
        let sigs: Vec<Signature> = flying.keys().copied().collect();
        let statuses = cluster.statuses(&sigs).await?;
        for (sig, status) in sigs.iter().zip(statuses) {
            let Some(status) = status else { continue };
            if !status.satisfies_commitment(cluster.commitment) {
                continue;
            }
            let Some(flight) = flying.remove(sig) else {
                continue;
            };
            if let Some(err) = &status.err {
                return Err(cluster.failure(&jobs[flight.job].what, sig, err).await);
            }
            summary.landed(status.slot, flight.signatures * per_signature);
            if let Some(p) = progress {
                p.inc(jobs[flight.job].units);
            }
        }
        if height_checked.elapsed() > Duration::from_secs(1) && !flying.is_empty() {
            height_checked = Instant::now();
            let height = cluster.block_height().await?;
            let expired: Vec<Signature> = flying
                .iter()
                .filter(|(_, f)| f.last_valid < height)
                .map(|(s, _)| *s)
                .collect();
            for sig in expired {
                if let Some(f) = flying.remove(&sig) {
                    // Its blockhash is gone: no copy of it can land now.
                    attempts[f.job] += 1;
                    if attempts[f.job] > 2 * SEND_ATTEMPTS {
                        bail!(
                            "{}: expired {} times without landing; is the cluster overloaded?",
                            jobs[f.job].what,
                            attempts[f.job]
                        );
                    }
                    queue.push_front(f.job);
                }
            }
            if !queue.is_empty() {
                cluster.fresh_blockhash().await?;
            }
        }
    }
}
