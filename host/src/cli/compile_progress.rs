//! The first compile of a large agent (an interpreter inside: CPython, a
//! JS engine with a bundled SDK) takes tens of seconds: on a terminal a
//! spinner shows it with the time so far; anywhere, a line says when it
//! starts and one how long it took. And the one bar of a suite's cases
//! or a campaign's runs ([`progress`]), and the `--events` file its
//! typed events are written to as lines ([`event_lines`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A bar of `total` `unit`s (`cases`, `runs`) on stderr when it is a
/// terminal; hidden otherwise.
pub fn progress(total: u64, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{bar:24}} {{pos}}/{{len}} {unit}  {{msg}}  {{elapsed}}"
        ))
        .expect("the progress template is valid"),
    );
    bar
}

/// Shown from [`start`](Self::start) until dropped (the compile is done).
pub struct CompileProgress {
    bar: ProgressBar,
    started: Instant,
}

impl CompileProgress {
    pub fn start(text: String) -> Self {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                bar.set_style(style);
            }
            bar.set_message(text);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        } else {
            eprintln!("{text}");
            ProgressBar::hidden()
        };
        CompileProgress {
            bar,
            started: Instant::now(),
        }
    }
}

impl Drop for CompileProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        eprintln!("compiled in {:.1} s", self.started.elapsed().as_secs_f64());
    }
}

/// The `--events` file, when one is given, as the reporter writing each
/// event as a JSON line.
pub fn event_lines(
    path: Option<&std::path::Path>,
) -> anyhow::Result<Option<worldline_report::events::Lines<std::io::BufWriter<std::fs::File>>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = worldline_case::output::create(path)?;
    Ok(Some(worldline_report::events::Lines(
        std::io::BufWriter::new(file),
    )))
}
