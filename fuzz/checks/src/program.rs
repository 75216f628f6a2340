//! Target `program`: sequences of instructions against the host build of
//! the program (`curta_program::entrypoint`), over an in-memory ledger that
//! does what the runtime does around it.
//!
//! The ledger has a pool of keys: a payer, three people (admin, owner,
//! opener, all funded) and free keys for the accounts the actions create.
//! Actions come from the input: the System program's `create_account` and
//! `transfer`, every instruction of the program with the accounts its
//! documentation lists (found from the ledger: the model's owner, the
//! run's model, the weight accounts a turn's plan names...) or other ones,
//! signer and writable flags mostly right and sometimes wrong, and whole
//! flows (upload a model, open a run, advance it some turns) whose steps
//! are each such an instruction. TINY and SMALL are the models, so seals
//! and turns are cheap.
//!
//! Each instruction's input buffer is serialized as the runtime does
//! (loader v2/v3, aligned) by the program's own writer
//! (`entrypoint::input`, feature `input-writer`), parsed by
//! `entrypoint::deserialize` and run by `process_instruction`. A failed instruction changes nothing. After a
//! successful one the ledger checks what the runtime enforces, and a
//! program that breaks it fails the target: only an account's owner debits
//! lamports or changes data, only a writable account changes, data grows
//! by at most 10 KiB, an owner changes only for a program-owned account
//! whose data is left empty. The rent-state rule refuses the transaction
//! (as the runtime would), and is no finding. Then the invariants:
//! lamports are conserved; every run holds `paid + escrow == deposited`;
//! a sealed section's bytes never change, nor a sealed model's sections (a
//! model turns sealed only with every section sealed, bound to it and
//! matching its digest), and a sealed model is only ever retired; nothing
//! changes owner but a close, which leaves no lamports and no data; an
//! account's kind, a model's identity (config account, owner, royalty,
//! shape) and a run's (model, opener, royalty, deposit) never change; a
//! run's state changes only by a turn, which counts one more turn.

use core::mem::MaybeUninit;

use curta_core::format::{Config, FLAG_SHARED_CLASSIFIER};
use curta_core::planner;
use curta_core::protocol::{
    accounts as roles, config, model, model_identity, run, section_digest, weight, AccountRole,
    Address, ConfigAccount, Instruction, ModelAccount, RunAccount, WeightAccount, CONFIG_TAG,
    MODEL_TAG, RUN_TAG, WEIGHT_TAG,
};
use curta_core::state::{self, StateBuffer};
use curta_core::StateInfo;
use curta_program::account::{AccountView, MAX_PERMITTED_DATA_INCREASE};
use curta_program::entrypoint::input::{InputAccount, InputBuffer};
use curta_program::entrypoint::{deserialize, process_instruction, MAX_ACCOUNTS};

use crate::models::{self, Model};
use crate::runs;
use crate::source::Source;

/// The program's address (not in the pool).
const PROGRAM: Address = [0xC7; 32];
/// The System program: every account nobody created is its, empty.
const SYSTEM: Address = [0; 32];
/// Keys: 0 the payer, 1 to 3 people, the rest free for accounts.
const KEYS: usize = 12;
const PAYER: usize = 0;
const PEOPLE: std::ops::Range<usize> = 1..4;
/// The runtime's largest account.
const MAX_ACCOUNT_LEN: usize = 10 * 1024 * 1024;
/// Actions per input, at most.
const MAX_ACTIONS: usize = 48;

fn key(i: usize) -> Address {
    let mut k = [0x11 * (i as u8 + 1); 32];
    k[0] = 0xA0;
    k[31] = i as u8;
    k
}

