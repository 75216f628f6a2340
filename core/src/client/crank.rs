//! Cranking a run, as a state machine with no I/O: every client (the `curta`
//! CLI, `@curta/sdk` through the WebAssembly module) runs this one, and
//! keeps only the I/O: RPC, signing, timers and printing.
//!
//! The crank replays the run from the chain's state first (`replay`), so it
//! knows every coming turn's weight sections, compute units, receipt and
//! state before sending any. It keeps a window of turns in flight, each
//! carrying the turn count it expects, so one that runs out of order fails
//! cheaply with `StaleTurn` instead of doing the wrong step. On such a
//! failure it goes back: it sends nothing new until every turn in flight has
//! landed or failed, then resends from the first turn that has not landed
//! (go-back-N); a turn whose blockhash expires unseen is resent the same
//! way. A crank that finds the run moved by someone else (a failed turn,
//! then the run's turn count past its own) backs off: it sends nothing while
//! the other moves the run, reading where it is every 0.8 s, and takes the
//! run over once it has stood still for three reads, so each encounter costs
//! at most the window it had in flight; or, with `leave_to_others` (a
//! fleet's cranker), it leaves the run to the other and ends. Each landed
//! turn's receipt must equal the replay's field by field, and the final
//! state the replay's byte for byte; a difference stops the crank, naming
//! the turn and the field.
//!
//! The host drives it: `Crank::next` takes the answer to the last action
//! (`Event::Start` first) and returns the next action, until `Action::Done`
//! or `Action::Stop`. Time passes only through `Action::Wait`, whose answer
//! is the host's clock, so a scripted sequence of events always gives the
//! same actions.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::base58;
use super::budget::{
    priority_fee, turn_budgets, LimitPolicy, TurnBudget, MAX_TRANSACTION_CU, TURN_WRITES,
    TURN_WRITES_BY_OWNER,
};
use super::receipt::{self, Expected};
use super::replay::{Replay, Step};
use crate::format::Config;
use crate::protocol::{run, Address, CurtaError};
use crate::sha256::sha256;
use crate::state::diff::{first_difference, Difference};
use crate::StateInfo;

/// How often the crank reads statuses: it waits this long between rounds.
pub const POLL_MS: u64 = 50;
/// The compute units a block gives one written account (Agave's
/// `MAX_WRITABLE_ACCOUNT_UNITS` since SIMD-0306), which bounds a run's
/// turns a block: every turn writes the run.
pub const ACCOUNT_BLOCK_UNITS: u64 = 40_000_000;
/// A slot, in milliseconds.
pub const SLOT_MS: u64 = 400;
/// The fewest and most turns a measured window keeps in flight.
pub const WINDOW_LEAST: usize = 16;
pub const WINDOW_MOST: usize = 256;
/// The fewest turns in flight after reorderings halved the window.
pub const WINDOW_AFTER_REORDERING: usize = 4;
/// Turns recorded for each turn the window grows back by.
const TURNS_PER_GROWTH: u64 = 8;
/// The latency assumed before any turn has been seen run.
const FIRST_LATENCY_MS: u64 = SLOT_MS;
/// How often a crank that found another cranker on the run reads where it is.
pub const FOLLOW_POLL_MS: u64 = 800;
/// Reads without the run moving after which the other cranker is taken to
/// have stopped.
pub const FOLLOW_STILL_POLLS: u32 = 3;
/// How often the crank reads the block height (to resend turns whose
/// blockhash expired) and the fee payer's balance.
pub const HEIGHT_EVERY_MS: u64 = 2_000;
/// Attempts at one turn after which the crank gives up.
pub const MOST_ATTEMPTS: u32 = 20;

/// How to crank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Turns in flight at once (sent, not yet seen landing); 0, the
    /// default: measured (`Crank::window`).
    pub window: usize,
    pub limits: LimitPolicy,
    /// A priority fee falling turn by turn (`budget::turn_budgets`), so
    /// that the scheduler runs the turns in flight in their order.
    pub priority_ramp: bool,
    /// On finding another cranker on the run (a failed turn, then the
    /// run's turn count past its own), leave the run to it: the crank ends
    /// (`Action::Done`, `Summary::left_to_others`) instead of following it.
    /// Until its first turn lands it keeps only that one in flight, so the
    /// encounter costs one failed turn. A fleet's cranker (`curta crank`)
    /// moves on to another run.
    pub leave_to_others: bool,
    /// Start as if following another cranker: send nothing until the run
    /// has stood still for `FOLLOW_STILL_POLLS` reads (a run left to
    /// another cranker, come back to); then, as with `leave_to_others`,
    /// one turn alone until one of its own lands.
    pub follow_first: bool,
    /// Send only the turns that pay their sender at least this many
    /// lamports (`run::crank_payment`: the crank fee, then the rest of the
    /// deposit, then nothing), and end (`Summary::left_unpaid`) when the
    /// run's next turn pays less: a fleet's cranker (`curta crank`) gives
    /// what a turn costs it, or `--min-fee`. `None`: every turn.
    pub min_payment: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: 0,
            limits: LimitPolicy::Exact,
            priority_ramp: true,
            leave_to_others: false,
            follow_first: false,
            min_payment: None,
        }
    }
}

/// What the crank needs to know besides the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The Curta program's address, in base58 (its receipts are the ones
    /// its own invocation logs).
    pub program_id: String,
    pub run: Address,
    pub model: Address,
    /// Lamports per token the run's opener escrowed for the model's owner.
    pub royalty: u64,
    /// The run's crank fee and deposit: what each turn pays its sender.
    pub crank_fee: u64,
    pub crank_deposit: u64,
    /// The model's owner, who cannot be paid a crank fee.
    pub owner: Address,
    /// The fee payer (in base58, for the words of `OutOfFunds`).
    pub payer: String,
    /// What a fee payer must keep after paying a fee: the rent-exempt
    /// minimum of an empty account. A turn it cannot pay is dropped unseen
    /// by the validator, not failed, so the balance is watched instead.
    pub keep: u64,
    /// The cluster's base fee of one signature.
    pub lamports_per_signature: u64,
    pub options: Options,
}

