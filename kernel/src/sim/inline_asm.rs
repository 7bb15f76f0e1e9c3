//! Inline PTX in kernel sources. Public tensor-core kernels write `mma.sync`, `ldmatrix` and
//! `cp.async` as `asm volatile("...": outputs: inputs)` statements, and their memory
//! accesses (`ld`, `st`, `atom`, `red`, fences; `memory.rs`) often too. Each such statement is
//! read instruction by instruction, its operands typed by their constraints (`"r"` 32-bit,
//! `"l"` 64-bit, `"h"` 16-bit, `"f"` float, `"n"` immediate), and rewritten into calls of the
//! simulator's emulation (`sim_asm.h`, which runs the same code as `lab/ptx.h`'s bodies);
//! Hopper's `mbarrier`, TMA, `wgmma` and cluster instructions ([`hopper`]) run the emulation
//! of `lab/hopper.h`'s bodies, and labels with `bra` become C++ labels local to the
//! statement. Anything else is refused, naming the instruction with its file and line.

use std::collections::HashMap;
use std::fmt;

mod arithmetic;
mod conditional;
mod hopper;
mod memory;

/// An `asm` statement the simulator cannot run: where, which instruction, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub file: String,
    pub line: usize,
    pub instruction: String,
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: inline PTX `{}`: {}",
            self.file, self.line, self.instruction, self.why
        )
    }
}

/// `false` for `e4m3`, `true` for `e5m2` (the emulation's flag for E5M2): an 8-bit float type.
fn fp8_kind(ty: &str) -> Option<bool> {
    match ty {
        "e4m3" => Some(false),
        "e5m2" => Some(true),
        _ => None,
    }
}

/// `false` for `s8`, `true` for `u8` (the emulation's flag for unsigned): an 8-bit integer
/// operand of the integer mma.
fn int8_kind(ty: &str) -> Option<bool> {
    match ty {
        "s8" => Some(false),
        "u8" => Some(true),
        _ => None,
    }
}

/// What the front end accepts, for refusals.
const EMULATED: &str = "the simulator runs inline mma.sync (m16n8k16 and m16n8k8 f16/bf16 \
     with f32 or f16 accumulators, m16n8k8 tf32, m16n8k32 e4m3/e5m2, m16n8k32 and m16n8k16 s8/u8 \
     with s32 accumulators), wmma m16n16k16 f16/bf16 (load, mma, store), ldmatrix, stmatrix, cp.async (ca/cg, commit_group, \
     wait_group, wait_all), ld, st, atom, red, fence, membar, prefetch, cvta, cvt, mov, setp, \
     selp, shfl.sync, elect.sync, activemask, integer and floating-point arithmetic (add, mul, fma, ex2, \
     lop3, prmt, ...), Hopper's mbarrier, cp.async.bulk (plain and 1-5D tensor loads and \
     stores, bulk groups), cp.reduce.async.bulk into global memory, wgmma, setmaxnreg, barrier.cluster, named barriers (bar.sync and \
     bar.arrive with an id) and mapa, each under an optional @p guard, and labels with bra";

/// `code` (comments removed) with every `asm` statement replaced by the emulation's calls,
/// line breaks kept so that compiler messages keep their lines; `None` when it has no `asm`.
/// `file` names the source where no `#line` directive says otherwise. A statement the
/// emulation does not run becomes a call that fails the launch reaching it
/// ([`reached_refusal`]); one the front end cannot read (at file scope, operands it cannot
/// parse) refuses the whole source.
pub fn rewrite(code: &str, file: &str) -> Result<Option<String>, Refusal> {
    rewrite_as(code, file, true)
}

/// [`rewrite`], each statement the simulator does not run refused at once where `defer` is
/// false (the front end's tests read the refusals so).
fn rewrite_as(code: &str, file: &str, defer: bool) -> Result<Option<String>, Refusal> {
    let lines = LineMap::new(code, file);
    let b = code.as_bytes();
    let (mut out, mut last, mut any) = (String::new(), 0, false);
    let (mut i, mut depth, mut in_define) = (0, 0i32, false);
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if line_start && c == b'#' {
            // Directives are skipped (an `#include <asm/...>` is no statement), except the
            // bodies of macros, where public code often keeps its `asm` wrappers.
            let (end, word) = ident(b, skip_blanks(b, i + 1));
            if word == b"define" {
                in_define = true;
                i = end;
            } else {
                i = end_of_directive(b, i);
            }
            continue;
        }
        match c {
            b'\n' => {
                line_start = true;
                if i == 0 || b[i - 1] != b'\\' {
                    in_define = false;
                }
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            _ => line_start = false,
        }
        match c {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'{' => {
                depth += 1;
                i += 1;
            }
            b'}' => {
                depth -= 1;
                i += 1;
            }
            c if is_ident(c) => {
                let (end, word) = ident(b, i);
                let is_asm = matches!(word, b"asm" | b"__asm__" | b"__asm");
                if !is_asm || (i > 0 && is_ident(b[i - 1])) {
                    i = end;
                    continue;
                }
                let refuse = |why: &str| {
                    let (file, line) = lines.at(i);
                    Refusal {
                        file,
                        line,
                        instruction: "asm".into(),
                        why: why.into(),
                    }
                };
                if depth <= 0 && !in_define {
                    return Err(refuse(
                        "asm at file scope (PTX directives) cannot be simulated",
                    ));
                }
                if let Some(chain) = conditional::chain(code, end).map_err(|why| refuse(&why))? {
                    out.push_str(&code[last..i]);
                    out.push_str(&conditional::rewrite(code, end, &chain, &lines)?);
                    last = chain.end;
                    i = chain.end;
                    any = true;
                    continue;
                }
                let stmt = parse_statement(code, end).map_err(|why| refuse(&why))?;
                // A statement the simulator does not run fails the launch that reaches it,
                // not the file: a helper or macro no kernel calls is no reason to refuse one.
                let generated = match generate(&stmt, &lines) {
                    Err(r) if defer => refused_at_run(&r),
                    other => other?,
                };
                out.push_str(&code[last..i]);
                out.push_str(&generated);
                // The statement's line breaks, continued as they were (inside a macro too).
                for (k, _) in code[i..stmt.end].match_indices('\n') {
                    out.push_str(if code.as_bytes()[i + k - 1] == b'\\' {
                        "\\\n"
                    } else {
                        "\n"
                    });
                }
                last = stmt.end;
                i = stmt.end;
                any = true;
            }
            _ => i += 1,
        }
    }
    if !any {
        return Ok(None);
    }
    out.push_str(&code[last..]);
    Ok(Some(out))
}

/// What stands for a statement the simulator does not run: a call that fails the launch with
/// the refusal (the list of what is emulated shortened to a mark, for the launch's message
/// buffer; [`reached_refusal`] restores it).
fn refused_at_run(r: &Refusal) -> String {
    let text = r.to_string().replace(EMULATED, EMULATED_MARK);
    let mut lit = String::new();
    for b in text.bytes() {
        match b {
            b'"' | b'\\' => {
                lit.push('\\');
                lit.push(b as char);
            }
            b' '..=b'~' => lit.push(b as char),
            _ => lit.push_str(&format!("\\{b:03o}")),
        }
    }
    format!("do {{ ::sim::inline_ptx::not_simulated(\"{lit}\"); }} while (0)")
}

const EMULATED_MARK: &str = "(what the simulator runs)";

/// The refusal a launch's failure `message` carries when it reached inline PTX the simulator
/// does not run ([`refused_at_run`]), as a row's reason: "not simulated: FILE:LINE: ...".
pub fn reached_refusal(message: &str) -> Option<String> {
    let at = message.find("not simulated: ")?;
    Some(message[at..].replace(EMULATED_MARK, EMULATED))
}

// ---- Lexing the C++ around the statement ----

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn ident(b: &[u8], i: usize) -> (usize, &[u8]) {
    let mut j = i;
    while j < b.len() && is_ident(b[j]) {
        j += 1;
    }
    (j, &b[i..j])
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// Past white space, backslash-newlines (a statement in a macro) included.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
            i += 2;
        } else {
            break;
        }
    }
    i
}

/// The end of a preprocessor directive (its line, with backslash continuations).
fn end_of_directive(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if b[i] == b'\n' && b[i - 1] != b'\\' {
            return i;
        }
        i += 1;
    }
    i
}

/// Past the string or character literal starting at `i`.
fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(b.len())
}

/// Maps byte offsets to the file and line a compiler would name, following `#line`.
struct LineMap {
    /// (offset of a line's start, its file, its number), in order.
    starts: Vec<(usize, String, usize)>,
}

impl LineMap {
    fn new(code: &str, file: &str) -> Self {
        let (mut file, mut line) = (file.to_string(), 1);
        let mut starts = Vec::new();
        let mut at = 0;
        for text in code.split_inclusive('\n') {
            starts.push((at, file.clone(), line));
            at += text.len();
            line += 1;
            let t = text.trim_start();
            let rest = t
                .strip_prefix("#line")
                .or_else(|| t.strip_prefix('#').filter(|r| r.starts_with(' ')));
            if let Some(rest) = rest
                && let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok())
            {
                line = n;
                if let (Some(open), Some(close)) = (rest.find('"'), rest.rfind('"'))
                    && close > open
                {
                    file = rest[open + 1..close].to_string();
                }
            }
        }
        Self { starts }
    }

    fn at(&self, offset: usize) -> (String, usize) {
        let k = self.starts.partition_point(|s| s.0 <= offset);
        self.starts
            .get(k.saturating_sub(1))
            .map_or((String::new(), 1), |(_, file, line)| (file.clone(), *line))
    }
}

// ---- The statement ----

/// An operand of the statement: `[name] "constraint" (expression)`.
#[derive(Debug)]
struct Operand {
    name: Option<String>,
    constraint: String,
    expr: String,
    output: bool,
}

impl Operand {
    /// The constraint's letter: `r`, `l`, `h`, `f`, `d` or `n`.
    fn letter(&self) -> char {
        self.constraint
            .chars()
            .find(|c| c.is_ascii_alphanumeric())
            .unwrap_or('?')
    }
    fn in_out(&self) -> bool {
        self.constraint.contains('+')
    }
    fn kind(&self) -> Kind {
        match self.letter() {
            'h' => Kind::B16,
            'r' | 'f' => Kind::B32,
            'l' | 'd' => Kind::B64,
            _ => Kind::Imm,
        }
    }
}

