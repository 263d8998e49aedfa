//! The report in a real browser: headless Chromium opens the generated index from `file://`,
//! the matrix renders with its styles, a click leads to the failing agent version, another to the
//! failing check, and its frame link lands on the highlighted frame in the wire log. The inline
//! script runs under the page's Content-Security-Policy (the pretty-printer works), and the page
//! with hostile client text has no element the text tried to inject. The index's "What to fix
//! first" sections are checked as a DOM snapshot (`snapshots/browser__index_causes_dom.snap`,
//! reviewed with `cargo insta review`), and the first cause's frame link lands on its frame. Screenshots are saved under
//! `target/tmp/browser-report/screenshots/` for a person to look at.
//!
//! Needs Chromium (Debian: `apt-get install chromium`; or set CHROME to a Chrome binary). Without
//! one the test says so and passes, unless ACP_HARNESS_REQUIRE contains `chromium` (as this
//! repository's CI sets), where a missing browser is a failure.
//!
//! Driven over the DevTools protocol by a small synchronous driver (browser/cdp.rs), so the test
//! reads top to bottom; it uses the system's Chromium and never downloads one.

#[path = "browser/cdp.rs"]
mod cdp;
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cdp::Browser;

/// Every wait in this test is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(30);

fn chromium() -> Option<PathBuf> {
    let required = std::env::var("ACP_HARNESS_REQUIRE").is_ok_and(|v| v.contains("chromium"));
    match cdp::find_chromium() {
        Ok(path) => Some(path),
        Err(err) if required => panic!(
            "ACP_HARNESS_REQUIRE contains `chromium` but no browser was found ({err}); \
             install it with `apt-get install chromium` or set CHROME"
        ),
        Err(err) => {
            eprintln!(
                "SKIPPED the_report_works_in_a_real_browser: no Chromium found ({err}). \
                 Install it with `apt-get install chromium` (or set CHROME) to run this test."
            );
            None
        }
    }
}

fn screenshot(tab: &mut Browser, dir: &Path, name: &str) -> PathBuf {
    let png = tab.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = dir.join(name);
    std::fs::write(&path, png).unwrap();
    path
}

/// Clicks a link and waits (bounded) until the browser shows the page or anchor it leads to.
fn click_and_wait(tab: &mut Browser, selector: &str) {
    let before = location(tab);
    tab.click(selector);
    tab.wait_until(
        &format!("page or anchor after clicking {selector} on {before}"),
        |tab| {
            let url = location(tab);
            let complete = tab.eval("document.readyState") == "complete";
            url != before && complete
        },
    );
}

/// The page's URL as the page itself sees it.
fn location(tab: &mut Browser) -> String {
    tab.eval("location.href")
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The "What to fix first" sections as rendered: one line per heading and per cause row (its
/// text as shown, its links, and for a security-relevant row its border colour), then whether
/// every section sits above the matrix, visible.
fn causes_dom(tab: &mut Browser) -> String {
    let js = r#"(() => {
      const squash = t => t.replace(/\s+/g, ' ').trim();
      const out = [];
      const matrixTop = document.querySelector('#index-matrix').getBoundingClientRect().top;
      for (const h of document.querySelectorAll('h2[id^="causes-"]')) {
        const list = h.parentElement.querySelector(`#${h.id} ~ ol.causes`);
        out.push(`## ${squash(h.textContent)}`);
        for (const li of list.children) {
          const mark = li.classList.contains('security')
            ? ` [security, border ${getComputedStyle(li).borderLeftColor}]` : '';
          out.push(`- ${squash(li.textContent)}${mark}`);
          for (const a of li.querySelectorAll('a')) out.push(`    -> ${a.getAttribute('href')}`);
        }
        const r = list.getBoundingClientRect();
        out.push(`(visible: ${list.offsetParent !== null && r.height > 0}, above the matrix: ${r.bottom <= matrixTop})`);
      }
      return out.join('\n');
    })()"#;
    tab.eval(js)
        .as_str()
        .expect("the causes as text")
        .to_owned()
}

fn url_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

