//! Static `__shared__` variables in a module whose kernels run in thread block clusters.
//!
//! The simulator's `__shared__` is a thread-local: a copy per OS thread, which is a copy per
//! block while an OS thread runs one block at a time. The blocks of a cluster run together on
//! one OS thread, since they wait on each other, so in a module with a `__cluster_dims__`
//! kernel each declaration is rewritten to name the running block's copy: the thread-local
//! keeps its layout, its name in messages and the redzone after it, and the runtime gives each
//! block of a cluster a buffer laid out like the module's TLS block (`sim::block_shared`,
//! `sim_runtime.h`), which `mapa` and the TMA's multicast reach as a GPU's would.

use super::compile::{find_word, is_ident, presumed_line};

/// What the thread-local of a declaration is renamed to begin with; the runtime drops it when
/// it names a variable.
pub const RENAMED: &str = "__sim_shared_";

/// Rewrites each static `__shared__` declaration of a comment-free source (after
/// [`super::compile::add_shared_redzones`]) so that its name is the running block's copy:
/// `__shared__ float t[64];` becomes `__shared__ float __sim_shared_t[64]; auto &t =
/// ::sim::block_shared(__sim_shared_t);` in a function, and a macro at file scope. A
/// declaration this cannot read is refused with its file and line.
pub fn shared_per_block(code: &str, file: &str) -> Result<String, String> {
    let mut out = String::with_capacity(code.len() + 256);
    let mut rest = 0;
    for at in find_word(code, "__shared__") {
        if at < rest || code[..at].trim_end().ends_with("extern") {
            continue;
        }
        let (line, shown) = presumed_line(code, at, file);
        let refuse = |why: &str| {
            format!(
                "{shown}:{line}: {why}; in a file with kernels launched in clusters the \
                 simulator gives each block its own copy of the static __shared__ variables it \
                 can read (`__shared__ T name[N]...;`), so declare it that way or in \
                 extern __shared__ memory"
            )
        };
        if in_directive(code, at) {
            return Err(refuse(
                "a __shared__ variable declared in a preprocessor directive",
            ));
        }
        let decl_start = at + "__shared__".len();
        let semi = code[decl_start..]
            .find(';')
            .map(|j| decl_start + j)
            .ok_or_else(|| refuse("an unterminated __shared__ declaration"))?;
        let decl = &code[decl_start..semi];
        if decl.contains("__sim_redzone_") {
            continue;
        }
        let names = declarator_names(decl).map_err(|why| refuse(&why))?;
        out.push_str(&code[rest..decl_start]);
        let mut from = 0;
        for &(lo, hi) in &names {
            out.push_str(&decl[from..lo]);
            out.push_str(RENAMED);
            out.push_str(&decl[lo..hi]);
            from = hi;
        }
        out.push_str(&decl[from..]);
        out.push(';');
        let names: Vec<&str> = names.iter().map(|&(lo, hi)| &decl[lo..hi]).collect();
        if in_function(code, at) {
            for name in names {
                out.push_str(&format!(
                    " auto &{name} = ::sim::block_shared({RENAMED}{name});"
                ));
            }
        } else {
            // At file scope a macro reads the copy of whichever block is running.
            for name in names {
                out.push_str(&format!(
                    "\n#define {name} (::sim::block_shared({RENAMED}{name}))"
                ));
            }
            let (line, shown) = presumed_line(code, semi, file);
            out.push_str(&format!("\n#line {line} \"{shown}\"\n"));
        }
        rest = semi + 1;
    }
    out.push_str(&code[rest..]);
    Ok(out)
}

