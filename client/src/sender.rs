//! Sending many independent transactions at once (weight and program
//! writes, bindings, closings): the I/O of the client core's batch
//! (`curta_core::client::batch`), which keeps up to a window of them in
//! flight and signs again any whose blockhash expires unseen. Every one is
//! journaled before it is sent (`journal`). The crank (`crank`) has a
//! machine of its own: its turns must land in order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use curta_core::client::batch::{self, Action, Batch, Event, Landing, Sent, Stop};
use futures::stream::{self, StreamExt};
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_signature::Signature;
use solana_transaction::TransactionError;

use crate::bail;
use crate::cluster::Cluster;
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
            in_flight: batch::IN_FLIGHT,
            preflight: false,
        }
    }
}

/// What a batch cost (the client core's, which sums it).
pub use curta_core::client::batch::Summary;

/// HTTP requests sending transactions at once.
const CONCURRENT_SENDS: usize = 16;

/// Lands every job (in any order); stops at the first that fails on chain.
/// The batch is the client core's (`client::batch`): its window, resends
/// and limits; this function does its I/O.
pub async fn send_all(
    cluster: &Cluster,
    jobs: &[Job],
    opts: Options,
    progress: Option<&Progress>,
) -> Result<Summary> {
    if jobs.is_empty() {
        return Ok(Summary::default());
    }
    let per_signature = cluster.lamports_per_signature().await?;
    let options = batch::Options {
        in_flight: opts.in_flight,
        ..batch::Options::default()
    };
    let whats = jobs.iter().map(|j| j.what.clone()).collect();
    let mut machine = Batch::new(whats, options, per_signature);
    let mut errors: HashMap<String, TransactionError> = HashMap::new();
    let started = Instant::now();
    let mut event = Event::Start;
    loop {
        let action = machine.next(event);
        if let Some(p) = progress {
            for j in machine.take_landed() {
                p.inc(jobs[j].units);
            }
        }
        event = match action {
            Action::Done => return Ok(machine.summary()),
            Action::Stop(Stop::GaveUp { words, .. }) => bail!("{words}"),
            Action::Stop(Stop::Failed { job, signature }) => {
                let Some(err) = errors.remove(&signature) else {
                    bail!("{}: transaction {signature} failed", jobs[job].what);
                };
                return Err(cluster
                    .failure(&jobs[job].what, &parse(&signature)?, &err)
                    .await);
            }
            Action::Sign {
                jobs: signing,
                fresh_blockhash,
            } => {
                let b = if fresh_blockhash {
                    cluster.fresh_blockhash().await?
                } else {
                    cluster.blockhash().await?
                };
                let mut signed = Vec::with_capacity(signing.len());
                for &j in &signing {
                    let signers: Vec<&Keypair> =
                        jobs[j].signers.iter().map(|k| k.as_ref()).collect();
                    signed.push(cluster.sign(&jobs[j].instructions, &signers, &b.hash)?);
                }
                let sends = signed.iter().map(|tx| async move {
                    match cluster
                        .send(tx, b.last_valid_block_height, opts.preflight)
                        .await
                    {
                        Ok(signature) => Sent::Taken {
                            signature: signature.to_string(),
                            last_valid_height: b.last_valid_block_height,
                            signatures: tx.signatures.len() as u64,
                        },
                        Err(e) => Sent::Refused {
                            words: e.to_string(),
                        },
                    }
                });
                Event::Sent(
                    stream::iter(sends)
                        .buffered(CONCURRENT_SENDS)
                        .collect()
                        .await,
                )
            }
            Action::Wait { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Event::Waited {
                    now_ms: started.elapsed().as_millis() as u64,
                }
            }
            Action::Statuses { signatures } => {
                let sigs = signatures
                    .iter()
                    .map(|s| parse(s))
                    .collect::<Result<Vec<_>>>()?;
                let found = cluster.statuses(&sigs).await?;
                let landings = found
                    .into_iter()
                    .zip(signatures)
                    .map(|(status, signature)| {
                        let status =
                            status.filter(|s| s.satisfies_commitment(cluster.commitment))?;
                        let failed = status.err.is_some();
                        if let Some(err) = status.err {
                            errors.insert(signature, err);
                        }
                        Some(Landing {
                            slot: status.slot,
                            failed,
                        })
                    });
                Event::Statuses(landings.collect())
            }
            Action::Height => Event::Height {
                height: cluster.block_height().await?,
            },
        };
    }
}

/// A signature this client wrote in base58 itself.
fn parse(signature: &str) -> Result<Signature> {
    signature
        .parse()
        .map_err(|_| crate::errors::Error::new(format!("{signature:?} is not a signature")))
}
