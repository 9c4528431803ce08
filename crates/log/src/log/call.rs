//! The log's vocabulary: every kind of event, its wire name (defined here
//! once), and [`Call`], the typed form of an event's `call`, `request` and
//! `response` that readers match on.
//!
//! [`Call`] is tagged by `call` the way serde tags an enum internally, so
//! it reads the event's own JSON: the wire format is the bundle's, unchanged
//! (`tests/vocabulary.rs` holds it against bundles recorded before this
//! type existed). A call that arrived over HTTP (a vendor's model API, MCP,
//! a world's routes) is the same `tools.call` or `model.complete` with its
//! [`Transport`] noted; a native process's start and exit are kinds of
//! their own. Calls of WASI interfaces are [`Call::Wasi`], named by the
//! interface the WIT defines; anything else reads as [`Call::Other`], so a
//! bundle from a newer host still reads.

pub use super::payload::{
    Answer, ApprovalAsk, CallError, Decision, Ending, Exited, FileRequest, HttpRequest, HttpStatus,
    LoopbackRequest, ModelAnswer, ModelRequest, Note, Player, ProviderRecord, Refusal,
    RefusedRequest, Said, Spawn, Spec, StdioRequest, ToolRequest, Transport, Turn, Via,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Declares the kinds: each variant's wire name is written once, and both
/// [`Kind`] and [`Call`] are generated from the one table.
macro_rules! vocabulary {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal { request: $req:ty, response: $resp:ty } ),* $(,)?) => {
        /// Every kind of event the host records, by its wire name (`call`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $( $(#[$doc])* $variant, )*
        }

        impl Kind {
            /// Every kind, in the order of the table.
            pub const ALL: &[Kind] = &[$(Kind::$variant),*];

            /// The wire name: the event's `call`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)*
                }
            }

            /// Whether `request` and `response` have this kind's shape, or
            /// what does not.
            pub fn check(self, request: &Value, response: &Value) -> Result<(), String> {
                match self {
                    $(Kind::$variant => {
                        <$req>::deserialize(request).map_err(|e| format!("its request: {e}"))?;
                        <$resp>::deserialize(response).map_err(|e| format!("its response: {e}"))?;
                    })*
                }
                Ok(())
            }

            /// The kind named `call`, if it is one of the host's own.
            pub fn of(call: &str) -> Option<Kind> {
                match call {
                    $($name => Some(Kind::$variant),)*
                    _ => None,
                }
            }
        }

        /// An event's call, request and response, typed by its kind.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "call")]
        pub enum Call {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant { request: $req, response: $resp },
            )*
            /// A call of a WASI interface (`wasi:clocks/wall-clock.now`).
            #[serde(untagged)]
            Wasi {
                call: WasiName,
                request: Value,
                response: Value,
            },
            /// A kind this host does not know, or a request or response
            /// that does not have its kind's shape: kept as it was.
            #[serde(untagged)]
            Other {
                call: String,
                request: Value,
                response: Value,
            },
        }

        /// Each kind as a type ([`CallKind`]), named as its [`Kind`].
        pub mod kind {
            use super::*;
            $(
                $(#[$doc])*
                pub struct $variant;

                impl CallKind for $variant {
                    const KIND: Kind = Kind::$variant;
                    type Request = $req;
                    type Response = $resp;
                }
            )*
        }

        impl Call {
            /// The kind, when it is one of the host's own.
            pub fn kind(&self) -> Option<Kind> {
                match self {
                    $(Call::$variant { .. } => Some(Kind::$variant),)*
                    Call::Wasi { .. } | Call::Other { .. } => None,
                }
            }
        }
    };
}

/// A kind of call as a type: the mediator writes its request and reads
/// its recorded answer with the same types every reader matches on (see
/// `Mediator::call`), so what is written is what is read.
pub trait CallKind {
    const KIND: Kind;
    type Request: Serialize + DeserializeOwned;
    type Response: Serialize + DeserializeOwned;
}

