//! Cranking a run: every remaining turn, pipelined, checked.
//!
//! The client replays the run natively from the chain's state first
//! (`replay`), so it knows every coming turn's weight accounts, compute
//! units, receipt and state before sending any. It then keeps a window of
//! turns in flight, each carrying the turn count it expects
//! (`expected_turns`), so one that runs out of order fails cheaply with
//! `StaleTurn` instead of doing the wrong step. On such a failure it goes
//! back: it stops sending, lets every turn in flight land or fail, and
//! resends from the first turn that has not landed (go-back-N). Each
//! landed turn's receipt (from `getTransaction`'s logs) must equal the
//! replay's, field by field, and the final state must equal the replay's,
//! byte for byte; on a difference the crank stops and says which turn and
//! which bytes.
//!
//! Nothing is paid twice: a turn can only succeed once (its expected turn
//! count), and a crank run again after a crash first waits for the
//! transactions the dead process left in flight (`journal`), then resumes
//! from the chain's state.
//!
//! `docs/client.md` says why every turn of a run asks for one uniform
//! compute-unit limit, and what was measured.

use std::time::{Duration, Instant};

use curta_core::protocol::{model, CurtaError, RunAccount};
use curta_core::sha256::sha256;
use curta_core::state::diff::first_difference;
use curta_core::StateInfo;
use futures::future::try_join_all;
use solana_pubkey::Pubkey;
use solana_signature::Signature;

use crate::artifact::Artifact;
use crate::bail;
use crate::errors::{self, Error, Result};
use crate::model::{check_artifact, fetch_artifact, read_config, ModelInfo};
use crate::output::hex;
use crate::receipts;
use crate::replay::{self, Replay, Step};
use crate::rpc::{self, Cluster, TxInfo};
use crate::sender::Summary;

/// What compute-unit limit each turn asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// One limit for every turn of the run: the largest plan's estimate
    /// plus 300 (the default; see `docs/client.md`).
    Uniform,
    /// Each turn its own plan's estimate plus 300.
    Exact,
    /// The same given limit for every turn.
    Fixed(u32),
}

impl std::str::FromStr for LimitPolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<LimitPolicy> {
        match s {
            "uniform" => Ok(LimitPolicy::Uniform),
            "exact" => Ok(LimitPolicy::Exact),
            n => match n.parse::<u32>() {
                Ok(v) if (1..=replay::MAX_TRANSACTION_CU).contains(&v) => Ok(LimitPolicy::Fixed(v)),
                _ => Err(Error::new(format!(
                    "--cu-limit {s:?} is not uniform, exact or a number of compute units from 1 \
                     to {}",
                    replay::MAX_TRANSACTION_CU
                ))),
            },
        }
    }
}

/// How to crank.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Turns in flight at once.
    pub window: usize,
    pub limits: LimitPolicy,
    /// A priority fee falling by 4 lamports a turn, over periods of twice
    /// the window (`ramp_lamports`), so that the scheduler, which orders by
    /// fee per compute unit, runs the turns in flight in their order.
    pub priority_ramp: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: 32,
            limits: LimitPolicy::Uniform,
            priority_ramp: true,
        }
    }
}

/// A turn that landed.
#[derive(Clone, Debug)]
pub struct TurnRecord {
    /// The run's turn count after it (the receipt's `turns`).
    pub turn: u64,
    pub signature: Signature,
    pub slot: u64,
    pub cu_limit: u32,
    pub estimated_cu: u32,
    /// The program's own units, from its log line.
    pub program_cu: u64,
    /// The whole transaction's (compute-budget instructions included).
    pub consumed_cu: u64,
    pub fee: u64,
    pub generated: u32,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
    /// The state after the turn (the replay's, which the receipt matched).
    pub state_sha256: [u8; 32],
}

/// A turn transaction that landed and failed (paid, did nothing).
#[derive(Clone, Debug)]
pub struct FailedTurn {
    pub turn: u64,
    pub signature: Signature,
    pub slot: u64,
    pub fee: u64,
    pub error: String,
}

