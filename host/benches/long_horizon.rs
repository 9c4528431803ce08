//! The long-horizon family (issue 40): runs of 100, 200, 400, 800 and
//! 1,600 model calls, each sending the whole conversation (every tool
//! result 2 KB of distinct text), on a scripted model
//! (`tests/common/long.rs`, guest `tests/guests/looper`). For each N, on
//! the real binary: bytes recorded (against the bound, 3x the documents
//! read), record time, replay time (`replay`, `identical`), fork at the
//! last tool call, `history` of the whole run, `history -n 50` (the first
//! page), the UI's run page (one request through the app's router, as
//! `benches/ui.rs` does, in this process: its time only), and each
//! command's peak RSS; then a least-squares line of each measure against
//! N (slope, intercept, R²), and the whole as a markdown table to paste
//! into docs/benchmarks.md.
//!
//! `cargo bench -p worldline --bench long_horizon` (release). Set
//! `WORLDLINE_LONG_SIZES=100,200` to run fewer sizes. Results are written
//! up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt as _;
use worldline_store::store::StoreDir;
use worldline_ui::{App, router};

/// The UI's page of a run, one request through the router (token and
/// Host checks included) up to the whole HTML body: its time.
fn ui_page(rt: &tokio::runtime::Runtime, store: &Path, id: &str) -> Duration {
    let start = Instant::now();
    let app = Arc::new(App::new(StoreDir::open(store).unwrap(), 8484, false).unwrap());
    let req = Request::get(format!("/run/{id}?token={}", app.secrets.token()))
        .header(header::HOST, format!("127.0.0.1:{}", app.secrets.port))
        .body(Body::empty())
        .unwrap();
    let len = rt.block_on(async {
        let resp = router(app.clone()).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "/run/{id}");
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .len()
    });
    assert!(len > 0, "an empty run page");
    start.elapsed()
}

/// Least squares `y = a*x + b`: `(a, b, r²)`.
fn fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let syy: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    let a = sxy / sxx;
    (
        a,
        my - a * mx,
        if syy == 0.0 {
            1.0
        } else {
            sxy * sxy / (sxx * syy)
        },
    )
}

fn main() {
    // Criterion's flags (`--bench`) are not ours.
    let sizes: Vec<usize> = std::env::var("WORLDLINE_LONG_SIZES")
        .unwrap_or_else(|_| "100,200,400,800,1600".into())
        .split(',')
        .map(|s| s.trim().parse().expect("WORLDLINE_LONG_SIZES: numbers"))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
    let dir = common::temp_dir();
    let store = dir.path().join("store");
    let cols = [
        "bytes",
        "bound",
        "record_ms",
        "record_rss_mb",
        "replay_ms",
        "replay_rss_mb",
        "fork_ms",
        "fork_rss_mb",
        "history_ms",
        "history_rss_mb",
        "page_ms",
        "page_rss_mb",
        "ui_ms",
    ];
    println!("long_horizon: N | {}", cols.join(" | "));
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for &n in &sizes {
        let root = dir.path().join(format!("n{n}"));
        let (worlds, case) = common::long::write(&root, n);
        let (rec, rec_rss, doc) = common::long::record(&store, &worlds, &case);
        let id = doc["run_id"].as_str().unwrap().to_string();
        let bytes = std::fs::metadata(doc["bundle"].as_str().unwrap())
            .unwrap()
            .len();
        let bound = 3 * common::long::unique_bytes(n);
        let (rep, rep_rss, out) = common::long::measured(&store, &["replay", &id, "--json"]);
        assert!(out.contains("\"identical\""), "{out}");
        // Model call k is event 2k, its tool call 2k+1: the last tool call.
        let at = (2 * n - 3).to_string();
        let (fork, fork_rss, _) = common::long::measured(
            &store,
            &["fork", &id, "--at", &at, "--deny", "get_doc", "--json"],
        );
        let (hist, hist_rss, _) = common::long::measured(&store, &["history", &id]);
        let (page, page_rss, out) = common::long::measured(&store, &["history", &id, "-n", "50"]);
        // 2N events: a first page when there are more than 50.
        assert!(2 * n <= 50 || out.contains("more event"), "{out}");
        let ui = ui_page(&rt, &store, &id);
        let mb = |kib: u64| kib as f64 / 1024.0;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let row = vec![
            bytes as f64,
            bound as f64,
            ms(rec),
            mb(rec_rss),
            ms(rep),
            mb(rep_rss),
            ms(fork),
            mb(fork_rss),
            ms(hist),
            mb(hist_rss),
            ms(page),
            mb(page_rss),
            ms(ui),
        ];
        println!(
            "long_horizon: RESULT {n} | {}",
            row.iter()
                .map(|v| format!("{v:.1}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        assert!(
            bytes <= bound,
            "N={n}: {bytes} bytes recorded, over {bound}"
        );
        rows.push(row);
    }
    let xs: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
    let fits: Vec<_> = (0..cols.len())
        .map(|i| fit(&xs, &rows.iter().map(|r| r[i]).collect::<Vec<_>>()))
        .collect();
    for (col, (a, b, r2)) in cols.iter().zip(&fits) {
        println!("long_horizon: FIT {col}: slope {a:.3} per call, intercept {b:.1}, r² {r2:.4}");
    }
    print!("{}", markdown(&cols, &sizes, &rows, &fits));
}

/// The table for docs/benchmarks.md: a row per N, then the slope (per
/// model call), intercept and R² of each column.
fn markdown(cols: &[&str], sizes: &[usize], rows: &[Vec<f64>], fits: &[(f64, f64, f64)]) -> String {
    let mut t = format!(
        "\n| N | {} |\n|---:|{}\n",
        cols.join(" | "),
        "---:|".repeat(cols.len())
    );
    let line = |head: String, vals: Vec<String>| format!("| {head} | {} |\n", vals.join(" | "));
    for (n, row) in sizes.iter().zip(rows) {
        t += &line(
            n.to_string(),
            row.iter().map(|v| format!("{v:.1}")).collect(),
        );
    }
    t += &line(
        "slope / call".into(),
        fits.iter().map(|f| format!("{:.3}", f.0)).collect(),
    );
    t += &line(
        "intercept".into(),
        fits.iter().map(|f| format!("{:.1}", f.1)).collect(),
    );
    t += &line(
        "R²".into(),
        fits.iter().map(|f| format!("{:.4}", f.2)).collect(),
    );
    t
}
