//! What the UI tests share: a `worldline ui` server on a free port (killed
//! when dropped), plain HTTP/1.1 requests over a TCP socket (so a test
//! controls every header, the Host header included), a store holding a
//! failed and a passing run, and the fresh answer the stale event needed.
#![allow(dead_code)]

pub mod webdriver;

use crate::common::{guest, read_bundle, run_json, workspace_root};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `worldline ui`.
pub struct Server {
    child: Child,
    /// Its stdout, kept open while it runs.
    _stdout: BufReader<std::process::ChildStdout>,
    pub port: u16,
    pub token: String,
    /// The URL it printed (with the token).
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `worldline ui --store STORE --port 0 ARGS...`, once it listens.
    pub fn start(store: &Path, args: &[&str]) -> Server {
        Server::start_in(Path::new("."), store, args)
    }

    /// The same, run in `dir` (whose `worldline.toml` it reads).
    pub fn start_in(dir: &Path, store: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_worldline"))
            .current_dir(dir)
            .args(["ui", "--port", "0", "--store"])
            .arg(store)
            .env("WORLDLINE_STORE_CACHE", crate::common::store_cache())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("worldline ui starts");
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("worldline ui on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .expect("binds 127.0.0.1");
        let port: u16 = rest[..rest.find('/').unwrap()].parse().unwrap();
        let token = url.split("token=").nth(1).unwrap().to_string();
        Server {
            child,
            _stdout: stdout,
            port,
            token,
            url,
        }
    }

    /// Send it SIGTERM; whether it ended within `limit`.
    pub fn terminated_within(&mut self, limit: std::time::Duration) -> bool {
        // SAFETY: a signal to the child this server started.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let started = std::time::Instant::now();
        while started.elapsed() < limit {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// Its process's peak resident memory so far (KiB, `VmHWM`): a
    /// server's, which `/usr/bin/time` cannot give until it exits.
    pub fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in {status}"))
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// GET `path` with the token in the query.
    pub fn get(&self, path: &str) -> Response {
        let sep = if path.contains('?') { '&' } else { '?' };
        request(
            self.port,
            "GET",
            &format!("{path}{sep}token={}", self.token),
            &[("Host", &self.host())],
            "",
        )
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A request with exactly these headers (plus Content-Length and
/// Connection: close).
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    // Read until the body is complete: by Content-Length, by the last
    // chunk, or by the end of the connection (chromedriver keeps it open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if complete(&raw) {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{method} {path}: {e} (read {} bytes)", raw.len()),
        }
    }
    parse(&raw)
}

fn complete(raw: &[u8]) -> bool {
    let text = String::from_utf8_lossy(raw);
    let Some((head, rest)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let head = head.to_ascii_lowercase();
    if let Some(len) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return raw.len() >= text.find("\r\n\r\n").unwrap() + 4 + len;
    }
    head.contains("transfer-encoding: chunked") && rest.ends_with("0\r\n\r\n")
}

fn parse(raw: &[u8]) -> Response {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n").expect("a whole response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        unchunk(rest)
    } else {
        rest.to_string()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn unchunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// `application/x-www-form-urlencoded` of pairs.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The value of the first `name="..." value="..."` input in a page.
pub fn input_value(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{name}\" value=\""))?;
    let rest = &html[at + name.len() + 15..];
    Some(rest[..rest.find('"')?].to_string())
}

/// A store with the naive agent's failed run of `incident/stale-deploys`
/// and its passing run of `incident/baseline`.
pub struct Fixture {
    pub failed: String,
    pub passed: String,
    /// The stale `list_deploys` event of the failed run.
    pub stale: usize,
    /// The answer `list_deploys` gives at that moment without the fault.
    pub fresh: Value,
}

pub fn fixture(store: &Path) -> Fixture {
    let cases = workspace_root().join("cases/incident");
    let naive = guest("naive-agent");
    let out = run_json(store, &cases.join("stale-deploys.toml"), &naive);
    out.expect_code(1);
    let failed = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let stale = events
        .iter()
        .position(|e| e["request"]["name"] == "list_deploys" && e["injected"]["action"] == "stale")
        .unwrap();
    let base = run_json(store, &cases.join("baseline.toml"), &naive);
    base.expect_code(0);
    let passed = base.json()["run_id"].as_str().unwrap().to_string();
    let fresh = read_bundle(&base.bundle()).events[stale]["response"]["ok"].clone();
    Fixture {
        failed,
        passed,
        stale,
        fresh,
    }
}