/// What a crank did.
#[derive(Clone, Debug, Default)]
pub struct Cranked {
    pub run: Pubkey,
    pub model: Pubkey,
    /// The turn count when the crank started.
    pub turns_before: u64,
    pub turns: Vec<TurnRecord>,
    pub failed: Vec<FailedTurn>,
    /// Turns someone else sent while this crank ran.
    pub turns_by_others: u64,
    /// Whether it found another cranker on the run, and went on one turn
    /// at a time.
    pub backed_off: bool,
    pub final_state_sha256: [u8; 32],
    pub text: Vec<u8>,
    pub seconds: f64,
}

impl Cranked {
    pub fn fees(&self) -> u64 {
        self.turns.iter().map(|t| t.fee).sum::<u64>()
            + self.failed.iter().map(|f| f.fee).sum::<u64>()
    }
    pub fn transactions(&self) -> u64 {
        (self.turns.len() + self.failed.len()) as u64
    }
    pub fn program_cu(&self) -> u64 {
        self.turns.iter().map(|t| t.program_cu).sum()
    }
    /// Its transactions, landed or failed, as one batch.
    pub fn summary(&self) -> Summary {
        let slots = self.turns.iter().map(|t| t.slot);
        let slots = slots.chain(self.failed.iter().map(|f| f.slot));
        Summary {
            transactions: self.transactions(),
            fees: self.fees(),
            first_slot: slots.clone().min().unwrap_or(0),
            last_slot: slots.max().unwrap_or(0),
        }
    }
    /// Landed turns per slot they landed in: (slot, turns).
    pub fn turns_per_slot(&self) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = vec![];
        for t in &self.turns {
            match out.iter_mut().find(|(s, _)| *s == t.slot) {
                Some((_, n)) => *n += 1,
                None => out.push((t.slot, 1)),
            }
        }
        out.sort();
        out
    }
}

/// A run's context: its model, the config's allowance, the weights.
pub struct RunContext {
    pub run: Pubkey,
    pub model: ModelInfo,
    pub allowance: u32,
    pub royalty: u64,
    pub artifact: Artifact,
    pub state: Vec<u8>,
}

/// Reads a run, its model and config, and the weights (the local artifact,
/// checked against the model's digests, or fetched from the chain).
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
    let allowance = read_config(cluster, &model.keys.config_account)
        .await?
        .allowance;
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
        state: r.state().to_vec(),
        model,
        allowance,
        artifact,
    })
}

#[derive(Clone, Copy, Debug)]
struct Flight {
    signature: Signature,
    last_valid: u64,
    cu_limit: u32,
    /// Set when its status says it landed.
    slot: Option<u64>,
}

/// The compute-unit limit of every step under a policy.
pub fn limits(steps: &[Step], policy: LimitPolicy) -> Vec<u32> {
    let uniform = steps
        .iter()
        .map(|s| replay::turn_limit(s.estimated_cu))
        .max()
        .unwrap_or(0);
    steps
        .iter()
        .map(|s| match policy {
            LimitPolicy::Uniform => uniform,
            LimitPolicy::Exact => replay::turn_limit(s.estimated_cu),
            LimitPolicy::Fixed(n) => n,
        })
        .collect()
}

/// The turns of one priority ramp: twice the window, so a ramp's first
/// turn (the dearest) is never in flight with the previous ramp's last
/// (the cheapest) but after it has landed (`crank` waits at the boundary).
pub fn ramp_period(window: usize) -> u64 {
    2 * window.max(1) as u64
}

/// A turn's priority fee in the ramp: 4 lamports for each turn left in its
/// period. The scheduler orders by `(fee rewarded) / (cost)`, and with one
/// uniform limit every turn's cost is the same, so the earlier turn always
/// goes first: 4 lamports a step keep two neighbours' priorities apart
/// after the rounding of the price to micro-lamports per unit and of the
/// priority to a whole number. Without a ramp all turns tie, and the
/// scheduler breaks ties by its own slot numbers, often last first.
pub fn ramp_lamports(turns_before: u64, period: u64) -> u64 {
    4 * (period - turns_before % period)
}

