//! Large-world benchmark (issue 29): a generated world shaped like a ported
//! public airline benchmark — about 3.5 MB of JSON rows (500 users with
//! nested payment methods, saved passengers and reservation lists; 300
//! flights with a status, seats and prices for each of 30 dates; 2,000
//! reservations with nested flights, passengers and payments), its tools
//! served by a Python world service (`bigworld/airline.py`) — with 50
//! cases, and the same world cut to 10 rows.
//!
//! It measures whole `worldline` processes, as a user meets them:
//! `test --list` of the 50 cases (wall time and peak RSS), the 50-case
//! suite with `--jobs 2` (peak RSS), and a run whose agent makes no call,
//! on the big world and on the 10-row one (a run's own time in a suite: 20
//! runs over 1 with `--jobs 1` and with `--jobs 2`, so process start and
//! the world's one load fall out; and
//! one `run` process). Medians of `WORLDLINE_BENCH_REPS` repetitions
//! (default 3), printed as a table.
//!
//! `cargo bench -p worldline --bench bigworld`. `WORLDLINE_BENCH_BIN` names
//! another `worldline` binary to measure on the same world (an older build,
//! for the figures a change replaces); `WORLDLINE_BENCH_PYTHON_SERVICE` a
//! built service (else it is built with `worldline build-python
//! --service`, which needs componentize-py). Results are written up in
//! docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Cases of the suite.
const CASES: usize = 50;
/// No-call cases of each world, for the time per run.
const NO_CALL_RUNS: usize = 20;
const AIRPORTS: [&str; 20] = [
    "JFK", "LAX", "ORD", "DFW", "DEN", "ATL", "SFO", "SEA", "LAS", "MCO", "EWR", "CLT", "PHX",
    "IAH", "MIA", "BOS", "MSP", "DTW", "PHL", "LGA",
];
const CABINS: [&str; 3] = ["basic_economy", "economy", "business"];

/// A small deterministic generator (splitmix64): the same world each time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn name(&mut self) -> Value {
        const FIRST: [&str; 12] = [
            "Mia", "Noah", "Ava", "Liam", "Emma", "Omar", "Yusuf", "Sofia", "Chen", "Aisha",
            "Lucas", "Ivan",
        ];
        const LAST: [&str; 12] = [
            "Garcia", "Smith", "Kim", "Patel", "Rossi", "Nguyen", "Silva", "Khan", "Lopez",
            "Muller", "Ito", "Brown",
        ];
        json!({"first_name": self.pick(&FIRST), "last_name": self.pick(&LAST)})
    }

    fn dob(&mut self) -> String {
        format!(
            "19{:02}-{:02}-{:02}",
            50 + self.below(50),
            1 + self.below(12),
            1 + self.below(28)
        )
    }
}

fn date(day: usize) -> String {
    format!("2026-05-{:02}", day + 1)
}

