//! The report a user reads first, as Chromium shows it (issue 20's acceptance): the
//! suite's report and a `reproduce bbb2014 --quick` report at 1400 and 800 px, checked
//! in the page itself over the DevTools protocol (`cdp.rs`): no horizontal overflow,
//! the summary first, plots with labelled axes and units, no console errors or network
//! requests, no raw nanosecond counts, a legend that toggles its series; screenshots
//! (full page and the summary) and a PDF are kept as artefacts.

use std::path::{Path, PathBuf};

use crate::cdp::{png_size_with_ink, Browser, Page};
use crate::util::{machine_lock, require_tool, run, run_json, temp_db};

/// The widths a report must fit: a laptop's browser and a narrow window or tablet.
const WIDTHS_PX: [u32; 2] = [1400, 800];

/// Runs in the page; returns what the Rust side asserts on (all of it, so one run of
/// the test shows every way the page falls short).
const CHECKS_JS: &str = r#"(() => {
  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const cls = el.getAttribute('class');
    if (cls) s += '.' + cls.trim().split(/\s+/).join('.');
    return s;
  };
  const se = document.scrollingElement;
  const iw = window.innerWidth;
  // The outermost elements reaching past the right edge: what makes the page scroll.
  const wide = new Set([...document.body.querySelectorAll('*')].filter(
    (el) => el.getBoundingClientRect().right > iw + 0.5));
  const overflowing = [...wide]
    .filter((el) => !wide.has(el.parentElement))
    .slice(0, 12)
    .map((el) => describe(el) + ' right=' + Math.round(el.getBoundingClientRect().right)
      + 'px in ' + (el.closest('section[id]') ? '#' + el.closest('section[id]').id : 'body'));
  const firstSection = document.querySelector('section');
  const summary = document.querySelector('#summary');
  // Plots: every outermost svg that is not marked decorative is a plot of the contract.
  const svgs = [...document.querySelectorAll('svg')].filter(
    (s) => !s.parentElement.closest('svg') && s.getAttribute('aria-hidden') !== 'true');
  const unit = /\S\s*\(([^()]*\S[^()]*)\)\s*$/;
  const badPlots = [];
  for (const svg of svgs) {
    const fig = svg.closest('figure');
    const sec = svg.closest('section[id]');
    const title = svg.getAttribute('aria-label')
      || (fig && fig.querySelector('figcaption') ? fig.querySelector('figcaption').textContent : '')
      || (svg.querySelector('text') ? svg.querySelector('text').textContent : '');
    const name = (fig && fig.id ? '#' + fig.id : describe(svg) + ' #' + svgs.indexOf(svg))
      + (sec ? ' in #' + sec.id : '') + ' "' + title.trim().slice(0, 80) + '"';
    if (!svg.classList.contains('plot')) {
      badPlots.push(name + ': an svg without class "plot" (no axis-label contract)');
      continue;
    }
    for (const axis of ['x', 'y']) {
      const label = svg.querySelector('text.axis-label.' + axis);
      if (!label) {
        badPlots.push(name + ': no text.axis-label.' + axis);
      } else if (!unit.test(label.textContent)) {
        badPlots.push(name + ': ' + axis + ' label "' + label.textContent
          + '" names no unit in parentheses');
      }
    }
    // Exact values on hover: the series carry <title>s.
    if (!svg.querySelector('.series title')) {
      badPlots.push(name + ': no <title> in its series (no exact value on hover)');
    }
    // Colours from CSS only (dark mode): no fixed fill, stroke or colour in the svg's
    // attributes or inline styles.
    const free = /^(none|currentcolor|transparent|inherit|var\(.*\))$/i;
    const fixed = [];
    for (const el of svg.querySelectorAll('*')) {
      for (const a of ['fill', 'stroke', 'color', 'stop-color']) {
        const v = (el.getAttribute(a) || '').trim();
        if (v && !free.test(v)) fixed.push([el, a, v]);
      }
      const style = el.getAttribute('style') || '';
      for (const m of style.matchAll(/(?:^|;)\s*((?:stop-)?color|fill|stroke)\s*:\s*([^;]+)/gi)) {
        if (!free.test(m[2].trim())) fixed.push([el, 'style', style]);
      }
    }
    if (fixed.length > 0) {
      const [el, a, v] = fixed[0];
      badPlots.push(name + ': ' + fixed.length + ' fixed colour(s) in the svg, e.g. <'
        + el.tagName + ' ' + a + '="' + v + '">, not from CSS variables');
    }
  }
  // Text of an element without its <code> parts.
  const textOf = (el) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let out = '';
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement.closest('code')) out += n.textContent;
    }
    return out;
  };
  const raw = /(?<![\d.])\d{5,}/;
  const rawNumbers = [];
  const cells = [...document.querySelectorAll('td, th')];
  if (summary) cells.push(summary);
  for (const el of cells) {
    const t = textOf(el);
    if (raw.test(t)) {
      rawNumbers.push(describe(el) + ' in '
        + (el.closest('section[id]') ? '#' + el.closest('section[id]').id : 'body')
        + ': ' + t.trim().replace(/\s+/g, ' '));
    }
  }
  let summaryRect = null;
  if (summary) {
    const r = summary.getBoundingClientRect();
    summaryRect = { x: r.left + window.scrollX, y: r.top + window.scrollY,
                    width: r.width, height: r.height };
  }
  return {
    scrollWidth: se.scrollWidth, innerWidth: iw, overflowing,
    firstSection: firstSection ? (firstSection.id || describe(firstSection)) : null,
    firstSectionInMain: !!(firstSection && firstSection.parentElement
      && firstSection.parentElement.tagName === 'MAIN'),
    plotCount: svgs.length, badPlots, rawNumbers, summaryRect,
  };
})()"#;

