//! Property tests of the bundle reader: arbitrary bytes and random
//! mutations of a valid bundle give a bundle or an error naming the file
//! and a line, never a panic.

#[path = "../../case/tests/support/mutations.rs"]
mod mutations;
#[path = "support/valid_bundle.rs"]
mod valid_bundle;

use mutations::{mutate, mutations};
use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use valid_bundle::valid_bundle;
use worldline_log::log::bundle;

fn read_bundle(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new("/hostile/run.jsonl");
    if let Err(e) = bundle::parse(bytes, path) {
        prop_assert_eq!(&e.path, "/hostile/run.jsonl");
        prop_assert!(e.line >= 1, "a bundle error without a line: {e}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn the_bundle_reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        read_bundle(&bytes)?;
    }

    #[test]
    fn the_bundle_reader_never_panics_on_mutated_bundles(ops in mutations()) {
        static VALID: OnceLock<Vec<u8>> = OnceLock::new();
        let valid = VALID.get_or_init(|| valid_bundle(4));
        read_bundle(&mutate(valid, &ops))?;
    }
}
