//! A suite's case lines written while it runs: each once its runs are on
//! disk (`SuiteEvent::OnDisk`), in the suite's order, so the lines and
//! their order are those the finished report writes, only earlier (as
//! nextest and pytest say each test as it ends), and no line says a run
//! done that a crash of the machine could still lose (decision 0435).

use std::collections::BTreeMap;
use std::io::{self, Write};
use worldline_engine::suite::{CaseRun, SuiteRun};

/// The lines of a running suite, held until they can be written.
pub struct Streamed {
    /// The cases' indexes in the suite's order.
    order: Vec<usize>,
    /// The widest name, as [`super::write`] pads them.
    width: usize,
    /// Finished cases' lines not written yet, by index, and whether their
    /// runs are on disk.
    held: BTreeMap<usize, (String, bool)>,
    /// How many of `order` are written.
    written: usize,
}

impl Streamed {
    /// For the cases `(index, name)` in the suite's order.
    pub fn new<'a>(cases: impl Iterator<Item = (usize, &'a str)>) -> Streamed {
        let (order, names): (Vec<usize>, Vec<&str>) = cases.unzip();
        Streamed {
            order,
            width: super::name_width(names.into_iter()),
            held: BTreeMap::new(),
            written: 0,
        }
    }

    /// Hold the line of case `c`. A case not run (skipped, or its one run
    /// stopped by a signal) is not held: what its line says is known when
    /// the suite ends, so the lines stop there until then.
    pub fn finished(&mut self, c: &CaseRun) {
        if c.shown().is_some() {
            let line = super::line(c, self.width, None);
            self.held.insert(c.index, (line, false));
        }
    }

    /// The runs of `cases` are on disk: write the lines that are next in
    /// the suite's order and on disk.
    pub fn on_disk(&mut self, cases: &[usize], out: &mut impl Write) -> io::Result<()> {
        for index in cases {
            if let Some(held) = self.held.get_mut(index) {
                held.1 = true;
            }
        }
        while let Some(index) = self.order.get(self.written) {
            match self.held.get(index) {
                Some((_, true)) => {
                    let (line, _) = self.held.remove(index).expect("held above");
                    writeln!(out, "{line}")?;
                    self.written += 1;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// The rest of the report of `s` once it finished: the lines not
    /// written yet and the totals.
    pub fn finish(
        &self,
        out: &mut impl Write,
        err: &mut impl Write,
        s: &SuiteRun,
    ) -> io::Result<()> {
        super::write_from(out, err, s, self.written)
    }
}
