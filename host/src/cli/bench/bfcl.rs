//! `worldline bench import bfcl/CATEGORY`: BFCL's multi-turn categories
//! from the pinned `bfcl-eval` in a Python the user names
//! (`$WORLDLINE_BFCL_PYTHON`). The converter (`bfcl.py`) reads the
//! package's data and runs its executor on the ground truth for the
//! per-turn checks; the world service (`bfcl_service.py`) runs BFCL's own
//! classes, bundled from that same environment (decision 0377).

use super::{ImportArgs, Known, build_command, convert, imported, pinned_python, write_folder};
use crate::cli::exit::ExitCode;
use anyhow::{Context, Result};
use std::path::Path;
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
    // The environment whose packages the service bundles: the one holding
    // the Python (`V/bin/python` → `V`).
    let venv = (python.parent())
        .and_then(|bin| bin.parent())
        .unwrap_or(Path::new("VENV"));
    let build = build_command(
        &args.output.join("service").join("bfcl.py"),
        Some(venv),
        &args.output.join("worlds/bfcl-multi-turn/v1/bfcl.wasm"),
    );
    imported(args, known, &converted, &build)
}
