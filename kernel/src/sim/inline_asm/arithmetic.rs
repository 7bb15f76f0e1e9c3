//! Inline PTX's arithmetic and conversions, as attention and quantized-GEMM kernels write
//! them: floating-point `add`, `sub`, `mul`, `fma`, `min`, `max`, `neg`, `abs`, `div` and the
//! special functions (`ex2`, `lg2`, `rcp`, `rsqrt`, `sqrt`, `sin`, `cos`, `tanh`), with `.ftz`
//! and `.sat`; integer `add`, `sub`, `mul`/`mad` (`.lo`, `.hi`, `.wide`), `min`, `max`, the
//! bitwise operations (on predicates too), `shl`, `shr`, `popc`, `clz`, `brev`, `bfe`,
//! `lop3`, `prmt` and `shf`; and `cvt` between integers, FP16, BF16, FP32 and FP64 (with
//! its rounding modes, `.sat`, and the `.f16x2`/`.bf16x2` packing of two floats). Each is
//! the C++ expression of its PTX ISA definition, or a helper of `sim_asm.h` where the
//! definition takes more than one.

use super::{Gen, Kind, Opnd};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Bits,
    Unsigned,
    Signed,
    Float,
    Pred,
}

/// An instruction's type: its register, the C++ type its values have, and its class.
#[derive(Clone, Copy)]
struct Ty {
    kind: Kind,
    c: &'static str,
    class: Class,
}

impl Ty {
    fn of(name: &str) -> Option<Self> {
        use Class::*;
        let (kind, c, class) = match name {
            "b16" => (Kind::B16, "uint16_t", Bits),
            "u16" => (Kind::B16, "uint16_t", Unsigned),
            "s16" => (Kind::B16, "int16_t", Signed),
            "b32" => (Kind::B32, "uint32_t", Bits),
            "u32" => (Kind::B32, "uint32_t", Unsigned),
            "s32" => (Kind::B32, "int32_t", Signed),
            "b64" => (Kind::B64, "uint64_t", Bits),
            "u64" => (Kind::B64, "uint64_t", Unsigned),
            "s64" => (Kind::B64, "int64_t", Signed),
            "f32" => (Kind::B32, "float", Float),
            "f64" => (Kind::B64, "double", Float),
            "pred" => (Kind::Pred, "bool", Pred),
            _ => return None,
        };
        Some(Self { kind, c, class })
    }

    /// The same class at twice the width (`mul.wide`).
    fn wide(self) -> Option<Self> {
        let name = match (self.class, self.kind) {
            (Class::Unsigned, Kind::B16) => "u32",
            (Class::Signed, Kind::B16) => "s32",
            (Class::Unsigned, Kind::B32) => "u64",
            (Class::Signed, Kind::B32) => "s64",
            _ => return None,
        };
        Self::of(name)
    }

    fn f32(self) -> bool {
        self.class == Class::Float && self.kind == Kind::B32
    }

    fn int(self) -> bool {
        matches!(self.class, Class::Bits | Class::Unsigned | Class::Signed)
    }

    /// The unsigned C++ type of its width, in which sums and products wrap as on a GPU.
    fn unsigned(self) -> &'static str {
        match self.kind {
            Kind::B16 => "uint16_t",
            Kind::B32 => "uint32_t",
            _ => "uint64_t",
        }
    }
}

/// The qualifiers between an instruction's name and its type.
#[derive(Default)]
struct Mods {
    ftz: bool,
    sat: bool,
    nan: bool,
    relu: bool,
    /// `.lo`, `.hi` or `.wide` of mul and mad; `.l`/`.r` and `.wrap`/`.clamp` of shf.
    half: Option<&'static str>,
    funnel: Option<(bool, bool)>,
    /// A rounding to an integer (`.rni`, `.rzi`, `.rmi`, `.rpi`) as 0 to 3.
    int_round: Option<u8>,
}

