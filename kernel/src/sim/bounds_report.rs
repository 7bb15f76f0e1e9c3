//! The bounds checks' reports made readable. The handlers in `sim_runtime.h` know where the
//! check failed (`FILE:LINE:COLUMN`) and the array's type, not its name; the source does. A
//! report comes back with the column dropped, the line quoted and, for an index, the array
//! named from the expression that ends at that column (gcc places an index check on the `]`
//! that closes it); for a write through a pointer, what it writes to (the check is placed on
//! the assignment's `=`).

use crate::plan::CudaSource;

/// Ends an index report: `FILE:LINE:COLUMN: index 8 is outside the array (of type
/// 'float [8]') it indexes; ...`.
const INDEX_CLAUSE: &str = " it indexes;";
/// Ends a pointer report: `FILE:LINE:COLUMN: a write of 'float' goes past the end of the
/// array or variable its pointer points into; ...`.
const POINTER_CLAUSE: &str = " points into;";
/// The first words of the reports, after their location.
const REPORT_STARTS: [&str; 4] = [
    ": index ",
    ": a read of ",
    ": a write of ",
    ": an access of ",
];

/// `message` with its bounds report, if it holds one, made readable; any other message as it
/// is.
pub(super) fn explain(message: String, src: &CudaSource) -> String {
    let Some(clause) = [INDEX_CLAUSE, POINTER_CLAUSE]
        .into_iter()
        .find(|c| message.contains(c))
    else {
        return message;
    };
    let Some(at) = REPORT_STARTS.iter().filter_map(|s| message.find(s)).min() else {
        return message;
    };
    let place = &message[..at];
    let place = place.rsplit(": ").next().unwrap_or(place);
    let mut parts = place.rsplitn(3, ':');
    let (Some(column), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
        return message;
    };
    let (Ok(column), Ok(line_no)) = (column.parse::<usize>(), line.parse::<usize>()) else {
        return message;
    };
    let located = message.replacen(place, &format!("{file}:{line_no}"), 1);
    let Some(quoted) = source_line(file, line_no, src) else {
        return located;
    };
    if clause == POINTER_CLAUSE {
        // A write is placed on its `=`: the expression before it is what was written.
        let located = match assigned_to(&quoted, column) {
            Some(target) if message[at..].starts_with(": a write of ") => located.replacen(
                " goes past the end",
                &format!(" to `{target}` goes past the end"),
                1,
            ),
            _ => located,
        };
        return located.replacen(clause, &format!(" points into, in `{}`;", quoted.trim()), 1);
    }
    match indexed_array(&quoted, column) {
        Some(array) => located
            .replacen(
                " is outside the array (",
                &format!(" is outside the array `{array}` ("),
                1,
            )
            .replacen(clause, &format!(", in `{}`;", quoted.trim()), 1),
        None => located.replacen(clause, &format!(" it indexes, in `{}`;", quoted.trim()), 1),
    }
}

/// Line `line_no` of `file` as the user wrote it: on disk (a user's kernel, whose source is
/// the lab's unit around it), else the embedded source of that name. Untrimmed, so that a
/// column counts into it; none when blank or too long to quote.
fn source_line(file: &str, line_no: usize, src: &CudaSource) -> Option<String> {
    let text = std::iter::once(std::path::PathBuf::from(file))
        .chain(src.include_dirs.iter().map(|d| d.join(file)))
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| (*src.file == *file).then(|| src.code.to_string()))?;
    let line = text.lines().nth(line_no.checked_sub(1)?)?;
    let len = line.trim().len();
    (len > 0 && len <= 160).then(|| line.to_string())
}

/// The array that the subscript closing at `column` (1-based, in bytes) indexes: `w` in
/// `w[i % 5]`, `s.v` in `s.v[i]`, `m[1]` in `m[1][j]`. None when that column holds no `]`
/// (a check inside a macro's expansion, say) or no array expression precedes its `[`.
fn indexed_array(line: &str, column: usize) -> Option<&str> {
    let bytes = line.as_bytes();
    let close = column.checked_sub(1)?;
    if bytes.get(close) != Some(&b']') {
        return None;
    }
    let open = matching_open(bytes, close)?;
    let array = line[expression_start(bytes, open)?..open].trim();
    (!array.is_empty()).then_some(array)
}

