//! Cranking a run: the client core's state machine
//! (`curta_core::client::crank`, the one `@curta/sdk` runs through the
//! WebAssembly module; `docs/client.md`, "Cranking", says what it does and
//! why), and this file its I/O: RPC, signing, the journal and timers.
//!
//! Nothing is paid twice: a turn can only succeed once (its expected turn
//! count), and a crank run again after a crash first waits for the
//! transactions the dead process left in flight (`journal`), then resumes
//! from the chain's state.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use curta_core::client::crank::{self as machine, Action, Crank, Event, Params, Status, StopKind};
use curta_core::protocol::run::CrankFee;
use curta_core::protocol::{model, RunAccount};
use futures::future::try_join_all;
use solana_pubkey::Pubkey;
use solana_signature::Signature;

pub use curta_core::client::budget::LimitPolicy;
pub use curta_core::client::crank::{Options, Summary, TurnRecord};

use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::Cluster;
use crate::errors::{self, Error, Result};
use crate::model::{check_artifact, fetch_artifact, ModelInfo};

/// What a crank did: the core's summary, the run and its model, and the
/// time it took.
#[derive(Clone, Debug)]
pub struct Cranked {
    pub run: Pubkey,
    pub model: Pubkey,
    pub seconds: f64,
    pub done: Summary,
    /// The delivery sent after the last turn, for a run that names a
    /// callback (`crate::deliver`).
    pub delivered: Option<crate::deliver::Delivered>,
    /// Stopped by Ctrl-C (or a closed output): what it had in flight.
    pub stopped: Option<Stopped>,
}

/// What a crank stopped by Ctrl-C had in flight, and what became of it in
/// the moment it looked (`interrupt::GRACE`, within the second Ctrl-C
/// allows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Turns that landed after the stop: their fees and the crank fees they
    /// earned are counted (their receipts are not checked against the
    /// replay; the next crank of the run checks the state they left).
    pub landed: Vec<Late>,
    /// Turns that landed and failed after the stop: their fees are counted.
    pub failed: Vec<Late>,
    /// Turns with no status by then, (turn, signature): not counted. Each
    /// may still land until its blockhash expires (about a minute); the
    /// next command of the same signer settles them first (`journal`).
    pub in_flight: Vec<(u64, String)>,
}

/// A turn seen landing after the crank was stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Late {
    pub turn: u64,
    pub signature: String,
    pub slot: u64,
    pub fee: u64,
    /// The crank fee it paid the signer (0 when it failed).
    pub earned: u64,
}

impl std::ops::Deref for Cranked {
    type Target = Summary;
    fn deref(&self) -> &Summary {
        &self.done
    }
}

