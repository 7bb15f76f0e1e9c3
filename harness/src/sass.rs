//! The SASS of a kernel: what the GPU actually executes, disassembled from the CUBIN that NVRTC
//! writes, with a count of the instructions the ladder's lessons are about (FFMA and HMMA;
//! global, shared and local memory; 128-bit and read-only loads). Needs NVRTC and `nvdisasm`
//! or `cuobjdump` (both from `tools/install-cuda-tools.sh`, or a CUDA toolkit), not a GPU.
//!
//! A rung's header comment says what it changes; the SASS says whether the compiler had
//! already done it (unrolling, vector loads, read-only loads) in the rung before.
//! [`Function::hot_loop`] finds the loop that does the math and counts one pass of it (FLOP,
//! bytes requested by access width, instructions): what the speed-of-light model scales.

use crate::memo::Memo;
use kernel::CudaPlan;
use kernel::cuda::discovery::discovery;
use kernel::cuda::{nvrtc, nvrtc_cache};
use std::fmt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Why no SASS came out.
#[derive(Debug, thiserror::Error)]
pub enum SassError {
    #[error(
        "neither nvdisasm nor cuobjdump was found in {0} or on PATH; run tools/install-cuda-tools.sh"
    )]
    NoDisassembler(String),
    #[error(transparent)]
    Compile(#[from] kernel::DeviceError),
    #[error("cannot hand the CUBIN to {tool}: {source}")]
    Io {
        tool: String,
        source: std::io::Error,
    },
    #[error("{tool} failed on {file}: {stderr}")]
    Tool {
        tool: String,
        file: String,
        stderr: String,
    },
    #[error("{entry} is not in the SASS of {file} ({arch})")]
    MissingEntry {
        entry: String,
        file: String,
        arch: String,
    },
}

/// The disassembler found: `nvdisasm` (preferred: it reads a bare CUBIN) or `cuobjdump -sass`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disassembler {
    pub path: PathBuf,
    pub nvdisasm: bool,
}

impl Disassembler {
    /// Looks in the CUDA folders that discovery searched (`bin/`), then on `PATH`.
    pub fn find() -> Result<Self, SassError> {
        let roots = &discovery().searched;
        let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = roots
            .iter()
            .map(|r| r.join("bin"))
            .chain(path_dirs)
            .collect();
        for (name, nvdisasm) in [("nvdisasm", true), ("cuobjdump", false)] {
            if let Some(path) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
                return Ok(Self { path, nvdisasm });
            }
        }
        let searched = roots
            .iter()
            .map(|r| r.join("bin").display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        Err(SassError::NoDisassembler(if searched.is_empty() {
            "no CUDA folder".into()
        } else {
            searched
        }))
    }

    fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The SASS of every function of `cubin`, as the tool prints it. `label` names the CUBIN
    /// in errors. Kept on disk beside NVRTC's outputs: the tool takes most of the time of an
    /// `explain` whose compile was kept, and the same CUBINs are disassembled by `explain`,
    /// `docs`, the run pages and the tests, each in a process of its own.
    pub fn disassemble(&self, cubin: &[u8], label: &str) -> Result<String, SassError> {
        self.disassemble_kept_in(&nvrtc_cache::dir(), cubin, label)
    }

    fn disassemble_kept_in(
        &self,
        dir: &std::path::Path,
        cubin: &[u8],
        label: &str,
    ) -> Result<String, SassError> {
        let kept = self.kept_name(cubin);
        if let Some(text) = kept.as_deref().and_then(|k| nvrtc_cache::load_text(dir, k)) {
            return Ok(text);
        }
        let text = self.run(cubin, label)?;
        if let Some(k) = kept {
            nvrtc_cache::store_text(dir, &k, &text);
        }
        Ok(text)
    }

    /// The name of the kept disassembly of `cubin` by this tool (its path, size and time).
    fn kept_name(&self, cubin: &[u8]) -> Option<String> {
        use std::os::unix::ffi::OsStrExt;
        let meta = std::fs::metadata(&self.path).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let tool = format!("{} {} {:?}", meta.len(), self.nvdisasm, modified);
        let parts: [&[u8]; 4] = [
            b"disassembly",
            self.path.as_os_str().as_bytes(),
            tool.as_bytes(),
            cubin,
        ];
        nvrtc_cache::key(&parts, &[]).map(|k| format!("sass-{k}"))
    }

