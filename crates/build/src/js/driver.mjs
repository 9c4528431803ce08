// Written by `worldline build-js` into its build folder and run with Node:
// bundle the agent (TypeScript and its npm dependencies) with esbuild, then
// build the component with ComponentizeJS. Progress goes to stderr; the one
// line on stdout is the result as JSON: {"ok":true,...} or {"errors":[...]}.
import { builtinModules, createRequire } from "node:module";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const cfg = JSON.parse(process.argv[2]);
const require = createRequire(join(cfg.toolchain, "package.json"));
const say = (text) => process.stderr.write(`${text}\n`);
const finish = (doc) => {
  process.stdout.write(`${JSON.stringify(doc)}\n`);
  process.exit(0);
};

// esbuild's messages as {file, line, column, text}.
function messages(list) {
  return (list ?? []).map((m) => explainBuiltin({
    file: m.location?.file ?? null,
    line: m.location?.line ?? null,
    column: m.location ? m.location.column + 1 : null,
    text: m.text + notes(m),
  }));
}

// esbuild's notes, less its advice to mark a path external (build-js
// bundles every module; nothing can be left out): what to do instead.
function notes(m) {
  const kept = (m.notes ?? []).map((n) => n.text).filter((t) => !t.includes("as external"));
  if (/^Could not resolve "[^.\/]/.test(m.text)) {
    kept.push("install the package in the agent's folder (npm install PACKAGE there), or see the pinned SDKs build-js finds beside its toolchain");
  }
  return kept.length ? ` (${kept.join("; ")})` : "";
}

// Each generated line's segments, absolute ([column, source, line,
// column], 0-based), and the sources' paths under the agent's folder: for
// a place in the bundle the build itself reports (an exception at the
// agent's top level, run while the component is made).
let located = [];
let sourcePaths = [];

/** The agent's `file:line:column` of the bundle's `line:column` (1-based). */
function sourceOf(line, column) {
  let best;
  for (const seg of located[line - 1] ?? []) {
    if (seg[0] <= column - 1) best = seg;
  }
  best ??= (located[line - 1] ?? [])[0];
  return best && { file: sourcePaths[best[1]], line: best[2] + 1, column: best[3] + 1 };
}

const esbuild = require("esbuild");

