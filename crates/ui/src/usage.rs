//! What a run's model calls used: per call and per run, the tokens the
//! provider reported, the cost from the price table (the case's
//! `[prices]` over the project's), the virtual latency the run's clock
//! advanced by, and — labelled as such — the real latency a live
//! provider took (metadata: never seen by the agent, never replayed).

use super::html::url;
use maud::{Markup, html};
use serde_json::Value;
use worldline_case::prices::Prices;
use worldline_log::log::payload::{ModelAnswer, ModelRequest};
use worldline_log::log::{Call, Event};

/// One model call's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallUsage {
    pub seq: u64,
    pub model: String,
    pub input: u64,
    pub output: u64,
    /// US dollars; none when the price table has no price for the model.
    pub cost: Option<f64>,
    pub virtual_ms: u64,
    pub real_ms: Option<u64>,
}

/// The figures of every model call of a run, and their sums.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunUsage {
    pub calls: Vec<CallUsage>,
    /// How many events the run has.
    pub events: usize,
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The name a model call is shown by (the usage table's and the chart's):
/// the model that answered, a failed call its provider (`scripted`
/// answers as `scripted`; a failed call showed the model asked for).
pub(crate) fn model_name<'a>(
    request: &'a ModelRequest,
    response: &'a ModelAnswer,
) -> Option<&'a str> {
    let record = response.model_call.as_ref();
    let provider = record.and_then(|r| r.detail.get("provider")?.as_str());
    response.model().or(provider).or(request.model())
}

impl CallUsage {
    fn of(seq: u64, request: &ModelRequest, response: &ModelAnswer, prices: &Prices) -> CallUsage {
        let record = response.model_call.as_ref();
        let null = Value::Null;
        let usage = record
            .and_then(|r| r.usage.as_ref())
            .or(response.usage())
            .unwrap_or(&null);
        // Priced as the model that answered, else the one asked for.
        let priced = response.model().or(request.model()).unwrap_or("?");
        let input = n(&usage["prompt_tokens"]).max(n(&usage["input_tokens"]));
        let output = n(&usage["completion_tokens"]).max(n(&usage["output_tokens"]));
        // A failed call used no tokens: it cost nothing, priced or not (one
        // timeout made a priced run's whole cost "no price").
        let failed = response.error.is_some() && input == 0 && output == 0;
        let latency = |f: fn(&worldline_log::log::payload::ProviderRecord) -> &Option<Value>| {
            record.and_then(|r| f(r).as_ref()).and_then(Value::as_u64)
        };
        CallUsage {
            seq,
            cost: if failed {
                Some(0.0)
            } else {
                prices.cost(priced, input, output)
            },
            model: model_name(request, response).unwrap_or("?").to_string(),
            input,
            output,
            virtual_ms: latency(|r| &r.virtual_latency_ms).unwrap_or(0),
            real_ms: latency(|r| &r.real_latency_ms),
        }
    }
}

impl RunUsage {
    pub(crate) fn of(events: &[Event], prices: &Prices) -> RunUsage {
        RunUsage {
            calls: events
                .iter()
                .filter_map(|e| match e.typed() {
                    Call::ModelComplete { request, response } => {
                        Some(CallUsage::of(e.seq, &request, &response, prices))
                    }
                    _ => None,
                })
                .collect(),
            events: events.len(),
        }
    }

    /// The sums as one line's figures (cost only when every call is priced).
    pub(crate) fn total(&self) -> CallUsage {
        let sum = |f: fn(&CallUsage) -> u64| self.calls.iter().map(f).sum::<u64>();
        let real: Vec<u64> = self.calls.iter().filter_map(|c| c.real_ms).collect();
        CallUsage {
            seq: 0,
            model: String::new(),
            input: sum(|c| c.input),
            output: sum(|c| c.output),
            cost: self.calls.iter().map(|c| c.cost).sum(),
            virtual_ms: sum(|c| c.virtual_ms),
            real_ms: (!real.is_empty()).then(|| real.iter().sum()),
        }
    }
}

