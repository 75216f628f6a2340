//! Landing many independent transactions (weight writes, bindings, the
//! program's writes, closings) as a state machine with no I/O: the `curta`
//! CLI (`sender::send_all`) and `@curta/sdk` (`sendAll`, through the
//! module) drive this one. Up to a window of jobs is in flight, landing in
//! any order; statuses are read in rounds; a job whose blockhash expires
//! unseen is signed again with a fresh one, one the node did not take is
//! sent again after a pause, and the first that lands and fails ends the
//! batch. The crank has a machine of its own (`crank`): its turns must
//! land in order.
//!
//! The host drives it as it drives the crank: `Batch::next` takes the
//! answer to the last action (`Event::Start` first) and returns the next,
//! until `Action::Done` or `Action::Stop`. Time passes only through
//! `Action::Wait`, whose answer is the host's clock.

use std::collections::VecDeque;
use std::format;
use std::string::String;
use std::vec::Vec;

/// How long the host waits between rounds of statuses.
pub const POLL_MS: u64 = 200;
/// How long it waits after the node did not take a transaction.
pub const REFUSED_PAUSE_MS: u64 = 250;
/// How often the block height is read, to find expired blockhashes.
pub const HEIGHT_EVERY_MS: u64 = 1_000;
/// Times one job may go untaken by the node before the batch gives up.
pub const SEND_ATTEMPTS: u32 = 4;
/// Times one job's blockhash may expire unseen before the batch gives up.
pub const MOST_EXPIRIES: u32 = 8;
/// Jobs in flight at once by default.
pub const IN_FLIGHT: usize = 256;

/// What a batch cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub transactions: u64,
    /// Lamports: the base fees of the signatures.
    pub fees: u64,
    pub first_slot: u64,
    pub last_slot: u64,
}

impl Summary {
    pub fn add(&mut self, other: &Summary) {
        if other.transactions == 0 {
            return;
        }
        self.first_slot = if self.transactions == 0 {
            other.first_slot
        } else {
            self.first_slot.min(other.first_slot)
        };
        self.last_slot = self.last_slot.max(other.last_slot);
        self.transactions += other.transactions;
        self.fees += other.fees;
    }

    /// One transaction that landed in `slot` and paid `fee`.
    pub fn landed(&mut self, slot: u64, fee: u64) {
        self.add(&Summary {
            transactions: 1,
            fees: fee,
            first_slot: slot,
            last_slot: slot,
        });
    }
}

/// What the host did with one job of an `Action::Sign`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The node took it (journaled first, as every transaction).
    Taken {
        signature: String,
        last_valid_height: u64,
        /// How many signatures it carries, each paid the base fee.
        signatures: u64,
    },
    /// The node did not take it, in the host's words.
    Refused { words: String },
}

/// A signature's status at the client's commitment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landing {
    pub slot: u64,
    pub failed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Start,
    /// The answer to `Sign`, one per job, in its order.
    Sent(Vec<Sent>),
    Waited {
        now_ms: u64,
    },
    /// The answer to `Statuses`, one per signature, in its order: `None`
    /// while not seen at the commitment.
    Statuses(Vec<Option<Landing>>),
    Height {
        height: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It landed and failed: the host reads its logs and says why, naming
    /// the job.
    Failed { job: usize, signature: String },
    /// The node would not take it, or it never landed, in words naming the job.
    GaveUp { job: usize, words: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Sign these jobs with one recent blockhash (a fresh one when asked),
    /// journal and send them; answer `Sent`.
    Sign {
        jobs: Vec<usize>,
        fresh_blockhash: bool,
    },
    Wait {
        ms: u64,
    },
    Statuses {
        signatures: Vec<String>,
    },
    Height,
    /// Every job landed: `Batch::summary`.
    Done,
    Stop(Stop),
}

/// How to send a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub in_flight: usize,
    pub most_expiries: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            in_flight: IN_FLIGHT,
            most_expiries: MOST_EXPIRIES,
        }
    }
}

struct Flight {
    job: usize,
    signature: String,
    last_valid_height: u64,
    signatures: u64,
}

/// One batch of jobs, each named for errors ("writing section 1 at offset
/// 4,930").
pub struct Batch {
    whats: Vec<String>,
    options: Options,
    lamports_per_signature: u64,
    queue: VecDeque<usize>,
    refusals: Vec<u32>,
    expiries: Vec<u32>,
    flying: Vec<Flight>,
    signing: Vec<usize>,
    asked: Vec<String>,
    landed: Vec<usize>,
    fresh_blockhash: bool,
    refused_now: bool,
    now_ms: u64,
    height_read_ms: Option<u64>,
    summary: Summary,
}