/// Mainnet's rent-exempt minimum, as the program's host shim reads it.
fn rent(len: usize) -> u64 {
    (128 + len as u64) * 3480 * 2
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Account {
    owner: Address,
    lamports: u64,
    data: Vec<u8>,
}

/// One account of an instruction, as its `AccountMeta` gives it.
#[derive(Clone, Copy, Debug)]
struct Meta {
    key: usize,
    signer: bool,
    writable: bool,
}

/// An instruction's accounts: `keys` in its table's order, with its
/// table's flags (`protocol::accounts`), as the client builds them.
fn metas(table: &[AccountRole], keys: &[usize]) -> Vec<Meta> {
    table
        .iter()
        .zip(keys)
        .map(|(r, &k)| meta(k, r.signer, r.writable))
        .collect()
}

fn meta(key: usize, signer: bool, writable: bool) -> Meta {
    Meta {
        key,
        signer,
        writable,
    }
}

struct Ledger {
    accounts: Vec<Account>,
    /// Successful program instructions and turns, for `reach`.
    executed: usize,
    turns: u64,
}

impl Ledger {
    fn new() -> Ledger {
        let person = Account {
            owner: SYSTEM,
            lamports: 1_000_000_000_000,
            data: vec![],
        };
        let mut accounts = vec![
            Account {
                owner: SYSTEM,
                lamports: 0,
                data: vec![],
            };
            KEYS
        ];
        accounts[PAYER].lamports = 1_000_000_000_000_000;
        for p in PEOPLE {
            accounts[p] = person.clone();
        }
        Ledger {
            accounts,
            executed: 0,
            turns: 0,
        }
    }

    fn total(&self) -> u128 {
        self.accounts.iter().map(|a| a.lamports as u128).sum()
    }

    fn index_of(&self, address: &Address) -> Option<usize> {
        (0..KEYS).find(|&i| key(i) == *address)
    }

    fn tagged(&self, i: usize, tag: &[u8; 8]) -> bool {
        let a = &self.accounts[i];
        a.owner == PROGRAM && a.data.len() >= 8 && a.data[..8] == *tag
    }

    /// A key holding an account of kind `tag`, when one does (mostly), else
    /// any key.
    fn pick_tagged(&self, tag: &[u8; 8], s: &mut Source) -> usize {
        let found: Vec<usize> = (0..KEYS).filter(|&i| self.tagged(i, tag)).collect();
        if found.is_empty() || s.one_in(16) {
            s.below(KEYS)
        } else {
            found[s.below(found.len())]
        }
    }

    /// A key no account uses yet (system-owned, empty, no lamports).
    fn pick_free(&self, s: &mut Source) -> Option<usize> {
        let start = s.below(KEYS);
        (0..KEYS)
            .map(|k| (start + k) % KEYS)
            .filter(|&i| i != PAYER && !PEOPLE.contains(&i))
            .find(|&i| self.is_free(i))
    }

    fn is_free(&self, i: usize) -> bool {
        let a = &self.accounts[i];
        a.owner == SYSTEM && a.lamports == 0 && a.data.is_empty()
    }

    fn person(&self, s: &mut Source) -> usize {
        if s.one_in(8) {
            s.below(KEYS)
        } else {
            PEOPLE.start + s.below(PEOPLE.len())
        }
    }

    /// The System program's `create_account`: the payer funds a key no
    /// account uses, with `space` zero bytes owned by the program.
    fn create_account(&mut self, to: usize, space: usize, lamports: u64) -> bool {
        if to == PAYER
            || !self.is_free(to)
            || space > MAX_ACCOUNT_LEN
            || self.accounts[PAYER].lamports < lamports
        {
            return false;
        }
        self.accounts[PAYER].lamports -= lamports;
        self.accounts[to] = Account {
            owner: PROGRAM,
            lamports,
            data: vec![0; space],
        };
        self.rent_ok_or_revert(to, lamports)
    }

    /// Undoes a creation the rent-state rule refuses (an account funded
    /// below its rent-exempt minimum).
    fn rent_ok_or_revert(&mut self, to: usize, lamports: u64) -> bool {
        let a = &self.accounts[to];
        if a.lamports != 0 && a.lamports < rent(a.data.len()) {
            self.accounts[PAYER].lamports += lamports;
            self.accounts[to] = Account {
                owner: SYSTEM,
                lamports: 0,
                data: vec![],
            };
            return false;
        }
        true
    }

    /// The System program's `transfer` between system accounts.
    fn transfer(&mut self, from: usize, to: usize, lamports: u64) {
        let f = &self.accounts[from];
        if from == to || f.owner != SYSTEM || !f.data.is_empty() || f.lamports < lamports {
            return;
        }
        let pre = self.accounts.clone();
        self.accounts[from].lamports -= lamports;
        let Some(t) = self.accounts[to].lamports.checked_add(lamports) else {
            self.accounts = pre;
            return;
        };
        self.accounts[to].lamports = t;
        if !rent_states_allowed(&pre, &self.accounts, &[from, to]) {
            self.accounts = pre;
        }
    }

    /// Runs one instruction of the program; returns whether it succeeded
    /// (and the ledger took its changes).
    fn execute(&mut self, data: &[u8], metas: &[Meta]) -> bool {
        // Keys in order of first appearance; flags merged per key, as a
        // transaction's message gives them.
        let mut order: Vec<usize> = vec![];
        let mut flags = [(false, false); KEYS];
        for m in metas {
            if !order.contains(&m.key) {
                order.push(m.key);
            }
            flags[m.key].0 |= m.signer;
            flags[m.key].1 |= m.writable;
        }
        let mut buffer = self.input(metas, &flags, data);
        let mut views = [const { MaybeUninit::<AccountView>::uninit() }; MAX_ACCOUNTS];
        // SAFETY: the buffer is the runtime's format (`InputBuffer`),
        // 8-aligned, and outlives the views.
        let result = unsafe {
            let input = deserialize(buffer.as_mut_ptr(), &mut views);
            process_instruction(&input)
        };
        if result.is_err() {
            return false;
        }
        let pre = self.accounts.clone();
        for &k in &order {
            // The key's entry, at its first position: what the program left.
            let position = metas.iter().position(|m| m.key == k).unwrap();
            let header = buffer.header(position);
            let (owner, lamports) = (header.owner, header.lamports);
            let len = header.data_len as usize;
            let before = &pre[k];
            let grown = len.saturating_sub(before.data.len());
            assert!(
                grown <= MAX_PERMITTED_DATA_INCREASE && len <= MAX_ACCOUNT_LEN,
                "account {k} grew to {len}"
            );
            let post = Account {
                owner,
                lamports,
                data: buffer.data(position).to_vec(),
            };
            check_runtime_rules(k, before, &post, flags[k].1);
            self.accounts[k] = post;
        }
        assert_eq!(
            self.total(),
            pre.iter().map(|a| a.lamports as u128).sum::<u128>(),
            "lamports not conserved"
        );
        if !rent_states_allowed(&pre, &self.accounts, &order) {
            // The runtime refuses the transaction: nothing happened.
            self.accounts = pre;
            return false;
        }
        self.check_invariants(&pre, &order, data);
        self.executed += 1;
        if matches!(Instruction::decode(data), Some(Instruction::Turn { .. })) {
            self.turns += 1;
        }
        true
    }

    /// The runtime's input buffer for an instruction: each key in full at
    /// its first position, with its flags merged over the instruction, and
    /// a duplicate of that position wherever it comes again.
    fn input(&self, metas: &[Meta], flags: &[(bool, bool); KEYS], data: &[u8]) -> InputBuffer {
        let accounts: Vec<InputAccount> = metas
            .iter()
            .enumerate()
            .map(
                |(position, m)| match metas[..position].iter().position(|e| e.key == m.key) {
                    Some(first) => InputAccount::Dup(first as u8),
                    None => {
                        let a = &self.accounts[m.key];
                        let (signer, writable) = flags[m.key];
                        InputAccount::Full {
                            key: key(m.key),
                            owner: a.owner,
                            lamports: a.lamports,
                            signer,
                            writable,
                            data: &a.data,
                        }
                    }
                },
            )
            .collect();
        InputBuffer::new(&accounts, data, &PROGRAM)
    }

    /// The invariants, over the accounts the instruction named.
    fn check_invariants(&self, pre: &[Account], order: &[usize], data: &[u8]) {
        let is_turn = matches!(Instruction::decode(data), Some(Instruction::Turn { .. }));
        for &k in order {
            let (a, b) = (&pre[k], &self.accounts[k]);
            // Nothing changes owner but a close.
            if a.owner != b.owner {
                assert!(
                    a.owner == PROGRAM && b.owner == SYSTEM,
                    "account {k} changed owner"
                );
                assert!(
                    b.lamports == 0 && b.data.is_empty(),
                    "a close left lamports or data in {k}"
                );
                continue;
            }
            if b.owner != PROGRAM {
                continue;
            }
            let tag = |d: &[u8]| {
                d.get(..8)
                    .map(|t| <[u8; 8]>::try_from(t).unwrap())
                    .filter(|t| *t != [0; 8])
            };
            // An account's kind never changes; only a zero one is given one.
            if let Some(t) = tag(&a.data) {
                assert_eq!(tag(&b.data), Some(t), "account {k} changed kind");
            }
            if let Ok(w) = WeightAccount::read(&a.data) {
                let after = WeightAccount::read(&b.data).expect("a weight account stays one");
                assert_eq!(w.model(), after.model());
                assert_eq!(w.section(), after.section());
                if w.sealed() {
                    assert!(a.data == b.data, "a sealed section of account {k} changed");
                }
            }
            if let Ok(m) = ModelAccount::read(&a.data) {
                let after = ModelAccount::read(&b.data).expect("a model stays one");
                assert_eq!(
                    a.data[..model::BOUND - 8],
                    b.data[..model::BOUND - 8],
                    "model {k}'s identity changed"
                );
                let (from, to) = (m.status(), after.status());
                let allowed = match from {
                    model::WRITING => to == model::WRITING || to == model::SEALED,
                    model::SEALED | model::RETIRED => {
                        to == model::RETIRED || (to == model::SEALED && from == to)
                    }
                    _ => false,
                };
                assert!(allowed, "model {k} went from status {from} to {to}");
                if to == model::SEALED && from == model::WRITING {
                    self.check_sealed_model(k);
                }
                if from != model::WRITING {
                    assert_eq!(
                        m.model_identity(),
                        after.model_identity(),
                        "model {k}'s seal changed"
                    );
                    for i in 0..m.section_count() {
                        assert!(
                            m.section_digest(i) == after.section_digest(i)
                                || after.section_digest(i) == &[0; 32],
                            "a sealed model's digest changed"
                        );
                    }
                }
            }
            if let Ok(r) = RunAccount::read(&a.data) {
                let after = RunAccount::read(&b.data).expect("a run stays one");
                assert_eq!(
                    a.data[..run::ESCROW],
                    b.data[..run::ESCROW],
                    "run {k}'s identity changed"
                );
                assert_eq!(r.model_identity(), after.model_identity());
                assert_eq!(
                    (r.crank_fee(), r.crank_deposit()),
                    (after.crank_fee(), after.crank_deposit()),
                    "run {k}'s crank terms changed"
                );
                if r.state() != after.state() {
                    assert!(is_turn, "run {k}'s state changed outside a turn");
                    // Only ever on the model it was opened on.
                    let m = self.index_of(r.model()).expect("a turned run's model");
                    let m = ModelAccount::read(&self.accounts[m].data).expect("a model");
                    assert_eq!(
                        m.model_identity(),
                        r.model_identity(),
                        "run {k} turned on another model"
                    );
                    let (x, y) = (
                        StateInfo::read(r.state()).unwrap(),
                        StateInfo::read(after.state()).unwrap(),
                    );
                    assert_eq!(y.turns, x.turns + 1, "a turn counts one turn");
                    assert!(y.generated >= x.generated);
                    assert!(after.paid() >= r.paid());
                    assert_eq!(
                        after.crank_paid() - r.crank_paid(),
                        r.next_crank_payment(),
                        "run {k}'s turn paid its sender another fee"
                    );
                } else {
                    assert_eq!(r.crank_paid(), after.crank_paid(), "a fee without a turn");
                }
            }
            if let Ok(r) = RunAccount::read(&b.data) {
                assert_eq!(
                    r.paid().checked_add(r.escrow()),
                    Some(r.deposited()),
                    "run {k}: paid + escrow != deposited"
                );
                assert!(
                    r.crank_paid() <= r.crank_deposit(),
                    "run {k} paid its crankers more than their deposit"
                );
                // The escrow and the deposit's rest are lamports the run
                // holds beyond its rent.
                let left = r.crank_deposit() - r.crank_paid();
                assert!(
                    b.lamports as u128
                        >= rent(b.data.len()) as u128 + r.escrow() as u128 + left as u128,
                    "run {k} holds less than its escrow and crank deposit"
                );
            }
        }
    }

    /// A model just sealed: every section sealed, bound to it, and the
    /// bytes the digest it records says.
    fn check_sealed_model(&self, k: usize) {
        let m = ModelAccount::read(&self.accounts[k].data).unwrap();
        assert_eq!(
            m.model_identity(),
            &model_identity(&key(k), m.0),
            "model {k}'s identity"
        );
        assert_eq!(m.sealed_count() as usize, m.section_count());
        assert_eq!(m.bound() as usize, m.section_count());
        for i in 0..m.section_count() {
            let w = self
                .index_of(m.section_address(i))
                .expect("a sealed model's section is a pool account");
            let w = WeightAccount::read(&self.accounts[w].data)
                .expect("a sealed model's section is a weight account");
            assert!(w.sealed() && w.model() == &key(k) && w.section() as usize == i);
            assert_eq!(w.bytes().len() as u64, m.section_len(i));
            assert_eq!(
                &section_digest(w.bytes()),
                m.section_digest(i),
                "section {i}'s digest"
            );
        }
    }
}

/// What the runtime checks of each account after an instruction; a
/// program that breaks it is a finding.
fn check_runtime_rules(k: usize, a: &Account, b: &Account, writable: bool) {
    let owned = a.owner == PROGRAM;
    if a.owner != b.owner {
        assert!(
            owned && writable,
            "the program gave away account {k}, which it does not own or may not write"
        );
        assert!(
            b.data.iter().all(|&x| x == 0),
            "account {k} changed owner with data"
        );
    }
    if a.lamports != b.lamports {
        assert!(writable, "lamports of read-only account {k} changed");
        assert!(
            owned || b.lamports > a.lamports,
            "the program debited account {k}, which it does not own"
        );
    }
    if a.data != b.data {
        assert!(
            writable && owned,
            "the program changed the data of account {k}, which it may not"
        );
    }
}

/// The runtime's rent-state rule over the accounts an instruction named:
/// an account ends empty of lamports or rent-exempt, or rent-paying as it
/// was, no larger and with no more lamports.
fn rent_states_allowed(pre: &[Account], post: &[Account], keys: &[usize]) -> bool {
    keys.iter().all(|&k| {
        let (a, b) = (&pre[k], &post[k]);
        let paying = |x: &Account| x.lamports != 0 && x.lamports < rent(x.data.len());
        !paying(b) || (paying(a) && a.data.len() == b.data.len() && b.lamports <= a.lamports)
    })
}

pub fn check(data: &[u8]) {
    reach(data);
}

/// How far an input went: the program instructions that succeeded, and
/// how many of them were turns.
pub fn reach(data: &[u8]) -> (usize, u64) {
    let mut s = Source::new(data);
    let mut l = Ledger::new();
    for _ in 0..MAX_ACTIONS {
        if s.is_empty() {
            break;
        }
        action(&mut l, &mut s);
    }
    (l.executed, l.turns)
}

/// A seed: each action's bytes, padded with the zeros it reads after them
/// (measured by running it), so the next action's bytes come where it
/// starts.
pub fn seed(actions: &[Vec<u8>]) -> Vec<u8> {
    let mut l = Ledger::new();
    let mut out = vec![];
    for a in actions.iter().take(MAX_ACTIONS) {
        let mut bytes = a.clone();
        bytes.resize(a.len() + 65_536, 0);
        let mut s = Source::new(&bytes);
        action(&mut l, &mut s);
        out.extend_from_slice(&bytes[..bytes.len() - s.remaining()]);
    }
    out
}

/// The model whose configuration a model account records.
fn model_of(config: &[u8]) -> Option<&'static Model> {
    let c = Config::read(config).ok()?;
    [models::tiny(), models::small()]
        .into_iter()
        .find(|m| m.config == c)
}