/// A turn to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Send {
    /// The step's place in the replay, which `Event::Sent` answers for.
    pub index: usize,
    /// The run's turn count after it lands.
    pub turn: u64,
    /// The turn count it expects (`turn`'s `expected_turns`).
    pub expected_turns: u64,
    /// The weight sections it reads, in the plan's order; section zero is
    /// always passed too.
    pub sections: Vec<u32>,
    pub cu_limit: u32,
    /// The compute-unit price, micro-lamports per unit (0: none).
    pub micro_lamports: u64,
    /// Whether to ask for a new blockhash rather than a cached one: a
    /// resent turn must not be the same transaction as the one it replaces.
    pub fresh_blockhash: bool,
}

/// What the host does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Sign and send a turn; answer `Event::Sent`.
    Send(Send),
    /// Wait this many milliseconds; answer `Event::Waited` with the clock.
    Wait { ms: u64 },
    /// Read these signatures' statuses at the crank's commitment; answer
    /// `Event::Statuses`, in the same order.
    Statuses { signatures: Vec<String> },
    /// Read these landed transactions (fee, compute units, logs); answer
    /// `Event::Transactions`, in the same order.
    Transactions { signatures: Vec<String> },
    /// Read the run account's state; answer `Event::RunState`.
    ReadRun,
    /// Read the block height and the fee payer's balance; answer
    /// `Event::Height`.
    Height,
    /// The run is complete, every turn checked: `Crank::summary` says what
    /// this crank did. Or, with `Options::leave_to_others`, the crank left
    /// the run to another cranker (`Summary::left_to_others`), every turn
    /// it landed checked; or, with `Options::min_payment`, it stopped where
    /// the run's turns stop paying that (`Summary::left_unpaid`).
    Done,
    /// The crank cannot go on.
    Stop(Stop),
}

/// A signature's status, as `getSignatureStatuses` tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Not seen yet.
    Pending,
    /// Run and succeeded, not yet at the crank's commitment (`processed`):
    /// the crank sends further on it, and records it once it lands.
    Seen {
        slot: u64,
    },
    Landed {
        slot: u64,
    },
    /// Landed and failed: paid, did nothing.
    Failed {
        slot: u64,
        /// Its fee, from the transaction (0 when it could not be read).
        fee: u64,
        /// The program error's custom code, when the turn's instruction
        /// raised one.
        custom: Option<u32>,
        /// The error in words, as the host names it.
        words: String,
        /// The last lines of its logs, for the words of a stop.
        log_tail: String,
    },
}

/// A landed transaction, as `getTransaction` tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transaction {
    pub slot: u64,
    pub fee: u64,
    /// The whole transaction's compute units.
    pub consumed_cu: u64,
    pub logs: Vec<String>,
}

/// The answer to the last action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first call.
    Start,
    Sent {
        signature: String,
        last_valid_height: u64,
    },
    /// The host's clock, in milliseconds from any fixed start.
    Waited {
        now_ms: u64,
    },
    Statuses(Vec<Status>),
    Transactions(Vec<Transaction>),
    RunState(Vec<u8>),
    Height {
        height: u64,
        balance: u64,
    },
    /// The user stopped the crank: what is in flight may still land, and a
    /// crank run again resumes.
    Cancel,
}

/// Why a crank stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// A receipt or a state is not the replay's (`turn` and `field` say
    /// where).
    Mismatch,
    /// A turn failed with another error than `StaleTurn`.
    TurnFailed,
    /// A turn failed `MOST_ATTEMPTS` times.
    GaveUp,
    /// The fee payer cannot pay the next turn's fee.
    OutOfFunds,
    /// The run is no longer an opened run, or past where its replay ends.
    RunGone,
    /// `Event::Cancel`.
    Cancelled,
    /// The program would refuse every turn this crank could send (the
    /// payer is the model's owner and a crank fee is due).
    Refused,
    /// The host answered with another event than the action asked for.
    Protocol,
}

impl StopKind {
    pub fn name(self) -> &'static str {
        match self {
            StopKind::Mismatch => "mismatch",
            StopKind::TurnFailed => "turn-failed",
            StopKind::GaveUp => "gave-up",
            StopKind::OutOfFunds => "out-of-funds",
            StopKind::RunGone => "run-gone",
            StopKind::Cancelled => "cancelled",
            StopKind::Refused => "refused",
            StopKind::Protocol => "protocol",
        }
    }
}

/// A stop, in words every client prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stop {
    pub kind: StopKind,
    pub words: String,
    /// The turn it concerns (the run's turn count after it), if one.
    pub turn: Option<u64>,
    /// For a mismatch, the first field that differs: a receipt's field
    /// (`receipt::Difference::field`), `receipt` for a count of receipts
    /// other than one, or the state's place.
    pub field: Option<String>,
    pub signature: Option<String>,
}

impl Stop {
    fn new(kind: StopKind, words: String) -> Stop {
        Stop {
            kind,
            words,
            turn: None,
            field: None,
            signature: None,
        }
    }
}

/// A turn that landed and was checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRecord {
    /// The run's turn count after it (the receipt's `turns`).
    pub turn: u64,
    pub signature: String,
    pub slot: u64,
    pub cu_limit: u32,
    pub estimated_cu: u32,
    /// The receipt's, equal to the replay's.
    pub charged: u32,
    /// The program's own units, from its log line.
    pub program_cu: u64,
    /// The whole transaction's (compute-budget instructions included).
    pub consumed_cu: u64,
    pub fee: u64,
    /// The crank fee the run paid this crank's payer for the turn.
    pub crank_paid: u64,
    pub generated: u32,
    pub tokens: Vec<u32>,
    pub text: Vec<u8>,
    /// The state after the turn (the replay's, which the receipt matched).
    pub state_sha256: [u8; 32],
}

