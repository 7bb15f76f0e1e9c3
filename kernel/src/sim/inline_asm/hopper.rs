//! Hopper's asynchronous instructions as public sm_90a kernels write them (fast.cu, CUTLASS's
//! `cute/arch` wrappers): `mbarrier`, the TMA's copies (`cp.async.bulk.tensor` loads and
//! stores of 1 to 5 dimensions, plain `cp.async.bulk`, their bulk groups), named barriers,
//! `wgmma`, `setmaxnreg` and the cluster instructions (`barrier.cluster`, `mapa`), rewritten
//! into the emulation `lab/hopper.h` runs in the simulator (`sim_hopper.h`). A `try_wait` there
//! sleeps until its phase completes, so the retry loops these kernels write around it run once.

use super::{EMULATED, Gen, Kind, Opnd, split_operands};

/// Where an mbarrier operand lives: a generic address, or a shared-window address (`.shared`,
/// `.shared::cta`), or one of the cluster's (`.shared::cluster`, which `mapa` may have pointed
/// at another block).
fn space(parts: &[&str]) -> &'static str {
    if parts.contains(&"shared::cluster") {
        "2"
    } else if parts.iter().any(|p| matches!(*p, "shared" | "shared::cta")) {
        "1"
    } else {
        "0"
    }
}

/// Qualifiers an instruction may carry that change nothing here: memory-order semantics and
/// scopes (the emulation orders every mbarrier operation), state spaces (read by [`space`]),
/// `.sync.aligned` and the operand type.
fn ignorable(p: &str) -> bool {
    matches!(
        p,
        "release"
            | "acquire"
            | "relaxed"
            | "cta"
            | "cluster"
            | "shared"
            | "shared::cta"
            | "shared::cluster"
            | "sync"
            | "aligned"
            | "b64"
            | "u32"
            | "u64"
    )
}

