//! `worldline mcp CASE [--http ADDR [--idle-timeout SECONDS]]`: serve the
//! case's world to one MCP client (stdio by default), record the run, and
//! report it when the client disconnects (over HTTP, or its session goes
//! idle) or on SIGINT/SIGTERM. Over stdio, stdout is the MCP channel, so
//! the report goes to stderr; over HTTP with `--json`, the address is the
//! first line on stdout, the report after it.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use worldline_case::case;
use worldline_case::error::InputError;
use worldline_engine::native::mcp::{self, Transport};
use worldline_engine::run::RunOptions;
use worldline_report::run::RunSummary;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct McpArgs {
    /// The case file (TOML) whose world is served.
    pub case: PathBuf,
    /// Serve MCP over Streamable HTTP at this loopback address (e.g.
    /// 127.0.0.1:8765; port 0 picks a free one) instead of stdio. The
    /// endpoint is http://ADDR/mcp.
    #[arg(long, value_name = "ADDR", value_parser = super::serve_cmd::loopback_addr)]
    pub http: Option<SocketAddr>,
    /// With --http: end the open session (graded as a disconnect) once
    /// its client sends nothing for this many seconds (default 600), so a
    /// client that died without its DELETE does not hold the run.
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub idle_timeout: Option<u64>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Draw fuzz faults for the session's tool calls from this fault
    /// profile (the body of a `[fuzz]` table; `case` for the case's own).
    #[arg(long, value_name = "FILE|case")]
    pub faults: Option<PathBuf>,
    /// The run's seed (default: the case's), which the faults are drawn from.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub common: Common,
}

/// An open session's idle time before it is ended, unless `--idle-timeout`.
const IDLE_TIMEOUT: u64 = 600;

pub fn exec(args: McpArgs) -> Result<ExitCode> {
    if let Some(addr) = args.http.filter(|a| !a.ip().is_loopback()) {
        return Err(InputError::new(
            "--http",
            format!("{addr} is not a loopback address; the world is served to this machine only (use 127.0.0.1:PORT)"),
        )
        .into());
    }
    let idle = super::serve_cmd::idle_timeout(
        args.idle_timeout.unwrap_or(IDLE_TIMEOUT),
        "end a session before its first request",
    )?;
    let stdio = args.http.is_none();
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    if let Some(seed) = args.seed {
        case.seed = seed;
    }
    let faults = match &args.faults {
        None => None,
        Some(p) if p.as_os_str() == "case" => Some(case.fuzz.clone().ok_or_else(|| {
            InputError::new(
                &args.case,
                "the case has no [fuzz] fault profile for --faults case",
            )
        })?),
        Some(path) => Some(worldline_case::case::fuzz::load_file(
            path,
            &case.world,
            case.user.is_some(),
        )?),
    };
    // Bound before the store is opened: a port in use leaves nothing
    // written, no run without events included.
    let transport = match args.http {
        None => Transport::Stdio,
        Some(addr) => Transport::Http {
            listener: std::net::TcpListener::bind(addr)
                .map_err(|e| InputError::cannot_listen("--http", addr, &e))?,
            idle,
        },
    };
    let store = StoreDir::open(&args.common.store)?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    store.put_case(&case)?;
    let opts = RunOptions {
        store: Some(&store),
        faults: faults.map(worldline_case::case::fuzz::FaultSource::Profile),
        ..RunOptions::default()
    };
    let json = args.common.json;
    let outcome = mcp::serve(
        &sandbox,
        &case,
        opts,
        transport,
        |addr| {
            if json {
                let _ = out!(
                    "{}",
                    serde_json::json!({"addr": addr.to_string(), "url": format!("http://{addr}/mcp")})
                );
                use std::io::Write as _;
                let _ = std::io::stdout().flush();
            }
            eprintln!(
                "worldline mcp: {} served at http://{addr}/mcp (the run ends when the client ends its session, or on Ctrl-C)",
                case.name
            );
        },
        |idle| {
            eprintln!(
                "worldline mcp: the session sent nothing for {} s (--idle-timeout): it is ended as a disconnect",
                idle.as_secs()
            );
        },
    )?;
    if stdio {
        // The report's printers write to stdout, which was the MCP
        // channel; the client is gone, so stdout becomes stderr.
        // SAFETY: duplicating a descriptor this process owns.
        unsafe {
            libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO);
        }
    }
    if args.common.json {
        super::print_json_with_settings(&RunSummary::of(&outcome))?;
    } else {
        worldline_report::run::write(&mut super::human_out(), &outcome)?;
    }
    Ok(crate::cli::exit::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