impl Batch {
    pub fn new(whats: Vec<String>, options: Options, lamports_per_signature: u64) -> Batch {
        let jobs = whats.len();
        Batch {
            whats,
            options: Options {
                in_flight: options.in_flight.max(1),
                most_expiries: options.most_expiries,
            },
            lamports_per_signature,
            queue: (0..jobs).collect(),
            refusals: std::vec![0; jobs],
            expiries: std::vec![0; jobs],
            flying: Vec::new(),
            signing: Vec::new(),
            asked: Vec::new(),
            landed: Vec::new(),
            fresh_blockhash: false,
            refused_now: false,
            now_ms: 0,
            height_read_ms: None,
            summary: Summary::default(),
        }
    }

    pub fn summary(&self) -> Summary {
        self.summary
    }

    /// The jobs that landed since the last call, for a host's progress.
    pub fn take_landed(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.landed)
    }

    /// Answers the last action; returns the next one.
    pub fn next(&mut self, event: Event) -> Action {
        let answered_sign = matches!(event, Event::Sent(_));
        let waited = matches!(event, Event::Waited { .. });
        let read_statuses = matches!(event, Event::Statuses(_));
        if let Some(stop) = self.apply(event) {
            return Action::Stop(stop);
        }
        if self.queue.is_empty() && self.flying.is_empty() {
            return Action::Done;
        }
        if waited && !self.flying.is_empty() {
            self.asked = self.flying.iter().map(|f| f.signature.clone()).collect();
            return Action::Statuses {
                signatures: self.asked.clone(),
            };
        }
        let height_due = self
            .height_read_ms
            .is_some_and(|at| self.now_ms.saturating_sub(at) >= HEIGHT_EVERY_MS);
        if read_statuses && !self.flying.is_empty() && height_due {
            self.height_read_ms = Some(self.now_ms);
            return Action::Height;
        }
        let room = self.options.in_flight.saturating_sub(self.flying.len());
        if !answered_sign && room > 0 && !self.queue.is_empty() {
            let take = room.min(self.queue.len());
            self.signing = self.queue.drain(..take).collect();
            return Action::Sign {
                jobs: self.signing.clone(),
                fresh_blockhash: std::mem::take(&mut self.fresh_blockhash),
            };
        }
        let pause = std::mem::take(&mut self.refused_now);
        Action::Wait {
            ms: if pause { REFUSED_PAUSE_MS } else { POLL_MS },
        }
    }

    fn apply(&mut self, event: Event) -> Option<Stop> {
        match event {
            Event::Start => {}
            Event::Sent(sent) => {
                let jobs = std::mem::take(&mut self.signing);
                let mut answers = sent.into_iter();
                for job in jobs {
                    match answers.next() {
                        Some(Sent::Taken {
                            signature,
                            last_valid_height,
                            signatures,
                        }) => self.flying.push(Flight {
                            job,
                            signature,
                            last_valid_height,
                            signatures,
                        }),
                        Some(Sent::Refused { words }) => {
                            self.refusals[job] += 1;
                            if self.refusals[job] >= SEND_ATTEMPTS {
                                let words = format!("{}: {words}", self.whats[job]);
                                return Some(Stop::GaveUp { job, words });
                            }
                            self.refused_now = true;
                            self.queue.push_back(job);
                        }
                        // A job the host did not answer was not sent.
                        None => self.queue.push_front(job),
                    }
                }
            }
            Event::Waited { now_ms } => {
                self.now_ms = now_ms;
                self.height_read_ms.get_or_insert(now_ms);
            }
            Event::Statuses(found) => {
                let asked = std::mem::take(&mut self.asked);
                for (signature, status) in asked.into_iter().zip(found) {
                    let Some(status) = status else { continue };
                    let Some(i) = self.flying.iter().position(|f| f.signature == signature) else {
                        continue;
                    };
                    let flight = self.flying.swap_remove(i);
                    if status.failed {
                        return Some(Stop::Failed {
                            job: flight.job,
                            signature,
                        });
                    }
                    let fee = flight.signatures * self.lamports_per_signature;
                    self.summary.landed(status.slot, fee);
                    self.landed.push(flight.job);
                }
            }
            Event::Height { height } => {
                let mut i = 0;
                while i < self.flying.len() {
                    if self.flying[i].last_valid_height >= height {
                        i += 1;
                        continue;
                    }
                    // Its blockhash is gone: no copy of it can land now.
                    let job = self.flying.swap_remove(i).job;
                    self.expiries[job] += 1;
                    let times = self.expiries[job];
                    if times > self.options.most_expiries {
                        let words = format!(
                            "{}: expired {times} times without landing; is the cluster overloaded?",
                            self.whats[job]
                        );
                        return Some(Stop::GaveUp { job, words });
                    }
                    self.queue.push_front(job);
                    self.fresh_blockhash = true;
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;
    use std::vec;

    fn batch(jobs: usize, in_flight: usize) -> Batch {
        let whats = (0..jobs).map(|j| format!("job {j}")).collect();
        let options = Options {
            in_flight,
            most_expiries: 2,
        };
        Batch::new(whats, options, 5_000)
    }

    fn taken(signature: &str, last_valid_height: u64) -> Sent {
        Sent::Taken {
            signature: signature.to_string(),
            last_valid_height,
            signatures: 1,
        }
    }

    fn landed(slot: u64) -> Option<Landing> {
        Some(Landing {
            slot,
            failed: false,
        })
    }

    fn statuses(names: &[&str]) -> Action {
        Action::Statuses {
            signatures: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn lands_every_job_a_window_at_a_time() {
        let mut b = batch(3, 2);
        let sign = |jobs: Vec<usize>| Action::Sign {
            jobs,
            fresh_blockhash: false,
        };
        assert_eq!(b.next(Event::Start), sign(vec![0, 1]));
        let sent = Event::Sent(vec![taken("a", 100), taken("b", 100)]);
        assert_eq!(b.next(sent), Action::Wait { ms: POLL_MS });
        assert_eq!(b.next(Event::Waited { now_ms: 0 }), statuses(&["a", "b"]));
        assert_eq!(
            b.next(Event::Statuses(vec![None, landed(7)])),
            sign(vec![2])
        );
        assert_eq!(b.take_landed(), vec![1]);
        assert_eq!(
            b.next(Event::Sent(vec![taken("c", 100)])),
            Action::Wait { ms: POLL_MS }
        );
        assert_eq!(b.next(Event::Waited { now_ms: 200 }), statuses(&["a", "c"]));
        assert_eq!(
            b.next(Event::Statuses(vec![landed(9), landed(8)])),
            Action::Done
        );
        assert_eq!(b.take_landed(), vec![0, 2]);
        let want = Summary {
            transactions: 3,
            fees: 15_000,
            first_slot: 7,
            last_slot: 9,
        };
        assert_eq!(b.summary(), want);
    }

    #[test]
    fn an_expired_job_is_signed_again_with_a_fresh_blockhash_until_it_gives_up() {
        let mut b = batch(1, 4);
        b.next(Event::Start);
        b.next(Event::Sent(vec![taken("a", 10)]));
        // The first wait starts the height's clock.
        assert_eq!(b.next(Event::Waited { now_ms: 0 }), statuses(&["a"]));
        assert_eq!(
            b.next(Event::Statuses(vec![None])),
            Action::Wait { ms: POLL_MS }
        );
        for (expiries, now) in [(1, 1_000u64), (2, 2_000), (3, 3_000)] {
            assert_eq!(b.next(Event::Waited { now_ms: now }), statuses(&["a"]));
            assert_eq!(b.next(Event::Statuses(vec![None])), Action::Height);
            let next = b.next(Event::Height { height: 11 });
            if expiries <= 2 {
                let again = Action::Sign {
                    jobs: vec![0],
                    fresh_blockhash: true,
                };
                assert_eq!(next, again, "expiry {expiries}");
                assert_eq!(
                    b.next(Event::Sent(vec![taken("a", 10)])),
                    Action::Wait { ms: POLL_MS }
                );
            } else {
                let words = "job 0: expired 3 times without landing; is the cluster overloaded?";
                let stop = Stop::GaveUp {
                    job: 0,
                    words: words.to_string(),
                };
                assert_eq!(next, Action::Stop(stop));
            }
        }
    }

    #[test]
    fn a_refused_job_is_sent_again_after_a_pause_then_given_up() {
        let mut b = batch(1, 4);
        b.next(Event::Start);
        let refused = || {
            Event::Sent(vec![Sent::Refused {
                words: "no answer".to_string(),
            }])
        };
        for _ in 1..SEND_ATTEMPTS {
            assert_eq!(
                b.next(refused()),
                Action::Wait {
                    ms: REFUSED_PAUSE_MS
                }
            );
            let again = Action::Sign {
                jobs: vec![0],
                fresh_blockhash: false,
            };
            assert_eq!(b.next(Event::Waited { now_ms: 0 }), again);
        }
        let stop = Stop::GaveUp {
            job: 0,
            words: "job 0: no answer".to_string(),
        };
        assert_eq!(b.next(refused()), Action::Stop(stop));
    }

    #[test]
    fn the_first_failure_stops_the_batch_naming_its_job() {
        let mut b = batch(2, 2);
        b.next(Event::Start);
        b.next(Event::Sent(vec![taken("a", 100), taken("b", 100)]));
        b.next(Event::Waited { now_ms: 0 });
        let failed = Some(Landing {
            slot: 3,
            failed: true,
        });
        let stop = Stop::Failed {
            job: 1,
            signature: "b".to_string(),
        };
        assert_eq!(
            b.next(Event::Statuses(vec![None, failed])),
            Action::Stop(stop)
        );
    }

    #[test]
    fn no_jobs_is_done_at_once() {
        assert_eq!(batch(0, 4).next(Event::Start), Action::Done);
    }
}