    fn run(&self, cubin: &[u8], label: &str) -> Result<String, SassError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let file = std::env::temp_dir().join(format!(
            "lab-sass-{}-{}.cubin",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |source| SassError::Io {
            tool: self.name(),
            source,
        };
        std::fs::write(&file, cubin).map_err(io)?;
        let mut cmd = Command::new(&self.path);
        if self.nvdisasm {
            cmd.arg("-c"); // code sections only
        } else {
            cmd.arg("-sass");
        }
        let out = cmd.arg(&file).output();
        let _ = std::fs::remove_file(&file);
        let out = out.map_err(io)?;
        if !out.status.success() {
            return Err(SassError::Tool {
                tool: self.name(),
                file: label.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Counts of the instructions the ladder talks about, for one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Instructions, not counting NOP padding.
    pub instructions: u32,
    pub ffma: u32,
    /// `mma.sync` on the tensor cores: `HMMA`, and int8's `IMMA`.
    pub hmma: u32,
    /// Hopper warpgroup MMA (`HGMMA`, from `wgmma.mma_async`; `QGMMA` on FP8 counts too).
    pub hgmma: u32,
    /// Global loads; of them 128-bit (`LDG.E.128`) and read-only (`LDG.E.*.CONSTANT`).
    pub ldg: u32,
    pub ldg128: u32,
    pub ldg_constant: u32,
    /// `cp.async` copies global to shared without a register (`LDGSTS`): counted apart from
    /// LDG and STS, which they replace.
    pub ldgsts: u32,
    pub stg: u32,
    pub stg128: u32,
    /// Shared loads (not `LDSM`); of them 128-bit.
    pub lds: u32,
    pub lds128: u32,
    /// `ldmatrix` (`LDSM`): a warp loads tensor-core fragments from shared memory.
    pub ldsm: u32,
    pub sts: u32,
    pub sts128: u32,
    /// Generic loads and stores (`LD`/`ST`): the address space was not known at compile time.
    pub ld_generic: u32,
    pub st_generic: u32,
    /// Local memory: register spills and stack arrays.
    pub ldl: u32,
    pub stl: u32,
    /// 64-bit global and shared loads and stores (the 128-bit ones are counted above).
    pub ldg64: u32,
    pub stg64: u32,
    pub lds64: u32,
    pub sts64: u32,
    /// TMA copies (`UTMALDG`): their size lives in the tensor map, not in the instruction.
    pub utmaldg: u32,
    /// FLOP one warp does executing these instructions once: on the FMA pipes (`FFMA` 2 per
    /// lane, `HFMA2` 4) and on the tensor cores (`HMMA` by its m-n-k shape; `HGMMA` by its
    /// shape, a quarter per warp since the 4 warps of a warpgroup issue it together); of the
    /// tensor FLOP, those in TF32 and those in FP8. FADD, FMUL and MUFU are issued but not
    /// counted: the workloads' FLOP models count multiply-adds.
    pub flop_fma: u64,
    pub flop_tensor: u64,
    pub flop_tf32: u64,
    pub flop_fp8: u64,
    /// Integer operations of int8's `IMMA` (a multiply-add counts two), which the tensor
    /// FLOP include: a rate of their own.
    pub flop_int8: u64,
    /// Bytes one warp requests executing these instructions once: global loads (`LDG`,
    /// `LDGSTS`) and stores (`STG`), 32 lanes times the width; shared loads (`LDS`, `LDSM` by
    /// its matrix count, the shared-memory operands of `HGMMA`) and stores (`STS`, the shared
    /// half of `LDGSTS`). Generic and local accesses are not counted.
    pub global_load_bytes: u64,
    pub global_store_bytes: u64,
    pub shared_load_bytes: u64,
    pub shared_store_bytes: u64,
    /// What those shared-memory accesses cost the shared-memory pipe, in wavefronts.
    pub shared_wavefronts: SharedWavefronts,
}

/// Shared-memory wavefronts one warp's instructions take when no two lanes of a phase meet in
/// a bank: the pipe serves one a clock per SM, each a phase of up to 128 bytes (the whole warp
/// at 4 bytes a lane or narrower, a half-warp at 8, a quarter-warp at 16, one 8x8 matrix of an
/// `LDSM`), so a narrow access costs a whole wavefront. Bank conflicts add wavefronts on top;
/// the simulator counts them (see `sol::BankFactors`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedWavefronts {
    pub lds: u64,
    pub sts: u64,
    pub ldsm: u64,
    /// The shared half of `cp.async`.
    pub ldgsts: u64,
    /// `HGMMA`'s shared-memory operands, at 128 bytes a wavefront.
    pub wgmma: u64,
}

impl SharedWavefronts {
    pub fn total(&self) -> u64 {
        self.lds + self.sts + self.ldsm + self.ldgsts + self.wgmma
    }
}

/// Lanes of a warp: a per-thread access width times this is what the warp requests.
const LANES: u64 = 32;

/// Bytes one lane moves in a load or store with these modifiers (`.128`, `.64`, `.U8`, ...).
fn access_width(mods: &[&str]) -> u64 {
    if mods.contains(&"128") {
        16
    } else if mods.contains(&"64") {
        8
    } else if mods.iter().any(|m| matches!(*m, "U8" | "S8")) {
        1
    } else if mods.iter().any(|m| matches!(*m, "U16" | "S16")) {
        2
    } else {
        4
    }
}

/// The m, n, k of an `HMMA` shape modifier: `16816` is m16n8k16, `1688` m16n8k8, `884` m8n8k4.
fn hmma_shape(m: &str) -> Option<(u64, u64, u64)> {
    if m.len() < 3 || !m.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (mm, rest) = if m.starts_with("16") {
        m.split_at(2)
    } else {
        m.split_at(1)
    };
    let (n, k) = rest.split_at(1);
    Some((mm.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
}

/// The m, n, k of an `HGMMA` shape modifier (`64x128x16`).
fn hgmma_shape(m: &str) -> Option<(u64, u64, u64)> {
    let mut it = m.split('x').map(|d| d.parse::<u64>().ok());
    let shape = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(shape)
}

/// Bytes of one element of a tensor-core input type named in the modifiers.
fn tensor_element_bytes(mods: &[&str]) -> u64 {
    if mods.contains(&"TF32") {
        4
    } else if mods
        .iter()
        .any(|m| matches!(*m, "E4M3" | "E5M2" | "S8" | "U8"))
    {
        1
    } else {
        2
    }
}

/// Of `flop` tensor-core FLOP of an instruction with modifiers `mods`, those in TF32 and
/// those in FP8.
fn tensor_kinds(flop: u64, mods: &[&str]) -> (u64, u64) {
    let tf32 = if mods.contains(&"TF32") { flop } else { 0 };
    let fp8 = match mods.iter().any(|m| matches!(*m, "E4M3" | "E5M2")) {
        true => flop,
        false => 0,
    };
    (tf32, fp8)
}

impl Summary {
    /// These counts with the memory accesses of `o` added, kind by kind and width by width:
    /// what two runs of code together ask of each kind of access.
    pub fn with_accesses_of(mut self, o: &Summary) -> Summary {
        self.ldg += o.ldg;
        self.ldg128 += o.ldg128;
        self.ldg64 += o.ldg64;
        self.stg += o.stg;
        self.stg128 += o.stg128;
        self.stg64 += o.stg64;
        self.lds += o.lds;
        self.lds128 += o.lds128;
        self.lds64 += o.lds64;
        self.sts += o.sts;
        self.sts128 += o.sts128;
        self.sts64 += o.sts64;
        self.ldsm += o.ldsm;
        self.ldgsts += o.ldgsts;
        let (w, v) = (&mut self.shared_wavefronts, &o.shared_wavefronts);
        (w.lds, w.sts, w.ldsm, w.ldgsts, w.wgmma) = (
            w.lds + v.lds,
            w.sts + v.sts,
            w.ldsm + v.ldsm,
            w.ldgsts + v.ldgsts,
            w.wgmma + v.wgmma,
        );
        self
    }

    /// Counts one instruction line (after the address and predicate: opcode and operands).
    fn add(&mut self, opcode: &str, operands: &str) {
        if opcode == "NOP" {
            return; // padding after the last EXIT
        }
        self.instructions += 1;
        let mut parts = opcode.split('.');
        let base = parts.next().unwrap_or("");
        let mods: Vec<&str> = parts.collect();
        let wide = mods.contains(&"128");
        let w64 = u32::from(access_width(&mods) == 8);
        let bytes = access_width(&mods) * LANES;
        let phases = bytes.div_ceil(128);
        let w = &mut self.shared_wavefronts;
        match base {
            "FFMA" => {
                self.ffma += 1;
                self.flop_fma += 2 * LANES;
            }
            "HFMA2" if !mods.contains(&"MMA") => self.flop_fma += 4 * LANES,
            "HMMA" => {
                self.hmma += 1;
                if let Some((m, n, k)) = mods.iter().find_map(|m| hmma_shape(m)) {
                    let flop = 2 * m * n * k;
                    let (tf32, fp8) = tensor_kinds(flop, &mods);
                    self.flop_tensor += flop;
                    self.flop_tf32 += tf32;
                    self.flop_fp8 += fp8;
                }
            }
            // int8's mma.sync is `IMMA` (`IMMA.16832.S8.S8`).
            "IMMA" => {
                self.hmma += 1;
                if let Some((m, n, k)) = mods.iter().find_map(|m| hmma_shape(m)) {
                    self.flop_tensor += 2 * m * n * k;
                    self.flop_int8 += 2 * m * n * k;
                }
            }
            // FP8's warpgroup MMA is `QGMMA` (`QGMMA.64x128x32.F32.E4M3.E4M3`).
            "HGMMA" | "QGMMA" => {
                self.hgmma += 1;
                if let Some((m, n, k)) = mods.iter().find_map(|m| hgmma_shape(m)) {
                    let flop = 2 * m * n * k / 4;
                    let (tf32, fp8) = tensor_kinds(flop, &mods);
                    self.flop_tensor += flop;
                    self.flop_tf32 += tf32;
                    self.flop_fp8 += fp8;
                    // B always comes from shared memory; A too unless a register operand
                    // precedes the descriptor (`HGMMA... R24, R56, gdesc[UR8], R24`).
                    let e = tensor_element_bytes(&mods);
                    let a_in_regs = operands
                        .split(',')
                        .nth(1)
                        .is_some_and(|o| o.trim().starts_with('R'));
                    let a = if a_in_regs { 0 } else { m * k * e };
                    self.shared_load_bytes += (a + n * k * e) / 4;
                    w.wgmma += (a + n * k * e) / 4 / 128;
                }
            }
            "UTMALDG" => self.utmaldg += 1,
            "LDGSTS" => {
                self.ldgsts += 1;
                self.global_load_bytes += bytes;
                self.shared_store_bytes += bytes;
                w.ldgsts += phases;
            }
            "LDG" => {
                self.ldg += 1;
                self.ldg128 += u32::from(wide);
                self.ldg64 += w64;
                self.ldg_constant += u32::from(mods.contains(&"CONSTANT"));
                self.global_load_bytes += bytes;
            }
            "STG" => {
                self.stg += 1;
                self.stg128 += u32::from(wide);
                self.stg64 += w64;
                self.global_store_bytes += bytes;
            }
            "LDS" => {
                self.lds += 1;
                self.lds128 += u32::from(wide);
                self.lds64 += w64;
                self.shared_load_bytes += bytes;
                w.lds += phases;
            }
            "LDSM" => {
                self.ldsm += 1;
                // 8x8 matrices of 16-bit elements, 128 B each: `.4` loads four.
                let matrices = match mods.last() {
                    Some(&"2") => 2,
                    Some(&"4") => 4,
                    _ => 1,
                };
                self.shared_load_bytes += 128 * matrices;
                w.ldsm += matrices;
            }
            "STS" => {
                self.sts += 1;
                self.sts128 += u32::from(wide);
                self.sts64 += w64;
                self.shared_store_bytes += bytes;
                w.sts += phases;
            }
            "LD" => self.ld_generic += 1,
            "ST" => self.st_generic += 1,
            "LDL" => self.ldl += 1,
            "STL" => self.stl += 1,
            _ => {}
        }
    }

    /// Column titles matching [`Summary::row`].
    pub fn header() -> String {
        format!(
            "{:>6} {:>5} {:>4} {:>5} {:>4} {:>7} {:>6} {:>6} {:>4} {:>7} {:>4} {:>7} {:>4} {:>4} {:>7} {:>5} {:>7}",
            "instr",
            "FFMA",
            "HMMA",
            "HGMMA",
            "LDG",
            "LDG.128",
            "LDG.RO",
            "LDGSTS",
            "STG",
            "STG.128",
            "LDS",
            "LDS.128",
            "LDSM",
            "STS",
            "STS.128",
            "LD/ST",
            "LDL/STL"
        )
    }

    /// One line of counts under [`Summary::header`].
    pub fn row(&self) -> String {
        format!(
            "{:>6} {:>5} {:>4} {:>5} {:>4} {:>7} {:>6} {:>6} {:>4} {:>7} {:>4} {:>7} {:>4} {:>4} {:>7} {:>5} {:>7}",
            self.instructions,
            self.ffma,
            self.hmma,
            self.hgmma,
            self.ldg,
            self.ldg128,
            self.ldg_constant,
            self.ldgsts,
            self.stg,
            self.stg128,
            self.lds,
            self.lds128,
            self.ldsm,
            self.sts,
            self.sts128,
            format!("{}/{}", self.ld_generic, self.st_generic),
            format!("{}/{}", self.ldl, self.stl)
        )
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} instructions: {} FFMA, {} HMMA, {} HGMMA; global {} loads ({} 128-bit, {} \
             read-only), {} cp.async LDGSTS, {} stores ({} 128-bit); shared {} loads ({} 128-bit), {} LDSM, {} stores \
             ({} 128-bit); generic {} loads, {} stores; local {} loads, {} stores",
            self.instructions,
            self.ffma,
            self.hmma,
            self.hgmma,
            self.ldg,
            self.ldg128,
            self.ldg_constant,
            self.ldgsts,
            self.stg,
            self.stg128,
            self.lds,
            self.lds128,
            self.ldsm,
            self.sts,
            self.sts128,
            self.ld_generic,
            self.st_generic,
            self.ldl,
            self.stl
        )
    }
}

/// One function's SASS: its instruction lines and their counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub sass: String,
    pub summary: Summary,
}

/// A SASS instruction line (`/*0040*/  @!P0 LDG.E.128 R4, ...`) taken apart, if it is one,
/// with whether it is predicated off for good (`@!PT`: never executes; the compiler leaves
/// such lines as placeholders, e.g. after `cp.async` sequences, and they must not be counted).
struct Parts<'a> {
    addr: u64,
    op: &'a str,
    /// The operands, up to the `;` (cuobjdump's encoding comment dropped).
    operands: &'a str,
    never: bool,
    /// Predicated (`@P0`, `@!P1`): it may not execute.
    guarded: bool,
}

fn instruction_parts(line: &str) -> Option<Parts<'_>> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let rest = rest.trim_start();
    let (first, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (op, tail, never, guarded) = if first.starts_with('@') {
        let tail = tail.trim_start();
        let (op, tail) = tail.split_once(char::is_whitespace).unwrap_or((tail, ""));
        (op, tail, first == "@!PT", first != "@PT")
    } else {
        (first, tail, false, false)
    };
    let op = op.trim_end_matches(';');
    let operands = tail.split(';').next().unwrap_or("").trim();
    op.chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        .then_some(Parts {
            addr,
            op,
            operands,
            never,
            guarded,
        })
}

/// A loop of a function's SASS: a backward branch (`BRA` to an earlier label) and the lines
/// from that label to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The label branched to (`.L_x_4`), or its address where the listing has no labels.
    pub label: String,
    /// Addresses of the loop's first instruction and of its backward branch.
    pub start: u64,
    pub end: u64,
    /// One pass of one warp: each line of the body once, every nested loop run once; of the
    /// two arms of an if/else only the shorter (the vector fast path, not its scalar tail
    /// path); the body of an if without else counted.
    pub summary: Summary,
}

impl Loop {
    /// Whether `other` lies inside this loop (and is not this loop).
    pub fn contains(&self, other: &Loop) -> bool {
        (self.start, self.end) != (other.start, other.end)
            && self.start <= other.start
            && other.end <= self.end
    }