/// Sends an instruction, its accounts sometimes changed: a flag flipped,
/// an account replaced, dropped, added or repeated.
fn send(l: &mut Ledger, s: &mut Source, ix: Instruction, mut metas: Vec<Meta>) -> bool {
    if s.one_in(8) && !metas.is_empty() {
        let i = s.below(metas.len());
        match s.below(6) {
            0 => metas[i].signer ^= true,
            1 => metas[i].writable ^= true,
            2 => metas[i].key = s.below(KEYS),
            3 => {
                metas.pop();
            }
            4 => metas.push(meta(s.below(KEYS), s.bool(), s.bool())),
            _ => {
                let j = s.below(metas.len());
                metas[i].key = metas[j].key;
            }
        }
    }
    l.execute(&ix.encode(), &metas)
}

fn action(l: &mut Ledger, s: &mut Source) {
    match s.below(24) {
        0 => {
            let to = if s.one_in(4) {
                s.below(KEYS)
            } else {
                l.pick_free(s).unwrap_or(0)
            };
            let size = match s.below(6) {
                0 => config::LEN,
                1 => model::len(3),
                2 => weight::HEADER_LEN + s.below(4096),
                3 => run::HEADER_LEN + s.below(70_000),
                _ => s.below(512),
            };
            let lamports = match s.below(4) {
                0 => s.u64() % 10_000_000_000,
                _ => rent(size),
            };
            l.create_account(to, size, lamports);
        }
        1 => {
            let (from, to) = (s.below(KEYS), s.below(KEYS));
            let lamports = [890_880, 1, 10_000_000, s.u32() as u64][s.below(4)];
            l.transfer(from, to, lamports);
        }
        2..=4 => upload(l, s),
        5..=6 => open(l, s),
        7..=9 => advance(l, s),
        10 => {
            // Raw instruction data and any accounts.
            let data = s.string(80).to_vec();
            let metas = (0..s.below(7))
                .map(|_| meta(s.below(KEYS), s.bool(), s.bool()))
                .collect::<Vec<_>>();
            l.execute(&data, &metas);
        }
        n => single(l, s, n),
    }
}

