// Written by `worldline build-js` into its build folder and run with Node:
// bundle the agent (TypeScript and its npm dependencies) with esbuild, then
// build the component with ComponentizeJS. Progress goes to stderr; the one
// line on stdout is the result as JSON: {"ok":true,...} or {"errors":[...]}.
import { createRequire } from "node:module";
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
  return (list ?? []).map((m) => ({
    file: m.location?.file ?? null,
    line: m.location?.line ?? null,
    column: m.location ? m.location.column + 1 : null,
    text: m.text + (m.notes?.length ? ` (${m.notes.map((n) => n.text).join("; ")})` : ""),
  }));
}

const esbuild = require("esbuild");
const common = {
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  // The engine's own modules, bound by ComponentizeJS.
  external: ["worldline:*", "wasi:*"],
  alias: { worldline: join(cfg.sdk, "index.ts") },
  keepNames: true,
  // The engine rejects, at load time, regular expressions with Unicode
  // property escapes (`/\P{ASCII}/u` in fast-uri, which the MCP SDK pulls
  // in through ajv); esbuild turns such literals into `new RegExp(...)`
  // calls, so a bundle loads and only a code path that uses one fails.
  supported: { "regexp-unicode-property-escapes": false },
  logLevel: "silent",
  absWorkingDir: cfg.agentDir,
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

const entry = join(cfg.work, "entry.ts");
writeFileSync(
  entry,
  `import * as agent from ${JSON.stringify(resolve(cfg.agent))};\n` +
    `import { wrap } from ${JSON.stringify(join(cfg.sdk, "runtime.ts"))};\n` +
    `export const run = wrap((agent as any).run ?? (agent as any).default);\n`,
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

// The bundle's source map as a table the SDK reads when it prints a stack:
// for each generated line, [column, source, line, column] segments (all
// 1-based but the generated column), sources named as the user knows them
// (relative to the agent's folder; the SDK as `worldline/...`).
function lineTable(mapPath) {
  const map = JSON.parse(readFileSync(mapPath, "utf8"));
  const sources = map.sources.map((s) => {
    const full = resolve(dirname(mapPath), s);
    return full.startsWith(cfg.sdk) ? `worldline/${relative(cfg.sdk, full)}` : relative(cfg.agentDir, full);
  });
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const vlq = (text) => {
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
  let [src, line, col] = [0, 0, 0];
  const lines = map.mappings.split(";").map((segments) => {
    let gen = 0;
    const row = [];
    for (const seg of segments.split(",")) {
      if (!seg) continue;
      const f = vlq(seg);
      gen += f[0];
      if (f.length >= 4) {
        src += f[1];
        line += f[2];
        col += f[3];
        row.push([gen, src, line + 1, col + 1]);
      }
    }
    return row;
  });
  return `\nglobalThis.__worldlineSourceMap = ${JSON.stringify({ file: cfg.bundleName, sources, lines })};\n`;
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
    worldName: "agent",
  }));
} catch (e) {
  finish({ errors: [{ file: cfg.agent, line: null, column: null, text: String(e?.message ?? e) }] });
}
writeFileSync(cfg.out, component);
finish({ ok: true, esbuild: esbuild.version, componentize_js: version });
