//! Uploading a model: its account, a weight account bound to each section,
//! every section written in parallel chunks, each sealed, then the model.
//!
//! Resumable by construction: the model's and weight accounts' keys are
//! derived (`keys::model`, `keys::weight`), and every step reads the chain
//! first and does only what is missing. Chunks are written only where the
//! account's bytes differ from the artifact's (a fresh account is zero, so
//! zero chunks are never sent), sections already sealed are checked
//! against the artifact's digests, and an interrupted process's in-flight
//! transactions are waited for before any of that (`journal`).

use std::sync::Arc;
use std::time::Instant;

use curta_core::protocol::{self, model, weight, WeightAccount};
use futures::future::try_join_all;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::artifact::Artifact;
use crate::bail;
use crate::errors::{Error, Result};
use crate::funds::Needed;
use crate::instructions::{ModelKeys, ModelParams};
use crate::keys;
use crate::model::{parse_model, read_config, ModelInfo};
use crate::plans;
use crate::progress::Progress;
use crate::rpc::Cluster;
use crate::sender::{self, Job, Summary};

/// What an upload did.
#[derive(Clone, Debug)]
pub struct Uploaded {
    pub model: Pubkey,
    pub config: Pubkey,
    pub sections: usize,
    pub artifact_len: usize,
    /// Whether the model was already sealed with these weights.
    pub already: bool,
    pub bytes_written: u64,
    /// Lamports the model and its weight accounts hold: their rent, which
    /// `model close` returns to the owner.
    pub rent: u64,
    /// Weight accounts bound to the model.
    pub weight_accounts: usize,
    pub summary: Summary,
    pub seconds: f64,
}

/// What a whole upload spends, from nothing: the rent of the model and of
/// a weight account per section, and the fees of every transaction when
/// each chunk is written (zero chunks are not, so fees come in at most).
pub async fn estimate(cluster: &Cluster, artifact: &Artifact) -> Result<Needed> {
    let m = artifact.metadata();
    let count = m.section_count();
    let mut rent = cluster.rent(model::len(count)).await?;
    let stand_in = ModelKeys {
        config_account: Pubkey::new_from_array([1; 32]),
        model: Pubkey::new_from_array([2; 32]),
        owner: cluster.payer_key(),
        weights: vec![Pubkey::new_from_array([3; 32]); count],
        royalty: 0,
        identity: [0; 32],
    };
    let chunk = plans::write_chunk(&cluster.program_id, &stand_in, &stand_in.owner);
    // The model's creation and each binding: two signatures; each write,
    // seal_section call and seal_model: one.
    let mut signatures = 2 + 1;
    for i in 0..count {
        let len = m.section_len(i);
        rent += cluster.rent(weight::HEADER_LEN + len).await?;
        signatures += 2 + len.div_ceil(chunk) + plans::seal_calls(len);
    }
    let fees = signatures as u64 * cluster.lamports_per_signature().await?;
    Ok(Needed::new().with("rent", rent).with("fees", fees))
}

fn landed(summary: &mut Summary, slot: u64, fee: u64) {
    summary.add(&Summary {
        transactions: 1,
        fees: fee,
        first_slot: slot,
        last_slot: slot,
    });
}

