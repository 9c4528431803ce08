// The JavaScript probe: everything a hidden determinism check would read
// (Date, performance.now, Math.random, crypto, timers, iteration order),
// a denied fetch, and the whole SDK (tools, files, the scripted model).
// `task.mode` picks something else: "throw" (an uncaught TypeError from a
// nested function), "error" (a worldline error escaping run), "talk" (the
// user and approval channels), "env" (what `process.env` holds, read
// each way a package reads it), "cyclic" (an output that holds itself),
// "never" (a promise that never settles), "timer-throw" and
// "microtask-throw" (an exception where no caller catches it).

import { Denied, NotFound, approval, files, model, tools, trace, user } from "worldline";

/** build-js's stand-in for Node's `process` (its `env` is the case's `[env] vars`). */
declare const process: { env: Record<string, string | undefined> };

function lookUp(id: string): never {
  const table: Record<string, string> = {};
  throw new TypeError(`no ticket ${id} in ${JSON.stringify(table)}`);
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function probe(task: { ticket: string }) {
  const wallBefore = Date.now();
  const perfBefore = performance.now();
  const random = [Math.random(), Math.random(), Math.random()];
  const bytes = hex(crypto.getRandomValues(new Uint8Array(16)));
  const uuid = crypto.randomUUID();

  // Timers: 1.5 s of virtual time passes at once.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const slept = Date.now() - wallBefore;

  // Iteration order is the language's, not a hash's.
  const obj: Record<string, number> = { zeta: 1, 10: 2, alpha: 3, 2: 4, mid: 5 };
  const map = new Map<string, number>([["zeta", 1], ["alpha", 2], ["mid", 3]]);
  map.set("beta", 4);
  const set = new Set(["c", "a", "b"]);

  let fetched: string;
  try {
    const r = await fetch("https://api.example.com/v1/chat", { method: "POST", body: "{}" });
    fetched = `answered ${r.status}`;
  } catch (e) {
    fetched = `${(e as Error).name}: ${(e as Error).message}`;
  }

  const ticket = tools.call("get_ticket", { id: task.ticket });
  let missing = "";
  let missingSaid = "";
  try {
    tools.call("get_ticket", { id: "T-404" });
  } catch (e) {
    missing = e instanceof NotFound ? e.message : `other: ${e}`;
    missingSaid = String(e);
  }
  const runbooks = files.paths("runbooks");
  const said = model.chat([model.system("You are a probe."), model.user("hello")]).content;
  const asked = model.chat([model.user("tools please")], {
    tools: model.toolDefs(tools.specs()),
  });
  console.log("js probe says hello");
  trace.note("probe", "done");
  return {
    wall_before: wallBefore,
    perf_before: perfBefore,
    perf_after: performance.now(),
    slept,
    random,
    bytes,
    uuid,
    object_keys: Object.keys(obj),
    map_keys: [...map.keys()],
    set_values: [...set],
    fetch: fetched,
    ticket,
    missing,
    missing_said: missingSaid,
    tools: tools.specs().map((s) => s.name),
    runbooks,
    runbook_text: runbooks.length ? files.readText(runbooks[0]).slice(0, 40) : null,
    model: {
      said,
      asked: asked.toolCalls.map((c) => [c.name, c.arguments()]),
    },
  };
}

export async function run(task: { ticket: string; mode?: string }) {
  if (task.mode === "throw") lookUp("T-404");
  if (task.mode === "error") throw new Denied("the probe was told to give up");
  if (task.mode === "never") return new Promise(() => {});
  if (task.mode === "timer-throw") {
    setTimeout(() => {
      throw new RangeError("thrown in a timer");
    }, 10);
    await new Promise((r) => setTimeout(r, 100));
    return { ok: true };
  }
  if (task.mode === "microtask-throw") {
    queueMicrotask(() => {
      throw new RangeError("thrown in a microtask");
    });
    await new Promise((r) => setTimeout(r, 10));
    return { ok: true };
  }
  if (task.mode === "cyclic") {
    const held: Record<string, unknown> = {};
    held.self = held;
    return held;
  }
  if (task.mode === "env") {
    return {
      key: process.env.OPENAI_API_KEY,
      has: "LANG" in process.env,
      absent: process.env.NOT_SET ?? null,
      keys: Object.keys(process.env).sort(),
      copy: { ...process.env },
    };
  }
  if (task.mode === "abort") {
    // AbortSignal.any as Node has it: aborted when an input is, with its
    // reason, and not before (the engine's was aborted from the start).
    const a = new AbortController();
    const b = new AbortController();
    const both = AbortSignal.any([a.signal, b.signal]);
    const before = both.aborted;
    let heard = false;
    both.addEventListener("abort", () => { heard = true; });
    b.abort("stop");
    const gone = AbortSignal.any([b.signal]);
    return { before, after: both.aborted, heard, reason: both.reason, none: AbortSignal.any([]).aborted, gone: gone.aborted };
  }
  if (task.mode === "stream") {
    // `for await` over a body, as Node iterates a ReadableStream.
    const sizes: number[] = [];
    for await (const chunk of new Response("abc").body as any) sizes.push(chunk.length);
    return { sizes };
  }
  if (task.mode === "fetch-abort") {
    // A request the model stalls, aborted by its signal at 2 s.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 2000);
    const t0 = Date.now();
    try {
      const r = await fetch("https://api.openai.com/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sk-x" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
        signal: ac.signal,
      });
      return { status: r.status, elapsed_ms: Date.now() - t0 };
    } catch (e: any) {
      return { error: e.name, elapsed_ms: Date.now() - t0 };
    }
  }
  if (task.mode === "latency-abort") {
    // A slow model (its latency 30 s), the request aborted at 2 s.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 2000);
    const t0 = Date.now();
    try {
      const r = await ask(ac.signal);
      return { status: r.status, elapsed_ms: Date.now() - t0 };
    } catch (e: any) {
      return { error: e.name, elapsed_ms: Date.now() - t0 };
    }
  }
  if (task.mode === "latency-gather") {
    // Two requests in flight together, each answered after 1 s.
    const t0 = Date.now();
    const rs = await Promise.all([ask(), ask()]);
    return { statuses: rs.map((r) => r.status), elapsed_ms: Date.now() - t0 };
  }
  if (task.mode === "talk") {
    return {
      first: user.say("Hello, which ticket?"),
      small: approval.request("refund", { amount: 20 }),
      large: approval.request("refund", { amount: 90 }),
      bye: user.say("Goodbye then!"),
    };
  }
  return probe(task);
}

/** One chat completions request to the model. */
function ask(signal?: AbortSignal): Promise<Response> {
  return fetch("https://api.openai.com/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-x" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    signal,
  });
}
