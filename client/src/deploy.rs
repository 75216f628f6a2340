//! Deploying the program through the upgradeable loader (loader-v3) over
//! RPC, as `solana program deploy` does: a buffer account, the `.so`
//! written into it in parallel chunks, then `DeployWithMaxDataLen` (or
//! `Upgrade` for a program already there); and verifying that a deployed
//! program is a local build, byte for byte.
//!
//! The buffer's key is derived from the signer and the build's SHA-256
//! (`keys::buffer`), so an interrupted deploy, run again, finds the buffer
//! and writes only the chunks that are not there yet.
//!
//! A cluster with SIMD-0500 active deploys SBPF v3 programs only: a v0
//! build is refused before any lamports move, in words (docs/sbf.md).

use solana_keypair::Keypair;
use solana_loader_v3_interface::instruction as loader;
use solana_loader_v3_interface::state::UpgradeableLoaderState;
use solana_pubkey::Pubkey;
use solana_signer::Signer;
use std::sync::Arc;
use std::time::{Duration, Instant};

use curta_core::sha256::sha256;

use crate::bail;
use crate::cluster::Cluster;
use crate::errors::{Error, Result};
use crate::keys;
use crate::output::hex;
use crate::progress::Progress;
use crate::sender::{self, Job, Summary};
use crate::transaction_fit;

/// What a deploy did.
#[derive(Clone, Debug)]
pub struct Deployed {
    pub program_id: Pubkey,
    pub so_sha256: [u8; 32],
    pub so_len: usize,
    /// `deployed`, `upgraded` or `unchanged`.
    pub action: &'static str,
    pub buffer: Option<Pubkey>,
    pub bytes_written: u64,
    pub summary: Summary,
    pub seconds: f64,
}

/// The loader's header before a program's bytes in its ProgramData account.
pub const PROGRAMDATA_HEADER: usize = UpgradeableLoaderState::size_of_programdata_metadata();
/// The loader's header before the bytes in a buffer account.
pub const BUFFER_HEADER: usize = UpgradeableLoaderState::size_of_buffer_metadata();

/// SIMD-0500's feature, `disable_sbpf_v0_v1_v2_deployment` (agave-feature-set
/// 4.4): once active, the loader deploys and upgrades SBPF v3 programs only.
pub const V3_ONLY_FEATURE: Pubkey =
    solana_pubkey::pubkey!("B8JJXCy5amZyWG9r7EnUYLwzXSXTxG7GZ1qZ1qggo83g");

/// The SBPF version an ELF declares in its header's `e_flags`: 0 for v0
/// (what `cargo build-sbf` made before `--arch v3`), 3 for v3.
pub fn sbpf_version(so: &[u8]) -> Result<u32> {
    // e_flags: after e_ident (16), e_type, e_machine (2 each), e_version (4),
    // e_entry, e_phoff and e_shoff (8 each) of an ELF64 header.
    const E_FLAGS: std::ops::Range<usize> = 48..52;
    match (so.get(..4), so.get(E_FLAGS)) {
        (Some(b"\x7fELF"), Some(flags)) => {
            Ok(u32::from_le_bytes(flags.try_into().expect("four bytes")))
        }
        _ => bail!(
            "the program file is not an ELF ({} bytes; an SBF program starts with \\x7fELF and \
             a 64-byte header)",
            so.len()
        ),
    }
}

/// Whether the cluster deploys SBPF v3 only: SIMD-0500's feature account
/// exists, is the Feature program's, and holds an activation slot (its
/// data is bincode's `Option<u64>`, `activated_at`: a 1 first when set).
pub async fn deploys_v3_only(cluster: &Cluster) -> Result<bool> {
    let Some(account) = cluster.account(&V3_ONLY_FEATURE).await? else {
        return Ok(false);
    };
    Ok(account.owner == solana_sdk_ids::feature::id() && account.data.first() == Some(&1))
}

/// Why a build of SBPF `version` cannot be deployed on a v3-only cluster,
/// and what to do.
pub fn v3_only_refusal(version: u32) -> String {
    format!(
        "this cluster deploys only SBPF v3 programs (SIMD-0500: its feature \
         disable_sbpf_v0_v1_v2_deployment, {V3_ONLY_FEATURE}, is active), and this build is SBPF \
         v{version} (ELF e_flags {version}). Build the v3 program with `make build-sbf` (or \
         `cargo build-sbf --arch v3` with Agave's platform tools) and deploy that; a v0 build \
         (`make build-sbf-v0`) deploys only where that feature is not active"
    )
}

