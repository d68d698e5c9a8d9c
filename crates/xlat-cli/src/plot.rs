//! Draws an experiment's plots ([`PlotSpec`]) as PNG files from the CSV tables it wrote, so
//! a plot shows exactly what the results say and can be redrawn from them (`xlat plot`).

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;
use xlat::config::plot::{PlotData, PlotKind, PlotSpec};

/// The font every plot uses, shipped with the binary so plots look the same everywhere.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const WIDTH_PER_PANEL: u32 = 640;
const HEIGHT: u32 = 480;

/// A table read back from CSV: header names and rows of cells.
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn read(path: &Path) -> Result<Table> {
        let mut reader = csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
        let columns = reader.headers()?.iter().map(str::to_string).collect();
        let rows = reader.records().map(|r| r.map(|r| r.iter().map(str::to_string).collect())).collect::<Result<_, _>>()?;
        Ok(Table { columns, rows })
    }

    fn index(&self, column: &str) -> Result<usize> {
        self.columns.iter().position(|c| c == column).ok_or_else(|| anyhow!("the table has no column `{column}`"))
    }
}

/// One plotted series: its label and (x, y) points, x as text for bars.
type Series = Vec<(String, Vec<(String, f64)>)>;

/// Draws every plot of an experiment into `dir`, from the tables there. A plot that cannot be
/// drawn is an error, after every other plot was drawn (see [`draw_those_possible`]).
pub fn draw_all(dir: &Path, plots: &[PlotSpec]) -> Result<()> {
    let mut failed = draw_those_possible(dir, plots)?.into_iter();
    let Some(first) = failed.next() else { return Ok(()) };
    for e in failed {
        eprintln!("error: {}", crate::message(&e));
    }
    Err(first)
}

/// Draws every plot it can, returning the error of each it cannot (naming the plot): partial
/// results may lack what a plot shows (a workload the run did not reach). An earlier run's
/// file of a plot not drawn is removed: it would not show these results.
pub fn draw_those_possible(dir: &Path, plots: &[PlotSpec]) -> Result<Vec<anyhow::Error>> {
    let mut failed = Vec::new();
    for plot in plots {
        if let Err(e) = draw_named(dir, plot) {
            xlat::atomic::remove_stale(&dir.join(&plot.file))?;
            failed.push(e);
        }
    }
    Ok(failed)
}

/// [`draw`], its error naming the plot.
fn draw_named(dir: &Path, plot: &PlotSpec) -> Result<()> {
    draw(dir, plot).with_context(|| format!("drawing {}", plot.file))
}

