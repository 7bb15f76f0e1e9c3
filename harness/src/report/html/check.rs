//! Reads a run's pages back as files, for the tests without a browser: the links each page
//! holds, the anchors it defines, and their total size against the budget.

use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The most bytes the pages of a run may take (`index.html` and `html/`, the charts inline,
/// the PNGs beside them not counted), for a run of every workload of the `[cpu]` list at the
/// simulator's small shapes (more shapes than the bench's): thirteen workloads, over a hundred
/// rung pages (about 20 KB each, most of it the source diff against the parent), the index
/// with every shape's chart inline. Each crate's walkthrough is one page, however many ladders
/// link to it. A new rung adds its page and its rows: this bound catches a page that starts
/// carrying what it should link to, not the ladder's growth by a few rungs. (With GEMM's 28
/// rungs such a run's pages came to just under 5 MiB, and to just over it on a busy machine,
/// whose disagreeing timing rounds each add a note: hence 6.)
pub const BUDGET_BYTES: u64 = 6 * 1024 * 1024;

/// The pages of a run folder, by path relative to it.
#[derive(Debug)]
pub struct Site {
    pub root: PathBuf,
    pub pages: BTreeMap<PathBuf, String>,
}

/// The values of `attr="..."` in `html`, their character references decoded as a browser
/// does (the templates escape `/` as `&#x2f;`).
pub fn attributes(html: &str, attr: &str) -> Vec<String> {
    let pat = format!(" {attr}=\"");
    html.match_indices(&pat)
        .filter_map(|(i, _)| {
            let rest = &html[i + pat.len()..];
            rest.find('"').map(|end| decode(&rest[..end]))
        })
        .collect()
}

/// The character references the templates write, decoded.
fn decode(s: &str) -> String {
    s.replace("&#x2f;", "/")
        .replace("&#x27;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// `a/b/../c` as `a/c`.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The size in bytes of `index.html` and everything under `html/` in `dir`.
pub fn html_bytes(dir: &Path) -> Result<u64> {
    let mut n = std::fs::metadata(dir.join(super::INDEX))?.len();
    for e in std::fs::read_dir(dir.join(super::PAGES))? {
        n += e?.metadata()?.len();
    }
    Ok(n)
}

impl Site {
    /// `index.html` and the pages under `html/`.
    pub fn read(root: &Path) -> Result<Self> {
        let mut pages = BTreeMap::new();
        let mut files = vec![PathBuf::from(super::INDEX)];
        let dir = root.join(super::PAGES);
        for e in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
            let name = e?.file_name();
            if name.to_string_lossy().ends_with(".html") {
                files.push(Path::new(super::PAGES).join(name));
            }
        }
        for f in files {
            let text = std::fs::read_to_string(root.join(&f))
                .with_context(|| format!("{}", root.join(&f).display()))?;
            pages.insert(f, text);
        }
        Ok(Self {
            root: root.to_path_buf(),
            pages,
        })
    }

    /// Every local link of every page: (page, target file relative to the root, anchor).
    pub fn links(&self) -> Vec<(PathBuf, PathBuf, Option<String>)> {
        let mut out = Vec::new();
        for (page, html) in &self.pages {
            let base = page.parent().unwrap_or(Path::new(""));
            for link in attributes(html, "href")
                .into_iter()
                .chain(attributes(html, "src"))
            {
                if link.starts_with("http://")
                    || link.starts_with("https://")
                    || link.starts_with("mailto:")
                {
                    continue;
                }
                let (file, anchor) = match link.split_once('#') {
                    Some((f, a)) => (f, Some(a.to_string())),
                    None => (link.as_str(), None),
                };
                let target = if file.is_empty() {
                    page.clone()
                } else {
                    normal(&base.join(file))
                };
                out.push((page.clone(), target, anchor));
            }
        }
        out
    }

    /// Links whose file or anchor does not exist, as `page -> target#anchor`.
    pub fn broken_links(&self) -> Vec<String> {
        let ids: BTreeMap<&PathBuf, BTreeSet<String>> = self
            .pages
            .iter()
            .map(|(p, html)| (p, attributes(html, "id").into_iter().collect()))
            .collect();
        self.links()
            .into_iter()
            .filter(|(_, target, anchor)| {
                if !self.root.join(target).is_file() {
                    return true;
                }
                match anchor.as_deref() {
                    None | Some("") => false,
                    Some(a) => !ids.get(target).is_some_and(|set| set.contains(a)),
                }
            })
            .map(|(page, target, anchor)| {
                format!(
                    "{} -> {}#{}",
                    page.display(),
                    target.display(),
                    anchor.unwrap_or_default()
                )
            })
            .collect()
    }

    /// The pages no chain of links from `start` reaches.
    pub fn unreached(&self, start: &str) -> Vec<PathBuf> {
        let links = self.links();
        let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
        let mut todo = vec![PathBuf::from(start)];
        while let Some(p) = todo.pop() {
            if !seen.insert(p.clone()) {
                continue;
            }
            for (from, to, _) in &links {
                if *from == p && self.pages.contains_key(to) && !seen.contains(to) {
                    todo.push(to.clone());
                }
            }
        }
        self.pages
            .keys()
            .filter(|p| !seen.contains(*p))
            .cloned()
            .collect()
    }
}
