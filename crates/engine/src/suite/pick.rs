//! Which case files a `test` session runs, in suite order: those that
//! load, narrowed by `--rerun-failed` (the last session's failures), a
//! `--filter` expression, a `--partition` shard and a `--limit`; the files
//! that do not load are kept as collection errors, those the selection
//! leaves out only when it cannot tell (their world and tags unread).

use super::select::{Candidate, Filter};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;
use worldline_case::partition::Partition;

/// What narrows the suite's case files.
#[derive(Default)]
pub struct Selection {
    /// `--filter`: its text (for the message when it selects none) and
    /// the parsed expression.
    pub filter: Option<(String, Filter)>,
    /// `--rerun-failed`: the case files (as [`super::last::key`] names
    /// them) the last session did not pass.
    pub failed: Option<BTreeSet<PathBuf>>,
    /// `--partition`: the shard this machine runs.
    pub partition: Option<Partition>,
    /// `--limit`: at most this many of the selected cases.
    pub limit: Option<usize>,
}

/// A selected case file: its place in the suite, its name, its world and
/// tags, and what was read of it (`T`).
pub struct Picked<T> {
    pub index: usize,
    pub name: String,
    pub path: PathBuf,
    pub world: String,
    pub tags: Vec<String>,
    pub read: T,
}

/// What a [`Selection`] selects.
pub struct Selected<T> {
    /// The cases to run, in suite order.
    pub entries: Vec<Picked<T>>,
    /// The case files that could not be loaded, of those selected or
    /// whose world and tags were not read (collection errors: reported,
    /// and the suite exits 2 at the end, but the other cases still run).
    pub broken: Vec<InputError>,
    /// With a partition: it, and the whole selection it shards (each
    /// case's index and name, before the partition and the limit).
    pub sharded: Option<(Partition, Vec<(usize, String)>)>,
    /// The selected cases this machine does not run (other shards', and
    /// those past `--limit`), in suite order.
    pub others: Vec<Picked<T>>,
}

/// A `--filter` expression parsed, or the usage error naming the flag.
pub fn filter(text: &str) -> Result<(String, Filter), InputError> {
    let parsed = Filter::parse(text).map_err(|m| InputError::new("--filter", m))?;
    Ok((text.to_string(), parsed))
}

/// What [`pick`]'s `read` gives of a case file: what it read of it (or
/// why that failed) with its world's reference and its tags, or the error
/// when not even those were read.
pub type Read<T> = Result<(Result<T, InputError>, String, Vec<String>), InputError>;

