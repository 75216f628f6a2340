//! The section layout of every shape: sections split by rows where a
//! matrix, a layer or the embedding is larger than a section, and the
//! layouts of the models that ran before unchanged.

use curta_core::convert::{SHAPES, STORIES110M, STORIES15M, STORIES42M, TINYLLAMA_1_1B};
use curta_core::format::{Config, LayerMatrix, Layout, MatrixRef, MAX_SECTION_LEN};

/// Every piece of every matrix, in the order the converter writes them.
fn pieces(c: &Config, l: &Layout) -> Vec<MatrixRef> {
    let mut all = Vec::new();
    let mut walk = |rows: u32, piece: &dyn Fn(u32) -> MatrixRef| {
        let mut row = 0;
        while row < rows {
            let p = piece(row);
            assert_eq!(p.first_row, row, "pieces follow each other");
            assert!(p.rows > 0 && p.end_row() <= rows);
            // Every row of a piece names the same piece.
            assert_eq!(piece(p.end_row() - 1), p);
            all.push(p);
            row = p.end_row();
        }
    };
    for layer in 0..c.n_layers {
        for which in LayerMatrix::ALL {
            walk(which.shape(c).0, &|r| l.matrix(c, layer, which, r));
        }
    }
    walk(c.vocab_size, &|r| l.embedding(c, r));
    if !c.shared_classifier {
        walk(c.vocab_size, &|r| l.classifier(c, r));
    }
    all
}

/// Each section is its pieces laid end to end from offset zero, at most a
/// section long; a piece split from a larger matrix is a multiple of four
/// rows unless it is the matrix's last.
fn check(c: &Config) -> Layout {
    let l = Layout::new(c).unwrap();
    let mut ends = vec![0u64; l.section_count() as usize];
    for p in pieces(c, &l) {
        let s = p.section as usize;
        assert!(s >= 1 && s < ends.len(), "{c}: section {s}");
        assert_eq!(
            p.offset as u64, ends[s],
            "{c}: a piece of section {s} out of place"
        );
        ends[s] += p.byte_len() as u64;
    }
    for (s, &end) in ends.iter().enumerate().skip(1) {
        assert_eq!(l.section_len(c, s as u32), end, "{c}: section {s}");
        assert!(
            end > 0 && end <= MAX_SECTION_LEN as u64,
            "{c}: section {s} is {end}"
        );
    }
    assert_eq!(l.section_len(c, l.section_count()), 0);
    l
}

#[test]
fn every_shape_lays_out_in_sections_that_fit() {
    for (name, config) in SHAPES {
        for shared in [true, false] {
            let c = Config {
                shared_classifier: shared,
                ..config
            };
            let l = check(&c);
            println!("{name} shared {shared}: {} sections", l.section_count());
        }
    }
}

#[test]
fn the_stories15m_shape_keeps_its_three_sections() {
    let l = check(&STORIES15M);
    assert_eq!(l.section_count(), 3);
    assert_eq!(l.section_len(&STORIES15M, 1), 6_043_392);
    assert_eq!(l.section_len(&STORIES15M, 2), 9_344_000);
    assert!(!l.embedding_split());
}

#[test]
fn the_llama2c_shapes_split_their_embedding() {
    // stories42M: three layers a section, the embedding in two pieces of
    // 20,320 rows and 11,680.
    let l = check(&STORIES42M);
    assert_eq!((l.layers_per_section, l.layer_sections), (3, 3));
    assert_eq!(
        (l.table_rows, l.table_sections, l.section_count()),
        (20_320, 2, 6)
    );
    assert_eq!(l.embedding(&STORIES42M, 20_319).section, 4);
    assert_eq!(l.embedding(&STORIES42M, 20_320).section, 5);
    assert_eq!(l.classifier(&STORIES42M, 31_999).rows, 11_680);
    // stories110M: a layer a section, the embedding in three pieces.
    let l = check(&STORIES110M);
    assert_eq!((l.layers_per_section, l.layer_sections), (1, 12));
    assert_eq!(
        (l.table_rows, l.table_sections, l.section_count()),
        (13_580, 3, 16)
    );
    assert!(l.embedding_split());
}

#[test]
fn a_tinyllama_layer_spans_seven_sections() {
    let c = TINYLLAMA_1_1B;
    let l = check(&c);
    // Query, key, value and output together; the gate, up and down
    // projections (11.5 MB each) in two pieces each.
    assert_eq!((l.sections_per_layer, l.layer_sections), (7, 154));
    // Layer 1 starts at section 8: its gate in sections 9 and 10.
    let gate = l.matrix(&c, 1, LayerMatrix::Gate, 5_108);
    assert_eq!(
        (gate.section, gate.offset, gate.first_row, gate.rows),
        (10, 0, 5_108, 524)
    );
    let down = l.matrix(&c, 0, LayerMatrix::Down, 0);
    assert_eq!((down.section, down.rows), (6, 1_860));
    assert_eq!(l.matrix(&c, 0, LayerMatrix::AttentionOutput, 0).section, 1);
    // Its own classifier in seven sections after the embedding's seven.
    assert_eq!((l.table_sections, l.section_count()), (7, 169));
    assert_eq!(l.classifier(&c, 0).section, 162);
}
