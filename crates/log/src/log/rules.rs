//! The rules a run ran under (decision 0423): a number in its header,
//! raised when a fix changes what a run records (the arguments a request
//! makes, an answer). A new run records [`CURRENT`]; a replay, a fork and
//! a resume run under the rules of the run they follow, so a run recorded
//! before a fix replays as it ran. A header without the number is a run
//! recorded before there were rules: 0.

/// The rules a new run runs under.
pub const CURRENT: u32 = 13;

/// From 1: a route's path and query text is typed by every type its
/// parameter's schema accepts (`type = ["integer", "null"]`, an
/// `anyOf`/`oneOf` of them, as FastAPI writes `Optional[int]`), and a
/// query key given again is every value of a parameter that takes an
/// array (`?tag=a&tag=b`); under 0 only a `type` given as one name was
/// read, such text went on as text (which a strict tool refused), and a
/// key kept its first value.
pub const ROUTE_TEXT_BY_EVERY_TYPE: u32 = 1;

/// From 1: a world file's path is read as a file system reads it (`./a`,
/// `/a`, `a//b/..` name `a`; one that climbs above the world's files is
/// refused), in `files.read`, `files.write`, `files.paths` (and the MCP
/// resources they serve) and the world's `file_read`, `file_write` and
/// `file_list` tools; under 0 a path was a key as written, so
/// `./report.md` was another file than `report.md`.
pub const FILE_PATHS_AS_READ: u32 = 1;

/// From 1: an OpenAI Responses request's `text.format` (structured
/// output), `reasoning.effort` and `parallel_tool_calls` go on in the chat
/// call it becomes (`response_format`, `reasoning_effort`,
/// `parallel_tool_calls`), to the provider that answers it; under 0 they
/// were dropped.
pub const RESPONSES_FORMAT_AND_REASONING: u32 = 1;

/// From 1: stdout and stderr accept a write up to the largest
/// `limits.stdout_bytes` (16 MiB) per `check-write`, where 64 KiB made
/// CPython lose the rest of a larger `print`, uncounted; what passes the
/// case's limit is dropped and counted as any other write's.
pub const STDIO_WRITES_WHOLE: u32 = 1;

/// From 1: a world service's WASI clocks read the run's time: each call
/// brings the service's clock up to the run's (never back), so a service
/// that stamps a row with `time.time()` or `SystemTime::now()` stamps the
/// time the agent is at; under 0 its clock started at the case's clock
/// and moved only with the service's own calls.
pub const SERVICE_CLOCK_FOLLOWS_THE_RUN: u32 = 1;

/// From 2: JSON a world service hands the host (its answer, a row it
/// inserts or the fields it sets, a query's `where`) holding an integer
/// no 64 bits hold is refused: the answer fails the call (`failed`), a
/// write or query answers the service `invalid_args`. Under 1 such an
/// integer was read as the nearest float without a word (a Python or JS
/// service's id `18446744073709551616` became `1.8446744073709552e19`), as
/// a world's rows and a fork's edits already refuse (`wide_integer.rs`).
pub const SERVICE_INTEGERS_PAST_64_BITS: u32 = 2;

/// From 3: through a native run's proxy, a model API asked at its
/// vendor's public URL over plain http (`http://api.openai.com/v1/chat/completions`,
/// `http://api.anthropic.com/v1/messages`) is answered as that API, as an
/// `https://` route of the world is answered over plain http; and a
/// tunnel to a vendor's host is refused naming the base URL variable
/// that reaches the model. Under 2 the plain-http form was refused as
/// not part of the world, and the tunnel's refusal named neither.
pub const VENDOR_APIS_OVER_PLAIN_HTTP: u32 = 3;

/// From 3: an OpenAI Chat Completions request whose `messages` OpenAI
/// refuses (missing, not an array, empty, a message without a `role` or
/// with one it does not take) is answered OpenAI's 400, naming the
/// parameter as it does, and reaches no model; under 2 the scripted
/// model answered it, so an agent that would fail against the vendor
/// passed.
pub const CHAT_MESSAGES_CHECKED: u32 = 3;

/// From 4: a guest's HTTP request the world does not answer is recorded
/// denied with what the world does answer (the model APIs, `http://world/mcp`
/// and its declared routes), as the agent is told; under 3 the record
/// said HTTP requests were no part of a world and to reach a model
/// through `worldline:agent/model`, though model APIs and MCP are
/// answered over HTTP.
pub const HTTP_DENIED_SAYS_WHAT_IS_ANSWERED: u32 = 4;

