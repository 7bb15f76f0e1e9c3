//! Markdown to HTML with pulldown-cmark, for the crate walkthroughs and `harness explain`'s
//! text blocks. Raw HTML in the source is shown as text, except what the walkthroughs write on
//! purpose: a rung's anchor (`<a id="gemm-tiled"></a>`, kept) and comments such as the figure
//! markers (dropped). Links that point into the
//! repository (which a run folder, copied elsewhere, cannot reach) keep their words without
//! the link; web links and in-page anchors stay links.

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};

/// Whether a link target reaches anything from a run folder: the web, or an anchor.
fn reachable(dest: &str) -> bool {
    dest.starts_with("https://") || dest.starts_with("http://") || dest.starts_with('#')
}

/// `<a id="ID">` with an id of lowercase letters, digits and dashes: the start of a
/// walkthrough's rung anchor (`<a id="ID"></a>`, which Markdown reads as two pieces of inline
/// HTML), safe to keep as HTML.
fn is_anchor_start(html: &str) -> bool {
    html.trim()
        .strip_prefix("<a id=\"")
        .and_then(|rest| rest.strip_suffix("\">"))
        .is_some_and(|id| {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// An HTML comment (`<!-- figure: ... -->`): nothing a reader sees.
fn is_comment(html: &str) -> bool {
    let t = html.trim();
    t.starts_with("<!--") && t.ends_with("-->")
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
    // Whether the last piece of HTML was a kept anchor's start, whose `</a>` is kept too.
    let mut in_anchor = false;
    let events = parser.filter_map(|e| match e {
        Event::InlineHtml(h) if is_anchor_start(&h) => {
            in_anchor = true;
            Some(Event::InlineHtml(h))
        }
        Event::InlineHtml(h) if in_anchor && h.trim() == "</a>" => {
            in_anchor = false;
            Some(Event::InlineHtml(h))
        }
        Event::Html(h) | Event::InlineHtml(h) if is_comment(&h) => None,
        Event::Html(h) | Event::InlineHtml(h) => {
            in_anchor = false;
            Some(Event::Text(h))
        }
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
    // A wide table scrolls inside its own box, not the page (a narrow window's, or a SASS
    // count's many columns).
    out.replace("<table>", "<div class=\"scroll\"><table>")
        .replace("</table>", "</table></div>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_scroll_in_a_box_of_their_own() {
        let h = to_html("| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(
            h.starts_with("<div class=\"scroll\"><table>")
                && h.trim_end().ends_with("</table></div>"),
            "{h}"
        );
    }

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

    #[test]
    fn rung_anchors_stay_and_comments_go() {
        let h = to_html(
            "<a id=\"gemm-wgmma-n256\"></a>\n## 21\n\n<!-- figure: sass x from code -->\nText.\n\
             <a id=\"x\" onclick=\"f()\"></a>\n",
        );
        assert!(h.contains("<a id=\"gemm-wgmma-n256\"></a>"), "{h}");
        assert!(!h.contains("figure:"), "{h}");
        assert!(
            !h.contains("<a id=\"x\" onclick"),
            "any other HTML is text: {h}"
        );
    }
}