impl Gen<'_> {
    /// `mbarrier.{init, inval, arrive, arrive.expect_tx, arrive_drop, expect_tx, complete_tx,
    /// try_wait, test_wait}`, their waits by phase parity or by the state an arrive returned.
    pub(super) fn mbarrier(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let op = parts.get(1).copied().unwrap_or("");
        let expect_tx = parts.get(2) == Some(&"expect_tx");
        let quals = &parts[if expect_tx { 3 } else { 2 }..];
        let parity = quals.contains(&"parity");
        if let Some(q) = quals.iter().find(|q| !ignorable(q) && **q != "parity") {
            return Err(format!("mbarrier.{op} .{q} is not emulated"));
        }
        let what = parts.join(".");
        let space = space(parts);
        let bar = |g: &Self, k: usize| -> Result<String, String> {
            let a = g.address(&ops[k], "the mbarrier's address", false)?;
            Ok(format!(
                "::sim::inline_ptx::mbarrier({a}, {space}, \"{what}\")"
            ))
        };
        let code = match (op, expect_tx) {
            ("inval", false) => {
                Self::count(ops, 1)?;
                format!("::sim::mbar_inval({}, \"{what}\"); ", bar(self, 0)?)
            }
            ("init", false) => {
                Self::count(ops, 2)?;
                let n = self.read_b32(&ops[1], "the arrival count")?;
                format!("::sim::mbar_init({}, (unsigned){n}); ", bar(self, 0)?)
            }
            ("arrive" | "arrive_drop", _) => {
                // state, [addr] {, count} or, with .expect_tx, state, [addr], txCount.
                if ops.len() != 2 && ops.len() != 3 {
                    return Err(format!(
                        "takes a state, [addr] and an optional count; {} operands given",
                        ops.len()
                    ));
                }
                let role = if expect_tx {
                    "the tx-count"
                } else {
                    "the arrival count"
                };
                let extra = ops.get(2).map(|o| self.read_b32(o, role)).transpose()?;
                let (count, tx) = match (expect_tx, extra) {
                    (true, Some(tx)) => ("1".to_string(), tx),
                    (true, None) => return Err("arrive.expect_tx takes a tx-count".into()),
                    (false, Some(n)) => (n, "0".to_string()),
                    (false, None) => ("1".to_string(), "0".to_string()),
                };
                if op == "arrive_drop" && (expect_tx || ops.len() == 3) {
                    return Err(
                        "mbarrier.arrive_drop with a count or a tx-count is not emulated".into(),
                    );
                }
                let a = self.address(&ops[1], "the mbarrier's address", false)?;
                let call = format!(
                    "::sim::inline_ptx::mbar_arrive({a}, {space}, (unsigned){count}, (unsigned){tx}, {}, \"{what}\")",
                    op == "arrive_drop"
                );
                match self.write(&ops[0], Kind::B64, "the state")? {
                    Some(state) => format!("{state} = {call}; "),
                    None => format!("{call}; "),
                }
            }
            ("expect_tx" | "complete_tx", false) => {
                Self::count(ops, 2)?;
                let n = self.read_b32(&ops[1], "the tx-count")?;
                let f = if op == "expect_tx" {
                    "mbar_expect_tx"
                } else {
                    "mbar_complete_tx"
                };
                format!("::sim::{f}({}, (unsigned){n}); ", bar(self, 0)?)
            }
            ("try_wait" | "test_wait", false) => {
                // waitComplete, [addr], phaseParity (or state) {, suspendTimeHint}.
                let hint = usize::from(op == "try_wait");
                if ops.len() != 3 && ops.len() != 3 + hint {
                    return Err(format!(
                        "takes a predicate, [addr], the {}{}; {} operands given",
                        if parity { "phase parity" } else { "state" },
                        if hint == 1 {
                            " and an optional suspend-time hint"
                        } else {
                            ""
                        },
                        ops.len()
                    ));
                }
                let phase = if parity {
                    self.read_b32(&ops[2], "the phase parity")?
                } else {
                    self.read(&ops[2], Kind::B64, "the state")?
                };
                let b = bar(self, 1)?;
                let test = format!(
                    "::sim::inline_ptx::mbar_wait_test({b}, (unsigned)({phase} & 1), {}, \"{what}\")",
                    op == "try_wait"
                );
                match self.write(&ops[0], Kind::Pred, "the result")? {
                    Some(p) => format!("{p} = {test}; "),
                    None => format!("(void){test}; "),
                }
            }
            _ => {
                return Err(format!(
                    "mbarrier.{op} is not emulated (init, inval, arrive, arrive.expect_tx, \
                     arrive_drop, expect_tx, complete_tx, try_wait and test_wait are)"
                ));
            }
        };
        self.code.push_str(&code);
        Ok(())
    }

    /// A 32-bit operand: a `"r"` register or an immediate.
    fn read_b32(&self, op: &Opnd, role: &str) -> Result<String, String> {
        match self.kind(op) {
            Kind::Imm => self.read(op, Kind::Imm, role),
            _ => self.read(op, Kind::B32, role),
        }
    }

    /// The TMA's bulk instructions: `cp.async.bulk.tensor.Nd.shared::cluster.global{.tile}
    /// .mbarrier::complete_tx::bytes{.multicast::cluster}{.L2::cache_hint} [dst], [tensorMap,
    /// {c0, ...}], [mbar]{, ctaMask}{, policy}` (a box of an N-D tensor map into shared
    /// memory), `cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group
    /// {.L2::cache_hint} [tensorMap, {c0, ...}], [src]{, policy}` (a box back to global
    /// memory), `cp.async.bulk.commit_group` and `cp.async.bulk.wait_group{.read} N`; plain
    /// copies go to [`Self::bulk_plain`]. `rest` is the operand text, whose tensor operand the
    /// common reader does not take.
    pub(super) fn bulk_tensor(&mut self, parts: &[&str], rest: &str) -> Result<(), String> {
        match parts.get(3).copied() {
            Some("commit_group") if parts.len() == 4 => {
                if !rest.trim().is_empty() {
                    return Err("cp.async.bulk.commit_group takes no operand".into());
                }
                self.code.push_str("::sim::bulk_commit(); ");
                return Ok(());
            }
            Some("wait_group") if parts.len() == 4 || parts[4..] == ["read"] => {
                let n = self.operand(rest.trim())?;
                let n = self.read(&n, Kind::Imm, "the group count")?;
                self.code
                    .push_str(&format!("::sim::bulk_wait((unsigned){n}); "));
                return Ok(());
            }
            Some("tensor") => {}
            _ => return self.bulk_plain(parts, rest),
        }
        let (mut multicast, mut hint, mut complete, mut group) = (false, false, false, false);
        let (mut dims, mut to_global) = (0usize, false);
        for (i, p) in parts[4..].iter().enumerate() {
            match *p {
                "1d" | "2d" | "3d" | "4d" | "5d" => dims = usize::from(p.as_bytes()[0] - b'0'),
                // The destination's space comes first: .global makes it a store.
                "global" if i == 1 => to_global = true,
                "shared::cluster" | "shared::cta" | "global" | "tile" => {}
                "mbarrier::complete_tx::bytes" => complete = true,
                "bulk_group" => group = true,
                "multicast::cluster" => multicast = true,
                "L2::cache_hint" => hint = true,
                other => {
                    return Err(format!(
                        "cp.async.bulk.tensor .{other} is not emulated (tiled copies of 1 to 5 \
                         dimensions: loads into shared memory completing on an mbarrier, with \
                         .multicast::cluster and .L2::cache_hint, and stores to global memory \
                         in bulk groups)"
                    ));
                }
            }
        }
        let what = parts.join(".");
        if dims == 0 || (to_global && (!group || multicast)) || (!to_global && !complete) {
            return Err(format!(
                "{what} is not emulated: loads go to shared memory with \
                 .mbarrier::complete_tx::bytes, stores to global memory with .bulk_group"
            ));
        }
        let raw = split_operands(rest);
        let (tensor_at, want) = if to_global {
            (0, 2 + usize::from(hint))
        } else {
            (1, 3 + usize::from(multicast) + usize::from(hint))
        };
        let coords_text = (0..dims)
            .map(|i| format!("c{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        if raw.len() != want {
            return Err(if to_global {
                format!(
                    "takes [tensorMap, {{{coords_text}}}], [src]{}; {} operands given",
                    if hint { ", a cache policy" } else { "" },
                    raw.len()
                )
            } else {
                format!(
                    "takes [dst], [tensorMap, {{{coords_text}}}], [mbar]{}{}; {} operands given",
                    if multicast { ", ctaMask" } else { "" },
                    if hint { ", a cache policy" } else { "" },
                    raw.len()
                )
            });
        }
        let (map, c) = self.tensor_box(&raw[tensor_at], dims)?;
        if to_global {
            let src = self.operand(&raw[1])?;
            let src = self.address(&src, "the shared source", false)?;
            self.code.push_str(&format!(
                "::sim::inline_ptx::tma_store({map}, {src}, {{{c}}}); "
            ));
            return Ok(());
        }
        let dst = self.operand(&raw[0])?;
        let dst = self.address(&dst, "the shared destination", false)?;
        let bar = self.operand(&raw[2])?;
        let bar = self.address(&bar, "the mbarrier's address", false)?;
        let mask = if multicast {
            let m = self.operand(&raw[3])?;
            match self.kind(&m) {
                Kind::B16 => self.read(&m, Kind::B16, "the ctaMask")?,
                _ => self.read_b32(&m, "the ctaMask")?,
            }
        } else {
            "1".into()
        };
        self.code.push_str(&format!(
            "::sim::inline_ptx::tma_load({dst}, {map}, {bar}, {{{c}}}, {multicast}, (unsigned){mask}); "
        ));
        Ok(())
    }

    /// A tensor operand `[tensorMap, {c0, ...}]` of `dims` coordinates: the map's address and
    /// the coordinates, as C expressions.
    fn tensor_box(&mut self, text: &str, dims: usize) -> Result<(String, String), String> {
        let coords_text = (0..dims)
            .map(|i| format!("c{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let tensor = text
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .map(split_operands)
            .filter(|v| v.len() == 2)
            .ok_or_else(|| {
                format!("the tensor operand must be [tensorMap, {{{coords_text}}}], not {text}")
            })?;
        let map = self.operand(&tensor[0])?;
        let map = self.read(&map, Kind::B64, "the tensor map (a generic address, \"l\")")?;
        let coords = self.operand(&tensor[1])?;
        let coords = self.vector(&coords, dims, "the coordinates")?;
        let c = coords
            .iter()
            .map(|o| {
                self.read_b32(o, "a coordinate")
                    .map(|v| format!("(int){v}"))
            })
            .collect::<Result<Vec<_>, _>>()?
            .join(", ");
        Ok((map, c))
    }

    /// Reductions into global memory, in bulk groups as stores are:
    /// `cp.reduce.async.bulk.tensor.Nd.global.shared::cta.redOp{.tile}.bulk_group
    /// {.L2::cache_hint} [tensorMap, {c0, ...}], [src]{, policy}` (a box, of the map's element
    /// type) and `cp.reduce.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}.redOp
    /// {.noftz}.type [dst], [src], size{, policy}`. The reductions into another block's shared
    /// memory (`.shared::cluster` on an mbarrier) are not emulated.
    pub(super) fn bulk_reduce(&mut self, parts: &[&str], rest: &str) -> Result<(), String> {
        let what = parts.join(".");
        let tensor = parts.get(4) == Some(&"tensor");
        let quals = &parts[if tensor { 5 } else { 4 }..];
        let (mut dims, mut op, mut ty) = (0usize, None, None);
        let (mut group, mut hint, mut spaces) = (false, false, Vec::new());
        for q in quals {
            match *q {
                "1d" | "2d" | "3d" | "4d" | "5d" if tensor => {
                    dims = usize::from(q.as_bytes()[0] - b'0')
                }
                "global" | "shared::cta" | "shared::cluster" => spaces.push(*q),
                "add" | "min" | "max" | "inc" | "dec" | "and" | "or" | "xor" => op = Some(*q),
                "f16" | "bf16" | "f32" | "f64" | "b32" | "u32" | "s32" | "b64" | "u64" | "s64"
                    if !tensor =>
                {
                    ty = Some(*q)
                }
                "tile" if tensor => {}
                "noftz" if !tensor => {}
                "bulk_group" => group = true,
                "L2::cache_hint" => hint = true,
                other => {
                    return Err(format!(
                        "{what}: .{other} is not emulated (reductions from shared memory into \
                         global memory in bulk groups: a tensor map's box, or contiguous bytes \
                         of a type)"
                    ));
                }
            }
        }
        let Some(op) = op else {
            return Err(format!(
                "{what}: no reduction (.add, .min, .max, .inc, .dec, .and, .or, .xor)"
            ));
        };
        if spaces != ["global", "shared::cta"]
            || !group
            || (tensor && dims == 0)
            || (!tensor && ty.is_none())
        {
            return Err(format!(
                "{what} is not emulated: reductions go from shared::cta to global memory in a \
                 bulk group (.global.shared::cta ... .bulk_group{})",
                if tensor { "" } else { ", with an element type" }
            ));
        }
        if let Some(ty) = ty {
            // The combinations ptxas accepts (.noftz only, and always, on 16-bit float adds).
            let noftz = quals.contains(&"noftz");
            let half = matches!(ty, "f16" | "bf16");
            let valid = match op {
                "add" => half || matches!(ty, "f32" | "f64" | "u32" | "s32" | "u64"),
                "min" | "max" => half || matches!(ty, "u32" | "s32" | "u64" | "s64"),
                "inc" | "dec" => ty == "u32",
                _ => matches!(ty, "b32" | "b64"),
            };
            if !valid || noftz != (op == "add" && half) {
                return Err(format!(
                    "{what}: ptxas takes .add on .f32, .f64, .u32, .s32, .u64 and (with .noftz) \
                     .f16, .bf16; .min and .max on .f16, .bf16, .u32, .s32, .u64, .s64; .inc \
                     and .dec on .u32; .and, .or and .xor on .b32 and .b64"
                ));
            }
        }
        let op = format!("::sim::RED_{}", op.to_uppercase());
        let raw = split_operands(rest);
        if tensor {
            if raw.len() != 2 + usize::from(hint) {
                return Err(format!(
                    "takes [tensorMap, {{coordinates}}], [src]{}; {} operands given",
                    if hint { ", a cache policy" } else { "" },
                    raw.len()
                ));
            }
            let (map, c) = self.tensor_box(&raw[0], dims)?;
            let src = self.operand(&raw[1])?;
            let src = self.address(&src, "the shared source", false)?;
            self.code.push_str(&format!(
                "::sim::inline_ptx::tma_reduce({map}, {src}, {{{c}}}, {op}); "
            ));
            return Ok(());
        }
        let ops: Vec<Opnd> = raw
            .iter()
            .map(|o| self.operand(o))
            .collect::<Result<_, _>>()?;
        Self::count(&ops, 3 + usize::from(hint))?;
        let dst = self.address(&ops[0], "the destination", true)?;
        let src = self.address(&ops[1], "the source", false)?;
        let size = self.read_b32(&ops[2], "the size")?;
        let ty = match ty.unwrap_or("u32") {
            "b32" => "u32",
            "b64" => "u64",
            t => t,
        };
        self.code.push_str(&format!(
            "::sim::inline_ptx::bulk_reduce({dst}, {src}, (uint32_t){size}, {op}, ::sim::RED_{}); ",
            ty.to_uppercase()
        ));
        Ok(())
    }

    /// Plain bulk copies: `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// {.multicast::cluster}{.L2::cache_hint} [dst], [src], size, [mbar]{, ctaMask}{, policy}`
    /// and `cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size
    /// {, policy}`.
    fn bulk_plain(&mut self, parts: &[&str], rest: &str) -> Result<(), String> {
        let what = parts.join(".");
        let quals = &parts[3..];
        let has = |q: &str| quals.contains(&q);
        let (multicast, hint) = (has("multicast::cluster"), has("L2::cache_hint"));
        let load = quals.starts_with(&["shared::cluster", "global"])
            && has("mbarrier::complete_tx::bytes");
        let store =
            quals.starts_with(&["global", "shared::cta"]) && has("bulk_group") && !multicast;
        let known = quals.iter().all(|q| {
            matches!(
                *q,
                "shared::cluster"
                    | "shared::cta"
                    | "global"
                    | "mbarrier::complete_tx::bytes"
                    | "bulk_group"
                    | "multicast::cluster"
                    | "L2::cache_hint"
            )
        });
        if !known || !(load || store) {
            return Err(format!(
                "{what} is not emulated (bulk copies from global into shared memory on an \
                 mbarrier, from shared into global memory in bulk groups, and the TMA's tensor \
                 copies are)"
            ));
        }
        let ops: Vec<Opnd> = split_operands(rest)
            .iter()
            .map(|o| self.operand(o))
            .collect::<Result<_, _>>()?;
        let want = if load { 4 + usize::from(multicast) } else { 3 } + usize::from(hint);
        Self::count(&ops, want)?;
        let dst = self.address(&ops[0], "the destination", !load)?;
        let src = self.address(&ops[1], "the source", load)?;
        let size = self.read_b32(&ops[2], "the size")?;
        if store {
            self.code.push_str(&format!(
                "::sim::inline_ptx::bulk_store({dst}, {src}, (uint32_t){size}); "
            ));
            return Ok(());
        }
        let bar = self.address(&ops[3], "the mbarrier's address", false)?;
        let mask = if multicast {
            match self.kind(&ops[4]) {
                Kind::B16 => self.read(&ops[4], Kind::B16, "the ctaMask")?,
                _ => self.read_b32(&ops[4], "the ctaMask")?,
            }
        } else {
            "1".into()
        };
        self.code.push_str(&format!(
            "::sim::inline_ptx::bulk_load({dst}, {src}, (uint32_t){size}, {bar}, {multicast}, (unsigned){mask}); "
        ));
        Ok(())
    }

    /// `wgmma.fence`, `.commit_group`, `.wait_group N`, and `wgmma.mma_async` of FP16, BF16,
    /// TF32 or FP8 (E4M3 and E5M2, mixed too) into FP32 accumulators, A from shared memory (a
    /// descriptor) or registers.
    pub(super) fn wgmma(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let tail = parts[1..].join(".");
        match tail.as_str() {
            "fence.sync.aligned" => {
                Self::count(ops, 0)?;
                self.code.push_str("::sim::wgmma_fence(); ");
                return Ok(());
            }
            "commit_group.sync.aligned" => {
                Self::count(ops, 0)?;
                self.code.push_str("::sim::wgmma_commit(); ");
                return Ok(());
            }
            "wait_group.sync.aligned" => {
                Self::count(ops, 1)?;
                let n = self.read(&ops[0], Kind::Imm, "the group count")?;
                self.code
                    .push_str(&format!("::sim::wgmma_wait((unsigned){n}); "));
                return Ok(());
            }
            _ => {}
        }
        let refuse = || {
            format!(
                "wgmma.{tail} is not emulated (wgmma.mma_async.sync.aligned.m64nNk16 \
                 .f32.f16.f16, .f16.f16.f16 and .f32.bf16.bf16, m64nNk8.f32.tf32.tf32, \
                 m64nNk32 .f32 or .f16 with .e4m3 or .e5m2 A and B, A from a descriptor or \
                 registers, and wgmma.fence, commit_group and wait_group are)"
            )
        };
        let [
            "mma_async",
            "sync",
            "aligned",
            shape,
            acc @ ("f32" | "f16"),
            ta,
            tb,
        ] = parts[1..]
        else {
            return Err(refuse());
        };
        let (ty, ty_b, k) = match (ta, tb) {
            ("f16", "f16") => ("f16", "f16", "16"),
            ("bf16", "bf16") => ("bf16", "bf16", "16"),
            ("tf32", "tf32") => ("tf32", "tf32", "8"),
            (a @ ("e4m3" | "e5m2"), b @ ("e4m3" | "e5m2")) => (a, b, "32"),
            _ => return Err(refuse()),
        };
        // FP16 accumulators (two a register) take FP16 and FP8 operands only.
        let f16_acc = acc == "f16";
        if f16_acc && !(ty == "f16" || k == "32") {
            return Err(refuse());
        }
        let n: u32 = shape
            .strip_prefix("m64n")
            .and_then(|r| r.strip_suffix(&format!("k{k}")))
            .and_then(|n| n.parse().ok())
            .filter(|n| n % 8 == 0 && (8..=256).contains(n))
            .ok_or_else(refuse)?;
        let rs = matches!(ops.get(1), Some(Opnd::Vector(_)));
        // d, a, b-desc, scale-d, imm-scale-a, imm-scale-b, then imm-trans-a (A from shared
        // memory) and imm-trans-b, which TF32 and FP8 do not take.
        let trans = if ty == "tf32" || k == "32" {
            0
        } else if rs {
            1
        } else {
            2
        };
        Self::count(ops, 6 + trans)?;
        let (regs, letter, reg_type) = match f16_acc {
            false => (n as usize / 2, 'f', "float"),
            true => (n as usize / 4, 'r', "uint32_t"),
        };
        let d = self.vector(&ops[0], regs, "D")?;
        let mut lvalues = Vec::with_capacity(d.len());
        for o in d {
            match o {
                Opnd::Ref(i) if self.ops[*i].letter() == letter && self.ops[*i].output => {
                    // An FP16 accumulator may be declared `unsigned` or `int`.
                    let cast = if f16_acc { "(uint32_t *)" } else { "" };
                    lvalues.push(format!("{cast}&({})", self.ops[*i].expr));
                    self.by_address.push(*i);
                }
                _ => {
                    let what = match f16_acc {
                        false => "a \"+f\" operand (a float",
                        true => "a \"+r\" operand (two halves in a 32-bit register",
                    };
                    return Err(format!(
                        "each accumulator of D must be {what} the simulator writes at the \
                         wgmma.wait_group that covers it)"
                    ));
                }
            }
        }
        let (a_decl, desc_a) = if rs {
            let regs = self
                .vector(&ops[1], 4, "A")?
                .iter()
                .map(|o| self.read(o, Kind::B32, "an A register"))
                .collect::<Result<Vec<_>, _>>()?;
            (
                format!("const uint32_t _wa[4] = {{{}}}; ", regs.join(", ")),
                "0".to_string(),
            )
        } else {
            (
                String::new(),
                self.read(&ops[1], Kind::B64, "the A descriptor")?,
            )
        };
        let desc_b = self.read(&ops[2], Kind::B64, "the B descriptor")?;
        // scale-d is a predicate: a .pred register of the statement or an immediate.
        let scale_d = match &ops[3] {
            Opnd::Local(name) if self.locals[name] == Kind::Pred => super::local_name(name),
            o if self.kind(o) == Kind::Imm => {
                format!("({} != 0)", self.read(o, Kind::Imm, "scale-d")?)
            }
            _ => {
                return Err(
                    "scale-d must be a predicate (a .pred register or an immediate), as ptxas \
                     requires"
                        .into(),
                );
            }
        };
        let imm = |k: usize, role: &str| self.read(&ops[k], Kind::Imm, role);
        let (sa, sb) = (imm(4, "imm-scale-a")?, imm(5, "imm-scale-b")?);
        let (tra, trb) = match trans {
            2 => (imm(6, "imm-trans-a")?, imm(7, "imm-trans-b")?),
            1 => ("0".into(), imm(6, "imm-trans-b")?),
            _ => ("0".into(), "0".into()),
        };
        self.code.push_str(&format!(
            "{{ {a_decl}{reg_type} *_wd[{len}] = {{{lv}}}; ::sim::inline_ptx::wgmma(_wd, {len}, {a}, {desc_a}, {desc_b}, {n}, ::sim::WgType::{ty}, {scale_d}, (int){sa}, (int){sb}, {tra} != 0, {trb} != 0, ::sim::WgType::{ty_b}); }} ",
            len = d.len(),
            lv = lvalues.join(", "),
            a = if rs { "_wa" } else { "nullptr" },
        ));
        Ok(())
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`: registers are not a resource here, the count
    /// is checked.
    pub(super) fn setmaxnreg(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let dir = match parts {
            [
                "setmaxnreg",
                dir @ ("inc" | "dec"),
                "sync",
                "aligned",
                "u32",
            ] => *dir,
            _ => return Err("setmaxnreg.{inc,dec}.sync.aligned.u32 is emulated".into()),
        };
        Self::count(ops, 1)?;
        let n = self.read(&ops[0], Kind::Imm, "the register count")?;
        self.code.push_str(&format!(
            "::sim::setmaxnreg((unsigned){n}, \"setmaxnreg.{dir}\"); "
        ));
        Ok(())
    }

    /// `barrier.cluster.arrive{.release,.relaxed}{.aligned}`, `barrier.cluster.wait
    /// {.acquire}{.aligned}`, `bar.sync 0` / `barrier.sync 0` (`__syncthreads`), and named
    /// barriers: `bar{.cta}.sync id{, count}` and `bar{.cta}.arrive id, count` (and their
    /// `barrier{.cta}.*{.aligned}` spellings).
    pub(super) fn barrier(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        match parts {
            ["barrier", "cluster", op, rest @ ..]
                if rest
                    .iter()
                    .all(|q| matches!(*q, "release" | "relaxed" | "acquire" | "aligned")) =>
            {
                Self::count(ops, 0)?;
                match *op {
                    "arrive" => self.code.push_str("::sim::cluster_arrive(); "),
                    "wait" => self.code.push_str("::sim::cluster_wait(); "),
                    _ => return Err(format!("barrier.cluster.{op} is not emulated")),
                }
                Ok(())
            }
            ["bar" | "barrier", rest @ ..]
                if matches!(
                    rest.iter()
                        .filter(|q| !matches!(**q, "cta" | "aligned"))
                        .collect::<Vec<_>>()[..],
                    [&"sync"] | [&"arrive"]
                ) =>
            {
                let wait = rest.contains(&"sync");
                match ops {
                    [Opnd::Imm(v)] if wait && v == "0ll" => {
                        self.code.push_str("__syncthreads(); ");
                        Ok(())
                    }
                    [id] | [id, _] if wait || ops.len() == 2 => {
                        let id = self.read_b32(id, "the barrier id")?;
                        let count = match ops.get(1) {
                            Some(c) => self.read_b32(c, "the thread count")?,
                            None => "0".into(),
                        };
                        let what = parts.join(".");
                        self.code.push_str(&format!(
                            "::sim::named_barrier((unsigned){id}, (unsigned){count}, {wait}, \"{what}\"); "
                        ));
                        Ok(())
                    }
                    _ => Err(format!(
                        "{} takes a barrier id and a thread count",
                        parts.join(".")
                    )),
                }
            }
            _ => Err(format!(
                "{} is not emulated (barrier.cluster.arrive and .wait, bar.sync and bar.arrive \
                 are); {EMULATED}",
                parts.join(".")
            )),
        }
    }

    /// `mapa.u64 d, a, rank` (generic addresses) and `mapa.shared::cluster.u32 d, a, rank`
    /// (shared-window addresses, which mbarrier operations with `.shared::cluster` take).
    pub(super) fn mapa(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 3)?;
        let rank = self.read_b32(&ops[2], "the target block's rank")?;
        let (kind, call) = match parts[1..] {
            ["u64"] => {
                let a = self.read(&ops[1], Kind::B64, "the address")?;
                (
                    Kind::B64,
                    format!(
                        "(uint64_t)(uintptr_t)::sim::cluster_map((const void *)(uintptr_t){a}, (unsigned){rank}, \"mapa\")"
                    ),
                )
            }
            ["shared::cluster", t @ ("u32" | "u64")] => {
                let kind = if t == "u32" { Kind::B32 } else { Kind::B64 };
                let a = self.read(&ops[1], kind, "the address")?;
                (
                    kind,
                    format!("::sim::inline_ptx::mapa_shared((uint64_t){a}, (unsigned){rank})"),
                )
            }
            _ => {
                return Err("mapa.u64 and mapa.shared::cluster.u32 (or .u64) are emulated".into());
            }
        };
        if let Some(d) = self.write(&ops[0], kind, "the destination")? {
            let t = kind.c_type();
            self.code.push_str(&format!("{d} = ({t})({call}); "));
        }
        Ok(())
    }
}
