//! The walkthroughs (the top README, each crate's README, the pages under `docs/`) cannot
//! drift from what they describe: every measured figure is what `harness docs --figures`
//! writes now from the run it names, every rung of `harness list` has its section in its
//! crate's README, every quoted excerpt of code is still in its source file, and the ladder
//! pages show every rung's lineage and source as they are.

use kernel::Role;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn walkthroughs() -> Vec<(PathBuf, String)> {
    harness::figures::walkthroughs(&root())
        .unwrap()
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect()
}

fn harness() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_harness"))
}

fn shown(file: &Path) -> String {
    file.strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string()
}

#[test]
fn every_figure_is_what_its_run_gives_now() {
    let files = walkthroughs();
    let mut jobs = Vec::new();
    for (file, text) in &files {
        let blocks =
            harness::figures::blocks(text).unwrap_or_else(|e| panic!("{}: {e:#}", shown(file)));
        jobs.extend(blocks.into_iter().map(|b| (file, text, b)));
    }
    assert!(
        !jobs.is_empty(),
        "no figure blocks found: the walkthroughs lost their markers"
    );
    // One at a time, as `harness docs --figures` does: a figure from code that differs is
    // compiled again afresh in processes of their own (`figures::settled`).
    let stale: Vec<String> = jobs
        .iter()
        .filter_map(|(file, text, b)| {
            let now = harness::figures::settled(b, text, &root(), &harness())
                .unwrap_or_else(|e| panic!("{}: {e:#}", shown(file)));
            let was = &text[b.body.clone()];
            (was != now).then(|| {
                // The lines that differ, so that a failure seen once can be read.
                let diff: Vec<String> = was
                    .lines()
                    .zip(now.lines())
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| format!("    was: {a}\n    now: {b}"))
                    .collect();
                format!(
                    "{} line {}: figure `{}` from {}\n{}",
                    shown(file),
                    b.line,
                    b.name,
                    b.run,
                    diff.join("\n")
                )
            })
        })
        .collect();
    assert!(
        stale.is_empty(),
        "figures that differ from what their run gives (run `cargo run -p harness -- docs \
         --figures`):\n{}",
        stale.join("\n")
    );
}

#[test]
fn a_figure_block_that_was_edited_by_hand_is_caught() {
    let (file, text) = walkthroughs()
        .into_iter()
        .find(|(_, t)| t.contains(harness::figures::OPEN))
        .expect("a walkthrough with a figure");
    let b = &harness::figures::blocks(&text).unwrap()[0];
    let run = harness::results::RunResults::load(&root().join(&b.run)).unwrap();
    let now = harness::figures::render(&b.name, &run, &b.run).unwrap();
    // One digit changed by hand no longer matches what the generator writes.
    let edited = now.replacen(|c: char| c.is_ascii_digit(), "#", 1);
    assert_ne!(edited, now, "{}: figure without a digit", shown(&file));
    let rewritten = harness::figures::rewrite(
        &format!("x\n{}{}{}", b_open(b), edited, harness::figures::CLOSE),
        &root(),
        &harness(),
    )
    .unwrap();
    assert!(rewritten.contains(&now) && !rewritten.contains(&edited));
}

