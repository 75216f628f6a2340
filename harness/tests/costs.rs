//! `make test-costs`: every run of `golden/manifest.json` (or those named in
//! `CURTA_RUNS`) on the measuring build of the program, every chunk's
//! compute units beside its charge. Writes the table to
//! `target/cost-report.md`; fails on any chunk that cost more than its
//! charge, or a turn whose own overhead cost more than the planner's 18,000.

use curta_harness::{costs, manifest};

#[tokio::test]
async fn every_chunk_costs_at_most_its_charge() {
    let runs = manifest::selected();
    assert!(!runs.is_empty(), "no runs selected");
    let mut measured = vec![];
    for spec in &runs {
        measured.push((spec.name.clone(), costs::measure(spec).await));
    }
    let models = runs
        .iter()
        .map(|s| (s.name.clone(), s.model.clone()))
        .collect();
    let md = costs::render(&measured, &models);
    let path = curta_harness::root().join("target/cost-report.md");
    std::fs::write(&path, &md).expect("target/ is writable");
    println!("{md}\n(written to {})", path.display());
    let overruns = costs::overruns(&measured);
    assert!(
        overruns.is_empty(),
        "{} overruns, the first:\n{}",
        overruns.len(),
        overruns[..overruns.len().min(20)].join("\n")
    );
}
