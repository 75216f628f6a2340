//! The fuzz targets' checks on stable Rust, over every committed input:
//! each target's corpus (`fuzz/corpus/<target>/`) and every crash
//! reproducer the fuzzers found (`fuzz/regressions/<target>/`, one file per
//! finding, named after it). The checks are the targets' own (this
//! crate's), so a bug fixed stays fixed without nightly or libFuzzer.
//! `make fuzz-seeds` runs the ignored test that writes the golden seeds
//! into the corpus.

use std::path::PathBuf;

use curta_fuzz_checks as checks;

/// The repository's root (this crate is `fuzz/checks/`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The corpus and regression files of a target, in name order.
fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files = vec![];
    for folder in ["corpus", "regressions"] {
        let dir = root().join("fuzz").join(folder).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        files.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

/// Runs a target's check on each of its inputs; fails naming every input
/// that panics.
fn replay(target: &str) {
    let check = checks::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap()
        .1;
    let files = inputs(target);
    assert!(
        !files.is_empty(),
        "no corpus for {target}: run `make fuzz-seeds`"
    );
    let mut failed = vec![];
    for file in &files {
        let data = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail: {failed:#?}",
        failed.len(),
        files.len()
    );
    eprintln!("{target}: {} inputs", files.len());
}

#[test]
fn artifact() {
    replay("artifact");
}

#[test]
fn state() {
    replay("state");
}

#[test]
fn protocol() {
    replay("protocol");
}

#[test]
fn wasm_exports() {
    replay("wasm_exports");
}

#[test]
fn cut_invariance() {
    replay("cut_invariance");
}

#[test]
fn program() {
    replay("program");
}

/// The corpus still reaches deep: a decoder changed without its seeds
/// would leave the targets fuzzing the surface. Some program input opens a
/// run and turns it, and some cut run takes more turns than its whole run.
#[test]
fn corpus_reaches_turns() {
    let program = inputs("program")
        .iter()
        .map(|f| checks::program::reach(&std::fs::read(f).unwrap()).1)
        .max();
    assert!(program.unwrap_or(0) >= 5, "no program input runs 5 turns");
    let cut = inputs("cut_invariance")
        .iter()
        .filter_map(|f| checks::cut::reach(&std::fs::read(f).unwrap()))
        .filter(|&(whole, cut, _)| cut > whole + 10)
        .count();
    assert!(
        cut >= 5,
        "only {cut} cut runs take 10 turns more than their whole run"
    );
}

/// Writes the seeds built from the golden runs and the models into
/// `fuzz/corpus/<target>/seed-<name>` (`make fuzz-seeds`).
#[test]
#[ignore]
fn write_seeds() {
    let root = root();
    for (target, name, bytes) in checks::seeds::generate(&root) {
        let dir = root.join("fuzz/corpus").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), &bytes).unwrap();
    }
}
