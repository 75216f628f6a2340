//! Runs: opening one (its account created with its rent and escrow, the
//! prompt staged first when it is long), reading one, closing one.
//!
//! A run's key is derived from the signer, the model and the parameters
//! (`keys::run`): the same question gives the same answer, so asking it
//! again finds the run already open (or half opened by a process that was
//! interrupted) instead of paying for a second one.

use curta_core::client::opening::{self, Found, Opening, Step};
use curta_core::protocol::run::{self, CrankFee};
use curta_core::protocol::{RunAccount, RUN_TAG};
use curta_core::state::{Header, StateLayout};
use curta_core::{output_text, StateInfo};
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::bail;
use crate::cluster::Cluster;
use crate::errors::{Error, Result};
use crate::funds::{self, Needed};
use crate::instructions as ix;
use crate::keys::{self, RunSeed};
use crate::model::ModelInfo;
use crate::output::sol;
use crate::params::Params;
use crate::sender::Summary;
use crate::transaction_fit;

/// What opening did.
#[derive(Clone, Debug)]
pub struct Opened {
    pub run: Pubkey,
    /// False when the run was open already (nothing was sent).
    pub opened_now: bool,
    pub account_len: usize,
    /// Lamports put in the run: its rent, the escrow and the crank deposit.
    pub deposit: u64,
    pub escrow: u64,
    pub crank: CrankFee,
    pub summary: Summary,
}

/// Refuses, before anything is sent, a run whose prompt section zero
/// cannot tokenize (`params::check_context` over section zero, read from
/// its weight account: all a prompt needs). The context refuses nothing: a
/// run that reaches it completes there.
async fn fits_context(cluster: &Cluster, model: &ModelInfo, params: &Params) -> Result<()> {
    let zero = &model.sections[0];
    let Some(weight) = zero.weight else {
        return Ok(());
    };
    let Some(account) = cluster.account(&weight).await? else {
        return Ok(());
    };
    let start = curta_core::format::WEIGHT_HEADER_LEN;
    let Some(zero) = account.data.get(start..start + zero.len as usize) else {
        return Ok(());
    };
    crate::params::check_context(model.config, zero, &params.as_run_params())
}

/// Opens the run of `params` on `model` (or finds it open). The signer's
/// balance must cover the run's rent and escrow, the opening's fees and
/// `fees_after`, what the caller goes on to spend on the run.
pub async fn open(
    cluster: &Cluster,
    model: &ModelInfo,
    params: &Params,
    crank: &CrankFee,
    label: &str,
    fees_after: u64,
) -> Result<Opened> {
    params.check(&model.config)?;
    if model.status != curta_core::protocol::model::SEALED {
        bail!(
            "model {} is {}, not sealed: runs cannot open",
            model.keys.model,
            model.status_name()
        );
    }
    fits_context(cluster, model, params).await?;
    let seed = RunSeed {
        model: model.keys.model.as_array(),
        prompt: &params.prompt,
        max_tokens: params.max_tokens,
        temperature_q16: params.temperature_q16,
        seed: params.seed,
        label,
    };
    let run_kp = keys::run(&cluster.payer, &seed);
    let run_key = run_kp.pubkey();
    let payer = cluster.payer_key();
    let opening = Opening {
        program: cluster.program_id.as_array(),
        run: run_key.as_array(),
        model: model.keys.model.as_array(),
        opener: payer.as_array(),
        config: &model.config,
        royalty: model.royalty,
        prompt_len: params.prompt.len(),
        max_tokens: params.max_tokens,
        crank_deposit: crank.deposit,
    };
    let len = opening::account_len(&opening).map_err(Error::new)?;
    let deposit = opening::deposit(&opening, cluster.rent(len).await?).map_err(Error::new)?;
    let mut out = Opened {
        run: run_key,
        opened_now: true,
        account_len: len,
        deposit: deposit.total,
        escrow: deposit.escrow,
        crank: *crank,
        summary: Summary::default(),
    };
    let p = params.as_run_params();
    let existing = cluster.account(&run_key).await?;
    let held = existing.as_ref().map(|a| Found {
        owner: a.owner.as_array(),
        lamports: a.lamports,
        data: &a.data,
    });
    let step = opening::next(&opening, held.as_ref()).map_err(Error::new)?;
    if step == Step::Opened {
        out.opened_now = false;
        return Ok(out);
    }
    // Create the account, or finish opening the one an interrupted attempt
    // created.
    let create = step.locks().then(|| {
        solana_system_interface::instruction::create_account(
            &payer,
            &run_key,
            deposit.total,
            len as u64,
            &cluster.program_id,
        )
    });
    let txs = transaction_fit::open_transactions(
        &cluster.program_id,
        &model.keys,
        &run_key,
        &payer,
        &payer,
        (&p, crank),
        create,
    );
    // Rent and escrow are locked when the account is created: an account
    // an interrupted attempt created holds them already.
    let locks = step.locks();
    let per_signature = cluster.lamports_per_signature().await?;
    let needed = Needed::new()
        .with("rent", if locks { deposit.rent } else { 0 })
        .with("escrow", if locks { deposit.escrow } else { 0 })
        .with("crank deposit", if locks { deposit.crank } else { 0 })
        .with("fees", 2 * per_signature * txs.len() as u64 + fees_after);
    funds::ensure(cluster, "this run", &needed).await?;
    let _leaves_open = crate::interrupt::LeavesOpen::say(format!(
        "the run {run_key} may be half open, holding up to {}: running the same command again \
         finishes opening it",
        sol(out.deposit)
    ));
    for (i, tx) in txs.iter().enumerate() {
        let what = if i + 1 == txs.len() {
            "opening the run"
        } else {
            "staging the prompt"
        };
        let landed = cluster.send_and_confirm(what, tx, &[&run_kp], true).await?;
        out.summary.add(&Summary {
            transactions: 1,
            fees: 2 * per_signature,
            first_slot: landed.slot,
            last_slot: landed.slot,
        });
    }
    Ok(out)
}

