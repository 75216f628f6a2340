//! Models and configs as the chain holds them: reading and checking their
//! accounts, and fetching a model's weights back as an artifact.

use curta_core::format::Config;
use curta_core::protocol::{self, ConfigAccount, Mismatch, ModelAccount, WeightAccount};
use solana_pubkey::Pubkey;

use crate::artifact::Artifact;
use crate::bail;
use crate::cluster::Cluster;
use crate::errors::{Error, Result};
use crate::instructions::ModelKeys;

/// A config account, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigInfo {
    pub address: Pubkey,
    pub admin: Pubkey,
    pub allowance: u32,
}

/// One section of a model, as its model account records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// The bound weight account, `None` while unbound.
    pub weight: Option<Pubkey>,
    pub len: u64,
    /// The digest recorded when it was sealed.
    pub digest: Option<[u8; 32]>,
}

/// A model account, read.
#[derive(Clone, Debug)]
pub struct ModelInfo {
    pub keys: ModelKeys,
    pub config: Config,
    pub royalty: u64,
    pub status: u32,
    pub flags: u32,
    pub bound: u32,
    pub sealed_count: u32,
    pub sections: Vec<SectionInfo>,
    /// The account's bytes, as read: what the client core's checks take.
    pub data: Vec<u8>,
}

impl ModelInfo {
    pub fn status_name(&self) -> &'static str {
        status_name(self.status)
    }
}

pub fn status_name(status: u32) -> &'static str {
    match status {
        protocol::model::WRITING => "writing",
        protocol::model::SEALED => "sealed",
        protocol::model::RETIRED => "retired",
        _ => "unknown",
    }
}

fn mismatch(what: &str, address: &Pubkey, m: Mismatch) -> crate::errors::Error {
    crate::errors::Error::new(match m {
        Mismatch::Kind => format!("{address} is not a curta {what} account"),
        Mismatch::Size => format!("{address} is a curta {what} account of the wrong size"),
    })
}

/// Checks that an account exists and the program owns it.
fn owned(
    cluster: &Cluster,
    address: &Pubkey,
    what: &str,
    account: Option<solana_account::Account>,
) -> Result<Vec<u8>> {
    let Some(account) = account else {
        bail!("there is no {what} account at {address} on {}", cluster.url);
    };
    if account.owner == solana_sdk_ids::system_program::id() {
        bail!("{address} is a wallet (a System account), not a curta {what} account");
    }
    if account.owner != cluster.program_id {
        bail!(
            "{address} belongs to the program {}, not the curta program {} (pass --program-id?)",
            account.owner,
            cluster.program_id
        );
    }
    Ok(account.data)
}

pub async fn read_config(cluster: &Cluster, address: &Pubkey) -> Result<ConfigInfo> {
    let data = owned(cluster, address, "config", cluster.account(address).await?)?;
    let c = ConfigAccount::read(&data).map_err(|m| mismatch("config", address, m))?;
    Ok(ConfigInfo {
        address: *address,
        admin: Pubkey::new_from_array(*c.admin()),
        allowance: c.allowance(),
    })
}

/// Reads a model from its account's data.
pub fn parse_model(address: &Pubkey, data: &[u8]) -> Result<ModelInfo> {
    let m = ModelAccount::read(data).map_err(|e| mismatch("model", address, e))?;
    let config = m.config().map_err(|e| {
        crate::errors::Error::from(e).context(format!("model {address}'s configuration"))
    })?;
    let zero = [0u8; 32];
    let sections = (0..m.section_count())
        .map(|i| SectionInfo {
            weight: (m.section_address(i) != &zero)
                .then(|| Pubkey::new_from_array(*m.section_address(i))),
            len: m.section_len(i),
            digest: (m.section_digest(i) != &zero).then(|| *m.section_digest(i)),
        })
        .collect();
    Ok(ModelInfo {
        keys: ModelKeys::read(address, &m),
        config,
        royalty: m.royalty(),
        status: m.status(),
        flags: m.flags(),
        bound: m.bound(),
        sealed_count: m.sealed_count(),
        sections,
        data: data.to_vec(),
    })
}

pub async fn read_model(cluster: &Cluster, address: &Pubkey) -> Result<ModelInfo> {
    let data = owned(cluster, address, "model", cluster.account(address).await?)?;
    parse_model(address, &data)
}

/// One of a signer's models, with what it and its weight accounts hold
/// (what closing it returns).
pub struct HeldModel {
    pub model: ModelInfo,
    pub weight_accounts: usize,
    pub lamports: u64,
}

/// Every model `owner` owns, sorted by address.
pub async fn owned_by(cluster: &Cluster, owner: &Pubkey) -> Result<Vec<HeldModel>> {
    use protocol::{model, weight, MODEL_TAG, WEIGHT_TAG};
    let filters: Vec<(usize, &[u8])> =
        vec![(model::TAG, &MODEL_TAG), (model::OWNER, owner.as_array())];
    // A model account is small; the slice only bounds it.
    let whole = model::len(u16::MAX as usize);
    let mut out = vec![];
    for (key, data, lamports) in cluster.program_accounts_held(&filters, whole).await? {
        let Ok(info) = parse_model(&key, &data) else {
            continue;
        };
        let filters: Vec<(usize, &[u8])> =
            vec![(weight::TAG, &WEIGHT_TAG), (weight::MODEL, key.as_array())];
        let weights = cluster.program_accounts_held(&filters, 0).await?;
        out.push(HeldModel {
            model: info,
            weight_accounts: weights.len(),
            lamports: lamports + weights.iter().map(|(_, _, l)| l).sum::<u64>(),
        });
    }
    out.sort_by_key(|h| h.model.keys.model);
    Ok(out)
}

/// A sealed model's weights, fetched from its weight accounts and checked
/// against the digests the model recorded when each section was sealed.
pub async fn fetch_artifact(cluster: &Cluster, model: &ModelInfo) -> Result<Artifact> {
    if model.status != protocol::model::SEALED {
        bail!(
            "model {} is {}, not sealed: its weights are not final",
            model.keys.model,
            model.status_name()
        );
    }
    let mut sections = Vec::with_capacity(model.sections.len());
    for (i, s) in model.sections.iter().enumerate() {
        let (Some(weight), Some(digest)) = (s.weight, s.digest) else {
            bail!("section {i} of model {} is not sealed", model.keys.model);
        };
        let data = owned(cluster, &weight, "weight", cluster.account(&weight).await?)?;
        let w = WeightAccount::read(&data).map_err(|e| mismatch("weight", &weight, e))?;
        if protocol::section_digest(w.bytes()) != digest {
            bail!(
                "weight account {weight} (section {i}) does not hash to the digest model {} \
                 recorded",
                model.keys.model
            );
        }
        sections.push(w.bytes().to_vec());
    }
    let sections: Vec<&[u8]> = sections.iter().map(Vec::as_slice).collect();
    let name = model.keys.model.to_string();
    Artifact::new(curta_core::client::artifact::assemble(&name, &sections).map_err(Error::new)?)
}

/// Checks that a local artifact is the model's, by the client core's rule
/// (`client::artifact::check`): the same sections, flags and
/// configuration, sealed with the same digests.
pub fn check_artifact(model: &ModelInfo, artifact: &Artifact) -> Result<()> {
    let account =
        ModelAccount::read(&model.data).map_err(|e| mismatch("model", &model.keys.model, e))?;
    curta_core::client::artifact::check(&model.keys.model.to_string(), &account, &artifact.bytes)
        .map_err(Error::new)
}
