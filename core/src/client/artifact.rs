//! A model's artifact against what the chain holds: whether a local
//! artifact is a model's (`check`, before a client replays or cranks with
//! it), and the artifact put back together from the sections its weight
//! accounts hold (`assemble`). Every client asks these, so an artifact is
//! a model's by one rule: the same sections, flags and configuration, each
//! section sealed with its digest.

use crate::convert::open_artifact;
use crate::format::{ChargeTable, Metadata};
use crate::protocol::{section_digest, ModelAccount};
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

fn table(flags: u32) -> &'static str {
    match ChargeTable::from_flags(flags) {
        ChargeTable::Specification => "specification",
        ChargeTable::Measured => "measured",
    }
}

/// Checks that `artifact` is the model's whose account is `model`, named
/// `name` in the words: its section count, flags (the charge table and the
/// classifier among them), configuration and every section's digest, in
/// that order. A section the model has not sealed matches nothing.
pub fn check(name: &str, model: &ModelAccount, artifact: &[u8]) -> Result<(), String> {
    let m = open_artifact(artifact).map_err(|e| format!("the artifact does not open ({e})"))?;
    if m.section_count() != model.section_count() {
        return Err(format!(
            "the artifact has {} sections, model {name} {}",
            m.section_count(),
            model.section_count()
        ));
    }
    let (flags, theirs) = (m.flags(), model.flags());
    if flags != theirs {
        return Err(format!(
            "the artifact's flags are {flags} (the {} charge table), model {name}'s {theirs} \
             (the {} table): not its artifact",
            table(flags),
            table(theirs)
        ));
    }
    if Ok(m.config) != model.config() {
        return Err(format!(
            "the artifact's configuration is not model {name}'s"
        ));
    }
    for i in 0..m.section_count() {
        if section_digest(m.section_in(artifact, i)) != *model.section_digest(i) {
            return Err(format!(
                "section {i} of the artifact is not model {name}'s sealed section (its digest \
                 differs)"
            ));
        }
    }
    Ok(())
}

/// The artifact from its sections in order, as the weight accounts hold
/// them: section zero first, whose table places the others. Each section
/// is checked against the digest the model sealed it with before this is
/// asked (`check` then holds for the result).
pub fn assemble(name: &str, sections: &[&[u8]]) -> Result<Vec<u8>, String> {
    let Some(zero) = sections.first() else {
        return Err(format!("model {name} has no sections"));
    };
    let m = Metadata::new(zero)
        .map_err(|e| format!("section zero of model {name} does not read ({e})"))?;
    if m.section_count() != sections.len() {
        return Err(format!(
            "section zero of model {name} lists {} sections, the model holds {}",
            m.section_count(),
            sections.len()
        ));
    }
    let mut bytes = vec![0u8; m.artifact_len()];
    for (i, s) in sections.iter().enumerate() {
        let (offset, len) = (m.section_offset(i), m.section_len(i));
        if s.len() != len {
            return Err(format!(
                "section {i} of model {name} holds {} bytes, section zero says {len}",
                s.len()
            ));
        }
        bytes[offset..offset + len].copy_from_slice(s);
    }
    open_artifact(&bytes)
        .map_err(|e| format!("model {name}'s sections do not make an artifact ({e})"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{convert, synthetic_checkpoint, synthetic_tokenizer, TINY};
    use crate::format::FLAG_MEASURED_CHARGES;
    use crate::protocol::{model, ModelAccountMut, ModelInit};
    use std::string::ToString;

    fn artifact(seed: u64) -> Vec<u8> {
        let ck = synthetic_checkpoint(&TINY, seed).unwrap();
        convert(&ck, &synthetic_tokenizer(TINY.vocab_size)).unwrap()
    }

    /// A sealed model account of `artifact`, with `flags` recorded.
    fn sealed(artifact: &[u8], flags: u32) -> Vec<u8> {
        let m = open_artifact(artifact).unwrap();
        let mut data = vec![0; model::len(m.section_count())];
        let init = ModelInit {
            royalty: 0,
            config: &m.config,
            layout: &m.layout,
            flags,
            zero_len: m.section_len(0) as u64,
        };
        let mut w = ModelAccountMut(&mut data);
        w.init(&[1; 32], &[2; 32], &init);
        for i in 0..m.section_count() {
            w.set_section_digest(i, &section_digest(m.section_in(artifact, i)));
        }
        data
    }

    #[test]
    fn an_artifact_is_a_models_by_sections_flags_config_and_digests() {
        let a = artifact(3);
        let flags = open_artifact(&a).unwrap().flags();
        let data = sealed(&a, flags);
        let model = ModelAccount::read(&data).unwrap();
        assert_eq!(check("M", &model, &a), Ok(()));
        // Other weights of the same shape: a section's digest differs.
        assert_eq!(
            check("M", &model, &artifact(4)),
            Err(
                "section 1 of the artifact is not model M's sealed section (its digest differs)"
                    .to_string()
            )
        );
        let other = sealed(&a, flags ^ FLAG_MEASURED_CHARGES);
        let words = check("M", &ModelAccount::read(&other).unwrap(), &a).unwrap_err();
        assert!(words.starts_with("the artifact's flags are "), "{words}");
        assert!(words.ends_with("table): not its artifact"), "{words}");
        assert_eq!(
            check("M", &model, &a[..a.len() - 1]),
            Err("the artifact does not open (InvalidFormat (core error 2))".to_string())
        );
    }

    #[test]
    fn an_artifact_is_assembled_from_its_sections() {
        let a = artifact(3);
        let m = open_artifact(&a).unwrap();
        let sections: Vec<&[u8]> = (0..m.section_count())
            .map(|i| m.section_in(&a, i))
            .collect();
        assert_eq!(assemble("M", &sections).as_deref(), Ok(&a[..]));
        assert_eq!(
            assemble("M", &sections[..1]),
            Err(format!(
                "section zero of model M lists {} sections, the model holds 1",
                sections.len()
            ))
        );
        let mut short = sections.clone();
        short[1] = &sections[1][1..];
        assert_eq!(
            assemble("M", &short),
            Err(format!(
                "section 1 of model M holds {} bytes, section zero says {}",
                sections[1].len() - 1,
                sections[1].len()
            ))
        );
        assert_eq!(
            assemble("M", &[]),
            Err("model M has no sections".to_string())
        );
    }
}