/// Draws one plot, writing it to a temporary file renamed into place.
pub fn draw(dir: &Path, plot: &PlotSpec) -> Result<()> {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let data = dir.join(plot.data.file());
    // The results are there but no eviction ages: the run wrote none (a missing directory
    // is reported by the read below).
    if plot.data == PlotData::EvictionAge && !data.exists() && dir.join(PlotData::Results.file()).exists() {
        bail!("no machine completed a window of `age_window` evictions in this run, so there is no {} to plot", plot.data.file());
    }
    let table = Table::read(&data)?;
    let panels = panels(&table, plot)?;
    let out = dir.join(&plot.file);
    let tmp = dir.join(format!(".{}.tmp.png", plot.file.trim_end_matches(".png")));
    let drawn = render(&tmp, plot, &panels, &Colours::of(&panels));
    // plotters writes the file when its drawing area is dropped, even after an error.
    if drawn.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    drawn?;
    std::fs::rename(&tmp, &out).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

/// Draws `panels` side by side into the PNG file `path`.
fn render(path: &Path, plot: &PlotSpec, panels: &[(String, Series)], colours: &Colours) -> Result<()> {
    let width = WIDTH_PER_PANEL * panels.len() as u32;
    let root = BitMapBackend::new(path, (width, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&plot.title, ("sans-serif", 20))?;
    let areas = root.split_evenly((1, panels.len()));
    for (area, (name, series)) in areas.iter().zip(panels) {
        match plot.kind {
            PlotKind::Lines => lines(area, plot, name, series, colours)?,
            PlotKind::Bars => bars(area, plot, name, series, colours)?,
        }
    }
    root.present()?;
    Ok(())
}

/// The rows passing `only`, grouped by panel then series, in order of first appearance.
/// Fails when no row passes, or when a y column has no number in the rows that do: such a
/// plot would be empty.
fn panels(table: &Table, plot: &PlotSpec) -> Result<Vec<(String, Series)>> {
    let x = table.index(&plot.x)?;
    let ys = plot.y.iter().map(|y| table.index(y)).collect::<Result<Vec<_>>>()?;
    let series = plot.series.as_deref().map(|s| table.index(s)).transpose()?;
    let panel = plot.panels.as_deref().map(|p| table.index(p)).transpose()?;
    let filters = plot.only.iter().map(|(c, v)| Ok((table.index(c)?, v.as_str()))).collect::<Result<Vec<_>>>()?;
    let mut out: Vec<(String, Series)> = Vec::new();
    let mut matched = false;
    let mut plotted = vec![false; ys.len()];
    for row in &table.rows {
        if !filters.iter().all(|&(c, v)| row[c] == v) {
            continue;
        }
        matched = true;
        for (i, (&y, y_name)) in ys.iter().zip(&plot.y).enumerate() {
            let Some(value) = row[y].parse::<f64>().ok().filter(|v| v.is_finite()) else { continue };
            plotted[i] = true;
            let mut label = series.map_or(String::new(), |s| row[s].clone());
            if ys.len() > 1 {
                label = if label.is_empty() { y_name.clone() } else { format!("{label} {y_name}") };
            }
            let panel_name = panel.map_or(String::new(), |p| row[p].clone());
            let points = entry(entry(&mut out, panel_name.clone()), label.clone());
            // Rows of one point agree (an OS metric repeats on every TLB row of its machine);
            // two values at one point would be drawn over each other, one hidden.
            match points.iter().find(|(at, _)| *at == row[x]) {
                Some(&(_, seen)) if seen == value => {}
                Some(&(_, seen)) => bail!(
                    "rows disagree at {} = {}{}{}: {seen} and {value}; tell them apart with `series`, `panels` or `only`",
                    plot.x,
                    row[x],
                    if label.is_empty() { String::new() } else { format!(", series {label}") },
                    if panel_name.is_empty() { String::new() } else { format!(", panel {panel_name}") },
                ),
                None => points.push((row[x].clone(), value)),
            }
        }
    }
    let file = plot.data.file();
    if table.rows.is_empty() {
        bail!("{file} has no rows");
    }
    if !matched {
        let only: Vec<String> = plot.only.iter().map(|(c, v)| format!("{c} = \"{v}\"")).collect();
        bail!("no row of {file} matches `only` ({})", only.join(", "));
    }
    if let Some(i) = plotted.iter().position(|p| !p) {
        bail!("column `{}` of {file} has no numbers in the rows plotted", plot.y[i]);
    }
    Ok(out)
}

/// The value under `key` in a list of (key, value) kept in order of first appearance,
/// inserted empty when missing.
fn entry<T: Default>(list: &mut Vec<(String, T)>, key: String) -> &mut T {
    let pos = list.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
        list.push((key, T::default()));
        list.len() - 1
    });
    &mut list[pos].1
}

/// A tick label: whole numbers without decimals, large ones with a k/M/G suffix.
fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = match a {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    if scaled.fract() == 0.0 {
        format!("{scaled:.0}{suffix}")
    } else if a >= 1.0 {
        format!("{scaled:.1}{suffix}")
    } else {
        format!("{v:.3}")
    }
}

/// The colour of each series label, the same in every panel: labels in order of first
/// appearance over all panels.
struct Colours(Vec<String>);