/// A config account, created and initialized.
fn new_config(l: &mut Ledger, s: &mut Source) -> Option<usize> {
    let c = l.pick_free(s)?;
    if !l.create_account(c, config::LEN, rent(config::LEN)) {
        return None;
    }
    let admin = l.person(s);
    let allowance = if s.one_in(8) {
        s.u32()
    } else {
        runs::allowance(s)
    };
    let ok = send(
        l,
        s,
        Instruction::InitConfig { allowance },
        metas(&roles::INIT_CONFIG, &[c, admin]),
    );
    ok.then_some(c)
}

/// A whole upload: config (or an existing one), model, each section bound,
/// written (in pieces, sometimes wrong) and sealed, then the model sealed.
fn upload(l: &mut Ledger, s: &mut Source) {
    let model = if s.one_in(3) {
        models::small()
    } else {
        models::tiny()
    };
    let config = if s.bool() && (0..KEYS).any(|i| l.tagged(i, &CONFIG_TAG)) {
        l.pick_tagged(&CONFIG_TAG, s)
    } else {
        match new_config(l, s) {
            Some(c) => c,
            None => return,
        }
    };
    let Some(m) = l.pick_free(s) else { return };
    let count = model.section_count();
    if !l.create_account(m, model::len(count), rent(model::len(count))) {
        return;
    }
    let owner = l.person(s);
    let shared = model.metadata().config.shared_classifier;
    let royalty = [0, 1, 1_000, 5_000, u64::MAX / 3, s.u64()][s.below(6)];
    let flags = if s.one_in(16) {
        s.u32()
    } else if shared {
        FLAG_SHARED_CLASSIFIER
    } else {
        0
    };
    let zero_len = if s.one_in(16) {
        s.u64() % 100_000
    } else {
        model.zero().len() as u64
    };
    let cfg = model.config.to_bytes();
    let init = Instruction::InitModel {
        royalty,
        config: &cfg,
        flags,
        zero_len,
    };
    if !send(l, s, init, metas(&roles::INIT_MODEL, &[config, m, owner])) {
        return;
    }
    for section in 0..count {
        bind_write_seal(l, s, model, m, owner, section);
    }
    let zero = ModelAccount::read(&l.accounts[m].data)
        .ok()
        .and_then(|a| l.index_of(a.section_address(0)));
    let zero = zero.unwrap_or_else(|| s.below(KEYS));
    send(
        l,
        s,
        Instruction::SealModel,
        metas(&roles::SEAL_MODEL, &[m, zero, owner]),
    );
}

