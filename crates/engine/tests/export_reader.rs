//! Property test of the export reader: random mutations of a valid
//! export are refused with an input error naming the file and a line, and
//! write no run.

#[path = "../../case/tests/support/mutations.rs"]
mod mutations;
#[path = "../../log/tests/support/valid_bundle.rs"]
mod valid_bundle;

use mutations::{mutate, mutations};
use proptest::prelude::*;
use std::sync::OnceLock;
use valid_bundle::valid_bundle;
use worldline_case::error::InputError;

proptest! {
    // These write files: fewer cases.
    #![proptest_config(ProptestConfig { cases: 80, ..ProptestConfig::default() })]

    #[test]
    fn the_export_reader_never_panics_on_mutated_exports(ops in mutations()) {
        static VALID: OnceLock<Vec<u8>> = OnceLock::new();
        let valid = VALID.get_or_init(|| {
            let bundle = String::from_utf8(valid_bundle(2)).unwrap();
            serde_json::to_vec_pretty(&serde_json::json!({
                "format": "worldline-export/1",
                "run": "20260101-000000-abcdef01",
                "bundle": bundle,
                "objects": {},
            }))
            .unwrap()
        });
        let dir = tempfile::tempdir().unwrap();
        let store = worldline_store::store::StoreDir::open(&dir.path().join("store")).unwrap();
        let path = dir.path().join("run.json");
        let bytes = mutate(valid, &ops);
        std::fs::write(&path, &bytes).unwrap();
        // The export lacks the run's objects: it can never be accepted.
        let err = worldline_engine::export::import(&store, &path).unwrap_err();
        let input = err.chain().find_map(|e| e.downcast_ref::<InputError>());
        prop_assert!(input.is_some(), "not an input error: {err:#}");
        let input = input.unwrap();
        prop_assert_eq!(&input.file, &path);
        prop_assert!(input.line.is_some(), "an export error without a place: {input}");
        prop_assert!(
            std::fs::read_dir(store.runs_dir()).unwrap().next().is_none(),
            "a refused import wrote a run"
        );
    }
}