/// Clicks the first legend item and clicks it again: its series (same figure, same
/// `data-series`) and the item must get class `off`, then lose it.
const LEGEND_JS: &str = r#"(() => {
  const item = document.querySelector('.legend-item');
  if (!item) return { present: false };
  const label = item.getAttribute('data-series');
  const fig = item.closest('figure') || document;
  const series = [...fig.querySelectorAll('.series')].filter(
    (s) => s.getAttribute('data-series') === label);
  const click = () => item.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true }));
  const state = () => ({ item: item.classList.contains('off'),
                         series: series.length > 0 && series.every((s) => s.classList.contains('off')) });
  const before = state();
  click();
  const after = state();
  click();
  const again = state();
  return { present: true, label, seriesCount: series.length, before, after, again };
})()"#;

/// Where the screenshots and PDFs go (kept after the test, under cargo's target dir).
fn shots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-shots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Saves `bytes` as artefact `name` and says where.
fn keep(name: &str, bytes: &[u8]) -> PathBuf {
    let path = shots_dir().join(name);
    std::fs::write(&path, bytes).unwrap();
    println!("artefact: {} ({} bytes)", path.display(), bytes.len());
    path
}

/// The acceptance checks of one report at one width: the failures, each a line.
fn check_at_width(
    page: &mut Page<'_>,
    html: &Path,
    name: &str,
    first_sections: &[&str],
    width_px: u32,
) -> Vec<String> {
    let mut failures = Vec::new();
    let mut fail = |s: String| failures.push(format!("{name} at {width_px} px: {s}"));
    let url = page.navigate(html);
    let c = page.eval(CHECKS_JS);
    let (scroll_width, inner_width) = (c["scrollWidth"].as_f64(), c["innerWidth"].as_f64());
    if scroll_width.is_none() || scroll_width > inner_width {
        fail(format!(
            "horizontal overflow: scrollWidth {} > innerWidth {}; past the edge: {}",
            c["scrollWidth"], c["innerWidth"], c["overflowing"]
        ));
    }
    let first = c["firstSection"].as_str().unwrap_or("");
    if !first_sections.contains(&first) || c["firstSectionInMain"] != true {
        fail(format!(
            "the first section is {} (in <main>: {}), not <section id=\"{}\"> in <main>",
            c["firstSection"],
            c["firstSectionInMain"],
            first_sections.join("\" or \"")
        ));
    }
    if c["plotCount"].as_u64().unwrap_or(0) == 0 {
        fail("no plots (no svg) on the page".into());
    }
    for bad in c["badPlots"].as_array().into_iter().flatten() {
        fail(format!("plot {}", bad.as_str().unwrap_or_default()));
    }
    for cell in c["rawNumbers"].as_array().into_iter().flatten() {
        fail(format!(
            "a raw number of 5+ ungrouped digits: {}",
            cell.as_str().unwrap_or_default()
        ));
    }

    let full = page.screenshot_full();
    png_size_with_ink(&full, &format!("{name}'s {width_px} px screenshot"));
    keep(&format!("{name}-{width_px}.png"), &full);
    if let Some(r) = c["summaryRect"].as_object() {
        let v = |k: &str| r[k].as_f64().unwrap_or(0.0);
        let shot = page.screenshot_clip(v("x"), v("y"), v("width"), v("height"));
        png_size_with_ink(&shot, &format!("{name}'s {width_px} px summary"));
        keep(&format!("{name}-summary-{width_px}.png"), &shot);
        if width_px == 1400
            && name == "suite"
            && std::env::var_os("AUDIOLAT_WRITE_README_SHOT").is_some_and(|v| v == "1")
        {
            let readme_shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report-summary.png");
            std::fs::create_dir_all(readme_shot.parent().unwrap()).unwrap();
            std::fs::write(&readme_shot, &shot).unwrap();
            println!("README screenshot: {}", readme_shot.display());
        }
    }

    let legend = page.eval(LEGEND_JS);
    if legend["present"] != true {
        fail("no .legend-item to toggle a series with".into());
    } else if legend["seriesCount"].as_u64().unwrap_or(0) == 0 {
        fail(format!(
            "legend item {} has no .series of that data-series in its figure",
            legend["label"]
        ));
    } else if legend["before"] != serde_json::json!({"item": false, "series": false})
        || legend["after"] != serde_json::json!({"item": true, "series": true})
        || legend["again"] != serde_json::json!({"item": false, "series": false})
    {
        fail(format!("a click on legend item {} does not toggle class `off` on it and its series (before, after one click, after two): {} {} {}", legend["label"], legend["before"], legend["after"], legend["again"]));
    }

    let log = page.log();
    for e in &log.errors {
        fail(format!("the page logged an error: {e}"));
    }
    if !log.requests.contains(&url) {
        fail(format!(
            "the network log missed the page's own load ({url}), so it cannot vouch for the rest: {:?}",
            log.requests
        ));
    }
    for request in &log.requests {
        if request != &url && !request.starts_with("data:") {
            fail(format!(
                "the page requested {request} (only its own file may load)"
            ));
        }
    }
    failures
}