/// The cases of `paths` (the suite's case files, in order) that
/// `selection` selects; `read` reads a case file, the files read on every
/// core at once and taken in order. A case whose world and tags were read
/// but which did not load is a collection error only when it is selected
/// (a `-k` that left out the cases of a world whose service is not built
/// failed the suite for each of them). A filter that selects none of the
/// cases is a usage error naming near names.
pub fn pick<T: Send>(
    paths: Vec<PathBuf>,
    selection: &Selection,
    read: impl Fn(&Path) -> Read<T> + Sync,
) -> Result<Selected<T>, InputError> {
    let mut entries = Vec::new();
    let mut broken = Vec::new();
    // Every case the filter left out, for the near names of a filter
    // that selects none.
    let mut seen: Vec<Seen> = Vec::new();
    let cwd = std::env::current_dir().ok();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let reads = worldline_case::parallel::par_map(paths.len(), cores, |i| Ok(read(&paths[i])))
        .map_err(|e| InputError::new("cases", format!("{e:#}")))?;
    let mut loaded = Vec::new();
    for (index, (path, read)) in paths.into_iter().zip(reads).enumerate() {
        match read {
            Ok(read) => loaded.push((index, path, read)),
            Err(e) => broken.push(of_case(&path, e)),
        }
    }
    // Named as every report names them, told apart among all the cases
    // that load, before anything narrows them: `-k name:b/x` matched only
    // the name `x` both `a/x` and `b/x` had before, and a filter that
    // left one of them named it `x`.
    let names = distinct_names(loaded.iter().map(|(_, path, _)| path.as_path()));
    // A hash shard is picked by the name a case has before names are
    // told apart: a case added beside one of the same name renames it
    // (`t` becomes `x/t`), which moved it to another shard.
    let mut hashed: Vec<String> = Vec::new();
    // Whether the filter selected any case, loaded or not.
    let mut matched = false;
    for ((index, path, (read, world, tags)), name) in loaded.into_iter().zip(names) {
        if selection
            .failed
            .as_ref()
            .is_some_and(|f| !f.contains(&super::last::key(&path)))
        {
            continue;
        }
        let seen_case = Seen {
            short: worldline_case::case::discover::display_name(&path),
            name,
            path: filter_path(&path, cwd.as_deref()),
            given: path.display().to_string(),
            world,
            tags,
        };
        if !selection
            .filter
            .as_ref()
            .is_none_or(|(_, f)| f.matches(&seen_case.candidate()))
        {
            seen.push(seen_case);
            continue;
        }
        matched = true;
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                broken.push(of_case(&path, e));
                continue;
            }
        };
        hashed.push(seen_case.short);
        entries.push(Picked {
            index,
            name: seen_case.name,
            path,
            world: seen_case.world,
            tags: seen_case.tags,
            read,
        });
    }
    // A filter that selected only cases that did not load selected them:
    // their errors are the suite's (it said the filter selected none).
    if let (Some((text, f)), false, false) = (&selection.filter, matched, seen.is_empty()) {
        return Err(nothing_selected(text, f, &seen, selection.failed.is_some()));
    }
    let sharded = selection.partition.map(|p| {
        let all = entries.iter().map(|e| (e.index, e.name.clone())).collect();
        (p, all)
    });
    let mut others = Vec::new();
    if let Some(p) = selection.partition {
        let (mine, theirs) = (entries.into_iter().enumerate())
            .partition::<Vec<_>, _>(|(k, _)| p.contains(*k, &hashed[*k]));
        entries = mine.into_iter().map(|(_, e)| e).collect();
        others = theirs.into_iter().map(|(_, e)| e).collect();
    }
    if let Some(n) = selection.limit {
        others.extend(entries.drain(n.min(entries.len())..));
        others.sort_by_key(|e| e.index);
    }
    Ok(Selected {
        entries,
        broken,
        sharded,
        others,
    })
}

/// The name of each case file of `paths`, in order: its file's stem
/// ([`display_name`](worldline_case::case::discover::display_name)), and
/// for cases of one name (`a/x.toml` and `b/x.toml` outside a `cases`
/// folder were both `x`: reports, JUnit and a CI dashboard told them
/// apart by nothing) as many of their last path parts as tell them apart:
/// `a/x` and `b/x`.
pub fn distinct_names<'p>(paths: impl Iterator<Item = &'p Path>) -> Vec<String> {
    let paths: Vec<&Path> = paths.collect();
    let mut names: Vec<String> = (paths.iter())
        .map(|p| worldline_case::case::discover::display_name(p))
        .collect();
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        by_name.entry(name.clone()).or_default().push(i);
    }
    for same in by_name.into_values().filter(|s| s.len() > 1) {
        let parts = |i: usize| -> Vec<String> {
            let stem = paths[i].with_extension("");
            stem.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        };
        let all: Vec<Vec<String>> = same.iter().map(|&i| parts(i)).collect();
        let longest = all.iter().map(Vec::len).max().unwrap_or(1);
        let last = |p: &Vec<String>, k: usize| p[p.len().saturating_sub(k)..].join("/");
        let k = (2..=longest)
            .find(|&k| {
                let told: BTreeSet<String> = all.iter().map(|p| last(p, k)).collect();
                told.len() == all.len()
            })
            .unwrap_or(longest);
        for (&i, p) in same.iter().zip(&all) {
            names[i] = last(p, k);
        }
    }
    names
}