/// A run account, read.
#[derive(Clone, Debug)]
pub struct RunView {
    pub run: Pubkey,
    pub model: Pubkey,
    pub opener: Pubkey,
    pub lamports: u64,
    pub royalty: u64,
    pub deposited: u64,
    pub escrow: u64,
    pub paid: u64,
    /// The crank fee, its deposit, and what turns' senders were paid.
    pub crank: CrankFee,
    pub crank_paid: u64,
    pub prompt: Vec<u8>,
    pub max_tokens: u32,
    pub temperature_q16: u32,
    /// The seed the opener chose (not the sampler's running state).
    pub seed: u64,
    /// The turn allowance every turn is planned under: its config's at
    /// opening (0: opened by an older program; it cannot turn).
    pub allowance: u32,
    pub info: StateInfo,
    pub text: Vec<u8>,
}

/// Reads a run (its model's configuration places the text).
pub async fn show(cluster: &Cluster, run_key: &Pubkey) -> Result<(RunView, ModelInfo)> {
    let Some(account) = cluster.account(run_key).await? else {
        bail!(
            "there is no run account at {run_key} on {} (closed?)",
            cluster.url
        );
    };
    if account.owner != cluster.program_id {
        bail!(
            "{run_key} is not an account of the curta program {}",
            cluster.program_id
        );
    }
    let r = RunAccount::read(&account.data)
        .map_err(|_| Error::new(format!("{run_key} is not an opened run")))?;
    let model_key = Pubkey::new_from_array(*r.model());
    let model = model_of_run(cluster, run_key, &model_key, account.lamports).await?;
    let state = r.state();
    let h = Header::read_checked(&model.config, state)
        .map_err(|e| Error::from(e).context(format!("run {run_key}'s state")))?;
    let layout = StateLayout::new(&model.config, h.prompt_len as usize, h.max_tokens)?;
    let view = RunView {
        run: *run_key,
        model: model_key,
        opener: Pubkey::new_from_array(*r.opener()),
        lamports: account.lamports,
        royalty: r.royalty(),
        deposited: r.deposited(),
        escrow: r.escrow(),
        paid: r.paid(),
        crank: CrankFee {
            fee: r.crank_fee(),
            deposit: r.crank_deposit(),
        },
        crank_paid: r.crank_paid(),
        prompt: state[layout.prompt..layout.prompt + h.prompt_len as usize].to_vec(),
        max_tokens: h.max_tokens,
        temperature_q16: h.temperature,
        seed: r.seed(),
        allowance: r.allowance(),
        info: StateInfo::read(state)?,
        text: output_text(model.config, state).to_vec(),
    };
    Ok((view, model))
}

/// An opened run that has turns left, as `getProgramAccounts` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub run: Pubkey,
    pub model: Pubkey,
    pub turns: u64,
    /// What its next turn pays its sender (the fee, or the deposit's rest).
    pub crank_payment: u64,
    /// The turn allowance recorded at opening, which bounds what its turns
    /// ask (0: an older program's run, which cannot turn).
    pub allowance: u32,
}

/// Every opened run of the program (of `model`, when given), its header
/// and state header alone, as `getProgramAccounts` finds them.
async fn run_headers(cluster: &Cluster, model: Option<&Pubkey>) -> Result<Vec<(Pubkey, Vec<u8>)>> {
    let mut filters: Vec<(usize, &[u8])> = vec![(run::TAG, &RUN_TAG)];
    if let Some(m) = model {
        filters.push((run::MODEL, m.as_array()));
    }
    let slice = run::HEADER_LEN + curta_core::state::HEADER_LEN;
    cluster.program_accounts(&filters, slice).await
}