impl Colours {
    fn of(panels: &[(String, Series)]) -> Colours {
        let labels = in_first_order(panels.iter().flat_map(|(_, series)| series.iter().map(|(label, _)| label)));
        Colours(labels.into_iter().cloned().collect())
    }

    /// The colour of `label`: eight well-told-apart colours, then plotters' 99-colour palette,
    /// so that no two series share one.
    fn of_label(&self, label: &str) -> RGBAColor {
        const PALETTE: [RGBColor; 8] = [
            RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(255, 127, 14),
            RGBColor(148, 103, 189), RGBColor(140, 86, 75), RGBColor(227, 119, 194), RGBColor(127, 127, 127),
        ];
        let i = self.0.iter().position(|l| l == label).unwrap_or(0);
        match PALETTE.get(i) {
            Some(c) => c.to_rgba(),
            None => Palette99::pick(i - PALETTE.len()).to_rgba(),
        }
    }
}

/// The y axis's range over `values` (the points drawn), or the plot's own.
fn y_range(values: impl Iterator<Item = f64>, plot: &PlotSpec) -> Result<(f64, f64)> {
    if let Some(range) = plot.y_range {
        return Ok(range);
    }
    let (lo, hi) = min_max(values);
    if plot.y_log {
        // Only `lines` plots have log axes, and they draw positive values only.
        return Ok((lo / 2.0, hi * 2.0));
    }
    Ok((lo.min(0.0), if hi > lo.min(0.0) { hi * 1.05 } else { 1.0 }))
}

/// The least and greatest of `values`; `(f64::MAX, f64::MIN)`, low above high, when there
/// are none.
fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// The distinct `items`, in order of first appearance.
fn in_first_order<'a, T: PartialEq>(items: impl Iterator<Item = &'a T>) -> Vec<&'a T> {
    let mut seen: Vec<&T> = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// The chart of a bar plot: bar groups at x = 0, 1, 2... and values on y.
type BarChart<'a, 'b> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>;

fn lines(area: &Area, plot: &PlotSpec, name: &str, series: &Series, colours: &Colours) -> Result<()> {
    // A log axis has no place for 0 or less: such points are left out, as is an x that is
    // not a number, and said so.
    let shown = |x: f64, y: f64| (!plot.x_log2 || x > 0.0) && (!plot.y_log || y > 0.0);
    let mut left_out = 0;
    let numeric: Vec<(&String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(label, points)| {
            let mut p: Vec<(f64, f64)> = points.iter().filter_map(|(x, y)| x.parse::<f64>().ok().map(|x| (x, *y))).filter(|&(x, y)| shown(x, y)).collect();
            left_out += points.len() - p.len();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            (label, p)
        })
        .collect();
    let xs = numeric.iter().flat_map(|(_, p)| p.iter().map(|&(x, _)| x));
    let (x_lo, x_hi) = min_max(xs);
    if x_lo > x_hi {
        let log = if plot.x_log2 || plot.y_log { " (a log axis shows positive values only)" } else { "" };
        bail!("no point of `{}` against `{}` can be drawn{log}", plot.y.join(", "), plot.x);
    }
    if left_out > 0 {
        let panel = if name.is_empty() { String::new() } else { format!(" (panel {name})") };
        eprintln!("warning: {}{panel}: {left_out} points left out: an x that is not a number, or 0 or less on a log axis", plot.file);
    }
    let (y_lo, y_hi) = y_range(numeric.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)), plot)?;
    let mut builder = ChartBuilder::on(area);
    builder.caption(name, ("sans-serif", 16)).margin(10).x_label_area_size(40).y_label_area_size(70);
    let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
    macro_rules! draw_on {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_label_formatter(&|x| short(*x))
                .y_label_formatter(&|y| short(*y))
                .x_desc(&plot.x_label)
                .y_desc(&plot.y_label)
                .draw()?;
            for (label, points) in &numeric {
                let c = colours.of_label(label);
                chart.draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
                    .label(label.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
                if points.len() <= 50 {
                    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
                }
            }
            if numeric.iter().any(|(l, _)| !l.is_empty()) {
                chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
            }
        }};
    }
    match (plot.x_log2, plot.y_log) {
        (true, true) => draw_on!(builder.build_cartesian_2d((x_lo..x_hi).log_scale().base(2.0), (y_lo..y_hi).log_scale())?),
        (true, false) => draw_on!(builder.build_cartesian_2d((x_lo..x_hi).log_scale().base(2.0), y_lo..y_hi)?),
        (false, true) => draw_on!(builder.build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())?),
        (false, false) => draw_on!(builder.build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?),
    }
    Ok(())
}

