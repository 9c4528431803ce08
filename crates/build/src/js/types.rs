//! `guest-sdk/js/wit.d.ts`, the TypeScript types of the `worldline:agent`
//! imports as ComponentizeJS binds them, generated from `wit/agent.wit`. The test fails when the checked-in file differs from what
//! the WIT gives (run it with `WORLDLINE_BLESS=1` to rewrite the file), so
//! the SDK, which the TypeScript compiler checks against these types,
//! cannot drift from the WIT.

use std::fmt::Write as _;
use std::path::Path;

/// `tool-spec` → `ToolSpec`.
fn pascal(name: &str) -> String {
    name.split('-')
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `params-schema` → `paramsSchema`.
fn camel(name: &str) -> String {
    let p = pascal(name);
    let mut c = p.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn doc(out: &mut String, docs: &[String], indent: &str) {
    if docs.is_empty() {
        return;
    }
    writeln!(out, "{indent}/**").unwrap();
    for l in docs {
        writeln!(out, "{indent} * {l}").unwrap();
    }
    writeln!(out, "{indent} */").unwrap();
}

/// `a, list<b>, c` split at the top-level commas.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts
}

/// The TypeScript type of a WIT type expression as ComponentizeJS binds it.
fn ts(ty: &str) -> String {
    let ty = ty.trim();
    if let Some(inner) = ty.strip_prefix("list<").and_then(|t| t.strip_suffix('>')) {
        return if inner == "u8" {
            "Uint8Array".into()
        } else {
            format!("Array<{}>", ts(inner))
        };
    }
    if let Some(inner) = ty.strip_prefix("option<").and_then(|t| t.strip_suffix('>')) {
        return format!("{} | undefined", ts(inner));
    }
    match ty {
        "string" | "char" => "string".into(),
        "bool" => "boolean".into(),
        "u64" | "s64" => "bigint".into(),
        "u8" | "u16" | "u32" | "s8" | "s16" | "s32" | "f32" | "f64" => "number".into(),
        "_" => "void".into(),
        named
            if named
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()) =>
        {
            pascal(named)
        }
        other => panic!("wit.d.ts: add a mapping for the WIT type `{other}`"),
    }
}

/// A function's TypeScript declaration from its WIT line.
fn function(out: &mut String, name: &str, sig: &str, docs: &[String]) {
    let sig = sig.trim().trim_end_matches(';');
    let sig = sig.strip_prefix("func(").expect("a WIT function");
    let (params, ret) = match sig.split_once(") ->") {
        Some((p, r)) => (p, Some(r.trim())),
        None => (sig.trim_end_matches(')'), None),
    };
    let params: Vec<String> = split_top(params)
        .into_iter()
        .map(|p| {
            let (n, t) = p.split_once(':').expect("a WIT parameter");
            format!("{}: {}", camel(n.trim()), ts(t))
        })
        .collect();
    let mut docs = docs.to_vec();
    let ret = match ret {
        None => "void".to_string(),
        Some(r) => match r.strip_prefix("result<").and_then(|r| r.strip_suffix('>')) {
            Some(inner) => {
                let parts = split_top(inner);
                let err = parts.get(1).map_or("undefined".into(), |e| ts(e));
                docs.push(format!(
                    "@throws `{{ payload: {err} }}` when the host answers with an error"
                ));
                ts(parts[0])
            }
            None => ts(r),
        },
    };
    doc(out, &docs, "  ");
    writeln!(
        out,
        "  export function {}({}): {ret};",
        camel(name),
        params.join(", ")
    )
    .unwrap();
}

/// The text of `wit.d.ts` for the interfaces of the `worldline:agent`
/// package's files (the ones the `agent` world imports, and the types they
/// share), in file order.
///
/// A deliberately small reader, like `sandbox::wit`'s: the file's own
/// layout (`interface`/`world` at column 0, one item per line, `enum` and
/// `record` bodies closed by `  }`); anything else it meets is a panic
/// naming what to add, so the test cannot pass on a WIT it misreads.
pub(super) fn generate(files: &[&str]) -> String {
    let mut out = String::from(
        "// Generated from wit/ by the test in host/src/cli/build_js_cmd/types.rs; do not edit.\n\
         // Rewrite it after a WIT change: WORLDLINE_BLESS=1 cargo test -p worldline --lib build_js_cmd\n\
         // The `worldline:agent` imports as ComponentizeJS binds them: names in camelCase, a WIT\n\
         // `result` returned as its `ok` value and thrown as `{ payload: err }`, a `variant` as\n\
         // `{ tag, val }`.\n",
    );
    for text in files {
        interfaces(&mut out, text);
    }
    out
}

