//! The `__global__` functions of a user's file, found by reading it: their qualified names,
//! template parameters, parameter lists and lines. Enough to tell a user which kernels their
//! file has when the entry they named is not one of them, and to name a file's kernels in
//! `harness inspect FILE.cu`; the compiler remains the judge of everything else.

use super::spec::{bracket_end, split_top};
use kernel::sim::compile::strip_comments;

/// One `__global__` function of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDecl {
    /// `name` or `ns::name`.
    pub name: String,
    /// `<int BM, int BN>` for a template, as written (whitespace collapsed).
    pub template: Option<String>,
    /// `(int M, const float *A)`, as written (whitespace collapsed).
    pub params: String,
    /// The file it is in, as messages show it.
    pub file: String,
    /// 1-based line of its name.
    pub line: usize,
    /// The text between the parentheses of its `__cluster_dims__(...)`, if it has one: the
    /// simulator's wrapper must declare it too, since the blocks of a cluster run together.
    pub cluster_dims: Option<String>,
    /// Whether its body is here: `false` for a declaration alone (`__global__ void k(...);`),
    /// whose definition lies in another `.cu` file.
    pub defined: bool,
}

impl KernelDecl {
    /// `sgemm<int BM, int BN> (line 17)` or `ns::k (util.cuh:4)`.
    pub fn describe(&self, main_file: &str) -> String {
        format!(
            "{}{} ({})",
            self.name,
            self.template.as_deref().unwrap_or(""),
            self.at(main_file)
        )
    }

