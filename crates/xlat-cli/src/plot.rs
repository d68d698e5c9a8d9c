//! Draws an experiment's plots ([`PlotSpec`]) as PNG files from the CSV tables it wrote, so
//! a plot shows exactly what the results say and can be redrawn from them (`xlat plot`).

use anyhow::{anyhow, bail, Context, Result};
use plotters::chart::MeshStyle;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;
use xlat::config::plot::{PlotData, PlotKind, PlotSpec, RawSplit};

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

    /// Adds the parts `split` names as columns, each row's value of the split column cut at
    /// its first dashes. A value of fewer parts is an error: its row would fall in no group.
    fn add_parts(&mut self, split: &RawSplit) -> Result<()> {
        let column = self.index(&split.column)?;
        let n = split.into.len();
        for row in &mut self.rows {
            let parts: Vec<String> = row[column].splitn(n, '-').map(str::to_string).collect();
            if parts.len() < n {
                bail!("`{}` = \"{}\" has {} `-`-separated parts, but `split.into` names {n}", split.column, row[column], parts.len());
            }
            row.extend(parts.into_iter().zip(&split.into).filter(|(_, name)| !name.is_empty()).map(|(part, _)| part));
        }
        self.columns.extend(split.into.iter().filter(|name| !name.is_empty()).cloned());
        Ok(())
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
    let mut table = Table::read(&data)?;
    if let Some(split) = &plot.split {
        table.add_parts(split)?;
    }
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

/// Draws `panels` side by side into the PNG file `path`, under the title and the legend.
fn render(path: &Path, plot: &PlotSpec, panels: &[(String, Series)], colours: &Colours) -> Result<()> {
    let layout = layout(panels.len(), colours.legend());
    let root = BitMapBackend::new(path, layout.size).into_drawing_area();
    root.fill(&WHITE)?;
    title(&root, &plot.title)?;
    for (entry, label) in layout.legend.iter().zip(colours.legend()) {
        legend_entry(&root, entry, plot.kind, label, colours)?;
    }
    for (rect, (name, series)) in layout.panels.iter().zip(panels) {
        let area = root.clone().shrink((rect.left, rect.top), (rect.width(), rect.height()));
        match plot.kind {
            PlotKind::Lines => lines(&area, plot, name, series, colours)?,
            PlotKind::Bars => bars(&area, plot, name, series, colours)?,
        }
    }
    root.present()?;
    Ok(())
}

/// A rectangle of pixels, `right` and `bottom` excluded.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
}

impl Rect {
    fn width(&self) -> u32 {
        (self.right - self.left) as u32
    }

    fn height(&self) -> u32 {
        (self.bottom - self.top) as u32
    }

    /// Whether the two share a pixel.
    #[cfg(test)]
    fn intersects(&self, other: &Rect) -> bool {
        self.left < other.right && other.left < self.right && self.top < other.bottom && other.top < self.bottom
    }
}

/// The height of the band the title is written in.
const TITLE_HEIGHT: u32 = 44;
/// The legend's font size, and a generous width of one of its characters, in pixels.
const LEGEND_FONT: u32 = 15;
const LEGEND_CHAR_PIXELS: u32 = 9;
/// The height of a row of legend entries, and the width of an entry's swatch and the space
/// after it.
const LEGEND_ROW: u32 = 26;
const LEGEND_SWATCH: u32 = 30;
/// The space between two legend entries.
const LEGEND_GAP: u32 = 22;

/// Where a figure's parts go: its size, the legend entries (one per series label) and the
/// panels. The legend has a band of its own between the title and the panels, as in the
/// papers' figures: inside a panel it would cover some of the data.
struct Layout {
    size: (u32, u32),
    legend: Vec<Rect>,
    panels: Vec<Rect>,
}

/// The layout of `panels` panels side by side with a legend of `labels`, entries laid out in
/// rows as wide as the figure, each row centred.
fn layout(panels: usize, labels: &[String]) -> Layout {
    let width = WIDTH_PER_PANEL * panels as u32;
    let rows = legend_rows(labels, width - 2 * LEGEND_GAP);
    let mut legend = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let row_width: u32 = row.iter().map(|&w| w + LEGEND_GAP).sum::<u32>() - LEGEND_GAP;
        let mut left = ((width - row_width) / 2) as i32;
        let top = (TITLE_HEIGHT + r as u32 * LEGEND_ROW) as i32;
        for &w in row {
            legend.push(Rect { left, top, right: left + w as i32, bottom: top + LEGEND_ROW as i32 });
            left += (w + LEGEND_GAP) as i32;
        }
    }
    // A little room under the legend, so that it does not touch a panel's caption.
    let band = if rows.is_empty() { 0 } else { rows.len() as u32 * LEGEND_ROW + 8 };
    let top = (TITLE_HEIGHT + band) as i32;
    let panels = (0..panels as i32)
        .map(|i| Rect { left: i * WIDTH_PER_PANEL as i32, top, right: (i + 1) * WIDTH_PER_PANEL as i32, bottom: top + (HEIGHT - TITLE_HEIGHT) as i32 })
        .collect();
    Layout { size: (width, HEIGHT + band), legend, panels }
}

