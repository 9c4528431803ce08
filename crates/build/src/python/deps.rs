//! The agent's dependencies, staged in one folder that componentize-py
//! bundles: a virtual environment's site-packages (less the installers),
//! or a requirements file installed by pip for the sandbox's Python with
//! pure-Python wheels only. Extensions built as WASI shared libraries
//! (`tests/python-wasi-wheels.sh`) are kept, for componentize-py links
//! them; a package with any other native extension is refused by name.
//!
//! Why native files are refused before the build, and requirements resolved for
//! the sandbox's Python (was decision 0283): CPython for WASI cannot load
//! extensions built for the host, and a build that succeeds only to trap on
//! import (or silently take a pure fallback, as PyYAML would) is worse than an
//! error naming the package; resolving for 3.14 with `--platform any` picks the
//! versions and markers that apply inside the sandbox, where installing for the
//! host and scanning afterwards would resolve for the wrong Python and download
//! native wheels only to refuse them. The installers are left out because pip
//! alone is ~10 MB in every build.

use anyhow::{Context as _, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use worldline_case::bounded;
use worldline_case::error::InputError;

/// The Python inside componentize-py's components (`COMPONENTIZE_PY_VERSION`).
pub(super) const SANDBOX_PYTHON: &str = "3.14";

/// Top-level entries of a site-packages that install packages rather than
/// being used by one.
const INSTALLERS: &[&str] = &[
    "pip",
    "setuptools",
    "pkg_resources",
    "wheel",
    "_distutils_hack",
    "distutils-precedence.pth",
    "_virtualenv.py",
    "_virtualenv.pth",
];

/// A distribution's name as PEP 503 compares it (`PyYAML` → `pyyaml`).
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `name-1.0.dist-info` → (`name`, `1.0`).
fn dist_info(entry: &str) -> Option<(&str, &str)> {
    entry.strip_suffix(".dist-info")?.split_once('-')
}

fn is_native(file: &str) -> bool {
    [".so", ".pyd", ".dylib"].iter().any(|e| file.ends_with(e)) || file.contains(".so.")
}

/// Whether `bytes` (a file's first bytes) begin a WebAssembly shared
/// library: the wasm magic and version, then the `dylink.0` custom section
/// that the dynamic-linking convention puts first.
fn is_wasi_shared_library(bytes: &[u8]) -> bool {
    const NAME: &[u8] = b"dylink.0";
    let Some(rest) = bytes.strip_prefix(b"\0asm\x01\0\0\0\0") else {
        return false;
    };
    // The section's size (LEB128), then its name's length and the name.
    let Some(size_len) = rest.iter().take(5).position(|b| b & 0x80 == 0) else {
        return false;
    };
    rest.get(size_len + 1..)
        .and_then(|r| r.split_first())
        .is_some_and(|(&len, name)| usize::from(len) == NAME.len() && name.starts_with(NAME))
}

/// Whether the file at `path` is a WebAssembly shared library.
fn file_is_wasi_shared_library(path: &Path) -> Result<bool> {
    use std::io::Read as _;
    let mut head = Vec::with_capacity(32);
    std::fs::File::open(path)
        .and_then(|f| f.take(32).read_to_end(&mut head))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(is_wasi_shared_library(&head))
}

/// The site-packages folder of the virtual environment `venv`.
fn site_packages(venv: &Path) -> Result<PathBuf> {
    let not_a_venv = || {
        InputError::new(
            venv,
            "is not a virtual environment (no lib/pythonX.Y/site-packages in it); make one with \
             `python3 -m venv DIR` and install the agent's packages with `DIR/bin/pip install ...`",
        )
    };
    let windows = venv.join("Lib").join("site-packages");
    if windows.is_dir() {
        return Ok(windows);
    }
    let lib = std::fs::read_dir(venv.join("lib")).map_err(|_| not_a_venv())?;
    let mut found: Vec<PathBuf> = lib
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(not_a_venv().into()),
        _ => Err(InputError::new(
            venv,
            format!(
                "has more than one site-packages ({}); pass a virtual environment of one Python",
                found
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .into()),
    }
}

/// Which distribution installed each file (relative to `site`), from the
/// `RECORD` of every `*.dist-info`: `name version` by path.
fn owners(site: &Path) -> Result<BTreeMap<String, String>> {
    let mut owner = BTreeMap::new();
    for entry in std::fs::read_dir(site).with_context(|| format!("listing {}", site.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((dist, version)) = dist_info(&name) else {
            continue;
        };
        let Ok(record) = bounded::read_text(&entry.path().join("RECORD"), bounded::DOCUMENT) else {
            continue;
        };
        for line in record.lines() {
            let path = match line.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap_or_default(),
                None => line.split(',').next().unwrap_or_default(),
            };
            owner.insert(path.to_string(), format!("{dist} {version}"));
        }
    }
    Ok(owner)
}

/// Copy `from` (a site-packages) into `into`, leaving out the installers,
/// caches and byte code; the native files found, by path.
fn copy_tree(from: &Path, into: &Path, rel: &str, native: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let top_level_installer = rel.is_empty()
            && (INSTALLERS.contains(&name.as_str())
                || dist_info(&name)
                    .is_some_and(|(d, _)| INSTALLERS.contains(&normalized(d).as_str())));
        if top_level_installer || name == "__pycache__" || name.ends_with(".pyc") {
            continue;
        }
        let target = into.join(&name);
        let meta = std::fs::metadata(entry.path())
            .with_context(|| format!("reading {}", entry.path().display()))?;
        if meta.is_dir() {
            if entry.file_type()?.is_symlink() {
                continue;
            }
            std::fs::create_dir_all(&target)
                .with_context(|| format!("creating {}", target.display()))?;
            copy_tree(&entry.path(), &target, &path, native)?;
        } else if is_native(&name) && !file_is_wasi_shared_library(&entry.path())? {
            native.push(path);
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Stage the packages of the virtual environment `venv` in `into`.
pub(super) fn from_venv(venv: &Path, into: &Path) -> Result<()> {
    if !venv.is_dir() {
        let why = match venv.exists() {
            true => "is a file, not a folder; pass a virtual environment's folder",
            false => "no such folder; pass a virtual environment",
        };
        return Err(InputError::new(venv, why).into());
    }
    let site = site_packages(venv)?;
    for entry in std::fs::read_dir(&site)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with("__editable__") || name.ends_with(".egg-link") {
            return Err(InputError::new(
                venv,
                format!(
                    "`{name}`: a package is installed in editable mode (`pip install -e`), so its \
                     code is not in the environment; install it without -e"
                ),
            )
            .into());
        }
    }
    let mut native = Vec::new();
    copy_tree(&site, into, "", &mut native)?;
    if native.is_empty() {
        return Ok(());
    }
    let owner = owners(&site)?;
    let mut by_dist: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in native {
        let dist = owner.get(&file).cloned().unwrap_or_else(|| {
            let top = file.split('/').next().unwrap_or(&file);
            format!("the package in `{top}`")
        });
        by_dist.entry(dist).or_default().push(file);
    }
    let list: Vec<String> = by_dist
        .iter()
        .map(|(dist, files)| format!("  {dist}: {}", files.join(", ")))
        .collect();
    let names: Vec<&str> = by_dist
        .keys()
        .map(|d| d.split(' ').next().unwrap_or(d))
        .collect();
    Err(InputError::new(
        venv,
        format!(
            "{} native extensions, which the sandbox's Python (CPython {SANDBOX_PYTHON} for WASI) \
             cannot load:\n{}\nuninstall {} from the environment (`pip uninstall {}`), use \
             pure-Python alternatives, or build {} for WASI as `tests/python-wasi-wheels.sh` \
             builds jiter and pydantic-core",
            if by_dist.len() == 1 {
                "a package has"
            } else {
                "packages have"
            },
            list.join("\n"),
            if names.len() == 1 { "it" } else { "them" },
            names.join(" "),
            if names.len() == 1 { "it" } else { "them" },
        ),
    )
    .into())
}

/// The Python installed beside `componentize_py` (found on PATH when it is
/// a bare name): the one of its virtual environment, which has pip; else
/// `python3`.
pub(super) fn python_beside(componentize_py: &Path) -> PathBuf {
    let exe = if componentize_py.components().count() > 1 {
        Some(componentize_py.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(componentize_py))
                .find(|p| p.is_file())
        })
    };
    exe.and_then(|e| Some(e.parent()?.join("python3")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// The requirements file, `file` or one it takes in with `-r` (pip reads
/// those relative to the file that names them), and the line in it that
/// names one of `names`: `file` and line 0 when none does. Files are read
/// to a depth of 8, each once, as far as they read.
fn where_named(file: &Path, text: &str, names: &[String]) -> (PathBuf, usize) {
    where_line(file, text, &|t| line_naming(t, names))
}

/// [`where_named`] of the first line `line_of` finds (1-based; 0: none).
fn where_line(file: &Path, text: &str, line_of: &dyn Fn(&str) -> usize) -> (PathBuf, usize) {
    let key = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut seen = vec![key(file)];
    let mut queue = vec![(file.to_path_buf(), text.to_string(), 0)];
    while let Some((path, text, depth)) = queue.pop() {
        let line = line_of(&text);
        if line > 0 {
            return (path, line);
        }
        if depth == 8 {
            continue;
        }
        let base = path.parent().unwrap_or(Path::new(""));
        for l in text.lines().rev() {
            let l = l.trim();
            let nested = ["-r", "--requirement"]
                .iter()
                .find_map(|flag| l.strip_prefix(flag))
                .map(|rest| rest.trim_start_matches([' ', '=']).trim())
                .filter(|rest| !rest.is_empty());
            let Some(nested) = nested.map(|n| base.join(n)) else {
                continue;
            };
            if seen.contains(&key(&nested)) {
                continue;
            }
            seen.push(key(&nested));
            if let Ok(text) = bounded::read_text(&nested, bounded::DOCUMENT) {
                queue.push((nested, text, depth + 1));
            }
        }
    }
    (file.to_path_buf(), 0)
}

/// The line (1-based) of `requirements` that names one of `names`.
fn line_naming(requirements: &str, names: &[String]) -> usize {
    requirements
        .lines()
        .position(|l| {
            let l = l.trim();
            let end = l
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .unwrap_or(l.len());
            !l.starts_with('#') && names.contains(&normalized(&l[..end]))
        })
        .map_or(0, |i| i + 1)
}

/// The package pip could not find a pure-Python wheel for, and the
/// package that needed it, from pip's output.
fn unavailable(said: &str) -> Option<(String, Option<String>)> {
    let line = said
        .lines()
        .find(|l| l.contains("Could not find a version that satisfies the requirement"))?;
    let rest = line.split("satisfies the requirement ").nth(1)?;
    let wanted = rest.split(" (").next()?.trim().to_string();
    let parent = rest
        .split("(from ")
        .nth(1)
        .and_then(|p| p.split(')').next())
        .filter(|p| !p.starts_with("versions") && !p.starts_with('-'))
        .map(|p| {
            p.split([' ', '[', '=', '<', '>', '!', '~'])
                .next()
                .unwrap_or(p)
                .to_string()
        });
    Some((wanted, parent))
}

/// The lines of pip's "The conflict is caused by:" block, if it printed one.
fn conflict(said: &str) -> Option<Vec<String>> {
    let block = said.split("The conflict is caused by:").nth(1)?;
    let lines: Vec<String> = block
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// The platform tag of wheels built for the sandbox's Python.
const WASI_PLATFORM: &str = "wasi_0_0_0_wasm32";

/// Install the requirements `file` into `into` with `python`'s pip, for
/// the sandbox's Python: pure-Python wheels, and the WASI wheels in
/// `wasi_wheels` when given; with `no_deps`, only the packages listed.
pub(super) fn from_requirements(
    file: &Path,
    python: &Path,
    wasi_wheels: Option<&Path>,
    no_deps: bool,
    into: &Path,
    stopped: fn() -> bool,
) -> Result<()> {
    let text = bounded::read_text(file, bounded::DOCUMENT)
        .map_err(|e| InputError::new(file, format!("cannot read the requirements: {e}")))?;
    // An editable install is a hook pointing at the package's folder,
    // outside the build (the build then failed: no module), and pip
    // wrote its metadata into that folder: refused as `--venv` refuses it.
    let (named_in, line) = where_line(file, &text, &|t| {
        (t.lines())
            .position(|l| {
                let l = l.trim_start();
                l == "-e" || l.starts_with("-e ") || l.starts_with("--editable")
            })
            .map_or(0, |i| i + 1)
    });
    if line > 0 {
        return Err(InputError::new(
            named_in,
            "an editable requirement (`-e`) is installed as a hook that imports from its folder, \
             outside the build: name the package's folder or wheel without -e",
        )
        .with_line(line)
        .into());
    }
    let mut pip = Command::new(python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
    ])
    .args([
        "--no-warn-script-location",
        "--no-compile",
        "--only-binary=:all:",
    ]);
    if no_deps {
        pip.arg("--no-deps");
    }
    match wasi_wheels {
        None => pip.args([
            "--platform",
            "any",
            "--implementation",
            "py",
            "--abi",
            "none",
        ]),
        Some(dir) => {
            if !dir.is_dir() {
                let what = match dir.exists() {
                    true => "is no folder",
                    false => "no such folder",
                };
                return Err(InputError::new(
                    dir,
                    format!(
                        "{what}; pass the folder of WASI wheels that \
                         tests/python-wasi-wheels.sh builds"
                    ),
                )
                .into());
            }
            pip.arg("--find-links").arg(dir).args([
                "--platform",
                "any",
                "--platform",
                WASI_PLATFORM,
                "--implementation",
                "cp",
                "--abi",
                "none",
                "--abi",
                "cp314",
            ])
        }
    };
    pip.args(["--python-version", SANDBOX_PYTHON, "--target"])
        .arg(into)
        .arg("-r")
        .arg(file);
    let out = crate::helper::output(&mut pip, &stopped).map_err(|e| match e
        .is::<crate::helper::Stopped>()
    {
        true => e,
        false => InputError::new(
            python,
            format!("cannot run it ({e}); pass --python with a Python that has pip"),
        )
        .into(),
    })?;
    if out.status.success() {
        // Console scripts are of no use inside the sandbox.
        let _ = std::fs::remove_dir_all(into.join("bin"));
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    if said.contains("No module named pip") {
        return Err(InputError::new(
            python,
            "has no pip; pass --python with a Python that has it (a virtual environment's bin/python)",
        )
        .into());
    }
    let tail: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    let pip_said = tail[tail.len().saturating_sub(6)..].join("\n");
    if let Some(lines) = conflict(&said) {
        let shown = lines.len().min(3);
        let more = match lines.len() - shown {
            0 => String::new(),
            n => format!("\n  (and {n} more)"),
        };
        return Err(InputError::new(
            file,
            format!(
                "pip found no set of pure-Python wheels (py3-none-any) for the sandbox's Python \
                 {SANDBOX_PYTHON} that fits; the conflict it found:\n  {}{more}\na package named \
                 there without such a wheel has native extensions, which CPython for WASI cannot \
                 load: remove what needs it, or use a pure-Python alternative",
                lines[..shown].join("\n  ")
            ),
        )
        .into());
    }
    let Some((wanted, parent)) = unavailable(&said) else {
        return Err(InputError::new(
            file,
            format!("pip could not install the requirements:\n{pip_said}"),
        )
        .into());
    };
    let name = wanted
        .split(['=', '<', '>', '!', '~', ';', ' ', '['])
        .next()
        .unwrap_or(&wanted)
        .to_string();
    let mut names = vec![normalized(&name)];
    names.extend(parent.as_deref().map(normalized));
    let needed_by = parent.map_or(String::new(), |p| format!(" (needed by {p})"));
    // pip says "from versions: none" alike for a name no index has (a
    // typo) and for one with no wheel the sandbox can load.
    let (named_in, line) = where_named(file, &text, &names);
    Err(InputError::new(
        named_in,
        format!(
            "`{wanted}`{needed_by} has no pure-Python wheel (py3-none-any) for the sandbox's \
             Python {SANDBOX_PYTHON}: no such package or version is published (check the \
             spelling), or it has native extensions, which CPython for WASI cannot load, or is \
             published only as source. Fix the name, remove it, or use a pure-Python \
             alternative.\npip said:\n{pip_said}"
        ),
    )
    .with_line(line)
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An editable line is refused naming its file and line, in the file
    /// given or one it takes in, before pip runs (pip installed a hook
    /// pointing outside the build, which then failed: no module).
    #[test]
    fn an_editable_requirement_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("r.txt");
        std::fs::write(&outer, "httpx==0.28.1\n-r more.txt\n").unwrap();
        std::fs::write(dir.path().join("more.txt"), "# mine\n-e ./pkg\n").unwrap();
        let into = dir.path().join("deps");
        let python = Path::new("/nonexistent/python");
        let e = from_requirements(&outer, python, None, false, &into, || false).unwrap_err();
        let e = e.downcast_ref::<InputError>().expect("an input error");
        assert_eq!(e.file, dir.path().join("more.txt"));
        assert_eq!(e.line.map(|(line, _)| line), Some(2));
        assert!(e.message.contains("without -e"), "{}", e.message);
    }

    #[test]
    fn a_venv_that_is_a_file_is_said_to_be_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.py");
        std::fs::write(&file, "").unwrap();
        let into = dir.path().join("into");
        let said = from_venv(&file, &into).unwrap_err().to_string();
        assert!(said.contains("is a file, not a folder"), "{said}");
        let said = from_venv(&dir.path().join("absent"), &into)
            .unwrap_err()
            .to_string();
        assert!(said.contains("no such folder"), "{said}");
    }

    #[test]
    fn names_compare_as_pep_503_says() {
        assert_eq!(normalized("PyYAML"), "pyyaml");
        assert_eq!(normalized("pydantic_core"), "pydantic-core");
        assert_eq!(normalized("zope.interface"), "zope-interface");
        assert_eq!(
            dist_info("PyYAML-6.0.2.dist-info"),
            Some(("PyYAML", "6.0.2"))
        );
        assert!(is_native("yaml/_yaml.cpython-311-x86_64-linux-gnu.so"));
        assert!(is_native("libfoo.so.1"));
        assert!(!is_native("yaml/__init__.py"));
    }

    #[test]
    fn a_wasi_shared_library_is_told_from_other_binaries() {
        let dylink = b"\0asm\x01\0\0\0\0\x12\x08dylink.0\x01\x07";
        assert!(is_wasi_shared_library(dylink));
        // A component, a plain core module, an ELF file, a short file.
        assert!(!is_wasi_shared_library(
            b"\0asm\x0d\0\x01\0\0\x12\x08dylink.0"
        ));
        assert!(!is_wasi_shared_library(
            b"\0asm\x01\0\0\0\x01\x05\x01\x60\0\0"
        ));
        assert!(!is_wasi_shared_library(b"\x7fELF\x02\x01\x01\0"));
        assert!(!is_wasi_shared_library(b"\0asm\x01\0\0\0\0\x12"));
    }

    #[test]
    fn pips_refusal_names_the_package_and_its_line() {
        let said = "ERROR: Could not find a version that satisfies the requirement \
                    pydantic-core==2.41.5 (from pydantic) (from versions: none)\n\
                    ERROR: No matching distribution found for pydantic-core==2.41.5\n";
        let (wanted, parent) = unavailable(said).unwrap();
        assert_eq!(wanted, "pydantic-core==2.41.5");
        assert_eq!(parent.as_deref(), Some("pydantic"));
        let direct = "ERROR: Could not find a version that satisfies the requirement \
                      PyYAML==6.0.2 (from -r r.txt (line 2)) (from versions: none)";
        let requirements = "# tools\nhttpx==0.28.1\npydantic>=2\n";
        assert_eq!(
            line_naming(requirements, &["pydantic-core".into(), "pydantic".into()]),
            3
        );
        assert_eq!(unavailable(direct).unwrap(), ("PyYAML==6.0.2".into(), None));
        let conflicted = "ERROR: Cannot install mcp because these package versions have conflicting dependencies.\n\n\
                          The conflict is caused by:\n    jsonschema 4.26.0 depends on rpds-py>=0.25.0\n    \
                          jsonschema 4.25.1 depends on rpds-py>=0.7.1\n\nTo fix this you could try to:\n";
        assert_eq!(
            conflict(conflicted).unwrap(),
            [
                "jsonschema 4.26.0 depends on rpds-py>=0.25.0",
                "jsonschema 4.25.1 depends on rpds-py>=0.7.1"
            ]
        );
        assert!(conflict(direct).is_none());
    }

    #[test]
    fn a_package_is_named_in_the_file_that_takes_it_in() {
        let dir = std::env::temp_dir().join(format!("wl-req-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        let outer = dir.join("outer.txt");
        let outer_text = "httpx==0.28.1\n-r sub/nested.txt\n";
        std::fs::write(&outer, outer_text).unwrap();
        // Names are relative to the file that names them; a loop is read once.
        std::fs::write(
            dir.join("sub/nested.txt"),
            "# tools\n--requirement=deeper/more.txt\n-r ../outer.txt\n",
        )
        .unwrap();
        std::fs::write(dir.join("sub/deeper/more.txt"), "\nbogus-pkg==1.0\n").unwrap();
        let names = ["bogus-pkg".to_string()];
        assert_eq!(
            where_named(&outer, outer_text, &names),
            (dir.join("sub").join("deeper/more.txt"), 2)
        );
        let httpx = ["httpx".to_string()];
        assert_eq!(where_named(&outer, outer_text, &httpx), (outer.clone(), 1));
        let none = ["absent".to_string()];
        assert_eq!(where_named(&outer, outer_text, &none), (outer, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