// What the engine lacks of Node and of the web platform, where a small
// deterministic stand-in is harmless (decision 0273). Imported before the
// agent, so its modules see them when they load:
// - `process`, its `env` the case's `[env] vars` (wasi:cli/environment's
//   get-environment, one recorded call, made when a run first reads it;
//   while the build runs the agent's top level there is no case, and `env`
//   is empty then);
// - `TextDecoderStream` / `TextEncoderStream` (the AI SDK parses server-sent
//   events with them), built on the engine's TransformStream;
// - `AbortSignal.any`, where the engine's is broken (its signal is aborted
//   from the start, and an input's abort reaches no listener): the OpenAI
//   Agents SDK combines signals with it, and answered every parallel tool
//   call "aborted" without running it, and aborted every streamed request;
// - `fetch` failing as Node's does (`TypeError: fetch failed`, the
//   engine's error as its `cause`; aborts stay aborts), which is what the
//   SDKs' retry logic recognises (the AI SDK retries only that), and
//   heeding its `signal` as Node's does (the engine's ignored it: a
//   request stalled past the SDKs' `timeout` waited the stall's 10
//   minutes of virtual time, and failed as no abort);
// - `ReadableStream` async iteration (`for await (const chunk of body)`,
//   `stream.values()`), which the engine lacks and Node has: the OpenAI
//   Agents SDK iterates a streamed run's events so, and trapped.
const GLOBALS = `
import { getEnvironment } from "wasi:cli/environment@0.2.12";
let running = false;
let vars;
const early = {};
/** Called by the run export: from then on process.env is the case's. */
export function begin() { running = true; }
function live() {
  if (!running) return early;
  if (!vars) {
    vars = { ...early };
    for (const [k, v] of getEnvironment()) vars[k] = v;
  }
  return vars;
}
const env = new Proxy({}, {
  get: (_, k) => (typeof k === "string" && Object.hasOwn(live(), k) ? live()[k] : undefined),
  set: (_, k, v) => { live()[k] = String(v); return true; },
  has: (_, k) => Object.hasOwn(live(), k),
  deleteProperty: (_, k) => { delete live()[k]; return true; },
  ownKeys: () => Reflect.ownKeys(live()),
  getOwnPropertyDescriptor: (_, k) =>
    Object.hasOwn(live(), k) ? { value: live()[k], writable: true, enumerable: true, configurable: true } : undefined,
  defineProperty: (_, k, d) => { live()[k] = String(d.value); return true; },
});
if (typeof globalThis.process === "undefined") {
  globalThis.process = {
    env, argv: [], versions: {}, platform: "wasi",
    nextTick: (f, ...args) => queueMicrotask(() => f(...args)),
  };
}
if (typeof globalThis.TextDecoderStream === "undefined") {
  globalThis.TextDecoderStream = class TextDecoderStream extends TransformStream {
    constructor(label = "utf-8", options = {}) {
      const decoder = new TextDecoder(label, options);
      super({
        transform(chunk, out) { const t = decoder.decode(chunk, { stream: true }); if (t) out.enqueue(t); },
        flush(out) { const t = decoder.decode(); if (t) out.enqueue(t); },
      });
      this.encoding = decoder.encoding;
    }
  };
}
if (typeof globalThis.TextEncoderStream === "undefined") {
  globalThis.TextEncoderStream = class TextEncoderStream extends TransformStream {
    constructor() {
      const encoder = new TextEncoder();
      super({ transform(chunk, out) { out.enqueue(encoder.encode(chunk)); } });
      this.encoding = "utf-8";
    }
  };
}
if (typeof AbortSignal !== "undefined" && (typeof AbortSignal.any !== "function" || AbortSignal.any([]).aborted)) {
  AbortSignal.any = function any(signals) {
    const controller = new AbortController();
    const inputs = [...signals];
    const gone = inputs.find((s) => s.aborted);
    if (gone) {
      controller.abort(gone.reason);
      return controller.signal;
    }
    for (const s of inputs) {
      s.addEventListener("abort", () => controller.abort(s.reason), { once: true });
    }
    return controller.signal;
  };
}
{
  const engineFetch = globalThis.fetch;
  const sent = async (input, init) => {
    try {
      return await engineFetch(input, init);
    } catch (e) {
      // An abort stays an abort; any other failure (the engine throws a
      // plain Error for a denied request, a TypeError for a timeout) is
      // Node's.
      if (e?.name === "AbortError" || e?.name === "TimeoutError") throw e;
      throw new TypeError("fetch failed", { cause: e });
    }
  };
  const aborted = (signal) => {
    if (signal.reason !== undefined) return signal.reason;
    const e = new Error("This operation was aborted");
    e.name = "AbortError";
    return e;
  };
  globalThis.fetch = function fetch(input, init) {
    const signal = init?.signal ?? (typeof Request !== "undefined" && input instanceof Request ? input.signal : undefined);
    if (!signal) return sent(input, init);
    if (signal.aborted) return Promise.reject(aborted(signal));
    const answer = sent(input, init);
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(aborted(signal));
      signal.addEventListener("abort", onAbort, { once: true });
      answer.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  };
}
if (typeof ReadableStream !== "undefined" && !ReadableStream.prototype[Symbol.asyncIterator]) {
  const values = function values({ preventCancel = false } = {}) {
    const reader = this.getReader();
    return {
      async next() {
        const step = await reader.read();
        if (step.done) reader.releaseLock();
        return step;
      },
      async return(value) {
        const cancelled = preventCancel ? undefined : reader.cancel(value);
        reader.releaseLock();
        await cancelled;
        return { done: true, value };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  };
  for (const name of ["values", Symbol.asyncIterator]) {
    Object.defineProperty(ReadableStream.prototype, name, { value: values, writable: true, configurable: true });
  }
}
`;

// The Node built-ins a package may import that have a harmless stand-in:
// randomness from the engine's crypto (the run's seeded stream), and the
// process object above. Any other built-in is a build error naming the
// package that imports it.
const NODE_SHIMS = {
  crypto: `const c = globalThis.crypto;
export const webcrypto = c;
export const randomUUID = () => c.randomUUID();
export const getRandomValues = (a) => c.getRandomValues(a);
export default { webcrypto, randomUUID, getRandomValues };`,
  process: `const p = globalThis.process;
export const env = p.env;
export const nextTick = p.nextTick;
export default p;`,
};
const builtins = new Set(builtinModules);
const isBuiltin = (name) => name.startsWith("node:") || builtins.has(name.split("/")[0]);
const builtinName = (name) => (name.startsWith("node:") ? name.slice(5) : name);

