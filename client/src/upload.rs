//! Uploading a model: its account, a weight account bound to each section,
//! every section written in parallel chunks, each sealed, then the model.
//!
//! Resumable by construction: the model's and weight accounts' keys are
//! derived (`keys::model`, `keys::weight`), and each step is the client
//! core's answer to what the chain holds (`curta_core::client::upload`,
//! which the SDK runs too): chunks are written only where the account's
//! bytes differ from the artifact's, sections already sealed are checked
//! against the artifact's digests, and an interrupted process's in-flight
//! transactions are waited for before any of that (`journal`). This file
//! does the I/O: reading the accounts, sending each step.

use std::sync::Arc;
use std::time::Instant;

use curta_core::client::packing::{self, Version};
use curta_core::client::upload::{self as core_upload, Step};
use curta_core::protocol::{weight, WeightAccount};
use futures::future::try_join_all;
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::Cluster;
use crate::errors::{Error, Result};
use crate::funds::Needed;
use crate::instructions::{ModelKeys, ModelParams};
use crate::keys;
use crate::model::{parse_model, read_config, ModelInfo};
use crate::plans;
use crate::progress::Progress;
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
    let e = core_upload::estimate(&artifact.metadata(), packing::write_chunk(Version::Legacy));
    let mut rent = 0;
    for len in e.account_lens {
        rent += cluster.rent(len).await?;
    }
    let fees = e.signatures as u64 * cluster.lamports_per_signature().await?;
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
    let model_kp = keys::model(&cluster.payer, &program, config, &artifact.sha256, royalty);
    let model_key = model_kp.pubkey();
    let mut out = Uploaded {
        model: model_key,
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
    let plan = core_upload::Upload {
        artifact: &artifact.bytes,
        config: config.as_array(),
        owner: payer.as_array(),
        model: model_key.as_array(),
        chunk: packing::write_chunk(Version::Legacy),
    };
    let (mut acted, mut write_rounds) = (false, 0);
    loop {
        let model_data = cluster.account(&model_key).await?.map(|a| a.data);
        let info = match &model_data {
            Some(data) => Some(parse_model(&model_key, data)?),
            None => None,
        };
        // The weight accounts' bytes, once every section has one.
        let bound: Vec<Pubkey> = info
            .iter()
            .flat_map(|i| i.sections.iter().filter_map(|s| s.weight))
            .collect();
        let weights = match bound.len() == count {
            true => cluster.accounts(&bound).await?,
            false => vec![],
        };
        let weights: Vec<Option<&[u8]>> = weights
            .iter()
            .map(|a| a.as_ref().map(|a| &a.data[..]))
            .collect();
        let step = core_upload::next(&plan, model_data.as_deref(), &weights).map_err(Error::new)?;
        match step {
            Step::CreateModel { len } => {
                let params = ModelParams {
                    royalty,
                    config: m.config,
                    flags: artifact.flags(),
                    zero_len: m.section_len(0) as u64,
                };
                let lamports = cluster.rent(len).await?;
                let create =
                    plans::create_model(uploader, config, &model_key, &params, count, lamports);
                let l = cluster
                    .send_and_confirm(&create.what, &create.instructions, &[&model_kp], true)
                    .await?;
                landed(&mut out.summary, l.slot, 2 * per_signature);
            }
            Step::Bind(sections) => {
                let mut binds = vec![];
                for (i, space) in sections {
                    let w = Arc::new(keys::weight(&cluster.payer, &model_key, i));
                    let len = space - weight::HEADER_LEN;
                    let lamports = cluster.rent(space).await?;
                    let bind =
                        plans::bind_weight(uploader, &model_key, i, &w.pubkey(), len, lamports);
                    binds.push(Job::of(bind, vec![w]));
                }
                let progress =
                    Progress::new("binding weight accounts", binds.len() as u64, "sections");
                let s = sender::send_all(cluster, &binds, send_opts(in_flight), Some(&progress))
                    .await?;
                progress.finish();
                out.summary.add(&s);
            }
            Step::Write(chunks) => {
                if write_rounds == 3 {
                    bail!(
                        "{} chunk(s) still differ after writing them three times",
                        chunks.len()
                    );
                }
                write_rounds += 1;
                let keys = model_keys(info.as_ref())?;
                let jobs: Vec<Job> = chunks
                    .iter()
                    .map(|c| {
                        let i = c.section as usize;
                        let bytes = &artifact.section(i)[c.offset..c.offset + c.len];
                        Job::of(plans::write(&program, keys, i, c.offset, bytes), vec![])
                    })
                    .collect();
                let bytes: u64 = jobs.iter().map(|j| j.units).sum();
                let progress = Progress::new("writing weights", bytes, "bytes");
                let s =
                    sender::send_all(cluster, &jobs, send_opts(in_flight), Some(&progress)).await?;
                progress.finish();
                out.summary.add(&s);
                out.bytes_written += bytes;
            }
            Step::Seal(sections) => {
                // They lock different accounts: all at once.
                let keys = model_keys(info.as_ref())?;
                let seals = sections.iter().map(|s| seal_section(cluster, keys, s));
                for s in try_join_all(seals).await? {
                    out.summary.add(&s);
                }
            }
            Step::SealModel => {
                let seal = plans::seal_model(&program, model_keys(info.as_ref())?);
                let l = cluster
                    .send_and_confirm(&seal.what, &seal.instructions, &[], true)
                    .await?;
                landed(&mut out.summary, l.slot, per_signature);
            }
            Step::Done => {
                out.already = !acted;
                let info = info.ok_or_else(|| Error::new("the model is gone"))?;
                (out.rent, out.weight_accounts) = held(cluster, &info).await?;
                out.seconds = started.elapsed().as_secs_f64();
                return Ok(out);
            }
        }
        acted = true;
    }
}

/// The keys of a model account as read.
fn model_keys(info: Option<&ModelInfo>) -> Result<&ModelKeys> {
    info.map(|i| &i.keys)
        .ok_or_else(|| Error::new("the model account is gone"))
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

/// Sends `seal_section` until the section is sealed: the calls the core
/// counts (`curta_core::client::upload::seal_calls`), and two more should
/// one be lost.
async fn seal_section(
    cluster: &Cluster,
    keys: &ModelKeys,
    s: &core_upload::Seal,
) -> Result<Summary> {
    let i = s.section as usize;
    let per_signature = cluster.lamports_per_signature().await?;
    let mut summary = Summary::default();
    for call in 0..s.calls + 2 {
        let data = cluster.data(&keys.weights[i]).await?;
        if WeightAccount::read(&data).is_ok_and(|w| w.sealed()) {
            return Ok(summary);
        }
        let seal = plans::seal_section(&cluster.program_id, keys, i, &s.digest, call);
        let l = cluster
            .send_and_confirm(&seal.what, &seal.instructions, &[], true)
            .await?;
        landed(&mut summary, l.slot, per_signature);
    }
    bail!(
        "section {i} is not sealed after {} seal_section calls",
        s.calls + 2
    )
}