    fn flop(&self) -> u64 {
        self.summary.flop_fma + self.summary.flop_tensor
    }
}

/// The target of a branch's operands: a label (`` `(.L_x_4) ``) or an address (`0x250`).
enum Target<'a> {
    Label(&'a str),
    Addr(u64),
}

fn branch_target(operands: &str) -> Option<Target<'_>> {
    if let Some(rest) = operands.split_once('(').map(|(_, r)| r) {
        return Some(Target::Label(rest.split(')').next()?.trim()));
    }
    let hex = operands.split_whitespace().last()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok().map(Target::Addr)
}

/// How a run through SASS counts the body of an if without else (a guarded branch over it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ifs {
    /// Counted: the path of a warp that has a lane taking it.
    Taken,
    /// Left out: the shortest path, that of a warp whose lanes all skip it.
    Skipped,
}

/// A function's instructions with the index each branch goes to (`None` for no branch, or
/// one that never runs: `@!PT`).
struct Flow<'a> {
    insns: Vec<Parts<'a>>,
    targets: Vec<Option<usize>>,
}

impl<'a> Flow<'a> {
    fn of(sass: &'a str) -> Self {
        let mut insns: Vec<Parts<'_>> = Vec::new();
        let mut labels: Vec<(&str, usize)> = Vec::new();
        for line in sass.lines() {
            if let Some(i) = instruction_parts(line) {
                insns.push(i);
            } else if let Some(label) = line.trim().strip_suffix(':') {
                labels.push((label, insns.len()));
            }
        }
        let target = |b: &Parts<'_>| -> Option<usize> {
            if b.never || !(b.op == "BRA" || b.op.starts_with("BRA.")) {
                return None;
            }
            match branch_target(b.operands)? {
                Target::Label(l) => labels.iter().find(|(n, _)| *n == l).map(|(_, i)| *i),
                Target::Addr(a) => insns.iter().position(|i| i.addr == a),
            }
        };
        let targets = insns.iter().map(target).collect();
        Self { insns, targets }
    }

    /// The index of the function's last unguarded `EXIT`, after which ptxas lays out cold
    /// code: the subroutines of slow paths (a 64-bit division's `CALL.REL` target, up to its
    /// `RET`), the fallbacks of warp-synchronous code for a diverged warp (`BRA.DIV`), and
    /// the trap. The last line where the function has no `EXIT`.
    fn warm_end(&self) -> usize {
        self.insns
            .iter()
            .rposition(|i| i.op == "EXIT" && !i.guarded)
            .unwrap_or(self.insns.len().saturating_sub(1))
    }

    /// One run through the lines `start..=end` whose index `left_out` does not name: each
    /// line once, of the two arms of an if/else (`@P BRA else; then...; BRA join; else: ...;
    /// join:`) only the shorter, the body of an if without else counted.
    fn once(
        &self,
        start: usize,
        end: usize,
        ifs: Ifs,
        left_out: impl Fn(usize) -> bool,
    ) -> Summary {
        let (insns, targets) = (&self.insns, &self.targets);
        let mut skip = vec![false; end + 1];
        for c in start..end {
            let Some(els) = targets[c].filter(|e| *e > c + 1 && *e <= end) else {
                continue;
            };
            if !insns[c].guarded {
                continue;
            }
            let jump = els - 1;
            let skipped = match targets[jump] {
                Some(join) if !insns[jump].guarded && join > els && join <= end => {
                    let (then_arm, else_arm) = (c + 1..els, els..join);
                    if then_arm.len() > else_arm.len() {
                        then_arm
                    } else {
                        else_arm
                    }
                }
                _ if ifs == Ifs::Skipped => c + 1..els,
                _ => continue,
            };
            for i in skipped {
                skip[i] = true;
            }
        }
        let mut summary = Summary::default();
        for (i, x) in insns.iter().enumerate().take(end + 1).skip(start) {
            if !x.never && !skip[i] && !left_out(i) {
                summary.add(x.op, x.operands);
            }
        }
        summary
    }
}