/// Binds a new weight account to a section, writes it and seals it.
fn bind_write_seal(
    l: &mut Ledger,
    s: &mut Source,
    model: &Model,
    m: usize,
    owner: usize,
    section: usize,
) {
    let Some(w) = l.pick_free(s) else { return };
    let bytes = model.section(section);
    let len = weight::HEADER_LEN + bytes.len();
    let len = if s.one_in(16) {
        len + s.below(16) - 8
    } else {
        len
    };
    if !l.create_account(w, len, rent(len)) {
        return;
    }
    let bind = Instruction::BindWeight {
        section: section as u32,
    };
    if !send(l, s, bind, metas(&roles::BIND_WEIGHT, &[m, w, owner])) {
        return;
    }
    // In one piece, or several; now and then a piece of wrong bytes.
    let pieces = 1 + s.below(3);
    let step = bytes.len().div_ceil(pieces);
    for (i, chunk) in bytes.chunks(step.max(1)).enumerate() {
        let wrong;
        let payload = if s.one_in(16) {
            wrong = s.string(64).to_vec();
            &wrong[..]
        } else {
            chunk
        };
        let write = Instruction::Write {
            offset: (i * step) as u64,
            bytes: payload,
        };
        send(l, s, write, metas(&roles::WRITE, &[m, w, owner]));
    }
    let digest = if s.one_in(16) {
        [s.u8(); 32]
    } else {
        section_digest(bytes)
    };
    let seal = Instruction::SealSection { digest: &digest };
    send(l, s, seal, metas(&roles::SEAL_SECTION, &[m, w, owner]));
}

