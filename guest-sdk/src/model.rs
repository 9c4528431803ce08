//! Model calls: OpenAI chat-completions JSON in and out, typed.
//!
//! ```ignore
//! use worldline_guest::model::{self, ChatRequest, Message};
//! use worldline_guest::tools;
//!
//! let mut req = ChatRequest::new(vec![Message::system("You are on call."), Message::user("T-100?")]);
//! req.tools = model::tool_defs(&tools::specs());
//! let resp = model::chat(&req)?;
//! for call in resp.tool_calls() { /* run call.function.name with call.arguments()? */ }
//! ```
//!
//! The host records every call in full and answers it with the case's
//! provider (scripted, an OpenAI-compatible endpoint, or a recording).

use crate::{Error, tools};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

/// A chat-completions request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name; the case's `[model] model` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// `"auto"`, `"none"`, `"required"` or `{"type":"function","function":{"name":…}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `tool` messages: the id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn text(role: &str, content: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: Some(content.into()),
            ..Message::default()
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Message::text("system", content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message::text("user", content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message::text("assistant", content)
    }

    /// The answer to tool call `id`.
    pub fn tool(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::text("tool", content)
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDef,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// A call the model asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model wrote it.
    #[serde(default)]
    pub arguments: String,
}

impl ToolCall {
    /// The arguments parsed as `T` (an `invalid-args` error when the model
    /// wrote something else).
    pub fn arguments<T: DeserializeOwned>(&self) -> Result<T, Error> {
        let text = if self.function.arguments.trim().is_empty() {
            "{}"
        } else {
            &self.function.arguments
        };
        serde_json::from_str(text).map_err(|e| {
            Error::new(
                crate::ErrorKind::InvalidArgs,
                format!("the model's arguments for {}: {e}", self.function.name),
            )
        })
    }
}

/// A chat-completions response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    #[serde(default)]
    pub id: String,
    /// The model that answered, as the provider names it.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub system_fingerprint: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: u32,
    pub message: Message,
    /// `stop`, `tool_calls`, `length`, ...
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl ChatResponse {
    /// The first choice's message (an empty assistant message if none).
    pub fn message(&self) -> Message {
        self.choices
            .first()
            .map(|c| c.message.clone())
            .unwrap_or_else(|| Message::text("assistant", ""))
    }

    /// The tool calls the first choice asks for.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.message().tool_calls
    }

    /// The first choice's text.
    pub fn content(&self) -> Option<String> {
        self.message().content
    }

    pub fn finish_reason(&self) -> Option<&str> {
        self.choices.first()?.finish_reason.as_deref()
    }
}

/// The world's tools as model tool definitions.
pub fn tool_defs(specs: &[tools::Spec]) -> Vec<ToolDef> {
    specs
        .iter()
        .map(|s| ToolDef {
            kind: "function".into(),
            function: FunctionDef {
                name: s.name.clone(),
                description: s.description.clone(),
                parameters: s.params_schema.clone(),
            },
        })
        .collect()
}

/// Send a typed request; get a typed response.
pub fn chat(request: &ChatRequest) -> Result<ChatResponse, Error> {
    complete(request)
}

/// Send any serializable request and parse the response as `T`.
pub fn complete<T: DeserializeOwned>(request: &impl Serialize) -> Result<T, Error> {
    let text = complete_json(&serde_json::to_string(request)?)?;
    Ok(serde_json::from_str(&text)?)
}

/// Send a raw JSON request and get the raw JSON response.
pub fn complete_json(request_json: &str) -> Result<String, Error> {
    Ok(crate::bindings::worldline::agent::model::complete(
        request_json,
    )?)
}
