//! The `template` keyword nvcc lets a file leave out. Inside a template, a member template of
//! a type parameter must be called `T::template f<1>(x)`: without the keyword, C++ reads
//! `T::f < 1 > (x)` as two comparisons. EDG, the front end of nvcc and NVRTC, accepts the
//! call anyway, and Hopper GEMMs written for nvcc rely on it (MatmulTutorial's ping-pong GEMM
//! calls `WGMMA::wgmma<1, 1, 0, 0, 0>(...)` on its `WGMMA` parameter); g++, which compiles the
//! simulator's copy, refuses it. That copy gets the keyword.

use super::source::matching;

/// `code` with `template ` inserted before each member template called on a type parameter
/// of an enclosing template without it (`W::g<1>(x)` in a template of `class W`). Lines are
/// kept.
pub fn insert(code: &str) -> String {
    let plain = kernel::sim::compile::strip_comments(code);
    let b = plain.as_bytes();
    let mut at: Vec<usize> = Vec::new();
    for (start, _) in plain.match_indices("template") {
        if !word_at(b, start, "template".len()) {
            continue;
        }
        let open = skip_space(b, start + "template".len());
        if b.get(open) != Some(&b'<') {
            continue;
        }
        let close = matching(b, open, b'<', b'>');
        let names = type_parameters(&plain[open + 1..close.saturating_sub(1)]);
        // The declaration the head introduces: up to its `;`, or its body's closing brace.
        let Some(end) = plain[close..].find(['{', ';']).map(|e| close + e) else {
            continue;
        };
        if names.is_empty() || b[end] == b';' {
            continue;
        }
        let scope = close..matching(b, end, b'{', b'}');
        for name in &names {
            at.extend(calls_missing_the_keyword(&plain, scope.clone(), name));
        }
    }
    at.sort_unstable();
    at.dedup();
    let mut out = code.to_string();
    for o in at.into_iter().rev() {
        out.insert_str(o, "template ");
    }
    out
}

/// The names of the type parameters (`class T`, `typename... Ts`, `typename U = int`) of a
/// template head's parameter list.
fn type_parameters(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in list.char_indices().chain([(list.len(), ',')]) {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                let param = list[from..i].split('=').next().unwrap_or("").trim();
                let rest = param
                    .strip_prefix("typename")
                    .or_else(|| param.strip_prefix("class"));
                if let Some(rest) = rest.filter(|r| r.starts_with([' ', '.'])) {
                    let name = rest.trim_start_matches([' ', '.']).trim();
                    if !name.is_empty() && name.bytes().all(is_ident) {
                        out.push(name);
                    }
                }
                from = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Offsets in `code[scope]` of each `IDENT` of `name::IDENT<...>(` that has no `template`
/// before it: a call of a member template of the type parameter `name`.
fn calls_missing_the_keyword(code: &str, scope: std::ops::Range<usize>, name: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (p, _) in code[scope.clone()].match_indices(name) {
        let p = scope.start + p;
        // `name` itself, not `x.name`, `ns::name` or part of a longer word.
        let before = code[..p].trim_end();
        if !word_at(b, p, name.len()) || [".", "->", "::"].iter().any(|s| before.ends_with(s)) {
            continue;
        }
        let colons = skip_space(b, p + name.len());
        if !code[colons..].starts_with("::") {
            continue;
        }
        let member = skip_space(b, colons + 2);
        let end = member + b[member..].iter().take_while(|&&c| is_ident(c)).count();
        // `<` right after the name, as a call of a template is written: `W::v < N` with
        // spaces is more likely a comparison, which the keyword would break.
        let open = end;
        if end == member || &code[member..end] == "template" || b.get(open) != Some(&b'<') {
            continue;
        }
        // The arguments end before any `;` or brace, or this `<` is a comparison.
        let close = matching(b, open, b'<', b'>');
        let args = &code[open..close.min(scope.end)];
        if args.contains([';', '{', '}']) || b.get(skip_space(b, close)) != Some(&b'(') {
            continue;
        }
        out.push(member);
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the `len` bytes at `at` are a whole word.
fn word_at(b: &[u8], at: usize, len: usize) -> bool {
    (at == 0 || !is_ident(b[at - 1])) && b.get(at + len).is_none_or(|&c| !is_ident(c))
}

fn skip_space(b: &[u8], at: usize) -> usize {
    at + b[at.min(b.len())..]
        .iter()
        .take_while(|c| c.is_ascii_whitespace())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_goes_before_member_templates_called_on_type_parameters() {
        let code = "template <class W, int N> __device__ void f(float *x) {\n\
                    \x20 W::g<1, N>(x); y = W::v < 2; W::template h<3>(x);\n\
                    \x20 Other::k<1>(x); W::type<int> t; z = W::n < N > (1);\n\
                    \x20 // W::c<1>(x) in a comment\n}\n\
                    template <typename... Ts, typename U = int> struct S {\n\
                    \x20 __device__ void m() { U :: run<sizeof...(Ts)> (0); }\n};\n\
                    template <> __device__ void f<Q, 1>(float *x) { Q::g<1, 1>(x); }\n";
        let out = insert(code);
        assert!(
            out.contains("  W::template g<1, N>(x); y = W::v < 2;"),
            "{out}"
        );
        assert!(out.contains("W::template h<3>(x);"), "not twice: {out}");
        assert!(out.contains("Other::k<1>(x); W::type<int> t;"), "{out}");
        assert!(
            out.contains("U :: template run<sizeof...(Ts)> (0)"),
            "{out}"
        );
        assert!(
            out.contains("{ Q::g<1, 1>(x); }"),
            "Q is no parameter: {out}"
        );
        assert!(out.contains("// W::c<1>(x) in a comment"), "{out}");
        assert!(
            out.contains("z = W::n < N > (1);"),
            "spaced, a comparison: {out}"
        );
        assert_eq!(out.lines().count(), code.lines().count());
    }

    #[test]
    fn type_parameters_are_read_from_the_head() {
        assert_eq!(
            type_parameters(
                "class A, int B, typename... Cs, typename D = Foo<int, 2>, template <class> class E"
            ),
            vec!["A", "Cs", "D"]
        );
    }
}