/// Whether byte `at` lies in a preprocessor directive (a line starting with `#`, or one it
/// continues with a backslash).
fn in_directive(code: &str, at: usize) -> bool {
    let mut start = code[..at].rfind('\n').map_or(0, |i| i + 1);
    while start > 0
        && code[..start - 1]
            .trim_end_matches([' ', '\t', '\r'])
            .ends_with('\\')
    {
        start = code[..start - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    code[start..].trim_start().starts_with('#')
}

/// The byte ranges in `decl` (what follows `__shared__` up to its `;`) of the names its
/// declarators declare: `float a[4], b` gives `a` and `b`. An initializer, or a declarator
/// other than a name with array bounds (`(*p)[4]`), is refused.
fn declarator_names(decl: &str) -> Result<Vec<(usize, usize)>, String> {
    let b = decl.as_bytes();
    let mut names = Vec::new();
    // Each declarator: where it starts, and where its first array bound (or its end) is.
    let (mut start, mut bound) = (0, None);
    let mut depth = 0i32; // (), [], {}
    let mut angle = 0i32; // <> at depth 0: template arguments
    for i in 0..=b.len() {
        let c = b.get(i).copied().unwrap_or(b',');
        match c {
            b'(' | b'[' | b'{' => {
                if c == b'[' && depth == 0 && angle == 0 && bound.is_none() {
                    bound = Some(i);
                }
                depth += 1;
            }
            b')' | b']' | b'}' => depth -= 1,
            b'<' if depth == 0 => angle += 1,
            b'>' if depth == 0 && angle > 0 => angle -= 1,
            b'=' if depth == 0 && angle == 0 => {
                return Err("a __shared__ variable with an initializer".into());
            }
            b',' if depth == 0 && angle == 0 => {
                let head = decl[start..bound.unwrap_or(i)].trim_end();
                let end = start + head.len();
                let lo = head
                    .bytes()
                    .rposition(|c| !is_ident(c))
                    .map_or(start, |p| start + p + 1);
                let first = names.is_empty();
                let typed = decl[start..lo].trim();
                if lo == end
                    || b[lo].is_ascii_digit()
                    || (first && typed.is_empty())
                    || typed.ends_with(')')
                {
                    return Err(format!(
                        "`__shared__{}` has a declarator the simulator does not read",
                        decl.trim_end()
                    ));
                }
                names.push((lo, end));
                (start, bound) = (i + 1, None);
            }
            _ => {}
        }
    }
    Ok(names)
}

/// Whether byte `at` lies in a function's body (or a class's), rather than at file scope or
/// directly in a namespace or an `extern "C" { }` block.
pub(super) fn in_function(code: &str, at: usize) -> bool {
    let b = code.as_bytes();
    let mut scopes: Vec<bool> = Vec::new();
    let mut header = 0;
    let mut i = 0;
    let mut line_start = true;
    while i < at {
        let c = b[i];
        if line_start && c == b'#' {
            // A directive, with its continued lines.
            while i < at && !(b[i] == b'\n' && (i == 0 || b[i - 1] != b'\\')) {
                i += 1;
            }
            header = i;
            continue;
        }
        if !c.is_ascii_whitespace() {
            line_start = false;
        }
        match c {
            b'\n' => line_start = true,
            b'"' | b'\'' => {
                i += 1;
                while i < at && b[i] != c && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' => {
                let head = code[header..i].trim();
                let head = head.strip_prefix("inline").map_or(head, str::trim_start);
                let namespace = head.starts_with("namespace")
                    && head.as_bytes().get(9).is_none_or(|&c| !is_ident(c));
                scopes.push(!(namespace || head == "extern \"C\"" || head == "extern \"C++\""));
                header = i + 1;
            }
            b'}' => {
                scopes.pop();
                header = i + 1;
            }
            b';' => header = i + 1,
            _ => {}
        }
        i += 1;
    }
    scopes.iter().any(|&f| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(code: &str) -> String {
        shared_per_block(code, "k.cu").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_declaration_in_a_kernel_names_the_running_blocks_copy() {
        let out = rewritten("__global__ void k() {\n  __shared__ float a[4][5], b;\n}\n");
        assert!(
            out.contains(
                "__shared__ float __sim_shared_a[4][5], __sim_shared_b; \
                 auto &a = ::sim::block_shared(__sim_shared_a); \
                 auto &b = ::sim::block_shared(__sim_shared_b);\n}"
            ),
            "{out}"
        );
    }

    #[test]
    fn template_arguments_and_qualifiers_stay_with_the_type() {
        let out = rewritten(
            "namespace n { template <class T> __device__ void f() {\n\
             volatile __shared__ Pair<T, 2> p[T::n]; } }\n",
        );
        assert!(
            out.contains("volatile __shared__ Pair<T, 2> __sim_shared_p[T::n]; auto &p ="),
            "{out}"
        );
    }

    #[test]
    fn a_declaration_at_file_scope_or_in_a_namespace_is_a_macro() {
        for code in [
            "__shared__ int s[8];\n__global__ void k() { s[0] = 1; }\n",
            "namespace a { extern \"C\" {\n__shared__ int s[8];\n} }\n",
        ] {
            let out = rewritten(code);
            assert!(
                out.contains("#define s (::sim::block_shared(__sim_shared_s))\n#line "),
                "{out}"
            );
        }
        let out = rewritten("__shared__ int s[8];\n");
        assert!(out.ends_with("#line 1 \"k.cu\"\n\n"), "{out:?}");
    }

    #[test]
    fn extern_declarations_and_redzones_are_left_as_they_are() {
        let code = "__global__ void k() { extern __shared__ float d[]; __shared__ int t; \
                    __shared__ unsigned char __sim_redzone_0[256] __attribute__((used)); }";
        let out = rewritten(code);
        assert!(out.contains("extern __shared__ float d[];"), "{out}");
        assert!(
            out.contains("__shared__ unsigned char __sim_redzone_0[256]"),
            "{out}"
        );
        assert_eq!(out.matches("block_shared").count(), 1, "{out}");
    }

    #[test]
    fn what_it_cannot_read_is_refused_with_the_line() {
        for (code, why) in [
            (
                "#define SMEM __shared__ float s[4];\n",
                "k.cu:1: a __shared__ variable declared in a preprocessor directive",
            ),
            (
                "__global__ void k() {\n__shared__ float (*p)[4];\n}",
                "k.cu:2: `__shared__ float (*p)[4]` has a declarator",
            ),
            (
                "__global__ void k() {\n\n__shared__ int x = 0;\n}",
                "k.cu:3: a __shared__ variable with an initializer",
            ),
        ] {
            let err = shared_per_block(code, "k.cu").unwrap_err();
            assert!(err.starts_with(why), "{err}");
            assert!(err.contains("its own copy"), "{err}");
        }
    }

    #[test]
    fn scopes_are_told_apart_past_strings_and_directives() {
        let code = "#define OPEN {\nnamespace x {\nconst char *s = \"{\";\n\
                    extern \"C\" __global__ void k() { int a; HERE } }";
        let at = code.find("HERE").unwrap();
        assert!(in_function(code, at));
        let at = code.find("const").unwrap();
        assert!(!in_function(code, at));
    }
}