/// A generous width of one character of a bar label, in pixels.
const LABEL_CHAR_PIXELS: u32 = 7;

/// Room under upright labels for the axis description, in pixels.
const UPRIGHT_MARGIN: u32 = 40;

/// The most characters an upright label shows: so many that the labels leave the plot half
/// of the panel's height. Longer ones are cut (see [`shortened`]); uncut, a long machine name
/// took the whole panel and left no room for the bars.
const MAX_UPRIGHT_CHARS: usize = ((HEIGHT / 2 - UPRIGHT_MARGIN) / LABEL_CHAR_PIXELS) as usize;

/// The height of the label area when the labels of `categories` are too wide to sit side by
/// side under their bars in a panel `width` pixels wide, and are written downwards from the
/// axis instead (by [`upright_labels`]); `None` when they fit.
fn upright_label_height(categories: &[&String], width: u32) -> Option<u32> {
    let longest = categories.iter().map(|c| c.chars().count()).max().unwrap_or(0);
    let fits = categories.len() as u32 * longest as u32 * LABEL_CHAR_PIXELS <= width;
    (!fits).then_some(longest.min(MAX_UPRIGHT_CHARS) as u32 * LABEL_CHAR_PIXELS + UPRIGHT_MARGIN)
}

/// `label` cut to at most `max` characters, the last one `…` when cut.
fn shortened(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        return label.to_string();
    }
    label.chars().take(max.saturating_sub(1)).chain(['…']).collect()
}

/// Writes each of `categories` under its group of bars, turned a quarter clockwise so that it
/// reads downwards from the axis (whose value is `y_lo`), cut to [`MAX_UPRIGHT_CHARS`]. Drawn
/// on the panel itself: the chart's own labels are centred on their tick, which would put half
/// of a turned label inside the plot.
fn upright_labels(area: &Area, chart: &BarChart, categories: &[&String], y_lo: f64) -> Result<()> {
    let style = TextStyle::from(("sans-serif", 12).into_font().transform(FontTransform::Rotate90));
    let (left, top) = area.get_base_pixel();
    for (i, category) in categories.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
        // The turned text grows to the left of its anchor: half a line right centres it.
        let text = shortened(category, MAX_UPRIGHT_CHARS);
        area.draw(&Text::new(text, (x - left + 6, y - top + 8), style.clone()))?;
    }
    Ok(())
}

