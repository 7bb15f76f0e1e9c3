//! Overloaded kernels: a file may declare `__global__ void gemm(const float *, ...)` and
//! `__global__ void gemm(const half *, ...)`. The name alone denotes neither, so the one whose
//! parameters take the lab's arguments is chosen by reading the parameter lists, and named to
//! the compiler with a cast to its function type (`static_cast<void (*)(const half *A, ...)>
//! (gemm)`), which NVRTC's name lookup and the calls of the lab's units accept.

use super::scan::KernelDecl;
use super::spec::split_top;

/// What an argument of the lab is, or what a parameter of the kernel takes, as far as choosing
/// between overloads goes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// A pointer to elements of this type (`float`, `__half`); `None`: to anything (a
    /// workspace the lab passes, a `void *` a kernel takes).
    Pointer(Option<String>),
    Integer,
    Real,
    /// Any other type, by name (`CUtensorMap`).
    Other(String),
}

/// One spelling per type: `half` is `__half`, `uint` is `unsigned int`.
fn canonical(t: &str) -> String {
    match t {
        "half" => "__half".into(),
        "nv_bfloat16" => "__nv_bfloat16".into(),
        "uint" | "unsigned" => "unsigned int".into(),
        "CUtensorMap_st" => "CUtensorMap".into(),
        _ => t.to_string(),
    }
}

/// The types an integer argument converts to (`bool` among them, as C++ converts an `int`).
const INTEGERS: [&str; 22] = [
    "bool",
    "char",
    "signed char",
    "unsigned char",
    "int8_t",
    "int",
    "unsigned int",
    "signed",
    "signed int",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
    "long int",
    "size_t",
    "int32_t",
    "uint32_t",
    "int64_t",
    "uint64_t",
    "short",
    "unsigned short",
    "ptrdiff_t",
];

/// The words a type is spelled with, of which a parameter's last word is not a name.
const TYPE_WORDS: [&str; 12] = [
    "int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "void",
    "half", "size_t",
];

/// A parameter's declaration without its default and the qualifiers that do not change what
/// it takes: the words, `*` apart.
fn words(param: &str) -> Vec<String> {
    let decl = param.split('=').next().unwrap_or("");
    decl.replace('*', " * ")
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "const"
                    | "volatile"
                    | "__restrict__"
                    | "__restrict"
                    | "restrict"
                    | "__grid_constant__"
                    | "struct"
                    | "class"
            )
        })
        .map(str::to_string)
        .collect()
}

fn kind_of(words: &[String]) -> Kind {
    if let Some(star) = words.iter().position(|w| w == "*") {
        let element = canonical(&words[..star].join(" "));
        return Kind::Pointer((element != "void").then_some(element));
    }
    // `int M` names its parameter; `unsigned int` does not.
    let named = words.len() > 1 && !TYPE_WORDS.contains(&words[words.len() - 1].as_str());
    let t = canonical(&words[..words.len() - usize::from(named)].join(" "));
    if INTEGERS.contains(&t.as_str()) {
        Kind::Integer
    } else if t == "float" || t == "double" {
        Kind::Real
    } else {
        Kind::Other(t)
    }
}

/// What the lab passes, from the types its wrapper declares (`float *`, `int`, `void *` for a
/// workspace, `CUtensorMap`).
fn lab_kind(c_type: &str) -> Kind {
    kind_of(&words(c_type))
}

/// Whether a kernel's parameter of kind `takes` accepts the lab's argument of kind `given`.
fn accepts(takes: &Kind, given: &Kind) -> bool {
    match (takes, given) {
        (Kind::Pointer(t), Kind::Pointer(g)) => t.is_none() || g.is_none() || t == g,
        (t, g) => t == g,
    }
}

/// The parameters of `decl`, one string each.
fn params(decl: &KernelDecl) -> Vec<String> {
    let inner = decl
        .params
        .trim()
        .strip_prefix('(')
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(&decl.params);
    split_top(inner)
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty() && p != "void")
        .collect()
}

/// Whether a pointer parameter points to `const` (or `volatile`) elements: `const float *A`
/// and `float *A` are two overloads, where `float *const A` and `float *A` are one function.
fn pointee_qualified(param: &str) -> bool {
    let decl = param.split('=').next().unwrap_or("");
    decl.split_once('*').is_some_and(|(pointee, _)| {
        pointee
            .split_whitespace()
            .any(|w| w == "const" || w == "volatile")
    })
}

/// Whether two declarations of one name take the same parameters: a declaration and the
/// definition after it, not two overloads.
pub fn same_parameters(a: &KernelDecl, b: &KernelDecl) -> bool {
    let kinds = |d: &KernelDecl| -> Vec<(Kind, bool)> {
        params(d)
            .iter()
            .map(|p| (kind_of(&words(p)), pointee_qualified(p)))
            .collect()
    };
    kinds(a) == kinds(b)
}

/// The kernels of `all` named as `decl` is: its overloads, itself included.
pub fn overloads<'a>(all: &'a [KernelDecl], decl: &KernelDecl) -> Vec<&'a KernelDecl> {
    all.iter()
        .filter(|k| k.name == decl.name && k.template.is_none())
        .collect()
}