/// The rows of the three tables: `users` users, `flights` flights and
/// `reservations` reservations (each user lists its own).
fn rows(users: usize, flights: usize, reservations: usize) -> [Vec<Value>; 3] {
    let mut rng = Rng(29);
    let flight_rows: Vec<Value> = (0..flights)
        .map(|i| {
            let origin = AIRPORTS[i % AIRPORTS.len()];
            let destination = AIRPORTS[(i / AIRPORTS.len() + i + 1) % AIRPORTS.len()];
            let dates: serde_json::Map<String, Value> = (0..30)
                .map(|d| {
                    let status = match rng.below(10) {
                        0 => "cancelled",
                        1 | 2 => "landed",
                        _ => "available",
                    };
                    let base = 60 + rng.below(400) as u64;
                    (
                        date(d),
                        json!({
                            "status": status,
                            "available_seats": {"basic_economy": rng.below(20), "economy": 5 + rng.below(40), "business": rng.below(12)},
                            "prices": {"basic_economy": base, "economy": base * 2, "business": base * 5},
                        }),
                    )
                })
                .collect();
            json!({
                "flight_number": format!("HAT{:03}", i + 1),
                "origin": origin, "destination": destination,
                "scheduled_departure_time_est": format!("{:02}:00:00", 6 + i % 16),
                "scheduled_arrival_time_est": format!("{:02}:30:00", 8 + i % 16),
                "dates": dates,
            })
        })
        .collect();
    let mut user_rows: Vec<Value> = (0..users)
        .map(|i| {
            let card = format!("credit_card_{:07}", 1_000_000 + i * 37);
            let gift = format!("gift_card_{:07}", 2_000_000 + i * 41);
            let cert = format!("certificate_{:07}", 3_000_000 + i * 43);
            json!({
                "user_id": format!("user_{:04}", i + 1),
                "name": rng.name(),
                "address": {
                    "address1": format!("{} Main Street", 100 + rng.below(900)),
                    "address2": format!("Suite {}", rng.below(999)),
                    "city": rng.pick(&["Austin", "Denver", "Boston", "Seattle", "Miami"]),
                    "country": "USA", "state": rng.pick(&["TX", "CO", "MA", "WA", "FL"]),
                    "zip": format!("{:05}", rng.below(99_999)),
                },
                "email": format!("user{}@example.com", i + 1),
                "dob": rng.dob(),
                "membership": rng.pick(&["regular", "silver", "gold"]),
                "payment_methods": {
                    card.clone(): {"source": "credit_card", "brand": rng.pick(&["visa", "mastercard"]), "last_four": format!("{:04}", rng.below(9999)), "id": card},
                    gift.clone(): {"source": "gift_card", "amount": rng.below(500), "id": gift},
                    cert.clone(): {"source": "certificate", "amount": 100 + rng.below(400), "id": cert},
                },
                "saved_passengers": [
                    {"first_name": rng.name()["first_name"], "last_name": rng.name()["last_name"], "dob": rng.dob()},
                    {"first_name": rng.name()["first_name"], "last_name": rng.name()["last_name"], "dob": rng.dob()},
                ],
                "reservations": [],
            })
        })
        .collect();
    let reservation_rows: Vec<Value> = (0..reservations)
        .map(|i| {
            let id = format!("R{:05}", i + 1);
            let u = rng.below(users);
            user_rows[u]["reservations"]
                .as_array_mut()
                .expect("reservations is a list")
                .push(json!(id));
            let legs: Vec<Value> = (0..1 + rng.below(2))
                .map(|_| {
                    let f = &flight_rows[rng.below(flights)];
                    let d = date(rng.below(30));
                    json!({"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"], "date": d, "price": f["dates"][&d]["prices"]["economy"]})
                })
                .collect();
            let passengers: Vec<Value> = (0..1 + rng.below(3))
                .map(|_| {
                    let mut p = rng.name();
                    p["dob"] = json!(rng.dob());
                    p
                })
                .collect();
            let total: u64 = legs.iter().map(|l| l["price"].as_u64().unwrap_or(0)).sum::<u64>()
                * passengers.len() as u64;
            let flight_type = if legs.len() == 1 { "one_way" } else { "round_trip" };
            let card = user_rows[u]["payment_methods"]
                .as_object()
                .and_then(|m| m.keys().find(|k| k.starts_with("credit")).cloned())
                .expect("every user has a card");
            json!({
                "reservation_id": id,
                "user_id": user_rows[u]["user_id"],
                "origin": legs[0]["origin"], "destination": legs[legs.len() - 1]["destination"],
                "flight_type": flight_type,
                "cabin": rng.pick(&CABINS),
                "flights": legs, "passengers": passengers,
                "payment_history": [{"payment_id": card, "amount": total}],
                "created_at": format!("2026-04-{:02}T{:02}:{:02}:00", 1 + rng.below(28), rng.below(24), rng.below(60)),
                "total_baggages": rng.below(3), "nonfree_baggages": rng.below(2),
                "insurance": rng.pick(&["yes", "no"]),
                "status": rng.pick(&["confirmed", "confirmed", "confirmed", "cancelled"]),
            })
        })
        .collect();
    [user_rows, flight_rows, reservation_rows]
}

const WORLD_TOML: &str = r#"version = 1
description = "Generated by host/benches/bigworld.rs: an airline benchmark's world, its tools in a Python service."

[service]
component = "service.wasm"

[tables.users]
key = "user_id"
rows = "data/users.json"

[tables.flights]
key = "flight_number"
rows = "data/flights.json"

[tables.reservations]
key = "reservation_id"
rows = "data/reservations.json"
ids = "R{n:05}"

[[tools]]
name = "get_user_details"
params = { type = "object", properties = { user_id = { type = "string" } }, required = ["user_id"] }
op = "get"
table = "users"

[[tools]]
name = "get_reservation_details"
params = { type = "object", properties = { reservation_id = { type = "string" } }, required = ["reservation_id"] }
op = "get"
table = "reservations"

[[tools]]
name = "search_direct_flight"
params = { type = "object", properties = { origin = { type = "string" }, destination = { type = "string" }, date = { type = "string" } }, required = ["origin", "destination", "date"] }
op = "service"
mutates = false

[[tools]]
name = "book_reservation"
params = { type = "object", properties = { user_id = { type = "string" }, flight_number = { type = "string" }, date = { type = "string" }, cabin = { type = "string", enum = ["basic_economy", "economy", "business"] }, passengers = { type = "array" }, payment_id = { type = "string" } }, required = ["user_id", "flight_number", "date", "cabin", "passengers", "payment_id"] }
op = "service"

[[tools]]
name = "cancel_reservation"
params = { type = "object", properties = { reservation_id = { type = "string" } }, required = ["reservation_id"] }
op = "service"
"#;