fn bars(area: &Area, plot: &PlotSpec, name: &str, series: &Series, colours: &Colours) -> Result<()> {
    let categories = in_first_order(series.iter().flat_map(|(_, points)| points.iter().map(|(x, _)| x)));
    let (y_lo, y_hi) = y_range(series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)), plot)?;
    let upright_height = upright_label_height(&categories, area.dim_in_pixel().0);
    let upright = upright_height.is_some();
    let mut chart = ChartBuilder::on(area)
        .caption(name, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(upright_height.unwrap_or(60))
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..categories.len() as f64, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            let centred = (x - i as f64 - 0.5).abs() < 0.26;
            if centred && !upright { categories.get(i).map_or(String::new(), |s| s.to_string()) } else { String::new() }
        })
        .y_label_formatter(&|y| short(*y))
        .x_desc(&plot.x_label)
        .y_desc(&plot.y_label)
        .draw()?;
    if upright {
        upright_labels(area, &chart, &categories, y_lo)?;
    }
    let width = 0.8 / series.len() as f64;
    for (s, (label, points)) in series.iter().enumerate() {
        let c = colours.of_label(label);
        let rects = points.iter().filter_map(|(x, y)| {
            let i = categories.iter().position(|c| *c == x)? as f64;
            let left = i + 0.1 + s as f64 * width;
            Some(Rectangle::new([(left, 0.0), (left + width, *y)], c.filled()))
        });
        chart
            .draw_series(rects)?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    if series.iter().any(|(l, _)| !l.is_empty()) {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{draw, shortened, upright_label_height, HEIGHT, LABEL_CHAR_PIXELS, MAX_UPRIGHT_CHARS, UPRIGHT_MARGIN, WIDTH_PER_PANEL};
    use xlat::config::plot::{PlotData, PlotKind, PlotSpec};

    /// A bar plot of `value` by `machine`, from `results.csv`.
    fn bar_plot() -> PlotSpec {
        PlotSpec {
            file: "bars.png".into(),
            title: "t".into(),
            kind: PlotKind::Bars,
            data: PlotData::Results,
            x: "machine".into(),
            y: vec!["value".into()],
            series: None,
            panels: None,
            only: Vec::new(),
            x_log2: false,
            y_log: false,
            y_range: None,
            x_label: "machine".into(),
            y_label: "value".into(),
        }
    }

    #[test]
    fn upright_labels_leave_the_plot_half_the_panel() {
        // One category named wider than the panel, and several named longer than the panel is
        // high: the label area is capped, and the labels cut to fit it.
        for (n, len) in [(1, 100), (4, 80), (16, 300)] {
            let names: Vec<String> = (0..n).map(|i| format!("{}{i}", "m".repeat(len))).collect();
            let height = upright_label_height(&names.iter().collect::<Vec<_>>(), WIDTH_PER_PANEL);
            assert_eq!(height, Some(MAX_UPRIGHT_CHARS as u32 * LABEL_CHAR_PIXELS + UPRIGHT_MARGIN), "{n} labels of {len}");
            assert!(height.unwrap() <= HEIGHT / 2);
            assert_eq!(shortened(&names[0], MAX_UPRIGHT_CHARS).chars().count(), MAX_UPRIGHT_CHARS);
        }
        assert_eq!(shortened("graph500-101%-horizon-scan", MAX_UPRIGHT_CHARS), "graph500-101%-horizon-scan");
        assert_eq!(shortened("abcdef", 4), "abc…");
        // And the bars are drawn.
        let dir = tempfile::tempdir().unwrap();
        let rows: String = (0..16).map(|i| format!("{}{i},{}\n", "m".repeat(300), i + 1)).collect();
        std::fs::write(dir.path().join("results.csv"), format!("machine,value\n{rows}")).unwrap();
        draw(dir.path(), &bar_plot()).unwrap();
    }

    #[test]
    fn labels_turn_upright_only_when_they_do_not_fit_side_by_side() {
        let names = |n: usize, len: usize| (0..n).map(|i| format!("{i:0len$}")).collect::<Vec<_>>();
        let (few, many) = (names(3, 8), names(16, 24));
        // Three workload names under a 640-pixel panel fit.
        assert_eq!(upright_label_height(&few.iter().collect::<Vec<_>>(), 640), None);
        // Sixteen machine names of 24 characters do not: the area takes the longest.
        assert_eq!(upright_label_height(&many.iter().collect::<Vec<_>>(), 640), Some(24 * LABEL_CHAR_PIXELS + UPRIGHT_MARGIN));
        assert_eq!(upright_label_height(&[], 640), None);
    }
}
