//! `cargo xtask layers [--edges] [DIR]`: the core's modules form no cycle, and the
//! crate imports no name from its own root.
//!
//! Every `.rs` file of the module tree under `core/src` (or `DIR`) is read,
//! starting at `lib.rs` and following its `mod` declarations (`foo.rs` and
//! `foo/mod.rs` are `foo`, `foo/bar.rs` is `foo::bar`, a `#[path]` is
//! followed; inline `mod name { .. }` blocks are modules of their own).
//! Test-only code (`#[cfg(test)]`, `#[cfg(all(test, ..))]`, `#[cfg(doctest)]`
//! items and modules, such as `tests` modules and lib.rs's `reference`) is
//! left out: what tests import is no layering.
//!
//! A module depends on another when its code names it: a `use` (groups,
//! `self`, globs and `as` included) or a path in code (`crate::rules::Decision`
//! inline), starting at `crate`, `self`, `super`, a child module or a name a
//! `use` bound to a module. `crate::a::b::C` is an edge to the deepest module
//! it names (`a::b` if that is a module, else `a`). Comments, doc comments and
//! string literals are skipped. A `mod child` declaration is no edge; a parent
//! naming `child::X` is, and so is a child naming `super::X`. The root's
//! re-exports (`pub use` in lib.rs) are no edges.
//!
//! It fails on
//! - a strongly connected component of more than one module (Tarjan): each
//!   is printed as cycles `a -> b -> a` that together take every edge
//!   inside it, with the file:line of one import for each edge;
//! - a name imported from the crate root (`use crate::Engine`, or
//!   `crate::Timestamp` inline) that the root only re-exports: inside the
//!   crate, a name is imported from the module that defines it, never from
//!   the root.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A module's path from the crate root (empty: the root).
type ModPath = Vec<String>;

/// `cargo xtask layers [DIR]`.
pub(crate) fn layers(args: &[String]) -> Result<(), String> {
    let list_edges = args.iter().any(|a| a == "--edges");
    let rest: Vec<&String> = args.iter().filter(|a| *a != "--edges").collect();
    let dir = match rest.as_slice() {
        [] => crate::root().join("core/src"),
        [dir] if !dir.starts_with('-') => PathBuf::from(dir),
        _ => return Err("usage: cargo xtask layers [--edges] [CRATE-SRC-DIR]".into()),
    };
    let report = check(&dir)?;
    if list_edges {
        print!("{}", report.render_edges(&crate::root()));
    }
    print!("{}", report.render(&crate::root()));
    report.verdict()
}

fn name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

// ---------------------------------------------------------------- tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// A string literal's text (escapes left as written).
    Str(String),
    Punct(char),
    /// `::`
    PathSep,
    Lifetime,
    Literal,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Rust source as tokens, without comments; string and character
/// literals are single tokens, so nothing in them reads as a path.
fn tokenize(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some((text, end)) = string_literal(&chars, i) {
            line += chars[i..end].iter().filter(|&&c| c == '\n').count();
            out.push(Token { tok: Tok::Str(text), line: start_line });
            i = end;
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            let q = if c == 'b' { i + 1 } else { i };
            if at(q + 1) == '\\' {
                // An escaped character: `'\n'`, `'\''`, `'\u{1F600}'`.
                let mut j = q + 3;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                out.push(Token { tok: Tok::Literal, line });
                i = j + 1;
            } else if at(q + 2) == '\'' {
                out.push(Token { tok: Tok::Literal, line });
                i = q + 3;
            } else {
                // A lifetime or a label: `'a`, `'static`.
                let mut j = q + 1;
                while j < chars.len() && is_ident_char(chars[j]) {
                    j += 1;
                }
                out.push(Token { tok: Tok::Lifetime, line });
                i = j.max(q + 1);
            }
        } else if is_ident_start(c) {
            // A raw identifier `r#name` is the name.
            let begin =
                if c == 'r' && at(i + 1) == '#' && is_ident_start(at(i + 2)) { i + 2 } else { i };
            let mut j = begin;
            while j < chars.len() && is_ident_char(chars[j]) {
                j += 1;
            }
            out.push(Token { tok: Tok::Ident(chars[begin..j].iter().collect()), line });
            i = j;
        } else if c.is_ascii_digit() {
            let mut j = i;
            while j < chars.len()
                && (is_ident_char(chars[j]) || (chars[j] == '.' && at(j + 1).is_ascii_digit()))
            {
                j += 1;
            }
            out.push(Token { tok: Tok::Literal, line });
            i = j;
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token { tok: Tok::PathSep, line });
            i += 2;
        } else {
            out.push(Token { tok: Tok::Punct(c), line });
            i += 1;
        }
    }
    out
}