fn mods(parts: &[&str]) -> Result<Mods, String> {
    let mut m = Mods::default();
    let mut funnel = (None, None);
    for &p in parts {
        match p {
            // Round to nearest even is the host's rounding; .approx and .full are computed
            // correctly rounded (a GPU's approximations are within their documented error).
            "rn" | "approx" | "full" => {}
            "ftz" => m.ftz = true,
            "sat" => m.sat = true,
            "NaN" => m.nan = true,
            "relu" => m.relu = true,
            "lo" => m.half = Some("lo"),
            "hi" => m.half = Some("hi"),
            "wide" => m.half = Some("wide"),
            "l" | "r" => funnel.0 = Some(p == "l"),
            "wrap" | "clamp" => funnel.1 = Some(p == "wrap"),
            "rni" => m.int_round = Some(0),
            "rzi" => m.int_round = Some(1),
            "rmi" => m.int_round = Some(2),
            "rpi" => m.int_round = Some(3),
            "rz" | "rm" | "rp" => {
                return Err(format!(
                    ".{p}: only round-to-nearest-even (.rn) is emulated for a floating-point \
                     result"
                ));
            }
            other => return Err(format!(".{other} is not emulated here")),
        }
    }
    if let (Some(l), Some(w)) = funnel {
        m.funnel = Some((l, w));
    }
    Ok(m)
}

/// The C++ function of each special function at 32 and 64 bits.
fn special_function(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "ex2" => ("exp2f(a)", "exp2(a)"),
        "lg2" => ("log2f(a)", "log2(a)"),
        "sin" => ("sinf(a)", "sin(a)"),
        "cos" => ("cosf(a)", "cos(a)"),
        "tanh" => ("tanhf(a)", "tanh(a)"),
        "rcp" => ("1.0f / a", "1.0 / a"),
        "rsqrt" => ("1.0f / sqrtf(a)", "1.0 / sqrt(a)"),
        "sqrt" => ("sqrtf(a)", "sqrt(a)"),
        "neg" => ("-a", "-a"),
        "abs" => ("fabsf(a)", "fabs(a)"),
        _ => return None,
    })
}