/// Write world `name@v1` under `worlds` with these rows and the service.
fn write_world(
    worlds: &Path,
    name: &str,
    [users, flights, reservations]: &[Vec<Value>; 3],
    service: &Path,
) -> u64 {
    let dir = worlds.join(name).join("v1");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(
        dir.join("world.toml"),
        format!("name = \"{name}\"\n{WORLD_TOML}"),
    )
    .unwrap();
    std::fs::copy(service, dir.join("service.wasm")).unwrap();
    let mut bytes = 0;
    for (file, rows) in [
        ("users", users),
        ("flights", flights),
        ("reservations", reservations),
    ] {
        let text = serde_json::to_string_pretty(rows).unwrap();
        bytes += text.len() as u64;
        std::fs::write(dir.join("data").join(format!("{file}.json")), text).unwrap();
    }
    bytes
}

/// Case `i` of the suite: look the user up, search, then book (or cancel
/// one of the user's reservations, every fifth case), graded on the gold
/// state of the same write.
fn case_text(i: usize, [users, flights, reservations]: &[Vec<Value>; 3]) -> String {
    let user = &users[(i * 7) % users.len()];
    let uid = user["user_id"].as_str().unwrap();
    let open = user["reservations"].as_array().unwrap().iter().find(|id| {
        reservations
            .iter()
            .any(|r| r["reservation_id"] == **id && r["status"] != "cancelled")
    });
    let (call, gold) = if let (4, Some(rid)) = (i % 5, open) {
        let args = json!({"reservation_id": rid});
        (
            json!({"tool": "cancel_reservation", "args": args}),
            ("cancel_reservation", args),
        )
    } else {
        let f = &flights[(i * 13) % flights.len()];
        let day = (0..30)
            .map(date)
            .find(|d| {
                f["dates"][d]["status"] == "available"
                    && f["dates"][d]["available_seats"]["economy"].as_u64() > Some(1)
            })
            .expect("a generated flight has an open date");
        let card = user["payment_methods"]
            .as_object()
            .unwrap()
            .keys()
            .find(|k| k.starts_with("credit"))
            .unwrap();
        let args = json!({
            "user_id": uid, "flight_number": f["flight_number"], "date": day, "cabin": "economy",
            "passengers": [user["saved_passengers"][0]], "payment_id": card,
        });
        (
            json!({"tool": "book_reservation", "args": args}),
            ("book_reservation", args),
        )
    };
    let f = &flights[(i * 13) % flights.len()];
    let task = json!({"calls": [
        {"tool": "get_user_details", "args": {"user_id": uid}},
        {"tool": "search_direct_flight", "args": {"origin": f["origin"], "destination": f["destination"], "date": date(i % 30)}},
        call,
    ]});
    format!(
        "world = \"airline@v1\"\nseed = {i}\nclock = 2026-04-30T12:00:00Z\ntags = [\"airline\"]\ntask = {}\n\n\
         [expect]\ngold_ignore = [\"reservations.created_at\"]\n\n[[expect.gold]]\ntool = \"{}\"\nargs = {}\n",
        common::toml_inline(&task),
        gold.0,
        common::toml_inline(&gold.1),
    )
}

/// A finished process: its wall time and peak RSS.
struct Measured {
    ms: f64,
    rss_mb: f64,
}