/// The widths of the legend entries of `labels`, in rows at most `width` wide (an entry
/// wider than that alone on its row); none when there is no label to show.
fn legend_rows(labels: &[String], width: u32) -> Vec<Vec<u32>> {
    let mut rows: Vec<Vec<u32>> = Vec::new();
    let mut used = 0;
    for label in labels.iter().filter(|l| !l.is_empty()) {
        let w = LEGEND_SWATCH + label.chars().count() as u32 * LEGEND_CHAR_PIXELS;
        match rows.last_mut() {
            Some(row) if used + LEGEND_GAP + w <= width => {
                row.push(w);
                used += LEGEND_GAP + w;
            }
            _ => {
                rows.push(vec![w]);
                used = w;
            }
        }
    }
    rows
}

/// The title's font size: 22, or smaller when the title would not fit the figure's `width`
/// (a character is at most about half the size wide).
fn title_size(title: &str, width: u32) -> u32 {
    let fits = (width as f64 - 20.0) / (0.5 * title.chars().count().max(1) as f64);
    (fits as u32).clamp(12, 22)
}

/// Writes the title centred at the top of the figure.
fn title(root: &Area, title: &str) -> Result<()> {
    let width = root.dim_in_pixel().0;
    let style = TextStyle::from(("sans-serif", title_size(title, width)).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(title, ((width / 2) as i32, (TITLE_HEIGHT / 2) as i32), style))?;
    Ok(())
}

/// Draws the legend entry of `label` in `entry`: a swatch as the series is drawn (a bar, or a
/// line through its marker), then the label.
fn legend_entry(root: &Area, entry: &Rect, kind: PlotKind, label: &str, colours: &Colours) -> Result<()> {
    let c = colours.of_label(label);
    let (x, y) = (entry.left, (entry.top + entry.bottom) / 2);
    match kind {
        PlotKind::Bars => {
            root.draw(&Rectangle::new([(x, y - 7), (x + 20, y + 7)], c.filled()))?;
            root.draw(&Rectangle::new([(x, y - 7), (x + 20, y + 7)], BLACK.stroke_width(1)))?;
        }
        PlotKind::Lines => {
            root.draw(&PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2)))?;
            draw_marker(root, (x + 11, y), colours.index(label), c)?;
        }
    }
    let style = TextStyle::from(("sans-serif", LEGEND_FONT).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new(label, (x + LEGEND_SWATCH as i32, y), style))?;
    Ok(())
}