/// Opens a run of a model: an account sized for its parameters and funded
/// with its rent and escrow (or not quite), a prompt sometimes staged.
fn open(l: &mut Ledger, s: &mut Source) {
    let prompt = runs::prompt(s);
    let m = l.pick_tagged(&MODEL_TAG, s);
    let (config_key, mut royalty, mut identity, model_config) =
        match ModelAccount::read(&l.accounts[m].data) {
            Ok(a) => (
                l.index_of(a.config_account()),
                a.royalty(),
                *a.model_identity(),
                Config::read(a.model_config()).ok(),
            ),
            Err(_) => (None, 0, [0; 32], None),
        };
    // Now and then an opener who saw another price or another model (a
    // zero byte, as the seeds pad with, is what it saw).
    match s.below(16) {
        14 => royalty = royalty.wrapping_add(1),
        15 => identity[s.below(32)] ^= 1,
        _ => {}
    }
    let config_key = config_key.unwrap_or_else(|| l.pick_tagged(&CONFIG_TAG, s));
    let shape = model_config.unwrap_or(curta_core::convert::TINY);
    let p = runs::params_for(prompt, &shape, s);
    let Some(r) = l.pick_free(s) else { return };
    let size = match state::state_size(shape, p.prompt.len(), p.max_tokens) {
        Ok(n) if !s.one_in(16) => run::HEADER_LEN + n,
        _ => run::HEADER_LEN + 128 + s.below(4096),
    };
    let escrow = royalty.saturating_mul(p.max_tokens as u64);
    // A crank fee now and then, its deposit sometimes short of the turns
    // and sometimes so large the sum overflows.
    let (crank_fee, crank_deposit) = match s.below(8) {
        0 => (s.u32() as u64, s.u32() as u64),
        1 => (s.u64(), u64::MAX - s.below(4) as u64),
        2 => (5_000, 5_000 * s.below(64) as u64),
        _ => (0, 0),
    };
    let held = escrow.min(1 << 40) + crank_deposit.min(1 << 40);
    let lamports = match s.below(8) {
        6 => rent(size) + held / 2,
        7 => rent(size) + held + s.u32() as u64,
        _ => rent(size) + held,
    };
    if !l.create_account(r, size, lamports) {
        return;
    }
    let opener = l.person(s);
    let mut inline = &p.prompt[..];
    let mut staged = 0u32;
    if !p.prompt.is_empty() && s.one_in(4) {
        let split = s.below(p.prompt.len() + 1);
        let stage = Instruction::WritePrompt {
            offset: 0,
            bytes: &p.prompt[..split],
        };
        if send(l, s, stage, metas(&roles::WRITE_PROMPT, &[r])) {
            staged = split as u32;
            inline = &p.prompt[split..];
        }
    }
    let ix = Instruction::OpenRun {
        max_tokens: p.max_tokens,
        temperature_q16: p.temperature_q16,
        seed: p.seed,
        royalty,
        model_identity: &identity,
        crank_fee,
        crank_deposit,
        staged,
        delivery_fee: 0,
        callback: &[],
        prompt: inline,
    };
    send(
        l,
        s,
        ix,
        metas(&roles::OPEN_RUN, &[config_key, m, r, opener]),
    );
}