    /// `line 17`, or `util.cuh:4` in another file than `main_file`.
    pub fn at(&self, main_file: &str) -> String {
        if self.file == main_file {
            format!("line {}", self.line)
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }

    /// Its `__cluster_dims__` for the instantiation `entry` (`k<128, 2>`): a template's
    /// parameters in the dims (`CLUSTER_M * CLUSTER_N, 1, 1`) replaced by the entry's
    /// arguments, or by their defaults where the entry leaves them out (a default may name
    /// the parameters before it), since the wrapper that declares the dims is no template.
    pub fn cluster_dims_for(&self, entry: &str) -> Option<String> {
        let dims = self.cluster_dims.as_deref()?;
        let Some(params) = self.template.as_deref() else {
            return Some(dims.to_string());
        };
        // What is between a leading `<` and its `>`.
        let inner = |t: &str| {
            let t = t.trim();
            let end = bracket_end(t);
            t.get(1..end.saturating_sub(1)).unwrap_or("").to_string()
        };
        let given = entry
            .find('<')
            .map_or(String::new(), |open| inner(&entry[open..]));
        let given = split_top(&given);
        let mut names: Vec<String> = Vec::new();
        let mut values: Vec<String> = Vec::new();
        for (k, p) in split_top(&inner(params)).iter().enumerate() {
            let (decl, default) = p.split_once('=').unwrap_or((p, ""));
            let Some(name) = decl
                .split(|c: char| !is_ident(c as u8))
                .rfind(|w| !w.is_empty())
            else {
                continue;
            };
            let value = match given.get(k).map(|v| v.trim()).filter(|v| !v.is_empty()) {
                Some(v) => v.to_string(),
                None => substitute(default.trim(), &names, &values),
            };
            names.push(name.to_string());
            values.push(value);
        }
        Some(substitute(dims, &names, &values))
    }
}

/// `text` with each whole word that is one of `names` replaced by its value in parentheses.
fn substitute(text: &str, names: &[String], values: &[String]) -> String {
    let mut out = String::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1])) {
            let end = (i..b.len()).find(|&j| !is_ident(b[j])).unwrap_or(b.len());
            let word = &text[i..end];
            match names
                .iter()
                .position(|n| n == word)
                .and_then(|k| values.get(k))
            {
                Some(v) => out.push_str(&format!("({v})")),
                None => out.push_str(word),
            }
            i = end;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Index just past the bracket matching the one at `open` (`(`/`)` or `<`/`>`).
fn matching(b: &[u8], open: usize, (o, c): (u8, u8)) -> usize {
    let mut depth = 0i32;
    for (j, &x) in b.iter().enumerate().skip(open) {
        if x == o {
            depth += 1;
        } else if x == c {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    b.len()
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `code` without comments, string and character literals, and preprocessor lines (all
/// replaced by spaces, lines kept): what is left is declarations and braces.
fn bare(code: &str) -> Vec<u8> {
    let mut b = strip_comments(code).into_bytes();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // To the end of the line, and of each line a backslash continues (read before
                // it is blanked; CRLF and trailing blanks allowed, as gcc allows them).
                let mut continued = false;
                while i < b.len() && (b[i] != b'\n' || continued) {
                    continued =
                        b[i] == b'\\' || (continued && matches!(b[i], b' ' | b'\t' | b'\r'));
                    if b[i] != b'\n' {
                        b[i] = b' ';
                    }
                    i += 1;
                }
                continue;
            }
            q @ (b'"' | b'\'') => {
                b[i] = b' ';
                let mut j = i + 1;
                while j < b.len() && b[j] != q && b[j] != b'\n' {
                    if b[j] == b'\\' {
                        b[j] = b' ';
                        j += 1;
                    }
                    if j < b.len() && b[j] != b'\n' {
                        b[j] = b' ';
                    }
                    j += 1;
                }
                if j < b.len() && b[j] == q {
                    b[j] = b' ';
                }
                i = j + 1;
            }
            c if !c.is_ascii_whitespace() => line_start = false,
            _ => {}
        }
        i += 1;
    }
    b
}

/// Words that may stand between `__global__` and a kernel's name, with their arguments.
const ATTRIBUTES: [&str; 5] = [
    "__launch_bounds__",
    "__maxnreg__",
    "__cluster_dims__",
    "__align__",
    "alignas",
];

/// Every `__global__` function of `code` (shown as `file`) at namespace scope.
pub fn kernels(code: &str, file: &str) -> Vec<KernelDecl> {
    // Brackets counted as in one preprocessed text ([`super::source::one_branch_view`]).
    let view = super::source::one_branch_view(&strip_comments(code));
    let b = bare(&view);
    let text = String::from_utf8_lossy(&b).into_owned();
    let mut out: Vec<KernelDecl> = Vec::new();
    // One entry per open brace: a namespace (or `extern "C"` block) name, `Some("")` for the
    // transparent ones, `None` for a function or class body.
    let mut scopes: Vec<Option<String>> = Vec::new();
    let mut boundary = 0; // start of the current declaration
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b';' => boundary = i + 1,
            b'{' => {
                let head = collapse(&text[boundary..i]);
                let scope = if let Some(rest) = head
                    .strip_prefix("inline namespace")
                    .or_else(|| head.strip_prefix("namespace"))
                {
                    Some(rest.trim().to_string())
                } else if head.ends_with("extern") || head == "extern" {
                    // `extern "C" {` with its string blanked.
                    Some(String::new())
                } else {
                    None
                };
                scopes.push(scope);
                boundary = i + 1;
            }
            b'}' => {
                scopes.pop();
                boundary = i + 1;
            }
            b'_' if text[i..].starts_with("__global__")
                && (i == 0 || !is_ident(b[i - 1]))
                && b.get(i + 10).is_none_or(|&c| !is_ident(c))
                && scopes.iter().all(Option::is_some) =>
            {
                if let Some((decl, end)) = declaration(&text, &b, boundary, i, &scopes, file) {
                    add(&mut out, decl);
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Adds `decl` to the kernels found: a declaration and its definition, in either order and
/// in one file or a header and a file, are one kernel, the definition kept. Overloads are kept
/// each.
pub fn add(out: &mut Vec<KernelDecl>, decl: KernelDecl) {
    let same = |k: &KernelDecl| {
        k.name == decl.name
            && (k.template.is_some()
                || decl.template.is_some()
                || super::overload::same_parameters(k, &decl))
    };
    if decl.defined || !out.iter().any(|k| same(k) && k.defined) {
        out.retain(|k| !same(k));
        out.push(decl);
    }
}

/// The type names of the fields a struct's body declares (`{ Problem p; const float *A; }`:
/// `Problem`, `float`), without qualifiers or template arguments, in order.
pub fn field_types(body: &str) -> Vec<String> {
    let after = body.split_once('{').map_or(body, |(_, r)| r);
    let inner = after.rsplit_once('}').map_or(after, |(b, _)| b);
    let qualifiers = [
        "const", "volatile", "struct", "class", "typename", "mutable", "static",
    ];
    inner
        .split(';')
        .filter_map(|decl| {
            decl.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .filter(|w| !w.is_empty() && !qualifiers.contains(w))
                .map(|w| w.rsplit("::").next().unwrap_or(w).to_string())
                .next()
        })
        .collect()
}

/// The line and body of the definition of struct (or class) `name` in `code`, whitespace
/// collapsed: `{ const float *A, *B; float *C; int M, N, K; }`, cut after 200 characters.
pub fn struct_body(code: &str, name: &str) -> Option<(usize, String)> {
    let b = bare(code);
    let text = String::from_utf8_lossy(&b).into_owned();
    let word_at = |at: usize, w: &str| {
        text[at..].starts_with(w)
            && (at == 0 || !is_ident(b[at - 1]))
            && b.get(at + w.len()).is_none_or(|&c| !is_ident(c))
    };
    for (at, _) in text.match_indices(name) {
        if !word_at(at, name) {
            continue;
        }
        // `struct` or `class`, then attributes (`alignas(16)`), before the name.
        let head = collapse(&text[..at]);
        let head = head.trim_end();
        let mut before = head;
        while let Some(open) = before.strip_suffix(')').and_then(|b| b.rfind('(')) {
            before = before[..open].trim_end();
            before = before
                .strip_suffix("alignas")
                .or_else(|| before.strip_suffix("__align__"))
                .unwrap_or(before)
                .trim_end();
        }
        let keyword = ["struct", "class"].iter().any(|k| {
            before.ends_with(k)
                && !before[..before.len() - k.len()]
                    .bytes()
                    .last()
                    .is_some_and(is_ident)
        });
        let after = text[at + name.len()..].trim_start();
        let after = after.strip_prefix("final").unwrap_or(after).trim_start();
        if !keyword || !after.starts_with('{') {
            continue;
        }
        let open = text.len() - after.len();
        let body = collapse(&text[open..matching(&b, open, (b'{', b'}'))]);
        let body = match body.char_indices().nth(200) {
            Some((cut, _)) => format!("{} ...", &body[..cut]),
            None => body,
        };
        return Some((source_line(code, at), body));
    }
    None
}

/// The line of byte `at` of `code` as messages show it: counted from the last `#line`
/// directive before it (a prepared copy starts with one).
fn source_line(code: &str, at: usize) -> usize {
    let mut line = 1;
    for l in code[..at]
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
    {
        let directive = l.trim_start().strip_prefix("#line");
        line = directive
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or(line + 1);
    }
    line
}

/// The type names of a parameter list's parameters taken by value whose type is a single
/// name (`GemmParams p`, `const __grid_constant__ Params params`): the candidates for a
/// struct. Pointers, references and templates are left out.
pub fn by_value_types(params: &str) -> Vec<(usize, String)> {
    let inner = params
        .trim()
        .strip_prefix('(')
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(params);
    const QUALIFIERS: [&str; 5] = ["const", "volatile", "__grid_constant__", "struct", "class"];
    split_top(inner)
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            if p.contains(['*', '&', '<', '[']) {
                return None;
            }
            let words: Vec<&str> = p
                .split_whitespace()
                .filter(|w| !QUALIFIERS.contains(w))
                .collect();
            match words.as_slice() {
                [ty, _name] if ty.bytes().all(|c| is_ident(c) || c == b':') => {
                    Some((i, ty.rsplit("::").next().unwrap_or(ty).to_string()))
                }
                _ => None,
            }
        })
        .collect()
}

/// The names of the `__constant__` variables `code` declares (`Mc` of
/// `__constant__ float Mc[16 * 7 * 7];`), each declarator of a list; `None` when a macro
/// declares some, whose names only the preprocessor knows.
pub fn constants(code: &str) -> Option<Vec<String>> {
    let in_macro = strip_comments(code)
        .lines()
        .any(|l| l.trim_start().starts_with('#') && l.contains("__constant__"));
    if in_macro {
        return None;
    }
    let b = bare(code);
    let text = String::from_utf8_lossy(&b).into_owned();
    let word = "__constant__";
    let mut out = Vec::new();
    for (at, _) in text.match_indices(word) {
        let end = at + word.len();
        if (at > 0 && is_ident(b[at - 1])) || b.get(end).is_some_and(|&c| is_ident(c)) {
            continue;
        }
        let rest = &text[end..];
        let decl = &rest[..rest.find(';').unwrap_or(rest.len())];
        for part in split_top(decl) {
            // The declarator's name: the last word before its extent or initializer.
            let head = &part[..part.find(['[', '=']).unwrap_or(part.len())];
            if let Some(name) = head
                .split(|c: char| !is_ident(c as u8))
                .rfind(|w| !w.is_empty())
            {
                out.push(name.to_string());
            }
        }
    }
    Some(out)
}

/// The kernel whose `__global__` is at `at`, its declaration starting at `start`; and where
/// its parameter list ends.
fn declaration(
    text: &str,
    b: &[u8],
    start: usize,
    at: usize,
    scopes: &[Option<String>],
    file: &str,
) -> Option<(KernelDecl, usize)> {
    let mut i = at + "__global__".len();
    loop {
        let open = i + text[i..].find('(')?;
        // The identifier just before this parenthesis.
        let mut end = open;
        while end > i && b[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        let mut name_start = end;
        while name_start > i && (is_ident(b[name_start - 1]) || b[name_start - 1] == b':') {
            name_start -= 1;
        }
        let word = &text[name_start..end];
        let close = matching(b, open, (b'(', b')'));
        if ATTRIBUTES.contains(&word) {
            i = close;
            continue;
        }
        if word.is_empty() {
            return None;
        }
        let head = collapse(&text[start..at]);
        let template = head.strip_prefix("template").and_then(|rest| {
            let rest = rest.trim_start();
            rest.starts_with('<')
                .then(|| collapse(&rest[..bracket_end(rest)]))
        });
        let mut path: Vec<&str> = scopes
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        path.push(word);
        let decl = KernelDecl {
            name: path.join("::"),
            template,
            params: collapse(&text[open..close]),
            file: file.to_string(),
            line: text[..name_start].matches('\n').count() + 1,
            cluster_dims: cluster_dims(&text[start..name_start]),
            defined: !text[close..].trim_start().starts_with(';'),
        };
        return Some((decl, close));
    }
}

/// The arguments of a `__cluster_dims__(...)` among a kernel's declaration words (before or
/// after `__global__`), whitespace collapsed.
fn cluster_dims(head: &str) -> Option<String> {
    let at = head.find("__cluster_dims__")?;
    let rest = &head[at + "__cluster_dims__".len()..];
    let open = rest.find('(')?;
    if !rest[..open].trim().is_empty() {
        return None;
    }
    let close = matching(rest.as_bytes(), open, (b'(', b')'));
    rest.get(open + 1..close.checked_sub(1)?).map(collapse)
}

/// Which of `kernels` the entry `entry` (`name`, `ns::name`, `name<64,64>`) calls, or a
/// message that names the kernels there are and what to write.
pub fn find<'a>(
    kernels: &'a [KernelDecl],
    entry: &str,
    file: &str,
) -> Result<&'a KernelDecl, String> {
    let base = entry.split('<').next().unwrap_or(entry).trim();
    let base = base.strip_prefix("::").unwrap_or(base);
    let instantiated = entry.contains('<');
    let list = || {
        if kernels.is_empty() {
            "it has no `__global__` function (a kernel generated by a macro is not seen: \
             expand it, or write the `__global__` line out)"
                .to_string()
        } else {
            let all: Vec<String> = kernels.iter().map(|k| k.describe(file)).collect();
            format!("its kernels: {}", all.join(", "))
        }
    };
    if let Some(k) = kernels.iter().find(|k| k.name == base) {
        if !k.defined {
            return Err(format!(
                "`{base}` is declared ({}) but not defined in the files the lab compiles, your \
                 file and the headers it includes: its body lies in another .cu file. Give that \
                 file (or one that includes both) as the kernel's file",
                k.at(file)
            ));
        }
        return match (&k.template, instantiated) {
            (Some(params), false) if argument_count(params, &format!("{base}<>")).is_none() => {
                Err(format!(
                    "`{base}` is a template ({params}): name an instantiation, `{base}<>` for \
                     its defaults or `{base}<...>` with the values your launcher uses"
                ))
            }
            (Some(params), false) => Err(format!(
                "`{base}` is a template ({params}): name an instantiation, such as `{base}<...>` \
                 with the values your launcher uses"
            )),
            (None, true) => Err(format!(
                "`{base}` is not a template, so `{entry}` names nothing: write `{base}`"
            )),
            (Some(params), true) => match argument_count(params, entry) {
                Some(why) => Err(format!("`{entry}`: {why} ({base}{params})")),
                None => Ok(k),
            },
            (None, false) => Ok(k),
        };
    }
    let unqualified = base.rsplit("::").next().unwrap_or(base);
    let last = |k: &KernelDecl| k.name.rsplit("::").next().unwrap_or("").to_string();
    if let Some(k) = kernels
        .iter()
        .find(|k| last(k) == unqualified)
        .or_else(|| kernels.iter().find(|k| edits(&last(k), unqualified) <= 2))
    {
        return Err(format!(
            "{file} has no kernel `{base}`; did you mean `{}`? ({})",
            k.name,
            list()
        ));
    }
    Err(format!("{file} has no kernel `{base}`; {}", list()))
}

/// Why the template arguments of `entry` (`k<16>`) cannot instantiate a template with
/// `params` (`<int BM, int BN>`): too few for the parameters without a default, or too many;
/// `None` when their count fits (a parameter pack takes any number).
fn argument_count(params: &str, entry: &str) -> Option<String> {
    let inner = |t: &str| {
        let end = bracket_end(t);
        t.get(1..end.saturating_sub(1))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let params = inner(params.trim());
    let given = inner(&entry[entry.find('<')?..]);
    let list = |t: &str| -> Vec<String> {
        match t.is_empty() {
            true => Vec::new(),
            false => split_top(t)
                .into_iter()
                .map(|p| p.trim().to_string())
                .collect(),
        }
    };
    let (params, given) = (list(&params), list(&given).len());
    if params.iter().any(|p| p.contains("...")) {
        return None;
    }
    let required = params.iter().filter(|p| !p.contains('=')).count();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if given < required {
        return Some(format!(
            "{given} template argument{} given, and the template needs {required}",
            plural(given)
        ));
    }
    (given > params.len()).then(|| {
        format!(
            "{given} template argument{} given, and the template takes {}",
            plural(given),
            params.len()
        )
    })
}

/// The edit distance of two names (insertions, deletions, substitutions): a typo is 1 or 2.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            row.push(sub.min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structs_field_types_are_read_from_its_body() {
        assert_eq!(
            field_types(
                "Params (k.cu:9): { const ns::Problem<float> p; Identity e; volatile int *f; }"
            ),
            ["Problem", "Identity", "int"]
        );
        assert_eq!(
            field_types("L (k.cu:1): { Tile t; int a; ..."),
            ["Tile", "int"]
        );
    }

    #[test]
    fn a_struct_is_found_by_name_with_its_line_and_body() {
        let code = "#line 1 \"params.cu\"\n// struct Params { int unused; }\n\
                    struct Paramsx { int no; };\n\
                    typedef struct Params P;\n\
                    struct alignas(16) Params final {\n  const float *A; // A\n  size_t M, N;\n\
                    \x20 float f(int) { return 0; }\n};\n\
                    #line 40 \"other.cuh\"\n\nclass Shape {\n int d[3];\n};\n";
        assert_eq!(
            struct_body(code, "Params"),
            Some((
                4,
                "{ const float *A; size_t M, N; float f(int) { return 0; } }".into()
            ))
        );
        assert_eq!(
            struct_body(code, "Shape"),
            Some((41, "{ int d[3]; }".into()))
        );
        assert_eq!(struct_body(code, "P"), None);
        let long = format!("struct L {{ {} }};", "int a; ".repeat(60));
        assert!(struct_body(&long, "L").unwrap().1.ends_with(" ..."));
        assert_eq!(
            by_value_types(
                "(const __grid_constant__ ns::Params p, const float *A, int M, Tile<2> t, \
                 Shape s, const Shape &r)"
            ),
            vec![
                (0, "Params".to_string()),
                (2, "int".to_string()),
                (4, "Shape".to_string())
            ]
        );
    }

    const FILE: &str = "#include <cstdio>\n\
        #define K(n) __global__ void n(float *x) {}\n\
        namespace lab {\n\
        template <int BM,\n          int BN>\n\
        __global__ void __launch_bounds__(BM * BN, 1)\n    tiled(int M, const float *A) { if (M) {} }\n\
        namespace inner { __global__ void deep(int); }\n\
        }\n\
        extern \"C\" {\n__global__ void c_kernel(float *out) { const char *s = \"__global__ void fake(\"; }\n}\n\
        __device__ float helper(float a) { return a; }\n\
        void host() { auto f = [] __device__ () {}; }\n";

    #[test]
    fn finds_kernels_with_their_namespaces_templates_and_lines() {
        let ks = kernels(FILE, "f.cu");
        let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, vec!["lab::tiled", "lab::inner::deep", "c_kernel"]);
        assert_eq!(ks[0].template.as_deref(), Some("<int BM, int BN>"));
        assert_eq!(ks[0].params, "(int M, const float *A)");
        assert_eq!(ks[0].line, 7);
        assert_eq!(ks[2].template, None);
        assert_eq!(ks[2].line, 11);
    }

    /// A host function whose conditional's branches each open a brace (FasterTransformer's)
    /// hides no kernel after it, at its own line.
    #[test]
    fn a_kernel_after_branches_that_balance_only_together_is_found() {
        let code = "void launch(int t) {\n  if (t == 0) {\n  }\n#ifdef BF16\n  else if (t < 3) {\n\
            #else\n  else if (t == 1) {\n#endif\n  }\n}\n__global__ void k(float *y) {}\n";
        let ks = kernels(code, "b.cu");
        assert_eq!(ks.len(), 1, "{ks:?}");
        assert_eq!((ks[0].name.as_str(), ks[0].line), ("k", 11));
    }

    #[test]
    fn a_macro_continued_over_lines_declares_no_kernel_of_its_own() {
        let code = "#define ACT(NAME, EXPR) \\\n  __global__ void NAME(float *y) { \\\r\n  \
            y[0] = EXPR; }\nACT(relu, 0.f)\n__global__ void gelu(float *y) {}\n";
        let names: Vec<String> = kernels(code, "m.cu").into_iter().map(|k| k.name).collect();
        assert_eq!(names, ["gelu"]);
    }

    #[test]
    fn template_arguments_are_counted_against_the_parameters() {
        let code = "template <int BM, int BN, bool W = (BM > 64)> __global__ void t(int M) {}\n\
            template <class... Ts> __global__ void pack(int M) {}\n";
        let ks = kernels(code, "t.cu");
        assert!(find(&ks, "t<64, 64>", "t.cu").is_ok());
        assert!(find(&ks, "t<64, 64, true>", "t.cu").is_ok());
        assert!(find(&ks, "pack<int, float>", "t.cu").is_ok());
        let e = find(&ks, "t<16>", "t.cu").unwrap_err();
        assert_eq!(
            e,
            "`t<16>`: 1 template argument given, and the template needs 2 \
             (t<int BM, int BN, bool W = (BM > 64)>)"
        );
        let e = find(&ks, "t<1, 2, true, 4>", "t.cu").unwrap_err();
        assert!(
            e.contains("4 template arguments given, and the template takes 3"),
            "{e}"
        );
        // Named without arguments: `<>` is offered where every parameter has a default.
        let e = find(&ks, "t", "t.cu").unwrap_err();
        assert!(
            e.contains("such as `t<...>`") && !e.contains("`t<>`"),
            "{e}"
        );
        let d = kernels(
            "template <int BM = 64, int BN = 64> __global__ void d(int M) {}
",
            "d.cu",
        );
        let e = find(&d, "d", "d.cu").unwrap_err();
        assert!(e.contains("`d<>` for its defaults"), "{e}");
        assert!(find(&d, "d<>", "d.cu").is_ok());
    }

    #[test]
    fn constants_are_found_by_name() {
        let code = "#define N 4\n__constant__ float Mc[16 * 7 * 7];\n\
            static __constant__ __align__(16) int a[N] = {1, 2}, b[2], c = 3;\n\
            // __constant__ float commented[4];\n\
            __device__ float f() { return Mc[0]; }\n";
        assert_eq!(constants(code).unwrap(), ["Mc", "a", "b", "c"]);
        let code = "#define DECLARE(n) __constant__ float n[4]\nDECLARE(Mc);\n";
        assert_eq!(constants(code), None);
    }

    #[test]
    fn cluster_dims_of_a_template_take_the_instantiations_arguments() {
        let code = "template <int BM, int NUM_THREADS, int CLUSTER_M = 2, bool Swz = true>\n\
            __global__ void __cluster_dims__(CLUSTER_M * 1, NUM_THREADS / 384, 1) k(int M) {}\n\
            __global__ void __cluster_dims__(2, 1, 1) plain(int M) {}\n";
        let ks = kernels(code, "k.cu");
        assert_eq!(
            ks[0].cluster_dims_for("k<128, 384, 2, false>").as_deref(),
            Some("(2) * 1, (384) / 384, 1")
        );
        assert_eq!(ks[1].cluster_dims_for("plain").as_deref(), Some("2, 1, 1"));
        // Left-out arguments take their defaults, and a default may name an earlier one.
        assert_eq!(
            ks[0].cluster_dims_for("k<128, 768>").as_deref(),
            Some("(2) * 1, (768) / 384, 1")
        );
        // A comparison in a default is no end of the parameters.
        let code = "template <int BM, bool W = (BM > 64), int C = W ? 2 : 1>\n\
            __global__ void __cluster_dims__(C, 1, 1) w(int M) {}\n";
        let ks = kernels(code, "w.cu");
        assert_eq!(
            ks[0].template.as_deref(),
            Some("<int BM, bool W = (BM > 64), int C = W ? 2 : 1>")
        );
        assert_eq!(
            ks[0].cluster_dims_for("w<128, (128 > 64)>").as_deref(),
            Some("(((128 > 64)) ? 2 : 1), 1, 1")
        );
        let code =
            "template <int N = 1, int C = N * 2> __global__ void __cluster_dims__(C, 1, 1) d() {}";
        let ks = kernels(code, "d.cu");
        assert_eq!(
            ks[0].cluster_dims_for("d<3>").as_deref(),
            Some("((3) * 2), 1, 1")
        );
        assert_eq!(
            ks[0].cluster_dims_for("d<>").as_deref(),
            Some("((1) * 2), 1, 1")
        );
    }

    #[test]
    fn reads_cluster_dims_before_or_after_global() {
        let code = "__global__ void __cluster_dims__(2, 1,\n 1) a(float *x) {}\n\
            __cluster_dims__(CX, 1, 1) __global__ void b(float *x) {}\n\
            __global__ void __launch_bounds__(128) c(float *x) {}\n";
        let ks = kernels(code, "f.cu");
        let dims: Vec<Option<&str>> = ks.iter().map(|k| k.cluster_dims.as_deref()).collect();
        assert_eq!(dims, vec![Some("2, 1, 1"), Some("CX, 1, 1"), None]);
    }

    #[test]
    fn a_missing_or_half_named_entry_lists_the_kernels() {
        let ks = kernels(FILE, "f.cu");
        assert_eq!(find(&ks, "lab::tiled<64, 2>", "f.cu").unwrap().line, 7);
        assert_eq!(find(&ks, "c_kernel", "f.cu").unwrap().name, "c_kernel");
        let e = find(&ks, "tiled<64,2>", "f.cu").unwrap_err();
        assert!(e.contains("did you mean `lab::tiled`"), "{e}");
        let e = find(&ks, "lab::tiled", "f.cu").unwrap_err();
        assert!(e.contains("is a template (<int BM, int BN>)"), "{e}");
        let e = find(&ks, "lab::tiledd<64, 2>", "f.cu").unwrap_err();
        assert!(e.contains("did you mean `lab::tiled`"), "{e}");
        assert_eq!(edits("kernel", "kernle"), 2);
        let e = find(&ks, "sgemm", "f.cu").unwrap_err();
        assert!(
            e.starts_with("f.cu has no kernel `sgemm`; its kernels: lab::tiled<int BM, int BN> (line 7), lab::inner::deep (line 8), c_kernel (line 11)"),
            "{e}"
        );
        let e = find(&ks, "c_kernel<3>", "f.cu").unwrap_err();
        assert!(e.contains("not a template"), "{e}");
    }

    #[test]
    fn a_kernel_declared_here_and_defined_elsewhere_is_named_so() {
        // Declared before and after its definition: the definition is the kernel.
        let code = "__global__ void k(float *x);\n__global__ void k(float *x) { x[0] = 1; }\n\
                    __global__ void k(float *x);\n__global__ void other(const float *x, float *y, int n);\n";
        let ks = kernels(code, "f.cu");
        assert_eq!(find(&ks, "k", "f.cu").unwrap().line, 2);
        let e = find(&ks, "other", "f.cu").unwrap_err();
        assert!(
            e.starts_with(
                "`other` is declared (line 4) but not defined in the files the lab compiles, your \
                 file and the headers it includes: its body lies in another .cu file"
            ),
            "{e}"
        );
    }
}
