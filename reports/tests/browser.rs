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
//! Driven over the DevTools protocol with the `headless_chrome` crate: synchronous, so the test
//! reads top to bottom, and it finds the system's Chromium without downloading one.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::util::Wait;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;

/// Every wait in this test is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(30);

fn chromium() -> Option<PathBuf> {
    let required = std::env::var("ACP_HARNESS_REQUIRE").is_ok_and(|v| v.contains("chromium"));
    match headless_chrome::browser::default_executable() {
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

fn eval(tab: &Tab, js: &str) -> Value {
    let result = tab
        .evaluate(js, false)
        .unwrap_or_else(|e| panic!("evaluating {js}: {e}"));
    result.value.unwrap_or(Value::Null)
}

fn screenshot(tab: &Tab, dir: &Path, name: &str) -> PathBuf {
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = dir.join(name);
    std::fs::write(&path, png).unwrap();
    path
}

/// Clicks a link and waits (bounded) until the browser shows the page or anchor it leads to.
fn click_and_wait(tab: &Tab, selector: &str) {
    let before = tab.get_url();
    tab.wait_for_element(selector)
        .unwrap_or_else(|e| panic!("no {selector}: {e}"))
        .click()
        .unwrap_or_else(|e| panic!("cannot click {selector}: {e}"));
    Wait::with_timeout(TIMEOUT)
        .until(|| {
            let url = eval(tab, "location.href");
            let complete = eval(tab, "document.readyState") == "complete";
            (url.as_str() != Some(before.as_str()) && complete).then_some(())
        })
        .unwrap_or_else(|_| panic!("clicking {selector} on {before} led nowhere"));
}

/// The page's URL as the page itself sees it.
fn location(tab: &Tab) -> String {
    eval(tab, "location.href")
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The "What to fix first" sections as rendered: one line per heading and per cause row (its
/// text as shown, its links, and for a security-relevant row its border colour), then whether
/// every section sits above the matrix, visible.
fn causes_dom(tab: &Tab) -> String {
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
    eval(tab, js)
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
    let args: Vec<&OsStr> = [
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let options = LaunchOptions::default_builder()
        .path(Some(chrome))
        .headless(true)
        .sandbox(false)
        .window_size(Some((1400, 1000)))
        .user_data_dir(Some(profile.path().to_path_buf()))
        .args(args)
        .idle_browser_timeout(TIMEOUT)
        .build()
        .expect("launch options");
    // Dropping the browser kills and reaps Chromium.
    let browser = Browser::new(options).expect("Chromium starts");
    let tab = browser.new_tab().expect("a tab");
    tab.set_default_timeout(TIMEOUT);

    // The index: three clients × two agent versions, styled by the inline stylesheet.
    tab.navigate_to(&url_of(&report.join("index.html")))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    tab.wait_for_element("#index-matrix").expect("the matrix");
    assert_eq!(
        eval(
            &tab,
            "document.querySelectorAll('#index-matrix tbody tr').length"
        ),
        3
    );
    assert_eq!(
        eval(
            &tab,
            "document.querySelectorAll('#index-matrix a.cell-link').length"
        ),
        6
    );
    assert_eq!(
        eval(
            &tab,
            "getComputedStyle(document.querySelector('#index-matrix .g-fail')).backgroundColor"
        ),
        "rgb(255, 235, 233)",
        "grade colours come from the inline CSS"
    );
    screenshot(&tab, &shots, "1-index.png");
    // The causes lead the page: a DOM snapshot of what a person sees of them (headings, rows,
    // links, the security marker's colour, and where they sit), so a layout regression shows up
    // as a snapshot diff for a person to review.
    insta::assert_snapshot!("index_causes_dom", causes_dom(&tab));
    // The first cause's frame link opens its case with that frame highlighted; then back.
    click_and_wait(&tab, "ol.causes li a[href$='#f12']");
    assert_eq!(
        eval(
            &tab,
            "document.querySelector(':target') && document.querySelector(':target').classList.contains('cited')"
        ),
        true,
        "the cause's frame is the highlighted :target of its case page"
    );
    tab.navigate_to(&url_of(&report.join("index.html")))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    tab.wait_for_element("#index-matrix")
        .expect("the matrix again");

    // Click 1: the mutant against acme@1.0.
    click_and_wait(
        &tab,
        "a.cell-link[href^='acp-reference-client-0.1.0_always-command/'][href$='acme-1.0.html']",
    );
    assert!(
        location(&tab).ends_with("/acme-1.0.html"),
        "{}",
        location(&tab)
    );
    tab.wait_for_element("#agent-matrix")
        .expect("the scenarios × checks matrix");
    assert_eq!(
        eval(
            &tab,
            "document.querySelectorAll('#agent-matrix td.cell.g-fail').length"
        ),
        2
    );
    assert_eq!(
        eval(&tab, "document.querySelectorAll('ul.attention li').length"),
        2
    );
    screenshot(&tab, &shots, "2-agent-version.png");
    // The filter hides the passing rows (the inline script runs under the CSP).
    tab.wait_for_element("input[data-body-class='only-attention']")
        .unwrap()
        .click()
        .unwrap();
    assert_eq!(
        eval(
            &tab,
            "[...document.querySelectorAll('#agent-matrix tbody tr:not(.family-row)')].filter(r => r.offsetParent !== null).length"
        ),
        2,
        "only the two failing cases stay visible"
    );
    assert_eq!(
        eval(
            &tab,
            "[...document.querySelectorAll('#agent-matrix tbody tr.family-row')].filter(r => r.offsetParent !== null).length"
        ),
        1,
        "and the heading of their family (the fixtures name none: \"Other scenarios\")"
    );

    // Click 2: the failing cell of edit-approve × subject-kind opens the case at that check.
    click_and_wait(&tab, "#agent-matrix td.cell.g-fail a[href*='edit-approve']");
    assert!(
        location(&tab).ends_with("#check-subject-kind"),
        "{}",
        location(&tab)
    );
    assert_eq!(
        eval(&tab, "document.querySelector(':target').id"),
        "check-subject-kind"
    );
    // The frame link in the failure message lands on the highlighted frame.
    let href = eval(
        &tab,
        "document.querySelector('#check-subject-kind a.fref').getAttribute('href')",
    );
    click_and_wait(&tab, "#check-subject-kind a.fref");
    let target = eval(
        &tab,
        "document.querySelector(':target') && document.querySelector(':target').id",
    );
    let anchor = target.as_str().expect("a target row").to_owned();
    assert_eq!(
        href,
        format!("#{anchor}"),
        "the link's frame is the :target"
    );
    assert_eq!(
        eval(&tab, "document.querySelector(':target').tagName"),
        "TR"
    );
    assert_eq!(
        eval(
            &tab,
            "document.querySelector(':target').classList.contains('cited')"
        ),
        true,
        "the frame is marked as cited by the failing check"
    );
    assert_eq!(
        eval(
            &tab,
            "getComputedStyle(document.querySelector(':target td.raw')).backgroundColor"
        ),
        "rgb(255, 229, 143)",
        "the linked frame is highlighted"
    );
    assert_eq!(
        eval(
            &tab,
            "(() => { const r = document.querySelector(':target').getBoundingClientRect(); \
             return r.top >= 0 && r.top < window.innerHeight; })()"
        ),
        true,
        "the highlighted frame is scrolled into view"
    );
    screenshot(&tab, &shots, "3-case-highlighted-frame.png");
    // Pretty-printing reformats JSON frames in place.
    tab.wait_for_element("#pretty").unwrap().click().unwrap();
    assert_eq!(
        eval(
            &tab,
            "document.querySelector(':target pre').textContent.includes('\\n  \"')"
        ),
        true,
        "pretty-printed"
    );
    screenshot(&tab, &shots, "4-case-pretty.png");

    // Hostile client text stays text: no injected element exists, the title reads literally.
    let hostile =
        report.join("acp-reference-client-0.1.0_always-command/cases/acme-1.0_hostile-text.html");
    tab.navigate_to(&url_of(&hostile))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    tab.wait_for_element("#wire-log").unwrap();
    assert_eq!(eval(&tab, "document.querySelectorAll('img').length"), 0);
    assert_eq!(eval(&tab, "document.scripts.length"), 1);
    assert_eq!(
        eval(&tab, "document.querySelector('h1').textContent"),
        "Hostile <script>alert(1)</script> title \"><img src=x onerror=alert(1)>"
    );
    screenshot(&tab, &shots, "5-hostile-text.png");

    // The crashing client's case shows its stderr, literally.
    let crash = report.join("sh/cases/acme-1.0_edit-approve.html");
    tab.navigate_to(&url_of(&crash))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    assert_eq!(
        eval(&tab, "document.querySelector('pre.stderr').textContent"),
        "<script>alert(1)</script>\n\"><img src=x onerror=alert(1)>\n"
    );
    assert_eq!(eval(&tab, "document.querySelectorAll('img').length"), 0);
    screenshot(&tab, &shots, "6-crash.png");
    eprintln!("screenshots: {}", shots.display());
}
