//! Inline SVG bar charts for the HTML report (no scripts, no fonts to load): grouped bars with
//! axes, ticks, a legend and an optional dashed reference line.

use super::doc::esc;

const PALETTE: [&str; 6] = [
    "#3b6ea5", "#d9822b", "#3f9f5f", "#a84a8c", "#7a6f2b", "#5c5c5c",
];

/// A grouped bar chart.
pub(super) struct BarChart<'a> {
    pub title: &'a str,
    /// One label per group on the x axis.
    pub labels: Vec<String>,
    /// `(series name, one value per label)`.
    pub series: Vec<(String, Vec<f64>)>,
    /// Top of the y axis (`None`: the largest value, rounded up).
    pub y_max: Option<f64>,
    pub y_label: &'a str,
    /// A horizontal reference line `(value, label)`.
    pub reference: Option<(f64, String)>,
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= v {
            return m * mag;
        }
    }
    10.0 * mag
}

fn fmt_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Where the plot area lies in the picture and how values map onto it.
struct Frame {
    left: f64,
    top: f64,
    /// Plot width and height.
    pw: f64,
    ph: f64,
    y_max: f64,
}

impl Frame {
    /// The y coordinate of a value (clamped to the plot area).
    fn y(&self, v: f64) -> f64 {
        self.top + self.ph - (v / self.y_max).clamp(0.0, 1.0) * self.ph
    }
}

impl BarChart<'_> {
    pub(super) fn render(&self) -> String {
        let (w, h) = (640.0_f64, 260.0_f64);
        let (left, right, top, bottom) = (56.0, 150.0, 28.0, 40.0);
        let data_max = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let f = Frame {
            left,
            top,
            pw: w - left - right,
            ph: h - top - bottom,
            y_max: self.y_max.unwrap_or_else(|| nice_max(data_max)),
        };
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
            esc(self.title)
        );
        s.push_str(&format!(
            "<text x=\"{left}\" y=\"16\" font-size=\"13\" font-weight=\"600\">{}</text>\n",
            esc(self.title)
        ));
        self.y_axis(&mut s, &f);
        self.bars(&mut s, &f);
        self.reference_and_legend(&mut s, &f);
        s.push_str("</svg>");
        s
    }

    /// The horizontal grid lines with their ticks, and the y axis label.
    fn y_axis(&self, s: &mut String, f: &Frame) {
        let (left, top, pw, ph) = (f.left, f.top, f.pw, f.ph);
        for i in 0..=4 {
            let v = f.y_max * f64::from(i) / 4.0;
            let yy = f.y(v);
            s.push_str(&format!(
                "<line x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#e1e4e8\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
                left + pw,
                left - 6.0,
                yy + 4.0,
                fmt_tick(v)
            ));
        }
        s.push_str(&format!(
            "<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">{}</text>\n",
            top + ph / 2.0,
            top + ph / 2.0,
            esc(self.y_label)
        ));
    }

    /// Each group's bars, one per series, and the group's label.
    fn bars(&self, s: &mut String, f: &Frame) {
        let (left, top, pw, ph) = (f.left, f.top, f.pw, f.ph);
        let groups = self.labels.len().max(1) as f64;
        let gw = pw / groups;
        let ns = self.series.len().max(1) as f64;
        let bw = (gw * 0.8 / ns).max(1.0);
        for (gi, label) in self.labels.iter().enumerate() {
            let gx = left + gi as f64 * gw + gw * 0.1;
            for (si, (name, vals)) in self.series.iter().enumerate() {
                let v = vals
                    .get(gi)
                    .copied()
                    .filter(|v| v.is_finite())
                    .unwrap_or(0.0);
                let x = gx + si as f64 * bw;
                let yy = f.y(v);
                s.push_str(&format!(
                    "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {} = {}</title></rect>\n",
                    (bw - 1.0).max(0.5),
                    top + ph - yy,
                    PALETTE[si % PALETTE.len()],
                    esc(name),
                    esc(label),
                    fmt_tick(v)
                ));
            }
            s.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                left + gi as f64 * gw + gw / 2.0,
                top + ph + 16.0,
                esc(label)
            ));
        }
    }

    /// The dashed reference line, the x axis and the legend.
    fn reference_and_legend(&self, s: &mut String, f: &Frame) {
        let (left, top, pw, ph) = (f.left, f.top, f.pw, f.ph);
        if let Some((v, label)) = &self.reference {
            let yy = f.y(*v);
            s.push_str(&format!(
                "<line x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#cf222e\" stroke-dasharray=\"5 4\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#cf222e\">{}</text>\n",
                left + pw,
                left + pw + 6.0,
                yy + 4.0,
                esc(label)
            ));
        }
        s.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#57606a\"/>\n",
            top + ph,
            left + pw,
            top + ph
        ));
        for (si, (name, _)) in self.series.iter().enumerate() {
            let ly = top + 14.0 + si as f64 * 16.0;
            let lx = left + pw + 16.0;
            s.push_str(&format!(
                "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{}</text>\n",
                ly - 9.0,
                PALETTE[si % PALETTE.len()],
                lx + 14.0,
                esc(name)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_bar_per_value_and_escapes_names() {
        let c = BarChart {
            title: "t",
            labels: vec!["1".into(), "2".into()],
            series: vec![
                ("a<b".into(), vec![1.0, 2.0]),
                ("c".into(), vec![0.5, f64::NAN]),
            ],
            y_max: None,
            y_label: "rate",
            reference: Some((1.0, "mean".into())),
        };
        let svg = c.render();
        assert_eq!(svg.matches("<rect").count(), 4 + 2);
        assert!(svg.contains("a&lt;b"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(nice_max(0.83), 1.0);
        assert_eq!(nice_max(17.0), 20.0);
    }
}