/// A failed deploy or upgrade of a pre-v3 build, with the SIMD-0500 reason
/// when the loader gave it (the feature turned on after `deploy` looked).
fn deploy_failure(e: Error, version: u32) -> Error {
    // solana-sbpf's ElfError::UnsupportedSBPFVersion, in the loader's log.
    const UNSUPPORTED: &str =
        "Detected sbpf_version required by the executable which are not enabled";
    if version < 3 && e.to_string().contains(UNSUPPORTED) {
        e.then(v3_only_refusal(version))
    } else {
        e
    }
}

fn loader_id() -> Pubkey {
    solana_sdk_ids::bpf_loader_upgradeable::id()
}

fn loader_state(data: &[u8], address: &Pubkey) -> Result<UpgradeableLoaderState> {
    bincode::deserialize(data)
        .map_err(|_| Error::new(format!("{address} holds no upgradeable-loader state")))
}

/// A deployed program: its ProgramData's address, upgrade authority and
/// bytes (the program, padded with zeros to its capacity).
pub struct Program {
    pub programdata: Pubkey,
    pub authority: Option<Pubkey>,
    pub slot: u64,
    pub bytes: Vec<u8>,
}

/// The program at `program_id`, or `None` when there is no account there.
pub async fn read_program(cluster: &Cluster, program_id: &Pubkey) -> Result<Option<Program>> {
    let Some(account) = cluster.account(program_id).await? else {
        return Ok(None);
    };
    if account.owner != loader_id() {
        bail!(
            "{program_id} is not an upgradeable program (its owner is {}; curta deploys with the \
             upgradeable loader)",
            account.owner
        );
    }
    let UpgradeableLoaderState::Program {
        programdata_address,
    } = loader_state(&account.data, program_id)?
    else {
        bail!("{program_id} is a loader account but not a program");
    };
    let data = cluster.data(&programdata_address).await?;
    let UpgradeableLoaderState::ProgramData {
        slot,
        upgrade_authority_address,
    } = loader_state(&data, &programdata_address)?
    else {
        bail!("{programdata_address} is not {program_id}'s program data");
    };
    Ok(Some(Program {
        programdata: programdata_address,
        authority: upgrade_authority_address,
        slot,
        bytes: data.get(PROGRAMDATA_HEADER..).unwrap_or_default().to_vec(),
    }))
}

/// How a deployed program compares with a local `.so`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    pub equal: bool,
    /// The deployed bytes over the local file's length.
    pub deployed_sha256: [u8; 32],
    pub local_sha256: [u8; 32],
    pub deployed_capacity: usize,
    pub local_len: usize,
    /// Offsets where they differ: the first, and how many bytes differ.
    pub first_difference: Option<usize>,
    pub differing_bytes: usize,
}

/// Compares program bytes (padded to their capacity) with a `.so`: equal
/// when the `.so` is a prefix and the rest is zero.
pub fn compare(deployed: &[u8], so: &[u8]) -> Comparison {
    let n = so.len().min(deployed.len());
    let mut differing = so.len() - n;
    let mut first = (deployed.len() < so.len()).then_some(n);
    for (i, (a, b)) in deployed[..n].iter().zip(so).enumerate() {
        if a != b {
            differing += 1;
            first = Some(first.map_or(i, |f| f.min(i)));
        }
    }
    for (i, b) in deployed[n..].iter().enumerate() {
        if *b != 0 {
            differing += 1;
            first = Some(first.map_or(n + i, |f| f.min(n + i)));
        }
    }
    Comparison {
        equal: differing == 0,
        deployed_sha256: sha256(&deployed[..n]),
        local_sha256: sha256(so),
        deployed_capacity: deployed.len(),
        local_len: so.len(),
        first_difference: first,
        differing_bytes: differing,
    }
}

impl Comparison {
    /// "equal" or where they differ, in words.
    pub fn describe(&self) -> String {
        if self.equal {
            return format!(
                "equal: the deployed program is the local build, byte for byte (sha256 {})",
                hex(&self.local_sha256)
            );
        }
        let mut out = format!(
            "different: {} byte(s) differ, the first at offset {}; deployed sha256 {} (over {} \
             bytes), local {}",
            self.differing_bytes,
            self.first_difference.unwrap_or(0),
            hex(&self.deployed_sha256),
            self.local_len.min(self.deployed_capacity),
            hex(&self.local_sha256)
        );
        if self.deployed_capacity < self.local_len {
            out.push_str(&format!(
                "; the deployed program holds {} bytes, the local build {}",
                self.deployed_capacity, self.local_len
            ));
        }
        out
    }
}

