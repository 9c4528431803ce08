//! `worldline bench import bfcl/CATEGORY`: BFCL's multi-turn categories
//! from the pinned `bfcl-eval` in a Python the user names
//! (`$WORLDLINE_BFCL_PYTHON`). The converter (`bfcl.py`) reads the
//! package's data and runs its executor on the ground truth for the
//! per-turn checks; the world service (`bfcl_service.py`) runs BFCL's own
//! classes, bundled from that same environment (decision 0377).

use super::{ImportArgs, Known, convert, imported, pinned_python, write_folder};
use crate::cli::exit::ExitCode;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;

pub const PACKAGE: &str = "bfcl-eval==2026.3.23";
const CONVERTER: &str = include_str!("bfcl.py");
const SERVICE: &str = include_str!("bfcl_service.py");

pub fn import(args: &ImportArgs, known: &Known, category: &str) -> Result<ExitCode> {
    if !known.importable {
        return Err(InputError::new("NAME", format!("{}: {}", known.name, known.note)).into());
    }
    worldline_case::output::check_new(&args.output, "bench import's folder")?;
    let python = pinned_python(
        args,
        PACKAGE,
        &format!("--no-deps {PACKAGE} mpmath==1.3.0"),
        "WORLDLINE_BFCL_PYTHON",
    )?;
    // The converter loads the service's row encoding from this copy.
    let work = tempfile::tempdir().context("a folder for the service's source")?;
    let source = work.path().join("bfcl_service.py");
    std::fs::write(&source, SERVICE).context("writing the service's source")?;
    let source_arg = source.to_string_lossy();
    let converted = convert(&python, CONVERTER, &[category, &source_arg], PACKAGE)?;
    write_folder(&args.output, &converted.files, "bfcl.py", SERVICE)?;
    // The environment whose packages the service bundles: the Python's
    // own `sys.prefix` (a bare `--python python` of an activated
    // environment printed `--venv VENV`, which no shell could run).
    let venv = prefix_of(&python).unwrap_or_else(|| PathBuf::from("VENV"));
    let build = super::service_build(&args.output, "bfcl.py", "bfcl-multi-turn", Some(&venv));
    imported(args, known, &converted, &build)
}

/// The environment `python` runs in (its `sys.prefix`), if it says: read
/// to a path's length at most (a `--python` that writes without end is
/// stopped there), and it ends with worldline.
fn prefix_of(python: &Path) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut command = std::process::Command::new(python);
    worldline_engine::native::ends_with_this_thread(&mut command);
    let mut child = command
        .args(["-c", "import sys; sys.stdout.write(sys.prefix)"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut prefix = Vec::new();
    let read = (child.stdout.take()?.take(PREFIX_AT_MOST + 1)).read_to_end(&mut prefix);
    let _ = child.kill();
    let status = child.wait().ok()?;
    let prefix = String::from_utf8(prefix).ok()?;
    (read.is_ok() && status.success() && prefix.len() as u64 <= PREFIX_AT_MOST)
        .then(|| PathBuf::from(prefix))
        .filter(|p| p.is_absolute())
}

/// The longest `sys.prefix` taken (Linux's `PATH_MAX`).
const PREFIX_AT_MOST: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::prefix_of;
    use std::os::unix::fs::PermissionsExt as _;

    /// A "Python" that writes its prefix is taken at its word; one that
    /// writes without end is stopped at a path's length and taken for
    /// none (its output was read whole).
    #[test]
    fn a_prefix_is_read_to_a_path_s_length_at_most() {
        let dir = tempfile::tempdir().unwrap();
        let fake = |name: &str, body: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let venv = fake("venv", "printf /opt/venv");
        assert_eq!(prefix_of(&venv), Some("/opt/venv".into()));
        assert_eq!(prefix_of(&fake("endless", "yes /x")), None);
        assert_eq!(prefix_of(&fake("relative", "printf venv")), None);
    }
}