/// A turn transaction that landed and failed with `StaleTurn`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedTurn {
    pub turn: u64,
    pub signature: String,
    pub slot: u64,
    pub fee: u64,
    pub error: String,
}

/// What a crank did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The turn count when the crank started.
    pub turns_before: u64,
    pub turns: Vec<TurnRecord>,
    pub failed: Vec<FailedTurn>,
    /// Turns someone else sent while this crank ran (`turns_before +
    /// turns.len() + turns_by_others` is the run's turn count at the end).
    pub turns_by_others: u64,
    /// How many times it found another cranker on the run and followed it
    /// (each encounter costs at most the window it had in flight).
    pub backoffs: u32,
    /// The most turns it had in flight at once (sent, not yet seen run).
    pub in_flight_most: u32,
    /// It found another cranker on the run and left the run to it
    /// (`Options::leave_to_others`): the run is not complete.
    pub left_to_others: bool,
    /// It ended where the run's turns stop paying `Options::min_payment`:
    /// the run is not complete.
    pub left_unpaid: bool,
    /// The run was closed after its last turn, before the crank read its
    /// final state (the receipts, each checked, are the evidence).
    pub closed_after: bool,
    pub final_state_sha256: [u8; 32],
    /// The text the run's turns added since `turns_before`, someone else's
    /// included (their states were checked against the replay).
    pub text: Vec<u8>,
}

impl Summary {
    pub fn fees(&self) -> u64 {
        self.turns.iter().map(|t| t.fee).sum::<u64>()
            + self.failed.iter().map(|f| f.fee).sum::<u64>()
    }
    /// Crank fees the run paid this crank's payer.
    pub fn earned(&self) -> u64 {
        self.turns.iter().map(|t| t.crank_paid).sum()
    }
    pub fn transactions(&self) -> u64 {
        (self.turns.len() + self.failed.len()) as u64
    }
    pub fn program_cu(&self) -> u64 {
        self.turns.iter().map(|t| t.program_cu).sum()
    }
    /// Landed turns per slot they landed in: (slot, turns), by slot.
    pub fn turns_per_slot(&self) -> Vec<(u64, usize)> {
        let mut out: Vec<(u64, usize)> = Vec::new();
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

#[derive(Clone, Debug)]
struct Flight {
    signature: String,
    last_valid_height: u64,
    cu_limit: u32,
    /// The host's clock when it was sent, and when it was first seen run.
    sent_ms: u64,
    seen_ms: Option<u64>,
    /// Set when its status says it landed.
    slot: Option<u64>,
}

impl Flight {
    /// Whether it has run (seen or landed).
    fn ran(&self) -> bool {
        self.seen_ms.is_some() || self.slot.is_some()
    }
}

/// Why the crank reads the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// Following another cranker: has it moved the run?
    Follow,
    /// The first turn not landed failed: where is the run?
    AfterFailure,
    /// Every turn landed: the final state.
    Final,
}

/// Where `advance` goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pc {
    Top,
    FollowRead,
    SendFrom(usize),
    Poll,
    Ready,
    FailedFirst,
    HeightDue,
    Final,
    Done,
}

/// What the last action asked for, which the next event must answer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Asked {
    Nothing,
    Sent {
        index: usize,
        cu_limit: u32,
    },
    Waited,
    Statuses(Vec<usize>),
    Transactions(Vec<usize>),
    /// Own landed turns among those the run moved past, then the count.
    CatchUp {
        at: usize,
        skipped: usize,
        own: Vec<usize>,
        then: Reading,
    },
    ReadRun(Reading),
    Height,
    Finished,
}

/// The crank of one run.
pub struct Crank {
    params: Params,
    config: Config,
    replay: Replay,
    budgets: Vec<TurnBudget>,
    /// Measured: the least milliseconds from a send to its turn seen run
    /// (a turn that waited behind others in the leader's queue took
    /// longer), and the most of the run's turns one slot ran.
    latency_ms: Option<u64>,
    most_per_slot: u64,
    slot_counts: Vec<(u64, u64)>,
    /// The most the measured window may be: halved at each reordering
    /// (a turn that ran before the one it follows), grown back by one
    /// every `TURNS_PER_GROWTH` turns recorded.
    cap: usize,
    recorded: u64,
    flights: Vec<Option<Flight>>,
    attempts: Vec<u32>,
    /// The steps it may send: those paying `Options::min_payment`, a
    /// prefix of the run's (a turn pays no more than the one before).
    paid: usize,
    /// The fee payer's balance at the last `Height`, and the fees of the
    /// turns sent that it may not show yet (those then unlanded, and every
    /// one sent since): what it can spend is the one less the other.
    balance: Option<u64>,
    unsettled: u64,
    confirmed: usize,
    going_back: bool,
    following: bool,
    still_polls: u32,
    now_ms: u64,
    height_checked_ms: u64,
    pc: Pc,
    asked: Asked,
    stopped: Option<Stop>,
    summary: Summary,
}

