//! A reproduction rate as text (`repro --json` prints
//! [`Repro`](worldline_engine::fuzz::repro::Repro) itself).

use std::io::{self, Write};
use worldline_case::shown::one_line;
use worldline_engine::fuzz::repro::Repro;
use worldline_log::log::{Status, rules};

pub fn write(out: &mut impl Write, r: &Repro) -> io::Result<()> {
    writeln!(out, "repro {}: {}", r.run, r.outcome)?;
    // A run under older rules is repeated under them (decision 0423).
    if r.rules != rules::CURRENT {
        writeln!(
            out,
            "  under rules {}, the run's (decision 0423); this worldline's new runs are under rules {}: run the case again to see it under those",
            r.rules,
            rules::CURRENT
        )?;
    }
    writeln!(
        out,
        "  reproduced {}/{} = {:.1}% (95% interval {:.1}% – {:.1}%)",
        r.reproduced,
        r.times,
        r.rate * 100.0,
        r.interval[0] * 100.0,
        r.interval[1] * 100.0
    )?;
    for (outcome, n) in &r.outcomes {
        writeln!(out, "  {n:>6}  {outcome}")?;
        if let Some(why) = r.errors.get(outcome) {
            writeln!(out, "          first: {}", one_line(why))?;
        }
    }
    // How many distinct runs the repetitions were (cli.md promises it;
    // the text said it only when it was 1). A run the watchdog stopped
    // ended by the wall clock, not by anything the seeds decide: the same
    // run every time says nothing of the model seed then (it said nothing
    // in the case draws from it).
    let timeout = Status::Timeout.as_str();
    let watched = r.outcome == timeout || r.outcomes.contains_key(timeout);
    if watched {
        match r.distinct_runs {
            1 => writeln!(out, "  every repetition recorded the same events")?,
            n => writeln!(out, "  {n} distinct runs")?,
        }
        writeln!(
            out,
            "  a `timeout` is the wall-clock watchdog's ([limits] timeout_ms), not replayable: whether a repetition times out depends on this machine's speed and load, not only on the seeds, so the rate is of this machine now"
        )?;
    } else if r.distinct_runs == 1 {
        writeln!(
            out,
            "  every repetition was the same run: nothing in this case draws from the model seed"
        )?;
    } else {
        writeln!(out, "  {} distinct runs", r.distinct_runs)?;
    }
    if !r.env_differs.is_empty() {
        writeln!(out, "  {}", crate::verify::env_differs(&r.env_differs))?;
    }
    Ok(())
}