vocabulary! {
    /// `tools.specs`: the tools the case permits.
    ToolsSpecs = "worldline:agent/tools.specs" { request: Via, response: Vec<Spec> },
    /// `tools.call`: one tool call, however it arrived.
    ToolsCall = "worldline:agent/tools.call" { request: ToolRequest, response: Answer },
    /// `model.complete`: one model call, however it arrived.
    ModelComplete = "worldline:agent/model.complete" { request: ModelRequest, response: ModelAnswer },
    /// `files.read`: a world file read.
    FilesRead = "worldline:agent/files.read" { request: FileRequest, response: Answer },
    /// `files.write`: a world file written.
    FilesWrite = "worldline:agent/files.write" { request: FileRequest, response: Answer },
    /// `files.paths`: the world's file paths under a prefix.
    FilesPaths = "worldline:agent/files.paths" { request: FileRequest, response: Answer },
    /// `trace.note`: an agent-side note.
    TraceNote = "worldline:agent/trace.note" { request: Note, response: Value },
    /// `user.say`: one turn of the conversation with the simulated user.
    UserSay = "worldline:agent/user.say" { request: Said, response: Turn },
    /// `user/tools.call`: a call the simulated user made of one of the
    /// world's `[[user_tools]]` (the user's own device), before its turn's
    /// answer; shaped as the agent's `tools.call`.
    UserToolsCall = "worldline:user/tools.call" { request: ToolRequest, response: Answer },
    /// `approval.request`: the agent (or the host, before an `ask` tool)
    /// asking the user for approval.
    ApprovalRequest = "worldline:agent/approval.request" { request: ApprovalAsk, response: Decision },
    /// An HTTP request the host answered without a tool or model call (an
    /// MCP handshake, a protocol error): what came and the status sent.
    ProtocolAnswer = "wasi:http/protocol.answer" { request: Transport, response: HttpStatus },
    /// The same, for a native run's request to its loopback server or
    /// through its proxy.
    LoopbackAnswer = "native:loopback/protocol.answer" { request: Transport, response: HttpStatus },
    /// The same, for a message over MCP on stdio.
    StdioAnswer = "native:stdio/protocol.answer" { request: Transport, response: HttpStatus },
    /// A native run's request the world does not answer (not a model API,
    /// the MCP endpoint or a declared route; a tunnel), refused (403/404).
    Refused = "native:loopback/denied" { request: RefusedRequest, response: Refusal },
    /// A native agent process started (outside the sandbox; its model and
    /// tool calls arrive over HTTP as `model.complete` and `tools.call`).
    ProcessStart = "worldline:process/start" { request: Spawn, response: Answer },
    /// A native agent process ended.
    ProcessExit = "worldline:process/exit" { request: Value, response: Exited },
}

/// The name of a WASI call: reads only names under `wasi:`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct WasiName(String);

impl<'de> Deserialize<'de> for WasiName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        if name.starts_with("wasi:") {
            Ok(WasiName(name))
        } else {
            Err(serde::de::Error::custom("not a WASI call"))
        }
    }
}

impl WasiName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Call {
    /// Read `call`, `request` and `response` as one typed value.
    pub fn read(call: &str, request: &Value, response: &Value) -> Call {
        use serde::de::value::MapDeserializer;
        let name = Value::String(call.to_string());
        let parts = [
            ("call", &name),
            ("request", request),
            ("response", response),
        ];
        let typed: Result<Call, serde_json::Error> =
            Call::deserialize(MapDeserializer::new(parts.into_iter()));
        typed.unwrap_or_else(|_| Call::Other {
            call: call.to_string(),
            request: request.clone(),
            response: response.clone(),
        })
    }