impl Crank {
    /// The crank of the run whose remaining turns `replay` holds (from the
    /// state the chain holds now), for a model of configuration `config`.
    pub fn new(config: Config, replay: Replay, params: Params) -> Crank {
        let n = replay.steps.len();
        let turns_before = replay.steps.first().map_or_else(
            || StateInfo::read(&replay.final_state).map_or(0, |i| i.turns),
            |s| s.turns_before,
        );
        let limits = params.options.limits.limits(&replay.steps);
        let base_reward = params.lamports_per_signature / 2;
        // The owner cranking writes one account fewer (it is the cranker).
        let writes = match base58::encode(&params.owner) == params.payer {
            true => TURN_WRITES_BY_OWNER,
            false => TURN_WRITES,
        };
        let ramp = params.options.priority_ramp;
        let budgets = turn_budgets(&limits, ramp, base_reward, writes);
        let summary = Summary {
            turns_before,
            final_state_sha256: sha256(&replay.final_state),
            ..Summary::default()
        };
        let following = params.options.follow_first;
        let pays =
            |s: &&Step| run::crank_payment(params.crank_fee, params.crank_deposit, s.turns_before);
        let paid = match params.options.min_payment {
            None => n,
            Some(least) => replay.steps.iter().take_while(|s| pays(s) >= least).count(),
        };
        let due = run::crank_payment(params.crank_fee, params.crank_deposit, turns_before);
        let stopped = (due > 0 && base58::encode(&params.owner) == params.payer).then(|| {
            let words = format!(
                "run {} pays its crankers {due} lamports a turn, which the model's owner (the \
                 signer, {}) cannot collect: crank it with another key",
                base58::encode(&params.run),
                params.payer
            );
            Stop::new(StopKind::Refused, words)
        });
        Crank {
            params,
            config,
            budgets,
            latency_ms: None,
            most_per_slot: 0,
            slot_counts: Vec::new(),
            cap: WINDOW_MOST,
            recorded: 0,
            flights: std::vec![None; n],
            attempts: std::vec![0; n],
            paid,
            confirmed: 0,
            going_back: false,
            following,
            still_polls: 0,
            now_ms: 0,
            height_checked_ms: 0,
            balance: None,
            unsettled: 0,
            pc: Pc::Top,
            asked: Asked::Nothing,
            stopped,
            summary,
            replay,
        }
    }

    /// The turns the run has left to go when the crank started.
    pub fn steps(&self) -> &[Step] {
        &self.replay.steps
    }

    /// What the crank has done so far (all of it after `Action::Done`).
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// What it was set up with.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The turns sent and not yet in the summary (no status yet, or landed
    /// and not read yet): (turn, signature), in order. What a host that
    /// stopped the crank (`Event::Cancel`) may still see land.
    pub fn in_flight(&self) -> Vec<(u64, String)> {
        (self.confirmed..self.n())
            .filter_map(|i| {
                let f = self.flights[i].as_ref()?;
                Some((self.replay.steps[i].turns_before + 1, f.signature.clone()))
            })
            .collect()
    }

    /// Takes the answer to the last action and returns the next one.
    pub fn next(&mut self, event: Event) -> Action {
        if let Some(stop) = &self.stopped {
            return Action::Stop(stop.clone());
        }
        if let Err(stop) = self.answer(event) {
            self.stopped = Some(stop.clone());
            return Action::Stop(stop);
        }
        match self.advance() {
            Ok(action) => action,
            Err(stop) => {
                self.stopped = Some(stop.clone());
                Action::Stop(stop)
            }
        }
    }

    fn n(&self) -> usize {
        self.replay.steps.len()
    }

    /// Whether nothing from `from` on is in flight: every flight ran, or
    /// none was sent (enough to send again).
    fn all_ran(&self, from: usize) -> bool {
        self.flights[from..]
            .iter()
            .all(|f| f.as_ref().is_none_or(Flight::ran))
    }

    /// Whether every flight from `from` on landed at the crank's
    /// commitment, or none was sent: before reading where the run is, so
    /// that each of this crank's turns the run moved past is read (and
    /// counted) as its own.
    fn settled(&self, from: usize) -> bool {
        self.flights[from..]
            .iter()
            .all(|f| f.as_ref().is_none_or(|f| f.slot.is_some()))
    }

    /// Turns to keep in flight: `Options::window`, or measured: a block's
    /// worth of the run's turns for every slot a turn takes from its send
    /// to being seen run, and one block's more (queued for the next). A
    /// block's worth is the most turns of the run one slot has run, or
    /// before any ran, what the run account's budget holds at the largest
    /// limit. More would only wait in the leader's queue, where a turn the
    /// block's limit puts back can be passed by a later one, which fails.
    pub fn window(&self) -> usize {
        if self.params.options.window > 0 {
            return self.params.options.window;
        }
        let per_block = match self.most_per_slot {
            0 => {
                let largest = self.budgets.iter().map(|b| b.cu_limit as u64).max();
                ACCOUNT_BLOCK_UNITS / largest.unwrap_or(1).max(1)
            }
            most => most,
        } as usize;
        let latency = self.latency_ms.unwrap_or(FIRST_LATENCY_MS);
        let slots = 1 + latency.div_ceil(SLOT_MS).max(1) as usize;
        (per_block * slots)
            .clamp(WINDOW_LEAST, WINDOW_MOST)
            .min(self.cap)
    }

    /// Each turn's compute-unit limit, price and place in its ramp.
    pub fn budgets(&self) -> &[TurnBudget] {
        &self.budgets
    }

