//! The SASS of a kernel: what the GPU actually executes, disassembled from the CUBIN that NVRTC
//! writes, with a count of the instructions the ladder's lessons are about (FFMA and HMMA;
//! global, shared and local memory; 128-bit and read-only loads). Needs NVRTC and `nvdisasm`
//! or `cuobjdump` (both from `tools/install-cuda-tools.sh`, or a CUDA toolkit), not a GPU.
//!
//! A rung's header comment says what it changes; the SASS says whether the compiler had
//! already done it (unrolling, vector loads, read-only loads) in the rung before.

use kernel::CudaPlan;
use kernel::cuda::discovery::discovery;
use kernel::cuda::nvrtc;
use std::fmt;
use std::path::PathBuf;
use std::process::Command;
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
    /// in errors.
    pub fn disassemble(&self, cubin: &[u8], label: &str) -> Result<String, SassError> {
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
    pub hmma: u32,
    /// Hopper warpgroup MMA (`HGMMA`, from `wgmma.mma_async`).
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
}

impl Summary {
    fn add(&mut self, opcode: &str) {
        if opcode == "NOP" {
            return; // padding after the last EXIT
        }
        self.instructions += 1;
        let mut parts = opcode.split('.');
        let base = parts.next().unwrap_or("");
        let mods: Vec<&str> = parts.collect();
        let wide = mods.contains(&"128");
        match base {
            "FFMA" => self.ffma += 1,
            "HMMA" => self.hmma += 1,
            "HGMMA" => self.hgmma += 1,
            "LDGSTS" => self.ldgsts += 1,
            "LDG" => {
                self.ldg += 1;
                self.ldg128 += u32::from(wide);
                self.ldg_constant += u32::from(mods.contains(&"CONSTANT"));
            }
            "STG" => {
                self.stg += 1;
                self.stg128 += u32::from(wide);
            }
            "LDS" => {
                self.lds += 1;
                self.lds128 += u32::from(wide);
            }
            "LDSM" => self.ldsm += 1,
            "STS" => {
                self.sts += 1;
                self.sts128 += u32::from(wide);
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

/// The opcode of a SASS instruction line (`/*0040*/  @!P0 LDG.E.128 R4, ...`), if it is one,
/// and whether it is predicated off for good (`@!PT`: never executes; the compiler leaves such
/// lines as placeholders, e.g. after `cp.async` sequences, and they must not be counted).
fn instruction(line: &str) -> Option<(&str, bool)> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let first = words.next()?;
    let (op, never) = if first.starts_with('@') {
        (words.next()?, first == "@!PT")
    } else {
        (first, false)
    };
    let op = op.trim_end_matches(';');
    op.chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        .then_some((op, never))
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
        if let Some((op, never)) = instruction(t) {
            if !never {
                f.summary.add(op);
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
        let functions = parse(&tool.disassemble(&compiled.cubin, &file)?);
        let symbol = compiled.symbol(&l.entry);
        let function = functions
            .into_iter()
            .find(|f| f.name == symbol)
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
    let mut functions = parse(&tool.disassemble(&compiled.cubin, &file)?);
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
}
