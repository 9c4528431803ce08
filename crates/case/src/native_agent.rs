//! `exec = [...]` and `pass_env = [...]`: a native agent named in a file
//! (`worldline.toml` for a project, a case for itself) instead of on the
//! command line (`--exec -- CMD`, `--pass-env NAME`). A case's setting
//! wins over the project's, the command line's over both.

use serde::Deserialize;
use std::path::Path;

/// A native agent as a file names it, its command resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecSetting {
    /// CMD and its arguments (empty: the file names no process). An
    /// argument naming a file or folder beside the file that gives it is
    /// made absolute (the process starts in a fresh working directory).
    pub command: Vec<String>,
    /// Variables passed through from worldline's environment (`None`:
    /// the file does not say).
    pub pass_env: Option<Vec<String>>,
    /// The line of `exec` in the file that gives it (0: none known), which
    /// an error starting the command names.
    pub line: usize,
}

/// The two keys as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExecToml {
    #[serde(default)]
    pub exec: Option<Vec<String>>,
    #[serde(default)]
    pub pass_env: Option<Vec<String>>,
}

/// Whether `name` can name a variable passed through to a native agent
/// (`pass_env`, `--pass-env`): not empty, and without `=` (the value is
/// read from worldline's environment, never given).
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=')
}

/// Why `program` cannot be started, when that is sure before trying: a
/// path that is no file one may run, or a name found on neither `PATH`
/// nor the system's default search path. Anything else is left to the
/// start itself.
pub fn unstartable(program: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |m: &std::fs::Metadata| m.is_file() && m.permissions().mode() & 0o111 != 0;
    if program.contains('/') {
        return match std::fs::metadata(program) {
            Err(e) => Some(format!("cannot start `{program}`: {e}")),
            Ok(m) if !runnable(&m) => Some(format!(
                "cannot start `{program}`: it is not a file one may run (`chmod +x` it, or name its interpreter first)"
            )),
            Ok(_) => None,
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/bin", "/usr/bin"].map(std::path::PathBuf::from))
        .any(|dir| std::fs::metadata(dir.join(program)).is_ok_and(|m| runnable(&m)));
    (!found).then(|| format!("cannot start `{program}`: no such command on PATH"))
}

impl ExecToml {
    /// The setting, its paths resolved against `dir` (the folder of the
    /// file that gives it), or what is wrong with it.
    pub fn resolve(&self, dir: &Path) -> Result<ExecSetting, String> {
        if self.exec.as_ref().is_some_and(Vec::is_empty) {
            return Err(
                "exec: give the command and its arguments, e.g. exec = [\"agent/run.sh\"]".into(),
            );
        }
        if let Some(bad) = self
            .pass_env
            .iter()
            .flatten()
            .find(|n| !is_variable_name(n))
        {
            return Err(format!("pass_env: `{bad}` is not a variable's name"));
        }
        Ok(ExecSetting {
            command: self
                .exec
                .iter()
                .flatten()
                .map(|a| absolute_if_beside(dir, a))
                .collect(),
            pass_env: self.pass_env.clone(),
            line: 0,
        })
    }
}

/// `arg` as an absolute path when it names a file or folder in `dir`.
pub fn absolute_if_beside(dir: &Path, arg: &str) -> String {
    let path = Path::new(arg);
    if path.is_absolute() || arg.is_empty() {
        return arg.to_string();
    }
    let beside = dir.join(path);
    match beside.exists() {
        true => std::path::absolute(&beside)
            .map_or_else(|_| arg.to_string(), |p| p.display().to_string()),
        false => arg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_beside_the_file_are_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("agent")).unwrap();
        std::fs::write(dir.path().join("agent/run.sh"), "").unwrap();
        let t = ExecToml {
            exec: Some(vec!["agent/run.sh".into(), "--fast".into()]),
            pass_env: Some(vec!["OPENAI_KEY".into()]),
        };
        let s = t.resolve(dir.path()).unwrap();
        assert_eq!(
            s.command,
            [
                dir.path().join("agent/run.sh").display().to_string(),
                "--fast".to_string()
            ]
        );
        assert_eq!(s.pass_env.as_deref(), Some(&["OPENAI_KEY".to_string()][..]));
        let empty = ExecToml {
            exec: Some(vec![]),
            pass_env: None,
        };
        assert!(empty.resolve(dir.path()).unwrap_err().contains("exec:"));
        let bad = ExecToml {
            exec: None,
            pass_env: Some(vec!["A=B".into()]),
        };
        assert!(bad.resolve(dir.path()).unwrap_err().contains("`A=B`"));
    }
}
