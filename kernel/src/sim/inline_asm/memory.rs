//! The memory instructions of inline PTX: `ld` and `st` (vectors, state spaces, cache and
//! eviction hints, and the strong forms `.volatile`, `.relaxed`, `.acquire`, `.release`),
//! `atom` and `red`, `fence` and `membar`, and `prefetch`. Plain accesses become C++ loads and
//! stores at the statement, so the bank model and both race checkers see them as they see
//! the kernel's own; strong accesses to global memory and atomics are atomic for the race
//! checker of global memory, and the ordering of `.acquire`/`.release`/`.acq_rel` is its
//! fence before or after (`sim_asm.h`).

use super::{Gen, Kind, Opnd};

/// A memory operand's type: its size and how its bits read as a value.
#[derive(Clone, Copy)]
struct MemType {
    bytes: usize,
    /// The C++ type of the value in memory (floats as their bits, except for `atom`).
    bits: &'static str,
    /// The C++ type arithmetic sees (`atom`'s min, max and add).
    value: &'static str,
    float: bool,
}

impl MemType {
    fn of(name: &str) -> Option<Self> {
        let t = |bytes, bits, value, float| {
            Some(Self {
                bytes,
                bits,
                value,
                float,
            })
        };
        match name {
            "b8" | "u8" => t(1, "uint8_t", "uint8_t", false),
            "s8" => t(1, "int8_t", "int8_t", false),
            "b16" | "u16" => t(2, "uint16_t", "uint16_t", false),
            "s16" => t(2, "int16_t", "int16_t", false),
            "b32" | "u32" => t(4, "uint32_t", "uint32_t", false),
            "s32" => t(4, "int32_t", "int32_t", false),
            "f32" => t(4, "uint32_t", "float", true),
            "b64" | "u64" => t(8, "uint64_t", "uint64_t", false),
            "s64" => t(8, "int64_t", "int64_t", false),
            "f64" => t(8, "uint64_t", "double", true),
            _ => None,
        }
    }

