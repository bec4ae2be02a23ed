//! What the model tests of `mm` share: their proptest configuration.

use proptest::test_runner::Config;

/// The configuration of a model test: `cases` cases natively and `miri` under Miri (which runs
/// the same code some thousand times slower), with the seeds of the test's
/// `.proptest-regressions` file replayed first natively; under Miri no such file is read or
/// written (Miri runs isolated, with no file system).
pub(crate) fn config(cases: u32, miri: u32) -> Config {
    Config {
        cases: if cfg!(miri) { miri } else { cases },
        failure_persistence: if cfg!(miri) { None } else { Config::default().failure_persistence },
        ..Config::default()
    }
}

/// The most operations one case of a model test runs: `native`, or `miri` under Miri (every
/// kind of operation still comes up in a case, at a fraction of the interpreted time).
pub(crate) const fn ops(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}