/// The judged checks' calls (`[[expect.judge]]`) of a run's recorded
/// `grade`, summed on a line of their own, apart from the agent's model
/// calls: each priced as the model that answered, else the one asked for.
pub(crate) fn judged(grade: Option<&Value>, prices: &Prices) -> Markup {
    let judges: Vec<&Value> = worldline_log::log::usage::judges(grade).collect();
    if judges.is_empty() {
        return html! {};
    }
    // Calls and tokens as every reader counts them; the cost and the real
    // latency (none shown where no call recorded one) call by call.
    let totals = worldline_log::log::usage::ModelTotals::of_judges(judges.iter().copied());
    let (mut cost, mut real) = (Some(0.0), None::<u64>);
    for judge in &judges {
        let record = &judge["response"]["model_call"];
        let (i, o) = (
            n(&record["usage"]["prompt_tokens"]),
            n(&record["usage"]["completion_tokens"]),
        );
        let priced = (record["model"].as_str())
            .or(record["params"]["model"].as_str())
            .unwrap_or("?");
        // A call that used no tokens (a failed one) cost nothing.
        let this = match (i, o) {
            (0, 0) => Some(0.0),
            _ => prices.cost(priced, i, o),
        };
        cost = cost.zip(this).map(|(a, b)| a + b);
        if let Some(ms) = record["real_latency_ms"].as_u64() {
            real = Some(real.unwrap_or(0) + ms);
        }
    }
    html! {
        h2 { "Judge usage" }
        p #judge-usage {
            b { (super::html::count(totals.calls, "judge call")) } " (the judged checks', apart from the agent's) · tokens " (totals.prompt_tokens) " in, " (totals.completion_tokens) " out · cost "
            (dollars(cost)) " · " span.real { "real latency (wall clock, not replayed) " (ms(real)) }
        }
    }
}

/// US dollars, to the cent for large sums and finer for small ones.
pub(crate) fn dollars(cost: Option<f64>) -> String {
    match cost {
        None => "no price".into(),
        Some(c) if c >= 1.0 => format!("${c:.2}"),
        Some(c) => format!("${c:.6}"),
    }
}

fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v} ms"))
}

/// The section: the run's totals, then a row per call: all of them, or,
/// past [`SHOWN`](super::html::SHOWN) calls, those among the events of
/// `range` (the timeline's page, as the chart does: a 600-call run's
/// table was 600 rows), the page's pager beside them, which keeps the
/// runtime's rows shown when `noise` (as the timeline's pager does: its
/// links showed the other page without them).
pub(crate) fn section(
    id: &str,
    u: &RunUsage,
    (range, noise): (std::ops::Range<usize>, bool),
) -> Markup {
    if u.calls.is_empty() {
        return html! {};
    }
    let t = u.total();
    let cut = u.calls.len() > super::html::SHOWN;
    let rows: Vec<&CallUsage> = (u.calls.iter())
        .filter(|c| !cut || range.contains(&(c.seq as usize)))
        .collect();
    let page = range.start / super::timeline::PER_PAGE + 1;
    let keep = if noise { "&noise=1" } else { "" };
    html! {
        h2 { "Model usage" }
        p #usage-total {
            b { (super::html::count(u.calls.len() as u64, "model call")) } " · tokens " (t.input) " in, " (t.output) " out · cost "
            span #run-cost { (dollars(t.cost)) } " · virtual latency " (ms(Some(t.virtual_ms)))
            " · " span.real { "real latency (wall clock, not replayed) " (ms(t.real_ms)) }
        }
        table #usage {
            thead { tr { th { "event" } th { "model" } th.num { "tokens in" } th.num { "tokens out" } th.num { "cost" } th.num { "virtual latency" } th.num { "real latency (wall clock)" } } }
            tbody {
                @for c in &rows {
                    tr {
                        td { a href={ "/run/" (url(id)) "/event/" (c.seq) } { (c.seq) } }
                        td.mono { (c.model) }
                        td.num { (c.input) } td.num { (c.output) } td.num { (dollars(c.cost)) }
                        td.num { (ms(Some(c.virtual_ms))) } td.num { (ms(c.real_ms)) }
                    }
                }
            }
        }
        @if cut {
            p.pager #usage-page {
                "the " (rows.len()) " of " (u.calls.len()) " calls among events " (range.start) "–" (range.end.saturating_sub(1)) " (the timeline's page " (page) ")"
                @if page > 1 { " " a href={ "/run/" (url(id)) "?page=" (page - 1) (keep) "#usage" } { "← earlier" } }
                @if range.end < u.events { " " a href={ "/run/" (url(id)) "?page=" (page + 1) (keep) "#usage" } { "later →" } }
            }
        }
        @if t.cost.is_none() {
            p.keys { "Costs come from a " code { "[prices]" } " table in the case or in worldline.toml (docs/formats.md)." }
        }
    }
}