    /// A flight first seen run, in `slot`: the time it took, and the
    /// slot's count.
    fn ran_now(&mut self, idx: usize, slot: u64) {
        let now = self.now_ms;
        let Some(f) = self.flights[idx].as_mut() else {
            return;
        };
        if f.ran() {
            return;
        }
        f.seen_ms = Some(now);
        let took = now.saturating_sub(f.sent_ms);
        self.latency_ms = Some(self.latency_ms.map_or(took, |l| l.min(took)));
        let count = match self.slot_counts.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                // Only the last few slots can still gain turns.
                if self.slot_counts.len() == 8 {
                    self.slot_counts.remove(0);
                }
                self.slot_counts.push((slot, 1));
                1
            }
        };
        self.most_per_slot = self.most_per_slot.max(count);
    }

    /// Applies the answer to what was asked.
    fn answer(&mut self, event: Event) -> Result<(), Stop> {
        if event == Event::Cancel {
            return Err(Stop::new(
                StopKind::Cancelled,
                "the crank was stopped: turns already sent may still land".into(),
            ));
        }
        let asked = core::mem::replace(&mut self.asked, Asked::Nothing);
        match (asked, event) {
            (Asked::Nothing, Event::Start) => Ok(()),
            (
                Asked::Sent { index, cu_limit },
                Event::Sent {
                    signature,
                    last_valid_height,
                },
            ) => {
                self.unsettled += self.fee(index, cu_limit);
                self.flights[index] = Some(Flight {
                    signature,
                    last_valid_height,
                    cu_limit,
                    sent_ms: self.now_ms,
                    seen_ms: None,
                    slot: None,
                });
                let flying = self.flights.iter().flatten().filter(|f| !f.ran()).count();
                let most = &mut self.summary.in_flight_most;
                *most = (*most).max(flying as u32);
                Ok(())
            }
            (Asked::Waited, Event::Waited { now_ms }) => {
                self.now_ms = self.now_ms.max(now_ms);
                Ok(())
            }
            (Asked::Statuses(indices), Event::Statuses(statuses))
                if statuses.len() == indices.len() =>
            {
                for (idx, status) in indices.into_iter().zip(statuses) {
                    self.status(idx, status)?;
                }
                Ok(())
            }
            (Asked::Transactions(indices), Event::Transactions(txs))
                if txs.len() == indices.len() =>
            {
                for (idx, tx) in indices.into_iter().zip(txs) {
                    let record = self.check_turn(idx, &tx)?;
                    self.record(record);
                    self.confirmed += 1;
                    self.recorded += 1;
                    if self.recorded.is_multiple_of(TURNS_PER_GROWTH) {
                        self.cap = (self.cap + 1).min(WINDOW_MOST);
                    }
                }
                Ok(())
            }
            (Asked::ReadRun(reading), Event::RunState(state)) => self.read_run(reading, &state),
            (
                Asked::CatchUp {
                    at,
                    skipped,
                    own,
                    then,
                },
                Event::Transactions(txs),
            ) if txs.len() == own.len() => {
                let mut txs = own.into_iter().zip(txs).peekable();
                for idx in at..at + skipped {
                    match txs.next_if(|(i, _)| *i == idx) {
                        Some((_, tx)) => {
                            let record = self.check_turn(idx, &tx)?;
                            self.record(record);
                        }
                        None => {
                            // Its state is the replay's (`resync` checked), and so its text.
                            let text = &self.replay.steps[idx].text;
                            self.summary.text.extend_from_slice(text);
                            self.summary.turns_by_others += 1;
                        }
                    }
                    self.flights[idx] = None;
                }
                self.moved(skipped, then);
                Ok(())
            }
            (Asked::Height, Event::Height { height, balance }) => self.height(height, balance),
            (Asked::Finished, _) => Ok(()),
            (asked, event) => Err(Stop::new(
                StopKind::Protocol,
                format!("the crank asked for {asked:?} and was answered {event:?}"),
            )),
        }
    }

    fn record(&mut self, record: TurnRecord) {
        self.summary.text.extend_from_slice(&record.text);
        self.summary.turns.push(record);
    }

    fn status(&mut self, idx: usize, status: Status) -> Result<(), Stop> {
        let turn = self.replay.steps[idx].turns_before + 1;
        let Some(flight) = self.flights[idx].as_mut() else {
            return Ok(());
        };
        match status {
            Status::Pending => {}
            Status::Seen { slot } => self.ran_now(idx, slot),
            Status::Landed { slot } => {
                self.ran_now(idx, slot);
                if let Some(f) = self.flights[idx].as_mut() {
                    f.slot = Some(slot);
                }
            }
            Status::Failed {
                slot,
                fee,
                custom,
                words,
                log_tail,
            } => {
                let signature = flight.signature.clone();
                if custom != Some(CurtaError::StaleTurn as u32) {
                    let mut stop = Stop::new(
                        StopKind::TurnFailed,
                        format!("turn {turn} failed: {words} (transaction {signature}){log_tail}"),
                    );
                    stop.turn = Some(turn);
                    stop.signature = Some(signature);
                    return Err(stop);
                }
                self.summary.failed.push(FailedTurn {
                    turn,
                    signature,
                    slot,
                    fee,
                    error: words,
                });
                self.flights[idx] = None;
                self.attempts[idx] += 1;
                self.going_back = true;
            }
        }
        Ok(())
    }

    /// Checks a landed turn's receipt against the replay's step.
    fn check_turn(&self, idx: usize, tx: &Transaction) -> Result<TurnRecord, Stop> {
        let step = &self.replay.steps[idx];
        let turn = step.turns_before + 1;
        let flight = self.flights[idx].as_ref();
        let signature = flight.map(|f| f.signature.clone()).unwrap_or_default();
        let mismatch = |words: String, field: &str| Stop {
            kind: StopKind::Mismatch,
            words,
            turn: Some(turn),
            field: Some(field.into()),
            signature: Some(signature.clone()),
        };
        let found = receipt::from_logs(&tx.logs, &self.params.program_id);
        let [receipt] = &found[..] else {
            let tail = super::errors::log_tail(&tx.logs);
            let words = format!(
                "turn {turn} (transaction {signature}) logged {} receipts, not one{tail}",
                found.len()
            );
            return Err(mismatch(words, "receipt"));
        };
        let expected = Expected {
            run: self.params.run,
            model: self.params.model,
            royalty: self.params.royalty,
            crank_fee: self.params.crank_fee,
            crank_deposit: self.params.crank_deposit,
        };
        let diffs = receipt::differences(receipt, step, &expected);
        if let Some(first) = diffs.first() {
            let lines: Vec<String> = diffs.iter().map(|d| format!("{d}")).collect();
            let words = format!(
                "turn {turn} (transaction {signature}) is not the replay's:\n  {}",
                lines.join("\n  ")
            );
            return Err(mismatch(words, first.field));
        }
        Ok(TurnRecord {
            turn,
            signature: signature.clone(),
            slot: flight.and_then(|f| f.slot).unwrap_or(tx.slot),
            cu_limit: flight.map_or(0, |f| f.cu_limit),
            estimated_cu: step.estimated_cu,
            charged: receipt.event.charged,
            program_cu: receipt::program_units(&tx.logs, &self.params.program_id),
            consumed_cu: tx.consumed_cu,
            fee: tx.fee,
            crank_paid: receipt.event.crank_paid,
            generated: step.generated,
            tokens: step.tokens.clone(),
            text: step.text.clone(),
            state_sha256: step.state_sha256,
        })
    }

    /// The run's state, read for `reading`.
    fn read_run(&mut self, reading: Reading, state: &[u8]) -> Result<(), Stop> {
        // Closed once every turn landed, by an opener that took its text
        // (a program, a page): each turn's receipt was checked against the
        // replay, which is all there is to check, and the crank is done.
        if state.is_empty() && reading == Reading::Final {
            self.summary.closed_after = true;
            self.pc = Pc::Done;
            return Ok(());
        }
        if state.is_empty() {
            let run = base58::encode(&self.params.run);
            let words = format!("run {run} is no longer an opened run");
            return Err(Stop::new(StopKind::RunGone, words));
        }
        if reading == Reading::Final {
            if let Some(d) = first_difference(&self.config, &self.replay.final_state, state) {
                let field = match d {
                    Difference::Value { place, .. } => format!("{place}"),
                    Difference::Lengths { .. } => "state length".into(),
                };
                let mut stop = Stop::new(
                    StopKind::Mismatch,
                    format!("the run's final state differs from the replay's: {d}"),
                );
                stop.field = Some(field);
                return Err(stop);
            }
            self.pc = Pc::Done;
            return Ok(());
        }
        let at = self.confirmed;
        let skipped = self.resync(state, at)?;
        // This crank's own landed turns among them are checked as its own.
        let own: Vec<usize> = (at..at + skipped)
            .filter(|&i| self.flights[i].as_ref().is_some_and(|f| f.slot.is_some()))
            .collect();
        if own.is_empty() {
            for idx in at..at + skipped {
                self.summary
                    .text
                    .extend_from_slice(&self.replay.steps[idx].text);
                self.summary.turns_by_others += 1;
                self.flights[idx] = None;
            }
            self.moved(skipped, reading);
        } else {
            self.asked = Asked::CatchUp {
                at,
                skipped,
                own,
                then: reading,
            };
        }
        Ok(())
    }

    /// How many steps past `at` the run is (someone else's turns), after
    /// checking that its state is the replay's there.
    fn resync(&self, state: &[u8], at: usize) -> Result<usize, Stop> {
        let run = base58::encode(&self.params.run);
        let gone = || {
            Stop::new(
                StopKind::RunGone,
                format!("run {run} is no longer an opened run"),
            )
        };
        let turns = StateInfo::read(state).map_err(|_| gone())?.turns;
        let steps = &self.replay.steps;
        if turns == steps[at].turns_before {
            // It is where it should be: the failure was a reordering.
            return Ok(0);
        }
        let done = match steps.iter().position(|s| s.turns_before == turns) {
            Some(j) => j,
            None if turns == steps[steps.len() - 1].turns_before + 1 => steps.len(),
            None => {
                return Err(Stop::new(
                    StopKind::RunGone,
                    format!("run {run} has run {turns} turns, which its replay never reaches"),
                ))
            }
        };
        let want = self.replay.sha256_after(done);
        let got = sha256(state);
        if done < at || got != want {
            let mut stop = Stop::new(
                StopKind::Mismatch,
                format!(
                    "run {run} was moved to turn {turns} by someone else, and its state there is \
                     not the replay's (sha256 {} on chain, {} replayed)",
                    hex(&got),
                    hex(&want)
                ),
            );
            stop.turn = Some(turns);
            stop.field = Some("state".into());
            return Err(stop);
        }
        Ok(done - at)
    }

    /// The run moved `skipped` steps past the first not confirmed.
    fn moved(&mut self, skipped: usize, reading: Reading) {
        self.confirmed += skipped;
        match reading {
            Reading::Follow => {
                self.still_polls = if skipped > 0 { 0 } else { self.still_polls + 1 };
                // The other cranker has stopped: this one takes the run over.
                self.following = self.still_polls < FOLLOW_STILL_POLLS;
                self.pc = Pc::Top;
            }
            Reading::AfterFailure => {
                if skipped > 0 && self.params.options.leave_to_others {
                    // Nothing of this crank's is in flight (the failure
                    // was read once every turn settled): it ends here, or
                    // reads the final state if the other finished the run.
                    self.summary.left_to_others = self.confirmed < self.n();
                    self.pc = match self.summary.left_to_others {
                        true => Pc::Done,
                        false => Pc::HeightDue,
                    };
                    return;
                }
                if skipped > 0 {
                    self.following = true;
                    self.still_polls = 0;
                    self.summary.backoffs += 1;
                } else {
                    // A reordering: the leader got turns out of order, which
                    // fewer in flight make rarer.
                    self.cap = (self.window() / 2).max(WINDOW_AFTER_REORDERING);
                }
                self.pc = Pc::HeightDue;
            }
            Reading::Final => {}
        }
    }

    fn height(&mut self, height: u64, balance: u64) -> Result<(), Stop> {
        let n = self.n();
        for idx in self.confirmed..n {
            let expired = self.flights[idx]
                .as_ref()
                .is_some_and(|f| f.slot.is_none() && f.last_valid_height < height);
            if expired {
                self.flights[idx] = None;
                self.attempts[idx] += 1;
                self.going_back = true;
            }
        }
        self.balance = Some(balance);
        self.unsettled = (self.confirmed..n)
            .filter_map(|i| {
                let f = self.flights[i].as_ref().filter(|f| f.slot.is_none())?;
                Some(self.fee(i, f.cu_limit))
            })
            .sum();
        // The next turn to send must be one the fee payer can pay. The
        // words name the run's next turn, the first not recorded: turns sent
        // after it that the payer could not pay were dropped unseen.
        if let Some(idx) = (self.confirmed..self.paid).find(|&i| self.flights[i].is_none()) {
            let fee = self.fee(idx, self.budgets[idx].cu_limit);
            let turn = self.replay.steps[self.confirmed].turns_before + 1;
            let p = &self.params;
            let nothing_sent = self.summary.in_flight_most == 0;
            if let Some(words) = short_of_fees(&p.payer, balance, p.keep, fee, turn, nothing_sent) {
                let mut stop = Stop::new(StopKind::OutOfFunds, words);
                stop.turn = Some(turn);
                return Err(stop);
            }
        }
        Ok(())
    }

    /// Runs until the next action.
    fn advance(&mut self) -> Result<Action, Stop> {
        if let Asked::CatchUp { own, .. } = &self.asked {
            let signatures = own.iter().map(|&i| self.signature(i)).collect();
            return Ok(Action::Transactions { signatures });
        }
        let n = self.n();
        loop {
            match self.pc {
                Pc::Top => {
                    if self.confirmed == n {
                        self.pc = Pc::Final;
                        continue;
                    }
                    if self.confirmed >= self.paid {
                        // What is left of the run pays less than the
                        // cranker asks, and nothing of its own is in flight.
                        self.summary.left_unpaid = true;
                        self.pc = Pc::Done;
                        continue;
                    }
                    if self.going_back && self.all_ran(self.confirmed) {
                        self.going_back = false;
                    }
                    if self.following && self.settled(self.confirmed) {
                        // Read where the other cranker has taken the run, after a while.
                        self.pc = Pc::FollowRead;
                        self.asked = Asked::Waited;
                        return Ok(Action::Wait { ms: FOLLOW_POLL_MS });
                    }
                    if !self.going_back && !self.following {
                        if self.balance.is_none() {
                            // What the payer can spend bounds what it sends:
                            // read it first (and refuse a payer that cannot
                            // pay the first turn before sending it).
                            self.height_checked_ms = self.now_ms;
                            self.asked = Asked::Height;
                            return Ok(Action::Height);
                        }
                        self.pc = Pc::SendFrom(self.confirmed);
                        continue;
                    }
                    self.pc = Pc::Poll;
                    self.asked = Asked::Waited;
                    return Ok(Action::Wait { ms: POLL_MS });
                }
                Pc::FollowRead => {
                    self.asked = Asked::ReadRun(Reading::Follow);
                    return Ok(Action::ReadRun);
                }
                Pc::SendFrom(from) => {
                    let send = match self.probing(from) {
                        true => None,
                        false => self.next_send(from)?,
                    };
                    if let Some(send) = send {
                        self.pc = Pc::SendFrom(send.index + 1);
                        let cu_limit = send.cu_limit;
                        self.asked = Asked::Sent {
                            index: send.index,
                            cu_limit,
                        };
                        return Ok(Action::Send(send));
                    }
                    self.pc = Pc::Poll;
                    self.asked = Asked::Waited;
                    return Ok(Action::Wait { ms: POLL_MS });
                }
                Pc::Poll => {
                    self.pc = Pc::Ready;
                    let flying: Vec<usize> = (self.confirmed..n)
                        .filter(|&i| self.flights[i].as_ref().is_some_and(|f| f.slot.is_none()))
                        .collect();
                    if !flying.is_empty() {
                        let signatures = flying.iter().map(|&i| self.signature(i)).collect();
                        self.asked = Asked::Statuses(flying);
                        return Ok(Action::Statuses { signatures });
                    }
                }
                Pc::Ready => {
                    self.pc = Pc::FailedFirst;
                    // The turns that landed, in order: receipts checked, then recorded.
                    let ready: Vec<usize> = (self.confirmed..n)
                        .take_while(|&i| self.flights[i].as_ref().is_some_and(|f| f.slot.is_some()))
                        .collect();
                    if !ready.is_empty() {
                        let signatures = ready.iter().map(|&i| self.signature(i)).collect();
                        self.asked = Asked::Transactions(ready);
                        return Ok(Action::Transactions { signatures });
                    }
                }
                Pc::FailedFirst => {
                    self.pc = Pc::HeightDue;
                    // A failed turn with nothing before it in flight: the run
                    // is not where the replay expects. Someone else moved it,
                    // or the failure was a reordering: its state tells.
                    let c = self.confirmed;
                    if c < n
                        && self.flights[c].is_none()
                        && self.attempts[c] > 0
                        && self.going_back
                        && self.settled(c)
                    {
                        self.asked = Asked::ReadRun(Reading::AfterFailure);
                        return Ok(Action::ReadRun);
                    }
                }
                Pc::HeightDue => {
                    self.pc = Pc::Top;
                    // Turns whose blockhash expired unseen are sent again.
                    if self.now_ms.saturating_sub(self.height_checked_ms) > HEIGHT_EVERY_MS {
                        self.height_checked_ms = self.now_ms;
                        self.asked = Asked::Height;
                        return Ok(Action::Height);
                    }
                }
                Pc::Final => {
                    // The chain's final state, byte for byte.
                    self.asked = Asked::ReadRun(Reading::Final);
                    return Ok(Action::ReadRun);
                }
                Pc::Done => {
                    self.asked = Asked::Finished;
                    return Ok(Action::Done);
                }
            }
        }
    }

    fn signature(&self, idx: usize) -> String {
        self.flights[idx]
            .as_ref()
            .map(|f| f.signature.clone())
            .unwrap_or_default()
    }

    /// Whether a fleet's cranker holds back the turn from `from`: until a
    /// turn of its own has landed on the run it keeps one in flight (a
    /// probe), so that finding another cranker there costs it one failed
    /// turn, not a window.
    fn probing(&self, from: usize) -> bool {
        let fleet = self.params.options.leave_to_others || self.params.options.follow_first;
        fleet
            && self.summary.turns.is_empty()
            && (from > self.confirmed || !self.settled(self.confirmed))
    }

    /// What sending step `idx` asking for `cu_limit` units costs its payer.
    pub fn fee(&self, idx: usize, cu_limit: u32) -> u64 {
        let micro_lamports = self.budgets[idx].micro_lamports;
        self.params.lamports_per_signature + priority_fee(micro_lamports, cu_limit)
    }

    /// Whether the payer can send step `idx` now. A turn sent behind
    /// others not yet run fails if they land after it (a reordering) and
    /// is paid for all the same: it is sent only when, were it and every
    /// turn in flight to fail, the payer could still pay each turn left
    /// once. A window never spends what finishing the run needs, however
    /// tight the payer's funds (a session key's are the quote's and a
    /// margin); the run goes on one turn at a time when that is all it
    /// can afford.
    fn affordable(&self, idx: usize, cu_limit: u32) -> bool {
        let Some(balance) = self.balance else {
            return true;
        };
        let spendable = balance
            .saturating_sub(self.params.keep)
            .saturating_sub(self.unsettled);
        let behind_others =
            (self.confirmed..idx).any(|i| !self.flights[i].as_ref().is_some_and(Flight::ran));
        let reserve: u64 = match behind_others {
            true => (self.confirmed..self.paid)
                .map(|i| self.fee(i, self.budgets[i].cu_limit))
                .sum(),
            false => 0,
        };
        spendable >= self.fee(idx, cu_limit).saturating_add(reserve)
    }

    /// The next turn of the window to send, from step `from` on.
    fn next_send(&self, from: usize) -> Result<Option<Send>, Stop> {
        let n = self.n();
        let window = self.window();
        let flying = (self.confirmed..n)
            .filter(|&i| self.flights[i].as_ref().is_some_and(|f| !f.ran()))
            .count();
        if flying >= window {
            return Ok(None);
        }
        // Not too far past the last turn recorded either: turns seen run
        // still wait for their receipts.
        let end = self.paid.min(self.confirmed + 4 * window);
        for idx in from..end {
            if self.flights[idx].is_some() {
                continue;
            }
            let step = &self.replay.steps[idx];
            let budget = self.budgets[idx];
            // A ramp's first turn outranks every turn before it: it waits
            // until the turn before it has run.
            let before_ran =
                idx == self.confirmed || self.flights[idx - 1].as_ref().is_some_and(Flight::ran);
            if budget.starts_ramp && !before_ran {
                return Ok(None);
            }
            let attempt = self.attempts[idx];
            if attempt > MOST_ATTEMPTS {
                let turn = step.turns_before + 1;
                let mut stop = Stop::new(
                    StopKind::GaveUp,
                    format!("turn {turn} failed {attempt} times; giving up"),
                );
                stop.turn = Some(turn);
                return Err(stop);
            }
            // A resent turn asks for one unit more, so it is never the same
            // transaction as the one that failed, whatever the blockhash.
            let cu_limit = (budget.cu_limit + attempt).min(MAX_TRANSACTION_CU);
            if !self.affordable(idx, cu_limit) {
                return Ok(None);
            }
            return Ok(Some(Send {
                index: idx,
                turn: step.turns_before + 1,
                expected_turns: step.turns_before,
                sections: step.sections.clone(),
                cu_limit,
                micro_lamports: budget.micro_lamports,
                fresh_blockhash: attempt > 0,
            }));
        }
        Ok(None)
    }
}