/// Run `bin args`, wait for it with `wait4` (for its own peak RSS) and
/// check it exited with one of `codes`; its stderr goes to `log`.
fn measure(
    bin: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    codes: &[i32],
    log: &Path,
) -> Measured {
    let t = Instant::now();
    // Reaped by `wait4` below, which `Child::wait` cannot replace (it
    // gives no rusage).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(bin)
        .args(args.iter().map(|a| a.as_ref()))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).expect("creating the stderr log"))
        .spawn()
        .expect("starting worldline");
    let (mut status, mut usage) = (0i32, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waits for our own child; `status` and `usage` are ours.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    let code = libc::WEXITSTATUS(status);
    assert!(
        codes.contains(&code),
        "worldline exited {code}: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    Measured {
        ms,
        rss_mb: usage.ru_maxrss as f64 / 1024.0,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Median time and median peak RSS of `n` runs.
fn medians(n: usize, mut one: impl FnMut() -> Measured) -> (f64, f64) {
    let runs: Vec<Measured> = (0..n).map(|_| one()).collect();
    (
        median(runs.iter().map(|m| m.ms).collect()),
        median(runs.iter().map(|m| m.rss_mb).collect()),
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` asks for names: there are none.
    }
    let bin = std::env::var_os("WORLDLINE_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_worldline")),
        PathBuf::from,
    );
    let service = std::env::var_os("WORLDLINE_BENCH_PYTHON_SERVICE").map_or_else(
        || common::python_service("host/benches/bigworld/airline.py"),
        PathBuf::from,
    );
    let agent = common::guest("caller-agent");
    let dir = common::temp_dir();
    let (worlds, store) = (dir.path().join("worlds"), dir.path().join("store"));
    let big = rows(500, 300, 2_000);
    let bytes = write_world(&worlds, "airline", &big, &service);
    let tiny = rows(4, 3, 3);
    write_world(&worlds, "airtiny", &tiny, &service);
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..CASES {
        std::fs::write(cases.join(format!("c{i:02}.toml")), case_text(i, &big)).unwrap();
    }
    for world in ["airline", "airtiny"] {
        let folder = dir.path().join("nocall").join(world);
        std::fs::create_dir_all(&folder).unwrap();
        for i in 0..NO_CALL_RUNS {
            let text = format!(
                "world = \"{world}@v1\"\nseed = {i}\nclock = 2026-04-30T12:00:00Z\ntask = {{ calls = [] }}\n"
            );
            std::fs::write(folder.join(format!("n{i:02}.toml")), text).unwrap();
        }
    }
    let log = dir.path().join("stderr.log");
    let common_args: [&dyn AsRef<std::ffi::OsStr>; 4] = [&"--worlds", &worlds, &"--store", &store];
    let test = |what: &Path, extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"test", &what, &"--agent", &agent];
        args.extend(common_args);
        args.extend(extra);
        measure(&bin, &args, &[0, 1], &log)
    };
    // Warm the store's compile cache (the agent and CPython compile once).
    test(&cases, &[&"--jobs", &"2"]);

    let reps = std::env::var("WORLDLINE_BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let list = medians(reps, || test(&cases, &[&"--list"]));
    let suite = medians(reps, || test(&cases, &[&"--jobs", &"2"]));
    // A run's own cost: 20 no-call runs in one suite over one, so process
    // start and the one load of the world fall out (a difference of two
    // medians, so within their noise it can come out below zero). Issue
    // 41 item 6 asks for `--jobs 2`: the suite's wall time over its runs,
    // with both cores, which also counts the process and the world's load.
    let per_run = |world: &str, jobs: &str| {
        let folder = dir.path().join("nocall").join(world);
        let one = folder.join("n00.toml");
        let all = medians(reps, || test(&folder, &[&"--jobs", &jobs])).0;
        let first = medians(reps, || test(&one, &[&"--jobs", &jobs])).0;
        (
            (all - first) / (NO_CALL_RUNS - 1) as f64,
            all / NO_CALL_RUNS as f64,
        )
    };
    let ((suite_big, _), (suite_tiny, _)) = (per_run("airline", "1"), per_run("airtiny", "1"));
    let ((two_big, whole_big), (two_tiny, whole_tiny)) =
        (per_run("airline", "2"), per_run("airtiny", "2"));
    let one_run = |world: &str| {
        let case = dir.path().join("nocall").join(world).join("n00.toml");
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &case, &"--agent", &agent];
        args.extend(common_args);
        medians(reps, || measure(&bin, &args, &[0], &log)).0
    };
    let (run_big, run_tiny) = (one_run("airline"), one_run("airtiny"));

    println!(
        "bigworld: {} ({:.2} MB of rows, {CASES} cases, medians of {reps})",
        bin.display(),
        bytes as f64 / 1e6
    );
    println!("| measure | median |");
    println!("|---|---|");
    println!(
        "| `test --list`, {CASES} cases | {:.0} ms, {:.0} MB |",
        list.0, list.1
    );
    println!(
        "| the {CASES}-case suite, `--jobs 2` | {:.0} ms, peak {:.0} MB |",
        suite.0, suite.1
    );
    println!(
        "| a no-call run in a suite (20 runs over 1, `--jobs 1`), big world over 10-row world | {suite_big:.1} ms vs {suite_tiny:.1} ms per run: {:+.1} ms |",
        suite_big - suite_tiny
    );
    println!(
        "| a no-call run in a suite (20 runs over 1, `--jobs 2`), big world over 10-row world | {two_big:.1} ms vs {two_tiny:.1} ms per run: {:+.1} ms |",
        two_big - two_tiny
    );
    println!(
        "| the {NO_CALL_RUNS}-run no-call suite's wall time over its runs (process and world load included), `--jobs 2`, big world over 10-row world | {whole_big:.1} ms vs {whole_tiny:.1} ms per run |"
    );
    println!(
        "| the {CASES}-case suite (gold calls to the Python service), `--jobs 2`, per case | {:.1} ms |",
        suite.0 / CASES as f64
    );
    println!(
        "| a no-call `run` process, big world over 10-row world | {run_big:.0} ms vs {run_tiny:.0} ms: {:+.0} ms |",
        run_big - run_tiny
    );
}
