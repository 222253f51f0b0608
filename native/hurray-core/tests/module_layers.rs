//! The crate's modules form layers: no module cycle. The test reads `src/`, collects every
//! `crate::…` path outside comments and string literals, maps each to the top-level module it
//! names (directly, or through a `pub use` of `src/lib.rs`), and fails naming the first cycle.
//! A folder module (`file/`, `descriptor/`, `composite/`) counts as one module. Paths to items
//! that `lib.rs` defines itself, and `$crate` paths in macros, are not edges. A second test
//! holds the modules to the layers listed in ARCHITECTURE.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Source text with comments, string literals and char literals blanked out (replaced by
/// spaces), so that only code is scanned.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_is_ident(&b, i) {
            // Raw string r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only literals are skipped.
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first path segment of every `crate::` path in `code`, expanding `crate::{a, b::c}` groups.
fn crate_paths(code: &str) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let pat: Vec<char> = "crate::".chars().collect();
    let mut i = 0;
    while i + pat.len() <= b.len() {
        if b[i..i + pat.len()] != pat[..] || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let mut j = i + pat.len();
        while j < b.len() && b[j].is_whitespace() {
            j += 1;
        }
        if b.get(j) == Some(&'{') {
            // A group: the first segment of each top-level item.
            let mut depth = 0;
            let mut start_item = true;
            while j < b.len() {
                let ch = b[j];
                if ch == '{' {
                    depth += 1;
                    j += 1;
                    if depth == 1 {
                        start_item = true;
                    }
                    continue;
                }
                if ch == '}' {
                    depth -= 1;
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                    continue;
                }
                if depth == 1 && ch == ',' {
                    start_item = true;
                    j += 1;
                    continue;
                }
                if depth == 1 && start_item && is_ident(ch) {
                    let s = j;
                    while j < b.len() && is_ident(b[j]) {
                        j += 1;
                    }
                    out.push(b[s..j].iter().collect());
                    start_item = false;
                    continue;
                }
                j += 1;
            }
        } else {
            let s = j;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            if j > s {
                out.push(b[s..j].iter().collect());
            }
        }
        i = j.max(i + 1);
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `mod name;` declarations of lib.rs (the top-level modules).
fn top_modules(lib: &str) -> BTreeSet<String> {
    let mut mods = BTreeSet::new();
    for line in lib.lines() {
        let t = line.trim();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
        if let Some(rest) = t.strip_prefix("mod ") {
            if let Some(name) = rest.strip_suffix(';') {
                mods.insert(name.trim().to_string());
            }
        }
    }
    mods
}

/// Names that lib.rs re-exports (`pub use module::{A, B}`), mapped to the module they come from.
fn reexports(lib: &str, mods: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code = code_only(lib);
    let mut map = BTreeMap::new();
    for stmt in code.split(';') {
        let t = stmt.trim();
        let Some(rest) = t.strip_prefix("pub use ") else { continue };
        let (module, names) = match rest.split_once("::") {
            Some((m, n)) => (m.trim().to_string(), n),
            None => continue,
        };
        if !mods.contains(&module) {
            continue;
        }
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for n in names.split(',') {
            let n = n.trim();
            let n = n.rsplit("::").next().unwrap_or(n);
            let n = n.split(" as ").last().unwrap_or(n).trim();
            if !n.is_empty() {
                map.insert(n.to_string(), module.clone());
            }
        }
    }
    map
}

/// The top-level module a source file belongs to (`src/file/reader.rs` → `file`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    if first == "lib.rs" {
        return None;
    }
    Some(first.strip_suffix(".rs").unwrap_or(&first).to_string())
}

type Graph = BTreeMap<String, BTreeSet<String>>;

fn module_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mods = top_modules(&lib);
    let names = reexports(&lib, &mods);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut g: Graph = mods.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in files {
        let Some(from) = module_of(&src, &f) else { continue };
        let code = code_only(&std::fs::read_to_string(&f).unwrap());
        for seg in crate_paths(&code) {
            let to = if mods.contains(&seg) { Some(seg) } else { names.get(&seg).cloned() };
            if let Some(to) = to {
                if to != from {
                    g.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    g
}

/// A cycle as a path `a → b → … → a`, if the graph has one.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(n: &str, g: &Graph, mark: &mut BTreeMap<String, Mark>, stack: &mut Vec<String>) -> Option<Vec<String>> {
        mark.insert(n.to_string(), Mark::Open);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match mark.get(m).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let at = stack.iter().position(|x| x == m).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(m, g, mark, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        mark.insert(n.to_string(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for n in g.keys() {
        if mark.get(n).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(n, g, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn hurray_core_has_no_module_cycle() {
    let g = module_graph();
    if let Some(c) = find_cycle(&g) {
        let edges: Vec<String> = g.iter().map(|(k, v)| format!("  {k} -> {v:?}")).collect();
        panic!("module cycle in hurray-core: {}\nall edges:\n{}", c.join(" -> "), edges.join("\n"));
    }
}

/// The layers of ARCHITECTURE.md §The Rust core's modules, lowest first: a module may use
/// modules of its own layer or a lower one. A module not listed here is held only to the
/// no-cycle rule.
const LAYERS: &[&[&str]] = &[
    &["wire", "error", "test_rng"],
    &["types", "shape", "names", "buffer", "crc32c", "lowp", "quant"],
    &["descriptor", "parts", "dlpack"],
    &["sparse", "paged", "layouts", "quantize"],
    &["pool", "tensor"],
    &["decoder", "encoder"],
    &["stream", "file"],
    &["composite"],
];

fn layer_of(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

#[test]
fn no_module_uses_a_higher_layer() {
    let g = module_graph();
    let mut wrong = Vec::new();
    for (from, tos) in &g {
        for to in tos {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if b > a {
                    wrong.push(format!("{from} (layer {a}) uses {to} (layer {b})"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "modules using a higher layer:\n{}", wrong.join("\n"));
}

/// The scanner sees the edges it must see (so an empty graph cannot pass for a layered one).
#[test]
fn the_scan_finds_known_edges() {
    let g = module_graph();
    for (from, to) in [("stream", "decoder"), ("stream", "encoder"), ("decoder", "descriptor"), ("composite", "file")] {
        assert!(g.get(from).is_some_and(|s| s.contains(to)), "no edge {from} -> {to} found: {g:?}");
    }
}

#[test]
fn cycles_are_found_and_comments_and_strings_are_not_code() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);

    let src = "use crate::{x::Y, z};\n// crate::gone\n/* crate::gone2 /* nested */ */\nlet s = \"crate::str\"; \
               let r = r#\"crate::raw\"#; let c = '\"'; fn f<'a>(x: &'a crate::w::T) {} $crate::mac!();";
    assert_eq!(crate_paths(&code_only(src)), ["x", "z", "w"]);
}