/// A hash in lowercase hex.
pub fn hex(digest: &[u8; 32]) -> String {
    String::from_utf8_lossy(&crate::sha256::hex(digest)).into_owned()
}

/// Lamports in SOL, with all nine decimals, as every client prints them.
pub fn sol(lamports: u64) -> String {
    format!(
        "{}.{:09} SOL",
        lamports / 1_000_000_000,
        lamports % 1_000_000_000
    )
}

/// Why the fee payer cannot pay turn `turn`'s fee, when it cannot: after
/// the fee a fee payer must still hold `keep` (the rent-exempt minimum).
/// `nothing_sent`: refused before the crank's first send, else run out
/// midway.
pub fn short_of_fees(
    payer: &str,
    balance: u64,
    keep: u64,
    fee: u64,
    turn: u64,
    nothing_sent: bool,
) -> Option<String> {
    let needed = keep.saturating_add(fee);
    if balance >= needed {
        return None;
    }
    Some(match nothing_sent {
        true => format!(
            "the signer {payer} cannot pay turn {turn} (the run's next): it has {}, and the \
             turn's fee ({fee} lamports) must leave it the {} a fee payer keeps, {} in all",
            sol(balance),
            sol(keep),
            sol(needed)
        ),
        false => format!(
            "the signer {payer} ran out of lamports at turn {turn}: it has {}, and a turn's fee \
             ({fee} lamports) must leave it the {} a fee payer keeps",
            sol(balance),
            sol(keep)
        ),
    })
}