/// A string literal starting at `i` (`"…"`, `r#"…"#`, `b"…"`, `br"…"`,
/// `c"…"`, `cr"…"`): its text and the index just past it.
fn string_literal(chars: &[char], i: usize) -> Option<(String, usize)> {
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut j = i;
    if matches!(at(j), 'b' | 'c') && matches!(at(j + 1), '"' | 'r') {
        j += 1;
    }
    if at(j) == 'r' {
        let mut hashes = 0;
        j += 1;
        while at(j) == '#' {
            hashes += 1;
            j += 1;
        }
        if at(j) != '"' {
            return None;
        }
        let body = j + 1;
        let mut k = body;
        while k < chars.len() {
            if chars[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#') {
                return Some((chars[body..k].iter().collect(), k + 1 + hashes));
            }
            k += 1;
        }
        return Some((chars[body..].iter().collect(), chars.len()));
    }
    if at(j) != '"' {
        return None;
    }
    let body = j + 1;
    let mut k = body;
    while k < chars.len() && chars[k] != '"' {
        k += if chars[k] == '\\' { 2 } else { 1 };
    }
    let end = k.min(chars.len());
    Some((chars[body..end].iter().collect(), end + 1))
}

// ---------------------------------------------------------------- parsing

/// What a module's code names, as written.
#[derive(Debug, Clone)]
struct Reference {
    from: ModPath,
    /// The path's segments as written (`crate`, `super`, `self` included).
    segments: Vec<String>,
    file: PathBuf,
    line: usize,
    kind: RefKind,
}

#[derive(Debug, Clone, PartialEq)]
enum RefKind {
    /// A `use` leaf: the name it binds (none for a glob or `_`), and
    /// whether it is a re-export (`pub use`, any visibility).
    Use { binding: Option<String>, public: bool },
    /// A path in code.
    Inline,
}

#[derive(Debug, Default)]
struct Attrs {
    test_only: bool,
    path: Option<String>,
}

/// A module being read: where it is and where its children's files are.
#[derive(Debug, Clone)]
struct Scope {
    path: ModPath,
    file: PathBuf,
    /// The directory of `mod child;` files declared here.
    child_dir: PathBuf,
}

#[derive(Debug, Default)]
struct Tree {
    /// Every module not only for tests, with the file it is in.
    modules: BTreeMap<ModPath, PathBuf>,
    /// The modules each declares (test-only ones excluded).
    children: BTreeMap<ModPath, BTreeSet<String>>,
    references: Vec<Reference>,
    /// Files of test-only modules, and directories of their children.
    test_files: BTreeSet<PathBuf>,
    test_dirs: BTreeSet<PathBuf>,
    /// Files read (module files).
    read: BTreeSet<PathBuf>,
    errors: Vec<String>,
    /// File modules still to read.
    queue: VecDeque<Scope>,
}

fn matching(toks: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

fn ident(toks: &[Token], i: usize) -> Option<&str> {
    match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is(toks: &[Token], i: usize, tok: &Tok) -> bool {
    toks.get(i).is_some_and(|t| &t.tok == tok)
}

/// Whether an attribute's tokens (inside `#[…]`) make its item test-only:
/// `cfg(test)`, `cfg(doctest)`, or `cfg(all(…))` with one of them as an
/// argument.
fn test_only(attr: &[Token]) -> bool {
    let words: Vec<Option<&str>> = (0..attr.len()).map(|i| ident(attr, i)).collect();
    match words.as_slice() {
        [Some("cfg"), None, Some("test" | "doctest"), None] => true,
        [Some("cfg"), None, Some("all"), None, ..] => {
            let mut depth = 0;
            attr.iter().skip(3).any(|t| {
                match &t.tok {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') => depth -= 1,
                    Tok::Ident(s) if depth == 1 => return s == "test" || s == "doctest",
                    _ => {}
                }
                false
            })
        }
        _ => false,
    }
}

/// The index just past the item or statement starting at `i`.
fn skip_item(toks: &[Token], i: usize) -> usize {
    const ITEMS: &str = "fn impl mod struct enum union trait const static type use extern unsafe pub async macro_rules";
    let item = ident(toks, i).is_some_and(|w| ITEMS.split(' ').any(|k| k == w));
    let mut depth = 0i32;
    let mut j = i;
    while j < toks.len() {
        match toks[j].tok {
            Tok::Punct('{') if depth == 0 && item => return matching(toks, j) + 1,
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                if depth == 0 {
                    return j;
                }
                depth -= 1;
            }
            Tok::Punct(';') if depth == 0 => return j + 1,
            Tok::Punct(',') if depth == 0 && !item => return j + 1,
            _ => {}
        }
        j += 1;
    }
    j
}

/// One `use` tree from `j` with `prefix` before it, as leaves.
fn use_tree(
    toks: &[Token],
    mut j: usize,
    prefix: &[String],
    leaves: &mut Vec<(Vec<String>, Option<String>, usize)>,
) -> usize {
    let mut path = prefix.to_vec();
    if is(toks, j, &Tok::PathSep) {
        // `use ::name`: another crate.
        path.push("::".into());
        j += 1;
    }
    loop {
        let line = toks.get(j).map_or(0, |t| t.line);
        match toks.get(j).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                j += 1;
                if is(toks, j, &Tok::PathSep) {
                    j += 1;
                    continue;
                }
                let mut binding = if s == "self" {
                    path.pop();
                    path.last().cloned()
                } else {
                    Some(s.clone())
                };
                if ident(toks, j) == Some("as") {
                    binding = ident(toks, j + 1).filter(|b| *b != "_").map(str::to_string);
                    j += 2;
                }
                leaves.push((path, binding, line));
                return j;
            }
            Some(Tok::Punct('*')) => {
                // A glob depends on the module it reads: `*` names none.
                path.push("*".into());
                leaves.push((path, None, line));
                return j + 1;
            }
            Some(Tok::Punct('{')) => {
                j += 1;
                loop {
                    match toks.get(j).map(|t| &t.tok) {
                        None => return j,
                        Some(Tok::Punct('}')) => return j + 1,
                        Some(Tok::Punct(',')) => j += 1,
                        Some(_) => {
                            let next = use_tree(toks, j, &path, leaves);
                            j = next.max(j + 1);
                        }
                    }
                }
            }
            _ => return j + 1,
        }
    }
}

