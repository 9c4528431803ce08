//! Building guests: a Python agent or world service with componentize-py
//! ([`python`]), a JavaScript or TypeScript agent with esbuild and
//! ComponentizeJS ([`js`]), each against the WIT package the binary
//! carries and with the guest SDK written beside it; the pinned toolchains
//! they need and how to install them. Nothing here runs a guest: this
//! crate stands on `worldline-case` alone and never compiles wasmtime. It
//! prints nothing: a build returns what it built and tells its caller what
//! it is doing.

#![deny(unreachable_pub)]

pub mod js;
pub mod python;
mod tree;