/// From 5: the latency of an answer to a guest's HTTP request (a model's
/// `latency_ms`, a fault's) is when the response is ready, not a jump of
/// the run's clock when the agent first waits for it: the run goes on
/// from the request, so a timer due sooner fires first (an SDK's
/// timeout, an `AbortSignal`) and requests in flight together wait
/// together (decision 0425). Under 4 the clock jumped by the latency as
/// the request was answered: a timeout never fired before a slow model's
/// answer, and gathered requests waited one after the other. The event
/// records the same time under both: when its answer is ready.
pub const HTTP_LATENCY_IS_READY_TIME: u32 = 5;

/// From 5: a model call a fork's `--respond` answers takes its turn as
/// in the parent (a fork made since decision 0422 counts its edited calls):
/// the scripted model's reply it had (a `[[model.responses]]` entry, an
/// alternative's draw) is passed over, so the calls after it get the
/// replies they got in the parent; under 4 the edited call took no turn,
/// and every later call got the reply meant for the one before it.
pub const FORK_ANSWER_TAKES_THE_MODEL_S_TURN: u32 = 5;

/// From 5: text that reads as an RFC 3339 timestamp is equal to another
/// that names the same time (`2026-03-01T14:00:00+02:00`,
/// `2026-03-01T12:00:00.000Z` and `2026-03-01T12:00:00Z`), as `gte` and
/// `lte` already compared them: in a query tool's `eq`/`ne` filters, a
/// service's `state.query`, and the grade's `equals`, `where`,
/// `contains` of a list, `unchanged`, `calls` `args`/`result`, the gold
/// comparison and the state diff (`world/compare.rs`, `Equality`). Under 4
/// such text was equal only as written: a filter found no row, a check
/// failed.
pub const TIMESTAMPS_EQUAL_AS_TIMES: u32 = 5;

/// From 5: a query tool with both `limit` and `limit_arg` answers at most
/// `limit` rows when the call leaves the argument out, and a limit
/// argument that is no whole number 0 or more (`-1`, `2.5`, `"3"`) is
/// `invalid-args`. Under 4 `limit_arg` made `limit` ignored (every row
/// when the argument was absent) and such an argument answered every row.
pub const QUERY_LIMIT_DEFAULT_AND_CHECKED: u32 = 5;

/// From 5: a call whose time (its tick, its latency) takes the run's
/// virtual clock past its end (`u64::MAX` ns, ~584 years after the case's
/// clock) ends the run `trapped` after its event (recorded at the end,
/// where the clock stood still), saying so, as the step limit does; under
/// 4 the run went on, every later event at the same time.
pub const VIRTUAL_CLOCK_ENDS_THE_RUN: u32 = 5;

/// From 6: a row inserted without a key into a table whose `ids` is
/// `count` (the default) takes `TABLE-N` with N the row count plus one,
/// passed over while a row holds that key; under 5 a delete made the
/// next insert take a key a row still held, and every insert without a
/// key after it failed with `conflict`.
pub const COUNT_KEYS_PASS_OVER_TAKEN: u32 = 6;

/// From 6: `gt`, `gte`, `lt` and `lte` (a query tool's filters, a
/// service's `state.query`, the grade's `where`) order two integers
/// exactly; under 5 they were compared as 64-bit floats, so integers past
/// 2^53 (nanosecond timestamps) that `eq` told apart ordered as equal.
pub const INTEGERS_ORDERED_EXACTLY: u32 = 6;

/// From 6: a world service's `files.read`, `files.write` and
/// `files.list` read a path as the world's own file tools have since
/// rules 1 ([`FILE_PATHS_AS_READ`]): `./a`, `/a`, `a//b/..` name `a`, one
/// that climbs above the world's files is `invalid-args`; under 5 a
/// service's path was a key as written, so it wrote files no tool or
/// check could reach.
pub const SERVICE_FILE_PATHS_AS_READ: u32 = 6;

/// From 6: a world service's `Table.update` that would change the row's
/// key field is `invalid-args`, as a declarative `update` may not set it;
/// under 5 the row kept its key and held another in its key field.
pub const SERVICE_UPDATE_KEEPS_THE_KEY: u32 = 6;

/// From 6: a turn's state (`[[expect.turn]]`) is the world before the
/// user's answer to the agent's message that ends it: the user's own tool
/// calls in answer to that message (recorded before the message's event)
/// belong to the next turn, as decision 0376 says; under 5 they counted
/// in the turn the message ended.
pub const USER_ANSWERS_BELONG_TO_THE_NEXT_TURN: u32 = 6;

/// From 6: a file's path that ends in `/` names a folder, no file:
/// `files.read`, `files.write`, a world's `file_read`/`file_write` tools
/// and a service's `files.read`/`files.write` answer it `invalid-args`;
/// under 5 `files.write("dir/")` wrote a file `dir`.
pub const A_PATH_ENDING_IN_A_SLASH_IS_A_FOLDER: u32 = 6;