impl Tree {
    /// Reads the module tree whose root is `dir/lib.rs`.
    fn read(dir: &Path) -> Result<Tree, String> {
        let lib = dir.join("lib.rs");
        if !lib.exists() {
            return Err(format!("{}: no such file", lib.display()));
        }
        let mut tree = Tree::default();
        tree.modules.insert(Vec::new(), lib.clone());
        tree.queue.push_back(Scope { path: Vec::new(), file: lib, child_dir: dir.to_path_buf() });
        while let Some(scope) = tree.queue.pop_front() {
            let src = std::fs::read_to_string(&scope.file)
                .map_err(|e| format!("{}: {e}", scope.file.display()))?;
            tree.read.insert(scope.file.clone());
            let toks = tokenize(&src);
            if !tree.scan(&toks, &scope) {
                // `#![cfg(test)]`: the whole file is for tests.
                tree.forget(&scope.path);
            }
        }
        Ok(tree)
    }

    /// Drops a module found test-only by an inner attribute.
    fn forget(&mut self, path: &ModPath) {
        self.modules.retain(|m, _| !m.starts_with(path));
        self.references.retain(|r| !r.from.starts_with(path));
        if let Some((last, parent)) = path.split_last() {
            if let Some(c) = self.children.get_mut(parent) {
                c.remove(last);
            }
        }
    }