#[test]
fn the_report_works_in_a_real_browser() {
    let Some(chrome) = chromium() else { return };
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-report");
    let _ = std::fs::remove_dir_all(&out);
    let report = out.join("report");
    let shots = out.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    acp_reports::write_report(&common::all_fixtures(), &report).unwrap();

    let profile = tempfile::tempdir().unwrap();
    // Dropping the browser closes, kills if need be, and reaps Chromium.
    let mut tab = Browser::launch(
        &chrome,
        profile.path(),
        &out.join("chromium-stderr.log"),
        (1400, 1000),
        TIMEOUT,
    );

    // The index: three clients × two agent versions, styled by the inline stylesheet.
    tab.navigate(&url_of(&report.join("index.html")));
    tab.wait_for("#index-matrix");
    assert_eq!(
        tab.eval("document.querySelectorAll('#index-matrix tbody tr').length"),
        3
    );
    assert_eq!(
        tab.eval("document.querySelectorAll('#index-matrix a.cell-link').length"),
        6
    );
    assert_eq!(
        tab.eval(
            "getComputedStyle(document.querySelector('#index-matrix .g-fail')).backgroundColor"
        ),
        "rgb(255, 235, 233)",
        "grade colours come from the inline CSS"
    );
    screenshot(&mut tab, &shots, "1-index.png");
    // The causes lead the page: a DOM snapshot of what a person sees of them (headings, rows,
    // links, the security marker's colour, and where they sit), so a layout regression shows up
    // as a snapshot diff for a person to review.
    insta::assert_snapshot!("index_causes_dom", causes_dom(&mut tab));
    // The first cause's frame link opens its case with that frame highlighted; then back.
    click_and_wait(&mut tab, "ol.causes li a[href$='#f12']");
    assert_eq!(
        tab.eval("document.querySelector(':target') && document.querySelector(':target').classList.contains('cited')"
        ),
        true,
        "the cause's frame is the highlighted :target of its case page"
    );
    tab.navigate(&url_of(&report.join("index.html")));
    tab.wait_for("#index-matrix");

    // Click 1: the mutant against acme@1.0.
    click_and_wait(
        &mut tab,
        "a.cell-link[href^='acp-reference-client-0.1.0_always-command/'][href$='acme-1.0.html']",
    );
    assert!(
        location(&mut tab).ends_with("/acme-1.0.html"),
        "{}",
        location(&mut tab)
    );
    tab.wait_for("#agent-matrix");
    assert_eq!(
        tab.eval("document.querySelectorAll('#agent-matrix td.cell.g-fail').length"),
        2
    );
    assert_eq!(
        tab.eval("document.querySelectorAll('ul.attention li').length"),
        2
    );
    screenshot(&mut tab, &shots, "2-agent-version.png");
    // The filter hides the passing rows (the inline script runs under the CSP).
    tab.click("input[data-body-class='only-attention']");
    assert_eq!(
        tab.eval("[...document.querySelectorAll('#agent-matrix tbody tr:not(.family-row)')].filter(r => r.offsetParent !== null).length"
        ),
        2,
        "only the two failing cases stay visible"
    );
    assert_eq!(
        tab.eval("[...document.querySelectorAll('#agent-matrix tbody tr.family-row')].filter(r => r.offsetParent !== null).length"
        ),
        1,
        "and the heading of their family (the fixtures name none: \"Other scenarios\")"
    );

    // Click 2: the failing cell of edit-approve × subject-kind opens the case at that check.
    click_and_wait(
        &mut tab,
        "#agent-matrix td.cell.g-fail a[href*='edit-approve']",
    );
    assert!(
        location(&mut tab).ends_with("#check-subject-kind"),
        "{}",
        location(&mut tab)
    );
    assert_eq!(
        tab.eval("document.querySelector(':target').id"),
        "check-subject-kind"
    );
    // The frame link in the failure message lands on the highlighted frame.
    let href =
        tab.eval("document.querySelector('#check-subject-kind a.fref').getAttribute('href')");
    click_and_wait(&mut tab, "#check-subject-kind a.fref");
    let target =
        tab.eval("document.querySelector(':target') && document.querySelector(':target').id");
    let anchor = target.as_str().expect("a target row").to_owned();
    assert_eq!(
        href,
        format!("#{anchor}"),
        "the link's frame is the :target"
    );
    assert_eq!(tab.eval("document.querySelector(':target').tagName"), "TR");
    assert_eq!(
        tab.eval("document.querySelector(':target').classList.contains('cited')"),
        true,
        "the frame is marked as cited by the failing check"
    );
    assert_eq!(
        tab.eval("getComputedStyle(document.querySelector(':target td.raw')).backgroundColor"),
        "rgb(255, 229, 143)",
        "the linked frame is highlighted"
    );
    assert_eq!(
        tab.eval(
            "(() => { const r = document.querySelector(':target').getBoundingClientRect(); \
             return r.top >= 0 && r.top < window.innerHeight; })()"
        ),
        true,
        "the highlighted frame is scrolled into view"
    );
    screenshot(&mut tab, &shots, "3-case-highlighted-frame.png");
    // Pretty-printing reformats JSON frames in place.
    tab.click("#pretty");
    assert_eq!(
        tab.eval("document.querySelector(':target pre').textContent.includes('\\n  \"')"),
        true,
        "pretty-printed"
    );
    screenshot(&mut tab, &shots, "4-case-pretty.png");

    // Hostile client text stays text: no injected element exists, the title reads literally.
    let hostile =
        report.join("acp-reference-client-0.1.0_always-command/cases/acme-1.0_hostile-text.html");
    tab.navigate(&url_of(&hostile));
    tab.wait_for("#wire-log");
    assert_eq!(tab.eval("document.querySelectorAll('img').length"), 0);
    assert_eq!(tab.eval("document.scripts.length"), 1);
    assert_eq!(
        tab.eval("document.querySelector('h1').textContent"),
        "Hostile <script>alert(1)</script> title \"><img src=x onerror=alert(1)>"
    );
    screenshot(&mut tab, &shots, "5-hostile-text.png");

    // The crashing client's case shows its stderr, literally.
    let crash = report.join("sh/cases/acme-1.0_edit-approve.html");
    tab.navigate(&url_of(&crash));
    assert_eq!(
        tab.eval("document.querySelector('pre.stderr').textContent"),
        "<script>alert(1)</script>\n\"><img src=x onerror=alert(1)>\n"
    );
    assert_eq!(tab.eval("document.querySelectorAll('img').length"), 0);
    screenshot(&mut tab, &shots, "6-crash.png");
    eprintln!("screenshots: {}", shots.display());
}