/// Reads the page's colours when the system asks for dark: a dark background, light
/// text and light plot axes; keeps a screenshot.
const DARK_JS: &str = r#"(() => {
  const rgb = (c) => (c.match(/^rgba?\(([^)]*)\)$/) || [null, ''])[1].split(/[ ,\/]+/)
    .filter((x) => x !== '').map(Number);
  const opaque = (c) => { const v = rgb(c); return v.length >= 3 && (v.length < 4 || v[3] > 0); };
  const lum = (c) => { const v = rgb(c); return v.length >= 3
    ? (0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]) / 255 : null; };
  let background = getComputedStyle(document.body).backgroundColor;
  if (!opaque(background)) background = getComputedStyle(document.documentElement).backgroundColor;
  const label = document.querySelector('svg.plot text.axis-label');
  const text = getComputedStyle(document.body).color;
  const fill = label ? getComputedStyle(label).fill : null;
  return { background, backgroundLum: opaque(background) ? lum(background) : 1,
           text, textLum: lum(text), fill, fillLum: fill ? lum(fill) : null };
})()"#;

/// The dark-mode checks of one report at the first width: the failures, each a line.
fn check_dark(browser: &mut Browser, html: &Path, name: &str) -> Vec<String> {
    let width_px = WIDTHS_PX[0];
    let mut page = browser.open(width_px, 900);
    page.prefer_dark();
    page.navigate(html);
    let c = page.eval(DARK_JS);
    let shot = page.screenshot_full();
    keep(&format!("{name}-dark-{width_px}.png"), &shot);
    let mut failures = Vec::new();
    let lum = |k: &str| c[k].as_f64();
    if lum("backgroundLum").is_none_or(|l| l >= 0.5) {
        failures.push(format!(
            "{name} in dark mode: the background is not dark ({})",
            c["background"]
        ));
    }
    if lum("textLum").is_some_and(|l| l < 0.5) {
        failures.push(format!("{name} in dark mode: dark text ({})", c["text"]));
    }
    if lum("fillLum").is_some_and(|l| l < 0.5) {
        failures.push(format!(
            "{name} in dark mode: dark plot axis labels ({})",
            c["fill"]
        ));
    }
    failures
}