/// The loader-v3 `Write` instructions, each in one transaction with the
/// payer as the buffer's authority, for the chunks of `so` the buffer
/// does not hold yet.
fn write_jobs(cluster: &Cluster, buffer: &Pubkey, so: &[u8], held: &[u8]) -> Vec<Job> {
    let payer = cluster.payer_key();
    let chunk = transaction_fit::most_that_fit(so.len(), &payer, |n| {
        vec![loader::write(buffer, &payer, 0, vec![0; n])]
    });
    curta_core::client::upload::missing_chunks(so, held, chunk)
        .map(|(offset, len)| Job {
            what: format!("writing the program into buffer {buffer} at offset {offset}"),
            instructions: vec![loader::write(
                buffer,
                &payer,
                offset as u32,
                so[offset..offset + len].to_vec(),
            )],
            signers: vec![],
            units: len as u64,
        })
        .collect()
}

/// Deploys `so` at the program id (the program's keypair is needed for a
/// first deploy, which creates the program account), or upgrades the
/// program there, or does nothing when it already holds these bytes.
pub async fn deploy(
    cluster: &Cluster,
    so: &[u8],
    program_keypair: Option<&Keypair>,
    in_flight: usize,
) -> Result<Deployed> {
    let started = Instant::now();
    let program_id = cluster.program_id;
    let so_sha256 = sha256(so);
    let payer = cluster.payer_key();
    let mut out = Deployed {
        program_id,
        so_sha256,
        so_len: so.len(),
        action: "unchanged",
        buffer: None,
        bytes_written: 0,
        summary: Summary::default(),
        seconds: 0.0,
    };
    let existing = read_program(cluster, &program_id).await?;
    if let Some(p) = &existing {
        if compare(&p.bytes, so).equal {
            out.seconds = started.elapsed().as_secs_f64();
            return Ok(out);
        }
        if p.authority != Some(payer) {
            bail!(
                "program {program_id} holds other bytes and its upgrade authority is {}, not the \
                 signer {payer}",
                p.authority
                    .map_or("none (it is final)".to_string(), |a| a.to_string())
            );
        }
    } else {
        match program_keypair {
            Some(k) if k.pubkey() == program_id => {}
            _ => bail!(
                "a first deploy needs the program's keypair for {program_id} (the file {} or \
                 --program-keypair)",
                crate::cli_config::PROGRAM_KEYPAIR
            ),
        }
    }
    // Before the buffer: a build the loader would refuse costs nothing.
    let version = sbpf_version(so)?;
    if version < 3 && deploys_v3_only(cluster).await? {
        bail!("nothing was sent: {}", v3_only_refusal(version));
    }

    // The buffer: found from an earlier attempt, or created.
    let buffer = Arc::new(keys::buffer(&cluster.payer, &program_id, &so_sha256));
    let buffer_key = buffer.pubkey();
    out.buffer = Some(buffer_key);
    match cluster.account(&buffer_key).await? {
        Some(account) => {
            match loader_state(&account.data, &buffer_key)? {
                UpgradeableLoaderState::Buffer { authority_address }
                    if authority_address == Some(payer) => {}
                _ => bail!("{buffer_key} is not a loader buffer of the signer's"),
            }
            if account.data.len() != UpgradeableLoaderState::size_of_buffer(so.len()) {
                bail!("buffer {buffer_key} is not sized for this build");
            }
        }
        None => {
            let lamports = cluster
                .rent(UpgradeableLoaderState::size_of_buffer(so.len()))
                .await?;
            let ixs = loader::create_buffer(&payer, &buffer_key, &payer, lamports, so.len())
                .map_err(|e| Error::new(format!("building the buffer's creation: {e}")))?;
            let landed = cluster
                .send_and_confirm("creating the program buffer", &ixs, &[&buffer], true)
                .await?;
            record(&mut out.summary, cluster, landed.slot, 2).await?;
        }
    }

    // Every chunk the buffer does not hold, in parallel, until it holds all.
    for _ in 0..3 {
        let held = cluster.data(&buffer_key).await?;
        let held = held.get(BUFFER_HEADER..).unwrap_or_default();
        let jobs = write_jobs(cluster, &buffer_key, so, held);
        if jobs.is_empty() {
            break;
        }
        let bytes: u64 = jobs.iter().map(|j| j.units).sum();
        let progress = Progress::new("writing the program", bytes, "bytes");
        let opts = sender::Options {
            in_flight,
            preflight: false,
        };
        let s = sender::send_all(cluster, &jobs, opts, Some(&progress)).await?;
        progress.finish();
        out.summary.add(&s);
        out.bytes_written += bytes;
    }
    let now = cluster.data(&buffer_key).await?;
    if now.get(BUFFER_HEADER..) != Some(so) {
        bail!("buffer {buffer_key} still differs from the program after writing it three times");
    }

    let landed = match existing {
        None => {
            let program_keypair = program_keypair
                .ok_or_else(|| Error::new("a first deploy needs the program's keypair"))?;
            let lamports = cluster
                .rent(UpgradeableLoaderState::size_of_program())
                .await?;
            let ixs = loader::deploy_with_max_program_len(
                &payer,
                &program_id,
                &buffer_key,
                &payer,
                lamports,
                so.len(),
            )
            .map_err(|e| Error::new(format!("building the deploy instruction: {e}")))?;
            out.action = "deployed";
            let landed = cluster
                .send_and_confirm("deploying the program", &ixs, &[program_keypair], true)
                .await
                .map_err(|e| deploy_failure(e, version))?;
            record(&mut out.summary, cluster, landed.slot, 2).await?;
            landed
        }
        Some(p) => {
            let mut ixs = vec![];
            if p.bytes.len() < so.len() {
                let more = (so.len() - p.bytes.len()) as u32;
                ixs.push(loader::extend_program_checked(
                    &program_id,
                    &payer,
                    Some(&payer),
                    more,
                ));
            }
            ixs.push(loader::upgrade(&program_id, &buffer_key, &payer, &payer));
            out.action = "upgraded";
            let landed = cluster
                .send_and_confirm("upgrading the program", &ixs, &[], true)
                .await
                .map_err(|e| deploy_failure(e, version))?;
            record(&mut out.summary, cluster, landed.slot, 1).await?;
            landed
        }
    };
    // A program deployed in a slot can be called from the next one.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.slot().await? <= landed.slot && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}

async fn record(
    summary: &mut Summary,
    cluster: &Cluster,
    slot: u64,
    signatures: u64,
) -> Result<()> {
    let fee = signatures * cluster.lamports_per_signature().await?;
    summary.add(&Summary {
        transactions: 1,
        fees: fee,
        first_slot: slot,
        last_slot: slot,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 header's first 52 bytes with these `e_flags`.
    fn elf_header(flags: u32) -> Vec<u8> {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(48, 0);
        elf.extend(flags.to_le_bytes());
        elf
    }

    #[test]
    fn sbpf_version_from_the_elf_header() {
        assert_eq!(sbpf_version(&elf_header(0)).unwrap(), 0);
        assert_eq!(sbpf_version(&elf_header(3)).unwrap(), 3);
        let short = sbpf_version(&elf_header(3)[..50]).unwrap_err().to_string();
        assert!(short.contains("not an ELF (50 bytes"), "{short}");
        let mut not_elf = elf_header(3);
        not_elf[0] = b'#';
        assert!(sbpf_version(&not_elf).is_err());
    }

    #[test]
    fn a_pre_v3_build_refused_by_the_loader_is_explained() {
        let log = "deploying the program: refused in simulation: instruction 1: invalid account \
                   data for instruction; log: Detected sbpf_version required by the executable \
                   which are not enabled";
        let explained = deploy_failure(Error::new(log), 0).to_string();
        assert!(explained.starts_with(log), "{explained}");
        assert!(
            explained.contains(
                "This cluster deploys only SBPF v3 programs (SIMD-0500: its feature \
                 disable_sbpf_v0_v1_v2_deployment, B8JJXCy5amZyWG9r7EnUYLwzXSXTxG7GZ1qZ1qggo83g, \
                 is active), and this build is SBPF v0 (ELF e_flags 0). Build the v3 program with \
                 `make build-sbf`"
            ),
            "{explained}"
        );
        // A v3 build's failure, or another failure, is left as it was.
        assert_eq!(deploy_failure(Error::new(log), 3).to_string(), log);
        let other = "deploying the program: blockhash not found";
        assert_eq!(deploy_failure(Error::new(other), 0).to_string(), other);
    }

    #[test]
    fn deployed_bytes_against_a_local_build() {
        let so = b"\x7fELF program".to_vec();
        let mut padded = so.clone();
        padded.extend([0; 20]);
        let c = compare(&padded, &so);
        assert!(c.equal, "{c:?}");
        assert_eq!(c.deployed_sha256, sha256(&so));
        assert!(c.describe().starts_with("equal"));

        let mut changed = padded.clone();
        changed[3] ^= 1;
        changed[5] ^= 1;
        let c = compare(&changed, &so);
        assert!(!c.equal);
        assert_eq!((c.first_difference, c.differing_bytes), (Some(3), 2));
        assert!(c
            .describe()
            .starts_with("different: 2 byte(s) differ, the first at offset 3"));

        // Junk past the program, or a program too short, differ too.
        let mut tail = padded.clone();
        tail[so.len() + 4] = 1;
        assert_eq!(compare(&tail, &so).first_difference, Some(so.len() + 4));
        let c = compare(&so[..4], &so);
        assert_eq!(
            (c.first_difference, c.differing_bytes),
            (Some(4), so.len() - 4)
        );
        assert!(c.describe().contains("the deployed program holds 4 bytes"));
    }
}
