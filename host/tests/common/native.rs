//! Helpers of the native-agent tests (`native.rs`, `hardening_native.rs`):
//! `worldline mcp --http` started in the background, and one raw HTTP/1.1
//! exchange with a server, so a test can send what no client library
//! would (a forged Origin, no session, a body that never ends).

use super::workspace_root;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The repository's worlds (the incident world the native cases use).
pub fn worlds() -> PathBuf {
    workspace_root().join("worlds")
}

/// `worldline mcp CASE --http 127.0.0.1:0 --json` started, with the URL
/// it serves (the first line on its stdout; its report follows there).
pub fn mcp_http_server(store: &Path, case: &Path) -> (std::process::Child, String) {
    mcp_http_server_with(store, case, &[])
}

/// [`mcp_http_server`] with `extra` arguments.
pub fn mcp_http_server_with(
    store: &Path,
    case: &Path,
    extra: &[&str],
) -> (std::process::Child, String) {
    use std::os::unix::process::CommandExt as _;
    let mut command = super::cli();
    // SAFETY: prctl only, between fork and exec. The server ends when the
    // test's thread does: a test that fails before it ends the server
    // left it serving after the suite.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut server = command
        .args(["mcp".as_ref(), case.as_os_str()])
        .args(["--http", "127.0.0.1:0", "--json"])
        .args(extra)
        .args(["--worlds".as_ref(), worlds().as_os_str()])
        .args(["--store".as_ref(), store.as_os_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting worldline mcp");
    // Read a byte at a time, so the report after the line stays in the
    // pipe for `wait_with_output`.
    let mut stdout = server.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = Vec::new();
        let mut byte = [0u8];
        while stdout.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let _ = tx.send((line, stdout));
    });
    let Ok((line, stdout)) = rx.recv_timeout(Duration::from_secs(120)) else {
        let _ = server.kill();
        panic!("worldline mcp --json printed no first line on stdout within 120 s");
    };
    server.stdout = Some(stdout);
    let first: serde_json::Value = serde_json::from_slice(&line).unwrap_or_else(|e| {
        let _ = server.kill();
        panic!(
            "the first line on stdout is no JSON ({e}): {:?}",
            String::from_utf8_lossy(&line)
        )
    });
    let (addr, url) = (first["addr"].as_str(), first["url"].as_str());
    let url = match (addr, url) {
        (Some(addr), Some(url)) if url == format!("http://{addr}/mcp") => url.to_string(),
        _ => {
            let _ = server.kill();
            panic!("the first line is not {{addr, url}}: {first}")
        }
    };
    (server, url)
}

/// `host:port` of an `http://host:port/...` URL.
pub fn authority(url: &str) -> &str {
    let rest = url.strip_prefix("http://").expect("an http URL");
    rest.split('/').next().unwrap()
}

/// What a server answered.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Send `head` (the request line and headers, without the blank line)
/// and `body` to `addr` on a connection of its own (`Connection: close`
/// and `Content-Length` added) and read the answer, waiting at most
/// `within`.
pub fn exchange(addr: &str, head: &str, body: &str, within: Duration) -> Answer {
    let mut conn = TcpStream::connect(addr).expect("connecting");
    conn.set_read_timeout(Some(within)).unwrap();
    write!(
        conn,
        "{head}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    read_answer(&mut conn)
        .unwrap_or_else(|e| panic!("no answer to {head:?} within {within:?}: {e}"))
}

/// Read one HTTP/1.1 request, as a stand-in server receives it: its head
/// (request line and headers, as sent) and its body (`content-length`
/// bytes), or `None` when the peer closes or fails first.
pub fn read_request(conn: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some((head, buf[head_end..head_end + length].to_vec()))
}

/// Read one HTTP/1.1 answer (read timeouts are the caller's).
pub fn read_answer(conn: &mut TcpStream) -> std::io::Result<Answer> {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not a status line: {line:?}")))?;
    let mut headers = Vec::new();
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "content-length" {
                length = value.trim().parse::<usize>().ok();
            }
            headers.push((name, value.trim().to_string()));
        }
    }
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            reader.read_exact(&mut body)?;
        }
        None => {
            reader.read_to_end(&mut body)?;
        }
    }
    Ok(Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Whether process `pid` is gone (or a zombie, which holds nothing).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