/// Draws marker number `index` (a shape per series, in turn: filled circle, square,
/// triangle and diamond, a cross, an open circle) at pixel `at` of `area`, so that lines are
/// told apart without their colours too (in print, or by a reader who sees no colours).
fn draw_marker(area: &Area, (x, y): (i32, i32), index: usize, colour: RGBAColor) -> Result<()> {
    const R: i32 = 5;
    let fill = colour.filled();
    match index % 6 {
        0 => area.draw(&Circle::new((x, y), R, fill))?,
        1 => area.draw(&Rectangle::new([(x - R + 1, y - R + 1), (x + R - 1, y + R - 1)], fill))?,
        2 => area.draw(&Polygon::new(vec![(x, y - R - 1), (x + R + 1, y + R), (x - R - 1, y + R)], fill))?,
        3 => area.draw(&Polygon::new(vec![(x, y - R - 2), (x + R + 1, y), (x, y + R + 2), (x - R - 1, y)], fill))?,
        4 => area.draw(&Cross::new((x, y), R, colour.stroke_width(2)))?,
        _ => area.draw(&Circle::new((x, y), R, colour.stroke_width(2)))?,
    }
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

    /// The labels in the legend's order (one empty label when there is no series to name).
    fn legend(&self) -> &[String] {
        &self.0
    }

    /// The number of `label` among all labels, which picks its colour and its marker.
    fn index(&self, label: &str) -> usize {
        self.0.iter().position(|l| l == label).unwrap_or(0)
    }

    /// The colour of `label`: eight well-told-apart colours, then plotters' 99-colour palette,
    /// so that no two series share one.
    fn of_label(&self, label: &str) -> RGBAColor {
        const PALETTE: [RGBColor; 8] = [
            RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(255, 127, 14),
            RGBColor(148, 103, 189), RGBColor(140, 86, 75), RGBColor(227, 119, 194), RGBColor(127, 127, 127),
        ];
        let i = self.index(label);
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

/// The font sizes of a panel's caption, of tick labels and of axis descriptions.
const CAPTION_FONT: u32 = 18;
const TICK_FONT: u32 = 14;
const AXIS_FONT: u32 = 16;

/// The most markers drawn on one line: more would hide the line, and a dense series is told
/// apart by a few of them as well.
const MAX_MARKERS: usize = 16;

/// The indices of the points of a line of `len` points that get a marker: at most
/// [`MAX_MARKERS`], evenly spaced, series `index` of `count` starting a fraction of a step
/// after the one before, so that lines over the same x do not mark the same points.
fn marked(len: usize, index: usize, count: usize) -> impl Iterator<Item = usize> {
    let step = len.div_ceil(MAX_MARKERS).max(1);
    let first = index * step / count.max(1) % step;
    (first..len).step_by(step)
}

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
    builder.margin(12).x_label_area_size(50).y_label_area_size(80);
    caption(&mut builder, name);
    let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
    macro_rules! draw_on {
        ($chart:expr) => {{
            let mut chart = $chart;
            mesh(chart.configure_mesh().x_label_formatter(&|x| short(*x)).y_label_formatter(&|y| short(*y)), plot).draw()?;
            // Markers are drawn in pixels on the plotting area, which clips them: their
            // shapes do not depend on the axes' kinds.
            let plotting = chart.plotting_area().strip_coord_spec();
            let (left, top) = plotting.get_base_pixel();
            for (label, points) in &numeric {
                let (c, index) = (colours.of_label(label), colours.index(label));
                chart.draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?;
                for i in marked(points.len(), index, colours.legend().len()) {
                    let (x, y) = chart.backend_coord(&points[i]);
                    draw_marker(&plotting, (x - left, y - top), index, c)?;
                }
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

/// Names the panel above its chart; a figure of one panel has no name to give, and no room
/// is kept for one.
fn caption(builder: &mut ChartBuilder<BitMapBackend>, name: &str) {
    if !name.is_empty() {
        builder.caption(name, ("sans-serif", CAPTION_FONT));
    }
}

/// `mesh` styled as the papers' figures: light grid lines at the labelled ticks only, the
/// axes described as configured, fonts readable at the figure's size.
fn mesh<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>, plot: &PlotSpec) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .label_style(("sans-serif", TICK_FONT))
        .axis_desc_style(("sans-serif", AXIS_FONT))
        .x_desc(&plot.x_label)
        .y_desc(&plot.y_label)
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

/// One bar of a bar plot: which series (in the panel's order) and which category it shows,
/// its left and right edges on the x axis (category `i` spans `i` to `i + 1`) and its value.
#[derive(Clone, Debug, PartialEq)]
struct Bar {
    series: usize,
    category: usize,
    left: f64,
    right: f64,
    value: f64,
}

/// The part of a category's width its bars take: the rest parts the groups.
const GROUP_WIDTH: f64 = 0.8;

/// The categories of a bar plot (the x values, in order of first appearance) and its bars:
/// a group per category, side by side in the series' order, sharing the group's width among
/// the series that have a value there (a machine that runs one workload only leaves no gap
/// in the others' groups).
fn bar_layout(series: &Series) -> (Vec<&String>, Vec<Bar>) {
    let categories = in_first_order(series.iter().flat_map(|(_, points)| points.iter().map(|(x, _)| x)));
    let mut bars = Vec::new();
    for (category, name) in categories.iter().enumerate() {
        let present: Vec<(usize, f64)> =
            series.iter().enumerate().filter_map(|(s, (_, points))| points.iter().find(|(x, _)| x == *name).map(|&(_, y)| (s, y))).collect();
        let width = GROUP_WIDTH / present.len() as f64;
        let start = category as f64 + (1.0 - GROUP_WIDTH) / 2.0;
        for (slot, &(s, value)) in present.iter().enumerate() {
            let left = start + slot as f64 * width;
            bars.push(Bar { series: s, category, left, right: left + width, value });
        }
    }
    (categories, bars)
}

fn bars(area: &Area, plot: &PlotSpec, name: &str, series: &Series, colours: &Colours) -> Result<()> {
    let (categories, layout) = bar_layout(series);
    let (y_lo, y_hi) = y_range(layout.iter().map(|b| b.value), plot)?;
    let upright_height = upright_label_height(&categories, area.dim_in_pixel().0);
    let upright = upright_height.is_some();
    let mut builder = ChartBuilder::on(area);
    builder.margin(12).x_label_area_size(upright_height.unwrap_or(60)).y_label_area_size(80);
    caption(&mut builder, name);
    let mut chart = builder.build_cartesian_2d(0f64..categories.len() as f64, y_lo..y_hi)?;
    let label = |x: &f64| {
        let i = x.floor() as usize;
        let centred = (x - i as f64 - 0.5).abs() < 0.26;
        if centred && !upright { categories.get(i).map_or(String::new(), |s| s.to_string()) } else { String::new() }
    };
    mesh(chart.configure_mesh().disable_x_mesh().x_labels(categories.len() * 2 + 1).x_label_formatter(&label).y_label_formatter(&|y| short(*y)), plot).draw()?;
    if upright {
        upright_labels(area, &chart, &categories, y_lo)?;
    }
    for bar in &layout {
        let corners = [(bar.left, 0.0), (bar.right, bar.value)];
        chart.draw_series([Rectangle::new(corners, colours.of_label(&series[bar.series].0).filled()), Rectangle::new(corners, BLACK.stroke_width(1))])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{
        bar_layout, draw, layout, marked, shortened, upright_label_height, Bar, Colours, Rect, Series, Table, HEIGHT, LABEL_CHAR_PIXELS, MAX_MARKERS,
        MAX_UPRIGHT_CHARS, UPRIGHT_MARGIN, WIDTH_PER_PANEL,
    };
    use xlat::config::plot::{PlotData, PlotKind, PlotSpec, RawSplit};

    /// A panel of `labels` series, each with a value at each of `categories`.
    fn grid(labels: &[&str], categories: &[&str]) -> Series {
        let points = |s: usize| categories.iter().enumerate().map(|(c, x)| (x.to_string(), (1 + s + c) as f64)).collect();
        labels.iter().enumerate().map(|(s, l)| (l.to_string(), points(s))).collect()
    }

    /// `bar` in pixels, spread over all of `panel` (categories over its width, values from 0
    /// to `top` over its height): plotters draws it inside its plotting area, which is inside
    /// the panel, so this is the most room it can take.
    fn bar_pixels(bar: &Bar, categories: usize, top: f64, panel: &Rect) -> Rect {
        let x = |v: f64| panel.left + (v / categories as f64 * panel.width() as f64) as i32;
        let y = |v: f64| panel.bottom - (v / top * panel.height() as f64) as i32;
        Rect { left: x(bar.left), top: y(bar.value), right: x(bar.right).max(x(bar.left) + 1), bottom: panel.bottom }
    }

    #[test]
    fn grouped_bars_take_distinct_colours_and_places_in_each_group() {
        let series = grid(&["horizon", "lru", "linux"], &["101%", "158%"]);
        let colours = Colours::of(&[(String::new(), series.clone())]);
        let (categories, bars) = bar_layout(&series);
        assert_eq!(categories, ["101%", "158%"]);
        assert_eq!(bars.len(), 6);
        for category in 0..2 {
            let group: Vec<&Bar> = bars.iter().filter(|b| b.category == category).collect();
            let mut colours: Vec<_> = group.iter().map(|b| colours.of_label(&series[b.series].0)).collect();
            colours.dedup();
            assert_eq!(colours.len(), 3, "three colours in group {category}");
            for pair in group.windows(2) {
                assert!(pair[0].right <= pair[1].left, "side by side: {pair:?}");
            }
            assert!(group.iter().all(|b| b.left >= category as f64 && b.right <= category as f64 + 1.0 && b.left < b.right));
            assert_eq!(group.iter().map(|b| b.series).collect::<Vec<_>>(), [0, 1, 2]);
        }
        assert_eq!(bars[1].value, 2.0, "series 1 at 101%");
    }

    #[test]
    fn a_group_shares_its_width_among_the_series_it_has() {
        let mut series = grid(&["a", "b"], &["x", "y"]);
        series[1].1.truncate(1);
        let (_, bars) = bar_layout(&series);
        let widths: Vec<f64> = bars.iter().map(|b| ((b.right - b.left) * 100.0).round()).collect();
        assert_eq!(widths, [40.0, 40.0, 80.0]);
    }

    #[test]
    fn the_legend_is_clear_of_the_data() {
        let long: Vec<String> = (0..30).map(|i| format!("a long machine name {i}")).collect();
        for labels in [vec!["horizon", "horizon-scan", "lru", "linux"], long.iter().map(String::as_str).collect()] {
            let series = grid(&labels, &["101%", "108%", "120%"]);
            let panels = [(String::new(), series.clone()), (String::new(), series.clone())];
            let colours = Colours::of(&panels);
            let layout = layout(panels.len(), colours.legend());
            assert_eq!(layout.legend.len(), labels.len());
            let (categories, bars) = bar_layout(&series);
            let top = bars.iter().map(|b| b.value).fold(0.0, f64::max);
            for panel in &layout.panels {
                for bar in bars.iter().map(|b| bar_pixels(b, categories.len(), top, panel)) {
                    assert!(!layout.legend.iter().any(|entry| entry.intersects(&bar)), "{bar:?} under the legend");
                }
            }
            let (width, height) = layout.size;
            let inside = |r: &Rect| r.left >= 0 && r.top >= 0 && r.right <= width as i32 && r.bottom <= height as i32;
            assert!(layout.legend.iter().chain(&layout.panels).all(inside));
            for (i, entry) in layout.legend.iter().enumerate() {
                assert!(layout.legend[i + 1..].iter().all(|other| !other.intersects(entry)), "entries overlap");
            }
        }
        // No series to name, no legend.
        assert!(layout(1, &[String::new()]).legend.is_empty());
        assert_eq!(layout(1, &[String::new()]).size, (WIDTH_PER_PANEL, HEIGHT));
    }

    #[test]
    fn a_line_has_few_markers_not_on_another_lines_points() {
        assert_eq!(marked(5, 0, 3).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        let dense: Vec<Vec<usize>> = (0..3).map(|s| marked(1000, s, 3).collect()).collect();
        assert!(dense.iter().all(|m| m.len() <= MAX_MARKERS && m.len() >= MAX_MARKERS - 1));
        assert!(dense[0].iter().all(|i| !dense[1].contains(i) && !dense[2].contains(i)));
    }

    #[test]
    fn split_parts_become_columns() {
        let mut table = Table { columns: vec!["config".into()], rows: vec![vec!["graph500-101%-horizon-scan".into()]] };
        let split = RawSplit { column: "config".into(), into: vec![String::new(), "ratio".into(), "policy".into()] };
        table.add_parts(&split).unwrap();
        assert_eq!(table.columns, ["config", "ratio", "policy"]);
        assert_eq!(table.rows[0], ["graph500-101%-horizon-scan", "101%", "horizon-scan"]);
        let mut short = Table { columns: vec!["config".into()], rows: vec![vec!["lru".into()]] };
        let e = short.add_parts(&split).unwrap_err().to_string();
        assert!(e.contains("`config` = \"lru\" has 1 `-`-separated parts, but `split.into` names 3"), "{e}");
    }

    #[test]
    fn grouped_bars_and_marked_lines_are_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let rows: String = ["a-101%-lru,1,10", "a-101%-linux,1,12", "a-158%-lru,2,30", "a-158%-linux,2,25", "b-101%-lru,1,5", "b-101%-linux,1,4"]
            .iter()
            .map(|r| format!("{r}\n"))
            .collect();
        std::fs::write(dir.path().join("results.csv"), format!("config,entries,misses\n{rows}")).unwrap();
        let split = RawSplit { column: "config".into(), into: vec!["machine".into(), "ratio".into(), "policy".into()] };
        let bars = PlotSpec { x: "ratio".into(), y: vec!["misses".into()], series: Some("policy".into()), panels: Some("machine".into()), split: Some(split), ..bar_plot() };
        draw(dir.path(), &bars).unwrap();
        let lines = PlotSpec { file: "lines.png".into(), kind: PlotKind::Lines, x: "entries".into(), series: Some("config".into()), ..bars.clone() };
        draw(dir.path(), &lines).unwrap();
        for file in ["bars.png", "lines.png"] {
            assert!(std::fs::read(dir.path().join(file)).unwrap().starts_with(b"\x89PNG"));
        }
    }

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
            split: None,
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