    /// [`read`](Self::read), for what this host records itself: a call that
    /// is not a WASI call and does not have its kind's shape is an error
    /// naming what did not type, never a silent [`Call::Other`]. The
    /// mediator checks every event it records with it (in debug builds,
    /// so in every test), and tests read kept bundles with it.
    pub fn read_strict(call: &str, request: &Value, response: &Value) -> Result<Call, String> {
        match Kind::of(call) {
            Some(k) => k
                .check(request, response)
                .map_err(|e| format!("`{call}`: {e}"))?,
            None if call.starts_with("wasi:") => {}
            None => return Err(format!("`{call}` is not a kind of call this host knows")),
        }
        match Call::read(call, request, response) {
            Call::Other { .. } => Err(format!("`{call}` does not read as its kind")),
            typed => Ok(typed),
        }
    }

    /// The transport a tool or model call came by (`None`: its WIT
    /// function, or a kind that has none).
    pub fn transport(&self) -> Option<&Transport> {
        match self {
            Call::ToolsCall { request, .. } => request.transport.as_ref(),
            Call::ModelComplete { request, .. } => request.transport.as_ref(),
            Call::ToolsSpecs { request, .. } => request.transport.as_ref(),
            Call::FilesRead { request, .. }
            | Call::FilesWrite { request, .. }
            | Call::FilesPaths { request, .. } => request.transport.as_ref(),
            Call::LoopbackAnswer { request, .. } | Call::StdioAnswer { request, .. } => {
                Some(request)
            }
            Call::ProtocolAnswer { request, .. } => Some(request),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(call: &str, request: Value, response: Value) -> Call {
        let typed = Call::read(call, &request, &response);
        let wire = json!({"call": call, "request": request, "response": response});
        assert_eq!(serde_json::to_value(&typed).unwrap(), wire, "{typed:?}");
        typed
    }

    #[test]
    fn kinds_read_typed_and_write_back_the_same_json() {
        let t = round_trip(
            Kind::ToolsCall.name(),
            json!({"name": "get", "args": {"id": 1}}),
            json!({"error": {"kind": "not_found", "message": "no"}}),
        );
        let Call::ToolsCall { request, response } = t else {
            panic!("{t:?}")
        };
        assert_eq!(request.name, "get");
        assert_eq!(response.error.unwrap().kind, "not_found");
        // `{"ok": null}` stays present.
        let w = round_trip(
            Kind::FilesWrite.name(),
            json!({"path": "a", "data": [1]}),
            json!({"ok": null}),
        );
        assert!(matches!(
            w,
            Call::FilesWrite {
                response: Answer {
                    ok: Some(Value::Null),
                    ..
                },
                ..
            }
        ));
        let m = round_trip(
            Kind::ModelComplete.name(),
            json!({"provider": "scripted", "request": {"messages": []},
                   "transport": {"http": {"api": "openai.chat", "method": "POST", "url": "u", "stream": true}}}),
            json!({"ok": {"model": "m"}, "model_call": {"provider": "scripted"}}),
        );
        let Some(Transport::Http(http)) = m.transport() else {
            panic!("{m:?}")
        };
        assert_eq!(http.detail["stream"], json!(true));
        assert_eq!(m.kind(), Some(Kind::ModelComplete));
    }

    #[test]
    fn wasi_calls_and_unknown_or_misshapen_calls_are_kept_as_they_were() {
        let w = round_trip("wasi:clocks/wall-clock.now", json!({}), json!({"ok": 1}));
        assert!(matches!(w, Call::Wasi { .. }) && w.kind().is_none());
        let o = round_trip("worldline:agent/new.thing", json!(1), json!(2));
        assert!(matches!(o, Call::Other { .. }));
        // A tools.call without a name is not a typed tool call.
        let bad = round_trip(Kind::ToolsCall.name(), json!({"args": {}}), json!({}));
        assert!(matches!(bad, Call::Other { .. }));
    }

    #[test]
    fn every_kind_is_named_once_and_found_by_its_name() {
        let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        for k in Kind::ALL {
            assert_eq!(Kind::of(k.name()), Some(*k));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Kind::ALL.len());
    }
}
