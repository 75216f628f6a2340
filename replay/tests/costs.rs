//! `make test-costs`: every run of `golden/manifest.json` (or those named in
//! `CURTA_RUNS`) on the measuring build of the program, every chunk's
//! compute units beside its charge. Writes the table to
//! `target/cost-report.md`; fails on any chunk that cost more than its
//! charge, or a turn whose own overhead cost more than the planner's 18,000.

use curta_replay::{costs, manifest};

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
    let path = curta_replay::root().join("target/cost-report.md");
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

/// A turn made almost entirely of the costliest work there is, attention at
/// the end of the context: stories260K at position 510 of 512, from the
/// first head of the first layer, on the production build. The program's
/// own compute units stay within the planner's charge for the turn and the
/// measured price of its chunks, and so within the turn's compute-unit
/// limit a client takes from that price.
#[tokio::test]
async fn a_turn_of_attention_at_full_context_stays_within_its_plan() {
    use curta_core::planner::{self, CHARGES};
    use curta_core::state::{field, Header, Phase};
    use curta_replay::manifest::RunSpec;
    use curta_replay::models::{artifact, metadata};
    use curta_replay::native;
    use curta_replay::program_test::{self, Chain};
    use solana_keypair::Keypair;
    use solana_pubkey::Pubkey;
    use solana_signer::Signer;

    let art = artifact("stories260K");
    let m = metadata(&art);
    let spec = RunSpec {
        name: "full-context attention".into(),
        model: "stories260K".into(),
        prompt: vec![],
        max_tokens: 512,
        temperature_q16: 0,
        seed: 0,
    };
    // The run, natively, to position 510; then its cursor put at the start
    // of attention there (layer 0, head 0, stage 0).
    let mut state = native::open(&m, &spec);
    while Header::read(&state).unwrap().position < 510 {
        native::step(&art, &m, &mut state);
    }
    for (at, v) in [
        (field::PHASE, Phase::Attention as u32),
        (field::LAYER, 0),
        (field::ROW, 0),
        (field::STAGE, 0),
        (field::INDEX, 0),
    ] {
        state[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    let plan = planner::plan_turn(m.config, &state).expect("a plan");
    let bound = planner::measured_price(m.config, &state, CHARGES.allowance).expect("a price");
    assert_eq!(
        plan.end.phase,
        Phase::Attention,
        "the turn is attention throughout"
    );

    let (admin, owner) = (Keypair::new(), Keypair::new());
    let (pt, keys) =
        program_test::preloaded_bank(&admin.pubkey(), CHARGES.allowance, &art, &owner.pubkey(), 0);
    let mut c = Chain::start(pt).await;
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    let run_key = Pubkey::new_unique();
    let account =
        program_test::preloaded_run(&keys, &owner.pubkey(), &m.config, &state, CHARGES.allowance);
    c.ctx.set_account(&run_key, &account.into());
    let out = c.turn(&keys, &run_key, &m.config, CHARGES.allowance).await;
    assert_eq!(out.result, Ok(()), "{:#?}", out.logs);
    println!(
        "attention at position 510: the program used {} compute units, the plan charged {}, \
         the measured table {bound}",
        out.program_cu, plan.estimated_cu
    );
    assert!(
        out.program_cu <= bound.min(plan.estimated_cu) as u64,
        "{} compute units against a plan of {} and a measured price of {bound}",
        out.program_cu,
        plan.estimated_cu
    );
}