/// A case file's collection error, named by the case: one of a file it
/// names (its world, the world's service) says that file and its place
/// in the message. It was the world's alone, so a suite of cases of one
/// broken world printed that line once per case and named none of them
/// (JUnit's testcases too), and `--rerun-failed` lost them.
pub fn of_case(case: &Path, e: InputError) -> InputError {
    if super::last::key(&e.file) == super::last::key(case) {
        return e;
    }
    InputError::new(case, e.to_string())
}

/// A case file's path as `-k path:` matches it besides the path as found:
/// relative to the working folder when it is inside it, without a leading
/// `./` (the project file's cases were matched only as absolute paths, so
/// `path:cases/*` selected none of them).
fn filter_path(path: &Path, cwd: Option<&Path>) -> String {
    let inside = cwd.and_then(|d| path.strip_prefix(d).ok()).unwrap_or(path);
    let shown = inside.display().to_string();
    match shown.strip_prefix("./") {
        Some(rest) => rest.to_string(),
        None => shown,
    }
}

/// A case the filter did not select.
struct Seen {
    /// As reports name it (told apart from cases of its stem).
    name: String,
    /// Its file's stem, which `-k` also matches.
    short: String,
    path: String,
    given: String,
    world: String,
    tags: Vec<String>,
}

impl Seen {
    fn candidate(&self) -> Candidate<'_> {
        Candidate {
            name: &self.name,
            short: &self.short,
            path: &self.path,
            given: &self.given,
            world: &self.world,
            tags: &self.tags,
        }
    }
}