    /// Reads a module's tokens; false when an inner `#![cfg(test)]` makes
    /// it test-only.
    fn scan(&mut self, toks: &[Token], scope: &Scope) -> bool {
        self.children.entry(scope.path.clone()).or_default();
        let mut attrs = Attrs::default();
        let mut public = false;
        let mut i = 0;
        while i < toks.len() {
            let line = toks[i].line;
            match &toks[i].tok {
                Tok::Punct('#') => {
                    let inner = is(toks, i + 1, &Tok::Punct('!'));
                    let open = i + 1 + usize::from(inner);
                    if !is(toks, open, &Tok::Punct('[')) {
                        i += 1;
                        continue;
                    }
                    let close = matching(toks, open);
                    let attr = &toks[open + 1..close.min(toks.len())];
                    if test_only(attr) {
                        if inner {
                            return false;
                        }
                        attrs.test_only = true;
                    }
                    if let (
                        [Token { tok: Tok::Ident(p), .. }, Token { tok: Tok::Punct('='), .. }, Token { tok: Tok::Str(s), .. }],
                        false,
                    ) = (attr, inner)
                    {
                        if p == "path" {
                            attrs.path = Some(s.clone());
                        }
                    }
                    i = close + 1;
                    continue;
                }
                _ if attrs.test_only => {
                    if ident(toks, i) == Some("mod")
                        || (ident(toks, i) == Some("pub") && mod_after_vis(toks, i))
                    {
                        self.note_test_module(toks, i, scope, attrs.path.as_deref());
                    }
                    i = skip_item(toks, i);
                    attrs = Attrs::default();
                    public = false;
                    continue;
                }
                Tok::Ident(w) if w == "pub" => {
                    // A visibility, `pub(in crate::a)` included: no path.
                    public = true;
                    i += 1;
                    if is(toks, i, &Tok::Punct('(')) {
                        i = matching(toks, i) + 1;
                    }
                    continue;
                }
                Tok::Ident(w) if w == "mod" => {
                    if let Some(child) = ident(toks, i + 1) {
                        let path: ModPath =
                            scope.path.iter().cloned().chain([child.to_string()]).collect();
                        if is(toks, i + 2, &Tok::Punct('{')) {
                            let close = matching(toks, i + 2);
                            let inline = Scope {
                                path: path.clone(),
                                file: scope.file.clone(),
                                child_dir: scope.child_dir.join(child),
                            };
                            self.children
                                .entry(scope.path.clone())
                                .or_default()
                                .insert(child.to_string());
                            self.modules.insert(path.clone(), scope.file.clone());
                            if !self.scan(&toks[i + 3..close.min(toks.len())], &inline) {
                                self.forget(&path);
                            }
                            i = close + 1;
                        } else if is(toks, i + 2, &Tok::Punct(';')) {
                            self.declare(scope, child, attrs.path.as_deref(), line);
                            i += 3;
                        } else {
                            i += 1;
                        }
                    } else {
                        i += 1;
                    }
                }
                Tok::Ident(w) if w == "use" => {
                    let mut leaves = Vec::new();
                    let mut j = i + 1;
                    while j < toks.len() && !is(toks, j, &Tok::Punct(';')) {
                        j = use_tree(toks, j, &[], &mut leaves).max(j + 1);
                    }
                    for (segments, binding, line) in leaves {
                        self.references.push(Reference {
                            from: scope.path.clone(),
                            segments,
                            file: scope.file.clone(),
                            line,
                            kind: RefKind::Use { binding, public },
                        });
                    }
                    i = j + 1;
                }
                Tok::Ident(first) if is(toks, i + 1, &Tok::PathSep) && !continues(toks, i) => {
                    // `$crate::x` in a macro reads as `crate::x`.
                    let mut segments = vec![first.clone()];
                    let mut j = i + 1;
                    while is(toks, j, &Tok::PathSep) {
                        match ident(toks, j + 1) {
                            Some(s) => segments.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    self.references.push(Reference {
                        from: scope.path.clone(),
                        segments,
                        file: scope.file.clone(),
                        line,
                        kind: RefKind::Inline,
                    });
                    i = j;
                }
                _ => i += 1,
            }
            attrs = Attrs::default();
            public = false;
        }
        true
    }

    /// The file of `mod name;` declared in `scope`.
    fn child_file(
        scope: &Scope,
        name: &str,
        path_attr: Option<&str>,
    ) -> Result<(PathBuf, PathBuf), String> {
        if let Some(p) = path_attr {
            let base = scope.file.parent().unwrap_or(Path::new("."));
            let file = base.join(p);
            let dir = file.with_extension("");
            let dir = if file.file_name().is_some_and(|f| f == "mod.rs") {
                file.parent().unwrap_or(base).to_path_buf()
            } else {
                dir
            };
            return Ok((file, dir));
        }
        let flat = scope.child_dir.join(format!("{name}.rs"));
        let nested = scope.child_dir.join(name).join("mod.rs");
        match (flat.exists(), nested.exists()) {
            (true, false) => Ok((flat, scope.child_dir.join(name))),
            (false, true) => Ok((nested, scope.child_dir.join(name))),
            (true, true) => Err(format!("both {} and {}", flat.display(), nested.display())),
            (false, false) => Err(format!("neither {} nor {}", flat.display(), nested.display())),
        }
    }

    fn declare(&mut self, scope: &Scope, name: &str, path_attr: Option<&str>, line: usize) {
        let path: ModPath = scope.path.iter().cloned().chain([name.to_string()]).collect();
        match Self::child_file(scope, name, path_attr) {
            Ok((file, child_dir)) => {
                self.children.entry(scope.path.clone()).or_default().insert(name.to_string());
                self.modules.insert(path.clone(), file.clone());
                self.queue.push_back(Scope { path, file, child_dir });
            }
            Err(e) => {
                self.errors.push(format!("{}:{line}: `mod {name};`: {e}", scope.file.display()))
            }
        }
    }

    /// Remembers where a test-only `mod name;` is, so its files are not
    /// reported as outside the tree.
    fn note_test_module(
        &mut self,
        toks: &[Token],
        mut i: usize,
        scope: &Scope,
        path_attr: Option<&str>,
    ) {
        if ident(toks, i) == Some("pub") {
            i += 1;
            if is(toks, i, &Tok::Punct('(')) {
                i = matching(toks, i) + 1;
            }
        }
        let Some(name) = ident(toks, i + 1) else { return };
        if is(toks, i + 2, &Tok::Punct('{')) {
            self.test_dirs.insert(scope.child_dir.join(name));
        } else if let Ok((file, dir)) = Self::child_file(scope, name, path_attr) {
            self.test_files.insert(file);
            self.test_dirs.insert(dir);
        } else {
            self.test_dirs.insert(scope.child_dir.join(name));
        }
    }
}

/// Whether the identifier at `i` continues a path or a method call
/// (`a::b`, `x.f::<T>`) rather than starting one.
fn continues(toks: &[Token], i: usize) -> bool {
    i > 0 && (is(toks, i - 1, &Tok::PathSep) || is(toks, i - 1, &Tok::Punct('.')))
}

fn mod_after_vis(toks: &[Token], i: usize) -> bool {
    let j = if is(toks, i + 1, &Tok::Punct('(')) { matching(toks, i + 1) + 1 } else { i + 1 };
    ident(toks, j) == Some("mod")
}

// ---------------------------------------------------------------- the graph

/// Where an edge comes from: one import that makes it.
#[derive(Debug, Clone)]
struct Site {
    file: PathBuf,
    line: usize,
    written: String,
}

/// A name imported from the crate root that the root only re-exports.
#[derive(Debug, Clone)]
struct RootImport {
    site: Site,
    name: String,
    defined_in: ModPath,
}

/// What `cargo xtask layers` found.
#[derive(Debug)]
pub(crate) struct Report {
    modules: usize,
    edges: BTreeMap<(ModPath, ModPath), Site>,
    /// The strongly connected components of more than one module, each
    /// with cycles that take all its edges.
    components: Vec<(Vec<ModPath>, Vec<Vec<ModPath>>)>,
    root_imports: Vec<RootImport>,
    outside: Vec<PathBuf>,
    errors: Vec<String>,
}

/// The edge `from -> to` lifted to the two siblings under their common
/// ancestor that hold them; `None` when one holds the other.
fn between_siblings(from: &ModPath, to: &ModPath) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to.iter()).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// Reads the crate whose sources are in `dir` and checks its layers.
pub(crate) fn check(dir: &Path) -> Result<Report, String> {
    let tree = Tree::read(dir)?;
    let mut graph = Graph {
        tree: &tree,
        aliases: BTreeMap::new(),
        reexports: BTreeMap::new(),
        bindings: BTreeMap::new(),
    };
    graph.bind_aliases();
    graph.bind_reexports();
    let mut edges: BTreeMap<(ModPath, ModPath), Site> = BTreeMap::new();
    let mut root_imports = Vec::new();
    for r in &tree.references {
        if r.from.is_empty() && matches!(r.kind, RefKind::Use { public: true, .. }) {
            continue;
        }
        let Some(abs) = graph.absolute(&r.from, &r.segments) else { continue };
        let site = Site { file: r.file.clone(), line: r.line, written: r.segments.join("::") };
        let target = match abs.first() {
            Some(first)
                if !r.from.is_empty() && !tree.modules.contains_key(&vec![first.clone()]) =>
            {
                match graph.reexports.get(first) {
                    Some(defined_in) => {
                        root_imports.push(RootImport {
                            site: site.clone(),
                            name: first.clone(),
                            defined_in: defined_in.clone(),
                        });
                        defined_in.clone()
                    }
                    None => Vec::new(),
                }
            }
            _ => graph.resolve(&r.from, abs),
        };
        // A module's submodules are its parts: an edge between a module and
        // one of its own descendants is no layer edge, and an edge between
        // cousins is an edge between the two siblings that hold them.
        if let Some((from, to)) = between_siblings(&r.from, &target) {
            edges.entry((from, to)).or_insert(site);
        }
    }
    let components = components(&tree.modules.keys().cloned().collect::<Vec<_>>(), &edges);
    let outside = outside_files(dir, &tree);
    Ok(Report {
        modules: tree.modules.len(),
        edges,
        components,
        root_imports,
        outside,
        errors: tree.errors.clone(),
    })
}

struct Graph<'t> {
    tree: &'t Tree,
    /// Per module, the names its `use`s bind to modules.
    aliases: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// The root's re-exported names, with the module each comes from.
    reexports: BTreeMap<String, ModPath>,
    /// Per module and name, the path of the `use` that binds the name.
    bindings: BTreeMap<(ModPath, String), Vec<String>>,
}