/// From 6: a world service that goes past its memory says the world's
/// limit (`[service] memory_mb` in its world.toml) in the failed answer;
/// under 5 it named the case's `limits.memory_mb`, which was not the limit
/// it met.
pub const SERVICE_MEMORY_LIMIT_NAMED: u32 = 6;

/// From 7: with `[model] token_ids = true`, an endpoint's answer that
/// lacks the prompt's or the choice's token ids has what it does hold of
/// them (`prompt_token_ids`, the choice's `token_ids`, its `logprobs`
/// unless the agent asked for them) taken out all the same, so the agent
/// gets the completion it would have had without them (decision 0350);
/// under 6 such an answer reached the agent, and was recorded, with them.
pub const TOKEN_FIELDS_TAKEN_WHEN_PARTIAL: u32 = 7;

/// From 7: a tool that validates `lax` takes a number where its schema
/// asks for a boolean or an integer as pydantic's lax mode does: `0` and
/// `1` (`0.0`, `1.0`) are `false` and `true`, a whole float (`7.0`) is the
/// integer `7`, and the tool (or service) runs with the converted value;
/// under 6 such a boolean was `invalid-args` (an AgentDojo tool that
/// takes `recurring = 1` refused it) and the float went on as sent.
pub const LAX_NUMBERS_AS_PYDANTIC: u32 = 7;

/// From 8: an `[expect.output]` `json` check of a run that wrote no
/// output, or output that is no JSON, is named by its test as when there
/// is output (`output cause_deploy equals`); under 7 it was named by its
/// path alone (`output cause_deploy`), so one check had two names: two
/// failure signatures in `runs` and fuzz groups, and `rerun` compared it
/// with nothing (`before: null`).
pub const OUTPUT_CHECK_NAMED_BY_ITS_TEST: u32 = 8;

/// From 9: the model APIs answer as their vendors do where a chat answer
/// has to be put in their shape: a refusal reaches the agent (a Chat
/// Completions stream's `delta.refusal`, a Responses `refusal` content
/// part, an Anthropic text block with `stop_reason` `refusal`), a Chat
/// Completions stream carries every choice, not the first alone, a content
/// filter is Anthropic's `refusal` (was `end_turn`), a Messages tool call
/// whose arguments are no JSON object is a 500 saying so (its input was
/// `{}`, or the arguments as they were), a Messages message whose role is
/// not `user` or `assistant` is Anthropic's 400 (one with text content
/// went on), a native agent's timed-out Messages request is answered
/// Anthropic's `timeout_error` (it was OpenAI's error shape), and a
/// Responses request with an `input` neither text nor items, a content
/// part other than text or a tool other than a function is a 400 saying
/// so (the parts and tools were dropped); a Responses stream sends
/// `response.in_progress` after `response.created`, neither holding the
/// usage or why the response is incomplete.
pub const MODEL_APIS_ANSWER_AS_THE_VENDORS: u32 = 9;

/// From 9: an endpoint's answer whose `choices` is empty fails the model
/// call (`failed`), as one without `choices` does; under 8 it was an
/// answer, and the agent got no choice (a stream made one up).
pub const NO_CHOICE_FAILS: u32 = 9;

/// From 9: a request for `n` choices of the scripted model gets `n`
/// choices, each its reply (under 8, one choice).
pub const SCRIPTED_MODEL_ANSWERS_N_CHOICES: u32 = 9;

/// From 9: a tool's `$now` (and the time of its answer) writes the
/// seconds' fraction with nine digits always (`12:05:00.000000000Z`,
/// `12:05:03.240000000Z`), so timestamps compare as text in the order of
/// their times; under 8 the fraction's trailing zeros were left out
/// (`12:05:03.24Z` sorted after `12:05:03.238Z`, and `12:05:03Z` after
/// both).
pub const NOW_WITH_NINE_FRACTION_DIGITS: u32 = 9;

/// From 10: a grade's check is named by what it asserts: `attempted =
/// false` is `calls T not attempted`, `exists = false` is `P absent` and
/// `absent = false` is `P exists`, each expecting `true` of what its name
/// says; under 9 they were named `calls T attempted`, `P exists` and `P
/// absent`, expecting `false`, so a passing check read as the opposite.
pub const CHECKS_NAMED_BY_WHAT_THEY_ASSERT: u32 = 10;

