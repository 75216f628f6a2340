//! Explains where two states first differ: the header field or the buffer
//! (and element) an offset falls in, by the state layout. The code lives
//! in the client (`curta_client::diff`), which reports a chain state that
//! is not its replay's the same way.

pub use curta_client::diff::{first_difference, locate};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::RunSpec;
    use crate::models::{artifact, metadata};
    use curta_core::state::{field, StateLayout};

    #[test]
    fn a_difference_is_named_by_the_state_layout() {
        let art = artifact("stories260K");
        let m = metadata(&art);
        let spec = RunSpec {
            name: "diff".into(),
            model: "stories260K".into(),
            prompt: b"Once upon a time".to_vec(),
            max_tokens: 12,
            temperature_q16: 0,
            seed: 0,
        };
        let a = crate::native::open(&m, &spec).to_vec();
        assert_eq!(first_difference(&m.config, &a, &a), None);
        let mut b = a.clone();
        b[field::POSITION] = 7;
        let d = first_difference(&m.config, &a, &b).unwrap();
        assert_eq!(d, "first difference at offset 20: header field position: expected 0 (0x00000000), got 7 (0x00000007)");
        let keys = StateLayout::new(&m.config, 16, 12).unwrap().keys;
        let mut c = a.clone();
        c[keys + 4 * 33] = 1;
        let d = first_difference(&m.config, &a, &c).unwrap();
        assert!(d.contains("buffer keys, element 33: expected 0"), "{d}");
        assert!(first_difference(&m.config, &a, &a[..100])
            .unwrap()
            .contains("lengths differ"));
    }
}