impl Cranked {
    /// Its fees, the delivery's and those of turns that landed after a stop
    /// included.
    pub fn all_fees(&self) -> u64 {
        let late = self.stopped.as_ref().map_or(0, |s| {
            s.landed.iter().chain(&s.failed).map(|l| l.fee).sum::<u64>()
        });
        self.fees() + late + self.delivered.as_ref().map_or(0, |d| d.fee)
    }
    /// What it earned: crank fees (those of turns that landed after a stop
    /// included) and the delivery fee.
    pub fn all_earned(&self) -> u64 {
        let late = self
            .stopped
            .as_ref()
            .map_or(0, |s| s.landed.iter().map(|l| l.earned).sum::<u64>());
        self.earned() + late + self.delivered.as_ref().map_or(0, |d| d.earned)
    }
    /// Turns of its own that landed, after a stop included.
    pub fn landed(&self) -> u64 {
        self.turns.len() as u64 + self.stopped.as_ref().map_or(0, |s| s.landed.len() as u64)
    }
    /// Turns of its own that landed and failed, after a stop included.
    pub fn failed_turns(&self) -> u64 {
        self.failed.len() as u64 + self.stopped.as_ref().map_or(0, |s| s.failed.len() as u64)
    }
    /// Its turn transactions that landed (turns landed and failed).
    pub fn turn_transactions(&self) -> u64 {
        self.landed() + self.failed_turns()
    }
    /// What a crank that ended in an error did (its turns that landed
    /// and failed, not those it had in flight).
    pub fn partial(ctx: &RunContext, crank: &Crank) -> Cranked {
        Cranked {
            run: ctx.run,
            model: ctx.model.keys.model,
            seconds: 0.0,
            done: crank.summary().clone(),
            delivered: None,
            stopped: None,
        }
    }
    /// Turns it sent whose outcome it does not know (after a stop).
    pub fn in_flight(&self) -> u64 {
        self.stopped
            .as_ref()
            .map_or(0, |s| s.in_flight.len() as u64)
    }
    /// Its failed turns that it went on to land itself (sent out of order,
    /// or after a turn whose blockhash expired): failed and resent.
    pub fn failed_resent(&self) -> u64 {
        let landed = |turn| self.turns.iter().any(|t| t.turn == turn);
        self.failed.iter().filter(|f| landed(f.turn)).count() as u64
    }
    /// Its failed turns that another cranker landed first: paid for, and
    /// not resent (the turns are the other's, `turns_by_others`).
    pub fn failed_to_others(&self) -> u64 {
        self.failed.len() as u64 - self.failed_resent()
    }
    /// Its transactions, landed or failed, as one batch.
    pub fn summary(&self) -> crate::sender::Summary {
        let slots = self.turns.iter().map(|t| t.slot);
        let slots = slots.chain(self.failed.iter().map(|f| f.slot));
        crate::sender::Summary {
            transactions: self.transactions(),
            fees: self.fees(),
            first_slot: slots.clone().min().unwrap_or(0),
            last_slot: slots.max().unwrap_or(0),
        }
    }
}

/// A run's context: its model, its allowance (its config's at opening,
/// which every turn of it is planned under), the weights.
pub struct RunContext {
    pub run: Pubkey,
    pub model: ModelInfo,
    pub allowance: u32,
    pub royalty: u64,
    pub crank: CrankFee,
    pub artifact: Artifact,
    pub state: Vec<u8>,
}

/// Reads a run, its model, and the weights (the local artifact, checked
/// against the model's digests, or fetched from the chain).
pub async fn context(
    cluster: &Cluster,
    run: &Pubkey,
    local: Option<Artifact>,
) -> Result<RunContext> {
    let Some(account) = cluster.account(run).await? else {
        bail!("there is no run account at {run} on {}", cluster.url);
    };
    if account.owner != cluster.program_id {
        bail!(
            "{run} is not an account of the curta program {}",
            cluster.program_id
        );
    }
    let r = RunAccount::read(&account.data)
        .map_err(|_| Error::new(format!("{run} is not an opened run")))?;
    let model_key = Pubkey::new_from_array(*r.model());
    let model = crate::runs::model_of_run(cluster, run, &model_key, account.lamports).await?;
    // The run's own allowance, recorded at opening: the program plans its
    // turns under it, whatever its config's allowance is now.
    let allowance = r.allowance();
    if allowance == 0 {
        bail!(
            "{run} was opened by an older program, which recorded no turn allowance: it cannot \
             turn, and can only be closed (`curta run close {run}`)"
        );
    }
    let artifact = match local {
        Some(a) => {
            check_artifact(&model, &a)?;
            a
        }
        None => fetch_artifact(cluster, &model).await?,
    };
    Ok(RunContext {
        run: *run,
        royalty: r.royalty(),
        crank: CrankFee {
            fee: r.crank_fee(),
            deposit: r.crank_deposit(),
        },
        state: r.state().to_vec(),
        model,
        allowance,
        artifact,
    })
}

