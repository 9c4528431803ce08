//! Store folders this process made, taken away again when the command
//! ends with an input error before a run was kept in them: a mistyped
//! `--store` of a `run` or `test` refused for its flags was left as an
//! empty store, which `verify` then passed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Note that `root`, not there before, is being made a store's folder.
pub(crate) fn noted(root: &Path) {
    MADE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(root.to_path_buf());
}

/// Take away each store folder this process made that holds no run and
/// that no other process holds a lease in (what is in it, the agent
/// stored and compiled ahead while the cases were read, this process put
/// there for nothing): for a command that ends with an input error.
pub fn take_away_unused() {
    take_away(std::mem::take(
        &mut *MADE.lock().unwrap_or_else(|e| e.into_inner()),
    ));
}

fn take_away(made: Vec<PathBuf>) {
    for root in made {
        if unused(&root) {
            let _ = std::fs::remove_dir_all(&root);
        }
    }
}

fn unused(root: &Path) -> bool {
    let empty = |dir: &str| std::fs::read_dir(root.join(dir)).is_ok_and(|mut d| d.next().is_none());
    let own = format!("{}-", std::process::id());
    let only_ours = std::fs::read_dir(root.join("leases")).map_or(true, |d| {
        d.flatten()
            .all(|e| e.file_name().to_string_lossy().starts_with(&own))
    });
    empty("runs") && only_ours
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_made_store_without_runs_is_taken_away() {
        let dir = tempfile::tempdir().unwrap();
        let (empty, kept) = (dir.path().join("empty"), dir.path().join("kept"));
        // Not noted in this process's list, which the other tests of this
        // binary, making stores at once, share.
        for root in [&empty, &kept] {
            for sub in ["runs", "objects", "cache", "leases"] {
                std::fs::create_dir_all(root.join(sub)).unwrap();
            }
            std::fs::write(root.join("objects/ab"), b"x").unwrap();
        }
        std::fs::write(kept.join("runs/r.jsonl"), b"{}").unwrap();
        take_away(vec![empty.clone(), kept.clone()]);
        assert!(!empty.exists());
        assert!(kept.join("runs/r.jsonl").is_file());
    }
}