    /// The register holding one element: as wide as the type, 16 bits at least.
    fn register(self) -> Kind {
        match self.bytes {
            1 | 2 => Kind::B16,
            4 => Kind::B32,
            _ => Kind::B64,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sem {
    Weak,
    /// `.relaxed` and `.volatile` (which PTX defines as `.relaxed.sys`).
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// What an instruction's qualifiers say.
struct Access {
    space: &'static str,
    sem: Sem,
    /// `.gpu` or `.sys` scope: the ordering reaches other blocks.
    gpu: bool,
    lanes: usize,
    ty: MemType,
    /// `.L2::cache_hint`: one more operand, the cache policy.
    hint: bool,
    /// The operation of `atom` and `red`.
    op: Option<&'static str>,
}

impl Access {
    /// Whether the address must be a 64-bit generic one (shared-window addresses, of this
    /// block or of the cluster's, may be 32-bit).
    fn generic_address(&self) -> bool {
        !matches!(self.space, "SPACE_SHARED" | "SPACE_CLUSTER")
    }
}

/// Reads `parts` (the opcode split at dots, without its name): state space, semantics and
/// scope, hints, vector and type; `ops` lists the operations the instruction takes.
fn access(parts: &[&str], ops: &[(&str, &'static str)]) -> Result<Access, String> {
    let (mut space, mut sem, mut scope) = ("SPACE_GENERIC", Sem::Weak, None);
    let (mut lanes, mut hint, mut op, mut ty) = (1, false, None, None);
    for (k, &p) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        match p {
            "global" => space = "SPACE_GLOBAL",
            "shared" | "shared::cta" => space = "SPACE_SHARED",
            "shared::cluster" => space = "SPACE_CLUSTER",
            "weak" => sem = Sem::Weak,
            "volatile" => {
                sem = Sem::Relaxed;
                scope = Some(true);
            }
            "relaxed" => sem = Sem::Relaxed,
            "acquire" => sem = Sem::Acquire,
            "release" => sem = Sem::Release,
            "acq_rel" => sem = Sem::AcqRel,
            "cta" | "cluster" => scope = Some(false),
            "gpu" | "sys" => scope = Some(true),
            "v2" => lanes = 2,
            "v4" => lanes = 4,
            "nc" | "ca" | "cg" | "cs" | "lu" | "cv" | "wb" | "wt" => {}
            "L2::cache_hint" => hint = true,
            h if h.starts_with("L1::") || h.starts_with("L2::") => {}
            t if last && MemType::of(t).is_some() => ty = MemType::of(t),
            o if ops.iter().any(|(name, _)| *name == o) => {
                op = ops.iter().find(|(name, _)| *name == o).map(|(_, c)| *c);
            }
            "local" | "const" | "param" => {
                return Err(format!(
                    "the .{p} state space is not emulated (generic, .global, .shared and \
                     .shared::cluster are)"
                ));
            }
            other => return Err(format!(".{other} is not emulated here")),
        }
    }
    let ty = ty.ok_or("needs a type (.b8 to .b64, .u, .s, .f32 or .f64) last")?;
    Ok(Access {
        space,
        sem,
        // Atomics default to .gpu scope; ld and st name theirs with their semantics.
        gpu: scope.unwrap_or(true),
        lanes,
        ty,
        hint,
        op,
    })
}

/// The fences around an access with semantics `sem` at the access's scope: before it for a
/// release, after it for an acquire.
fn fences(a: &Access) -> (String, String) {
    let fence = format!("::sim::inline_ptx::scoped_fence({}); ", a.gpu);
    let before = matches!(a.sem, Sem::Release | Sem::AcqRel);
    let after = matches!(a.sem, Sem::Acquire | Sem::AcqRel);
    (
        if before { fence.clone() } else { String::new() },
        if after { fence } else { String::new() },
    )
}

const ATOM_OPS: [(&str, &str); 10] = [
    ("add", "ATOM_ADD"),
    ("min", "ATOM_MIN"),
    ("max", "ATOM_MAX"),
    ("and", "ATOM_AND"),
    ("or", "ATOM_OR"),
    ("xor", "ATOM_XOR"),
    ("exch", "ATOM_EXCH"),
    ("cas", "ATOM_CAS"),
    ("inc", "ATOM_INC"),
    ("dec", "ATOM_DEC"),
];

/// The types the PTX ISA gives each atomic operation (of those emulated).
fn atom_types(op: &str) -> &'static [&'static str] {
    match op {
        "ATOM_ADD" => &["u32", "s32", "u64", "f32", "f64"],
        "ATOM_MIN" | "ATOM_MAX" => &["u32", "s32", "u64", "s64"],
        "ATOM_AND" | "ATOM_OR" | "ATOM_XOR" | "ATOM_EXCH" => &["b32", "b64"],
        "ATOM_CAS" => &["b16", "b32", "b64"],
        _ => &["u32"],
    }
}

impl Gen<'_> {
    /// `ld` and `st`: `ld{.sem.scope}{.space}{hints}{.vec}.type d, [a]{, policy}`.
    pub(super) fn ld_st(
        &mut self,
        parts: &[&str],
        ops: &[Opnd],
        opcode: &str,
    ) -> Result<(), String> {
        let load = parts[0] == "ld";
        let a = access(&parts[1..], &[])?;
        if (load && a.sem == Sem::Release)
            || (!load && a.sem == Sem::Acquire)
            || a.sem == Sem::AcqRel
        {
            let allowed = if load { ".acquire" } else { ".release" };
            return Err(format!(
                "{} is .weak, .volatile, .relaxed or {allowed}",
                parts[0]
            ));
        }
        Self::count(ops, 2 + usize::from(a.hint))?;
        let (value, mem) = if load {
            (&ops[0], &ops[1])
        } else {
            (&ops[1], &ops[0])
        };
        let addr = self.address(mem, "the address", a.generic_address())?;
        let regs: Vec<&Opnd> = match value {
            Opnd::Vector(v) if v.len() == a.lanes && a.lanes > 1 => v.iter().collect(),
            v if a.lanes == 1 && !matches!(v, Opnd::Vector(_)) => vec![v],
            _ => return Err(format!("the value must be {}", lanes_text(a.lanes))),
        };
        let (t, n) = (a.ty.bits, a.lanes);
        let mut code = format!(
            "{{ using _V = ::sim::inline_ptx::Vec<{t}, {n}>; void *_m = ::sim::inline_ptx::mem_operand(\
             ::sim::inline_ptx::{}, {addr}, sizeof(_V), \"{opcode}\"); _V _v; ",
            a.space
        );
        let strong = a.sem != Sem::Weak;
        let (before, after) = fences(&a);
        if load {
            if strong {
                code.push_str(&format!(
                    "if (::sim::inline_ptx::strong_in_global(_m, sizeof(_V))) \
                     ::sim::inline_ptx::strong_load<{t}, {n}>(_m, _v.v); else "
                ));
            }
            code.push_str(&format!("_v = *(const _V *)_m; {after}"));
            for (k, r) in regs.iter().enumerate() {
                let kind = self.register_kind(r, a.ty);
                if let Some(d) = self.write(r, kind, "a destination register")? {
                    code.push_str(&format!("{d} = ({})_v.v[{k}]; ", kind.c_type()));
                }
            }
        } else {
            for (k, r) in regs.iter().enumerate() {
                let kind = self.register_kind(r, a.ty);
                let s = self.read(r, kind, "a source register")?;
                code.push_str(&format!("_v.v[{k}] = ({t}){s}; "));
            }
            code.push_str(&before);
            if strong {
                code.push_str(&format!(
                    "if (::sim::inline_ptx::strong_in_global(_m, sizeof(_V))) \
                     ::sim::inline_ptx::strong_store<{t}, {n}>(_m, _v.v); else "
                ));
            }
            code.push_str("*(_V *)_m = _v; ");
            if a.space == "SPACE_CLUSTER" {
                code.push_str("::sim::inline_ptx::cluster_written(_m, sizeof(_V)); ");
            }
        }
        code.push_str("} ");
        self.code.push_str(&code);
        Ok(())
    }

    /// The register kind an element of `ty` takes at `r`: an integer may sit in a wider
    /// register (extended on load, truncated on store), a float's is exactly its size.
    fn register_kind(&self, r: &Opnd, ty: MemType) -> Kind {
        let (want, have) = (ty.register(), self.kind(r));
        let wider = matches!(
            (want, have),
            (Kind::B16, Kind::B32 | Kind::B64) | (Kind::B32, Kind::B64)
        );
        if wider && !ty.float { have } else { want }
    }

    /// `atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}` and `red` (no `d`).
    pub(super) fn atom(
        &mut self,
        parts: &[&str],
        ops: &[Opnd],
        opcode: &str,
    ) -> Result<(), String> {
        let red = parts[0] == "red";
        let a = access(&parts[1..], &ATOM_OPS)?;
        let op = a.op.ok_or(
            "needs an operation (.add, .min, .max, .and, .or, .xor, .exch, .cas, .inc or .dec)",
        )?;
        let type_name = parts.last().copied().unwrap_or("");
        if !atom_types(op).contains(&type_name) || a.lanes > 1 {
            return Err(format!(
                "this operation on .{type_name} is not emulated ({} with {})",
                parts[0],
                atom_types(op)
                    .iter()
                    .map(|t| format!(".{t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if red && matches!(op, "ATOM_CAS" | "ATOM_EXCH") {
            return Err("red has no .cas or .exch (atom has)".into());
        }
        let cas = op == "ATOM_CAS";
        let first = usize::from(!red);
        Self::count(ops, first + 2 + usize::from(cas) + usize::from(a.hint))?;
        let reg = a.ty.register();
        let bits = reg.c_type();
        let addr = self.address(&ops[first], "the address", a.generic_address())?;
        let b = self.read(&ops[first + 1], reg, "the operand b")?;
        let c = if cas {
            self.read(&ops[first + 2], reg, "the operand c")?
        } else {
            "0".into()
        };
        let (before, after) = fences(&a);
        let mut code = format!(
            "{{ void *_m = ::sim::inline_ptx::mem_operand(::sim::inline_ptx::{}, {addr}, {}, \"{opcode}\"); \
             {before}{bits} _o = ::sim::inline_ptx::atom<{}, {bits}>(::sim::inline_ptx::{op}, _m, \
             ({bits}){b}, ({bits}){c}); {after}",
            a.space, a.ty.bytes, a.ty.value
        );
        if !red && let Some(d) = self.write(&ops[0], reg, "the destination")? {
            code.push_str(&format!("{d} = _o; "));
        }
        if a.space == "SPACE_CLUSTER" {
            code.push_str(&format!(
                "::sim::inline_ptx::cluster_written(_m, {}); ",
                a.ty.bytes
            ));
        }
        code.push_str("(void)_o; } ");
        self.code.push_str(&code);
        Ok(())
    }

    /// `fence{.sc|.acq_rel|.acquire|.release}.scope`, `membar.{cta,gl,sys}`, and Hopper's
    /// `fence.proxy.async` (generic-proxy writes made visible to wgmma and the TMA) and
    /// `fence.mbarrier_init` (nothing to do: the simulator has one proxy).
    pub(super) fn fence(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 0)?;
        match parts {
            ["fence", "proxy", "async", space @ ..]
                if space.len() <= 1
                    && space
                        .iter()
                        .all(|s| matches!(*s, "shared::cta" | "shared::cluster" | "global")) =>
            {
                self.code.push_str("::sim::fence_proxy_async(); ");
                return Ok(());
            }
            ["fence", "mbarrier_init", "release", "cluster"] => return Ok(()),
            _ => {}
        }
        let gpu = match parts {
            ["fence", sem @ .., scope]
                if sem.len() <= 1
                    && sem
                        .iter()
                        .all(|s| matches!(*s, "sc" | "acq_rel" | "acquire" | "release")) =>
            {
                match *scope {
                    "cta" | "cluster" => false,
                    "gpu" | "sys" => true,
                    _ => return Err(fence_refusal(parts)),
                }
            }
            ["membar", "cta"] => false,
            ["membar", "gl" | "sys"] => true,
            _ => return Err(fence_refusal(parts)),
        };
        self.code
            .push_str(&format!("::sim::inline_ptx::scoped_fence({gpu}); "));
        Ok(())
    }

    /// `prefetch{.global,.local}.level [a]`, `prefetchu.L1 [a]` and
    /// `prefetch{.const,.param}.tensormap [a]` (a TMA descriptor brought near ahead of its
    /// first copy): nothing to do but read the address (a prefetch never faults).
    pub(super) fn prefetch(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let known = |p: &&str| {
            matches!(
                *p,
                "global"
                    | "local"
                    | "L1"
                    | "L2"
                    | "L2::evict_last"
                    | "L2::evict_normal"
                    | "tensormap"
                    | "const"
                    | "param"
            )
        };
        if !parts[1..].iter().all(known) {
            return Err("only prefetch{.global,.local}.L1/.L2, prefetchu.L1 and \
                 prefetch{.const,.param}.tensormap are emulated"
                .into());
        }
        Self::count(ops, 1)?;
        let addr = self.address(&ops[0], "the address", true)?;
        self.code.push_str(&format!("(void){addr}; "));
        Ok(())
    }
}

fn fence_refusal(parts: &[&str]) -> String {
    format!(
        "{} is not emulated (fence.sc, .acq_rel, .acquire or .release at .cta, .cluster, .gpu or \
         .sys scope, membar.cta, .gl and .sys, fence.proxy.async and \
         fence.mbarrier_init.release.cluster are)",
        parts.join(".")
    )
}

fn lanes_text(lanes: usize) -> String {
    if lanes == 1 {
        "one register (a scalar access)".into()
    } else {
        format!("a vector of {lanes} registers")
    }
}