/// `-k` that selects none of the cases (`rerun`: of those `--rerun-failed`
/// left): a usage error (exit 2, as a typo should not pass as `0 passed`)
/// naming what the filter may have meant.
fn nothing_selected(text: &str, filter: &Filter, seen: &[Seen], rerun: bool) -> InputError {
    let candidates: Vec<Candidate> = seen.iter().map(Seen::candidate).collect();
    let near = filter.near(&candidates, 5);
    let hint = match near.is_empty() {
        false => format!("near names: {}", near.join(", ")),
        true => {
            let some: Vec<&str> = seen.iter().take(5).map(|s| s.name.as_str()).collect();
            format!(
                "nothing is near it; the cases include {} (see `worldline test CASES --list`)",
                some.join(", ")
            )
        }
    };
    // The count was the failures', said as the suite's.
    let of = match rerun {
        true => " the last session did not pass (`--rerun-failed`)",
        false => "",
    };
    InputError::new(
        "--filter",
        format!(
            "`{text}` selects none of the {} case(s){of}; {hint}",
            seen.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-k path:` reads a path inside the working folder relative to it.
    #[test]
    fn a_path_is_matched_relative_to_the_working_folder() {
        let cwd = Path::new("/p");
        assert_eq!(
            filter_path(Path::new("/p/cases/a.toml"), Some(cwd)),
            "cases/a.toml"
        );
        assert_eq!(
            filter_path(Path::new("./cases/a.toml"), Some(cwd)),
            "cases/a.toml"
        );
        assert_eq!(
            filter_path(Path::new("/q/cases/a.toml"), Some(cwd)),
            "/q/cases/a.toml"
        );
        assert_eq!(filter_path(Path::new("cases/a.toml"), None), "cases/a.toml");
    }

    /// The case files of these names (none exists: `pick` reads them
    /// only through `read`).
    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names
            .iter()
            .map(|n| PathBuf::from(format!("/nowhere/{n}.toml")))
            .collect()
    }

    /// A case named `broken` does not load; every other's world is `w`
    /// and its one tag its name.
    /// `unbuilt` reads (its world and tags) but does not load.
    fn read(path: &Path) -> Read<()> {
        let name = worldline_case::case::discover::display_name(path);
        match name.as_str() {
            "broken" => Err(InputError::new(path, "does not load")),
            "worldless" => Err(InputError::new("/nowhere/worlds/w/world.toml", "bad world")),
            "unbuilt" => Ok((
                Err(InputError::new(
                    "/nowhere/worlds/w/service.wasm",
                    "not built yet",
                )),
                "w".to_string(),
                vec![name],
            )),
            _ => Ok((Ok(()), "w".to_string(), vec![name])),
        }
    }

    /// A case that does not load but whose world and tags were read is a
    /// collection error when selected, and nothing when the filter leaves
    /// it out (it failed the suite); one whose tags were not read is an
    /// error either way.
    #[test]
    fn a_case_the_filter_leaves_out_is_no_collection_error() {
        let selection = Selection {
            filter: Some(filter("a").unwrap()),
            ..Selection::default()
        };
        let s = pick(paths(&["a", "unbuilt", "broken"]), &selection, read).unwrap();
        assert_eq!(names(&s), [(0, "a")]);
        let shown: Vec<String> = s.broken.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["/nowhere/broken.toml: does not load"]);
        let s = pick(paths(&["a", "unbuilt"]), &Selection::default(), read).unwrap();
        assert_eq!(names(&s), [(0, "a")]);
        let shown: Vec<String> = s.broken.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["/nowhere/unbuilt.toml: /nowhere/worlds/w/service.wasm: not built yet"]
        );
    }

    /// A filter that selects only a case that does not load selected it:
    /// its error is the suite's, not "selects none" (a freshly imported
    /// benchmark, its service not built, said `-k user_task_0` selected
    /// none of its cases).
    #[test]
    fn a_filter_that_selects_only_an_unloaded_case_reports_its_error() {
        let selection = Selection {
            filter: Some(filter("unbuilt").unwrap()),
            ..Selection::default()
        };
        let s = pick(paths(&["a", "unbuilt"]), &selection, read).unwrap();
        assert!(s.entries.is_empty());
        let shown: Vec<String> = s.broken.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["/nowhere/unbuilt.toml: /nowhere/worlds/w/service.wasm: not built yet"]
        );
    }

    fn names(s: &Selected<()>) -> Vec<(usize, &str)> {
        s.entries
            .iter()
            .map(|e| (e.index, e.name.as_str()))
            .collect()
    }

    #[test]
    fn a_case_whose_world_does_not_load_is_named_with_the_world_s_error() {
        let s = pick(paths(&["worldless", "broken"]), &Selection::default(), read).unwrap();
        let shown: Vec<String> = s.broken.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/nowhere/worldless.toml: /nowhere/worlds/w/world.toml: bad world",
                "/nowhere/broken.toml: does not load"
            ]
        );
    }

    #[test]
    fn everything_loaded_without_narrowing_keeping_the_broken_apart() {
        let s = pick(paths(&["a", "broken", "c"]), &Selection::default(), read).unwrap();
        assert_eq!(names(&s), [(0, "a"), (2, "c")]);
        assert_eq!(s.broken.len(), 1);
        assert!(s.sharded.is_none());
    }

    #[test]
    fn a_filter_selects_by_name_and_tag() {
        let selection = Selection {
            filter: Some(filter("alpha or tag:gamma").unwrap()),
            ..Selection::default()
        };
        let s = pick(paths(&["alpha", "beta", "gamma"]), &selection, read).unwrap();
        assert_eq!(names(&s), [(0, "alpha"), (2, "gamma")]);
    }

    #[test]
    fn a_filter_selecting_none_names_the_near_names() {
        let selection = Selection {
            filter: Some(filter("alpah").unwrap()),
            ..Selection::default()
        };
        let Err(e) = pick(paths(&["alpha", "beta"]), &selection, read) else {
            panic!("a filter selecting none is an error");
        };
        let text = e.to_string();
        assert!(text.contains("selects none of the 2 case(s)"), "{text}");
        assert!(text.contains("near names: alpha"), "{text}");
    }

    #[test]
    fn a_filter_selecting_none_of_the_failures_says_so() {
        let selection = Selection {
            filter: Some(filter("tag:odd").unwrap()),
            failed: Some(paths(&["b"]).into_iter().collect()),
            ..Selection::default()
        };
        let Err(e) = pick(paths(&["a", "b", "c"]), &selection, read) else {
            panic!("a filter selecting none is an error");
        };
        let text = e.to_string();
        assert!(
            text.contains(
                "selects none of the 1 case(s) the last session did not pass (`--rerun-failed`)"
            ),
            "{text}"
        );
    }

    #[test]
    fn rerun_failed_keeps_only_the_failures() {
        let selection = Selection {
            failed: Some(paths(&["b"]).into_iter().collect()),
            ..Selection::default()
        };
        let s = pick(paths(&["a", "b", "c"]), &selection, read).unwrap();
        assert_eq!(names(&s), [(1, "b")]);
    }

    #[test]
    fn a_partition_shards_the_selection_and_remembers_it_whole() {
        let selection = Selection {
            filter: Some(filter("not c").unwrap()),
            partition: Some(Partition::parse("2/2").unwrap()),
            ..Selection::default()
        };
        let s = pick(paths(&["a", "b", "c", "d", "e"]), &selection, read).unwrap();
        // The selection is a, b, d, e; the second of two shards every
        // other one of it.
        assert_eq!(names(&s), [(1, "b"), (4, "e")]);
        let (_, all) = s.sharded.unwrap();
        let all: Vec<usize> = all.iter().map(|(i, _)| *i).collect();
        assert_eq!(all, [0, 1, 3, 4]);
    }

    #[test]
    fn a_limit_runs_the_first_few() {
        let selection = Selection {
            limit: Some(2),
            ..Selection::default()
        };
        let s = pick(paths(&["a", "b", "c"]), &selection, read).unwrap();
        assert_eq!(names(&s), [(0, "a"), (1, "b")]);
    }

    /// Cases of one name outside a `cases` folder are named by the path
    /// parts that tell them apart (both were `x`).
    #[test]
    fn cases_of_one_name_are_told_apart_by_their_folders() {
        let paths = ["/p/a/x", "/p/b/x", "/p/c/d/y", "/q/c/d/y", "/p/z"]
            .map(|p| PathBuf::from(format!("{p}.toml")));
        let s = pick(paths.to_vec(), &Selection::default(), read).unwrap();
        assert_eq!(
            names(&s),
            [
                (0, "a/x"),
                (1, "b/x"),
                (2, "p/c/d/y"),
                (3, "q/c/d/y"),
                (4, "z")
            ]
        );
    }

    /// `-k` matches the names reports give cases of one name (`name:b/x`
    /// selected none of `a/x` and `b/x`, matched as `x`), and a filter
    /// that leaves one of them keeps its told-apart name (it was `x`);
    /// `name:x` still selects both.
    #[test]
    fn a_filter_matches_the_told_apart_names() {
        let paths = ["/p/a/x", "/p/b/x", "/p/z"].map(|p| PathBuf::from(format!("{p}.toml")));
        let picked = |k: &str| {
            let selection = Selection {
                filter: Some(filter(k).unwrap()),
                ..Selection::default()
            };
            let s = pick(paths.to_vec(), &selection, read).unwrap();
            names(&s)
                .into_iter()
                .map(|(i, n)| (i, n.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(picked("name:b/x"), [(1, "b/x".to_string())]);
        assert_eq!(picked("b/x"), [(1, "b/x".to_string())]);
        assert_eq!(
            picked("name:x"),
            [(0, "a/x".to_string()), (1, "b/x".to_string())]
        );
    }
}
