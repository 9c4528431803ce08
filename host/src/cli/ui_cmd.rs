//! `worldline ui [--store DIR] [--port P] [--open] [--read-only]
//! [--redact FILE | --unredacted] [--token NAME[=ROLE]]... [RUN | --last-failed]`.

use super::Common;
use super::redact_opts::RedactArgs;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use worldline_case::error::InputError;
use worldline_pgstore::roles::Role;
use worldline_store::store::StoreDir;
use worldline_ui::Start;

// `--json`, which every other command takes, is refused here (the UI
// serves pages): not listed in `ui --help`.
#[derive(Args)]
#[command(mut_arg("json", |a| a.hide(true)))]
pub struct UiArgs {
    /// Open this run's page first (id, unique prefix or bundle path).
    pub run: Option<String>,
    /// Open the newest failed (or faulted) run first.
    #[arg(long, conflicts_with = "run")]
    pub last_failed: bool,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8484)]
    pub port: u16,
    /// Open the printed URL in the desktop's browser.
    #[arg(long)]
    pub open: bool,
    /// Look only: no fork or replay forms (and their requests are refused).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    /// On a database store, issue a token to this reader: `NAME=viewer`
    /// or `NAME=responder` (NAME alone: the connection's role); repeat
    /// for each (default: one token named after the database user).
    #[arg(long = "token", value_name = "NAME[=ROLE]", value_parser = token_arg)]
    pub tokens: Vec<(String, Option<Role>)>,
    #[command(flatten)]
    pub common: Common,
}

/// `NAME[=ROLE]`.
fn token_arg(text: &str) -> Result<(String, Option<Role>), String> {
    let (name, role) = match text.split_once('=') {
        Some((n, r)) => (
            n,
            Some(Role::parse(r).ok_or_else(|| format!("role `{r}`: give viewer or responder"))?),
        ),
        None => (text, None),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
    {
        return Err(format!(
            "token name `{name}`: letters, digits, `-`, `_`, `.` and `@`"
        ));
    }
    Ok((name.to_string(), role))
}

pub fn exec(args: UiArgs) -> Result<ExitCode> {
    if args.common.json {
        return Err(InputError::new("--json", "`ui` serves pages; it has no JSON output").into());
    }
    // A bundle's path inside a store serves that store, as every command
    // on one run reads it (its page was a 404 of the store named).
    let store = match &args.run {
        Some(r) => super::store_path_of_run(&args.common.store, r)
            .unwrap_or(&args.common.store)
            .to_path_buf(),
        None => args.common.store.clone(),
    };
    // A mistyped --store is not an empty store to serve (one was made
    // there, and its empty list shown), as every reader of a whole store
    // refuses it: a folder that is not there, one that is no store (a
    // project's root had a store's folders made in it), a database schema
    // that holds none (it was made, with its roles).
    StoreDir::open_existing(&store)?;
    let start = match (args.run, args.last_failed) {
        (Some(r), _) => Start::Run(r),
        (None, true) => Start::LastFailed,
        (None, false) => Start::Runs,
    };
    worldline_ui::serve(
        worldline_ui::Config {
            store,
            port: args.port,
            open: args.open,
            read_only: args.read_only,
            start,
            redact: args.redaction.redact,
            unredacted: args.redaction.unredacted,
            prices: project_prices()?,
            tokens: args.tokens,
        },
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )?;
    Ok(ExitCode::Ok)
}

/// The `[prices]` of the project file found from the working folder.
fn project_prices() -> Result<worldline_case::prices::Prices> {
    Ok(
        match worldline_case::project::find(std::path::Path::new(".")) {
            Some(file) => worldline_case::project::load(&file)?.prices,
            None => worldline_case::prices::Prices::default(),
        },
    )
}
