//! `#if`/`#elif`/`#else`/`#endif` inside an `asm` statement, as CUTLASS's memory helpers
//! write them (`#if CUTLASS_ENABLE_L2_PREFETCH` around two forms of a load, in the middle of
//! the template's strings). The statement is read once per branch, each reading is generated,
//! and the same directives around the generated statements let the preprocessor pick the one
//! it would have picked. A `#line` after them keeps the lines that follow.

use super::{LineMap, Refusal, end_of_directive, generate, parse_statement, skip_literal};

/// The directives of one statement, in order: `#if` (or `#ifdef`, `#ifndef`), any `#elif`,
/// an optional `#else`, then `#endif`.
pub(super) struct Chain {
    /// Past the statement's closing parenthesis.
    pub end: usize,
    /// Each directive line's byte range (without its line break).
    directives: Vec<(usize, usize)>,
}

/// The conditional directives of the statement whose parentheses open after `from` (just
/// past `asm`); `None` when it has none.
pub(super) fn chain(code: &str, from: usize) -> Result<Option<Chain>, String> {
    let b = code.as_bytes();
    let (mut i, mut depth, mut line_start) = (from, 0, false);
    let mut directives = Vec::new();
    let end = loop {
        let Some(&c) = b.get(i) else {
            return Ok(None); // unbalanced: parse_statement says so
        };
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                let e = end_of_directive(b, i);
                directives.push((i, e));
                i = e;
                continue;
            }
            _ => line_start = false,
        }
        match c {
            b'"' | b'\'' => {
                i = skip_literal(b, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    break i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    };
    if directives.is_empty() {
        return Ok(None);
    }
    let word = |&(s, e): &(usize, usize)| {
        let t = code[s + 1..e].trim_start();
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("")
            .to_string()
    };
    let words: Vec<String> = directives.iter().map(word).collect();
    let n = words.len();
    let well_formed = n >= 2
        && matches!(words[0].as_str(), "if" | "ifdef" | "ifndef")
        && words[n - 1] == "endif"
        && words[1..n - 1]
            .iter()
            .enumerate()
            .all(|(k, w)| w == "elif" || (w == "else" && k + 2 == n - 1));
    if !well_formed {
        return Err(format!(
            "the directives inside this asm statement ({}) are not one #if ... #endif chain \
             (#elif and a last #else allowed, nothing nested), which is what the simulator reads",
            words
                .iter()
                .map(|w| format!("#{w}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Some(Chain { end, directives }))
}

/// The generated statement of each branch between the chain's directives, preceded by its
/// directive and followed by `#endif` and a `#line` for the code after the statement.
pub(super) fn rewrite(
    code: &str,
    from: usize,
    chain: &Chain,
    lines: &LineMap,
) -> Result<String, Refusal> {
    let d = &chain.directives;
    let has_else = code[d[d.len() - 2].0 + 1..d[d.len() - 2].1]
        .trim_start()
        .starts_with("else");
    // Branch k lies between directives k and k + 1; without an #else, one more reading
    // keeps no branch.
    let branches = d.len() - 1;
    let readings = branches + usize::from(!has_else);
    let mut generated = Vec::with_capacity(readings);
    for keep in 0..readings {
        let mut bytes = code.as_bytes()[..chain.end].to_vec();
        let mut blank = |s: usize, e: usize| {
            for b in &mut bytes[s..e] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        };
        for &(s, e) in d {
            blank(s, e);
        }
        for k in (0..branches).filter(|&k| k != keep) {
            blank(d[k].1, d[k + 1].0);
        }
        // Whole lines were blanked, so the bytes are still UTF-8.
        let variant = String::from_utf8_lossy(&bytes);
        let stmt = parse_statement(&variant, from).map_err(|why| {
            let (file, line) = lines.at(from);
            Refusal {
                file,
                line,
                instruction: "asm".into(),
                why,
            }
        })?;
        generated.push(generate(&stmt, lines)?);
    }
    let mut out = String::from("\n");
    for (k, &(s, e)) in d.iter().enumerate() {
        if k + 1 == d.len() && !has_else {
            out.push_str(&format!("#else\n{}\n", generated[branches]));
        }
        out.push_str(code[s..e].trim());
        out.push('\n');
        if k < branches {
            out.push_str(&generated[k]);
            out.push('\n');
        }
    }
    let (file, line) = lines.at(chain.end);
    let file = file.replace('\\', "\\\\").replace('"', "\\\"");
    out.push_str(&format!("#line {line} \"{file}\"\n"));
    Ok(out)
}
