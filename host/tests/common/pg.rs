//! A throwaway PostgreSQL cluster for the tests that need a database
//! store: `initdb` into a temporary folder as an unprivileged user (the
//! system user `worldline-pg`, made when the tests run as root), started
//! on a free loopback port with its socket in that folder, and stopped
//! (its folder removed) when the test process ends. The tests only ever
//! connect to this cluster. `tests/run` installs Debian's PostgreSQL when
//! it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The unprivileged user a root test process runs the server as.
const USER: &str = "worldline-pg";

/// A running cluster.
pub struct Cluster {
    pub port: u16,
    pub dir: PathBuf,
    bin: PathBuf,
}

/// The cluster of this test process, started on first use.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(start)
}

/// A cluster of the calling test's own (one it may stop).
pub fn own_cluster() -> Cluster {
    start()
}

/// The folder holding `initdb` and `pg_ctl`: `$WORLDLINE_PG_BIN`, else the
/// newest of Debian's `/usr/lib/postgresql/*/bin`.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WORLDLINE_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let v = e.file_name().to_str()?.parse::<u32>().ok()?;
                    let bin = e.path().join("bin");
                    bin.join("initdb").is_file().then_some((v, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().map(|(_, b)| b).unwrap_or_else(|| {
        panic!("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run tests/run, which installs Debian's postgresql, or set WORLDLINE_PG_BIN")
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `program args...`, as the unprivileged user when the tests run as root.
fn as_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", USER, "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn ensure_user() {
    let exists = || {
        Command::new("id")
            .args(["-u", USER])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !exists() {
        // Another test process may be making it at the same moment.
        let _ = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .output();
        assert!(
            exists(),
            "cannot create the system user {USER} to run PostgreSQL as"
        );
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("no free loopback port")
        .port()
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn start() -> Cluster {
    let bin = bin_dir();
    let dir = tempfile::Builder::new()
        .prefix("worldline-pg-")
        .tempdir()
        .expect("a temporary folder for the cluster")
        .keep();
    if is_root() {
        ensure_user();
        run(
            {
                let mut c = Command::new("chown");
                c.arg(format!("{USER}:")).arg(&dir);
                c
            },
            "chown the cluster folder",
        );
    }
    let data = dir.join("data");
    let mut init = as_user(&bin.join("initdb"));
    init.arg("-D").arg(&data).args([
        "-U",
        "worldline",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-sync",
        "--no-instructions",
    ]);
    run(init, "initdb");
    let mut last = String::new();
    for _ in 0..5 {
        let cluster = Cluster {
            port: free_port(),
            dir: dir.clone(),
            bin: bin.clone(),
        };
        match cluster.try_start() {
            Ok(()) => {
                // The server stops when this process ends (a watcher polls
                // it), and its folder goes with it.
                watch(&bin, &dir);
                return cluster;
            }
            Err(e) => last = e,
        }
    }
    panic!("the test PostgreSQL cluster did not start: {last}");
}

/// Stop the cluster and remove its folder once this process is gone.
fn watch(bin: &Path, dir: &Path) {
    let stop = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {user}{pg_ctl} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {dir}",
        pid = std::process::id(),
        user = if is_root() {
            format!("runuser -u {USER} -- ")
        } else {
            String::new()
        },
        pg_ctl = bin.join("pg_ctl").display(),
        data = dir.join("data").display(),
        dir = dir.display(),
    );
    // `setsid --fork` leaves the watcher running in a session of its own
    // and returns at once.
    let started = Command::new("setsid")
        .args(["--fork", "sh", "-c", &stop])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("starting the cluster's watcher");
    assert!(started.success(), "starting the cluster's watcher");
}

impl Cluster {
    /// The address of a store in a schema no other test uses, with a
    /// password in it (the server trusts loopback, so it is never
    /// checked: the tests look for it in everything worldline prints).
    pub fn fresh_store(&self) -> PathBuf {
        PathBuf::from(self.store_in(&fresh_schema()))
    }

    /// The address of the store in `schema`.
    pub fn store_in(&self, schema: &str) -> String {
        format!(
            "postgres://worldline:{PASSWORD}@127.0.0.1:{}/postgres?schema={schema}",
            self.port
        )
    }

    /// Run SQL with psql as the cluster's superuser; its output.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_as("worldline", sql)
            .unwrap_or_else(|e| panic!("psql {sql}: {e}"))
    }

    /// Run SQL with psql as `user`: its output, or psql's error.
    pub fn psql_as(&self, user: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-U", user, "-d", "postgres", "-At", "-v"])
            .arg("ON_ERROR_STOP=1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql)
            .output()
            .expect("running psql");
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
            false => Err(String::from_utf8_lossy(&out.stderr).to_string()),
        }
    }

    /// The address of the store in `schema` for the login role `user`.
    pub fn store_as(&self, user: &str, schema: &str) -> PathBuf {
        PathBuf::from(format!(
            "postgres://{user}:{PASSWORD}@127.0.0.1:{}/postgres?schema={schema}",
            self.port
        ))
    }

    /// A login role `name`, a member of the group role `group` (a store's
    /// `<schema>_viewer` or `<schema>_responder`).
    pub fn login(&self, name: &str, group: &str) {
        self.psql(&format!(
            "CREATE ROLE {name} LOGIN; GRANT {group} TO {name}"
        ));
    }

    fn try_start(&self) -> Result<(), String> {
        let mut ctl = as_user(&self.bin.join("pg_ctl"));
        ctl.arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .arg("-o")
            .arg(format!(
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200",
                self.port,
                self.dir.display()
            ))
            .args(["-w", "-t", "30", "start"]);
        let out = ctl.output().map_err(|e| format!("pg_ctl: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        ))
    }

    /// Start the server again on its port (after [`Cluster::stop`]).
    pub fn start(&self) {
        self.try_start()
            .unwrap_or_else(|e| panic!("restarting the cluster: {e}"));
    }

    /// Stop the server now (a test of the database going away); `start`
    /// brings it back on the same port.
    pub fn stop(&self) {
        let mut c = as_user(&self.bin.join("pg_ctl"));
        c.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"]);
        run(c, "pg_ctl stop");
    }
}

/// The password in every test store address.
pub const PASSWORD: &str = "pw-never-shown-0x5eed";

/// A schema name no other test of any process uses.
pub fn fresh_schema() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