const shims = {
  name: "worldline-shims",
  setup(build) {
    build.onResolve({ filter: /^worldline-shims:globals$/ }, () => ({ path: "globals", namespace: "worldline-shims" }));
    build.onResolve({ filter: /^(node:)?(crypto|process)$/ }, (args) => ({
      path: builtinName(args.path),
      namespace: "worldline-shims",
    }));
    build.onLoad({ filter: /.*/, namespace: "worldline-shims" }, (args) => ({
      contents: args.path === "globals" ? GLOBALS : NODE_SHIMS[args.path],
      loader: "js",
    }));
  },
};

/** The npm package a bundled file belongs to (`@scope/name` or `name`), or null for the agent's own. */
function packageOf(file) {
  const parts = (file ?? "").split(/[\\/]/);
  const at = parts.lastIndexOf("node_modules");
  if (at < 0 || at + 1 >= parts.length) return null;
  return parts[at + 1].startsWith("@") ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1];
}

/** esbuild's "Could not resolve" of a Node built-in, said as what it is. */
function explainBuiltin(m) {
  const miss = /^Could not resolve "([^"]+)"/.exec(m.text);
  if (!miss || !isBuiltin(miss[1])) return m;
  const who = packageOf(m.file);
  const name = `node:${builtinName(miss[1])}`;
  return {
    ...m,
    text:
      `${who ? `the package \`${who}\`` : "the agent"} imports the Node built-in \`${name}\`, which the sandbox does not have ` +
      `(only node:crypto's randomUUID/getRandomValues and node:process's env are stood in for): ` +
      (who ? `use a version of ${who} for browsers or edge runtimes, or a package without it` : `remove the import`),
  };
}

const common = {
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  // The engine's own modules, bound by ComponentizeJS.
  external: ["worldline:*", "wasi:*"],
  alias: { worldline: join(cfg.sdk, "index.ts") },
  keepNames: true,
  // --minify: whitespace only, for bundles too large for the engine to
  // load as written. Not names: the engine's stack frames name a function
  // as it was compiled, whatever keepNames sets its `name` to (a minified
  // build's frames said `P`); nor syntax: statements folded into one put
  // a frame at the line before the throw's.
  minifyWhitespace: cfg.minify === true,
  // The engine rejects, at load time, regular expressions with Unicode
  // property escapes (`/\P{ASCII}/u` in fast-uri, which the MCP SDK pulls
  // in through ajv); esbuild turns such literals into `new RegExp(...)`
  // calls, so a bundle loads and only a code path that uses one fails.
  // `regexp-sticky-and-unicode-flags` too: esbuild leaves a property
  // escape inside a class (`/[\p{L}\p{N}]+/u` in the AI SDK) as a literal
  // unless every `u` literal moves to run time.
  supported: { "regexp-unicode-property-escapes": false, "regexp-sticky-and-unicode-flags": false },
  logLevel: "silent",
  absWorkingDir: cfg.agentDir,
  // A package the agent's folder lacks is looked up among the pinned agent
  // SDKs cached beside the toolchain (openai, the MCP SDK, ...), as Node
  // looks in NODE_PATH.
  nodePaths: cfg.agentPackages ? [cfg.agentPackages] : [],
  plugins: [shims],
};

say(`bundling ${cfg.agent} with esbuild ${esbuild.version}`);
let agentExports;
try {
  const probe = await esbuild.build({
    ...common,
    entryPoints: [cfg.agent],
    write: false,
    metafile: true,
  });
  agentExports = Object.values(probe.metafile.outputs)[0]?.exports ?? [];
} catch (e) {
  finish({ errors: messages(e.errors ?? [{ text: String(e) }]) });
}
if (!agentExports.includes("run") && !agentExports.includes("default")) {
  finish({
    errors: [
      {
        file: cfg.agent,
        line: null,
        column: null,
        text: "exports no `run`: write `export function run(task) { ... }` (or `export default`)",
      },
    ],
  });
}

const NOT_A_FUNCTION = "worldline: the agent's `run` export is no function";
const entry = join(cfg.work, "entry.ts");
writeFileSync(
  entry,
  `import { begin } from "worldline-shims:globals";\n` +
    `import * as agent from ${JSON.stringify(resolve(cfg.agent))};\n` +
    `import { wrap } from ${JSON.stringify(join(cfg.sdk, "runtime.ts"))};\n` +
    `const chosen = (agent as any).run ?? (agent as any).default;\n` +
    // An export named `run` that is no function (`export const run = 5`)
    // is refused while the component is made, not when a run calls it.
    `if (typeof chosen !== "function") throw new TypeError(${JSON.stringify(NOT_A_FUNCTION)});\n` +
    `const wrapped = wrap(chosen);\n` +
    `export const run = (task: string) => { begin(); return wrapped(task); };\n`,
);
const bundle = join(cfg.work, cfg.bundleName);
try {
  await esbuild.build({
    ...common,
    entryPoints: [entry],
    outfile: bundle,
    sourcemap: "external",
    sourcesContent: false,
  });
} catch (e) {
  finish({ errors: messages(e.errors ?? [{ text: String(e) }]) });
}
appendFileSync(bundle, lineTable(`${bundle}.map`));