/// The crank of a run, set up from the cluster: its replay from the
/// chain's state, and what the fee payer must keep.
pub async fn machine(cluster: &Cluster, ctx: &RunContext, opts: Options) -> Result<Crank> {
    if ctx.model.status != model::SEALED {
        bail!(
            "model {} is {}: the run can only be closed (`curta run close {}`)",
            ctx.model.keys.model,
            ctx.model.status_name(),
            ctx.run
        );
    }
    let replay = crate::replay::replay(&ctx.artifact, &ctx.state, ctx.allowance)?;
    let params = Params {
        program_id: cluster.program_id.to_string(),
        run: ctx.run.to_bytes(),
        model: ctx.model.keys.model.to_bytes(),
        royalty: ctx.royalty,
        crank_fee: ctx.crank.fee,
        crank_deposit: ctx.crank.deposit,
        owner: ctx.model.keys.owner.to_bytes(),
        payer: cluster.payer_key().to_string(),
        keep: cluster.rent(0).await?,
        lamports_per_signature: cluster.lamports_per_signature().await?,
        options: opts,
    };
    let config = ctx.artifact.metadata().config;
    Ok(Crank::new(config, replay, params))
}

/// Cranks the run to its end. `on_turn` sees every landed, checked turn in
/// order (to print the text as it arrives).
pub async fn crank(
    cluster: &Cluster,
    ctx: &RunContext,
    opts: Options,
    on_turn: impl FnMut(&TurnRecord),
) -> Result<Cranked> {
    let mut crank = machine(cluster, ctx, opts).await?;
    drive(cluster, ctx, &mut crank, on_turn).await
}

