//! Per-case data overlays: rows and files a case adds, replaces or removes
//! in its world before the run, so one world version serves many cases.
//!
//! An overlaid world is the base world with a changed initial state and
//! its own hash: the SHA-256 of the canonical JSON record `{"overlay":
//! [...], "world": <base hash>}`. The store keeps that record as an
//! object under that hash (content-addressed like every object), so a
//! recorded run names the overlaid world and the store finds the base
//! world and the overlay from it.

use super::World;
use super::state::FileData;
use crate::canon;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One `[[overlay]]` entry of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    /// A table whose rows change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Rows added or replaced (by their key field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Value>,
    /// Keys of rows removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    /// A world file that changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The file's new text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Remove the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
}

/// What the store keeps for an overlaid world (its bytes hash to the
/// overlaid world's hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub overlay: Vec<Overlay>,
    /// The base world's hash (its manifest's).
    pub world: String,
}

impl Record {
    /// The record's canonical bytes.
    pub fn bytes(&self) -> String {
        canon::to_string(self)
    }

    /// The record in `bytes`, when they are one (a world manifest is not).
    pub fn parse(bytes: &[u8]) -> Option<Record> {
        serde_json::from_slice(bytes).ok()
    }
}

/// Why `file` is no world file's name, if it is not: a world file is
/// named by its path inside the world's files folder, `a/b.txt` (an
/// overlay named `../../secret.txt`, `./x` or `` made a file no world
/// folder can hold, and no check of `a/b.txt` finds).
fn bad_name(file: &str) -> Option<&'static str> {
    if file.is_empty() {
        return Some("a world file's name is not empty: name the file");
    }
    if file.starts_with('/') || file.contains('\\') {
        return Some(
            "a world file is named by its path inside the world's files, `a/b.txt`, with `/`, not from the root",
        );
    }
    file.split('/')
        .any(|part| matches!(part, "" | "." | ".."))
        .then_some("a world file's path has no empty, `.` or `..` part: name it as it is inside the world's files, `a/b.txt`")
}

/// `world` with `overlay` applied (entry `i` names itself in errors as
/// `[[overlay]] i+1`).
pub fn apply(world: Arc<World>, overlay: &[Overlay]) -> Result<Arc<World>, String> {
    if overlay.is_empty() {
        return Ok(world);
    }
    let mut world = Arc::unwrap_or_clone(world);
    let reference = world.reference();
    for (i, o) in overlay.iter().enumerate() {
        let at = |m: String| format!("[[overlay]] {}: {m}", i + 1);
        match (&o.table, &o.file) {
            (Some(table), None) => {
                if o.text.is_some() || o.delete {
                    return Err(at("`text` and `delete` are for a `file`".into()));
                }
                // It changed nothing, and said nothing of it (a recorded
                // case keeps it, decision 0412).
                if o.rows.is_empty() && o.remove.is_empty() && crate::new_rules::apply() {
                    return Err(at(format!(
                        "table `{table}` with neither `rows` nor `remove` changes nothing: give the rows to add or replace, or the keys to remove"
                    )));
                }
                let t = world
                    .initial
                    .tables
                    .get_mut(table)
                    .ok_or_else(|| at(format!("no table `{table}` in {reference}")))?;
                for key in &o.remove {
                    if t.rows.remove(key).is_none() {
                        return Err(at(format!("no {table} row `{key}` to remove")));
                    }
                }
                for row in &o.rows {
                    let key = match row.get(&t.key) {
                        Some(k) if row.is_object() && !k.is_null() => {
                            super::row_key(k).map_err(|why| {
                                at(format!("table `{table}`: key field `{}` {why}", t.key))
                            })?
                        }
                        _ => {
                            return Err(at(format!(
                                "every row needs its key field `{}` (table `{table}`)",
                                t.key
                            )));
                        }
                    };
                    t.rows.insert(key, row.clone());
                }
            }
            (None, Some(file)) => {
                if !o.rows.is_empty() || !o.remove.is_empty() {
                    return Err(at("`rows` and `remove` are for a `table`".into()));
                }
                if let Some(why) = bad_name(file).filter(|_| crate::new_rules::apply()) {
                    return Err(at(format!("file `{file}`: {why}")));
                }
                match (&o.text, o.delete) {
                    (Some(text), false) => {
                        world
                            .initial
                            .files
                            .insert(file.clone(), FileData::Text(text.clone()));
                    }
                    (None, true) => {
                        if world.initial.files.remove(file).is_none() {
                            return Err(at(format!("no world file `{file}` to delete")));
                        }
                    }
                    _ => return Err(at("a `file` takes `text` or `delete = true`".into())),
                }
            }
            _ => return Err(at("name either a `table` or a `file`".into())),
        }
    }
    let record = Record {
        overlay: overlay.to_vec(),
        world: world.hash.clone(),
    };
    world.hash = canon::sha256_hex(record.bytes());
    world.overlaid = Some(record);
    Ok(Arc::new(world))
}