/// Every opened run of the program (of `model`, when given) that is not
/// complete, read from its header and state cursor alone; the best paid
/// first (`curta crank` takes them in its own order: `fleet`).
pub async fn pending(cluster: &Cluster, model: Option<&Pubkey>) -> Result<Vec<Pending>> {
    let mut out = vec![];
    for (key, data) in run_headers(cluster, model).await? {
        let Ok(r) = RunAccount::read(&data) else {
            continue;
        };
        let Ok(info) = StateInfo::read(r.state()) else {
            continue;
        };
        if info.complete {
            continue;
        }
        out.push(Pending {
            run: key,
            model: Pubkey::new_from_array(*r.model()),
            turns: info.turns,
            crank_payment: r.next_crank_payment(),
            allowance: r.allowance(),
        });
    }
    out.sort_by_key(|p| (std::cmp::Reverse(p.crank_payment), p.run));
    Ok(out)
}

/// Every finished run of the program (of `model`, when given) that names a
/// callback, so is still to be delivered, with its delivery fee; the best
/// paid first.
pub async fn deliverable(cluster: &Cluster, model: Option<&Pubkey>) -> Result<Vec<(Pubkey, u64)>> {
    let mut out = vec![];
    for (key, data) in run_headers(cluster, model).await? {
        let Ok(r) = RunAccount::read(&data) else {
            continue;
        };
        let complete = StateInfo::read(r.state()).is_ok_and(|i| i.complete);
        if complete && r.callback_at() != 0 {
            out.push((key, r.delivery_fee()));
        }
    }
    out.sort_by_key(|(run, fee)| (std::cmp::Reverse(*fee), *run));
    Ok(out)
}

/// A run the signer opened, as `getProgramAccounts` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    pub run: Pubkey,
    pub model: Pubkey,
    pub turns: u64,
    pub generated: u32,
    pub complete: bool,
    /// Its lamports: rent and unspent escrow, which closing returns.
    pub lamports: u64,
}

/// Every run `opener` opened whose account is still open, complete or
/// not, sorted by address.
pub async fn opened_by(cluster: &Cluster, opener: &Pubkey) -> Result<Vec<Held>> {
    let filters: Vec<(usize, &[u8])> = vec![(run::TAG, &RUN_TAG), (run::OPENER, opener.as_array())];
    let slice = run::HEADER_LEN + curta_core::state::HEADER_LEN;
    let mut out = vec![];
    for (key, data, lamports) in cluster.program_accounts_held(&filters, slice).await? {
        let info = StateInfo::read(&data[run::HEADER_LEN.min(data.len())..]).ok();
        let model = data
            .get(run::MODEL..run::MODEL + 32)
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(Pubkey::new_from_array);
        if let (Some(info), Some(model)) = (info, model) {
            out.push(Held {
                run: key,
                model,
                turns: info.turns,
                generated: info.generated,
                complete: info.complete,
                lamports,
            });
        }
    }
    out.sort_by_key(|h| h.run);
    Ok(out)
}

/// A run's model; when it is gone (closed under the run), says that the
/// run can only be closed, and what closing it returns.
pub async fn model_of_run(
    cluster: &Cluster,
    run_key: &Pubkey,
    model_key: &Pubkey,
    lamports: u64,
) -> Result<ModelInfo> {
    match cluster.account(model_key).await? {
        Some(a) if a.owner == cluster.program_id => crate::model::parse_model(model_key, &a.data),
        _ => bail!(
            "run {run_key}'s model {model_key} was closed: the run can only be closed now, and \
             `curta run close {run_key}` returns its {} to the opener",
            sol(lamports)
        ),
    }
}

/// Closes a run, its lamports back to the opener; returns them.
pub async fn close(cluster: &Cluster, run_key: &Pubkey) -> Result<(u64, Summary)> {
    let account = cluster.account(run_key).await?;
    let held = account.as_ref().map(|a| Found {
        owner: a.owner.as_array(),
        lamports: a.lamports,
        data: &a.data,
    });
    let recovered = opening::close(
        cluster.program_id.as_array(),
        run_key.as_array(),
        cluster.payer_key().as_array(),
        held.as_ref(),
    )
    .map_err(Error::new)?;
    let i = ix::close_run(&cluster.program_id, run_key, &cluster.payer_key());
    let landed = cluster
        .send_and_confirm("closing the run", &[i], &[], true)
        .await?;
    let fee = cluster.lamports_per_signature().await?;
    Ok((
        recovered,
        Summary {
            transactions: 1,
            fees: fee,
            first_slot: landed.slot,
            last_slot: landed.slot,
        },
    ))
}