/// What a printed page would hide: the page wider than the paper, or a box whose
/// content scrolls (on paper nothing scrolls, so what is past its edge is lost).
const PRINT_JS: &str = r#"(() => {
  const se = document.scrollingElement;
  const iw = window.innerWidth;
  const wide = new Set([...document.body.querySelectorAll('*')].filter(
    (el) => el.getBoundingClientRect().right > iw + 0.5));
  const past = [...wide].filter((el) => !wide.has(el.parentElement)).slice(0, 8)
    .map((el) => el.tagName.toLowerCase() + '.' + (el.getAttribute('class') || '')
      + ' right=' + Math.round(el.getBoundingClientRect().right) + 'px in '
      + (el.closest('section[id]') ? '#' + el.closest('section[id]').id : 'body'));
  const hidden = [...document.querySelectorAll('.table-wrap, pre, figure')]
    .filter((e) => e.scrollWidth > e.clientWidth + 1)
    .map((e) => (e.id || e.className || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth);
  return { scrollWidth: se.scrollWidth, innerWidth: iw, hidden, past };
})()"#;

/// The print check: the page laid out for print on A4 paper's width (about 720 CSS px
/// inside the margins) hides nothing past an edge; the failures, each a line.
fn check_print(browser: &mut Browser, html: &Path, name: &str) -> Vec<String> {
    let mut page = browser.open(PRINT_WIDTH_PX, 1000);
    page.call(
        "Emulation.setEmulatedMedia",
        serde_json::json!({ "media": "print" }),
    );
    page.navigate(html);
    let c = page.eval(PRINT_JS);
    let mut failures = Vec::new();
    if c["scrollWidth"].as_f64() > c["innerWidth"].as_f64() {
        failures.push(format!(
            "{name} printed: the page is wider than the paper ({} > {}); past the edge: {}",
            c["scrollWidth"], c["innerWidth"], c["past"]
        ));
    }
    if let Some(hidden) = c["hidden"].as_array().filter(|h| !h.is_empty()) {
        failures.push(format!(
            "{name} printed: content past the edge of its box, lost on paper: {hidden:?}"
        ));
    }
    failures
}

/// The printable width of A4 in CSS px, inside Chromium's default margins.
const PRINT_WIDTH_PX: u32 = 720;

/// Opens `html` at each width in one browser, prints it to PDF once, looks at it in
/// dark mode: every shortfall found, each a line.
fn report_failures(html: &Path, name: &str, first_sections: &[&str]) -> Vec<String> {
    let mut browser = Browser::launch();
    let mut failures = Vec::new();
    for width_px in WIDTHS_PX {
        let mut page = browser.open(width_px, 900);
        failures.extend(check_at_width(
            &mut page,
            html,
            name,
            first_sections,
            width_px,
        ));
        if width_px == WIDTHS_PX[0] {
            let pdf = page.print_to_pdf();
            assert!(pdf.starts_with(b"%PDF"), "{name}: printToPDF gave no PDF");
            keep(&format!("{name}.pdf"), &pdf);
        }
    }
    failures.extend(check_dark(&mut browser, html, name));
    failures.extend(check_print(&mut browser, html, name));
    if !failures.is_empty() {
        failures.insert(
            0,
            format!(
                "{name} as a user's browser shows it ({}), {} shortfall(s):",
                html.display(),
                failures.len()
            ),
        );
    }
    failures
}

/// [`report_failures`], failing the test with all of them.
fn check_report(html: &Path, name: &str, first_sections: &[&str]) {
    let failures = report_failures(html, name, first_sections);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The suite's report (`audiolat suite`, short runs), at 1400 and 800 px.
#[test]
fn the_suites_report_reads_well_in_chromium_at_1400_and_800_px() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("s.db");
    let v = run_json(&db, &["suite", "--each", "2s", "--json"]);
    let report = PathBuf::from(v["report"].as_str().expect("the suite's report"));
    check_report(&report, "suite", &["summary"]);
}