/// The compute-unit price (micro-lamports per unit) that pays at least
/// `lamports` at `cu_limit`.
pub fn ramp_price(lamports: u64, cu_limit: u32) -> u64 {
    if cu_limit == 0 {
        return 0;
    }
    (lamports * 1_000_000).div_ceil(cu_limit as u64)
}

/// Cranks the run to its end. `on_turn` sees every landed, checked turn in
/// order (to print the text as it arrives).
pub async fn crank(
    cluster: &Cluster,
    ctx: &RunContext,
    opts: Options,
    mut on_turn: impl FnMut(&TurnRecord),
) -> Result<Cranked> {
    let started = Instant::now();
    if ctx.model.status != model::SEALED {
        bail!(
            "model {} is {}: the run can only be closed (`curta run close {}`)",
            ctx.model.keys.model,
            ctx.model.status_name(),
            ctx.run
        );
    }
    let info = StateInfo::read(&ctx.state)?;
    let replay = replay::replay(&ctx.artifact, &ctx.state, ctx.allowance)?;
    let mut out = Cranked {
        run: ctx.run,
        model: ctx.model.keys.model,
        turns_before: info.turns,
        final_state_sha256: sha256(&replay.final_state),
        ..Cranked::default()
    };
    let steps = &replay.steps;
    let n = steps.len();
    let limits = limits(steps, opts.limits);
    let window = opts.window.max(1);
    let period = ramp_period(window);
    let mut flights: Vec<Option<Flight>> = vec![None; n];
    let mut attempts = vec![0u32; n];
    let mut confirmed = 0usize;
    let mut going_back = false;
    // Someone else cranks this run too: send nothing while it moves the
    // run (each poll reads where it is), and take over when it stops,
    // rather than race a window of turns that would fail.
    let mut following = false;
    let mut still_polls = 0;
    let mut height_checked = Instant::now();
    // A fee payer must keep the rent-exempt minimum after the fee: a turn
    // it cannot pay is dropped unseen by the validator, not failed, so the
    // balance is watched instead of resending such turns until they expire.
    let keep = cluster.rent(0).await?;
    let per_signature = cluster.lamports_per_signature().await?;

    while confirmed < n {
        if going_back && settled(&flights[confirmed..]) {
            going_back = false;
        }
        if following && settled(&flights[confirmed..]) {
            tokio::time::sleep(FOLLOW_POLL).await;
            let skipped = catch_up(
                cluster,
                ctx,
                &replay,
                &mut flights,
                confirmed,
                &mut out,
                &mut on_turn,
            )
            .await?;
            confirmed += skipped;
            still_polls = if skipped > 0 { 0 } else { still_polls + 1 };
            if confirmed == n {
                break;
            }
            // The other cranker has stopped: this one takes the run over.
            following = still_polls < FOLLOW_STILL_POLLS;
            if following {
                continue;
            }
        }
        if !going_back && !following {
            let end = n.min(confirmed + window);
            for idx in confirmed..end {
                if flights[idx].is_some() {
                    continue;
                }
                // A new ramp starts only after the last one has landed.
                if opts.priority_ramp
                    && idx > confirmed
                    && steps[idx].turns_before.is_multiple_of(period)
                {
                    break;
                }
                if attempts[idx] > 20 {
                    bail!(
                        "turn {} failed {} times; giving up",
                        steps[idx].turns_before + 1,
                        attempts[idx]
                    );
                }
                flights[idx] = Some(
                    send_turn(
                        cluster,
                        ctx,
                        &steps[idx],
                        limits[idx],
                        attempts[idx],
                        opts.priority_ramp
                            .then(|| ramp_lamports(steps[idx].turns_before, period)),
                    )
                    .await?,
                );
            }
        }
        tokio::time::sleep(rpc::POLL / 2).await;

        // Statuses of everything in flight.
        let flying: Vec<usize> = (confirmed..n)
            .filter(|&i| flights[i].is_some_and(|f| f.slot.is_none()))
            .collect();
        let sigs: Vec<Signature> = flying
            .iter()
            .filter_map(|&i| flights[i].map(|f| f.signature))
            .collect();
        let statuses = cluster.statuses(&sigs).await?;
        for (&idx, status) in flying.iter().zip(statuses) {
            let Some(status) = status else { continue };
            if !status.satisfies_commitment(cluster.commitment) {
                continue;
            }
            let Some(f) = flights[idx].as_mut() else {
                continue;
            };
            match &status.err {
                None => f.slot = Some(status.slot),
                Some(err) => {
                    let turn = steps[idx].turns_before + 1;
                    let sig = f.signature;
                    let tx = cluster.transaction(&sig).await.unwrap_or_default();
                    if errors::custom_code(err) != Some(CurtaError::StaleTurn as u32) {
                        return Err(Error::new(format!(
                            "turn {turn} failed: {} (transaction {sig}){}",
                            errors::transaction_error(err, &tx.programs, &cluster.program_id),
                            errors::log_tail(&tx.logs)
                        )));
                    }
                    out.failed.push(FailedTurn {
                        turn,
                        signature: sig,
                        slot: status.slot,
                        fee: tx.fee,
                        error: errors::transaction_error(err, &tx.programs, &cluster.program_id),
                    });
                    flights[idx] = None;
                    attempts[idx] += 1;
                    going_back = true;
                }
            }
        }

        // The turns that landed, in order: receipts checked, then recorded.
        let ready: Vec<usize> = (confirmed..n)
            .take_while(|&i| flights[i].is_some_and(|f| f.slot.is_some()))
            .collect();
        let infos = try_join_all(ready.iter().map(|&idx| {
            let sig = flights[idx].map(|f| f.signature).unwrap_or_default();
            async move { cluster.transaction(&sig).await }
        }))
        .await?;
        for (&idx, tx) in ready.iter().zip(infos) {
            let f = flights[idx].unwrap_or_else(|| unreachable!("landed"));
            let record = check_turn(cluster, ctx, &steps[idx], &f, &tx)?;
            on_turn(&record);
            out.text.extend_from_slice(&record.text);
            out.turns.push(record);
            confirmed += 1;
        }

        // A failed turn with nothing before it in flight: the run is not
        // where the replay expects. Someone else moved it, or it is not
        // this replay's run: find out from its state.
        if confirmed < n
            && flights[confirmed].is_none()
            && attempts[confirmed] > 0
            && going_back
            && settled(&flights[confirmed..])
        {
            let skipped = catch_up(
                cluster,
                ctx,
                &replay,
                &mut flights,
                confirmed,
                &mut out,
                &mut on_turn,
            )
            .await?;
            if skipped > 0 {
                confirmed += skipped;
                following = true;
                still_polls = 0;
                out.backed_off = true;
            }
        }

        // Turns whose blockhash expired unseen are sent again.
        if height_checked.elapsed() > Duration::from_secs(2) {
            height_checked = Instant::now();
            let height = cluster.block_height().await?;
            if let Some(idx) = (confirmed..n).find(|&i| flights[i].is_none()) {
                let priority = match opts.priority_ramp {
                    true => ramp_lamports(steps[idx].turns_before, period),
                    false => 0,
                };
                let signer = cluster.payer_key();
                let balance = cluster.balance(&signer).await?;
                if let Some(short) = short_of_fees(
                    &signer,
                    balance,
                    keep,
                    per_signature + priority,
                    steps[idx].turns_before + 1,
                ) {
                    return Err(Error::new(short));
                }
            }
            for (flight, tries) in flights.iter_mut().zip(attempts.iter_mut()).skip(confirmed) {
                if flight.is_some_and(|f| f.slot.is_none() && f.last_valid < height) {
                    *flight = None;
                    *tries += 1;
                    going_back = true;
                }
            }
        }
    }

    // The chain's final state, byte for byte.
    let data = cluster.data(&ctx.run).await?;
    let r = RunAccount::read(&data)
        .map_err(|_| Error::new(format!("run {} is no longer an opened run", ctx.run)))?;
    let config = ctx.artifact.metadata().config;
    if let Some(diff) = first_difference(&config, &replay.final_state, r.state()) {
        bail!("the run's final state differs from the native replay's: {diff}",);
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// Why the signer cannot pay turn `turn`'s fee, when it cannot: after the
/// fee a fee payer must still hold `keep` (the rent-exempt minimum).
pub fn short_of_fees(
    signer: &Pubkey,
    balance: u64,
    keep: u64,
    fee: u64,
    turn: u64,
) -> Option<String> {
    if balance >= keep.saturating_add(fee) {
        return None;
    }
    Some(format!(
        "the signer {signer} ran out of lamports at turn {turn}: it has {}, and a turn's fee \
         ({fee} lamports) must leave it the {} a fee payer keeps; {}",
        crate::output::sol(balance),
        crate::output::sol(keep),
        crate::funds::how_to_fund(signer)
    ))
}

async fn send_turn(
    cluster: &Cluster,
    ctx: &RunContext,
    step: &Step,
    cu_limit: u32,
    attempt: u32,
    priority: Option<u64>,
) -> Result<Flight> {
    // A resent turn asks for one unit more, so it is never the same
    // transaction as the one that failed, whatever the blockhash.
    let cu_limit = (cu_limit + attempt).min(replay::MAX_TRANSACTION_CU);
    let weights: Vec<Pubkey> = step
        .sections
        .iter()
        .map(|&s| ctx.model.keys.weights[s as usize])
        .collect();
    let price = priority.map_or(0, |lamports| ramp_price(lamports, cu_limit));
    let ixs = crate::plans::turn(
        &cluster.program_id,
        &ctx.model.keys,
        &ctx.run,
        &weights,
        Some(step.turns_before),
        cu_limit,
        price,
    );
    let b = if attempt > 0 {
        cluster.fresh_blockhash().await?
    } else {
        cluster.blockhash().await?
    };
    let tx = cluster.sign(&ixs, &[], &b.hash)?;
    let mut tries = 0;
    let signature = loop {
        match cluster.send(&tx, b.last_valid_block_height, false).await {
            Ok(sig) => break sig,
            Err(e) if tries < 3 => {
                tries += 1;
                eprintln!("sending turn {} again: {e}", step.turns_before + 1);
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e.context(format!("sending turn {}", step.turns_before + 1))),
        }
    };
    Ok(Flight {
        signature,
        last_valid: b.last_valid_block_height,
        cu_limit,
        slot: None,
    })
}

/// Checks a landed turn's receipt against the replay's step.
fn check_turn(
    cluster: &Cluster,
    ctx: &RunContext,
    step: &Step,
    f: &Flight,
    tx: &TxInfo,
) -> Result<TurnRecord> {
    let turn = step.turns_before + 1;
    let found = receipts::from_logs(&tx.logs);
    let [receipt] = &found[..] else {
        bail!(
            "turn {turn} (transaction {}) logged {} receipts, not one{}",
            f.signature,
            found.len(),
            errors::log_tail(&tx.logs)
        );
    };
    let diffs = receipts::differences(receipt, step, &ctx.run, &ctx.model.keys.model, ctx.royalty);
    if !diffs.is_empty() {
        bail!(
            "turn {turn} (transaction {}) is not the native replay's:\n  {}",
            f.signature,
            diffs.join("\n  ")
        );
    }
    Ok(TurnRecord {
        turn,
        signature: f.signature,
        slot: f.slot.unwrap_or(tx.slot),
        cu_limit: f.cu_limit,
        estimated_cu: step.estimated_cu,
        program_cu: rpc::program_units(&tx.logs, &cluster.program_id),
        consumed_cu: tx.compute_units,
        fee: tx.fee,
        generated: step.generated,
        tokens: step.tokens.clone(),
        text: step.text.clone(),
        state_sha256: step.state_sha256,
    })
}

/// The run's state is not at step `at`: returns how many steps it is past
/// (someone else's turns), after checking its state is the replay's there.
/// How often a cranker that found another on the run reads where it is.
const FOLLOW_POLL: Duration = Duration::from_millis(800);
/// Polls without the run moving after which the other cranker is taken to
/// have stopped.
const FOLLOW_STILL_POLLS: u32 = 3;

/// Whether nothing is in flight: every flight landed, or none was sent.
fn settled(flights: &[Option<Flight>]) -> bool {
    flights.iter().all(|f| f.is_none_or(|f| f.slot.is_some()))
}

/// Moves past the turns the run ran beyond `at` (`resync`): each of them
/// that is this cranker's own landed turn is checked and recorded as
/// such, the rest were someone else's. Returns how many.
async fn catch_up(
    cluster: &Cluster,
    ctx: &RunContext,
    replay: &Replay,
    flights: &mut [Option<Flight>],
    at: usize,
    out: &mut Cranked,
    on_turn: &mut impl FnMut(&TurnRecord),
) -> Result<usize> {
    let skipped = resync(cluster, ctx, replay, at).await?;
    let steps = &replay.steps;
    for idx in at..at + skipped {
        match flights[idx].take() {
            Some(f) if f.slot.is_some() => {
                let tx = cluster.transaction(&f.signature).await?;
                let record = check_turn(cluster, ctx, &steps[idx], &f, &tx)?;
                on_turn(&record);
                out.text.extend_from_slice(&record.text);
                out.turns.push(record);
            }
            _ => {
                // Its state is the replay's (`resync` checked), and so its text.
                out.text.extend_from_slice(&steps[idx].text);
                out.turns_by_others += 1;
            }
        }
    }
    Ok(skipped)
}

async fn resync(cluster: &Cluster, ctx: &RunContext, replay: &Replay, at: usize) -> Result<usize> {
    let data = cluster.data(&ctx.run).await?;
    let r = RunAccount::read(&data)
        .map_err(|_| Error::new(format!("run {} is no longer an opened run", ctx.run)))?;
    let state = r.state();
    let turns = StateInfo::read(state)?.turns;
    let steps = &replay.steps;
    if turns == steps[at].turns_before {
        // It is where it should be: the failure was a reordering.
        return Ok(0);
    }
    let done = match steps.iter().position(|s| s.turns_before == turns) {
        Some(j) => j,
        None if turns == steps[steps.len() - 1].turns_before + 1 => steps.len(),
        None => bail!(
            "run {} has run {turns} turns, which its replay never reaches",
            ctx.run
        ),
    };
    let want = if done == steps.len() {
        sha256(&replay.final_state)
    } else {
        steps[done.max(1) - 1].state_sha256
    };
    if done < at || sha256(state) != want {
        bail!(
            "run {} was moved to turn {turns} by someone else, and its state there is not the \
             replay's (sha256 {} on chain, {} replayed)",
            ctx.run,
            hex(&sha256(state)),
            hex(&want)
        );
    }
    Ok(done - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signer_short_of_a_turns_fee_says_so() {
        let signer = Pubkey::new_unique();
        let keep = 890_880;
        assert_eq!(short_of_fees(&signer, keep + 5_000, keep, 5_000, 3), None);
        let said = short_of_fees(&signer, keep + 4_999, keep, 5_000, 3).expect("short");
        assert!(
            said.starts_with(&format!(
                "the signer {signer} ran out of lamports at turn 3: it has 0.000895879 SOL, and \
                 a turn's fee (5000 lamports) must leave it the 0.000890880 SOL a fee payer keeps"
            )) && said.contains("curta airdrop"),
            "{said}"
        );
        assert!(short_of_fees(&signer, 0, keep, 5_000, 1).is_some());
    }
}