/// The accounts a turn of run `r` sent by `cranker` needs, from the
/// ledger: its config, model, owner, section zero, the cranker and the
/// sections its plan names.
fn turn_accounts(l: &Ledger, r: usize, cranker: usize) -> Option<(Vec<Meta>, u64)> {
    let run = RunAccount::read(&l.accounts[r].data).ok()?;
    let m = l.index_of(run.model())?;
    let model = ModelAccount::read(&l.accounts[m].data).ok()?;
    let c = l.index_of(model.config_account())?;
    let allowance = ConfigAccount::read(&l.accounts[c].data).ok()?.allowance();
    let owner = l.index_of(model.owner())?;
    let zero = l.index_of(model.section_address(0))?;
    let config = Config::read(model.model_config()).ok()?;
    let state = StateBuffer::from_bytes(run.state());
    let turns = StateInfo::read(&state).ok()?.turns;
    let mut named = metas(&roles::TURN, &[c, m, r, owner, zero, cranker]);
    let weight = roles::TURN_WEIGHT;
    if let Ok(plan) = planner::plan_turn_with(config, &state, allowance) {
        for &i in &plan.sections[..plan.section_count] {
            if (i as usize) < model.section_count() {
                let key = l.index_of(model.section_address(i as usize));
                named.push(meta(key.unwrap_or(PAYER), weight.signer, weight.writable));
            }
        }
    }
    Some((named, turns))
}

/// Some turns of a run, with the accounts its plan names.
fn advance(l: &mut Ledger, s: &mut Source) {
    let turns = 1 + s.below(32);
    let r = l.pick_tagged(&RUN_TAG, s);
    // Usually the payer sends the turns; now and then anyone, the run's
    // own accounts included.
    let cranker = match s.below(4) {
        0 => s.below(KEYS),
        _ => PAYER,
    };
    for _ in 0..turns {
        let (metas, turns) = match turn_accounts(l, r, cranker) {
            Some(found) => found,
            None => (vec![meta(s.below(KEYS), false, true); 6], 0),
        };
        let expected_turns = match s.below(4) {
            0 => None,
            1 if s.one_in(4) => Some(turns.wrapping_add(1)),
            _ => Some(turns),
        };
        if !send(l, s, Instruction::Turn { expected_turns }, metas) {
            break;
        }
    }
}