/// The bbb2014 preset's quick plan, made smaller so the test stays short (30 cells, not
/// 135): its tables, the study's values beside ours and its axes as the preset has them,
/// but three of its buffer pairs and two of its three profile columns run, each profile
/// column by this binary and labelled so ("this build as opt1": building three release
/// profiles would take the test's time, so the page shows the layout, not a comparison
/// of optimisation levels).
fn small_bbb2014_plan(quick_plan: &str) -> String {
    let mut plan = String::new();
    for line in quick_plan.lines() {
        if line.trim_start().starts_with("profile = [") {
            plan.push_str(concat!(
                r#"profile = [{ label = "this build as opt1", profile = "current" }, "#,
                r#"{ label = "this build as opt2", profile = "current" }, "#,
                r#"{ label = "this build as opt3", profile = "current" }]"#
            ));
        } else {
            plan.push_str(line);
        }
        plan.push('\n');
    }
    // After the preset's own exclusions (each must still leave out a cell of its own).
    plan.push_str(
        r#"
[[exclude]]
buffer = ["256/64", "512/64", "512/128", "512/256", "256/16", "512/16", "128/16", "128/32", "256/32"]
reason = "left out to keep the test short"

[[exclude]]
profile = ["this build as opt2"]
reason = "left out to keep the test short"
"#,
    );
    plan
}