#[derive(Debug)]
struct Statement {
    /// Past the closing parenthesis.
    end: usize,
    /// The template's characters, each with the offset in the source it came from.
    template: Vec<(char, usize)>,
    operands: Vec<Operand>,
}

/// Parses `volatile? ( "template" : outputs : inputs : clobbers )` from `i` (after `asm`).
fn parse_statement(code: &str, mut i: usize) -> Result<Statement, String> {
    let b = code.as_bytes();
    loop {
        i = skip_ws(b, i);
        let (end, word) = ident(b, i);
        match word {
            b"volatile" | b"__volatile__" | b"inline" => i = end,
            b"goto" => return Err("asm goto (jumps to C++ labels) cannot be simulated".into()),
            _ => break,
        }
    }
    if b.get(i) != Some(&b'(') {
        return Err("cannot read this asm statement (expected `(` after asm)".into());
    }
    i += 1;
    let (template, next) = string_pieces(code, i)?;
    // An empty template ("") is a compiler barrier on its operands: nothing to run.
    if template.is_empty() && next == skip_ws(b, i) {
        return Err(
            "the template is not a string literal (a macro building it cannot be read)".into(),
        );
    }
    i = next;
    let mut operands = Vec::new();
    let mut section = 0;
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b')') => {
                return Ok(Statement {
                    end: i + 1,
                    template,
                    operands,
                });
            }
            Some(b':') => {
                section += 1;
                i += 1;
            }
            Some(b',') => i += 1,
            Some(b'[') | Some(b'"') if section <= 2 => {
                let mut name = None;
                if b[i] == b'[' {
                    let close = code[i..].find(']').ok_or("unterminated [name]")? + i;
                    name = Some(code[i + 1..close].trim().to_string());
                    i = skip_ws(b, close + 1);
                }
                let (constraint, next) = string_pieces(code, i)?;
                let constraint: String = constraint.into_iter().map(|(c, _)| c).collect();
                i = skip_ws(b, next);
                if b.get(i) != Some(&b'(') {
                    return Err(format!(
                        "cannot read the operand with constraint \"{constraint}\""
                    ));
                }
                let close = matching_paren(b, i).ok_or("unbalanced parentheses in an operand")?;
                if section == 0 {
                    return Err("operand before the template's end".into());
                }
                operands.push(Operand {
                    name,
                    expr: code[i + 1..close].to_string(),
                    output: section == 1,
                    constraint,
                });
                i = close + 1;
            }
            Some(b'"') => {
                // Clobbers ("memory", "cc"): nothing to emulate.
                let (_, next) = string_pieces(code, i)?;
                i = next;
            }
            _ => return Err("cannot read this asm statement's operands".into()),
        }
    }
}

fn matching_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' | b'\'' => {
                i = skip_literal(b, i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Adjacent string literals from `i`, unescaped, each character with its source offset.
fn string_pieces(code: &str, mut i: usize) -> Result<(Vec<(char, usize)>, usize), String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    loop {
        i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return Ok((out, i));
        }
        let mut j = i + 1;
        let chars: Vec<(usize, char)> = code[j..].char_indices().map(|(k, c)| (j + k, c)).collect();
        let mut k = 0;
        loop {
            let Some(&(at, c)) = chars.get(k) else {
                return Err("unterminated string in the asm statement".into());
            };
            match c {
                '"' => {
                    j = at + 1;
                    break;
                }
                '\\' => {
                    let Some(&(_, e)) = chars.get(k + 1) else {
                        return Err("unterminated escape in the asm template".into());
                    };
                    let v = match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        other => other,
                    };
                    out.push((v, at));
                    k += 2;
                }
                c => {
                    out.push((c, at));
                    k += 1;
                }
            }
        }
        i = j;
    }
}

// ---- PTX ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    B16,
    B32,
    B64,
    Pred,
    Imm,
}

impl Kind {
    fn bits(self) -> &'static str {
        match self {
            Kind::B16 => "16",
            Kind::B32 => "32",
            Kind::B64 => "64",
            Kind::Pred => "predicate",
            Kind::Imm => "immediate",
        }
    }
    fn c_type(self) -> &'static str {
        match self {
            Kind::B16 => "uint16_t",
            Kind::B32 => "uint32_t",
            Kind::B64 => "uint64_t",
            Kind::Pred => "bool",
            Kind::Imm => "long long",
        }
    }
}

#[derive(Clone, Debug)]
enum Opnd {
    /// `%N` or `%[name]`: the statement's operand N.
    Ref(usize),
    /// A register declared with `.reg` in the template.
    Local(String),
    Imm(String),
    Special(String),
    Vector(Vec<Opnd>),
    /// `[base]` or `[base+offset]`.
    Mem(Box<Opnd>, i64),
    /// `d|p` (shfl.sync's optional predicate).
    Pair(Box<Opnd>, Box<Opnd>),
    /// `_`: a result nobody reads.
    Sink,
}

/// One PTX statement of the template and where it starts in the source.
struct Ptx {
    text: String,
    at: usize,
}

/// Splits the template into statements at `;` (braces that open a scope are dropped, those
/// of a vector operand kept); `%%` becomes `%`; comments (`// ...` to the line's end,
/// `/* ... */`), which ptxas takes as whitespace, are dropped.
fn ptx_statements(template: &[(char, usize)]) -> Vec<Ptx> {
    let mut out = Vec::new();
    let (mut cur, mut at, mut vec_depth) = (String::new(), None, 0);
    let mut finish = |cur: &mut String, at: &mut Option<usize>| {
        if !cur.trim().is_empty() {
            out.push(Ptx {
                text: cur.trim().to_string(),
                at: at.unwrap_or(0),
            });
        }
        cur.clear();
        *at = None;
    };
    let mut k = 0;
    while k < template.len() {
        let (c, off) = template[k];
        match c {
            '%' if template.get(k + 1).map(|t| t.0) == Some('%') => {
                cur.push('%');
                k += 1;
            }
            '/' if template.get(k + 1).map(|t| t.0) == Some('/') => {
                while template.get(k + 1).is_some_and(|t| t.0 != '\n') {
                    k += 1;
                }
                cur.push(' ');
            }
            '/' if template.get(k + 1).map(|t| t.0) == Some('*') => {
                k += 2;
                while k < template.len()
                    && !(template[k].0 == '*' && template.get(k + 1).map(|t| t.0) == Some('/'))
                {
                    k += 1;
                }
                k += 1;
                cur.push(' ');
            }
            '{' if cur.trim().is_empty() => {}
            '{' => {
                vec_depth += 1;
                cur.push(c);
            }
            '}' if vec_depth > 0 => {
                vec_depth -= 1;
                cur.push(c);
            }
            '}' => finish(&mut cur, &mut at),
            ';' if vec_depth == 0 => finish(&mut cur, &mut at),
            c if c.is_whitespace() => cur.push(' '),
            c => {
                at.get_or_insert(off);
                cur.push(c);
            }
        }
        k += 1;
    }
    finish(&mut cur, &mut at);
    out
}

/// Splits at commas outside braces and brackets.
fn split_operands(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Generates the C++ for one statement: its operands' temporaries, each PTX instruction, and
/// the outputs written back, on one line.
fn generate(stmt: &Statement, lines: &LineMap) -> Result<String, Refusal> {
    let mut g = Gen {
        ops: &stmt.operands,
        locals: HashMap::new(),
        labels: Vec::new(),
        targets: Vec::new(),
        code: String::new(),
        by_address: Vec::new(),
    };
    let first_line = stmt.template.first().map_or(0, |t| t.1);
    let refuse = |at: usize, instruction: &str, why: String| {
        let (file, line) = lines.at(at);
        Refusal {
            file,
            line,
            instruction: instruction.to_string(),
            why,
        }
    };
    for p in ptx_statements(&stmt.template) {
        // The instruction's name, after its guard if it has one.
        let opcode = p
            .text
            .split_whitespace()
            .find(|w| !w.starts_with('@'))
            .unwrap_or("")
            .to_string();
        g.statement(&p.text)
            .map_err(|why| refuse(p.at, &opcode, why))?;
    }
    if let Some(n) = g.by_address.iter().find(|&&n| names_operand(&g.code, n)) {
        return Err(refuse(
            first_line,
            "wgmma.mma_async",
            format!(
                "operand {n} is an accumulator of a wgmma and is also used by another \
                 instruction of the statement; the simulator needs the accumulators to be \
                 the wgmma's alone (put the other instruction in a statement of its own)"
            ),
        ));
    }
    let mut pre = String::from("do { ");
    for (n, op) in stmt.operands.iter().enumerate() {
        if g.by_address.contains(&n) {
            continue;
        }
        let expr = &op.expr;
        let decl = match (op.letter(), op.output, op.in_out()) {
            ('n', false, _) => format!("const long long _k{n} = (long long)({expr}); "),
            ('r' | 'l' | 'h', false, _) | ('r' | 'l' | 'h', true, true) => {
                let t = op.kind().c_type();
                format!(
                    "{t} _k{n} = ::sim::inline_ptx::bits_of<{t}>({expr}, \"{}\"); ",
                    op.constraint.escape_default()
                )
            }
            ('f', false, _) | ('f', true, true) => {
                format!("uint32_t _k{n} = ::sim::inline_ptx::f32_bits({expr}); ")
            }
            ('d', false, _) | ('d', true, true) => {
                format!("uint64_t _k{n} = ::sim::inline_ptx::f64_bits({expr}); ")
            }
            ('r' | 'l' | 'h' | 'f' | 'd', true, false) => {
                format!("{} _k{n} = 0; ", op.kind().c_type())
            }
            _ => {
                return Err(refuse(
                    first_line,
                    "asm",
                    format!(
                        "operand {n} has constraint \"{}\"; the simulator reads \"r\", \"l\", \"h\", \
                         \"f\", \"d\" and \"n\" operands",
                        op.constraint
                    ),
                ));
            }
        };
        pre.push_str(&decl);
    }
    if let Some(t) = g.targets.iter().find(|t| !g.labels.contains(t)) {
        return Err(refuse(
            first_line,
            "bra",
            format!("the branch target {t} is no label of the statement"),
        ));
    }
    if !g.labels.is_empty() {
        // GNU local labels: scoped to this statement, so a wrapper inlined twice in one
        // function (or a macro used twice) does not define a label twice.
        let names: Vec<String> = g.labels.iter().map(|l| label_name(l)).collect();
        pre.insert_str("do { ".len(), &format!("__label__ {}; ", names.join(", ")));
    }
    let mut post = String::new();
    for (n, op) in stmt.operands.iter().enumerate() {
        if !op.output || g.by_address.contains(&n) {
            continue;
        }
        let f = match op.letter() {
            'f' => "set_f32",
            'd' => "set_f64",
            _ => "set_bits",
        };
        post.push_str(&format!("::sim::inline_ptx::{f}({}, _k{n}); ", op.expr));
    }
    Ok(format!("{pre}{}{post}}} while (0)", g.code))
}

struct Gen<'a> {
    ops: &'a [Operand],
    /// `.reg` declarations: name and kind.
    locals: HashMap<String, Kind>,
    /// Labels defined, and branch targets named, in the statement.
    labels: Vec<String>,
    targets: Vec<String>,
    code: String,
    /// Operands an instruction reads and writes in place, through their address (wgmma's
    /// accumulators, which it writes at the wait that completes it): not copied in before
    /// the statement nor written back after it, which would touch them while the wgmma is
    /// in flight.
    by_address: Vec<usize>,
}