/// What the plain assignment whose `=` is at `column` writes to: `vals[r][c]` in
/// `vals[r][c] = x[k];`. None for another operator (`==`, `<=`, `+=`) or a target that is not
/// a name with its members and subscripts (`*p`, a cast).
fn assigned_to(line: &str, column: usize) -> Option<&str> {
    let bytes = line.as_bytes();
    let eq = column.checked_sub(1)?;
    if bytes.get(eq) != Some(&b'=') || bytes.get(eq + 1) == Some(&b'=') {
        return None;
    }
    let end = line[..eq].trim_end().len();
    if end == 0 || !matches!(bytes[end - 1], b']' | b'_' | b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9')
    {
        return None;
    }
    let start = expression_start(bytes, end)?;
    let target = &line[start..end];
    let first = target.bytes().next()?;
    (first.is_ascii_alphabetic() || first == b'_').then_some(target)
}

/// Where the postfix expression ending just before `end` starts: names joined by `.`, `->`
/// and `::`, with their subscripts and calls.
fn expression_start(bytes: &[u8], end: usize) -> Option<usize> {
    let mut start = end;
    while start > 0 {
        let prev = bytes[start - 1];
        start = if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'.' {
            start - 1
        } else if start >= 2 && matches!(&bytes[start - 2..start], b"->" | b"::") {
            start - 2
        } else if prev == b']' || prev == b')' {
            matching_open(bytes, start - 1)?
        } else {
            break;
        };
    }
    Some(start)
}

/// The `[` or `(` that the bracket at `close` closes.
fn matching_open(bytes: &[u8], close: usize) -> Option<usize> {
    let (open, shut) = match bytes[close] {
        b']' => (b'[', b']'),
        b')' => (b'(', b')'),
        _ => return None,
    };
    let mut depth = 0usize;
    for i in (0..=close).rev() {
        if bytes[i] == shut {
            depth += 1;
        } else if bytes[i] == open {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_array_is_named_from_the_subscript_that_closes_at_the_column() {
        let at = |line: &str, sub: &str| line.find(sub).unwrap() + sub.len();
        let line = "  if (i < n) Y[i] = w[i % 5] + 1;";
        assert_eq!(indexed_array(line, at(line, "w[i % 5]")), Some("w"));
        let line = "for (;;) m[i / 4][i % 4] = s.v[i] + this->t[k][j] + (*p)[q];";
        assert_eq!(indexed_array(line, at(line, "m[i / 4]")), Some("m"));
        assert_eq!(
            indexed_array(line, at(line, "m[i / 4][i % 4]")),
            Some("m[i / 4]")
        );
        assert_eq!(indexed_array(line, at(line, "s.v[i]")), Some("s.v"));
        assert_eq!(
            indexed_array(line, at(line, "this->t[k][j]")),
            Some("this->t[k]")
        );
        assert_eq!(indexed_array(line, at(line, "(*p)[q]")), Some("(*p)"));
        // Not a `]` at the column (a check inside a macro's expansion), or past the line.
        assert_eq!(indexed_array(line, 3), None);
        assert_eq!(indexed_array(line, 0), None);
        assert_eq!(indexed_array(line, 500), None);
        assert_eq!(indexed_array("x = [i];", 7), None);
    }

    #[test]
    fn a_write_is_named_from_the_assignment_at_the_column() {
        let at = |line: &str, sub: &str| line.find(sub).unwrap() + 1;
        let line = "    for (int c = 0; c < 4; ++c) vals[r][c] = x[r * 4 + c];";
        assert_eq!(assigned_to(line, at(line, "= x")), Some("vals[r][c]"));
        let line = "o.acc[i] = 0; p->v = 1;";
        assert_eq!(assigned_to(line, at(line, "= 0")), Some("o.acc[i]"));
        assert_eq!(assigned_to(line, at(line, "= 1")), Some("p->v"));
        // Not a plain assignment, or not a name: nothing is named.
        for (line, sub) in [
            ("if (a == b) c = d;", "== b"),
            ("a += b;", "= b"),
            ("*reinterpret_cast<int4 *>(&r[i]) = v;", "= v"),
            ("x = y;", "x"),
        ] {
            assert_eq!(assigned_to(line, at(line, sub)), None, "{line}");
        }
    }

    #[test]
    fn a_report_loses_its_column_and_quotes_its_line() {
        let src = CudaSource::embedded(
            "k.cu",
            "__global__ void k(float *y) {\n    float w[4];\n    y[0] = w[threadIdx.x % 5];\n}\n",
        );
        let tail = "; a GPU reads or writes whatever lies there, another variable or nothing \
                    (thread (4,0,0) of block (0,0,0))";
        let index = format!(
            "k: k.cu:3:29: index 4 is outside the array (of type 'float [4]') it indexes{tail}"
        );
        assert_eq!(
            explain(index, &src),
            format!(
                "k: k.cu:3: index 4 is outside the array `w` (of type 'float [4]'), in \
                 `y[0] = w[threadIdx.x % 5];`{tail}"
            )
        );
        // A column that is not the subscript's: the line is still quoted.
        let index = format!(
            "k: k.cu:3:12: index 4 is outside the array (of type 'float [4]') it indexes{tail}"
        );
        assert_eq!(
            explain(index, &src),
            format!(
                "k: k.cu:3: index 4 is outside the array (of type 'float [4]') it indexes, in \
                 `y[0] = w[threadIdx.x % 5];`{tail}"
            )
        );
        let pointer = format!(
            "k: k.cu:3:10: a write of 'float' goes past the end of the array or variable its \
             pointer points into{tail}"
        );
        assert_eq!(
            explain(pointer, &src),
            format!(
                "k: k.cu:3: a write of 'float' to `y[0]` goes past the end of the array or \
                 variable its pointer points into, in `y[0] = w[threadIdx.x % 5];`{tail}"
            )
        );
        // A file the simulator cannot read: the location alone, without its column.
        let elsewhere = "k: other.cu:9:4: index 4 is outside the array (of type 'float [4]') it \
                         indexes; a GPU";
        assert_eq!(
            explain(elsewhere.into(), &src),
            "k: other.cu:9: index 4 is outside the array (of type 'float [4]') it indexes; a GPU"
        );
        let other = "k: a read of 4 bytes at byte 8192 of __shared__ 'a'".to_string();
        assert_eq!(explain(other.clone(), &src), other);
    }
}