#[test]
fn a_figure_from_code_changes_only_when_two_compiles_agree() {
    use harness::figures::{CLOSE, OPEN, blocks, from_code, settled};
    let name = "resources gemm-naive";
    let now = from_code(name).unwrap();
    let edited = now.replacen(|c: char| c.is_ascii_digit(), "#", 1);
    assert_ne!(edited, now);
    let text = format!("x\n{OPEN}{name} from code -->{edited}{CLOSE}");
    let b = &blocks(&text).unwrap()[0];
    // The harness binary compiles afresh what this process compiled: the edit is replaced.
    assert_eq!(settled(b, &text, &root(), &harness()).unwrap(), now);
    // Stand-ins for the binary. One that gives the text's figure back (as a compile of the
    // common form answers a text this process compiled to a rare one): the text stays. One
    // that gives a new figure every time: an error naming the figure. One that gives the same
    // new figure twice: that figure.
    let dir = std::env::temp_dir().join(format!("kernel-lab-settled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stand_in = |file: &str, script: String| {
        let exe = dir.join(file);
        std::fs::write(&exe, format!("#!/bin/sh\n{script}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    };
    let printed = dir.join("edited.txt");
    std::fs::write(&printed, &edited).unwrap();
    let agrees = stand_in("agrees", format!("cat '{}'", printed.display()));
    assert_eq!(settled(b, &text, &root(), &agrees).unwrap(), edited);
    let count = dir.join("count");
    let differs = stand_in(
        "differs",
        format!(
            "echo x >> '{0}'; printf 'answer %s' $(wc -l < '{0}')",
            count.display()
        ),
    );
    let e = format!("{:#}", settled(b, &text, &root(), &differs).unwrap_err());
    assert!(e.contains(name) && e.contains("4 processes"), "{e}");
    assert!(e.contains("answer 1") && e.contains("answer 3"), "{e}");
    let third = stand_in("third", "printf 'a third form'".to_string());
    assert_eq!(settled(b, &text, &root(), &third).unwrap(), "a third form");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn b_open(b: &harness::figures::Block) -> String {
    format!("{}{} from {} -->", harness::figures::OPEN, b.name, b.run)
}

#[test]
fn a_figure_naming_a_row_its_run_lacks_is_an_error() {
    let text = format!(
        "{}gemm 512x512x512 gemm-nonexistent from results/cpu-intel-r-xeon-r-processor-2-threads -->\n{}",
        harness::figures::OPEN,
        harness::figures::CLOSE
    );
    let e = harness::figures::rewrite(&text, &root(), &harness()).unwrap_err();
    assert!(format!("{e:#}").contains("gemm-nonexistent"), "{e:#}");
    let unclosed = format!(
        "{}gemm 512x512x512 from results/x -->\n",
        harness::figures::OPEN
    );
    assert!(harness::figures::blocks(&unclosed).is_err());
    // Quoted in prose, not on a line of its own: not a figure.
    let prose = format!(
        "markers such as `{}NAME from results/FOLDER -->`\n",
        harness::figures::OPEN
    );
    assert!(harness::figures::blocks(&prose).unwrap().is_empty());
}

/// The 16-bit bounds (`Precision::tolerance`) leave room for correct rows four times over:
/// every passing FP16 and BF16 row of the published runs, the lab's and the libraries', is
/// within a quarter of its bound, as the bounds' comment says.
#[test]
fn published_sixteen_bit_rows_stay_within_a_quarter_of_their_bounds() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("results")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(run) = harness::results::RunResults::load(&dir) else {
            continue;
        };
        for w in &run.workloads {
            for s in &w.shapes {
                for r in s.rows.iter().filter(|r| r.passed()) {
                    let p = r.precision;
                    let Some(c) = r
                        .check
                        .filter(|_| matches!(p, kernel::Precision::Fp16 | kernel::Precision::Bf16))
                    else {
                        continue;
                    };
                    assert!(
                        c.rel_error <= p.tolerance() / 4.0,
                        "{}: {} at {}: {:e} against {p}'s bound {:e}",
                        shown(&dir),
                        r.id,
                        s.label,
                        c.rel_error,
                        p.tolerance()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} rows");
}

/// Convention: a rung's walkthrough section is a heading in its stage crate's README, right
/// after an anchor line holding `<a id="RUNG-ID"></a>` (ladder pages link it as
/// `README.md#RUNG-ID`).
#[test]
fn every_rung_has_a_walkthrough_section_in_its_crate_readme() {
    let mut missing = Vec::new();
    for k in harness::registry::all() {
        let i = k.info();
        if i.role != Role::Rung {
            continue;
        }
        let file = root().join(i.stage.to_string()).join("README.md");
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", shown(&file)));
        let anchor = format!("<a id=\"{}\"></a>", i.id);
        let lines: Vec<&str> = text.lines().collect();
        let ok = lines.iter().enumerate().any(|(n, l)| {
            l.contains(&anchor)
                && l.trim_start().starts_with("<a id=")
                && lines.get(n + 1).is_some_and(|h| h.starts_with('#'))
        });
        if !ok {
            missing.push(format!(
                "{} ({}): no `{anchor}` line before a heading",
                i.id,
                shown(&file)
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "rungs without a walkthrough section:\n{}",
        missing.join("\n")
    );
}

/// A fenced code block in a walkthrough.
struct Excerpt {
    file: PathBuf,
    line: usize,
    /// The file it quotes, from a `<!-- quote: PATH -->` line right before the fence.
    quote: Option<String>,
    lines: Vec<String>,
}

/// The ```cuda, ```cpp and ```rust blocks of a Markdown text.
fn excerpts(file: &Path, text: &str) -> Vec<Excerpt> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let l = lines[n].trim_start();
        let lang = l.strip_prefix("```").unwrap_or("");
        if !matches!(lang.trim(), "cuda" | "cpp" | "rust") {
            n += 1;
            continue;
        }
        let quote = n
            .checked_sub(1)
            .and_then(|p| lines[p].trim().strip_prefix("<!-- quote:"))
            .and_then(|q| q.strip_suffix("-->"))
            .map(|q| q.trim().to_string());
        let start = n;
        n += 1;
        let mut body = Vec::new();
        while n < lines.len() && !lines[n].trim_start().starts_with("```") {
            body.push(lines[n].to_string());
            n += 1;
        }
        out.push(Excerpt {
            file: file.to_path_buf(),
            line: start + 1,
            quote,
            lines: body,
        });
        n += 1;
    }
    out
}

/// A line without its `//` comment (an excerpt may leave comments out or shorten them), its
/// runs of white space made one space, trimmed. An elision line is kept as it is.
fn normalize(l: &str) -> String {
    let t = l.trim();
    let code = if is_elision(t) {
        t
    } else {
        t.split_once("//").map_or(t, |(code, _)| code)
    };
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_elision(l: &str) -> bool {
    matches!(l, "..." | "// ...")
}

/// Whether the non-blank lines of `excerpt`, cut at elisions (`...`), appear in `source` in
/// order, each piece as consecutive non-blank lines.
fn quotes(excerpt: &[String], source: &str) -> bool {
    let src: Vec<String> = source
        .lines()
        .map(normalize)
        .filter(|l| !l.is_empty())
        .collect();
    let mut pieces: Vec<Vec<String>> = vec![Vec::new()];
    for l in excerpt
        .iter()
        .map(|l| normalize(l))
        .filter(|l| !l.is_empty())
    {
        // `...` and `// ...` both mark elided lines.
        if is_elision(&l) {
            pieces.push(Vec::new());
        } else {
            pieces.last_mut().unwrap().push(l);
        }
    }
    let mut at = 0;
    for p in pieces.iter().filter(|p| !p.is_empty()) {
        match src[at..].windows(p.len()).position(|w| w == &p[..]) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    true
}

/// The source files of a crate: its kernels and its Rust.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.join("kernels"), dir.join("src")];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .extension()
                .is_some_and(|x| ["cu", "cuh", "h", "rs"].iter().any(|e| x == *e))
            {
                out.push(p);
            }
        }
    }
    out
}

/// Convention: a block preceded by `<!-- quote: PATH -->` (PATH from the repository root)
/// quotes that file; any other block of a crate's README quotes one of the crate's sources
/// (`kernels/`, `src/`). Outside a crate the marker is required. Lines may be elided with `...`.
#[test]
fn every_quoted_excerpt_matches_its_source() {
    let mut stale = Vec::new();
    let mut seen = 0;
    for (file, text) in walkthroughs() {
        let dir = file.parent().unwrap().to_path_buf();
        let in_crate = dir.join("Cargo.toml").is_file()
            && dir.canonicalize().ok() != root().canonicalize().ok();
        for x in excerpts(&file, &text) {
            seen += 1;
            let candidates = match &x.quote {
                Some(q) => vec![root().join(q)],
                None if in_crate => sources(&dir),
                None => {
                    stale.push(format!(
                        "{} line {}: no `<!-- quote: PATH -->` line names the file it quotes",
                        shown(&x.file),
                        x.line
                    ));
                    continue;
                }
            };
            let found = candidates
                .iter()
                .any(|c| std::fs::read_to_string(c).is_ok_and(|s| quotes(&x.lines, &s)));
            if !found {
                stale.push(format!(
                    "{} line {}: not in {}",
                    shown(&x.file),
                    x.line,
                    x.quote
                        .clone()
                        .unwrap_or_else(|| format!("the sources of {}", shown(&dir)))
                ));
            }
        }
    }
    assert!(seen > 0, "no code excerpts found");
    assert!(
        stale.is_empty(),
        "excerpts that no longer match their source:\n{}",
        stale.join("\n")
    );
}

#[test]
fn an_excerpt_matches_with_elisions_and_not_when_changed() {
    let src = "int a = 0;\n\nfor (int i = 0; i < n; ++i) {\n    a += i;\n}\nreturn a;\n";
    let ex = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(quotes(&ex("for (int i = 0; i < n; ++i) {\n  a += i;"), src));
    assert!(quotes(&ex("int a = 0;\n...\nreturn a;"), src));
    assert!(
        !quotes(&ex("int a = 0;\nreturn a;"), src),
        "a gap without `...`"
    );
    assert!(
        !quotes(&ex("return a;\n...\nint a = 0;"), src),
        "out of order"
    );
    assert!(!quotes(&ex("a -= i;"), src));
}

/// The ladder pages (`harness docs`) hold each rung's lineage and source diff as the code gives
/// them now: a header, a kernel or a parent changed without the pages regenerated is caught.
/// The compiler's figures on the pages are not compared: ptxas gives some programs in a
/// second form now and then, and `harness docs` compiles them in a process of its own.
#[test]
fn the_ladder_pages_show_every_rungs_current_source() {
    let all = harness::registry::all();
    for w in kernel::Workload::ALL
        .into_iter()
        .filter(|w| !w.is_network())
    {
        let file = format!("docs/ladders/{}.md", w.name());
        let page = std::fs::read_to_string(root().join(&file)).unwrap();
        for k in harness::registry::for_workload(&all, w)
            .into_iter()
            .filter(|k| k.info().role == Role::Rung)
        {
            let parent = harness::registry::parent(&all, k);
            let now = harness::cmd::explain::from_sources(k, parent, None).markdown();
            let id = k.info().id;
            let shown = page
                .split(&format!("<a id=\"{id}\"></a>"))
                .nth(1)
                .unwrap_or("")
                .trim_start();
            let first = now.lines().zip(shown.lines()).find(|(a, b)| a != b);
            assert!(
                page.contains(&now),
                "{file} does not show {id} as its sources are now (first difference, now and \
                 on the page: {first:?}): run `cargo run -p harness -- docs` (with an empty \
                 KERNEL_LAB_NVRTC_CACHE)"
            );
        }
    }
}
