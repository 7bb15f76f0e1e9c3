//! What the PTX of a compiled entry says about how it must be launched: the type and size of
//! each parameter (what the launch copies in) and the launch bounds the source declared
//! (`__launch_bounds__`, `__maxnreg__`). Read from the PTX NVRTC keeps beside the CUBIN.

/// One kernel parameter as PTX declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// `.u32`, `.s32`, `.b32` (an `int`, `unsigned`) or their 8, 16 and 64-bit forms (a
    /// pointer or a `size_t` is 8 bytes: PTX does not tell them apart).
    Int(u32),
    /// `.f32` or `.f64`.
    Float(u32),
    /// `.align A .b8 name[N]`: a struct or a `half` passed by value, `N` bytes.
    Bytes(u32),
}

impl Param {
    /// Bytes the launch copies for this parameter.
    pub fn bytes(self) -> u32 {
        match self {
            Self::Int(b) | Self::Float(b) | Self::Bytes(b) => b,
        }
    }
}

/// An entry's parameters and declared launch bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub params: Vec<Param>,
    /// `.maxntid x, y, z`: the most threads per block (`__launch_bounds__`'s first argument).
    pub max_threads: Option<[u32; 3]>,
    /// `.minnctapersm n`: the blocks per SM asked for (its second argument).
    pub min_blocks: Option<u32>,
    /// `.maxnreg n` (`__maxnreg__`).
    pub max_registers: Option<u32>,
}

impl Entry {
    /// The entry's bounds as `__launch_bounds__` and `__maxnreg__` attributes, to give a
    /// wrapper the bounds of the kernel it calls; empty when it declared none.
    pub fn bounds_attributes(&self) -> String {
        let mut out = Vec::new();
        if let Some(t) = self.max_threads {
            let threads: u32 = t.iter().product();
            out.push(match self.min_blocks {
                Some(b) => format!("__launch_bounds__({threads}, {b})"),
                None => format!("__launch_bounds__({threads})"),
            });
        }
        if let Some(r) = self.max_registers {
            out.push(format!("__maxnreg__({r})"));
        }
        out.join(" ")
    }
}

fn scalar(ty: &str) -> Option<Param> {
    let (kind, bits) = ty.split_at(2.min(ty.len()));
    let bytes = bits.parse::<u32>().ok()? / 8;
    match kind {
        ".u" | ".s" | ".b" => Some(Param::Int(bytes)),
        ".f" => Some(Param::Float(bytes)),
        _ => None,
    }
}

/// Reads one `.param` line: `.param .u64 k_param_0` or `.param .align 2 .b8 k_param_1[2]`.
fn param(line: &str) -> Option<Param> {
    let words: Vec<&str> = line
        .trim()
        .trim_end_matches(',')
        .split_whitespace()
        .collect();
    if words.first() != Some(&".param") {
        return None;
    }
    let rest = &words[1..];
    // `.ptr .global .align 4` qualifiers may follow a 64-bit type; skip to the type.
    let ty = rest
        .iter()
        .find(|w| scalar(w).is_some())
        .copied()
        .unwrap_or("");
    let name = rest.last().copied().unwrap_or("");
    match name.split_once('[') {
        Some((_, n)) => {
            let count: u32 = n.trim_end_matches(']').parse().ok()?;
            Some(Param::Bytes(count * scalar(ty)?.bytes()))
        }
        None => scalar(ty),
    }
}

fn numbers(text: &str) -> Vec<u32> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// The entry `symbol` of `ptx`, or `None` when it has no such entry.
pub fn entry(ptx: &str, symbol: &str) -> Option<Entry> {
    let head = format!(".entry {symbol}(");
    let at = ptx.find(&head)? + head.len();
    let close = at + ptx[at..].find(')')?;
    let params = ptx[at..close]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(param)
        .collect::<Option<Vec<_>>>()?;
    let body = close + ptx[close..].find('{').unwrap_or(ptx.len() - close);
    let mut e = Entry {
        params,
        ..Entry::default()
    };
    for line in ptx[close + 1..body].lines() {
        let line = line.trim();
        if let Some(rest) = line
            .strip_prefix(".maxntid")
            .or_else(|| line.strip_prefix(".reqntid"))
        {
            let n = numbers(rest);
            let get = |i: usize| n.get(i).copied().unwrap_or(1);
            e.max_threads = Some([get(0), get(1), get(2)]);
        } else if let Some(rest) = line.strip_prefix(".minnctapersm") {
            e.min_blocks = numbers(rest).first().copied();
        } else if let Some(rest) = line.strip_prefix(".maxnreg") {
            e.max_registers = numbers(rest).first().copied();
        }
    }
    Some(e)
}