impl Graph<'_> {
    /// A written path from `from` as a path from the root; `None` for a
    /// path outside the crate (`core::fmt`, a local type's `Self::X`).
    fn absolute(&self, from: &ModPath, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut abs: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => from.clone(),
            "super" => {
                let mut p = from.clone();
                p.pop()?;
                p
            }
            name if self.tree.children.get(from).is_some_and(|c| c.contains(name)) => {
                from.iter().cloned().chain([name.to_string()]).collect()
            }
            name => self.aliases.get(from).and_then(|a| a.get(name)).cloned()?,
        };
        for s in rest {
            if s == "super" {
                abs.pop()?;
            } else {
                abs.push(s.clone());
            }
        }
        Some(abs)
    }

    /// The module a path from the root depends on: the deepest module it
    /// names, except that a name an ancestor of `from` only imports (`use`)
    /// is followed to where it comes from: a child depends on its parent
    /// for what the parent's own file defines, not for what it re-exports.
    fn resolve(&self, from: &ModPath, mut abs: Vec<String>) -> ModPath {
        for _ in 0..8 {
            let module = self.deepest(&abs);
            let ancestor = module.len() < from.len() && from.starts_with(&module);
            let Some(name) = abs.get(module.len()).filter(|_| ancestor) else { return module };
            let Some(segments) = self.bindings.get(&(module.clone(), name.clone())) else {
                return module;
            };
            let Some(mut through) = self.absolute(&module, segments) else { return module };
            through.extend(abs[module.len() + 1..].iter().cloned());
            abs = through;
        }
        self.deepest(&abs)
    }

    /// The deepest module a path from the root names.
    fn deepest(&self, abs: &[String]) -> ModPath {
        (0..=abs.len())
            .rev()
            .map(|n| abs[..n].to_vec())
            .find(|p| self.tree.modules.contains_key(p))
            .unwrap_or_default()
    }

    /// The names `use`s bind to whole modules (`use crate::json;`,
    /// `use crate::time::{self, Zone}`), twice so that a `use` may start at
    /// another's name.
    fn bind_aliases(&mut self) {
        for _ in 0..2 {
            for r in &self.tree.references {
                let RefKind::Use { binding: Some(b), .. } = &r.kind else { continue };
                if let Some(abs) = self.absolute(&r.from, &r.segments) {
                    if self.tree.modules.contains_key(&abs) {
                        self.aliases.entry(r.from.clone()).or_default().insert(b.clone(), abs);
                    }
                }
            }
        }
    }

    fn bind_reexports(&mut self) {
        for r in &self.tree.references {
            if let RefKind::Use { binding: Some(b), .. } = &r.kind {
                self.bindings
                    .entry((r.from.clone(), b.clone()))
                    .or_insert_with(|| r.segments.clone());
            }
        }
        for r in &self.tree.references {
            let RefKind::Use { binding: Some(b), public: true } = &r.kind else { continue };
            if !r.from.is_empty() {
                continue;
            }
            if let Some(abs) = self.absolute(&r.from, &r.segments) {
                self.reexports.insert(b.clone(), self.deepest(&abs));
            }
        }
    }
}

