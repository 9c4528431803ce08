//! Sharding work across machines: which share of a suite's cases or a
//! campaign's seeds this machine runs (`--partition count:i/n` or
//! `hash:i/n`, as cargo-nextest names them). Every item lands in exactly
//! one shard, so the shards together do the whole work once.

use std::fmt;

/// Which share of the selection this machine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// The k-th case (0-based) goes to shard `k % total + 1`.
    Count { shard: u64, total: u64 },
    /// A case goes to shard `hash(name) % total + 1` (stable as cases are
    /// added or removed).
    Hash { shard: u64, total: u64 },
}

impl Partition {
    /// `count:i/n`, `hash:i/n`, or `i/n` (count), with 1 ≤ i ≤ n.
    pub fn parse(text: &str) -> Result<Partition, String> {
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k, r),
            None => ("count", text),
        };
        let (i, n) = rest
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not i/n (for example 1/3 or hash:2/4)"))?;
        let number = |s: &str| {
            s.parse::<u64>().map_err(|e| match e.kind() {
                // All digits, past what a shard's number can be: it was
                // called "not a whole number".
                std::num::IntErrorKind::PosOverflow => format!(
                    "`{s}` in `{text}` is too large: give a whole number from 1 to {}",
                    u64::MAX
                ),
                _ => format!("`{s}` in `{text}` is not a whole number"),
            })
        };
        let (shard, total) = (number(i)?, number(n)?);
        if total == 0 {
            return Err(format!(
                "`{text}`: the number of shards (n) must be at least 1"
            ));
        }
        if shard == 0 || shard > total {
            return Err(format!("`{text}`: the shard must be between 1 and {total}"));
        }
        match kind {
            "count" => Ok(Partition::Count { shard, total }),
            "hash" => Ok(Partition::Hash { shard, total }),
            other => Err(format!(
                "`{other}:` is not a partition kind; use count: or hash:"
            )),
        }
    }

    /// Whether the `index`-th item (named `name`: a case name, or a seed
    /// as text) of the work is in this shard.
    pub fn contains(&self, index: usize, name: &str) -> bool {
        match *self {
            Partition::Count { shard, total } => index as u64 % total == shard - 1,
            Partition::Hash { shard, total } => {
                use sha2::{Digest, Sha256};
                let d = Sha256::digest(name.as_bytes());
                let h = u64::from_be_bytes(d[..8].try_into().expect("eight bytes"));
                h % total == shard - 1
            }
        }
    }
}

impl Partition {
    /// This shard's number and the shard count.
    pub fn shard_of(&self) -> (u64, u64) {
        match *self {
            Partition::Count { shard, total } | Partition::Hash { shard, total } => (shard, total),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Partition::Count { .. } => "count",
            Partition::Hash { .. } => "hash",
        }
    }

    /// The partitions of a set of shard reports, checked to be every shard
    /// of one partitioning, each once (for `worldline merge`).
    pub fn whole_set(texts: &[&str]) -> Result<Vec<Partition>, String> {
        let parts = texts
            .iter()
            .map(|t| {
                Partition::parse(t).map_err(|m| format!("a report's partition is impossible: {m}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = parts.first() else {
            return Err("no reports to merge".into());
        };
        let (_, total) = first.shard_of();
        if let Some(other) = parts
            .iter()
            .find(|p| p.kind() != first.kind() || p.shard_of().1 != total)
        {
            return Err(format!(
                "the reports are shards of different partitionings ({first} and {other}); merge the shards of one `--partition KIND:i/n`"
            ));
        }
        // As many shards as there are reports are looked at, never
        // `total` of them: a report may say `1/18446744073709551615`.
        let mut seen = std::collections::BTreeSet::new();
        for p in &parts {
            if !seen.insert(p.shard_of().0) {
                return Err(format!(
                    "shard {p} is in two reports; merge each shard once"
                ));
            }
        }
        let absent = total - seen.len() as u64;
        let missing: Vec<String> = (1..=total)
            .filter(|i| !seen.contains(i))
            .take(crate::shown::MAX_ITEMS)
            .map(|i| format!("{}:{i}/{total}", first.kind()))
            .collect();
        match missing.as_slice() {
            [] => {}
            [one] => {
                return Err(format!(
                    "shard {one} is missing; merge the reports of every shard"
                ));
            }
            many => {
                let more = absent - many.len() as u64;
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                return Err(format!(
                    "shards {}{more} are missing; merge the reports of every shard",
                    many.join(", ")
                ));
            }
        }
        Ok(parts)
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Partition::Count { shard, total } => write!(f, "count:{shard}/{total}"),
            Partition::Hash { shard, total } => write!(f, "hash:{shard}/{total}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_cover_the_whole_exactly_once() {
        for text in ["count:1/3", "hash:1/3"] {
            let kind = text.split(':').next().unwrap();
            let mut seen = vec![0; 40];
            for shard in 1..=3 {
                let p = Partition::parse(&format!("{kind}:{shard}/3")).unwrap();
                for (i, n) in seen.iter_mut().enumerate() {
                    if p.contains(i, &format!("case-{i}")) {
                        *n += 1;
                    }
                }
            }
            assert!(seen.iter().all(|n| *n == 1), "{text}: {seen:?}");
        }
        assert_eq!(
            Partition::parse("2/3").unwrap(),
            Partition::Count { shard: 2, total: 3 }
        );
        assert_eq!(
            Partition::parse("4/3").unwrap_err(),
            "`4/3`: the shard must be between 1 and 3"
        );
        assert_eq!(
            Partition::parse("1/0").unwrap_err(),
            "`1/0`: the number of shards (n) must be at least 1"
        );
        assert_eq!(
            Partition::whole_set(&["count:1/2"]).unwrap_err(),
            "shard count:2/2 is missing; merge the reports of every shard"
        );
        assert_eq!(
            Partition::whole_set(&["hash:1/2", "hash:1/3"]).unwrap_err(),
            "the reports are shards of different partitionings (hash:1/2 and hash:1/3); merge the shards of one `--partition KIND:i/n`"
        );
        assert_eq!(
            Partition::whole_set(&["hash:2/2", "hash:1/2", "hash:2/2"]).unwrap_err(),
            "shard hash:2/2 is in two reports; merge each shard once"
        );
        assert_eq!(
            Partition::whole_set(&["hash:3/2"]).unwrap_err(),
            "a report's partition is impossible: `hash:3/2`: the shard must be between 1 and 2"
        );
        assert_eq!(
            Partition::whole_set(&["2/2", "count:1/2"]).unwrap().len(),
            2
        );
        assert_eq!(
            Partition::parse("x/3").unwrap_err(),
            "`x` in `x/3` is not a whole number"
        );
    }
}