/// The body of the entry `symbol` of `ptx`, from its opening brace to its closing one (PTX
/// closes a function with a `}` at the start of a line), or `None` when it has no such entry.
pub fn body<'a>(ptx: &'a str, symbol: &str) -> Option<&'a str> {
    let head = format!(".entry {symbol}(");
    let start = ptx.find(&head)?;
    let open = start + ptx[start..].find("\n{")? + 1;
    let close = ptx[open..]
        .find("\n}")
        .map_or(ptx.len(), |at| open + at + 2);
    Some(&ptx[open..close])
}

/// The `.func` bodies of `ptx`: functions the module calls rather than inlines.
pub fn functions(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.match_indices(".func ").filter_map(|(at, _)| {
        let open = at + ptx[at..].find("\n{")? + 1;
        let close = ptx[open..]
            .find("\n}")
            .map_or(ptx.len(), |end| open + end + 2);
        Some(&ptx[open..close])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVRTC 13.0's PTX for `template <int BM> __global__ void __launch_bounds__(BM, 2)
    /// k(int, const float *, half, size_t)` at `k<128>`, and an `extern "C"` kernel without
    /// bounds (abridged).
    const PTX: &str = ".version 9.0\n.target sm_80\n.address_size 64\n\n\
        .visible .entry plain(\n\t.param .u64 plain_param_0\n)\n{\n\tret;\n}\n\
        .weak .entry _Z1kILi128EEviPKf6__halfm(\n\
        \t.param .u32 _Z1kILi128EEviPKf6__halfm_param_0,\n\
        \t.param .u64 .ptr .global .align 4 _Z1kILi128EEviPKf6__halfm_param_1,\n\
        \t.param .align 2 .b8 _Z1kILi128EEviPKf6__halfm_param_2[2],\n\
        \t.param .f32 _Z1kILi128EEviPKf6__halfm_param_3,\n\
        \t.param .u64 _Z1kILi128EEviPKf6__halfm_param_4\n)\n\
        .maxntid 128, 1, 1\n.minnctapersm 2\n{\n\tret;\n}\n";

    #[test]
    fn reads_parameters_and_launch_bounds() {
        let k = entry(PTX, "_Z1kILi128EEviPKf6__halfm").unwrap();
        assert_eq!(
            k.params,
            vec![
                Param::Int(4),
                Param::Int(8),
                Param::Bytes(2),
                Param::Float(4),
                Param::Int(8)
            ]
        );
        assert_eq!(k.max_threads, Some([128, 1, 1]));
        assert_eq!(k.min_blocks, Some(2));
        assert_eq!(k.bounds_attributes(), "__launch_bounds__(128, 2)");
        let plain = entry(PTX, "plain").unwrap();
        assert_eq!(plain.params, vec![Param::Int(8)]);
        assert_eq!(plain.max_threads, None);
        assert_eq!(plain.bounds_attributes(), "");
        assert_eq!(entry(PTX, "missing"), None);
    }

    #[test]
    fn finds_each_functions_body() {
        assert_eq!(body(PTX, "plain"), Some("{\n\tret;\n}"));
        assert_eq!(body(PTX, "_Z1kILi128EEviPKf6__halfm"), Some("{\n\tret;\n}"));
        assert_eq!(body(PTX, "missing"), None);
        assert_eq!(functions(PTX).count(), 0);
        let called = ".func (.param .b32 r) f(\n\t.param .b32 x\n)\n{\n\tsetmaxnreg.dec.sync.aligned.u32 40;\n}\n";
        let with_func = format!("{called}{PTX}");
        assert_eq!(
            functions(&with_func).collect::<Vec<_>>(),
            ["{\n\tsetmaxnreg.dec.sync.aligned.u32 40;\n}"]
        );
    }
}