impl World {
    /// The hash of the world's manifest (the base world's, for an
    /// overlaid one).
    pub fn manifest_hash(&self) -> &str {
        self.overlaid.as_ref().map_or(&self.hash, |r| &r.world)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn world() -> Arc<World> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("files/bill.txt"), "old").unwrap();
        std::fs::write(dir.path().join("rows.jsonl"), "{\"id\": \"a\", \"n\": 1}\n").unwrap();
        std::fs::write(
            dir.path().join("world.toml"),
            "name = \"w\"\nversion = 1\n[files]\ndir = \"files\"\n[tables.t]\nkey = \"id\"\nrows = \"rows.jsonl\"\n",
        )
        .unwrap();
        crate::world::load_dir(dir.path()).unwrap()
    }

    fn parse(toml_text: &str) -> Vec<Overlay> {
        #[derive(Deserialize)]
        struct Doc {
            overlay: Vec<Overlay>,
        }
        toml::from_str::<Doc>(toml_text).unwrap().overlay
    }

    /// A file named outside the world's files (`../../secret.txt`), with
    /// a `.` or empty part, or empty, is refused (it was made, and no
    /// check of its plain name found it).
    #[test]
    fn a_file_named_as_no_world_file_is_refused() {
        for name in [
            "../../secret.txt",
            "",
            "./x.txt",
            "a//b.txt",
            "/etc/x",
            "a/../b.txt",
        ] {
            let o = parse(&format!("[[overlay]]\nfile = {name:?}\ntext = \"x\"\n"));
            let e = apply(world(), &o).unwrap_err();
            assert!(
                e.contains(&format!("file `{name}`: a world file")),
                "{name}: {e}"
            );
        }
        let o = parse("[[overlay]]\nfile = \"notes/a.txt\"\ntext = \"x\"\n");
        assert!(apply(world(), &o).is_ok());
    }

    #[test]
    fn rows_and_files_change_and_the_hash_says_so() {
        let base = world();
        let o = parse(
            "[[overlay]]\ntable = \"t\"\nrows = [{ id = \"b\", n = 2 }, { id = \"a\", n = 9 }]\n\
             [[overlay]]\nfile = \"bill.txt\"\ntext = \"new\"\n",
        );
        let w = apply(base.clone(), &o).unwrap();
        assert_eq!(w.initial.row("t", "a"), Some(&json!({"id": "a", "n": 9})));
        assert_eq!(w.initial.row("t", "b"), Some(&json!({"id": "b", "n": 2})));
        assert_eq!(w.initial.files["bill.txt"], FileData::Text("new".into()));
        assert_ne!(w.hash, base.hash);
        assert_eq!(w.manifest_hash(), base.hash);
        let record = w.overlaid.as_ref().unwrap();
        assert_eq!(canon::sha256_hex(record.bytes()), w.hash);
        assert_eq!(
            Record::parse(record.bytes().as_bytes()).as_ref(),
            Some(record)
        );

        let removed = apply(
            base.clone(),
            &parse("[[overlay]]\ntable = \"t\"\nremove = [\"a\"]\n[[overlay]]\nfile = \"bill.txt\"\ndelete = true\n"),
        )
        .unwrap();
        assert!(removed.initial.tables["t"].rows.is_empty());
        assert!(removed.initial.files.is_empty());
        assert_eq!(apply(base.clone(), &[]).unwrap().hash, base.hash);
    }

    #[test]
    fn mistakes_are_named() {
        let err = |t: &str| apply(world(), &parse(t)).unwrap_err();
        assert_eq!(
            err("[[overlay]]\ntable = \"nope\"\nremove = [\"a\"]\n"),
            "[[overlay]] 1: no table `nope` in w@v1"
        );
        assert_eq!(
            err("[[overlay]]\ntable = \"t\"\nremove = [\"zz\"]\n"),
            "[[overlay]] 1: no t row `zz` to remove"
        );
        assert_eq!(
            err("[[overlay]]\ntable = \"t\"\nrows = [{ n = 1 }]\n"),
            "[[overlay]] 1: every row needs its key field `id` (table `t`)"
        );
        assert_eq!(
            err("[[overlay]]\nfile = \"x\"\n"),
            "[[overlay]] 1: a `file` takes `text` or `delete = true`"
        );
        assert_eq!(
            err("[[overlay]]\nrows = []\n"),
            "[[overlay]] 1: name either a `table` or a `file`"
        );
    }
}