impl Function {
    /// Every loop of the function, in the order of their backward branches. A branch to
    /// itself (the trap after the last `EXIT`) is no loop; `@!PT` branches never run.
    pub fn loops(&self) -> Vec<Loop> {
        let flow = Flow::of(&self.sass);
        let (insns, targets) = (&flow.insns, &flow.targets);
        let warm_end = flow.warm_end();
        let mut out = Vec::new();
        for (end, b) in insns.iter().enumerate() {
            // A branch back from cold code (a diverged warp's fallback rejoining the main
            // path) closes no loop.
            if end > warm_end {
                continue;
            }
            let Some(start) = targets[end].filter(|s| *s < end) else {
                continue;
            };
            let summary = flow.once(start, end, Ifs::Taken, |_| false);
            out.push(Loop {
                label: match branch_target(b.operands) {
                    Some(Target::Label(l)) => l.to_string(),
                    _ => format!("{:#x}", insns[start].addr),
                },
                start: insns[start].addr,
                end: b.addr,
                summary,
            });
        }
        out
    }

    /// The hot loop: of the loops that do math, the innermost (no loop doing math inside
    /// them: a spin-wait on a barrier does not count), and of those the one with the most
    /// FLOP per pass (the main unrolled loop rather than its remainder loops). In a function
    /// without math, the innermost loop with the most instructions.
    pub fn hot_loop(&self) -> Option<Loop> {
        let loops = self.loops();
        let math = |l: &Loop| l.flop() > 0;
        let innermost = |l: &Loop, counts: &dyn Fn(&Loop) -> bool| {
            !loops.iter().any(|o| counts(o) && l.contains(o))
        };
        if loops.iter().any(math) {
            loops
                .iter()
                .filter(|l| math(l) && innermost(l, &math))
                .max_by_key(|l| (l.flop(), l.summary.instructions))
                .cloned()
        } else {
            loops
                .iter()
                .filter(|l| innermost(l, &|_| true))
                .max_by_key(|l| l.summary.instructions)
                .cloned()
        }
    }

    /// The instruction mix of one pass of the hot loop (see [`Function::hot_loop`]).
    pub fn inner_loop(&self) -> Option<Summary> {
        self.hot_loop().map(|l| l.summary)
    }