/// Tarjan's strongly connected components of more than one module, each
/// with cycles through it that together take all its edges.
fn components(
    nodes: &[ModPath],
    edges: &BTreeMap<(ModPath, ModPath), Site>,
) -> Vec<(Vec<ModPath>, Vec<Vec<ModPath>>)> {
    let index_of: BTreeMap<&ModPath, usize> =
        nodes.iter().enumerate().map(|(i, n)| (n, i)).collect();
    let mut adjacent = vec![Vec::new(); nodes.len()];
    for (from, to) in edges.keys() {
        if let (Some(&f), Some(&t)) = (index_of.get(from), index_of.get(to)) {
            adjacent[f].push(t);
        }
    }
    let mut tarjan = Tarjan {
        adjacent: &adjacent,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..nodes.len() {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    let mut out = Vec::new();
    for mut members in tarjan.found.into_iter().filter(|c| c.len() > 1) {
        members.sort_unstable();
        let inside: BTreeSet<usize> = members.iter().copied().collect();
        let mut uncovered: BTreeSet<(usize, usize)> = members
            .iter()
            .flat_map(|&u| adjacent[u].iter().filter(|v| inside.contains(v)).map(move |&v| (u, v)))
            .collect();
        let mut cycles = Vec::new();
        while let Some(&(u, v)) = uncovered.iter().next() {
            // The shortest way back from v to u inside the component.
            let mut came_from = BTreeMap::from([(v, v)]);
            let mut queue = VecDeque::from([v]);
            while let Some(x) = queue.pop_front() {
                if x == u {
                    break;
                }
                for &y in &adjacent[x] {
                    if inside.contains(&y) && !came_from.contains_key(&y) {
                        came_from.insert(y, x);
                        queue.push_back(y);
                    }
                }
            }
            let mut back = vec![u];
            while let Some(&x) = back.last().and_then(|l| came_from.get(l)) {
                if back.last() == Some(&x) {
                    break;
                }
                back.push(x);
            }
            back.reverse();
            // back: v .. u; the cycle: u -> v -> .. -> u.
            let mut cycle = vec![u];
            cycle.extend(back);
            uncovered.remove(&(u, v));
            for w in cycle.windows(2) {
                uncovered.remove(&(w[0], w[1]));
            }
            cycles.push(cycle.into_iter().map(|i| nodes[i].clone()).collect());
        }
        out.push((members.into_iter().map(|i| nodes[i].clone()).collect(), cycles));
    }
    out.sort();
    out
}

struct Tarjan<'a> {
    adjacent: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.adjacent[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.found.push(component);
        }
    }
}