/// Does the I/O of a crank until it is done or stops. Ctrl-C (or a closed
/// output) stops it: it sends nothing more, looks until
/// `interrupt::deadline` at the turns it has in flight, and returns what it
/// did with `stopped` set. A signer that cannot pay the first turn is
/// refused before anything is sent. After an error, `crank.summary()` still
/// says what it did (`Cranked::partial`).
pub async fn drive(
    cluster: &Cluster,
    ctx: &RunContext,
    crank: &mut Crank,
    mut on_turn: impl FnMut(&TurnRecord),
) -> Result<Cranked> {
    let started = Instant::now();
    let _cranking = crate::interrupt::cranking();
    let mut told = 0;
    let mut sent: HashMap<String, Vec<Pubkey>> = HashMap::new();
    // The turn being sent: signed, maybe sent, not yet known to the crank.
    let sending: Mutex<Option<(u64, String)>> = Mutex::new(None);
    let mut action = crank.next(Event::Start);
    let stopped = loop {
        for t in &crank.summary().turns[told..] {
            on_turn(t);
        }
        told = crank.summary().turns.len();
        let event = match action {
            Action::Done => break None,
            Action::Stop(stop) => {
                let words = match stop.kind {
                    StopKind::OutOfFunds => {
                        return Err(out_of_funds(cluster, ctx, crank, stop).await)
                    }
                    _ => stop.words,
                };
                return Err(Error::new(words));
            }
            action => tokio::select! {
                biased;
                _ = crate::interrupt::interrupted() => None,
                event = perform(cluster, ctx, &mut sent, &sending, started, action) => Some(event?),
            },
        };
        let Some(event) = event else {
            let mut flying = crank.in_flight();
            let half_sent = lock(&sending).take();
            if let Some(s) = half_sent.filter(|s| !flying.contains(s)) {
                flying.push(s);
            }
            break Some(look_at(cluster, flying).await);
        };
        if matches!(event, Event::Sent { .. }) {
            lock(&sending).take();
        }
        action = crank.next(event);
    };
    Ok(Cranked {
        run: ctx.run,
        model: ctx.model.keys.model,
        seconds: started.elapsed().as_secs_f64(),
        done: crank.summary().clone(),
        delivered: None,
        stopped,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The words of a crank whose signer cannot pay its first turn (refused
/// before anything is sent) or ran out of lamports midway, naming the run's
/// next turn (the first not landed: the turns sent after it were dropped
/// unseen, unpaid), the balance and what is needed, and how to fund it.
async fn out_of_funds(
    cluster: &Cluster,
    ctx: &RunContext,
    crank: &Crank,
    stop: machine::Stop,
) -> Error {
    let signer = cluster.payer_key();
    let s = crank.summary();
    // The run's count as the chain has it (a turn may have landed since the
    // crank last read the statuses), else as the crank knows it.
    let known = s.turns_before + s.turns.len() as u64 + s.turns_by_others;
    let account = cluster.account(&ctx.run).await.ok().flatten();
    let on_chain = account.and_then(|a| {
        let r = RunAccount::read(&a.data).ok()?;
        Some(curta_core::StateInfo::read(r.state()).ok()?.turns)
    });
    let next = on_chain.unwrap_or(known).max(known) + 1;
    let p = crank.params();
    // That turn's fee, as its budget prices it.
    let step = crank
        .steps()
        .iter()
        .position(|s| s.turns_before + 1 == next);
    let fee = step.map_or(p.lamports_per_signature, |i| {
        crank.fee(i, crank.budgets()[i].cu_limit)
    });
    let balance = cluster.balance(&signer).await.ok();
    let nothing_sent = s.in_flight_most == 0;
    let words = balance
        .and_then(|b| machine::short_of_fees(&p.payer, b, p.keep, fee, next, nothing_sent))
        .unwrap_or(stop.words);
    let short = (p.keep + fee).saturating_sub(balance.unwrap_or(0));
    let nothing = match nothing_sent {
        true => " (nothing was sent)",
        false => "",
    };
    Error::new(format!(
        "{words}; {}{nothing}",
        crate::funds::how_to_fund(&signer, short)
    ))
    .ends_cranker()
}

/// What became of the turns a stopped crank had in flight: their statuses
/// read until each is known or `interrupt::deadline` passes, and the fee
/// and crank fee of each that landed.
async fn look_at(cluster: &Cluster, flying: Vec<(u64, String)>) -> Stopped {
    let deadline = tokio::time::Instant::from_std(crate::interrupt::deadline());
    let program = cluster.program_id.to_string();
    let mut out = Stopped::default();
    let mut pending = flying;
    while !pending.is_empty() {
        let sigs: Vec<Signature> = pending.iter().map(|(_, s)| parse_signature(s)).collect();
        let Ok(Ok(statuses)) = tokio::time::timeout_at(deadline, cluster.statuses(&sigs)).await
        else {
            break;
        };
        let mut still = vec![];
        for ((turn, signature), status) in pending.into_iter().zip(statuses) {
            let landed = status.filter(|s| s.satisfies_commitment(cluster.commitment));
            let Some(status) = landed else {
                still.push((turn, signature));
                continue;
            };
            let sig = parse_signature(&signature);
            let Ok(Ok(tx)) = tokio::time::timeout_at(deadline, cluster.transaction(&sig)).await
            else {
                still.push((turn, signature));
                continue;
            };
            let earned = match &status.err {
                Some(_) => 0,
                None => curta_core::client::receipt::from_logs(&tx.logs, &program)
                    .first()
                    .map_or(0, |r| r.event.crank_paid),
            };
            let late = Late {
                turn,
                signature,
                slot: status.slot,
                fee: tx.fee,
                earned,
            };
            match status.err {
                Some(_) => out.failed.push(late),
                None => out.landed.push(late),
            }
        }
        pending = still;
        if pending.is_empty()
            || tokio::time::Instant::now() + Duration::from_millis(machine::POLL_MS) >= deadline
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(machine::POLL_MS)).await;
    }
    out.in_flight = pending;
    out
}

/// Does what an action asks; returns the event answering it.
async fn perform(
    cluster: &Cluster,
    ctx: &RunContext,
    sent: &mut HashMap<String, Vec<Pubkey>>,
    sending: &Mutex<Option<(u64, String)>>,
    started: Instant,
    action: Action,
) -> Result<Event> {
    Ok(match action {
        Action::Send(send) => {
            let (signature, last_valid_height, programs) =
                send_turn(cluster, ctx, &send, sending).await?;
            sent.insert(signature.to_string(), programs);
            Event::Sent {
                signature: signature.to_string(),
                last_valid_height,
            }
        }
        Action::Wait { ms } => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Event::Waited {
                now_ms: started.elapsed().as_millis() as u64,
            }
        }
        Action::Statuses { signatures } => {
            let sigs: Vec<Signature> = signatures.iter().map(|s| parse_signature(s)).collect();
            let found = cluster.statuses(&sigs).await?;
            let mut out = Vec::with_capacity(found.len());
            for (sig, status) in sigs.iter().zip(found) {
                let status = match status {
                    Some(s) if s.satisfies_commitment(cluster.commitment) => s,
                    // Run, not yet at the commitment: the crank sends on.
                    Some(s) if s.err.is_none() => {
                        out.push(Status::Seen { slot: s.slot });
                        continue;
                    }
                    _ => {
                        out.push(Status::Pending);
                        continue;
                    }
                };
                let Some(err) = &status.err else {
                    out.push(Status::Landed { slot: status.slot });
                    continue;
                };
                let tx = cluster.transaction(sig).await.unwrap_or_default();
                let programs = match sent.get(&sig.to_string()) {
                    Some(p) => p.clone(),
                    None => tx.programs.clone(),
                };
                out.push(Status::Failed {
                    slot: status.slot,
                    fee: tx.fee,
                    custom: errors::curta_code(err, &programs, &cluster.program_id),
                    words: errors::transaction_error(err, &programs, &cluster.program_id),
                    log_tail: errors::log_tail(&tx.logs),
                });
            }
            Event::Statuses(out)
        }
        Action::Transactions { signatures } => {
            let txs = try_join_all(signatures.iter().map(|s| {
                let sig = parse_signature(s);
                async move { cluster.transaction(&sig).await }
            }))
            .await?;
            let txs = txs.into_iter().map(|tx| machine::Transaction {
                slot: tx.slot,
                fee: tx.fee,
                consumed_cu: tx.compute_units,
                logs: tx.logs,
            });
            Event::Transactions(txs.collect())
        }
        Action::ReadRun => {
            // A closed account, or one that is no opened run, reads as no state.
            let account = cluster.account(&ctx.run).await?;
            let state = account
                .filter(|a| a.owner == cluster.program_id)
                .and_then(|a| RunAccount::read(&a.data).ok().map(|r| r.state().to_vec()));
            Event::RunState(state.unwrap_or_default())
        }
        Action::Height => Event::Height {
            height: cluster.block_height().await?,
            balance: cluster.balance(&cluster.payer_key()).await?,
        },
        Action::Done | Action::Stop(_) => unreachable!("drive ends on them"),
    })
}

/// A signature the crank was handed back: one this client sent.
fn parse_signature(s: &str) -> Signature {
    s.parse().unwrap_or_default()
}

/// Signs and sends a turn: its signature, last valid block height and the
/// program of each of its instructions.
async fn send_turn(
    cluster: &Cluster,
    ctx: &RunContext,
    send: &machine::Send,
    sending: &Mutex<Option<(u64, String)>>,
) -> Result<(Signature, u64, Vec<Pubkey>)> {
    let weights: Vec<Pubkey> = send
        .sections
        .iter()
        .map(|&s| ctx.model.keys.weights[s as usize])
        .collect();
    let turn = crate::instructions::turn(
        &cluster.program_id,
        &ctx.model.keys,
        &ctx.run,
        &cluster.payer_key(),
        &weights,
        Some(send.expected_turns),
    );
    let ixs = crate::plans::turn(turn, send.cu_limit, send.micro_lamports);
    let programs = ixs.iter().map(|ix| ix.program_id).collect();
    let b = if send.fresh_blockhash {
        cluster.fresh_blockhash().await?
    } else {
        cluster.blockhash().await?
    };
    let tx = cluster.sign(&ixs, &[], &b.hash)?;
    // From here it may be sent, even if this is stopped before it returns.
    *lock(sending) = Some((send.turn, tx.signatures[0].to_string()));
    let mut tries = 0;
    let signature = loop {
        match cluster.send(&tx, b.last_valid_block_height, false).await {
            Ok(sig) => break sig,
            Err(e) if tries < 3 => {
                tries += 1;
                crate::interrupt::say(format!("sending turn {} again: {e}", send.turn));
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e.context(format!("sending turn {}", send.turn))),
        }
    };
    Ok((signature, b.last_valid_block_height, programs))
}
