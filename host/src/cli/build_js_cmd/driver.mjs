// Written by `worldline build-js` into its build folder and run with Node:
// bundle the agent (TypeScript and its npm dependencies) with esbuild, then
// build the component with ComponentizeJS. Progress goes to stderr; the one
// line on stdout is the result as JSON: {"ok":true,...} or {"errors":[...]}.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
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
  await esbuild.build({ ...common, entryPoints: [entry], outfile: bundle });
} catch (e) {
  finish({ errors: messages(e.errors ?? [{ text: String(e) }]) });
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