/// `.rs` files under `dir` in no module (neither read nor test-only).
fn outside_files(dir: &Path, tree: &Tree) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                && !tree.read.contains(&p)
                && !tree.test_files.contains(&p)
                && !tree.test_dirs.iter().any(|t| p.starts_with(t))
            {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

impl Report {
    fn site(&self, from: &ModPath, to: &ModPath) -> Option<&Site> {
        self.edges.get(&(from.clone(), to.clone()))
    }

    /// Every edge with one import that makes it (`--edges`).
    fn render_edges(&self, base: &Path) -> String {
        let mut s = String::new();
        for ((from, to), site) in &self.edges {
            let edge = format!("{} -> {}", name(from), name(to));
            let file = site.file.strip_prefix(base).unwrap_or(&site.file).display().to_string();
            let _ = writeln!(s, "{edge:<44} {file}:{}  `{}`", site.line, site.written);
        }
        s
    }

    /// The report as printed, file names relative to `base` where they can be.
    pub(crate) fn render(&self, base: &Path) -> String {
        let shown = |p: &Path| p.strip_prefix(base).unwrap_or(p).display().to_string();
        let mut s = String::new();
        for e in &self.errors {
            let _ = writeln!(s, "error: {e}");
        }
        for f in &self.outside {
            let _ = writeln!(
                s,
                "note: {} is in no module (no `mod` declares it): not checked",
                shown(f)
            );
        }
        for (members, cycles) in &self.components {
            let names: Vec<String> = members.iter().map(|m| name(m)).collect();
            let _ = writeln!(s, "cycle among {} modules: {}", members.len(), names.join(", "));
            for cycle in cycles {
                let path: Vec<String> = cycle.iter().map(|m| name(m)).collect();
                let _ = writeln!(s, "  {}", path.join(" -> "));
                for w in cycle.windows(2) {
                    if let Some(site) = self.site(&w[0], &w[1]) {
                        let edge = format!("{} -> {}", name(&w[0]), name(&w[1]));
                        let _ = writeln!(
                            s,
                            "      {edge:<40} {}:{}  `{}`",
                            shown(&site.file),
                            site.line,
                            site.written
                        );
                    }
                }
            }
        }
        for r in &self.root_imports {
            let _ = writeln!(
                s,
                "{}:{}: `{}` imports `{}` from the crate root, which re-exports it from `{}`: inside the crate, import a name from the module that defines it, never from the root",
                shown(&r.site.file),
                r.site.line,
                r.site.written,
                r.name,
                name(&r.defined_in)
            );
        }
        if self.components.is_empty() {
            let _ =
                writeln!(s, "no cycle among {} modules ({} edges)", self.modules, self.edges.len());
        } else {
            let _ = writeln!(s, "{} modules, {} edges", self.modules, self.edges.len());
        }
        s
    }

    /// Ok only with no cycle, no import from the root and no unreadable
    /// `mod` declaration.
    pub(crate) fn verdict(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        let new = &self.components;
        if !new.is_empty() {
            let modules: usize = new.iter().map(|(m, _)| m.len()).sum();
            problems.push(format!("{} module cycle(s) through {modules} modules", new.len()));
        }
        if !self.root_imports.is_empty() {
            problems.push(format!("{} import(s) from the crate root", self.root_imports.len()));
        }
        if !self.errors.is_empty() {
            problems.push(format!("{} missing module file(s)", self.errors.len()));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("layers: {}", problems.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate in a fresh temporary directory: (file, text) pairs.
    fn crate_dir(tag: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("envaware-layers-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (file, text) in files {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn edges(report: &Report) -> Vec<String> {
        report.edges.keys().map(|(f, t)| format!("{} -> {}", name(f), name(t))).collect()
    }

    #[test]
    fn a_small_cycle_is_found_with_its_imports() {
        let dir = crate_dir(
            "cycle",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::X;\n"),
                ("a.rs", "use crate::b::Y;\npub struct X;\n"),
                ("b.rs", "pub struct Y;\nfn f() -> crate::c::Z {\n    todo!()\n}\n"),
                ("c.rs", "pub struct Z(super::a::X);\n"),
            ],
        );
        let report = check(&dir).unwrap();
        assert_eq!(edges(&report), ["a -> b", "b -> c", "c -> a"]);
        assert_eq!(report.components.len(), 1);
        let text = report.render(&dir);
        assert!(text.contains("  a -> b -> c -> a\n"), "{text}");
        assert!(text.contains("a.rs:1  `crate::b::Y`"), "{text}");
        assert!(text.contains("b.rs:2  `crate::c::Z`"), "{text}");
        assert!(text.contains("c.rs:1  `super::a::X`"), "{text}");
        assert!(report.verdict().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_clean_layout_passes() {
        let dir = crate_dir(
            "clean",
            &[
                ("lib.rs", "mod low;\nmod high;\n#[cfg(test)]\n#[path = \"../elsewhere.rs\"]\nmod reference;\npub use high::H;\n"),
                // A parent declares its child (no edge) and names it (an edge).
                ("low/mod.rs", "mod leaf;\npub use self::leaf::Leaf;\npub struct L(leaf::Leaf);\n"),
                ("low/leaf.rs", "pub struct Leaf;\n"),
                (
                    "high.rs",
                    concat!(
                        "use crate::{low::{self, L}, low::leaf::Leaf};\n",
                        "// use crate::high::nothing; a comment names no module\n",
                        "/// `crate::high` in a doc comment, /* crate::x */ neither\n",
                        "pub struct H(L, Leaf);\n",
                        "const S: &str = \"crate::high::H\";\n",
                        "const R: &str = r#\"super::low\"#;\n",
                        "fn f<'a>(x: &'a str) -> char { let _ = low::L(low::leaf::Leaf); '\"' }\n",
                        "#[cfg(test)]\nmod tests {\n    use crate::H;\n    use super::super::high;\n}\n",
                    ),
                ),
                ("tests_only.rs", "use crate::H;\n"),
            ],
        );
        let report = check(&dir).unwrap();
        // `high -> low::leaf` is an edge between the siblings `high` and
        // `low`; `low -> low::leaf` is a module and its own part: no edge.
        assert_eq!(edges(&report), ["high -> low"]);
        assert!(report.components.is_empty());
        assert!(report.root_imports.is_empty());
        assert_eq!(report.outside, [dir.join("tests_only.rs")]);
        assert_eq!(report.verdict(), Ok(()));
        assert!(report.render(&dir).ends_with("no cycle among 4 modules (1 edges)\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_module_and_its_parts_are_no_cycle_but_two_siblings_are() {
        let dir = crate_dir(
            "parent",
            &[
                ("lib.rs", "mod p;\n"),
                ("p/mod.rs", "mod c;\nmod d;\npub struct Span;\nfn f() { c::g() }\n"),
                ("p/c.rs", "use super::*;\npub fn g(_: Span) { super::d::h() }\n"),
                ("p/d.rs", "pub fn h() { crate::p::c::g(crate::p::Span) }\n"),
            ],
        );
        let report = check(&dir).unwrap();
        // `p` and its parts name each other freely; `c` and `d` are layers.
        assert_eq!(edges(&report), ["p::c -> p::d", "p::d -> p::c"]);
        assert!(report.render(&dir).contains("p/c.rs:2  `super::d::h`"), "{}", report.render(&dir));
        assert_eq!(report.components.len(), 1);
        assert!(report.verdict().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_a_parent_reexports_is_no_edge_to_the_parent() {
        let dir = crate_dir(
            "facade",
            &[
                ("lib.rs", "mod p;\nmod user;\n"),
                ("p/mod.rs", "mod a;\nmod b;\npub(crate) use self::a::A;\npub struct Own;\n"),
                ("p/a.rs", "pub struct A;\n"),
                ("p/b.rs", "use super::A;\nfn f(_: crate::p::A, _: super::Own) {}\n"),
                // From outside, the facade is what is named.
                ("user.rs", "use crate::p::A;\n"),
            ],
        );
        let report = check(&dir).unwrap();
        assert_eq!(edges(&report), ["p::b -> p::a", "user -> p"]);
        assert!(report.components.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_imported_from_the_root_fails() {
        let dir = crate_dir(
            "root",
            &[
                ("lib.rs", "mod clock;\nmod engine;\npub use clock::Timestamp;\n"),
                ("clock.rs", "pub struct Timestamp;\n"),
                ("engine.rs", "use crate::Timestamp;\nfn f(_: crate::Timestamp) {}\n"),
            ],
        );
        let report = check(&dir).unwrap();
        // The edge goes to the module that defines the name.
        assert_eq!(edges(&report), ["engine -> clock"]);
        let lines: Vec<String> = report
            .root_imports
            .iter()
            .map(|r| format!("{}:{}", r.site.written, r.site.line))
            .collect();
        assert_eq!(lines, ["crate::Timestamp:1", "crate::Timestamp:2"]);
        assert!(report.verdict().unwrap_err().contains("2 import(s) from the crate root"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
