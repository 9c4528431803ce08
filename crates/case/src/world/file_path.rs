//! The world file a path names, as a file system reads it: `./a`, `a//b`,
//! `/a`, `b/../a` and `a` are one file, `a`; a path that climbs above the
//! world's files is refused. World files are keyed by this form (the
//! `[files]` folder's relative paths), so an agent that writes `./report.md`
//! writes the file a case's `[[expect.state]]` check of `file =
//! "report.md"` reads
//! (runs under rules 1 on, decision 0423).

/// The world file `path` names, or why it names none.
pub fn normal(path: &str) -> Result<String, String> {
    let key = walk(path)?;
    if key.is_empty() {
        return Err(format!("the path `{path}` names no file"));
    }
    Ok(key)
}

/// The world file `path` names, as [`normal`] reads it, and a path that
/// ends in `/` names a folder, no file (from rules 6: `files.write("dir/")`
/// wrote a file `dir`).
pub fn normal_file(path: &str) -> Result<String, String> {
    if path.ends_with('/') || path.ends_with("/.") {
        return Err(format!(
            "the path `{path}` names a folder (it ends in `/`): name a file inside it"
        ));
    }
    normal(path)
}

/// The world file (or prefix) `path` names under a run's rules: read by
/// `normal` (`./a` is `a`) when `as_read`, the key as written under rules
/// before it (decision 0423).
pub fn key_under<'a>(
    path: &'a str,
    as_read: bool,
    normal: fn(&str) -> Result<String, String>,
) -> Result<std::borrow::Cow<'a, str>, String> {
    match as_read {
        true => normal(path).map(std::borrow::Cow::Owned),
        false => Ok(std::borrow::Cow::Borrowed(path)),
    }
}

/// A `files.paths` prefix as [`normal`] reads a path: `./runbooks/` is
/// `runbooks/` and `./` (or `/`) is every file; a prefix that is not a
/// whole folder (`run`) is kept as it is past its folders.
pub fn normal_prefix(prefix: &str) -> Result<String, String> {
    let key = walk(prefix)?;
    let folder = prefix.ends_with('/') || prefix.ends_with("/.") || prefix == ".";
    Ok(if folder && !key.is_empty() {
        format!("{key}/")
    } else {
        key
    })
}

fn walk(path: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "the path `{path}` climbs above the world's files: name a file inside them (as `runbooks/db.md`)"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_ending_in_a_slash_names_no_file() {
        assert!(normal_file("dir/").is_err());
        assert!(normal_file("dir/.").is_err());
        assert_eq!(normal_file("./dir/a.md").unwrap(), "dir/a.md");
        assert_eq!(normal("dir/").unwrap(), "dir");
    }

    #[test]
    fn a_path_names_its_file_as_a_file_system_reads_it() {
        for p in [
            "a/b.md",
            "./a/b.md",
            "/a/b.md",
            "a//b.md",
            "a/./b.md",
            "c/../a/b.md",
            "a/b.md/",
        ] {
            assert_eq!(normal(p).as_deref(), Ok("a/b.md"), "{p}");
        }
        for p in ["", ".", "/", "./", "a/.."] {
            assert!(normal(p).unwrap_err().contains("names no file"), "{p}");
        }
        for p in ["..", "../a", "a/../../b"] {
            assert!(normal(p).unwrap_err().contains("climbs above"), "{p}");
        }
    }

    #[test]
    fn a_prefix_keeps_its_folder_and_its_partial_name() {
        for (p, want) in [
            ("", ""),
            ("./", ""),
            ("/", ""),
            (".", ""),
            ("./runbooks/", "runbooks/"),
            ("runbooks/.", "runbooks/"),
            ("runbooks//", "runbooks/"),
            ("run", "run"),
            ("./runbooks/d", "runbooks/d"),
        ] {
            assert_eq!(normal_prefix(p).as_deref(), Ok(want), "{p:?}");
        }
        assert!(normal_prefix("../").is_err());
    }
}