/// The `declare module` blocks of one WIT file's interfaces.
fn interfaces(out: &mut String, agent_wit: &str) {
    let package = agent_wit
        .lines()
        .find_map(|l| l.strip_prefix("package "))
        .expect("a package line")
        .trim_end_matches(';');
    let (pkg, version) = package.split_once('@').expect("a versioned package");
    let mut docs: Vec<String> = Vec::new();
    let mut in_interface = false;
    // `enum`, `variant` or `record` while reading one's body.
    let mut body: Option<&str> = None;
    for line in agent_wit.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            docs.push(d.trim().to_string());
            continue;
        }
        if let Some(name) = line.strip_prefix("interface ") {
            let name = name.trim_end_matches('{').trim();
            writeln!(out, "\ndeclare module \"{pkg}/{name}@{version}\" {{").unwrap();
            in_interface = true;
        } else if line.starts_with("world ") {
            in_interface = false;
        } else if line.starts_with('}') {
            if in_interface {
                writeln!(out, "}}").unwrap();
            }
            in_interface = false;
        } else if !in_interface || t.is_empty() {
        } else if let Some(kind) = body {
            if t == "}" {
                if kind != "record" {
                    // Close the union (its last case carries the `;`).
                    let trimmed = out.trim_end().len();
                    out.truncate(trimmed);
                    out.push_str(";\n");
                } else {
                    writeln!(out, "  }}").unwrap();
                }
                body = None;
            } else if kind == "enum" {
                doc(out, &docs, "    ");
                writeln!(out, "    | \"{}\"", t.trim_end_matches(',')).unwrap();
            } else if kind == "variant" {
                doc(out, &docs, "    ");
                let case = t.trim_end_matches(',');
                match case.split_once('(') {
                    Some((name, ty)) => writeln!(
                        out,
                        "    | {{ tag: \"{name}\"; val: {} }}",
                        ts(ty.trim_end_matches(')'))
                    ),
                    None => writeln!(out, "    | {{ tag: \"{case}\" }}"),
                }
                .unwrap();
            } else {
                let (n, ty) = t.trim_end_matches(',').split_once(':').expect("a field");
                doc(out, &docs, "    ");
                writeln!(out, "    {}: {};", camel(n.trim()), ts(ty)).unwrap();
            }
        } else if let Some(rest) = t.strip_prefix("use ") {
            let (from, names) = rest
                .trim_end_matches(';')
                .split_once(".{")
                .expect("use iface.{names}");
            let names: Vec<String> = split_top(names.trim_end_matches('}'))
                .into_iter()
                .map(pascal)
                .collect();
            writeln!(
                out,
                "  import type {{ {} }} from \"{pkg}/{from}@{version}\";",
                names.join(", ")
            )
            .unwrap();
        } else if let Some(name) = t.strip_prefix("enum ") {
            let name = name.trim_end_matches('{').trim();
            doc(out, &docs, "  ");
            writeln!(out, "  export type {} =", pascal(name)).unwrap();
            body = Some("enum");
        } else if let Some(name) = t.strip_prefix("variant ") {
            let name = name.trim_end_matches('{').trim();
            doc(out, &docs, "  ");
            writeln!(out, "  export type {} =", pascal(name)).unwrap();
            body = Some("variant");
        } else if let Some(name) = t.strip_prefix("record ") {
            let name = name.trim_end_matches('{').trim();
            doc(out, &docs, "  ");
            writeln!(out, "  export interface {} {{", pascal(name)).unwrap();
            body = Some("record");
        } else if let Some((name, sig)) = t.split_once(": func(") {
            function(out, name, &format!("func({sig}"), &docs);
        } else {
            panic!("wit.d.ts: add a mapping for the WIT line `{t}`");
        }
        docs.clear();
    }
}

#[test]
fn wit_d_ts_is_generated_from_the_wit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let generated = generate(&[
        include_str!("../../../../wit/agent.wit"),
        include_str!("../../../../wit/conversation.wit"),
    ]);
    let path = root.join("guest-sdk/js/wit.d.ts");
    if std::env::var_os("WORLDLINE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "guest-sdk/js/wit.d.ts differs from what wit/ gives; rewrite it with \
         `WORLDLINE_BLESS=1 cargo test -p worldline --lib build_js_cmd` and fix the SDK where \
         the TypeScript check then fails"
    );
}