/// Whether generated `code` uses operand `n`'s temporary (`_k3`, not a prefix of `_k31`).
fn names_operand(code: &str, n: usize) -> bool {
    let name = format!("_k{n}");
    code.match_indices(&name).any(|(at, _)| {
        !code[at + name.len()..].starts_with(|c: char| c.is_ascii_digit())
            && !code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A PTX label as a C++ one; `%=` (the compiler's number of the asm instance, which makes
/// labels unique on a GPU) is dropped, the labels being local to the statement here.
fn label_name(name: &str) -> String {
    local_name(&name.replace("%=", "")).replacen("_kr_", "_kl_", 1)
}

fn local_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("_kr_{clean}")
}

impl Gen<'_> {
    fn statement(&mut self, text: &str) -> Result<(), String> {
        if let Some(guarded) = text.strip_prefix('@') {
            return self.guarded(guarded);
        }
        let (opcode, rest) = text
            .split_once(' ')
            .map_or((text, ""), |(a, b)| (a, b.trim()));
        if let Some(label) = opcode.strip_suffix(':') {
            if self.labels.iter().any(|l| l == label) {
                return Err(format!("the label {label} is defined twice"));
            }
            self.labels.push(label.to_string());
            self.code.push_str(&format!("{}:; ", label_name(label)));
            return if rest.is_empty() {
                Ok(())
            } else {
                self.statement(rest)
            };
        }
        match opcode.split('.').next() {
            Some("bra") => {
                if !matches!(opcode, "bra" | "bra.uni") || rest.contains(',') || rest.is_empty() {
                    return Err(format!(
                        "{opcode} {rest}: bra and bra.uni to a label are emulated"
                    ));
                }
                self.targets.push(rest.to_string());
                self.code.push_str(&format!("goto {}; ", label_name(rest)));
                return Ok(());
            }
            Some("brx" | "call" | "ret" | "exit") => {
                return Err(format!(
                    "calls, returns and indirect branches are not emulated; {EMULATED}"
                ));
            }
            _ => {}
        }
        if text.contains("%=") {
            return Err("%= outside a label is not emulated".into());
        }
        if opcode == ".reg" {
            return self.declare(rest);
        }
        if opcode.starts_with("cp.async.bulk") {
            let parts: Vec<&str> = opcode.split('.').collect();
            return self.bulk_tensor(&parts, rest);
        }
        if opcode.starts_with("cp.reduce.async.bulk") {
            let parts: Vec<&str> = opcode.split('.').collect();
            return self.bulk_reduce(&parts, rest);
        }
        let operands: Vec<Opnd> = split_operands(rest)
            .iter()
            .map(|o| self.operand(o))
            .collect::<Result<_, _>>()?;
        let parts: Vec<&str> = opcode.split('.').collect();
        match parts[0] {
            "ld" | "st" => self.ld_st(&parts, &operands, opcode),
            "atom" | "red" => self.atom(&parts, &operands, opcode),
            "fence" | "membar" => self.fence(&parts, &operands),
            "prefetch" | "prefetchu" => self.prefetch(&parts, &operands),
            "setp" => self.setp(&parts, &operands),
            "add" | "sub" | "mul" | "mad" | "fma" | "div" | "min" | "max" | "neg" | "abs"
            | "and" | "or" | "xor" | "not" | "shl" | "shr" | "popc" | "clz" | "brev" | "bfe"
            | "lop3" | "prmt" | "shf" | "ex2" | "lg2" | "sin" | "cos" | "tanh" | "rcp"
            | "rsqrt" | "sqrt" => self.arithmetic(&parts, &operands),
            "mma" => self.mma(&parts, &operands),
            "wmma" => self.wmma(&parts, &operands),
            "ldmatrix" | "stmatrix" => self.ldmatrix(&parts, &operands),
            "cp" if parts.get(1) == Some(&"async") => self.cp_async(&parts, &operands),
            "mbarrier" => self.mbarrier(&parts, &operands),
            "wgmma" => self.wgmma(&parts, &operands),
            "setmaxnreg" => self.setmaxnreg(&parts, &operands),
            "barrier" | "bar" => self.barrier(&parts, &operands),
            "mapa" => self.mapa(&parts, &operands),
            "cvta" => self.cvta(&parts, &operands),
            "cvt" => self.cvt(&parts, &operands),
            "mov" => self.mov(&parts, &operands),
            "selp" => self.selp(&parts, &operands),
            "shfl" => self.shfl(&parts, &operands),
            "elect" => self.elect(&parts, &operands),
            "activemask" => self.activemask(&parts, &operands),
            _ => Err(format!("not emulated; {EMULATED}")),
        }
    }

    /// `@p instruction` or `@!p instruction`: the instruction runs where the predicate (a
    /// `.reg .pred` of the statement) is true, or false.
    fn guarded(&mut self, text: &str) -> Result<(), String> {
        let (guard, rest) = text
            .split_once(' ')
            .ok_or_else(|| format!("cannot read the guarded instruction @{text}"))?;
        let (negate, name) = guard.strip_prefix('!').map_or(("", guard), |n| ("!", n));
        if self.locals.get(name) != Some(&Kind::Pred) {
            return Err(format!(
                "the guard @{guard} must name a .pred register declared in the statement"
            ));
        }
        let start = self.code.len();
        self.statement(rest.trim())?;
        let body = self.code.split_off(start);
        self.code
            .push_str(&format!("if ({negate}{}) {{ {body}}} ", local_name(name)));
        Ok(())
    }

    fn declare(&mut self, rest: &str) -> Result<(), String> {
        let (ty, names) = rest
            .split_once(' ')
            .ok_or_else(|| format!("cannot read `.reg {rest}`"))?;
        let kind = match ty {
            ".pred" => Kind::Pred,
            ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => Kind::B16,
            ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => Kind::B32,
            ".b64" | ".u64" | ".s64" | ".f64" => Kind::B64,
            _ => return Err(format!("registers of type {ty} are not emulated")),
        };
        for name in names.split(',').map(str::trim) {
            if name.contains('<') {
                return Err(format!(
                    "parameterized register declarations ({name}) are not emulated"
                ));
            }
            if self.locals.insert(name.to_string(), kind).is_none() {
                self.code
                    .push_str(&format!("{} {} = 0; ", kind.c_type(), local_name(name)));
            }
        }
        Ok(())
    }

    fn operand(&self, s: &str) -> Result<Opnd, String> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            let mut v: Vec<Opnd> = split_operands(inner)
                .iter()
                .map(|o| self.operand(o))
                .collect::<Result<_, _>>()?;
            // One register in braces is that register, as ptxas reads it (`ld.shared.u32
            // {%0}, [%1]`); a vector of one is taken where one is wanted ([`Self::vector`]).
            return Ok(match v.len() {
                1 => v.remove(0),
                _ => Opnd::Vector(v),
            });
        }
        if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let (base, off) = match inner.rfind(['+', '-']).filter(|&k| k > 0) {
                Some(k) => {
                    let off: i64 = parse_int(inner[k + 1..].trim())
                        .ok_or_else(|| format!("cannot read the address [{inner}]"))?;
                    let off = if inner.as_bytes()[k] == b'-' {
                        -off
                    } else {
                        off
                    };
                    (inner[..k].trim(), off)
                }
                None => (inner.trim(), 0),
            };
            return Ok(Opnd::Mem(Box::new(self.operand(base)?), off));
        }
        if let Some((d, p)) = s.split_once('|') {
            return Ok(Opnd::Pair(
                Box::new(self.operand(d)?),
                Box::new(self.operand(p)?),
            ));
        }
        if s == "_" {
            return Ok(Opnd::Sink);
        }
        if self.locals.contains_key(s) {
            return Ok(Opnd::Local(s.to_string()));
        }
        if let Some(r) = s.strip_prefix('%') {
            if let Ok(n) = r.parse::<usize>() {
                return if n < self.ops.len() {
                    Ok(Opnd::Ref(n))
                } else {
                    Err(format!(
                        "%{n} names no operand (the statement has {})",
                        self.ops.len()
                    ))
                };
            }
            if let Some(name) = r.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
                return self
                    .ops
                    .iter()
                    .position(|o| o.name.as_deref() == Some(name))
                    .map(Opnd::Ref)
                    .ok_or_else(|| format!("%[{name}] names no operand"));
            }
            return Ok(Opnd::Special(s.to_string()));
        }
        if s.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            if let Some(hex) = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F")) {
                let bits = u32::from_str_radix(hex, 16)
                    .map_err(|_| format!("cannot read the float immediate {s}"))?;
                return Ok(Opnd::Imm(format!("{bits}u")));
            }
            let v = parse_int(s).ok_or_else(|| format!("cannot read the immediate {s}"))?;
            return Ok(Opnd::Imm(format!("{v}ll")));
        }
        Err(format!(
            "`{s}` is no operand, declared register or immediate"
        ))
    }

    fn kind(&self, op: &Opnd) -> Kind {
        match op {
            Opnd::Ref(n) => self.ops[*n].kind(),
            Opnd::Local(name) => self.locals[name],
            Opnd::Special(name) if special_is_64_bit(name) => Kind::B64,
            Opnd::Special(_) => Kind::B32,
            _ => Kind::Imm,
        }
    }

    /// The C++ value of an input operand, as `want` bits.
    fn read(&self, op: &Opnd, want: Kind, role: &str) -> Result<String, String> {
        let have = self.kind(op);
        let expr = match op {
            Opnd::Ref(n) => format!("_k{n}"),
            Opnd::Local(name) => local_name(name),
            Opnd::Imm(v) => v.clone(),
            Opnd::Special(name) => special(name)?,
            _ => return Err(format!("{role} must be a register or an immediate")),
        };
        if have != want && have != Kind::Imm && want != Kind::Imm {
            return Err(format!(
                "{role} is a {}-bit operand{}; the instruction takes {} bits",
                have.bits(),
                self.constraint_note(op),
                want.bits()
            ));
        }
        if want == Kind::Imm && have != Kind::Imm {
            return Err(format!(
                "{role} must be an immediate (an \"n\" operand or a literal)"
            ));
        }
        Ok(format!("({})({expr})", want.c_type()))
    }

    /// The C++ lvalue of an output operand of `want` bits (`None` for `_`).
    fn write(&self, op: &Opnd, want: Kind, role: &str) -> Result<Option<String>, String> {
        let (expr, have) = match op {
            Opnd::Sink => return Ok(None),
            Opnd::Ref(n) if self.ops[*n].output => (format!("_k{n}"), self.kind(op)),
            Opnd::Local(name) => (local_name(name), self.locals[name]),
            Opnd::Ref(n) => {
                return Err(format!(
                    "{role} is written, but %{n} is an input operand (its constraint needs `=`)"
                ));
            }
            _ => return Err(format!("{role} must be a register")),
        };
        if have != want {
            return Err(format!(
                "{role} is a {}-bit operand{}; the instruction writes {} bits",
                have.bits(),
                self.constraint_note(op),
                want.bits()
            ));
        }
        Ok(Some(expr))
    }

    fn constraint_note(&self, op: &Opnd) -> String {
        match op {
            Opnd::Ref(n) => format!(" (%{n}, constraint \"{}\")", self.ops[*n].constraint),
            _ => String::new(),
        }
    }

    fn vector<'o>(&self, op: &'o Opnd, len: usize, role: &str) -> Result<&'o [Opnd], String> {
        match op {
            Opnd::Vector(v) if v.len() == len => Ok(v),
            // `{%0}`, read as the register itself.
            o if len == 1 && !matches!(o, Opnd::Vector(_)) => Ok(std::slice::from_ref(o)),
            _ => Err(format!("{role} must be a vector of {len} registers")),
        }
    }

    fn count(operands: &[Opnd], n: usize) -> Result<(), String> {
        if operands.len() == n {
            Ok(())
        } else {
            Err(format!("takes {n} operands; {} given", operands.len()))
        }
    }

    fn mma(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let tail = parts[1..].join(".");
        // FP8 (sm_89): m16n8k32, four elements a register, E4M3 and E5M2 mixed as written.
        let fp8 = match parts[1..] {
            [
                "sync",
                "aligned",
                "m16n8k32",
                "row",
                "col",
                "f32",
                ta,
                tb,
                "f32",
            ] => fp8_kind(ta).zip(fp8_kind(tb)),
            _ => None,
        };
        // Integers (sm_80): s8/u8 operands, s32 accumulators, `.satfinite` or wrapping;
        // m16n8k16 is m16n8k32's first half.
        let int8 = match parts[1..] {
            [
                "sync",
                "aligned",
                shape @ ("m16n8k32" | "m16n8k16"),
                "row",
                "col",
                ref rest @ ..,
            ] => {
                let (sat, rest) = match rest {
                    ["satfinite", r @ ..] => (true, r),
                    r => (false, r),
                };
                match rest {
                    ["s32", ta, tb, "s32"] => int8_kind(ta)
                        .zip(int8_kind(tb))
                        .map(|(au, bu)| (shape == "m16n8k16", au, bu, sat)),
                    _ => None,
                }
            }
            _ => None,
        };
        // m16n8k16 with 16-bit operands (`elem`: BF16), their accumulators in FP16 or not.
        let k16 = |elem: &str, half_k: bool, f16: bool| {
            let call = format!("mma_m16n8k16({elem}, {f16}, {f16}, _d, _a, _b, _c)");
            (half_k, f16, call)
        };
        // `half_k`: m16n8k8 with 16-bit operands, the first half of m16n8k16's fragments (A's
        // registers 0 and 1, B's register 0: PTX ISA 9.7.14.5.7), run as m16n8k16 with zeros
        // in the other half. `f16`: C and D in FP16 (ptxas refuses .f32 D with .f16 C and the
        // reverse).
        let (half_k, f16, call) = match (fp8, tail.as_str()) {
            _ if let Some((half, au, bu, sat)) = int8 => (
                half,
                false,
                format!("mma_m16n8k32_i8({au}, {bu}, {sat}, _d, _a, _b, _c)"),
            ),
            (Some((a5, b5)), _) => (
                false,
                false,
                format!("mma_m16n8k32_fp8({a5}, {b5}, _d, _a, _b, _c)"),
            ),
            (_, "sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") => k16("false", false, false),
            (_, "sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") => k16("true", false, false),
            (_, "sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") => k16("false", false, true),
            (_, "sync.aligned.m16n8k8.row.col.f32.f16.f16.f32") => k16("false", true, false),
            (_, "sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32") => k16("true", true, false),
            (_, "sync.aligned.m16n8k8.row.col.f16.f16.f16.f16") => k16("false", true, true),
            (_, "sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") => {
                (false, false, "mma_m16n8k8_tf32(_d, _a, _b, _c)".to_string())
            }
            _ => {
                return Err(format!(
                    "this shape or type of mma is not emulated; {EMULATED}"
                ));
            }
        };
        Self::count(ops, 4)?;
        let nc = if f16 { 2 } else { 4 };
        let (na, nb) = if half_k { (2, 1) } else { (4, 2) };
        let d = self.vector(&ops[0], nc, "D")?;
        let a = self.vector(&ops[1], na, "A")?;
        let b = self.vector(&ops[2], nb, "B")?;
        let c = self.vector(&ops[3], nc, "C")?;
        let list = |v: &[Opnd], role: &str, len: usize| -> Result<String, String> {
            let mut regs = v
                .iter()
                .map(|o| self.read(o, Kind::B32, role))
                .collect::<Result<Vec<_>, _>>()?;
            regs.resize(len, "0".to_string());
            Ok(regs.join(", "))
        };
        let code = format!(
            "{{ uint32_t _d[4] = {{0, 0, 0, 0}}; const uint32_t _a[4] = {{{}}}, _b[2] = {{{}}}, _c[4] = {{{}}}; ::sim::inline_ptx::{call}; ",
            list(a, "an A fragment register", 4)?,
            list(b, "a B fragment register", 2)?,
            list(c, "a C register", nc)?
        );
        self.close_with_outputs(code, d, "a D register")?;
        Ok(())
    }

    /// `wmma.load`, `wmma.mma` and `wmma.store` of m16n16k16 with f16 or bf16 operands and
    /// f16 or f32 accumulators, in the fragment layout of two mma.m16n8k16 (`sim_asm.h`).
    fn wmma(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let refuse = || {
            Err(format!(
                "this form of wmma is not emulated (m16n16k16 with .f16 or .bf16 A and B, .f16 \
                 or .f32 C and D, is); {EMULATED}"
            ))
        };
        let words: Vec<&str> = parts[1..]
            .iter()
            .copied()
            .filter(|p| !matches!(*p, "sync" | "aligned" | "global"))
            .collect();
        let shared = words.iter().any(|w| w.starts_with("shared"));
        let words: Vec<&str> = words
            .into_iter()
            .filter(|w| !w.starts_with("shared"))
            .collect();
        match words.as_slice() {
            [
                op @ ("load" | "store"),
                m @ ("a" | "b" | "c" | "d"),
                layout @ ("row" | "col"),
                "m16n16k16",
                ty @ ("f16" | "bf16" | "f32"),
            ] => {
                let col = *layout == "col";
                let store = *op == "store";
                if store != (*m == "d") {
                    return refuse();
                }
                let n = match (*m, *ty) {
                    ("a" | "b", "f16") => 8,
                    ("a" | "b", "bf16") => 4,
                    ("c" | "d", "f16") => 4,
                    ("c" | "d", "f32") => 8,
                    _ => return refuse(),
                };
                let (regs_at, addr_at) = if store { (1, 0) } else { (0, 1) };
                if !(2..=3).contains(&ops.len()) {
                    return Err(format!(
                        "wmma.{op} takes 2 or 3 operands; {} given",
                        ops.len()
                    ));
                }
                let addr = self.address(&ops[addr_at], "the matrix's address", false)?;
                let ld = match ops.get(2) {
                    Some(o) => self.read(o, Kind::B32, "the stride")?,
                    None => "16".to_string(),
                };
                let regs = self.vector(&ops[regs_at], n, "the fragment")?;
                if store {
                    let values = regs
                        .iter()
                        .map(|o| self.read(o, Kind::B32, "a fragment register"))
                        .collect::<Result<Vec<_>, _>>()?;
                    let call = match *ty {
                        "f32" => "wmma_store_f32",
                        _ => "wmma_store16",
                    };
                    self.code.push_str(&format!(
                        "{{ const uint32_t _s[{n}] = {{{}}}; ::sim::inline_ptx::{call}({addr}, _s, {ld}, {col}, {shared}); }} ",
                        values.join(", ")
                    ));
                    return Ok(());
                }
                let call = match (*m, *ty) {
                    ("c", "f32") => format!("wmma_load_f32(_d, {addr}, {ld}, {col}, {shared})"),
                    _ => format!("wmma_load16('{m}', _d, {n}, {addr}, {ld}, {col}, {shared})"),
                };
                let code = format!("{{ uint32_t _d[8] = {{0}}; ::sim::inline_ptx::{call}; ");
                self.close_with_outputs(code, regs, "a fragment register")?;
                Ok(())
            }
            ["mma", "row" | "col", "row" | "col", "m16n16k16", rest @ ..] => {
                let (bf16, dt, ct) = match rest {
                    [d @ ("f16" | "f32"), c @ ("f16" | "f32")] => (false, *d, *c),
                    ["f32", "bf16", "bf16", "f32"] => (true, "f32", "f32"),
                    _ => return refuse(),
                };
                Self::count(ops, 4)?;
                let (na, nd, nc) = (
                    if bf16 { 4 } else { 8 },
                    if dt == "f16" { 4 } else { 8 },
                    if ct == "f16" { 4 } else { 8 },
                );
                let d = self.vector(&ops[0], nd, "D")?;
                let list = |v: &[Opnd], role: &str| -> Result<String, String> {
                    Ok(v.iter()
                        .map(|o| self.read(o, Kind::B32, role))
                        .collect::<Result<Vec<_>, _>>()?
                        .join(", "))
                };
                let a = list(self.vector(&ops[1], na, "A")?, "an A fragment register")?;
                let b = list(self.vector(&ops[2], na, "B")?, "a B fragment register")?;
                let c = list(self.vector(&ops[3], nc, "C")?, "a C register")?;
                let code = format!(
                    "{{ uint32_t _d[8] = {{0}}; const uint32_t _a[8] = {{{a}}}, _b[8] = {{{b}}}, _c[8] = {{{c}}}; \
                     ::sim::inline_ptx::wmma_mma({bf16}, {}, {}, _d, _a, _b, _c); ",
                    dt == "f16",
                    ct == "f16"
                );
                self.close_with_outputs(code, d, "a D register")?;
                Ok(())
            }
            _ => refuse(),
        }
    }

    /// Ends `code` (a block that left the results in `_d`) by writing `_d[k]` to the k-th of
    /// `outputs` (`_` skipped), and adds it to the statement's code.
    fn close_with_outputs(
        &mut self,
        mut code: String,
        outputs: &[Opnd],
        role: &str,
    ) -> Result<(), String> {
        for (k, o) in outputs.iter().enumerate() {
            if let Some(lv) = self.write(o, Kind::B32, role)? {
                code.push_str(&format!("{lv} = _d[{k}]; "));
            }
        }
        code.push_str("} ");
        self.code.push_str(&code);
        Ok(())
    }

    fn address(&self, op: &Opnd, role: &str, wide_only: bool) -> Result<String, String> {
        let Opnd::Mem(base, off) = op else {
            return Err(format!("{role} must be an address [reg] or [reg+offset]"));
        };
        let kind = self.kind(base);
        let want = match kind {
            Kind::B32 if !wide_only => Kind::B32,
            Kind::Imm => Kind::B64,
            _ => Kind::B64,
        };
        Ok(format!(
            "((uint64_t){} + (uint64_t)({off}ll))",
            self.read(base, want, role)?
        ))
    }

    /// `ldmatrix` and its inverse `stmatrix` (sm_90): m8n8, `.x1`/`.x2`/`.x4`, `.trans`.
    fn ldmatrix(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let op = parts[0];
        let mut n = 0;
        let mut trans = false;
        let mut shape = false;
        for p in &parts[1..] {
            match *p {
                "sync" | "aligned" | "shared" | "shared::cta" | "b16" => {}
                "m8n8" => shape = true,
                "x1" => n = 1,
                "x2" => n = 2,
                "x4" => n = 4,
                "trans" => trans = true,
                other => {
                    return Err(format!(
                        "{op} .{other} is not emulated (m8n8 .x1/.x2/.x4, .trans, .b16 are)"
                    ));
                }
            }
        }
        if !shape || n == 0 {
            return Err(format!("{op} needs .m8n8 and .x1, .x2 or .x4"));
        }
        Self::count(ops, 2)?;
        if op == "stmatrix" {
            let addr = self.address(&ops[0], "the row address", false)?;
            let regs = self
                .vector(&ops[1], n, "the source")?
                .iter()
                .map(|o| self.read(o, Kind::B32, "a source register"))
                .collect::<Result<Vec<_>, _>>()?;
            self.code.push_str(&format!(
                "{{ const uint32_t _s[{n}] = {{{}}}; ::sim::inline_ptx::stmatrix<{n}, {trans}>({addr}, _s); }} ",
                regs.join(", ")
            ));
            return Ok(());
        }
        let d = self.vector(&ops[0], n, "the destination")?;
        let addr = self.address(&ops[1], "the row address", false)?;
        let code = format!(
            "{{ uint32_t _d[4] = {{0, 0, 0, 0}}; ::sim::inline_ptx::ldmatrix<{n}, {trans}>(_d, {addr}); "
        );
        self.close_with_outputs(code, d, "a destination register")?;
        Ok(())
    }

    fn cp_async(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let rest: Vec<&str> = parts[2..].to_vec();
        match rest.as_slice() {
            ["commit_group"] => {
                Self::count(ops, 0)?;
                self.code.push_str("::sim::async_commit(); ");
                return Ok(());
            }
            ["wait_group"] => {
                Self::count(ops, 1)?;
                let n = self.read(&ops[0], Kind::Imm, "the group count")?;
                self.code
                    .push_str(&format!("::sim::async_wait((unsigned){n}); "));
                return Ok(());
            }
            ["wait_all"] => {
                Self::count(ops, 0)?;
                self.code
                    .push_str("::sim::async_commit(); ::sim::async_wait(0); ");
                return Ok(());
            }
            _ => {}
        }
        let cg = match rest.first() {
            Some(&"ca") => false,
            Some(&"cg") => true,
            _ => {
                return Err(format!(
                    "not emulated (cp.async.ca/.cg, commit_group, wait_group and wait_all are); \
                     {EMULATED}"
                ));
            }
        };
        let mut hint = false;
        for p in &rest[1..] {
            match *p {
                "shared" | "shared::cta" | "global" | "L2::64B" | "L2::128B" | "L2::256B" => {}
                "L2::cache_hint" => hint = true,
                other => return Err(format!("cp.async .{other} is not emulated")),
            }
        }
        let with_hint = usize::from(hint);
        if ops.len() != 3 + with_hint && ops.len() != 4 + with_hint {
            return Err(format!(
                "takes [dst], [src], cp-size, an optional src-size or ignore-src predicate{}; {} \
                 operands given",
                if hint { " and a cache policy" } else { "" },
                ops.len()
            ));
        }
        let dst = self.address(&ops[0], "the shared destination", false)?;
        let src = self.address(&ops[1], "the global source", true)?;
        let size = self.read(&ops[2], Kind::Imm, "cp-size")?;
        let src_size = if ops.len() == 4 + with_hint {
            match self.kind(&ops[3]) {
                Kind::Imm => self.read(&ops[3], Kind::Imm, "src-size")?,
                // ignore-src (PTX ISA 7.5): when true, zeros instead of the source.
                Kind::Pred => {
                    let p = self.read(&ops[3], Kind::Pred, "ignore-src")?;
                    format!("(({p}) ? 0 : {size})")
                }
                _ => self.read(&ops[3], Kind::B32, "src-size")?,
            }
        } else {
            size.clone()
        };
        self.code.push_str(&format!(
            "::sim::inline_ptx::cp_async({cg}, {dst}, {src}, (long long){size}, (long long){src_size}); "
        ));
        Ok(())
    }

    fn cvta(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 2)?;
        let tail = parts[1..].join(".");
        let (func, kind) = match tail.as_str() {
            "to.shared.u64" | "to.shared::cta.u64" => {
                ("::sim::inline_ptx::cvta_to_shared", Kind::B64)
            }
            "to.shared.u32" | "to.shared::cta.u32" => {
                ("::sim::inline_ptx::cvta_to_shared", Kind::B32)
            }
            "shared.u64" | "shared::cta.u64" => ("::sim::inline_ptx::cvta_shared", Kind::B64),
            "to.global.u64" | "global.u64" => ("", Kind::B64),
            _ => return Err(format!("cvta.{tail} is not emulated")),
        };
        let a = self.read(&ops[1], Kind::B64, "the source address")?;
        if let Some(d) = self.write(&ops[0], kind, "the destination")? {
            let t = kind.c_type();
            self.code
                .push_str(&format!("{d} = ({t}){func}((uint64_t){a}); "));
        }
        Ok(())
    }

    fn mov(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 2)?;
        let kind = match parts.get(1).copied() {
            Some("b16" | "u16" | "s16") => Kind::B16,
            Some("b32" | "u32" | "s32" | "f32") => Kind::B32,
            Some("b64" | "u64" | "s64" | "f64") => Kind::B64,
            _ => return Err("mov of this type is not emulated".into()),
        };
        let half = match kind {
            Kind::B32 => Kind::B16,
            _ => Kind::B32,
        };
        let shift = if kind == Kind::B32 { 16 } else { 32 };
        match (&ops[0], &ops[1]) {
            (d, Opnd::Vector(v)) if v.len() == 2 => {
                // Pack: {lo, hi}.
                let lo = self.read(&v[0], half, "the low half")?;
                let hi = self.read(&v[1], half, "the high half")?;
                if let Some(d) = self.write(d, kind, "the destination")? {
                    let t = kind.c_type();
                    self.code.push_str(&format!(
                        "{d} = ({t})(({t}){lo} | (({t}){hi} << {shift})); "
                    ));
                }
            }
            (Opnd::Vector(v), s) if v.len() == 2 => {
                // Unpack into {lo, hi}.
                let s = self.read(s, kind, "the source")?;
                let t = half.c_type();
                if let Some(lo) = self.write(&v[0], half, "the low half")? {
                    self.code.push_str(&format!("{lo} = ({t})({s}); "));
                }
                if let Some(hi) = self.write(&v[1], half, "the high half")? {
                    self.code
                        .push_str(&format!("{hi} = ({t})({s} >> {shift}); "));
                }
            }
            (d, s) => {
                let s = self.read(s, kind, "the source")?;
                if let Some(d) = self.write(d, kind, "the destination")? {
                    self.code.push_str(&format!("{d} = {s}; "));
                }
            }
        }
        Ok(())
    }

    /// selp.T d, a, b, c: d = c ? a : b, c a predicate.
    fn selp(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 4)?;
        let kind = match parts.get(1).copied() {
            Some("b16" | "u16" | "s16") => Kind::B16,
            Some("b32" | "u32" | "s32" | "f32") => Kind::B32,
            Some("b64" | "u64" | "s64" | "f64") => Kind::B64,
            _ => return Err("selp of this type is not emulated".into()),
        };
        let a = self.read(&ops[1], kind, "the first source")?;
        let b = self.read(&ops[2], kind, "the second source")?;
        let c = match &ops[3] {
            Opnd::Local(name) if self.locals[name] == Kind::Pred => local_name(name),
            _ => return Err("the selector must be a declared .pred register".into()),
        };
        if let Some(d) = self.write(&ops[0], kind, "the destination")? {
            self.code.push_str(&format!("{d} = {c} ? {a} : {b}; "));
        }
        Ok(())
    }

    /// setp.CmpOp.type p{|q}, a, b: p = a CmpOp b (q its negation), as the PTX ISA defines
    /// the comparisons of integers (signed for .s, unsigned for .u and .b) and floats (the
    /// ordered ones false, the unordered ones true, where either is NaN).
    fn setp(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        Self::count(ops, 3)?;
        let (cmp, ty) = match parts {
            [_, cmp, ty] | [_, cmp, "ftz", ty] => (*cmp, *ty),
            _ => {
                return Err(
                    "setp.CmpOp{.ftz}.type is emulated (not the forms with a boolean operation)"
                        .into(),
                );
            }
        };
        let (kind, value) = match ty {
            "b16" | "u16" => (Kind::B16, "uint16_t"),
            "s16" => (Kind::B16, "int16_t"),
            "b32" | "u32" => (Kind::B32, "uint32_t"),
            "s32" => (Kind::B32, "int32_t"),
            "b64" | "u64" => (Kind::B64, "uint64_t"),
            "s64" => (Kind::B64, "int64_t"),
            "f32" => (Kind::B32, "float"),
            "f64" => (Kind::B64, "double"),
            _ => return Err(format!("setp on .{ty} is not emulated")),
        };
        let float = ty.starts_with('f');
        let a = self.read(&ops[1], kind, "the first source")?;
        let b = self.read(&ops[2], kind, "the second source")?;
        let (a, b) = if float {
            let f = if kind == Kind::B32 {
                "f32_of"
            } else {
                "f64_of"
            };
            (
                format!("::sim::inline_ptx::{f}({a})"),
                format!("::sim::inline_ptx::{f}({b})"),
            )
        } else {
            (format!("(({value}){a})"), format!("(({value}){b})"))
        };
        // lo, ls, hi and hs: the unsigned comparisons, of integers only.
        let c_op = |op: &str| -> Result<&'static str, String> {
            Ok(match (op, float) {
                ("eq", _) => "==",
                ("ne", _) => "!=",
                ("lt", _) | ("lo", false) => "<",
                ("le", _) | ("ls", false) => "<=",
                ("gt", _) | ("hi", false) => ">",
                ("ge", _) | ("hs", false) => ">=",
                _ => return Err(format!("setp.{op}.{ty} is not emulated")),
            })
        };
        let nan = format!("({a} != {a} || {b} != {b})");
        let test = match cmp {
            "num" if float => format!("!{nan}"),
            "nan" if float => nan,
            op if float && op.len() == 3 && op.ends_with('u') => {
                format!("({nan} || {a} {} {b})", c_op(&op[..2])?)
            }
            op if float => format!("(!{nan} && {a} {} {b})", c_op(op)?),
            "lo" | "ls" | "hi" | "hs" if ty.starts_with('s') => {
                return Err(format!(
                    "setp.{cmp}.{ty}: lo, ls, hi and hs compare unsigned types"
                ));
            }
            "eq" | "ne" => format!("{a} {} {b}", c_op(cmp)?),
            op if ty.starts_with('b') => {
                return Err(format!(
                    "setp.{op}.{ty}: bit types compare with eq and ne only"
                ));
            }
            op => format!("{a} {} {b}", c_op(op)?),
        };
        let (p, q) = match &ops[0] {
            Opnd::Pair(p, q) => (p.as_ref(), Some(q.as_ref())),
            p => (p, None),
        };
        if let Some(p) = self.write(p, Kind::Pred, "the predicate")? {
            self.code.push_str(&format!("{p} = {test}; "));
        }
        if let Some(q) = q
            && let Some(q) = self.write(q, Kind::Pred, "the second predicate")?
        {
            self.code.push_str(&format!("{q} = !({test}); "));
        }
        Ok(())
    }

    fn shfl(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        let mode = match parts[1..].join(".").as_str() {
            "sync.up.b32" => "SHFL_UP",
            "sync.down.b32" => "SHFL_DOWN",
            "sync.bfly.b32" => "SHFL_BFLY",
            "sync.idx.b32" => "SHFL_IDX",
            _ => return Err("shfl.sync.{up,down,bfly,idx}.b32 are emulated".into()),
        };
        Self::count(ops, 5)?;
        let a = self.read(&ops[1], Kind::B32, "the source")?;
        let b = self.read(&ops[2], Kind::B32, "the lane operand b")?;
        let c = self.read(&ops[3], Kind::B32, "the clamp operand c")?;
        let m = self.read(&ops[4], Kind::B32, "the member mask")?;
        self.value_and_predicate(
            &ops[0],
            &format!("::sim::inline_ptx::shfl(::sim::inline_ptx::{mode}, {a}, {b}, {c}, {m}, &_p)"),
        )
    }

    /// `elect.sync d|p, membermask` (sm_90): CUTLASS's `elect_one_sync`.
    fn elect(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        if parts[1..] != ["sync"] {
            return Err("elect.sync is emulated".into());
        }
        Self::count(ops, 2)?;
        let m = self.read(&ops[1], Kind::B32, "the member mask")?;
        self.value_and_predicate(&ops[0], &format!("::sim::inline_ptx::elect({m}, &_p)"))
    }

    /// `activemask.b32 d`: the lanes of the warp that run it, as `__activemask()` gives them.
    fn activemask(&mut self, parts: &[&str], ops: &[Opnd]) -> Result<(), String> {
        if parts[1..] != ["b32"] {
            return Err("activemask.b32 is emulated".into());
        }
        Self::count(ops, 1)?;
        if let Some(d) = self.write(&ops[0], Kind::B32, "the destination")? {
            self.code.push_str(&format!("{d} = __activemask(); "));
        }
        Ok(())
    }

    /// A `d|p` destination (or a plain `d`) of `call`, a b32 value that sets the predicate
    /// through `&_p`.
    fn value_and_predicate(&mut self, dest: &Opnd, call: &str) -> Result<(), String> {
        let (d, p) = match dest {
            Opnd::Pair(d, p) => (d.as_ref(), Some(p.as_ref())),
            d => (d, None),
        };
        let mut code = format!("{{ bool _p = false; uint32_t _v = {call}; ");
        if let Some(d) = self.write(d, Kind::B32, "the destination")? {
            code.push_str(&format!("{d} = _v; "));
        }
        if let Some(p) = p
            && let Some(p) = self.write(p, Kind::Pred, "the predicate")?
        {
            code.push_str(&format!("{p} = _p; "));
        }
        code.push_str("(void)_v; (void)_p; } ");
        self.code.push_str(&code);
        Ok(())
    }
}

