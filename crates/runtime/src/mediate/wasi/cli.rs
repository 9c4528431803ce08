//! `wasi:cli`: environment, arguments, exit, standard streams, terminals.
//!
//! - virtual: the environment and arguments come from the case; stdin is
//!   empty; nothing is a terminal; the working directory is unset;
//! - recorded: every call, and the exit code;
//! - denied: nothing.

use super::super::bindings::{InputStream, OutputStream, Terminal, wasi};
use super::super::{RunState, ServiceReply};
use serde_json::{Value, json};
use wasmtime::component::Resource;

impl wasi::cli::environment::Host for RunState {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        let r = self.mediated("wasi:cli/environment.get-environment", json!({}), |s| {
            ServiceReply::read(json!(
                s.env.vars.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>()
            ))
        })?;
        Ok(r.as_array()
            .map(|a| {
                a.iter()
                    .map(|kv| {
                        (
                            kv[0].as_str().unwrap_or("").to_string(),
                            kv[1].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        let r = self.mediated("wasi:cli/environment.get-arguments", json!({}), |s| {
            ServiceReply::read(json!(s.env.args))
        })?;
        Ok(r.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        self.call_fixed("wasi:cli/environment.initial-cwd", json!({}), Value::Null)?;
        Ok(None)
    }
}

impl wasi::cli::exit::Host for RunState {
    fn exit(&mut self, status: Result<(), ()>) -> wasmtime::Result<()> {
        let code = if status.is_ok() { 0 } else { 1 };
        self.call_fixed("wasi:cli/exit.exit", json!({"code": code}), Value::Null)?;
        Err(wasmtime::Error::new(match status {
            Ok(()) => super::super::Stop::Exit(0),
            Err(()) => super::super::Stop::ExitFailure,
        }))
    }

    fn exit_with_code(&mut self, code: u8) -> wasmtime::Result<()> {
        self.call_fixed(
            "wasi:cli/exit.exit-with-code",
            json!({"code": code}),
            Value::Null,
        )?;
        Err(wasmtime::Error::new(super::super::Stop::Exit(code as i32)))
    }
}

impl wasi::cli::stdin::Host for RunState {
    fn get_stdin(&mut self) -> wasmtime::Result<Resource<InputStream>> {
        self.call_fixed("wasi:cli/stdin.get-stdin", json!({}), json!("stdin"))?;
        Ok(self.table.push(InputStream::Stdin)?)
    }
}

impl wasi::cli::stdout::Host for RunState {
    fn get_stdout(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.call_fixed("wasi:cli/stdout.get-stdout", json!({}), json!("stdout"))?;
        Ok(self.table.push(OutputStream::Stdout)?)
    }
}

impl wasi::cli::stderr::Host for RunState {
    fn get_stderr(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.call_fixed("wasi:cli/stderr.get-stderr", json!({}), json!("stderr"))?;
        Ok(self.table.push(OutputStream::Stderr)?)
    }
}

impl wasi::cli::terminal_input::Host for RunState {}
impl wasi::cli::terminal_input::HostTerminalInput for RunState {
    fn drop(&mut self, t: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(t)?;
        Ok(())
    }
}
impl wasi::cli::terminal_output::Host for RunState {}
impl wasi::cli::terminal_output::HostTerminalOutput for RunState {
    fn drop(&mut self, t: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(t)?;
        Ok(())
    }
}

impl wasi::cli::terminal_stdin::Host for RunState {
    fn get_terminal_stdin(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stdin.get-terminal-stdin",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::cli::terminal_stdout::Host for RunState {
    fn get_terminal_stdout(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stdout.get-terminal-stdout",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::cli::terminal_stderr::Host for RunState {
    fn get_terminal_stderr(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stderr.get-terminal-stderr",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}