/// Uploads `artifact` as a model bound to `config`, owned by the signer,
/// with `royalty` lamports per generated token; resumes an earlier upload
/// of the same artifact, config and royalty.
pub async fn upload(
    cluster: &Cluster,
    artifact: &Artifact,
    config: &Pubkey,
    royalty: u64,
    in_flight: usize,
) -> Result<Uploaded> {
    let started = Instant::now();
    let program = cluster.program_id;
    let payer = cluster.payer_key();
    let per_signature = cluster.lamports_per_signature().await?;
    read_config(cluster, config).await?;
    let m = artifact.metadata();
    let count = m.section_count();
    let mut out = Uploaded {
        model: Pubkey::default(),
        config: *config,
        sections: count,
        artifact_len: artifact.bytes.len(),
        already: false,
        bytes_written: 0,
        rent: 0,
        weight_accounts: 0,
        summary: Summary::default(),
        seconds: 0.0,
    };
    let uploader = plans::Uploader {
        program: &program,
        payer: &payer,
        owner: &payer,
    };
    let model_kp = keys::model(&cluster.payer, &program, config, &artifact.sha256, royalty);
    let model_key = model_kp.pubkey();
    out.model = model_key;

    // The model account.
    let params = ModelParams {
        royalty,
        config: m.config,
        flags: artifact.flags(),
        zero_len: m.section_len(0) as u64,
    };
    let mut info = match cluster.account(&model_key).await? {
        None => {
            let lamports = cluster.rent(model::len(count)).await?;
            let create =
                plans::create_model(uploader, config, &model_key, &params, count, lamports);
            let l = cluster
                .send_and_confirm(&create.what, &create.instructions, &[&model_kp], true)
                .await?;
            landed(&mut out.summary, l.slot, 2 * per_signature);
            read(cluster, &model_key).await?
        }
        Some(_) => read(cluster, &model_key).await?,
    };
    check_model(&info, artifact, config, &payer)?;
    if info.status == model::SEALED {
        out.already = true;
        (out.rent, out.weight_accounts) = held(cluster, &info).await?;
        out.seconds = started.elapsed().as_secs_f64();
        return Ok(out);
    }

    // A weight account bound to every section that has none.
    let mut binds = vec![];
    for (i, s) in info.sections.iter().enumerate() {
        if s.weight.is_some() {
            continue;
        }
        let w = Arc::new(keys::weight(&cluster.payer, &model_key, i as u32));
        let len = s.len as usize;
        let lamports = cluster.rent(weight::HEADER_LEN + len).await?;
        let bind = plans::bind_weight(uploader, &model_key, i as u32, &w.pubkey(), len, lamports);
        binds.push(Job::of(bind, vec![w]));
    }
    if !binds.is_empty() {
        let progress = Progress::new("binding weight accounts", binds.len() as u64, "sections");
        let s = sender::send_all(cluster, &binds, send_opts(in_flight), Some(&progress)).await?;
        progress.finish();
        out.summary.add(&s);
        info = read(cluster, &model_key).await?;
    }
    let keys = info.keys.clone();

    // Every chunk the weight accounts do not hold yet, until they hold all.
    let chunk = plans::write_chunk(&program, &keys, &payer);
    for round in 0..3 {
        let mut jobs = vec![];
        for i in 0..count {
            let section = artifact.section(i);
            let data = cluster.data(&keys.weights[i]).await?;
            let w = WeightAccount::read(&data).map_err(|_| {
                Error::new(format!(
                    "{} (section {i}) is not a weight account",
                    keys.weights[i]
                ))
            })?;
            if w.model() != model_key.as_array() || w.section() != i as u32 {
                bail!(
                    "{} is bound to section {i} of model {model_key} but says otherwise",
                    keys.weights[i]
                );
            }
            if w.sealed() {
                if info.sections[i].digest != Some(protocol::section_digest(section)) {
                    bail!(
                        "section {i} of model {model_key} is sealed with other bytes than the \
                         artifact's; close the model (`curta model close`) and upload again"
                    );
                }
                continue;
            }
            let writes = plans::writes(&program, &keys, i, section, w.bytes(), chunk);
            jobs.extend(writes.into_iter().map(|p| Job::of(p, vec![])));
        }
        if jobs.is_empty() {
            break;
        }
        if round == 2 {
            bail!(
                "{} chunk(s) still differ after writing them three times",
                jobs.len()
            );
        }
        let bytes: u64 = jobs.iter().map(|j| j.units).sum();
        let progress = Progress::new("writing weights", bytes, "bytes");
        let s = sender::send_all(cluster, &jobs, send_opts(in_flight), Some(&progress)).await?;
        progress.finish();
        out.summary.add(&s);
        out.bytes_written += bytes;
    }

    // Seal every section (they lock different accounts: all at once), then
    // the model.
    let seals = (0..count)
        .filter(|&i| info.sections[i].digest.is_none())
        .map(|i| seal_section(cluster, &keys, i, artifact.section(i)));
    for s in try_join_all(seals).await? {
        out.summary.add(&s);
    }
    let seal = plans::seal_model(&program, &keys);
    let l = cluster
        .send_and_confirm(&seal.what, &seal.instructions, &[], true)
        .await?;
    landed(&mut out.summary, l.slot, per_signature);
    info = read(cluster, &model_key).await?;
    if info.status != model::SEALED {
        bail!(
            "model {model_key} is still {} after sealing",
            info.status_name()
        );
    }
    (out.rent, out.weight_accounts) = held(cluster, &info).await?;
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

/// The lamports a model and its weight accounts hold, and how many weight
/// accounts it has.
async fn held(cluster: &Cluster, info: &ModelInfo) -> Result<(u64, usize)> {
    let mut keys = vec![info.keys.model];
    keys.extend(info.sections.iter().filter_map(|s| s.weight));
    let lamports = cluster.accounts(&keys).await?;
    Ok((
        lamports.iter().flatten().map(|a| a.lamports).sum(),
        keys.len() - 1,
    ))
}

fn send_opts(in_flight: usize) -> sender::Options {
    sender::Options {
        in_flight,
        preflight: false,
    }
}

async fn read(cluster: &Cluster, model: &Pubkey) -> Result<ModelInfo> {
    parse_model(model, &cluster.data(model).await?)
}

/// Checks that a model found at the derived address is this upload's.
fn check_model(
    info: &ModelInfo,
    artifact: &Artifact,
    config: &Pubkey,
    payer: &Pubkey,
) -> Result<()> {
    let m = artifact.metadata();
    let model = info.keys.model;
    if info.keys.owner != *payer {
        bail!(
            "model {model} is owned by {}, not the signer",
            info.keys.owner
        );
    }
    if info.keys.config_account != *config {
        bail!(
            "model {model} is bound to config {}",
            info.keys.config_account
        );
    }
    if info.config != m.config
        || info.flags != artifact.flags()
        || info.sections.len() != m.section_count()
        || info.sections[0].len != m.section_len(0) as u64
    {
        bail!("model {model} was created for another artifact");
    }
    if info.status == model::RETIRED {
        bail!("model {model} is retired (a weight account was closed): close it and upload again");
    }
    if info.status == model::SEALED {
        for (i, s) in info.sections.iter().enumerate() {
            if s.digest != Some(protocol::section_digest(artifact.section(i))) {
                bail!("model {model} is sealed with another section {i}");
            }
        }
    }
    Ok(())
}

/// Sends `seal_section` until the section is sealed (`plans::seal_section`).
async fn seal_section(
    cluster: &Cluster,
    keys: &ModelKeys,
    i: usize,
    bytes: &[u8],
) -> Result<Summary> {
    let digest = protocol::section_digest(bytes);
    let per_signature = cluster.lamports_per_signature().await?;
    let mut summary = Summary::default();
    let calls = plans::seal_calls(bytes.len());
    for call in 0..calls + 2 {
        let data = cluster.data(&keys.weights[i]).await?;
        if WeightAccount::read(&data).is_ok_and(|w| w.sealed()) {
            return Ok(summary);
        }
        let seal = plans::seal_section(&cluster.program_id, keys, i, &digest, call);
        let l = cluster
            .send_and_confirm(&seal.what, &seal.instructions, &[], true)
            .await?;
        landed(&mut summary, l.slot, per_signature);
    }
    bail!(
        "section {i} is not sealed after {} seal_section calls",
        calls + 2
    )
}