/// A `reproduce bbb2014 --quick` report (its plan made smaller), at 1400 and 800 px.
#[test]
fn the_bbb2014_report_reads_well_in_chromium_at_1400_and_800_px() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("top", "procps");
    let (dir, db) = temp_db("b.db");
    let printed = run(&db, &["reproduce", "bbb2014", "--quick", "--print"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let plan = dir.path().join("bbb2014-small.toml");
    std::fs::write(&plan, small_bbb2014_plan(&printed.stdout)).unwrap();
    let out = run(&db, &["run", plan.to_str().unwrap(), "--no-report", "-q"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let html = dir.path().join("bbb2014.html");
    let out = run(&db, &["report", "group:1", "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    check_report(&html, "bbb2014", &["summary"]);
}

/// The comparison pages: `compare --html` (the summary or the comparison first: the
/// comparison is that page's answer) and `report A B` (the summary first), two plan runs of the virtual card overlaid, at 1400 and 800 px.
#[test]
fn comparison_pages_read_well_in_chromium_at_1400_and_800_px() {
    let (dir, db) = temp_db("c.db");
    let plan = dir.path().join("virtual.toml");
    std::fs::write(
        &plan,
        r#"
name = "compare-check"
probe = "event"
repeats = 2
[set]
backend = "virtual"
triggers = 12
spacing = "20ms"
note = "5ms"
[sweep]
period = [64, 256]
"#,
    )
    .unwrap();
    for _ in 0..2 {
        let out = run(&db, &["run", plan.to_str().unwrap(), "--no-report", "-q"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    }
    let compared = dir.path().join("compare.html");
    let out = run(
        &db,
        &[
            "compare",
            "group:1",
            "group:2",
            "--html",
            "-o",
            compared.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let both = dir.path().join("both.html");
    let out = run(
        &db,
        &["report", "group:1", "group:2", "-o", both.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut failures = report_failures(&compared, "compare", &["summary", "comparison"]);
    failures.extend(report_failures(&both, "report-a-b", &["summary"]));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A traced jitter run's report (`jitter --why`, a culprit the test makes): the answer's
/// culprits and the time plot's bars, stacked by cause, read as every report must; and
/// its comparison with a run not traced (`compare --html`).
#[test]
fn a_traced_jitter_run_s_report_reads_well_in_chromium_at_1400_and_800_px() {
    if crate::util::not_root("jitter --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (dir, db) = temp_db("why.db");
    let culprit = crate::why::Culprit::start("why-browser", 1, 90, 2_000_000, 97_300_000);
    let v = run_json(&db, &["jitter", "--why", "--cpu", "1", "-D", "3", "--json"]);
    culprit.stop();
    let id = v["run_id"].as_i64().unwrap().to_string();
    let html = dir.path().join("why.html");
    let out = run(&db, &["report", &id, "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<g class=\"bar\">"),
        "no bars on the time plot"
    );
    // Beside a run that was not traced, in `compare --html`.
    let plain = run_json(&db, &["jitter", "--cpu", "1", "-D", "1", "--json"]);
    let other = plain["run_id"].as_i64().unwrap().to_string();
    let compared = dir.path().join("why-compare.html");
    let out = run(
        &db,
        &[
            "compare",
            &id,
            &other,
            "--html",
            "-o",
            compared.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&compared).unwrap();
    assert!(
        page.contains("id=\"comparison-why\""),
        "no culprits compared"
    );
    let mut failures = report_failures(&html, "why", &["summary"]);
    failures.extend(report_failures(
        &compared,
        "why-compare",
        &["summary", "comparison"],
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A page in the contract's shape passes every check, and a page that breaks each
/// rule fails each check with what it found: the harness sees what it claims to.
#[test]
fn the_browser_checks_pass_a_page_in_the_contract_and_catch_each_fault() {
    const GOOD: &str = r##"<!doctype html><html><head><meta charset="utf-8">
<style>body { margin: 0; font: 16px sans-serif } #summary { background: #333; color: #fff }
svg .off { display: none }
@media (prefers-color-scheme: dark) { body { background: #111; color: #eee } svg text { fill: #eee } }</style></head><body>
<header><h1>Report</h1></header>
<main><section id="summary" class="summary"><p>holds 64-frame periods at 48 kHz: 2.9 ms
round trip; 12 345 cycles; commit <code>1234567</code>; 0.000012 s</p></section>
<nav><a href="#plots">plots</a></nav>
<section id="plots"><figure class="plot" id="fig-a">
<svg class="plot" viewBox="0 0 200 100" width="100%" role="img" aria-label="A">
<g class="series s0" data-series="run 1"><path d="M0 90L200 10" stroke="currentColor"><title>1.2 ms</title></path></g>
<g class="legend-item s0" data-series="run 1" tabindex="0"><text x="150" y="20">run 1</text></g>
<text class="axis-label x" x="80" y="98">latency (ms)</text>
<text class="axis-label y" x="0" y="10">count (log)</text></svg>
<figcaption class="caption">A</figcaption></figure></section>
<section id="runs"><table><tr><th>cycles</th><td>12 345</td></tr></table></section></main>
<script>document.addEventListener('click', (e) => {
  const item = e.target.closest('.legend-item');
  if (!item) return;
  for (const el of item.closest('figure').querySelectorAll('.series, .legend-item'))
    if (el.dataset.series === item.dataset.series) el.classList.toggle('off');
});</script></body></html>"##;
    const BAD: &str = r##"<!doctype html><html><head><meta charset="utf-8"></head>
<body style="margin: 0; background: #fff"><main>
<section id="plots"><svg viewBox="0 0 10 10" width="100"><rect width="10" height="10"/></svg>
<svg class="plot" viewBox="0 0 10 10" width="100"><text class="axis-label x">latency (ms)</text>
<g class="series s0"><path d="M0 0L10 10" stroke="#1f77b4"/></g>
<text class="axis-label y">count</text></svg></section>
<section id="summary" style="background: #333; color: #fff">steal 1000000000 ns</section>
<div style="width: 3000px; height: 50px; background: #000"></div>
<table><tr><td>1000000000</td></tr></table>
<img src="http://127.0.0.1:9/x.png"></main>
<script>console.error('boom'); throw new Error('kaboom');</script></body></html>"##;
    let dir = crate::util::tempdir();
    let (good, bad) = (dir.path().join("good.html"), dir.path().join("bad.html"));
    // The digit groups of the good page are narrow no-break spaces, as units::fmt_count's.
    std::fs::write(&good, GOOD.replace("12 345", "12\u{202f}345")).unwrap();
    std::fs::write(&bad, BAD).unwrap();
    let mut browser = Browser::launch();
    let mut page = browser.open(800, 600);
    let failures = check_at_width(&mut page, &good, "harness-good", &["summary"], 800);
    assert!(failures.is_empty(), "{failures:#?}");
    let mut page = browser.open(800, 600);
    let failures = check_at_width(&mut page, &bad, "harness-bad", &["summary"], 800).join("\n");
    assert_eq!(
        check_dark(&mut browser, &good, "harness-good"),
        [] as [String; 0]
    );
    let dark = check_dark(&mut browser, &bad, "harness-bad").join("\n");
    assert!(
        dark.contains("in dark mode: the background is not dark"),
        "{dark}"
    );
    for expected in [
        "horizontal overflow: scrollWidth 3000 > innerWidth 800",
        "div right=3000px",
        "the first section is \"plots\"",
        "without class \"plot\"",
        "y label \"count\" names no unit",
        "no <title> in its series",
        "1 fixed colour(s) in the svg, e.g. <path stroke=\"#1f77b4\">",
        "ungrouped digits: td in body: 1000000000",
        "ungrouped digits: section#summary in #summary: steal 1000000000 ns",
        "no .legend-item",
        "console.error: boom",
        "kaboom",
        "the page requested http://127.0.0.1:9/x.png",
    ] {
        assert!(
            failures.contains(expected),
            "`{expected}` not in:\n{failures}"
        );
    }
}
