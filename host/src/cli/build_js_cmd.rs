//! `worldline build-js AGENT.{js,ts} [-o agent.wasm]`: build a JavaScript or
//! TypeScript agent into a WebAssembly component, in one command; the
//! build itself is `worldline_build::js`.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use worldline_build::js;

#[derive(Args)]
pub struct BuildJsArgs {
    /// The agent's JavaScript or TypeScript file; it exports `run(task)`.
    pub agent: PathBuf,
    /// Where to write the component (default: AGENT with a `.wasm` extension).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The Node.js executable.
    #[arg(long, default_value = "node")]
    pub node: PathBuf,
    /// The folder holding the pinned npm packages (default: $WORLDLINE_JS_TOOLCHAIN, else worldline/js in the user's cache).
    #[arg(long)]
    pub toolchain: Option<PathBuf>,
    /// Type-check the agent first with `tsc --noEmit` (TypeScript 7.0.2 in
    /// the toolchain folder); its errors are exit 2, as `file:line:column`.
    #[arg(long)]
    pub typecheck: bool,
    /// Take the bundle's whitespace out (names and lines kept, so stacks still name them): a smaller component and less of the
    /// engine's memory for the source it keeps (no pinned SDK needs it).
    #[arg(long)]
    pub minify: bool,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: BuildJsArgs) -> Result<ExitCode> {
    // SIGINT or SIGTERM stops the build: its Node process is killed and
    // its temporary folder removed, then the process ends by the signal.
    let interrupt = worldline_engine::native::Interrupt::start();
    let built = js::build(&js::JsBuild {
        agent: args.agent,
        output: args.output,
        node: args.node,
        toolchain: args.toolchain,
        typecheck: args.typecheck,
        minify: args.minify,
        quiet: args.common.json,
        stopped: worldline_engine::native::Interrupt::noted,
    });
    interrupt.end();
    let built = built?;
    if args.common.json {
        let doc = json!({
            "agent": built.output.display().to_string(),
            "bytes": built.bytes,
            "sha256": built.sha256,
            "node": built.node,
            "componentize_js": built.componentize_js,
            "esbuild": built.esbuild,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out!(
            "built {} ({:.1} MB, sha256 {}) with ComponentizeJS {}, esbuild {}, Node {}",
            built.output.display(),
            built.bytes as f64 / 1e6,
            &built.sha256[..16],
            built.componentize_js,
            built.esbuild,
            built.node
        )?;
    }
    Ok(ExitCode::Ok)
}