impl Gen<'_> {
    /// The C++ value of source `op` as a `t`.
    fn value(&self, op: &Opnd, t: Ty, ftz: bool, role: &str) -> Result<String, String> {
        let bits = self.read(op, t.kind, role)?;
        Ok(match (t.class, t.kind) {
            (Class::Float, Kind::B32) if ftz => {
                format!("::sim::inline_ptx::ftz(::sim::inline_ptx::f32_of({bits}))")
            }
            (Class::Float, Kind::B32) => format!("::sim::inline_ptx::f32_of({bits})"),
            (Class::Float, _) => format!("::sim::inline_ptx::f64_of({bits})"),
            _ => format!("(({}){bits})", t.c),
        })
    }

    /// Writes `expr`, a value of `t`, to destination `op`.
    fn result(&mut self, op: &Opnd, t: Ty, expr: &str, m: &Mods) -> Result<(), String> {
        let Some(d) = self.write(op, t.kind, "the destination")? else {
            return Ok(());
        };
        let mut v = format!("({})({expr})", t.c);
        if t.class == Class::Float {
            if m.sat {
                v = format!("::sim::inline_ptx::sat({v})");
            }
            if m.ftz && t.f32() {
                v = format!("::sim::inline_ptx::ftz({v})");
            }
            let to_bits = if t.f32() { "f32_bits" } else { "f64_bits" };
            v = format!("::sim::inline_ptx::{to_bits}({v})");
        }
        self.code
            .push_str(&format!("{d} = ({}){v}; ", t.kind.c_type()));
        Ok(())
    }

    /// Every arithmetic instruction but `cvt`: `name{.mods}.type d, a{, b{, c{, d}}}`.
    pub(super) fn arithmetic(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let name = parts[0];
        let last = parts.last().copied().unwrap_or("");
        if name == "prmt" && parts.len() > 2 {
            return Err(format!(
                "prmt.b32.{last}: only prmt's default mode is emulated (its selector's nibbles)"
            ));
        }
        let t = Ty::of(last).ok_or_else(|| format!("{name} on .{last} is not emulated"))?;
        let m = mods(&parts[1..parts.len() - 1])?;
        let saturating = matches!((name, t.c), ("add" | "sub", "int32_t"));
        if m.ftz && !t.f32() || m.sat && t.class != Class::Float && !saturating {
            return Err(format!(
                "{name}: .ftz and .sat are emulated on .f32 (and add.sat, sub.sat on .s32)"
            ));
        }
        let n = ops.len();
        let arity = |want: usize| {
            if n == want {
                Ok(())
            } else {
                Err(format!("takes {want} operands; {n} given"))
            }
        };
        let src = |g: &Self, k: usize, t: Ty| g.value(&ops[k], t, m.ftz, "a source");
        let float = t.class == Class::Float;
        if float && let Some((f32, f64)) = special_function(name) {
            arity(2)?;
            let a = src(self, 1, t)?;
            let body = if t.f32() { f32 } else { f64 };
            let expr = format!("[&] {{ auto a = {a}; return {body}; }}()");
            return self.result(&ops[0], t, &expr, &m);
        }
        match name {
            "add" | "sub" | "mul" | "div" | "min" | "max" if float => {
                arity(3)?;
                let (a, b) = (src(self, 1, t)?, src(self, 2, t)?);
                let suffix = if t.f32() { "f" } else { "" };
                let expr = match name {
                    "add" => format!("{a} + {b}"),
                    "sub" => format!("{a} - {b}"),
                    "mul" => format!("{a} * {b}"),
                    "div" => format!("{a} / {b}"),
                    // PTX's min and max give the other operand where one is NaN (as fmin
                    // does); .NaN gives NaN.
                    f if m.nan => format!(
                        "[&] {{ auto a = {a}, b = {b}; return a != a || b != b ? a + b : \
                         f{f}{suffix}(a, b); }}()"
                    ),
                    f => format!("f{f}{suffix}({a}, {b})"),
                };
                self.result(&ops[0], t, &expr, &m)
            }
            "fma" | "mad" if float => {
                arity(4)?;
                let (a, b, c) = (src(self, 1, t)?, src(self, 2, t)?, src(self, 3, t)?);
                let f = if t.f32() { "fmaf" } else { "fma" };
                self.result(&ops[0], t, &format!("{f}({a}, {b}, {c})"), &m)
            }
            "add" | "sub" if t.int() => {
                arity(3)?;
                let (a, b) = (src(self, 1, t)?, src(self, 2, t)?);
                let op = if name == "add" { '+' } else { '-' };
                let expr = if m.sat {
                    format!(
                        "[&] {{ long long s = (long long){a} {op} (long long){b}; return s < \
                         INT32_MIN ? INT32_MIN : s > INT32_MAX ? INT32_MAX : (int32_t)s; }}()"
                    )
                } else {
                    let u = t.unsigned();
                    format!("({u})(({u}){a} {op} ({u}){b})")
                };
                self.result(&ops[0], t, &expr, &m)
            }
            "mul" | "mad" if t.int() => self.mul_mad(name, t, &m, ops),
            "neg" | "abs" if t.class == Class::Signed => {
                arity(2)?;
                let a = src(self, 1, t)?;
                let u = t.unsigned();
                let negated = format!("({})(({u})0 - ({u}){a})", t.c);
                let expr = if name == "neg" {
                    negated
                } else {
                    format!("{a} < 0 ? {negated} : {a}")
                };
                self.result(&ops[0], t, &expr, &m)
            }
            "min" | "max" if t.int() => {
                arity(3)?;
                let (a, b) = (src(self, 1, t)?, src(self, 2, t)?);
                let op = if name == "min" { '<' } else { '>' };
                let expr = format!("[&] {{ auto a = {a}, b = {b}; return a {op} b ? a : b; }}()");
                self.result(&ops[0], t, &expr, &m)
            }
            "and" | "or" | "xor" if matches!(t.class, Class::Bits | Class::Pred) => {
                arity(3)?;
                let (a, b) = (src(self, 1, t)?, src(self, 2, t)?);
                let op = ["&", "|", "^"][["and", "or", "xor"]
                    .iter()
                    .position(|o| *o == name)
                    .unwrap_or(0)];
                self.result(&ops[0], t, &format!("{a} {op} {b}"), &m)
            }
            "not" if matches!(t.class, Class::Bits | Class::Pred) => {
                arity(2)?;
                let a = src(self, 1, t)?;
                let op = if t.class == Class::Pred { '!' } else { '~' };
                self.result(&ops[0], t, &format!("{op}{a}"), &m)
            }
            "shl" | "shr" if t.int() => {
                arity(3)?;
                let a = src(self, 1, t)?;
                let b = self.read(&ops[2], Kind::B32, "the shift")?;
                let f = if name == "shl" { "shl" } else { "shr" };
                let expr = format!("::sim::inline_ptx::{f}<{}>({a}, {b})", t.c);
                self.result(&ops[0], t, &expr, &m)
            }
            "popc" | "clz" | "brev" if t.class == Class::Bits => {
                arity(2)?;
                let a = src(self, 1, t)?;
                let wide = t.kind == Kind::B64;
                let (expr, out) = match (name, wide) {
                    ("popc", false) => (format!("__builtin_popcount({a})"), "u32"),
                    ("popc", true) => (format!("__builtin_popcountll({a})"), "u32"),
                    ("clz", false) => (format!("{a} ? __builtin_clz({a}) : 32"), "u32"),
                    ("clz", true) => (format!("{a} ? __builtin_clzll({a}) : 64"), "u32"),
                    (_, false) => (format!("__brev({a})"), "b32"),
                    (_, true) => (format!("__brevll({a})"), "b64"),
                };
                let out = Ty::of(out).unwrap_or(t);
                self.result(&ops[0], out, &expr, &m)
            }
            "bfe" if matches!(t.class, Class::Unsigned | Class::Signed) && t.kind != Kind::B16 => {
                arity(4)?;
                let a = src(self, 1, t)?;
                let b = self.read(&ops[2], Kind::B32, "the position")?;
                let c = self.read(&ops[3], Kind::B32, "the length")?;
                let expr = format!("::sim::inline_ptx::bfe<{}>({a}, {b}, {c})", t.c);
                self.result(&ops[0], t, &expr, &m)
            }
            "lop3" | "prmt" | "shf" if t.kind == Kind::B32 && t.class == Class::Bits => {
                self.bit_fields(name, &m, ops)
            }
            _ => Err(format!("{name} on .{last} is not emulated")),
        }
    }

    /// mul and mad: `.lo` (the low half of the product), `.hi` (the high half) or `.wide`
    /// (the whole product, in a register twice as wide); mad adds c at the result's width.
    fn mul_mad(&mut self, name: &str, t: Ty, m: &Mods, ops: &[Opnd]) -> Result<(), String> {
        let mad = name == "mad";
        Self::count(ops, 3 + usize::from(mad))?;
        let half = m.half.ok_or("needs .lo, .hi or .wide")?;
        let out = if half == "wide" {
            t.wide().ok_or(".wide takes .u16, .s16, .u32 or .s32")?
        } else {
            t
        };
        let a = self.value(&ops[1], t, false, "a source")?;
        let b = self.value(&ops[2], t, false, "a source")?;
        let signed = t.class == Class::Signed;
        let product = match (half, t.kind) {
            // In 64 bits: two 16-bit operands would multiply as ints, which may overflow.
            ("lo", _) => format!("({})((uint64_t){a} * (uint64_t){b})", t.unsigned()),
            ("hi", Kind::B64) => format!("::sim::inline_ptx::mul_hi({a}, {b})"),
            ("hi", _) => {
                let (w, bits) = (if signed { "int64_t" } else { "uint64_t" }, 8 * t_bytes(t));
                format!("({})(((({w}){a} * ({w}){b})) >> {bits})", t.c)
            }
            _ => {
                let w = if signed { "int64_t" } else { "uint64_t" };
                format!("({})(({w}){a} * ({w}){b})", out.c)
            }
        };
        let expr = if mad {
            let c = self.value(&ops[3], out, false, "the addend")?;
            let u = out.unsigned();
            format!("({u})(({u})({product}) + ({u}){c})")
        } else {
            product
        };
        self.result(&ops[0], out, &expr, m)
    }

    /// cvt{.rnd}{.ftz}{.sat}{.relu}.dtype.atype d, a, and cvt.rn{.relu}.{f16x2,bf16x2}.f32
    /// d, a, b (a in the upper half).
    pub(super) fn cvt(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let [.., dt, st] = parts else {
            return Err("cvt needs a destination and a source type".into());
        };
        if *dt == "tf32" {
            // cvt.rna{.satfinite}.tf32.f32: the f32 rounded to TF32's 10-bit mantissa, to
            // nearest with ties away from zero, in a 32-bit register (WMMA's rounding).
            if !matches!(
                parts,
                ["cvt", "rna", "tf32", "f32"] | ["cvt", "rna", "satfinite", "tf32", "f32"]
            ) {
                return Err("cvt to .tf32 is emulated as cvt.rna{.satfinite}.tf32.f32".into());
            }
            Self::count(ops, 2)?;
            let a = self.read(&ops[1], Kind::B32, "the source")?;
            if let Some(d) = self.write(&ops[0], Kind::B32, "the destination")? {
                self.code.push_str(&format!(
                    "{d} = ::sim::inline_ptx::f32_bits(nvcuda::wmma::__float_to_tf32(::sim::inline_ptx::f32_of({a}))); "
                ));
            }
            return Ok(());
        }
        let (d, s) = (
            CvtTy::of(dt).ok_or_else(|| format!("cvt to .{dt} is not emulated"))?,
            CvtTy::of(st).ok_or_else(|| format!("cvt from .{st} is not emulated"))?,
        );
        let m = mods(&parts[1..parts.len() - 2])?;
        let pair = matches!(d.class, CvtClass::F16x2 | CvtClass::Bf16x2);
        Self::count(ops, if pair { 3 } else { 2 })?;
        if pair && s.class != CvtClass::F32 {
            return Err(format!("cvt to .{dt} takes two .f32 sources"));
        }
        if m.relu && !matches!(d.class, CvtClass::F16 | CvtClass::Bf16) && !pair {
            return Err(".relu is emulated for FP16 and BF16 results".into());
        }
        let value = |g: &Self, op: &Opnd| -> Result<String, String> {
            let kind = g.cvt_register(op, s);
            let bits = g.read(op, kind, "the source")?;
            Ok(match s.class {
                CvtClass::F16 => format!("::sim::inline_ptx::f16_of({bits})"),
                CvtClass::Bf16 => format!("::sim::inline_ptx::bf16_of({bits})"),
                CvtClass::F32 if m.ftz => {
                    format!("::sim::inline_ptx::ftz(::sim::inline_ptx::f32_of({bits}))")
                }
                CvtClass::F32 => format!("::sim::inline_ptx::f32_of({bits})"),
                CvtClass::F64 => format!("::sim::inline_ptx::f64_of({bits})"),
                _ => format!("(({}){bits})", s.c),
            })
        };
        let half = |x: String| -> String {
            let x = if m.relu {
                format!("::sim::inline_ptx::relu({x})")
            } else if m.sat {
                format!("::sim::inline_ptx::sat({x})")
            } else {
                x
            };
            let f = if d.class == CvtClass::Bf16 || d.class == CvtClass::Bf16x2 {
                "bf16_bits"
            } else {
                "f16_bits"
            };
            format!("::sim::inline_ptx::{f}((double)({x}))")
        };
        let a = value(self, &ops[1])?;
        let round = |x: &str| match m.int_round {
            Some(0) => format!("nearbyint((double){x})"),
            Some(1) => format!("trunc((double){x})"),
            Some(2) => format!("floor((double){x})"),
            Some(3) => format!("ceil((double){x})"),
            _ => x.to_string(),
        };
        let expr = match d.class {
            CvtClass::F16x2 | CvtClass::Bf16x2 => {
                let b = value(self, &ops[2])?;
                format!("((uint32_t){} << 16) | (uint32_t){}", half(a), half(b))
            }
            CvtClass::F16 | CvtClass::Bf16 => half(round(&a)),
            CvtClass::F32 | CvtClass::F64 => {
                let t = Ty::of(dt).ok_or("f32")?;
                let expr = format!("({})({})", t.c, round(&a));
                return self.result(&ops[0], t, &expr, &m);
            }
            _ if s.float() => {
                let mode = m.int_round.ok_or(
                    "a conversion of a float to an integer needs .rni, .rzi, .rmi or .rpi",
                )?;
                format!("::sim::inline_ptx::to_int<{}>((double){a}, {mode})", d.c)
            }
            _ if m.sat => format!("::sim::inline_ptx::int_sat<{}, {}>({a})", d.c, s.c),
            _ => format!("({}){a}", d.c),
        };
        let kind = self.cvt_register(&ops[0], d);
        if let Some(out) = self.write(&ops[0], kind, "the destination")? {
            self.code
                .push_str(&format!("{out} = ({})({expr}); ", kind.c_type()));
        }
        Ok(())
    }

    /// The register a cvt operand of type `t` is in: an 8-bit integer's may be of any width.
    fn cvt_register(&self, op: &Opnd, t: CvtTy) -> Kind {
        match (t.kind, self.kind(op)) {
            (Kind::B16, have @ (Kind::B32 | Kind::B64)) if t.bytes == 1 => have,
            _ => t.kind,
        }
    }

    /// lop3.b32 d, a, b, c, table; prmt.b32 d, a, b, c; shf.{l,r}.{wrap,clamp}.b32 d, a, b, c.
    fn bit_fields(&mut self, name: &str, m: &Mods, ops: &[Opnd]) -> Result<(), String> {
        let t = Ty::of("b32").ok_or("b32")?;
        Self::count(ops, if name == "lop3" { 5 } else { 4 })?;
        let a = self.value(&ops[1], t, false, "a source")?;
        let b = self.value(&ops[2], t, false, "a source")?;
        let c = self.value(&ops[3], t, false, "a source")?;
        let expr = match name {
            "lop3" => {
                let lut = self.read(&ops[4], Kind::Imm, "the lookup table")?;
                format!("::sim::inline_ptx::lop3({a}, {b}, {c}, (uint32_t){lut})")
            }
            "prmt" => format!("::sim::inline_ptx::prmt({a}, {b}, {c})"),
            _ => {
                let (left, wrap) = m.funnel.ok_or("shf needs .l or .r, and .wrap or .clamp")?;
                format!("::sim::inline_ptx::shf({left}, {wrap}, {a}, {b}, {c})")
            }
        };
        self.result(&ops[0], t, &expr, m)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CvtClass {
    Unsigned,
    Signed,
    F16,
    Bf16,
    F32,
    F64,
    F16x2,
    Bf16x2,
}

/// A type of cvt: its register, its C++ type (integers) and size in memory.
#[derive(Clone, Copy)]
struct CvtTy {
    kind: Kind,
    c: &'static str,
    bytes: u8,
    class: CvtClass,
}

impl CvtTy {
    fn of(name: &str) -> Option<Self> {
        use CvtClass::*;
        let (kind, c, bytes, class) = match name {
            "u8" => (Kind::B16, "uint8_t", 1, Unsigned),
            "s8" => (Kind::B16, "int8_t", 1, Signed),
            "u16" => (Kind::B16, "uint16_t", 2, Unsigned),
            "s16" => (Kind::B16, "int16_t", 2, Signed),
            "u32" => (Kind::B32, "uint32_t", 4, Unsigned),
            "s32" => (Kind::B32, "int32_t", 4, Signed),
            "u64" => (Kind::B64, "uint64_t", 8, Unsigned),
            "s64" => (Kind::B64, "int64_t", 8, Signed),
            "f16" => (Kind::B16, "", 2, F16),
            "bf16" => (Kind::B16, "", 2, Bf16),
            "f32" => (Kind::B32, "", 4, F32),
            "f64" => (Kind::B64, "", 8, F64),
            "f16x2" => (Kind::B32, "", 4, F16x2),
            "bf16x2" => (Kind::B32, "", 4, Bf16x2),
            _ => return None,
        };
        Some(Self {
            kind,
            c,
            bytes,
            class,
        })
    }

    fn float(self) -> bool {
        !matches!(self.class, CvtClass::Unsigned | CvtClass::Signed)
    }
}

fn t_bytes(t: Ty) -> u32 {
    match t.kind {
        Kind::B16 => 2,
        Kind::B32 => 4,
        _ => 8,
    }
}
