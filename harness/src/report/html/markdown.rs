//! Markdown to HTML with pulldown-cmark, for the crate walkthroughs and `harness explain`'s
//! text blocks. Raw HTML in the source is shown as text, and links that point into the
//! repository (which a run folder, copied elsewhere, cannot reach) keep their words without
//! the link; web links and in-page anchors stay links.

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};

/// Whether a link target reaches anything from a run folder: the web, or an anchor.
fn reachable(dest: &str) -> bool {
    dest.starts_with("https://") || dest.starts_with("http://") || dest.starts_with('#')
}

/// Renders `text` (CommonMark with tables) as HTML.
pub fn to_html(text: &str) -> String {
    to_html_under(text, 0)
}

/// A heading `by` levels further down (at most `h6`).
fn lower(level: HeadingLevel, by: usize) -> HeadingLevel {
    HeadingLevel::try_from((level as usize + by).min(6)).unwrap_or(HeadingLevel::H6)
}

/// [`to_html`] with every heading `by` levels down, for a document placed under a page's own
/// headings (a crate README's `#` title becomes an `h2` with `by = 1`).
pub fn to_html_under(text: &str, by: usize) -> String {
    let parser = Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    // Links whose start was dropped, so that their end is dropped too.
    let mut dropped: Vec<bool> = Vec::new();
    let events = parser.filter_map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
        Event::Start(Tag::Link { dest_url, .. }) if !reachable(&dest_url) => {
            dropped.push(true);
            None
        }
        Event::Start(t @ Tag::Link { .. }) => {
            dropped.push(false);
            Some(Event::Start(t))
        }
        Event::End(TagEnd::Link) => match dropped.pop() {
            Some(true) => None,
            _ => Some(Event::End(TagEnd::Link)),
        },
        // An image could only load from the repository or the network: its description stays.
        Event::Start(Tag::Image { .. }) => Some(Event::Text(CowStr::from("[image] "))),
        Event::End(TagEnd::Image) => None,
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Some(Event::Start(Tag::Heading {
            level: lower(level, by),
            id,
            classes,
            attrs,
        })),
        Event::End(TagEnd::Heading(level)) => Some(Event::End(TagEnd::Heading(lower(level, by)))),
        e => Some(e),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_links_lose_their_target_web_links_keep_it() {
        let h = to_html("See [the kernel](kernels/01_x.cu) and [CUDA](https://docs.nvidia.com/x).");
        assert!(!h.contains("kernels/01_x.cu"), "{h}");
        assert!(h.contains("the kernel"), "{h}");
        assert!(h.contains("href=\"https://docs.nvidia.com/x\""), "{h}");
    }

    #[test]
    fn headings_move_down_under_the_page() {
        let h = to_html_under("# Title\n\n## Part\n", 1);
        assert!(
            h.contains("<h2>Title</h2>") && h.contains("<h3>Part</h3>"),
            "{h}"
        );
    }

    #[test]
    fn raw_html_is_text() {
        let h = to_html("a <script>x()</script> b");
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains("&lt;script&gt;"), "{h}");
    }
}
