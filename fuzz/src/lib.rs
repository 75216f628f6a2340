//! Curta's fuzz targets' library: the checks every target runs
//! (`checks`), shared with the stable regression test.

pub mod checks;
