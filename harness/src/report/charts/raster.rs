//! The PNG backend: plotters' bitmap, with text laid out glyph by glyph as the font says.
//! plotters 0.3.7 draws each glyph of a PNG label at the pen's whole-pixel position without
//! the glyph's left side bearing, so letters with a wide bearing (`1`, `n`, `l` in DejaVu
//! Sans) sit too far left and leave a gap after them ("con volution", "30 1 ms"). Here each
//! glyph is placed at its fractional pen position, bearing and kerning included, and its
//! coverage blended into the bitmap; everything else is plotters' bitmap as it is.

use super::canvas::font;
use ab_glyph::{Font, ScaleFont, point};
use plotters::prelude::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};

/// plotters' bitmap with text drawn by [`GlyphBitmap::draw_text`].
pub struct GlyphBitmap<'a>(pub BitMapBackend<'a>);

type Drawn<'a> = Result<(), DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>>;

impl<'a> DrawingBackend for GlyphBitmap<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Drawn<'a> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Drawn<'a> {
        self.0.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Drawn<'a> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Drawn<'a> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Drawn<'a> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Drawn<'a> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Drawn<'a> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Drawn<'a> {
        self.0.fill_polygon(vert, style)
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Drawn<'a> {
        self.0.blit_bitmap(pos, size, src)
    }

    /// Horizontal text in the embedded font, anchored as plotters anchors it (the canvas's
    /// boxes assume that placement); rotated text, which no chart draws, is plotters' own.
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Drawn<'a> {
        let color = style.color();
        let Ok(font) = font() else {
            return self.0.draw_text(text, style, pos);
        };
        if color.alpha == 0.0 || !matches!(style.transform(), FontTransform::None) {
            return self.0.draw_text(text, style, pos);
        }
        let size = style.size() as f32;
        let scaled = font.as_scaled(size);
        let glyphs: Vec<_> = text.chars().map(|c| font.glyph_id(c)).collect();
        let width: f32 = glyphs.iter().map(|&g| scaled.h_advance(g)).sum::<f32>()
            + glyphs
                .windows(2)
                .map(|p| scaled.kern(p[0], p[1]))
                .sum::<f32>();
        // plotters' box: the advances' sum wide, size / 1.24 high (both truncated), its
        // baseline size / 2 below the box's top.
        let (width, height) = (width as i32, (f64::from(size) / 1.24) as i32);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let baseline = (pos.1 + dy) as f32 + size / 2.0;
        let mut pen = (pos.0 + dx) as f32;
        let (w, h) = self.get_size();
        let mut prev = None;
        for &id in &glyphs {
            if let Some(p) = prev {
                pen += scaled.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(size, point(pen, baseline));
            pen += scaled.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            let mut pixels = Vec::new();
            outline.draw(|x, y, coverage| {
                let x = bounds.min.x as i32 + x as i32;
                let y = bounds.min.y as i32 + y as i32;
                if coverage > 0.0 && x >= 0 && y >= 0 && x < w as i32 && y < h as i32 {
                    pixels.push(((x, y), coverage.min(1.0)));
                }
            });
            for (at, coverage) in pixels {
                let alpha = color.alpha * f64::from(coverage);
                self.0.draw_pixel(
                    at,
                    BackendColor {
                        alpha,
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;
    use plotters::style::text_anchor::Pos;

    /// The columns that `text`, drawn black and left-anchored at x = 20, inks.
    fn inked_columns(text: &str, size: f64) -> (u32, u32) {
        let (w, h) = (200u32, 80u32);
        let mut buf = vec![255u8; (w * h * 3) as usize];
        {
            let root =
                GlyphBitmap(BitMapBackend::with_buffer(&mut buf, (w, h))).into_drawing_area();
            let style = (crate::report::charts::canvas::FONT, size)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(text.to_string(), (20, 40), style))
                .unwrap();
            root.present().unwrap();
        }
        let dark = |x: u32| (0..h).any(|y| buf[((y * w + x) * 3) as usize] < 128);
        let cols: Vec<u32> = (0..w).filter(|&x| dark(x)).collect();
        (cols[0], *cols.last().unwrap())
    }

    #[test]
    fn each_glyph_keeps_its_side_bearing_and_advance() {
        let font = font().unwrap();
        let size = 40.0;
        let scaled = font.as_scaled(size as f32);
        for text in ["n", "1", "l", "n1l"] {
            let ids: Vec<_> = text.chars().map(|c| font.glyph_id(c)).collect();
            let last = *ids.last().unwrap();
            let before_last: f32 = ids[..ids.len() - 1]
                .iter()
                .map(|&g| scaled.h_advance(g))
                .sum::<f32>()
                + ids.windows(2).map(|p| scaled.kern(p[0], p[1])).sum::<f32>();
            // The outlines' ends, in font units: the first glyph's left, the last one's right.
            let ends = |g| font.outline(g).map(|o| o.bounds).unwrap();
            let left = 20.0 + ends(ids[0]).min.x * scaled.h_scale_factor();
            let right = 20.0 + before_last + ends(last).max.x * scaled.h_scale_factor();
            let (ink_left, ink_right) = inked_columns(text, size);
            assert!(
                (ink_left as f32 - left).abs() <= 1.0,
                "{text:?} starts at {ink_left}, not {left}"
            );
            assert!(
                (ink_right as f32 - right).abs() <= 1.5,
                "{text:?} ends at {ink_right}, not {right}"
            );
        }
    }
}