/// Of overloads `candidates`, the one that takes arguments of the types `lab` (as the lab's
/// wrapper declares them), with the expression that names it; a message naming them all when
/// none or several do.
pub fn choose<'a>(
    candidates: &[&'a KernelDecl],
    entry: &str,
    lab: &[String],
    main_file: &str,
) -> Result<(&'a KernelDecl, String), String> {
    let given: Vec<Kind> = lab.iter().map(|t| lab_kind(t)).collect();
    let fits: Vec<&&KernelDecl> = candidates
        .iter()
        .filter(|k| {
            let p = params(k);
            p.len() == given.len()
                && p.iter()
                    .zip(&given)
                    .all(|(p, g)| accepts(&kind_of(&words(p)), g))
        })
        .collect();
    // Of overloads that differ in `const` elements alone, C++ calls the one that adds the
    // fewest qualifiers to the lab's (unqualified) pointers.
    let added = |k: &KernelDecl| params(k).iter().filter(|p| pointee_qualified(p)).count();
    let fewest = fits.iter().map(|k| added(k)).min().unwrap_or(0);
    let fits: Vec<&&KernelDecl> = match fits.iter().filter(|k| added(k) == fewest).count() {
        1 => fits.into_iter().filter(|k| added(k) == fewest).collect(),
        _ => fits,
    };
    let all = || {
        candidates
            .iter()
            .map(|k| format!("{}{} ({})", k.name, k.params, k.at(main_file)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match fits.as_slice() {
        [one] => Ok((one, cast(one, entry))),
        [] => Err(format!(
            "`{entry}` is overloaded, and none of its overloads takes the lab's arguments \
             ({}): {}",
            lab.join(", "),
            all()
        )),
        _ => Err(format!(
            "`{entry}` is overloaded, and more than one of its overloads takes the lab's \
             arguments ({}): {}; give the buffers' types (dtype=) that tell them apart",
            lab.join(", "),
            all()
        )),
    }
}

/// `static_cast<void (*)(PARAMS)>(entry)`: the overload of `decl`'s parameters, which are
/// written as declared but for defaults and `__grid_constant__` (a function type has neither).
pub fn cast(decl: &KernelDecl, entry: &str) -> String {
    let list: Vec<String> = params(decl)
        .iter()
        .map(|p| {
            let p = p
                .split('=')
                .next()
                .unwrap_or(p)
                .replace("__grid_constant__", "");
            p.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect();
    format!("static_cast<void (*)({})>({entry})", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(params: &str, line: usize) -> KernelDecl {
        KernelDecl {
            name: "gemm".into(),
            template: None,
            params: params.into(),
            file: "k.cu".into(),
            line,
            cluster_dims: None,
            defined: true,
        }
    }

    #[test]
    fn the_overload_taking_the_labs_types_is_named_by_a_cast() {
        let f32 = decl(
            "(const float *__restrict__ A, const float *B, float *C, int M, int N, int K)",
            2,
        );
        let f16 = decl(
            "(const half *A, const __half *B, float *C, unsigned M, size_t N, int K = 0)",
            9,
        );
        let both = [&f32, &f16];
        let lab = |t: &str| {
            [t, t, "float *", "int", "int", "int"]
                .map(str::to_string)
                .to_vec()
        };
        let (k, e) = choose(&both, "gemm", &lab("float *"), "k.cu").unwrap();
        assert_eq!(k.line, 2);
        assert_eq!(
            e,
            "static_cast<void (*)(const float *__restrict__ A, const float *B, float *C, \
             int M, int N, int K)>(gemm)"
        );
        let (k, e) = choose(&both, "gemm", &lab("half *"), "k.cu").unwrap();
        assert_eq!(k.line, 9);
        assert!(e.ends_with("unsigned M, size_t N, int K)>(gemm)"), "{e}");
        let none = choose(&both, "gemm", &lab("__nv_bfloat16 *"), "k.cu").unwrap_err();
        assert!(
            none.contains("none of its overloads takes the lab's arguments (__nv_bfloat16 *, ")
                && none.contains("gemm(const float *__restrict__ A, ")
                && none.contains("int K) (line 2); gemm(const half *A, "),
            "{none}"
        );
        // A workspace (void *) fits any pointer: two overloads differing only there tie.
        let w1 = decl("(float *A, float *W)", 3);
        let w2 = decl("(float *A, int *W)", 4);
        let lab = ["float *", "void *"].map(str::to_string).to_vec();
        let tie = choose(&[&w1, &w2], "gemm", &lab, "k.cu").unwrap_err();
        assert!(tie.contains("more than one"), "{tie}");
        // Overloads apart in `const` elements alone are two, and the lab's float * calls the
        // unqualified one, as C++ would; a top-level const is the same function.
        let c = decl("(const float *A, float *C, int N)", 5);
        let m = decl("(float *A, float *C, int N)", 6);
        assert!(!same_parameters(&c, &m));
        assert!(same_parameters(
            &m,
            &decl("(float *const A, float *C, int N)", 7)
        ));
        let lab = ["float *", "float *", "int"].map(str::to_string).to_vec();
        let (k, _) = choose(&[&c, &m], "gemm", &lab, "k.cu").unwrap();
        assert_eq!(k.line, 6);
    }

    #[test]
    fn parameters_read_as_the_kinds_they_take() {
        let k = |p: &str| kind_of(&words(p));
        assert_eq!(
            k("const float *__restrict__ A"),
            Kind::Pointer(Some("float".into()))
        );
        assert_eq!(k("half* x"), Kind::Pointer(Some("__half".into())));
        assert_eq!(k("void *ws"), Kind::Pointer(None));
        assert_eq!(k("unsigned int"), Kind::Integer);
        assert_eq!(k("unsigned n"), Kind::Integer);
        assert_eq!(k("const int M"), Kind::Integer);
        // An int converts to a flag (DeepSpeed's `bool` parameters beside a `__half` overload).
        assert_eq!(k("bool neg"), Kind::Integer);
        assert_eq!(k("float alpha = 1.0f"), Kind::Real);
        assert_eq!(
            k("const __grid_constant__ CUtensorMap tmap"),
            Kind::Other("CUtensorMap".into())
        );
    }
}