/// From 10: a message to the world's MCP endpoint is read as JSON-RPC 2.0
/// says: one without `"jsonrpc": "2.0"`, or whose `id` is no string,
/// number or null, is `-32600` Invalid Request saying which; a batch (a
/// JSON array) is `-32600` saying MCP 2025-06-18 removed batching, one
/// message per request. Under 9 such a message was served as any other
/// (an object id was echoed) and a batch was a bare "Invalid Request".
pub const MCP_JSON_RPC_CHECKED: u32 = 10;

/// From 10: the scripted model without a reply says what the case
/// scripts (`the case scripts no [[model.responses]]`, `all 2
/// [[model.responses]] are used`); under 9 it said "no [[model.rules]]
/// matched and all 0 of [model] responses are used" whether or not the
/// case had rules or responses.
pub const UNSCRIPTED_SAYS_WHAT_THE_CASE_SCRIPTS: u32 = 10;

/// From 10: a world service's answer holding an integer no 64 bits hold
/// fails saying `service S's answer to `T`: the integer N is past 64 bits
/// ...`; under 9 it read "service S answered `T` with the integer N is
/// past 64 bits".
pub const SERVICE_WIDE_ANSWER_WORDED: u32 = 10;

/// From 10: a `model.complete` request (the Rust guest SDK's
/// `complete_json`) that is no JSON object is refused as OpenAI refuses
/// such a body: `invalid-args` with OpenAI's 400 message, recorded with
/// `status` 400 and reaching no model; under 9 the model answered it (the
/// scripted model took a reply for it).
pub const MODEL_REQUEST_MUST_BE_AN_OBJECT: u32 = 10;

/// From 11: an `openai` model call recorded as a `model.complete` event
/// records the body it sent as what it changed in the agent's request
/// (`model_call.rendered_changes`: the keys it set, those it removed),
/// not whole (`model_call.rendered`), so a run of N calls records O(N)
/// bytes; `show --at` and the UI's event page put `rendered` back
/// (decision 0430).
/// Under 10 every call recorded the whole conversation it sent again.
pub const RENDERED_AS_CHANGES: u32 = 11;

/// From 11: a message to the world's MCP endpoint that writes a key twice
/// in one object, or holds an integer no 64 bits hold, is `-32600`
/// Invalid Request naming it (with a null id); under 10 serde_json kept
/// the last of the key's values (a `tools/call` with two `name`s called
/// the second) and read such an integer as the nearest float (the id
/// `12345678901234567890123` came back `1.2345678901234568e+22`).
pub const MCP_JSON_READ_EXACTLY: u32 = 11;

/// From 12: a random draw (`wasi:random`) a fork's `--respond` answers
/// takes its draw from its stream as in the parent, so the draws after
/// it get the bytes they got there; under 11 it took none, and every
/// later draw of that stream got the one meant for the draw before it.
pub const FORK_ANSWER_TAKES_ITS_DRAW: u32 = 12;

/// From 13: a tool call or a model call a fork's `--respond` answers
/// takes the virtual time it took in the parent (the tool's served
/// latency, the scripted reply's or the provider's `latency_ms`), so the
/// events after it happen at the times they happened there; under 12 it
/// took none, and every later event (and every time the world recorded)
/// moved earlier by that much, so a fork that answered a call as
/// recorded differed from its parent.
pub const FORK_ANSWER_TAKES_ITS_LATENCY: u32 = 13;

/// The rules of a header's `rules` (`None`: 0), or [`Later`] when a later
/// worldline recorded them: what it changed is not known here.
pub fn of_header(rules: Option<u32>) -> Result<u32, Later> {
    match rules.unwrap_or(0) {
        r if r <= CURRENT => Ok(r),
        r => Err(Later(r)),
    }
}

/// Rules past [`CURRENT`]: a later worldline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Later(pub u32);

impl Later {
    /// Why a command that `does` a run under them (`read`, `replay, fork
    /// or resume`) refuses it, naming what to do instead.
    pub fn refusal(self, does: &str) -> String {
        format!(
            "the run was recorded under rules {} by a later worldline; this one runs rules up to {CURRENT}: {does} it with that worldline or a later one",
            self.0
        )
    }
}

/// What a header records for a run under `rules` (0 is not written, as
/// runs recorded before there were rules have it).
pub fn in_header(rules: u32) -> Option<u32> {
    (rules > 0).then_some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_without_rules_is_0_and_a_later_worldline_s_rules_are_refused() {
        assert_eq!(of_header(None), Ok(0));
        assert_eq!(of_header(in_header(0)), Ok(0));
        assert_eq!(of_header(in_header(CURRENT)), Ok(CURRENT));
        let later = of_header(Some(CURRENT + 1)).unwrap_err();
        assert_eq!(later, Later(CURRENT + 1));
        assert!(
            later
                .refusal("read")
                .ends_with(": read it with that worldline or a later one")
        );
    }
}