    /// The loop that streams the most global memory: of the innermost loops that load from
    /// it, the one loading the most bytes per pass, the first of equals (the main loop comes
    /// before an epilogue's).
    pub fn streaming_loop(&self) -> Option<Loop> {
        let loops = self.loops();
        let loads = |l: &Loop| l.summary.global_load_bytes > 0;
        loops
            .iter()
            .filter(|l| loads(l) && !loops.iter().any(|o| loads(o) && l.contains(o)))
            .rev()
            .max_by_key(|l| l.summary.global_load_bytes)
            .cloned()
    }

    /// One warp's run through the function's warm code (up to its last unguarded `EXIT`,
    /// before the cold code ptxas lays out after it) with the lines of `except` left out:
    /// every other line once, of an if/else the shorter arm, the body of an if without else
    /// as `ifs` says, other loops once.
    pub fn once_outside(&self, except: Option<&Loop>, ifs: Ifs) -> Summary {
        let flow = Flow::of(&self.sass);
        if flow.insns.is_empty() {
            return Summary::default();
        }
        let inside =
            |i: usize| except.is_some_and(|l| (l.start..=l.end).contains(&flow.insns[i].addr));
        flow.once(0, flow.warm_end(), ifs, inside)
    }
}

/// The name of the function a header line opens: nvdisasm's `//---- .text.NAME ----` or
/// cuobjdump's `Function : NAME`.
fn function_header(line: &str) -> Option<&str> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("Function :") {
        return Some(rest.trim());
    }
    if t.starts_with("//") {
        let rest = t.split_once(".text.")?.1;
        return rest.split_whitespace().next();
    }
    None
}