/// One instruction of any kind, with the accounts found for it.
fn single(l: &mut Ledger, s: &mut Source, n: usize) {
    let model_key = l.pick_tagged(&MODEL_TAG, s);
    let model = ModelAccount::read(&l.accounts[model_key].data)
        .ok()
        .map(|m| {
            let owner = l.index_of(m.owner());
            let sections: Vec<Option<usize>> = (0..m.section_count())
                .map(|i| l.index_of(m.section_address(i)))
                .collect();
            (
                owner,
                sections,
                m.section_count(),
                m.model_config().to_vec(),
            )
        });
    let owner = model
        .as_ref()
        .and_then(|m| m.0)
        .unwrap_or_else(|| l.person(s));
    let weight_key = match &model {
        Some((_, sections, count, _)) if *count > 0 && !s.one_in(8) => {
            sections[s.below(*count)].unwrap_or_else(|| l.pick_tagged(&WEIGHT_TAG, s))
        }
        _ => l.pick_tagged(&WEIGHT_TAG, s),
    };
    match n % 13 {
        0 => {
            new_config(l, s);
        }
        1 | 2 => {
            let c = l.pick_tagged(&CONFIG_TAG, s);
            let admin = ConfigAccount::read(&l.accounts[c].data)
                .ok()
                .and_then(|a| l.index_of(a.admin()))
                .unwrap_or(PAYER);
            if n % 13 == 1 {
                let allowance = if s.one_in(4) {
                    s.u32()
                } else {
                    runs::allowance(s)
                };
                send(
                    l,
                    s,
                    Instruction::SetAllowance { allowance },
                    metas(&roles::SET_ALLOWANCE, &[c, admin]),
                );
            } else if s.one_in(4) {
                // Closed by its admin, or refused; its models' runs then
                // stop, and every account stays closable.
                send(
                    l,
                    s,
                    Instruction::CloseConfig,
                    metas(&roles::CLOSE_CONFIG, &[c, admin]),
                );
            } else {
                let new = l.person(s);
                send(
                    l,
                    s,
                    Instruction::SetAdmin,
                    metas(&roles::SET_ADMIN, &[c, admin, new]),
                );
            }
        }
        3 => {
            // A bound section's weight account closed and, while the model
            // is writing, bound again, written and sealed.
            let closed = send(
                l,
                s,
                Instruction::CloseWeight,
                metas(&roles::CLOSE_WEIGHT, &[model_key, weight_key, owner]),
            );
            let shape = model.as_ref().and_then(|m| model_of(&m.3));
            if let (true, Some(shape), Some((_, _, count, _))) = (closed, shape, &model) {
                let section = s.below(*count);
                bind_write_seal(l, s, shape, model_key, owner, section);
            }
        }
        4 => {
            send(
                l,
                s,
                Instruction::CloseModel,
                metas(&roles::CLOSE_MODEL, &[model_key, owner]),
            );
        }
        5 => {
            let r = l.pick_tagged(&RUN_TAG, s);
            let opener = RunAccount::read(&l.accounts[r].data)
                .ok()
                .and_then(|a| l.index_of(a.opener()))
                .unwrap_or(PAYER);
            send(
                l,
                s,
                Instruction::CloseRun,
                metas(&roles::CLOSE_RUN, &[r, opener]),
            );
        }
        6 => {
            let a = (0..KEYS).find(|&i| {
                l.accounts[i].owner == PROGRAM
                    && l.accounts[i].data.get(..8).is_none_or(|t| t == [0; 8])
            });
            let a = a.unwrap_or_else(|| s.below(KEYS));
            let to = l.person(s);
            send(
                l,
                s,
                Instruction::Reclaim,
                vec![meta(a, true, true), meta(to, false, true)],
            );
        }
        7 => {
            // A write anywhere in a section, of its own bytes or others.
            let payload = s.string(300).to_vec();
            let offset = s.below(70_000) as u64;
            let write = Instruction::Write {
                offset,
                bytes: &payload,
            };
            send(
                l,
                s,
                write,
                vec![
                    meta(model_key, false, false),
                    meta(weight_key, false, true),
                    meta(owner, true, false),
                ],
            );
        }
        8 => {
            let digest = match WeightAccount::read(&l.accounts[weight_key].data) {
                Ok(w) if !s.one_in(4) => section_digest(w.bytes()),
                _ => [s.u8(); 32],
            };
            let seal = Instruction::SealSection { digest: &digest };
            send(
                l,
                s,
                seal,
                vec![
                    meta(model_key, false, true),
                    meta(weight_key, false, true),
                    meta(owner, true, false),
                ],
            );
        }
        9 => {
            let zero = model
                .as_ref()
                .and_then(|m| m.1.first().copied().flatten())
                .unwrap_or(weight_key);
            send(
                l,
                s,
                Instruction::SealModel,
                vec![
                    meta(model_key, false, true),
                    meta(zero, false, false),
                    meta(owner, true, false),
                ],
            );
        }
        10 => {
            // Binding a section: a new account, or one already in use.
            let w = if s.bool() {
                match l.pick_free(s) {
                    Some(w) => {
                        let size = weight::HEADER_LEN + s.below(70_000);
                        l.create_account(w, size, rent(size));
                        w
                    }
                    None => return,
                }
            } else {
                s.below(KEYS)
            };
            let section = s.below(5) as u32;
            send(
                l,
                s,
                Instruction::BindWeight { section },
                vec![
                    meta(model_key, false, true),
                    meta(w, true, true),
                    meta(owner, true, false),
                ],
            );
        }
        11 => {
            let r = l.pick_tagged(&RUN_TAG, s);
            let cranker = s.below(KEYS);
            let (mut metas, turns) =
                turn_accounts(l, r, cranker).unwrap_or((vec![meta(r, false, true)], 0));
            // The wrong accounts: one more, one fewer, or another's.
            match s.below(3) {
                0 => metas.push(meta(s.below(KEYS), false, false)),
                1 => {
                    metas.pop();
                }
                _ => {
                    let i = s.below(metas.len());
                    metas[i].key = s.below(KEYS);
                }
            }
            send(
                l,
                s,
                Instruction::Turn {
                    expected_turns: Some(turns),
                },
                metas,
            );
        }
        _ => {
            let r = if s.bool() {
                l.pick_tagged(&RUN_TAG, s)
            } else {
                s.below(KEYS)
            };
            let bytes = s.string(40).to_vec();
            let offset = [0, 1, 1000, 1024, s.u32()][s.below(5)];
            send(
                l,
                s,
                Instruction::WritePrompt {
                    offset,
                    bytes: &bytes,
                },
                vec![meta(r, true, true)],
            );
        }
    }
}
