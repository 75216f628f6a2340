//! The upload as the client core plans it (`client::upload::next`), driven
//! against a simulated chain that does what the program does with each
//! step, from nothing and from every state an interrupted upload leaves:
//! the steps come in order, each chunk is written once, and the model
//! ends sealed with the artifact's sections.

use curta_core::client::upload::{estimate, next, Step, Upload};
use curta_core::convert::{
    convert, open_artifact, synthetic_checkpoint, synthetic_tokenizer, TINY,
};
use curta_core::protocol::{
    model, section_digest, weight, ModelAccountMut, ModelInit, WeightAccountMut,
};

const CONFIG: [u8; 32] = [1; 32];
const OWNER: [u8; 32] = [2; 32];
const MODEL: [u8; 32] = [3; 32];

/// The model and weight accounts, as the program leaves them.
#[derive(Default)]
struct Chain {
    model: Option<Vec<u8>>,
    weights: Vec<Vec<u8>>,
}

impl Chain {
    /// Takes `step` as the program would, the writes only partly when
    /// `cut` (an interrupted upload); returns the bytes written.
    fn take(&mut self, artifact: &[u8], step: &Step, cut: bool) -> usize {
        let m = open_artifact(artifact).unwrap();
        let mut written = 0;
        match step {
            Step::CreateModel { len } => {
                let mut data = vec![0; *len];
                let layout = m.layout;
                let init = ModelInit {
                    royalty: 0,
                    config: &m.config,
                    layout: &layout,
                    flags: m.flags(),
                    zero_len: m.section_len(0) as u64,
                };
                ModelAccountMut(&mut data).init(&CONFIG, &OWNER, &init);
                self.model = Some(data);
            }
            Step::Bind(sections) => {
                let data = self.model.as_mut().unwrap();
                for &(i, len) in sections {
                    let mut w = vec![0; len];
                    WeightAccountMut(&mut w).init(&MODEL, i);
                    ModelAccountMut(data).set_section_address(i as usize, &[10 + i as u8; 32]);
                    self.weights.push(w);
                }
                ModelAccountMut(data).set_bound(self.weights.len() as u32);
            }
            Step::Write(chunks) => {
                let keep = if cut { chunks.len() / 2 } else { chunks.len() };
                for c in &chunks[..keep] {
                    let bytes =
                        &m.section_in(artifact, c.section as usize)[c.offset..c.offset + c.len];
                    let w = &mut self.weights[c.section as usize];
                    let at = weight::HEADER_LEN + c.offset;
                    w[at..at + c.len].copy_from_slice(bytes);
                    written += c.len;
                }
            }
            Step::Seal(sections) => {
                for s in sections {
                    let i = s.section as usize;
                    let bytes = m.section_in(artifact, i);
                    assert_eq!(
                        s.digest,
                        section_digest(bytes),
                        "the digest named is the section's"
                    );
                    WeightAccountMut(&mut self.weights[i]).set_seal(bytes.len() as u64, &s.digest);
                    ModelAccountMut(self.model.as_mut().unwrap()).set_section_digest(i, &s.digest);
                }
            }
            Step::SealModel => {
                ModelAccountMut(self.model.as_mut().unwrap()).set_status(model::SEALED);
            }
            Step::Done => {}
        }
        written
    }

    fn ask(&self, u: &Upload) -> Result<Step, String> {
        let weights: Vec<Option<&[u8]>> = self.weights.iter().map(|w| Some(&w[..])).collect();
        let all_bound = self.model.is_some() && !weights.is_empty();
        next(
            u,
            self.model.as_deref(),
            if all_bound { &weights } else { &[] },
        )
    }
}

#[test]
fn an_upload_goes_in_order_resumes_and_writes_each_chunk_once() {
    let ck = synthetic_checkpoint(&TINY, 3).unwrap();
    let artifact = convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap();
    let u = Upload {
        artifact: &artifact,
        config: &CONFIG,
        owner: &OWNER,
        model: &MODEL,
        chunk: 986,
    };
    let m = open_artifact(&artifact).unwrap();
    let total: usize = (0..m.section_count()).map(|i| m.section_len(i)).sum();
    // Interrupted mid-write once, then resumed by asking again.
    let (mut chain, mut kinds, mut written) = (Chain::default(), vec![], 0);
    for round in 0.. {
        let step = chain.ask(&u).unwrap();
        let kind = match &step {
            Step::CreateModel { .. } => "create",
            Step::Bind(_) => "bind",
            Step::Write(_) => "write",
            Step::Seal(_) => "seal",
            Step::SealModel => "seal model",
            Step::Done => "done",
        };
        kinds.push(kind);
        if step == Step::Done {
            break;
        }
        written += chain.take(
            &artifact,
            &step,
            kind == "write" && kinds.iter().filter(|k| **k == "write").count() == 1,
        );
        assert!(round < 10, "{kinds:?}");
    }
    assert_eq!(
        kinds,
        [
            "create",
            "bind",
            "write",
            "write",
            "seal",
            "seal model",
            "done"
        ]
    );
    // Zero chunks are never sent, and no chunk twice.
    assert!(written <= total, "{written} of {total}");
    // Asked again, a sealed model is done, and refused for another owner.
    assert_eq!(chain.ask(&u), Ok(Step::Done));
    let other = Upload {
        owner: &[9; 32],
        ..u
    };
    assert!(chain.ask(&other).unwrap_err().contains("not the signer"));
    // A weight account that says it belongs to another section is refused.
    let mut swapped = Chain {
        model: chain.model.clone(),
        weights: chain.weights.clone(),
    };
    ModelAccountMut(swapped.model.as_mut().unwrap()).set_status(model::WRITING);
    swapped.weights.swap(0, 1);
    assert!(swapped.ask(&u).unwrap_err().contains("but says otherwise"));
}

#[test]
fn the_estimate_is_what_an_upload_from_nothing_sends() {
    let ck = synthetic_checkpoint(&TINY, 3).unwrap();
    let artifact = convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap();
    let chunk = 986;
    let u = Upload {
        artifact: &artifact,
        config: &CONFIG,
        owner: &OWNER,
        model: &MODEL,
        chunk,
    };
    let m = open_artifact(&artifact).unwrap();
    let e = estimate(&m, chunk);
    let (mut chain, mut lens, mut binds, mut writes, mut seals) =
        (Chain::default(), vec![], 0, 0, 0);
    loop {
        let step = chain.ask(&u).unwrap();
        match &step {
            Step::CreateModel { len } => lens.push(*len),
            Step::Bind(b) => {
                binds += b.len();
                lens.extend(b.iter().map(|&(_, len)| len));
            }
            Step::Write(chunks) => writes += chunks.len(),
            Step::Seal(s) => seals += s.iter().map(|s| s.calls).sum::<usize>(),
            Step::SealModel => {}
            Step::Done => break,
        }
        chain.take(&artifact, &step, false);
    }
    assert_eq!(e.account_lens, lens, "the accounts it pays rent for");
    // Every chunk, zero ones too, which the upload skips.
    let chunks: usize = (0..m.section_count())
        .map(|i| m.section_len(i).div_ceil(chunk))
        .sum();
    assert_eq!(e.writes, chunks);
    assert!(writes <= e.writes, "{writes} written of {}", e.writes);
    assert_eq!(e.transactions, 1 + binds + e.writes + seals + 1);
    assert_eq!(e.signatures, 2 + 2 * binds + e.writes + seals + 1);
}