// The bundle's source map as the SDK reads it when it prints a stack: the
// sources named as the user knows them (relative to the agent's folder; the
// SDK as `worldline/...`) and esbuild's `mappings` re-encoded so that each
// generated line decodes on its own (its first segment's source, line and
// column are absolute, not deltas from the line before). It stays one
// string: a table of arrays, as it was, made the engine run out of memory
// parsing the bundle of a large SDK (decision 0315).
function lineTable(mapPath) {
  const map = JSON.parse(readFileSync(mapPath, "utf8"));
  const full = map.sources.map((s) => resolve(dirname(mapPath), s));
  sourcePaths = full.map((f) => relative(cfg.agentDir, f));
  const sources = full.map((f, i) => (f.startsWith(cfg.sdk) ? `worldline/${relative(cfg.sdk, f)}` : sourcePaths[i]));
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const decode = (text) => {
    const out = [];
    let value = 0;
    let shift = 0;
    for (const ch of text) {
      const digit = B64.indexOf(ch);
      value += (digit & 31) << shift;
      if (digit & 32) {
        shift += 5;
      } else {
        out.push(value & 1 ? -(value >>> 1) : value >>> 1);
        value = 0;
        shift = 0;
      }
    }
    return out;
  };
  const encode = (n) => {
    let v = n < 0 ? (-n << 1) | 1 : n << 1;
    let text = "";
    do {
      let digit = v & 31;
      v >>>= 5;
      if (v > 0) digit |= 32;
      text += B64[digit];
    } while (v > 0);
    return text;
  };
  let [src, line, col] = [0, 0, 0];
  const lines = map.mappings.split(";").map((segments) => {
    let gen = 0;
    let prev = [0, 0, 0, 0];
    const row = [];
    const at = [];
    located.push(at);
    for (const seg of segments.split(",")) {
      if (!seg) continue;
      const f = decode(seg);
      gen += f[0];
      if (f.length >= 4) {
        src += f[1];
        line += f[2];
        col += f[3];
        const now = [gen, src, line, col];
        at.push(now);
        row.push(now.map((v, i) => encode(v - prev[i])).join(""));
        prev = now;
      }
    }
    return row.join(",");
  });
  const table = { file: cfg.bundleName, sources, mappings: lines.join(";") };
  return `\nglobalThis.__worldlineSourceMap = ${JSON.stringify(table)};\n`;
}

const componentizeJs = pathToFileURL(
  join(cfg.toolchain, "node_modules/@bytecodealliance/componentize-js/src/componentize.js"),
);
const { componentize, version } = await import(componentizeJs.href);
say(`componentizing with ComponentizeJS ${version} (about 10 s)`);
let component;
try {
  ({ component } = await componentize({
    sourcePath: bundle,
    witPath: cfg.wit,
    // The agent's world and wasi:cli/environment, which process.env reads.
    worldName: "agent-js",
  }));
} catch (e) {
  let text = String(e?.message ?? e);
  if (/out of memory/.test(text) && !cfg.minify) {
    text += "\n(the engine ran out of memory running the bundle's top level: --minify makes the source it keeps smaller)";
  }
  if (text.includes(NOT_A_FUNCTION)) {
    finish({
      errors: [{
        file: cfg.agent,
        line: null,
        column: null,
        text: "exports `run`, but it is no function: write `export function run(task) { ... }` (or `export default`)",
      }],
    });
  }
  // An exception at the agent's top level is placed in its source: the
  // engine names the bundle's line, a file the user never sees.
  const inBundle = new RegExp(`${cfg.bundleName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:(\\d+):(\\d+)`);
  const hit = inBundle.exec(text);
  const place = hit && sourceOf(Number(hit[1]), Number(hit[2]));
  if (place) {
    text = text.replace(inBundle, `${place.file}:${place.line}:${place.column}`);
    finish({ errors: [{ file: place.file, line: place.line, column: place.column, text }] });
  }
  finish({ errors: [{ file: cfg.agent, line: null, column: null, text }] });
}
writeFileSync(cfg.out, component);
finish({ ok: true, esbuild: esbuild.version, componentize_js: version });
