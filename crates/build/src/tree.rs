//! Embedded files written out under a build folder.

use anyhow::{Context as _, Result};
use std::path::Path;

/// Write embedded files (path under `dir`, text) under `dir`.
pub(crate) fn write_tree(dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