fn special_is_64_bit(name: &str) -> bool {
    matches!(name.trim_start_matches('%'), "globaltimer" | "clock64")
}

/// The C++ for a special register.
fn special(name: &str) -> Result<String, String> {
    let dim = |s: &str| match s {
        "x" | "y" | "z" => Some(s.to_string()),
        _ => None,
    };
    let r = name.trim_start_matches('%');
    let (base, comp) = r.split_once('.').map_or((r, None), |(a, b)| (a, dim(b)));
    Ok(match (base, comp) {
        ("laneid", None) => "::sim::inline_ptx::laneid()".into(),
        ("warpid", None) => "::sim::inline_ptx::warpid()".into(),
        ("lanemask_eq", None) => "::sim::inline_ptx::lanemask(0)".into(),
        ("lanemask_lt", None) => "::sim::inline_ptx::lanemask(1)".into(),
        ("lanemask_le", None) => "::sim::inline_ptx::lanemask(2)".into(),
        ("lanemask_gt", None) => "::sim::inline_ptx::lanemask(3)".into(),
        ("lanemask_ge", None) => "::sim::inline_ptx::lanemask(4)".into(),
        ("cluster_ctarank", None) => "::sim::worker().rank".into(),
        ("cluster_nctarank", None) => "::sim::worker().cluster->size".into(),
        ("globaltimer", None) | ("clock64", None) => "(uint64_t)clock64()".into(),
        ("clock", None) => "(uint32_t)clock64()".into(),
        ("clusterid", Some(c)) | ("nclusterid", Some(c)) => format!(
            "::sim::inline_ptx::clusterid({}, {})",
            (c.as_bytes()[0] - b'x'),
            base == "nclusterid"
        ),
        ("cluster_ctaid", Some(c)) => format!(
            "(blockIdx.{c} % ::sim::worker().launch->cluster[{}])",
            c.as_bytes()[0] - b'x'
        ),
        ("cluster_nctaid", Some(c)) => format!(
            "::sim::worker().launch->cluster[{}]",
            c.as_bytes()[0] - b'x'
        ),
        ("tid", Some(c)) => format!("threadIdx.{c}"),
        ("ntid", Some(c)) => format!("blockDim.{c}"),
        ("ctaid", Some(c)) => format!("blockIdx.{c}"),
        ("nctaid", Some(c)) => format!("gridDim.{c}"),
        _ => return Err(format!("the special register {name} is not emulated")),
    })
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['U', 'u']);
    let (neg, s) = s.strip_prefix('-').map_or((false, s), |r| (true, r));
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rewrite with each statement the simulator does not run refused at once.
    fn strict(code: &str, file: &str) -> Result<Option<String>, Refusal> {
        rewrite_as(code, file, false)
    }

    fn rw(code: &str) -> String {
        strict(code, "k.cu").unwrap().unwrap()
    }

    /// One register in braces is the register (DeepSpeed writes every scalar load so): the
    /// same code as without the braces.
    #[test]
    fn one_register_in_braces_is_that_register() {
        let braced = "void f(int &v, unsigned a) {\n  asm volatile(\"ld.shared.u32 {%0}, [%1];\" : \"=r\"(v) : \"r\"(a));\n}";
        assert_eq!(rw(braced), rw(&braced.replace("{%0}", "%0")));
    }

    #[test]
    fn a_source_without_asm_is_left_alone() {
        assert_eq!(strict("int f() { return 1; }", "k.cu"), Ok(None));
        // `asm` in a string, an include path or another identifier is no statement.
        let code = "#include <asm/types.h>\nconst char *s = \"asm(\"; int plasma_asm = 0;";
        assert_eq!(strict(code, "k.cu"), Ok(None));
    }

    /// ptxas takes a comment as whitespace: one to the line's end, a block one, one after an
    /// instruction, and a `;` or `}` inside any of them.
    #[test]
    fn ptx_comments_are_whitespace() {
        let code = "void f(float *p, float a, float b) {\n  asm(\"// multiply; one pair }\\n\\t\"\n      \
             \"mul.f32 %0, %1, /* a; } */ %2; // the product\\n\\t\"\n      \
             \"/* then add */ add.f32 %0, %0, %2;\" : \"=f\"(*p) : \"f\"(a), \"f\"(b));\n}\n";
        let out = rw(code);
        // The product of %1 and %2, then the sum of it and %2: two statements, no more.
        assert!(
            out.contains("_k0 = (uint32_t)::sim::inline_ptx::f32_bits((float)(::sim::inline_ptx::f32_of((uint32_t)(_k1)) * ")
                && out.contains("_k0 = (uint32_t)::sim::inline_ptx::f32_bits((float)(::sim::inline_ptx::f32_of((uint32_t)(_k0)) + "),
            "{out}"
        );
        assert_eq!(out.matches("f32_bits((float)").count(), 2, "{out}");
        assert_eq!(out.lines().count(), code.lines().count(), "{out}");
    }

    #[test]
    fn mma_operands_are_typed_by_their_constraints() {
        let code = "void f(float *d, unsigned *a, unsigned *b) {\n  asm volatile(\n    \
             \"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, \
             {%8,%9}, {%10,%11,%12,%13};\\n\"\n    : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \
             \"=f\"(d[3])\n    : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \
             \"r\"(b[1]), \"f\"(d[0]), \"f\"(d[1]), \"f\"(d[2]), \"f\"(d[3]));\n}\n";
        let out = rw(code);
        assert!(
            out.contains("::sim::inline_ptx::mma_m16n8k16(false, false, false"),
            "{out}"
        );
        assert!(
            out.contains("::sim::inline_ptx::set_f32(d[0], _k0)"),
            "{out}"
        );
        // Lines are kept: the closing brace is still on line 6.
        assert_eq!(out.lines().count(), code.lines().count(), "{out}");
        assert_eq!(out.lines().nth(5), Some("}"));
        // A 64-bit operand where A takes 32 bits is refused, naming the operand.
        let bad = code.replace("\"r\"(a[0])", "\"l\"(a)");
        let r = strict(&bad, "k.cu").unwrap_err();
        assert_eq!((r.file.as_str(), r.line), ("k.cu", 3));
        assert!(r.why.contains("%4, constraint \"l\""), "{r}");
    }

    /// FP8: mma.sync m16n8k32 with E4M3 and E5M2 mixed as written, and wgmma m64nNk32, which
    /// takes no transpose operands (FP8 is K-major only).
    #[test]
    fn fp8_mma_and_wgmma_reach_their_emulations_with_each_operands_format() {
        let mma = "void f(float *d, unsigned *a, unsigned *b) {\n  asm volatile(\
             \"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, \
             {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) \
             : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n";
        let out = rw(mma);
        assert!(
            out.contains("::sim::inline_ptx::mma_m16n8k32_fp8(false, true, _d, _a, _b, _c)"),
            "{out}"
        );
        let wgmma = "void f(float *d, unsigned long long a) {\n  asm volatile(\
             \"wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3 {%0, %1, %2, %3}, %4, %5, 1, 1, 1;\" \
             : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"l\"(a), \"l\"(a));\n}\n";
        let out = rw(wgmma);
        assert!(
            out.contains("8, ::sim::WgType::e5m2, ")
                && out.contains("0 != 0, 0 != 0, ::sim::WgType::e4m3)"),
            "{out}"
        );
        // The accumulators are passed by address alone: copying them in before the statement
        // or back after it would touch them while the wgmma is in flight.
        assert!(
            out.contains("float *_wd[4] = {&(d[0]), &(d[1]), &(d[2]), &(d[3])};")
                && !out.contains("f32_bits(d[")
                && !out.contains("set_f32(d["),
            "{out}"
        );
        // With the 16-bit types' two transpose operands: one operand too many.
        let trans = wgmma.replace("1, 1, 1;", "1, 1, 1, 0, 0;");
        assert!(strict(&trans, "k.cu").is_err());
    }

    #[test]
    fn int8_mma_reaches_its_emulation_with_signs_saturation_and_shape() {
        let k32 = "void f(int *d, unsigned *a, unsigned *b) {\n  asm volatile(\
             \"mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%0,%1,%2,%3}, \
             {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+r\"(d[0]), \"+r\"(d[1]), \"+r\"(d[2]), \
             \"+r\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \
             \"r\"(b[1]));\n}\n";
        let out = rw(k32);
        assert!(
            out.contains("::sim::inline_ptx::mma_m16n8k32_i8(false, true, true, _d, _a, _b, _c)"),
            "{out}"
        );
        // m16n8k16: two A registers and one B, the rest zero.
        let k16 = "void f(int *d, unsigned *a, unsigned *b) {\n  asm volatile(\
             \"mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, \
             {%0,%1,%2,%3};\" : \"+r\"(d[0]), \"+r\"(d[1]), \"+r\"(d[2]), \"+r\"(d[3]) \
             : \"r\"(a[0]), \"r\"(a[1]), \"r\"(b[0]));\n}\n";
        let out = rw(k16);
        assert!(
            out.contains("mma_m16n8k32_i8(false, false, false, _d, _a, _b, _c)")
                && out.contains(", 0, 0}, _b[2] = {"),
            "{out}"
        );
    }

    #[test]
    fn the_cvta_idiom_ldmatrix_and_cp_async_are_recognised() {
        let code = r#"
__device__ unsigned s(void *p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
__device__ void g(unsigned *r, unsigned a, const float *src) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" :: "r"(a), "l"(src), "r"(8));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group %0;\n" :: "n"(1));
}
"#;
        let out = rw(code);
        for want in [
            "uint64_t _kr_t = 0;",
            "_kr_t = (uint64_t)::sim::inline_ptx::cvta_to_shared",
            "_k0 = (uint32_t)((uint32_t)((uint64_t)(uint64_t)(_kr_t)))",
            "::sim::inline_ptx::ldmatrix<4, true>(_d,",
            "::sim::inline_ptx::cp_async(true,",
            "::sim::async_commit();",
            "::sim::async_wait((unsigned)(long long)(_k0));",
        ] {
            assert!(out.contains(want), "missing {want}:\n{out}");
        }
    }

    #[test]
    fn unknown_instructions_are_refused_with_file_line_and_name() {
        let code = "#line 40 \"user.cu\"\nvoid f(unsigned long long d) {\n\n  asm volatile(\
             \"tcgen05.fence::before_thread_sync;\" ::: \"memory\");\n}\n";
        let r = strict(code, "ignored.cu").unwrap_err();
        assert_eq!(
            (r.file.as_str(), r.line, r.instruction.as_str()),
            ("user.cu", 42, "tcgen05.fence::before_thread_sync")
        );
        assert!(r.to_string().starts_with(
            "user.cu:42: inline PTX `tcgen05.fence::before_thread_sync`: not emulated"
        ));
        let nowhere = "void f() { asm volatile(\"L: bra M;\"); }";
        let why = strict(nowhere, "k.cu").unwrap_err().why;
        assert!(why.contains("the branch target M is no label"), "{why}");
        let call = "void f() { asm volatile(\"call g;\"); }";
        assert!(strict(call, "k.cu").unwrap_err().why.contains("calls"));
        let top = "asm(\".global .u32 x;\");";
        assert!(strict(top, "k.cu").unwrap_err().why.contains("file scope"));
    }

    /// Outside the front end's tests, a statement the simulator does not run becomes a call
    /// that fails the launch reaching it with the refusal, the list of what is emulated
    /// restored from its mark; a helper or macro no kernel calls costs nothing.
    #[test]
    fn an_unknown_instruction_fails_the_launch_that_reaches_it() {
        let code = "#define UNUSED() asm volatile(\"cp.async.bulk.wait_all;\" ::)\n\
            __device__ void f() {\n  asm volatile(\"call g;\");\n}\n";
        let out = rewrite(code, "k.cu").unwrap().unwrap();
        assert_eq!(out.lines().count(), code.lines().count(), "{out}");
        let call = out.lines().nth(2).unwrap();
        assert!(
            call.contains("::sim::inline_ptx::not_simulated(\"k.cu:3: inline PTX `call`: ")
                && call.contains(EMULATED_MARK)
                && !call.contains(EMULATED),
            "{call}"
        );
        assert!(out.lines().next().unwrap().contains("not_simulated("));
        // The launch's message: the kernel's name before it, the thread after.
        let message = format!(
            "k: not simulated: k.cu:3: inline PTX `call`: calls, returns and indirect branches \
             are not emulated; {EMULATED_MARK} (thread (0,0,0) of block (0,0,0))"
        );
        let why = reached_refusal(&message).unwrap();
        assert!(
            why.starts_with("not simulated: k.cu:3: inline PTX `call`:")
                && why.contains(EMULATED)
                && why.ends_with("(thread (0,0,0) of block (0,0,0))"),
            "{why}"
        );
        assert_eq!(reached_refusal("k: index 4 out of bounds"), None);
    }

    #[test]
    fn hopper_forms_outside_the_emulation_are_refused_saying_what_is_emulated() {
        let why = |stmt: &str| {
            let code =
                format!("void f(unsigned s, const void *m, unsigned long long a) {{ {stmt} }}");
            strict(&code, "k.cu").unwrap_err().why
        };
        let cases = [
            (
                r#"asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%0, %0, %0}], [%0], {%0};" :: "r"(s), "l"(m));"#,
                ".im2col is not emulated (tiled copies of 1 to 5",
            ),
            (
                r#"asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.mbarrier::complete_tx::bytes [%1, {%0, %0}], [%0];" :: "r"(s), "l"(m));"#,
                "stores to global memory with .bulk_group",
            ),
            (
                r#"asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%1, {%0, %0}], [%0];" :: "r"(s), "l"(m));"#,
                "the coordinates must be a vector of 3 registers",
            ),
            (
                r#"asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%0], 16, [%0];" :: "r"(s));"#,
                "is not emulated (bulk copies from global into shared memory on an mbarrier",
            ),
            (
                r#"float d[4]; asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {%0, %1}, %2, %3, 1, 1, 1, 0, 0;" : "+r"(s), "+r"(s) : "l"(a), "l"(a));"#,
                "m64nNk16 .f32.f16.f16, .f16.f16.f16 and .f32.bf16.bf16",
            ),
            (
                r#"unsigned d[4]; asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;" : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]) : "l"(a), "l"(a));"#,
                "must be a \"+f\" operand",
            ),
            (
                r#"float d[4]; asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, %6, 1, 1, 0, 0;" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(a), "l"(a), "r"(s));"#,
                "scale-d must be a predicate",
            ),
            (
                r#"float d[4]; asm volatile("{\nmov.f32 %0, 0f00000000;\nwgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n}" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(a), "l"(a));"#,
                "operand 0 is an accumulator of a wgmma and is also used by another instruction",
            ),
            (
                r#"asm volatile("bar.red.popc.u32 %0, 1, 64, %1;" : "=r"(s) : "r"(s));"#,
                "bar.red.popc.u32 is not emulated (barrier.cluster.arrive and .wait, bar.sync",
            ),
            (
                r#"asm volatile("bar.arrive 1;");"#,
                "takes a barrier id and a thread count",
            ),
            (
                r#"asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(s) : "l"(a));"#,
                "mbarrier.pending_count is not emulated",
            ),
            (
                r#"asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.max.f32 [%0], [%1], 512;" :: "l"(a), "r"(s));"#,
                "ptxas takes .add on .f32, .f64, .u32, .s32, .u64 and (with .noftz) .f16, .bf16;",
            ),
            (
                r#"asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f16 [%0], [%1], 512;" :: "l"(a), "r"(s));"#,
                "(with .noftz) .f16",
            ),
            (
                r#"asm volatile("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 [%0], [%0], 16, [%0];" :: "r"(s));"#,
                "is not emulated (reductions from shared memory into global memory",
            ),
            (
                r#"asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "r"(s));"#,
                "immediate",
            ),
        ];
        for (stmt, want) in cases {
            let w = why(stmt);
            assert!(w.contains(want), "{stmt}: {w}");
        }
    }

    #[test]
    fn a_retry_loop_becomes_local_labels_and_gotos() {
        // CUTLASS's ClusterBarrier::wait, with %= making its labels unique on a GPU.
        let code = "void f(unsigned b, unsigned ph) {\n  asm volatile(\"{\\n.reg .pred P1;\\nLAB_WAIT%=:\\n\
             mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\\n@P1 bra DONE%=;\\nbra LAB_WAIT%=;\\n\
             DONE%=:\\n}\\n\" :: \"r\"(b), \"r\"(ph));\n}\n";
        let out = rw(code);
        for want in [
            "do { __label__ _kl_LAB_WAIT, _kl_DONE; ",
            "_kl_LAB_WAIT:; _kr_P1 = ::sim::inline_ptx::mbar_wait_test(",
            "if (_kr_P1) { goto _kl_DONE; } goto _kl_LAB_WAIT; _kl_DONE:; ",
        ] {
            assert!(out.contains(want), "missing {want}:\n{out}");
        }
    }

    #[test]
    fn guards_wrap_their_instruction_and_need_a_declared_predicate() {
        // CUTLASS's predicated cp.async: a guard, set by setp from an "r" operand.
        let code = "void f(unsigned s, const void *g, int ok) {\n  asm volatile(\"{\\n .reg .pred p;\\n \
             setp.ne.b32 p, %0, 0;\\n @p cp.async.cg.shared.global [%1], [%2], 16;\\n}\\n\" \
             :: \"r\"(ok), \"r\"(s), \"l\"(g));\n}\n";
        let out = rw(code);
        for want in [
            "bool _kr_p = 0;",
            "_kr_p = ((uint32_t)(uint32_t)(_k0)) != ((uint32_t)(uint32_t)(0ll));",
            "if (_kr_p) { ::sim::inline_ptx::cp_async(true,",
        ] {
            assert!(out.contains(want), "missing {want}:\n{out}");
        }
        let negated = code.replace("@p", "@!p");
        assert!(rw(&negated).contains("if (!_kr_p) {"));
        let undeclared = code.replace("@p", "@q");
        let r = strict(&undeclared, "k.cu").unwrap_err();
        assert_eq!(r.instruction, "cp.async.cg.shared.global");
        assert!(
            r.why
                .contains("the guard @q must name a .pred register declared in the statement"),
            "{r}"
        );
        // A 32-bit register is no predicate.
        let bits = code
            .replace(".reg .pred p;", ".reg .pred p; .reg .b32 r;")
            .replace("p, %0, 0", "r, %0, 0");
        let r = strict(&bits, "k.cu").unwrap_err();
        assert!(r.why.contains("the predicate is a 32-bit operand"), "{r}");
    }

    #[test]
    fn each_branch_of_an_if_inside_a_statement_is_generated_under_its_directive() {
        // CUTLASS's global_load<16>, its L2 prefetch hint chosen by a macro.
        let code = "#line 10 \"memory.h\"\n\
            void f(uint4 &data, const void *ptr, bool pred_guard) {\n\
            asm volatile(\n\
            \"{\\n\"\n\
            \"  .reg .pred p;\\n\"\n\
            \"  setp.ne.b32 p, %5, 0;\\n\"\n\
            \"  mov.b32 %0, %6;\\n\"\n\
            #if CUTLASS_ENABLE_L2_PREFETCH\n\
            \"  @p ld.global.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];\\n\"\n\
            #else\n\
            \"  @p ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\\n\"\n\
            #endif\n\
            \"}\\n\"\n\
            : \"=r\"(data.x), \"=r\"(data.y), \"=r\"(data.z), \"=r\"(data.w)\n\
            : \"l\"(ptr), \"r\"((int)pred_guard), \"r\"(data.x));\n\
            int after;\n}\n";
        let out = rw(code);
        let lines: Vec<&str> = out.lines().collect();
        let at = |d: &str| {
            lines
                .iter()
                .position(|l| *l == d)
                .unwrap_or_else(|| panic!("{d}:\n{out}"))
        };
        let (i, e, end) = (
            at("#if CUTLASS_ENABLE_L2_PREFETCH"),
            at("#else"),
            at("#endif"),
        );
        assert!(i < e && e < end, "{out}");
        // One generated statement in each branch, the same but for the hint.
        assert!(
            lines[i + 1].starts_with("do {") && lines[e + 1].starts_with("do {"),
            "{out}"
        );
        assert_eq!(
            lines[i + 1].replace("ld.global.L2::128B.v4.u32", "ld.global.v4.u32"),
            lines[e + 1],
            "the hint changes only the name messages give"
        );
        assert!(lines[i + 1].contains("if (_kr_p) {"), "{out}");
        // The closing parenthesis was on line 23 of memory.h: the code after it still is.
        assert_eq!(lines[end + 1], "#line 23 \"memory.h\"", "{out}");
        assert!(lines[end + 2].starts_with(';'), "{out}");
        // A nested #if is refused, naming what was found.
        let nested = code.replace("#else\n", "#else\n#ifdef X\n#endif\n");
        let r = strict(&nested, "k.cu").unwrap_err();
        assert!(
            r.why
                .contains("(#if, #else, #ifdef, #endif, #endif) are not one #if ... #endif chain"),
            "{r}"
        );
    }

    #[test]
    fn memory_qualifiers_are_read_in_any_order() {
        // CUTLASS's semaphore writes the state space first; PTX's grammar puts it after the
        // semantics and scope. Both mean the same.
        for (load, store) in [
            ("ld.global.acquire.gpu.b32", "st.global.release.gpu.b32"),
            ("ld.acquire.gpu.global.b32", "st.release.gpu.global.b32"),
        ] {
            let code = format!(
                "void f(int *lock, int v) {{\n  int s;\n  asm volatile(\"{load} %0, [%1];\\n\" : \
                 \"=r\"(s) : \"l\"(lock));\n  asm volatile(\"{store} [%0], %1;\\n\" :: \"l\"(lock), \
                 \"r\"(v));\n}}\n"
            );
            let out = rw(&code);
            let acquire = "::sim::inline_ptx::strong_load<uint32_t, 1>(_m, _v.v); else _v = *(const _V *)_m; \
                 ::sim::inline_ptx::scoped_fence(true);";
            let release = "::sim::inline_ptx::scoped_fence(true); if \
                 (::sim::inline_ptx::strong_in_global(_m, sizeof(_V))) \
                 ::sim::inline_ptx::strong_store<uint32_t, 1>(_m, _v.v);";
            assert!(
                out.contains(acquire) && out.contains(release),
                "{load}:\n{out}"
            );
            assert!(out.contains("SPACE_GLOBAL"), "{out}");
        }
        // A cache operator before the space: a plain load.
        let out = rw(
            "void f(int *p) { int s; asm(\"ld.cg.global.b32 %0, [%1];\" : \"=r\"(s) : \"l\"(p)); }",
        );
        assert!(
            out.contains("_v = *(const _V *)_m;") && !out.contains("strong_load"),
            "{out}"
        );
    }

    #[test]
    fn asm_in_a_macro_stays_a_macro() {
        let code = "#define CP_ASYNC_CG(dst, src, n) \\\n  asm volatile(\"cp.async.cg.shared.global [%0], [%1], %2;\\n\" \\\n  :: \"r\"(dst), \"l\"(src), \"n\"(n))\nvoid f() {}\n";
        let out = rw(code);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].ends_with('\\') && lines[1].ends_with('\\'),
            "{out}"
        );
        assert!(
            lines[1].contains("::sim::inline_ptx::cp_async(true"),
            "{out}"
        );
        assert_eq!(&lines[2..], &["", "void f() {}"], "{out}");
    }
}