/// Splits a disassembly into functions, each with its summary.
pub fn parse(listing: &str) -> Vec<Function> {
    let mut out: Vec<Function> = Vec::new();
    for line in listing.lines() {
        if let Some(name) = function_header(line) {
            out.push(Function {
                name: name.to_string(),
                sass: String::new(),
                summary: Summary::default(),
            });
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        let t = line.trim_end();
        if let Some(i) = instruction_parts(t) {
            if !i.never {
                f.summary.add(i.op, i.operands);
            }
            f.sass.push_str(t);
            f.sass.push('\n');
        } else if t.starts_with('.') && t.ends_with(':') {
            f.sass.push_str(t); // branch targets, so loops can be read
            f.sass.push('\n');
        }
    }
    out
}

/// The SASS of one launch of a plan.
#[derive(Clone, Debug)]
pub struct Listing {
    pub file: String,
    pub entry: String,
    pub arch: String,
    pub function: Function,
}

/// The functions of `cubin`, disassembled once per process: a rung's SASS is read again as
/// the parent of the next (`explain`, `docs`).
fn functions_of(
    tool: &Disassembler,
    cubin: &[u8],
    label: &str,
) -> Result<Arc<Vec<Function>>, SassError> {
    static MEMO: Memo<(PathBuf, u64, usize), Arc<Vec<Function>>> = Memo::new();
    let mut h = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(cubin, &mut h);
    let key = (
        tool.path.clone(),
        std::hash::Hasher::finish(&h),
        cubin.len(),
    );
    MEMO.get_or_try(key, || {
        Ok(Arc::new(parse(&tool.disassemble(cubin, label)?)))
    })
}

/// Compiles each launch of `plan` for `arch` (memoized by NVRTC) and disassembles its entry;
/// a kernel launched twice (the conversion of A, then of B) is listed once.
pub fn of_plan(
    tool: &Disassembler,
    plan: &CudaPlan,
    arch: &str,
) -> Result<Vec<Listing>, SassError> {
    let mut out: Vec<Listing> = Vec::new();
    for l in plan.launches() {
        let file = l.source.label();
        if out
            .iter()
            .any(|o| o.file == file && o.entry == l.entry.as_ref())
        {
            continue;
        }
        let compiled = nvrtc::compile(&l.source, arch)?;
        let functions = functions_of(tool, &compiled.cubin, &file)?;
        let symbol = compiled.symbol(&l.entry);
        let function = functions
            .iter()
            .find(|f| f.name == symbol)
            .cloned()
            .ok_or_else(|| SassError::MissingEntry {
                entry: l.entry.to_string(),
                file: file.clone(),
                arch: arch.to_string(),
            })?;
        out.push(Listing {
            file,
            entry: l.entry.to_string(),
            arch: compiled.arch.clone(),
            function,
        });
    }
    Ok(out)
}

/// Every function of a CUDA file compiled for `arch`, in name order.
pub fn of_file(
    tool: &Disassembler,
    source: &kernel::CudaSource,
    arch: &str,
) -> Result<Vec<Listing>, SassError> {
    let compiled = nvrtc::compile(source, arch)?;
    let file = source.label();
    let mut functions = functions_of(tool, &compiled.cubin, &file)?.to_vec();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(functions
        .into_iter()
        .map(|function| Listing {
            file: file.clone(),
            entry: function.name.clone(),
            arch: arch.to_string(),
            function,
        })
        .collect())
}

/// Prints each listing's SASS with its summary, then one table of all the summaries, each row
/// labelled by `label` (the kernel id, or the file).
pub fn print(listings: &[(String, Listing)]) {
    for (label, l) in listings {
        println!(
            "\n== {label}: {} ({}), {}\n{}summary: {}",
            l.entry, l.file, l.arch, l.function.sass, l.function.summary
        );
    }
    if listings.is_empty() {
        return;
    }
    println!(
        "\nSASS summary (LDG.RO: read-only LDG.E.CONSTANT; LD/ST: generic; LDL/STL: local memory)"
    );
    println!(
        "{:<22} {:<22} {:<6} {}",
        "kernel",
        "entry",
        "arch",
        Summary::header()
    );
    for (label, l) in listings {
        println!(
            "{:<22} {:<22} {:<6} {}",
            label,
            l.entry,
            l.arch,
            l.function.summary.row()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disassembly_is_kept_for_the_same_cubin_and_tool_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("lab-sass-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A stand-in for nvdisasm that says how often it ran.
        let runs = dir.join("runs");
        let tool = dir.join("nvdisasm");
        let write_tool = |text: &str| {
            let script = format!("#!/bin/sh\necho x >> '{}'\necho '{text}'\n", runs.display());
            std::fs::write(&tool, script).unwrap();
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        write_tool("first");
        let d = Disassembler {
            path: tool.clone(),
            nvdisasm: true,
        };
        let kept = dir.join("kept");
        let ran = || std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count());
        let sass = |cubin: &[u8]| d.disassemble_kept_in(&kept, cubin, "t.cu").unwrap();
        assert_eq!(sass(b"cubin a"), "first\n");
        assert_eq!(sass(b"cubin a"), "first\n");
        assert_eq!(ran(), 1, "the second disassembly of one CUBIN is read back");
        sass(b"cubin b");
        assert_eq!(ran(), 2, "another CUBIN runs the tool");
        // Another tool (here: the same path, a different file) runs again.
        write_tool("second, longer");
        assert_eq!(sass(b"cubin a"), "second, longer\n");
        assert_eq!(ran(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    const NVDISASM: &str = "\t.target\tsm_90\n\
//--------------------- .text.gemm_tiled          --------------------------\n\
\t.section\t.text.gemm_tiled,\"ax\",@progbits\n\
gemm_tiled:\n\
.text.gemm_tiled:\n\
        /*0000*/                   LDC R1, c[0x0][0x28] ;\n\
.L_x_1:\n\
        /*02c0*/              @!P1 LDG.E.CONSTANT R27, desc[UR6][R8.64] ;\n\
        /*02d0*/                   LDG.E.128.CONSTANT R4, desc[UR6][R2.64] ;\n\
        /*02e0*/                   LDS.128 R8, [R16] ;\n\
        /*02f0*/                   LDS R12, [R6] ;\n\
        /*0300*/                   LDSM.16.M88.4 R20, [R3] ;\n\
        /*0310*/                   FFMA R23, R8, R12, R23 ;\n\
        /*0320*/                   HMMA.16816.F32 R4, R20, R8, R4 ;\n\
        /*0330*/                   STS.128 [R5], R8 ;\n\
        /*0340*/                   STL [R1+0x8], R3 ;\n\
        /*0350*/                   LDL R14, [R1+0x4] ;\n\
        /*0360*/                   LD.E R2, desc[UR4][R2.64] ;\n\
        /*0370*/                   STG.E.128 desc[UR6][R2.64], R4 ;\n\
        /*0380*/                   EXIT ;\n\
        /*0390*/                   NOP;\n\
//--------------------- .text.other          --------------------------\n\
        /*0000*/                   FFMA R1, R2, R3, R4 ;\n";

    #[test]
    fn counts_the_instructions_of_each_function() {
        let f = parse(NVDISASM);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].name, "gemm_tiled");
        let s = f[0].summary;
        assert_eq!(
            s,
            Summary {
                instructions: 14,
                ffma: 1,
                hmma: 1,
                hgmma: 0,
                ldg: 2,
                ldg128: 1,
                ldg_constant: 2,
                ldgsts: 0,
                stg: 1,
                stg128: 1,
                lds: 2,
                lds128: 1,
                ldsm: 1,
                sts: 1,
                sts128: 1,
                ld_generic: 1,
                st_generic: 0,
                ldl: 1,
                stl: 1,
                ldg64: 0,
                stg64: 0,
                lds64: 0,
                sts64: 0,
                utmaldg: 0,
                // FFMA: 2 per lane; HMMA.16816: 2 x 16 x 8 x 16 per warp.
                flop_fma: 64,
                flop_tensor: 4096,
                flop_tf32: 0,
                flop_fp8: 0,
                flop_int8: 0,
                // 32 lanes x width: LDG 4 + 16; STG 16; LDS 16 + 4, LDSM .4 4 x 128 B; STS 16.
                global_load_bytes: 32 * 4 + 32 * 16,
                global_store_bytes: 32 * 16,
                shared_load_bytes: 32 * 16 + 32 * 4 + 4 * 128,
                shared_store_bytes: 32 * 16,
                // 128-byte phases: LDS.128 4, LDS 1, LDSM .4 one a matrix; STS.128 4.
                shared_wavefronts: SharedWavefronts {
                    lds: 4 + 1,
                    sts: 4,
                    ldsm: 4,
                    ldgsts: 0,
                    wgmma: 0,
                },
            }
        );
        assert!(f[0].sass.contains(".L_x_1:"), "loop labels are kept");
        assert_eq!(f[1].summary.ffma, 1);
    }

    #[test]
    fn counts_cp_async_and_warpgroup_mma_and_skips_predicated_off_lines() {
        let listing = "//--------------------- .text.pipelined --------------------------\n\
        /*0000*/                   LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64] ;\n\
        /*0010*/              @!PT LDS RZ, [RZ] ;\n\
        /*0020*/              @!PT LDS RZ, [RZ] ;\n\
        /*0030*/               @P0 LDGSTS.E.BYPASS.LTC128B.128 [R3+0x80], desc[UR4][R6.64] ;\n\
        /*0040*/                   LDGDEPBAR ;\n\
        /*0050*/                   DEPBAR.LE SB0, 0x1 ;\n\
        /*0060*/                   LDSM.16.MT88.4 R8, [R9] ;\n\
        /*0070*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;\n\
        /*0080*/              @!PT HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;\n\
        /*0090*/                   EXIT ;\n";
        let f = parse(listing);
        let s = f[0].summary;
        assert_eq!(
            (s.ldgsts, s.ldg, s.sts),
            (2, 0, 0),
            "LDGSTS is not LDG or STS"
        );
        assert_eq!(s.lds, 0, "@!PT lines never execute");
        assert_eq!((s.ldsm, s.hgmma, s.hmma), (1, 1, 0));
        assert_eq!(s.instructions, 7);
        assert!(
            f[0].sass.contains("@!PT LDS"),
            "the listing keeps every line"
        );
        let row = s.row();
        assert_eq!(
            Summary::header().split_whitespace().count(),
            row.split_whitespace().count(),
            "every column has a value"
        );
    }

    #[test]
    fn reads_cuobjdump_listings_too() {
        let listing = "\tcode for sm_90\n\t\tFunction : f32_to_f16\n\
            \t.headerflags\t@\"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n\
            \x20       /*0000*/                   LDC R1, c[0x0][0x28] ;            /* 0x00000a00ff017b82 */\n\
            \x20       /*0010*/                   LDG.E.CONSTANT R2, desc[UR4][R2.64] ;  /* 0x0 */\n";
        let f = parse(listing);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].name, "f32_to_f16");
        assert_eq!(
            (f[0].summary.instructions, f[0].summary.ldg_constant),
            (2, 1)
        );
    }

    /// A function with a 4x-unrolled main loop, its remainder loop, a spin-wait nested in
    /// the main loop, an if/else (scalar and vector path) in it, and the trap after EXIT.
    const LOOPS: &str = "//--------------------- .text.k --------------------------\n\
        /*0000*/                   MOV R0, RZ ;\n\
.L_x_1:\n\
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;\n\
        /*0020*/               @P1 BRA `(.L_x_2) ;\n\
        /*0030*/                   LDG.E R8, desc[UR4][R2.64] ;\n\
        /*0040*/                   LDG.E R9, desc[UR4][R2.64+0x4] ;\n\
        /*0050*/                   LDG.E R10, desc[UR4][R2.64+0x8] ;\n\
        /*0060*/                   BRA `(.L_x_3) ;\n\
.L_x_2:\n\
        /*0070*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;\n\
.L_x_3:\n\
.L_x_4:\n\
        /*0080*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R8+URZ], R11 ;\n\
        /*0090*/              @!P0 BRA `(.L_x_4) ;\n\
        /*00a0*/                   LDS.64 R12, [R5] ;\n\
        /*00b0*/                   FFMA R1, R4, R5, R1 ;\n\
        /*00c0*/                   FFMA R1, R6, R7, R1 ;\n\
        /*00d0*/                   FFMA R1, R12, R13, R1 ;\n\
        /*00e0*/                   FFMA R1, R8, R9, R1 ;\n\
        /*00f0*/              @!PT FFMA R1, R8, R9, R1 ;\n\
        /*0100*/               @P2 BRA `(.L_x_1) ;\n\
.L_x_5:\n\
        /*0110*/                   LDG.E R4, desc[UR4][R2.64] ;\n\
        /*0120*/                   FFMA R1, R4, R4, R1 ;\n\
        /*0130*/               @P3 BRA `(.L_x_5) ;\n\
        /*0140*/                   EXIT ;\n\
.L_x_6:\n\
        /*0150*/                   BRA `(.L_x_6);\n";

    #[test]
    fn finds_the_loops_and_the_hot_one() {
        let f = &parse(LOOPS)[0];
        let loops = f.loops();
        let spans: Vec<(&str, u64, u64)> = loops
            .iter()
            .map(|l| (l.label.as_str(), l.start, l.end))
            .collect();
        assert_eq!(
            spans,
            [
                (".L_x_4", 0x80, 0x90),
                (".L_x_1", 0x10, 0x100),
                (".L_x_5", 0x110, 0x130)
            ],
            "a branch to itself is no loop"
        );
        assert!(loops[1].contains(&loops[0]) && !loops[0].contains(&loops[1]));
        let hot = f.hot_loop().unwrap();
        assert_eq!(
            hot.label, ".L_x_1",
            "the spin-wait inside does no math, so the main loop is innermost"
        );
        let s = f.inner_loop().unwrap();
        assert_eq!(s, hot.summary);
        assert_eq!((s.ffma, s.flop_fma), (4, 4 * 64), "@!PT lines never run");
        // The vector arm (one LDGSTS) is shorter than the scalar arm (three LDG and a BRA).
        assert_eq!((s.ldg, s.ldg128, s.ldgsts), (1, 1, 1));
        assert_eq!(s.global_load_bytes, 32 * 16 + 32 * 16);
        assert_eq!((s.lds, s.lds64, s.shared_load_bytes), (1, 1, 32 * 8));
        assert_eq!(s.shared_store_bytes, 32 * 16, "LDGSTS writes shared memory");
        // A half-warp a phase at 8 bytes a lane, a quarter-warp at 16.
        assert_eq!(
            (s.shared_wavefronts.lds, s.shared_wavefronts.ldgsts),
            (2, 4)
        );
        // 0x10..=0x100 is 16 lines: less the 4 of the scalar arm and the @!PT one.
        assert_eq!(s.instructions, 16 - 4 - 1);
    }

    #[test]
    fn a_run_outside_the_hot_loop_counts_the_rest_once() {
        let f = &parse(LOOPS)[0];
        let hot = f.hot_loop().unwrap();
        let rest = f.once_outside(Some(&hot), Ifs::Taken);
        // MOV before the loop; the remainder loop's LDG, FFMA and BRA; EXIT; not the trap.
        assert_eq!(rest.instructions, 5);
        assert_eq!((rest.ldg, rest.ffma), (1, 1));
        let all = f.once_outside(None, Ifs::Taken);
        assert_eq!(
            all.instructions,
            rest.instructions + hot.summary.instructions
        );
        assert_eq!(
            parse("//---- .text.e ----\n")[0].once_outside(None, Ifs::Taken),
            Summary::default()
        );
    }

    /// A grid-stride loop, an epilogue loop loading as much, a shuffle whose fallback for a
    /// diverged warp and a 64-bit division's subroutine ptxas lays out after the last EXIT.
    const STREAM: &str = "//---- .text.s ----\n\
        .L_x_0:\n\
        \x20       /*0000*/                   LDG.E.128.CONSTANT R4, desc[UR6][R4.64] ;\n\
        \x20       /*0010*/                   FADD R0, R4, R0 ;\n\
        \x20       /*0020*/              @!P0 BRA `(.L_x_0) ;\n\
        \x20       /*0030*/               @P1 CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_u64) ;\n\
        \x20       /*0040*/                   BRA.DIV UR5, `(.L_x_2) ;\n\
        \x20       /*0050*/                   SHFL.DOWN PT, R2, R0, 0x1, 0x1f ;\n\
        .L_x_1:\n\
        \x20       /*0060*/                   LDG.E.STRONG.GPU R8, desc[UR6][R8.64] ;\n\
        \x20       /*0070*/                   LDG.E.STRONG.GPU R9, desc[UR6][R8.64+0x4] ;\n\
        \x20       /*0080*/                   LDG.E.STRONG.GPU R10, desc[UR6][R8.64+0x8] ;\n\
        \x20       /*0090*/                   LDG.E.STRONG.GPU R11, desc[UR6][R8.64+0xc] ;\n\
        \x20       /*00a0*/              @!P2 BRA `(.L_x_1) ;\n\
        .L_x_3:\n\
        \x20       /*00b0*/                   STG.E desc[UR6][R2.64], R0 ;\n\
        \x20       /*00c0*/                   EXIT ;\n\
        .L_x_2:\n\
        \x20       /*00d0*/                   WARPSYNC.COLLECTIVE R12, `(.L_x_4) ;\n\
        \x20       /*00e0*/                   SHFL.DOWN P0, R10, R13, R14, R15 ;\n\
        \x20       /*00f0*/                   ENDCOLLECTIVE ;\n\
        .L_x_4:\n\
        \x20       /*0100*/                   BRA `(.L_x_3) ;\n\
        \x20       /*0110*/                   IMAD.HI.U32 R10, R8, R9, RZ ;\n\
        \x20       /*0120*/                   RET.REL.NODEC R4 `(s) ;\n\
        .L_x_5:\n\
        \x20       /*0130*/                   BRA `(.L_x_5);\n";

    #[test]
    fn the_streaming_loop_is_the_first_that_loads_most_and_cold_code_is_left_out() {
        let f = &parse(STREAM)[0];
        let spans: Vec<(u64, u64)> = f.loops().iter().map(|l| (l.start, l.end)).collect();
        assert_eq!(
            spans,
            [(0x0, 0x20), (0x60, 0xa0)],
            "the fallback's branch back to the main path closes no loop"
        );
        let hot = f.streaming_loop().unwrap();
        assert_eq!((hot.start, hot.summary.ldg128), (0x0, 1));
        let rest = f.once_outside(Some(&hot), Ifs::Taken);
        // CALL, BRA.DIV, SHFL, the epilogue loop once (5 lines), STG, EXIT.
        assert_eq!(rest.instructions, 10);
        assert_eq!(rest.ldg, 4);
        // The shortest path: the same, no if in it.
        assert_eq!(f.once_outside(Some(&hot), Ifs::Skipped), rest);
        assert_eq!(parse(LOOPS)[0].streaming_loop().unwrap().label, ".L_x_1");
    }

    #[test]
    fn the_shortest_path_leaves_out_the_body_of_an_if_without_else() {
        let f = &parse(
            "//---- .text.t ----\n\
            \x20       /*0000*/                   S2R R0, SR_TID.X ;\n\
            \x20       /*0010*/               @P0 BRA `(.L_x_1) ;\n\
            \x20       /*0020*/                   LDS R1, [R0] ;\n\
            \x20       /*0030*/                   FADD R1, R1, R1 ;\n\
            \x20       /*0040*/                   STS [R0], R1 ;\n\
            .L_x_1:\n\
            \x20       /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n\
            \x20       /*0060*/                   EXIT ;\n",
        )[0];
        let taken = f.once_outside(None, Ifs::Taken);
        let skipped = f.once_outside(None, Ifs::Skipped);
        assert_eq!((taken.instructions, taken.lds, taken.sts), (7, 1, 1));
        assert_eq!((skipped.instructions, skipped.lds, skipped.sts), (4, 0, 0));
    }

    #[test]
    fn a_function_without_loops_or_math_has_no_hot_loop_but_its_biggest_loop() {
        let straight = "//---- .text.s ----\n        /*0000*/                   FFMA R1, R2, R3, R4 ;\n\
            \x20       /*0010*/                   EXIT ;\n";
        assert_eq!(parse(straight)[0].hot_loop(), None);
        let copy = "//---- .text.c ----\n.L_x_0:\n\
            \x20       /*0000*/                   LDG.E R1, desc[UR4][R2.64] ;\n\
            \x20       /*0010*/                   STG.E desc[UR4][R4.64], R1 ;\n\
            \x20       /*0020*/               @P0 BRA `(.L_x_0) ;\n\
            \x20       /*0030*/                   EXIT ;\n";
        let s = parse(copy)[0].inner_loop().unwrap();
        assert_eq!((s.instructions, s.ldg, s.stg), (3, 1, 1));
        assert_eq!((s.flop_fma, s.flop_tensor), (0, 0));
    }

    #[test]
    fn counts_flop_by_mma_shape_and_bytes_by_width() {
        let listing = "//---- .text.m ----\n\
            \x20       /*0000*/                   HMMA.1688.F32.TF32 R4, R8, R12, R4 ;\n\
            \x20       /*0010*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;\n\
            \x20       /*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8].tnspB, R24, gsb0 ;\n\
            \x20       /*0030*/                   HGMMA.64x256x16.F32.BF16 R24, R152, gdesc[UR4], R24 ;\n\
            \x20       /*0040*/                   HFMA2.MMA R10, -RZ, RZ, 0, 0 ;\n\
            \x20       /*0050*/                   HFMA2 R10, R1, R2, R10 ;\n\
            \x20       /*0060*/                   LDG.E.64 R2, desc[UR4][R2.64] ;\n\
            \x20       /*0070*/                   LDG.E.U16 R6, desc[UR4][R2.64] ;\n\
            \x20       /*0080*/                   LDSM.16.MT88.2 R8, [R9] ;\n\
            \x20       /*0090*/                   STS.64 [R1], R2 ;\n\
            \x20       /*00a0*/                   UTMALDG.2D [UR36], [UR6] ;\n";
        let s = parse(listing)[0].summary;
        let hgmma = 2 * 64 * 128 * 16 / 4 + 2 * 64 * 256 * 16 / 4;
        assert_eq!(s.flop_tf32, 2 * 16 * 8 * 8);
        assert_eq!(s.flop_tensor, 2 * 16 * 8 * 8 + 2 * 16 * 8 * 16 + hgmma);
        assert_eq!(s.flop_fma, 4 * 32, "HFMA2.MMA is a move");
        assert_eq!((s.hmma, s.hgmma, s.utmaldg), (2, 2, 1));
        assert_eq!((s.ldg, s.ldg64, s.ldg128), (2, 1, 0));
        assert_eq!(s.global_load_bytes, 32 * 8 + 32 * 2);
        // HGMMA reads A (unless in registers) and B from shared memory, a quarter per warp;
        // LDSM .2 two 128-byte matrices.
        let wgmma_smem = (64 * 16 * 2 + 128 * 16 * 2) / 4 + (256 * 16 * 2) / 4;
        assert_eq!(s.shared_load_bytes, wgmma_smem + 2 * 128);
        assert_eq!((s.sts64, s.shared_store_bytes), (1, 32 * 8));
        let w = s.shared_wavefronts;
        assert_eq!((w.wgmma, w.ldsm, w.sts), (wgmma_smem / 128, 2, 2));
        // FP8's warpgroup MMA is QGMMA: its FLOP are FP8's, its operands a byte an element.
        let fp8 = "//---- .text.m ----\n\
            \x20       /*0000*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], R24 ;\n";
        let s = parse(fp8)[0].summary;
        let flop = 2 * 64 * 128 * 32 / 4;
        assert_eq!((s.hgmma, s.flop_tensor, s.flop_fp8), (1, flop, flop));
        assert_eq!(s.shared_load_bytes, (64 * 32 + 128 * 32) / 4);
        // int8's mma.sync is IMMA: an HMMA-class instruction whose operations are int8's.
        let int8 = "//---- .text.m ----\n\
            \x20       /*0000*/                   IMMA.16832.S8.S8 R8, R4.reuse.ROW, R18.COL, R8 ;\n";
        let s = parse(int8)[0].summary;
        let ops = 2 * 16 * 8 * 32;
        assert_eq!(
            (s.hmma, s.flop_tensor, s.flop_int8, s.flop_fp8),
            (1, ops, ops, 0)
        );
    }

    #[test]
    fn follows_cuobjdump_branch_addresses() {
        let listing = "\t\tFunction : f\n\
            \x20       /*0000*/                   MOV R0, RZ ;  /* 0x0 */\n\
            \x20       /*0010*/                   FFMA R1, R2, R3, R1 ;  /* 0x0 */\n\
            \x20       /*0020*/               @P0 BRA 0x10 ;  /* 0x0 */\n\
            \x20       /*0030*/                   EXIT ;  /* 0x0 */\n";
        let hot = parse(listing)[0].hot_loop().unwrap();
        assert_eq!(
            (hot.label.as_str(), hot.start, hot.end),
            ("0x10", 0x10, 0x20)
        );
        assert_eq!(hot.summary.instructions, 2);
    }
}
