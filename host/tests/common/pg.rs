//! A throwaway PostgreSQL cluster for the tests that need a database
//! store: `initdb` into a temporary folder as an unprivileged user (the
//! system user `worldline-pg`, made when the tests run as root), started
//! on a free loopback port with its socket in that folder, and stopped
//! (its folder removed) when the test process ends. The tests only ever
//! connect to this cluster. `tests/run` installs Debian's PostgreSQL when
//! it is missing. A test may start one with TLS on ([`own_tls_cluster`]),
//! its certificates made with `openssl` from a throwaway authority.
//!
//! Why the tests start their own cluster (was decision 0244): a test must never
//! touch a server it did not start and must pass on a fresh CI machine (which
//! has no Docker); one cluster per test process takes under a second and a
//! schema per test keeps tests apart without a cluster each, and a database
//! test is not skipped when PostgreSQL is missing (it could then never fail):
//! it says how to install it.

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
    /// Settings the server starts with beyond the common ones.
    options: String,
    /// Whether the server syncs its log to disk at each commit, as a
    /// production server does ([`own_durable_cluster`]); the tests' do not.
    fsync: bool,
    /// The authority that signed the server's certificate (TLS on).
    pub ca: Option<PathBuf>,
}

/// How a cluster of a test's own takes connections.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// TLS offered; plain connections still accepted.
    On,
    /// Only TLS connections (`hostssl` lines in `pg_hba.conf`), with the
    /// password [`PASSWORD`] checked (SCRAM); each connection logged.
    Only,
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

/// A cluster of the calling test's own with TLS on: its certificate for
/// `127.0.0.1` signed by a throwaway authority ([`Cluster::ca`]).
pub fn own_tls_cluster(tls: Tls) -> Cluster {
    start_with(Some(tls), false)
}

/// A cluster of the caller's own that syncs to disk at each commit
/// (`fsync=on`, as PostgreSQL ships), where the tests' run with
/// `fsync=off`: for figures that compare a database store's durable run
/// with the folder store's, which syncs each bundle (issue 41, item 7).
pub fn own_durable_cluster() -> Cluster {
    start_with(None, true)
}

/// A throwaway certificate authority `dir/NAME.pem` (its key beside it).
pub fn throwaway_ca(dir: &Path, name: &str) -> PathBuf {
    let pem = dir.join(format!("{name}.pem"));
    let mut c = Command::new("openssl");
    c.args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:prime256v1")
        .args(["-nodes", "-days", "2", "-subj"])
        .arg(format!("/CN={name}"))
        .arg("-keyout")
        .arg(dir.join(format!("{name}.key")))
        .arg("-out")
        .arg(&pem);
    run(c, "openssl req (a throwaway authority)");
    pem
}

/// `dir/ca.pem` and the server's `dir/server.crt` and `dir/server.key`,
/// for `127.0.0.1` only, the key the server's user's with mode 0600.
fn certificates(dir: &Path) -> PathBuf {
    let ca = throwaway_ca(dir, "ca");
    let (key, csr, crt, ext) = (
        dir.join("server.key"),
        dir.join("server.csr"),
        dir.join("server.crt"),
        dir.join("server.ext"),
    );
    let mut c = Command::new("openssl");
    c.args(["req", "-new", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:prime256v1")
        .args(["-nodes", "-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&csr);
    run(c, "openssl req (the server's key)");
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let mut c = Command::new("openssl");
    c.args(["x509", "-req", "-days", "2", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(&ca)
        .arg("-CAkey")
        .arg(dir.join("ca.key"))
        .args(["-CAcreateserial", "-out"])
        .arg(&crt)
        .arg("-extfile")
        .arg(&ext);
    run(c, "openssl x509 (the server's certificate)");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    if is_root() {
        let mut c = Command::new("chown");
        c.arg(format!("{USER}:")).arg(&key).arg(&crt);
        run(c, "chown the server's key");
    }
    ca
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
    let out = c.output().unwrap_or_else(|e| {
        // As root the tools run through `runuser` (in /usr/sbin): name the
        // program that could not start, not only the step.
        panic!(
            "{what}: cannot start {}: {e}",
            Path::new(c.get_program()).display()
        )
    });
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn start() -> Cluster {
    start_with(None, false)
}

fn start_with(tls: Option<Tls>, fsync: bool) -> Cluster {
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
        "-E",
        "UTF8",
        "--no-sync",
        "--no-instructions",
    ]);
    if tls == Some(Tls::Only) {
        let pwfile = dir.join("pwfile");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        init.args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()));
    } else {
        init.arg("--auth=trust");
    }
    run(init, "initdb");
    let mut options = String::new();
    let mut ca = None;
    if let Some(tls) = tls {
        let certs = dir.join("tls");
        std::fs::create_dir_all(&certs).unwrap();
        ca = Some(certificates(&certs));
        options = format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={} -c log_connections=on",
            certs.join("server.crt").display(),
            certs.join("server.key").display()
        );
        if tls == Tls::Only {
            // Written in place, so the file stays the server user's.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .unwrap();
        }
    }
    let mut last = String::new();
    for _ in 0..5 {
        let cluster = Cluster {
            port: free_port(),
            dir: dir.clone(),
            bin: bin.clone(),
            options: options.clone(),
            fsync,
            ca: ca.clone(),
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

    /// psql running `sql` as `user`, not yet started.
    fn psql_command(&self, user: &str, sql: &str) -> Command {
        let mut c = Command::new(self.bin.join("psql"));
        c.args(["-h", "127.0.0.1", "-U", user, "-d", "postgres", "-At", "-v"])
            .arg("ON_ERROR_STOP=1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql)
            // Checked only by a cluster that takes TLS only.
            .env("PGPASSWORD", PASSWORD);
        c
    }

    /// Start SQL with psql as the cluster's superuser, in the background
    /// (a transaction another machine holds open).
    pub fn psql_spawn(&self, sql: &str) -> std::process::Child {
        self.psql_command("worldline", sql)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("starting psql")
    }

    /// Run SQL with psql as `user`: its output, or psql's error.
    pub fn psql_as(&self, user: &str, sql: &str) -> Result<String, String> {
        let out = self.psql_command(user, sql).output().expect("running psql");
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
                "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync={} -c max_connections=200{}",
                self.port,
                self.dir.display(),
                if self.fsync { "on" } else { "off" },
                self.options
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

    /// The server's log (connections are logged when TLS is on).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
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
