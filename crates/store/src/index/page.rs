//! A page of a listing (the UI's run list): page `at` of `per` rows,
//! newest first, and how many rows there are in all, without reading more
//! rows than the page when SQL does all the filtering.

use super::Index;
use super::query::Filter;
use super::row::Row;
use anyhow::Result;

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The page's rows, newest first.
    pub rows: Vec<Row>,
    /// How many rows the listing has in all.
    pub total: u64,
    /// Which page this is, from 1 (a page asked for past the last is the
    /// last).
    pub at: u64,
    /// How many pages there are (at least 1).
    pub pages: u64,
}

/// How many pages `total` rows make, `per` a page (at least one).
fn pages_of(total: u64, per: u64) -> u64 {
    total.div_ceil(per).max(1)
}

impl Index {
    /// Page `at` (from 1) of the runs `filter` selects, `per` a page: the
    /// count, then only the page's rows, read in one snapshot of the index.
    pub fn page(&self, filter: &Filter, per: u64, at: u64) -> Result<Page> {
        let per = per.max(1);
        let snapshot = self.conn().unchecked_transaction()?;
        let total = self.count(filter)?;
        let pages = pages_of(total, per);
        let at = at.clamp(1, pages);
        let rows = self.select(filter, Some(per), (at - 1) * per)?;
        snapshot.finish()?;
        Ok(Page {
            rows,
            total,
            at,
            pages,
        })
    }

    /// As [`Index::page`], of the rows `keep` also keeps (it may change a
    /// row it keeps, e.g. redact it): for filters SQL cannot apply. Every
    /// selected row is read once, one at a time; at most two pages of rows
    /// are held (the page asked for, and the last one so far in case it is
    /// past the end).
    pub fn page_kept(
        &self,
        filter: &Filter,
        per: u64,
        at: u64,
        mut keep: impl FnMut(&mut Row) -> bool,
    ) -> Result<Page> {
        let per = per.max(1);
        let at = at.max(1);
        let (mut total, mut wanted, mut last, mut last_at) = (0u64, Vec::new(), Vec::new(), 0);
        self.each(filter, |mut r| {
            if keep(&mut r) {
                let on = total / per + 1;
                total += 1;
                if on == at {
                    wanted.push(r);
                } else if on < at {
                    if on != last_at {
                        last.clear();
                        last_at = on;
                    }
                    last.push(r);
                }
            }
            Ok(true)
        })?;
        let pages = pages_of(total, per);
        Ok(if at <= pages {
            Page {
                rows: wanted,
                total,
                at,
                pages,
            }
        } else {
            Page {
                rows: last,
                total,
                at: pages,
                pages,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreDir;

    fn ids(rows: &[Row]) -> Vec<String> {
        rows.iter().map(|r| r.run_id.clone()).collect()
    }

    /// Every way of paging 25 rows, filtered or not, by SQL or by `keep`,
    /// gives the pages of the whole listing in its order.
    #[test]
    fn pages_are_slices_of_the_whole_listing_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        let mut index = Index::connect(&store).unwrap();
        index
            .upsert_all(&(0..25).map(crate::index::row::sample).collect::<Vec<_>>())
            .unwrap();
        for filter in [
            Filter::default(),
            Filter {
                case: Some("case-1".into()),
                ..Filter::default()
            },
        ] {
            let whole = index.query(&filter).unwrap();
            assert!(
                whole
                    .windows(2)
                    .all(|w| (w[0].created, &w[0].run_id) > (w[1].created, &w[1].run_id))
            );
            for per in [1, 4, 5, 7, 100] {
                let pages = whole.len().div_ceil(per).max(1) as u64;
                for at in 0..=pages + 2 {
                    let sql = index.page(&filter, per as u64, at).unwrap();
                    let kept = index.page_kept(&filter, per as u64, at, |_| true).unwrap();
                    assert_eq!(sql, kept, "per {per}, page {at}");
                    let on = at.clamp(1, pages);
                    assert_eq!((sql.at, sql.pages), (on, pages));
                    assert_eq!(sql.total, whole.len() as u64);
                    let start = (on as usize - 1) * per;
                    let expected: Vec<Row> = whole.iter().skip(start).take(per).cloned().collect();
                    assert_eq!(ids(&sql.rows), ids(&expected), "per {per}, page {at}");
                }
            }
        }
        // `keep` filters, and may change the rows it keeps.
        let odd = index
            .page_kept(&Filter::default(), 3, 2, |r| {
                r.case = r.case.to_uppercase();
                r.seed % 2 == 1
            })
            .unwrap();
        assert_eq!((odd.total, odd.pages, odd.at), (12, 4, 2));
        assert_eq!(
            odd.rows.iter().map(|r| r.seed).collect::<Vec<_>>(),
            [17, 15, 13]
        );
        assert!(odd.rows.iter().all(|r| r.case.starts_with("CASE-")));
        let none = index
            .page_kept(&Filter::default(), 3, 9, |_| false)
            .unwrap();
        assert_eq!(
            (none.total, none.pages, none.at, none.rows),
            (0, 1, 1, vec![])
        );
    }
}
