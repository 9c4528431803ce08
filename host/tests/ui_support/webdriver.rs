//! A small W3C WebDriver client over plain HTTP, driving Debian's
//! `chromium` headless through `chromedriver` (both from apt; tests/run
//! installs them). Enough for the UI tests: navigate, find, click, type,
//! press keys, read text, take screenshots.

use super::request;
use base64::Engine as _;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session; both end when dropped,
/// and with them the folder they were given as `TMPDIR`: Chromium leaves
/// the socket folders of its profile lock (`org.chromium.Chromium.*`) in
/// the temporary folder when it quits (two in `/tmp` per browser before).
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    tmp: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn find_program(names: &[&str]) -> Option<String> {
    let path = std::env::var("PATH").unwrap_or_default();
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}

impl Browser {
    pub fn start() -> Browser {
        let driver = find_program(&["chromedriver"]).unwrap_or_else(|| {
            panic!("chromedriver is not installed; run `apt-get install -y chromium chromium-driver` (tests/run does)")
        });
        let chromium = find_program(&["chromium", "chromium-browser"])
            .expect("chromium is installed with chromium-driver");
        let port = free_port();
        let tmp = crate::common::temp_dir();
        // Its own process group, which the Chromium processes it starts
        // join: ended whole when the browser is dropped.
        let child = Command::new(driver)
            .process_group(0)
            .arg(format!("--port={port}"))
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut b = Browser {
            driver: child,
            port,
            session: String::new(),
            tmp,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]
        }}}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"].as_str().expect("a session").to_string();
        b
    }

    /// The temporary folder chromedriver and Chromium were given.
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map_or_else(String::new, |b| b.to_string());
        let host = format!("127.0.0.1:{}", self.port);
        let r = request(
            self.port,
            method,
            path,
            &[("Host", &host), ("Content-Type", "application/json")],
            &body,
        );
        let v: Value =
            serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.body));
        assert!(
            r.status == 200,
            "WebDriver {method} {path} -> {}: {}",
            r.status,
            v
        );
        v["value"].clone()
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", &self.s("/url"), Some(json!({"url": url})));
    }

    pub fn url(&self) -> String {
        self.call("GET", &self.s("/url"), None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The first element matching a CSS selector (waiting up to 10 s).
    pub fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let body = json!({"using": "css selector", "value": css}).to_string();
            let host = format!("127.0.0.1:{}", self.port);
            let r = request(
                self.port,
                "POST",
                &self.s("/element"),
                &[("Host", &host), ("Content-Type", "application/json")],
                &body,
            );
            if r.status == 200 {
                let v: Value = serde_json::from_str(&r.body).unwrap();
                return v["value"][ELEMENT]
                    .as_str()
                    .unwrap_or_else(|| panic!("find `{css}`: {v}"))
                    .to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no element `{css}` on {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many elements match a CSS selector (after the first shows up,
    /// or 0 when none does within a second).
    pub fn count(&self, css: &str) -> usize {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let v = self.call(
                "POST",
                &self.s("/elements"),
                Some(json!({"using": "css selector", "value": css})),
            );
            let n = v.as_array().map_or(0, Vec::len);
            if n > 0 || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the first element matching `css` is shown (not hidden by
    /// CSS or the `hidden` attribute).
    pub fn displayed(&self, css: &str) -> bool {
        let el = self.find(css);
        self.call("GET", &self.s(&format!("/element/{el}/displayed")), None)
            .as_bool()
            .unwrap()
    }

    /// The texts of every element matching `css`.
    pub fn texts(&self, css: &str) -> Vec<String> {
        let v = self.call(
            "POST",
            &self.s("/elements"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let el = e[ELEMENT].as_str().unwrap();
                self.call("GET", &self.s(&format!("/element/{el}/text")), None)
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// The value of an attribute of the first element matching `css`.
    pub fn attr(&self, css: &str, name: &str) -> Option<String> {
        let el = self.find(css);
        self.call(
            "GET",
            &self.s(&format!("/element/{el}/attribute/{name}")),
            None,
        )
        .as_str()
        .map(str::to_string)
    }

    /// Scroll the first element matching `css` to the top of the window.
    pub fn scroll_to(&self, css: &str) {
        self.find(css);
        self.call(
            "POST",
            &self.s("/execute/sync"),
            Some(json!({"script": "document.querySelector(arguments[0]).scrollIntoView()", "args": [css]})),
        );
    }

    pub fn click(&self, css: &str) {
        let el = self.find(css);
        self.call(
            "POST",
            &self.s(&format!("/element/{el}/click")),
            Some(json!({})),
        );
    }

    pub fn text(&self, css: &str) -> String {
        let el = self.find(css);
        self.call("GET", &self.s(&format!("/element/{el}/text")), None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Replace a text box's contents.
    pub fn fill(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.call(
            "POST",
            &self.s(&format!("/element/{el}/clear")),
            Some(json!({})),
        );
        self.call(
            "POST",
            &self.s(&format!("/element/{el}/value")),
            Some(json!({"text": text})),
        );
    }

    /// Press keys on whatever has the focus (WebDriver key names: `\u{E007}`
    /// is Enter; `ctrl` holds Control down meanwhile).
    pub fn keys(&self, keys: &str, ctrl: bool) {
        let mut actions = Vec::new();
        if ctrl {
            actions.push(json!({"type": "keyDown", "value": "\u{E009}"}));
        }
        for c in keys.chars() {
            actions.push(json!({"type": "keyDown", "value": c.to_string()}));
            actions.push(json!({"type": "keyUp", "value": c.to_string()}));
        }
        if ctrl {
            actions.push(json!({"type": "keyUp", "value": "\u{E009}"}));
        }
        self.call(
            "POST",
            &self.s("/actions"),
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// Wait until the page's URL contains `part`.
    pub fn wait_url(&self, part: &str) -> String {
        self.wait_until(&format!("a URL with {part}"), |u| u.contains(part))
    }

    /// Wait until the page's URL satisfies `ok` (2 minutes at most: a
    /// fork runs an agent before its page comes).
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let u = self.url();
            if ok(&u) {
                return u;
            }
            assert!(
                Instant::now() < deadline,
                "the browser stayed on {u}, expected {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Set the window's size (a phone's width: 390).
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            &self.s("/window/rect"),
            Some(json!({"width": width, "height": height})),
        );
    }

    /// The value of a JavaScript expression on the page.
    pub fn eval(&self, expression: &str) -> Value {
        self.call(
            "POST",
            &self.s("/execute/sync"),
            Some(json!({"script": format!("return ({expression});"), "args": []})),
        )
    }

    /// Save a PNG of the window.
    pub fn screenshot(&self, path: &Path) {
        let b64 = self.call("GET", &self.s("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let host = format!("127.0.0.1:{}", self.port);
            let _ = request(self.port, "DELETE", &self.s(""), &[("Host", &host)], "");
        }
        // chromedriver and every Chromium process it started, then wait
        // until none is left before the temporary folder goes: a Chromium
        // process still quitting wrote its folders back into it after it
        // was removed (the folder outlived the browser, now and then).
        let group = self.driver.id() as libc::pid_t;
        // SAFETY: signals to the process group this browser started.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.driver.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        // SAFETY: signal 0 only asks whether the group has a process left.
        while unsafe { libc::kill(-group, 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
