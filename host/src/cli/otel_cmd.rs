//! `worldline otel RUN... [--endpoint URL | -o FILE]`: runs as OpenTelemetry
//! traces (GenAI semantic conventions), over OTLP/HTTP or to a file.

use super::Common;
use super::redact_opts::RedactArgs;
use super::runs_cmd::run_id_of;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::io::Write as _;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_log::log::bundle;
use worldline_otel::ExportTraceServiceRequest;
use worldline_otel::{Options, RunView, send};
use worldline_report::otel::OtelSummary;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct OtelArgs {
    /// Runs (ids, unique prefixes, or bundle paths).
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318 (spans go to /v1/traces).
    #[arg(long, required_unless_present = "output", conflicts_with = "output")]
    pub endpoint: Option<String>,
    /// Write the OTLP protobuf request to this file instead.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Include tool arguments and results, and model messages (redacted
    /// like any view).
    #[arg(long)]
    pub content: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Unix nanoseconds of the run's virtual time 0: its case's clock (for a
/// redacted copy, whose case stays behind, the clock its header carries),
/// else when the run was created.
fn start_ns(store: &StoreDir, run_id: &str, b: &bundle::HeldBundle) -> u64 {
    let clock = match &b.header.redacted {
        Some(r) => (r.clock.as_deref()).and_then(worldline_case::time::parse_rfc3339),
        None => store.case_clock(&b.header.case_hash),
    };
    let ns = clock.unwrap_or_else(|| {
        i128::from(worldline_store::index::row::created_of_id(run_id).unwrap_or(0)) * 1_000_000_000
    });
    u64::try_from(ns).unwrap_or(0)
}

pub fn exec(args: OtelArgs) -> Result<ExitCode> {
    let first = args.runs.first().map_or("", String::as_str);
    let store = super::store_of_run(&args.common.store, first)?;
    let mut views = Vec::new();
    let mut seen = Vec::new();
    for run in &args.runs {
        let path = store.resolve_run(run)?;
        // A run named twice (by its id and a prefix) is one trace: its
        // spans were sent twice.
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        let bundle = bundle::read_held(&path).map_err(InputError::from)?;
        // A redacted copy is exported as the run it is a copy of.
        let run_id = match &bundle.header.redacted {
            Some(r) => r.original_run.clone(),
            None => run_id_of(&path),
        };
        views.push(RunView {
            start_ns: start_ns(&store, &run_id, &bundle),
            run_id,
            bundle,
        });
    }
    let ids: Vec<&str> = views.iter().map(|v| v.run_id.as_str()).collect();
    let mut redactor = args.redaction.redactor(&store, "otel", &ids)?;
    // A trace shows whole runs: what each hides is learnt first, as
    // `history` learns it, so a value a later event (or the world a
    // `state` path names) hides is hidden in the spans before it, in a
    // user's turn and in the root span's status too.
    if let Some(r) = redactor.as_mut() {
        let mut worlds = std::collections::BTreeSet::new();
        for v in &mut views {
            store.learn_bundle(r, &mut v.bundle, &mut worlds);
        }
    }
    let opts = Options {
        content: args.content,
    };
    // Each request is sent or written as it is made, then dropped: the
    // export holds one request's spans, not every run's.
    let mut export = |send: &mut dyn FnMut(ExportTraceServiceRequest) -> Result<()>| {
        worldline_otel::export(&mut views, redactor.as_mut(), &opts, send)
    };
    let (sent, to, answered) = match (&args.endpoint, &args.output) {
        (Some(endpoint), _) => {
            let url = send::traces_url(endpoint)?;
            // A collector that closes the connection while a body is sent
            // (a 413 before reading it) is a broken pipe, said as an error:
            // it was SIGPIPE (exit 141, not a word), whose default `main`
            // restores for `| head`; posted from a thread that holds it,
            // one request at a time as the spans are made here.
            let (tx, rx) = std::sync::mpsc::sync_channel::<ExportTraceServiceRequest>(1);
            let (sent, answered) = std::thread::scope(|s| {
                let poster = s.spawn(|| {
                    worldline_engine::native::hold_sigpipe_on_this_thread();
                    let mut poster = send::Poster::new(&url)?;
                    for req in rx {
                        poster.post(&req)?;
                    }
                    Ok::<_, anyhow::Error>(poster.answered())
                });
                // A send fails when the poster stopped: its error says why.
                let sent = export(&mut |req| {
                    tx.send(req)
                        .map_err(|_| anyhow::anyhow!("the poster stopped"))
                });
                drop(tx);
                let answered =
                    (poster.join()).unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                Ok::<_, anyhow::Error>((sent, answered?))
            })?;
            let sent = sent?;
            let spans = sent.spans;
            // A partial success is a 200 that did not take every span
            // (it was taken as all of them, unsaid); the exit code stays
            // 0, as the spans it took are there.
            let to = send::shown(&url);
            match (answered.rejected_spans, &answered.message) {
                (0, None) => {}
                (0, Some(m)) => eprintln!(
                    "note: {to}: the collector took every span and said: {}",
                    worldline_case::shown::text(m)
                ),
                (n, m) => eprintln!(
                    "warning: {to}: the collector rejected {n} of the {spans} spans (an OTLP partial success){}",
                    m.as_deref().map_or_else(String::new, |m| format!(
                        ": {}",
                        worldline_case::shown::text(m)
                    ))
                ),
            }
            (sent, to, Some(answered))
        }
        // `-o -`: the requests to stdout, as `export -o -` writes (it made
        // a file named `-`).
        (None, Some(file)) if file.as_os_str() == "-" => {
            let mut out = std::io::stdout().lock();
            let sent = export(&mut |req| send::write_one(&mut out, &req))?;
            out.flush()?;
            (sent, "stdout".to_string(), None)
        }
        (None, Some(file)) => {
            let mut sent = None;
            worldline_case::output::write_with(file, |out| {
                sent = Some(export(&mut |req| send::write_one(out, &req))?);
                Ok(())
            })?;
            let sent = sent.expect("written");
            (sent, file.display().to_string(), None)
        }
        (None, None) => unreachable!("clap requires --endpoint or --output"),
    };
    let summary = OtelSummary {
        http_status: answered.as_ref().map(|a| a.status),
        rejected_spans: answered.as_ref().map(|a| a.rejected_spans),
        partial_success_message: answered.and_then(|a| a.message),
        // A viewer's runs are redacted copies already, read with no
        // redactor.
        redacted: redactor.is_some() || views.iter().any(|v| v.bundle.header.redacted.is_some()),
        requests: sent.requests,
        run_ids: views.iter().map(|v| v.run_id.clone()).collect(),
        runs: views.len(),
        spans: sent.spans,
        to,
        trace_ids: views
            .iter()
            .map(|v| hex::encode(worldline_otel::ids_of(&v.run_id, &v.bundle).0))
            .collect(),
    };
    // What was sent goes to stderr when the request took stdout.
    let to_stdout = args.output.as_ref().is_some_and(|f| f.as_os_str() == "-");
    match (args.common.json, to_stdout) {
        (true, false) => super::print_json(&summary)?,
        (true, true) => eprintln!("{}", serde_json::to_string(&summary)?),
        (false, false) => worldline_report::otel::write(&mut super::human_out(), &summary)?,
        (false, true) => worldline_report::otel::write(&mut std::io::stderr().lock(), &summary)?,
    }
    Ok(ExitCode::Ok)
}
