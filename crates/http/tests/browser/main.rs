//! The HTML pages in a real browser: headless Chromium driven over WebDriver
//! (`/usr/bin/chromedriver`, Debian's `chromium-driver`) against an arca server with users
//! from an htpasswd file. A person's path through the pages: from the root to a new
//! container, a file uploaded, a title edited, a search that finds it, a version, the file
//! deleted; a read-only user sees no write actions and is refused (403) when it sends a write
//! anyway. Screenshots of the main pages are written to
//! `$CARGO_TARGET_TMPDIR/ui-screenshots/`. Skips when Chromium or chromedriver is missing,
//! unless `ARCA_REQUIRE_BROWSER=1`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use arca_testkit::TestServer;
use base64::Engine as _;
use fantoccini::{Client, ClientBuilder, Locator};
use http::Method;
use serde_json::json;
use sha1::Digest as _;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &[&str] = &["/usr/bin/chromium", "/usr/bin/chromium-browser"];
/// How long a page may take to show what a step waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// chromedriver, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser binary, or why the test cannot run.
fn chromium() -> Result<&'static str, String> {
    if !Path::new(CHROMEDRIVER).exists() {
        return Err(format!(
            "{CHROMEDRIVER} is missing (Debian: chromium-driver)"
        ));
    }
    CHROMIUM
        .iter()
        .copied()
        .find(|p| Path::new(p).exists())
        .ok_or_else(|| "chromium is missing (Debian: chromium)".to_string())
}

async fn start_driver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Driver { child, url }
}

/// A fresh headless browser (its own profile: no credentials cached).
async fn browser(driver: &Driver, binary: &str) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": binary,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session")
}

fn basic(user: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{user}-pw"));
    format!("Basic {token}")
}

/// A server with the admin `root` and the user `reader`.
async fn server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("htpasswd");
    let mut text = String::new();
    for u in ["reader", "root"] {
        let digest = sha1::Sha1::digest(format!("{u}-pw").as_bytes());
        text.push_str(&format!(
            "{u}:{{SHA}}{}\n",
            base64::engine::general_purpose::STANDARD.encode(digest)
        ));
    }
    std::fs::write(&file, text).unwrap();
    let s = TestServer::start_with(None, |c| {
        c.auth.htpasswd = Some(file);
        c.auth.admins = vec!["root".into()];
        c.auth.user_base_uri = Some("http://users.example/".into());
    })
    .await;
    (s, dir)
}

/// Signs `user` in: a page that needs a login, opened with the credentials in the URL;
/// Chromium keeps them for the realm and sends them with the pages' own requests.
async fn sign_in(c: &Client, s: &TestServer, user: &str, path: &str) {
    let url = s
        .url(path)
        .replacen("http://", &format!("http://{user}:{user}-pw@"), 1);
    c.goto(&url).await.unwrap();
}

struct Shots {
    dir: PathBuf,
}

impl Shots {
    async fn take(&self, c: &Client, name: &str) {
        c.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
        let png = c.screenshot().await.expect("a screenshot");
        std::fs::write(self.dir.join(format!("{name}.png")), png).unwrap();
    }
}

/// Waits until the page's source contains `text`.
async fn wait_for_text(c: &Client, text: &str) -> String {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let source = c.source().await.unwrap();
        if source.contains(text) {
            return source;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the page never showed {text:?}; it shows:\n{source}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn fill(c: &Client, css: &str, text: &str) {
    let e = c.find(Locator::Css(css)).await.unwrap();
    e.clear().await.unwrap();
    e.send_keys(text).await.unwrap();
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_works_through_the_pages() {
    let binary = match chromium() {
        Ok(b) => b,
        Err(why) if std::env::var("ARCA_REQUIRE_BROWSER").is_ok_and(|v| v == "1") => {
            panic!("ARCA_REQUIRE_BROWSER=1 but {why}")
        }
        Err(why) => {
            eprintln!("skipping the browser test: {why}");
            return;
        }
    };
    let shots = Shots {
        dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots"),
    };
    std::fs::create_dir_all(&shots.dir).unwrap();
    println!("screenshots: {}", shots.dir.display());
    let (s, dir) = server().await;
    let driver = start_driver().await;
    let c = browser(&driver, binary).await;

    // The admin signs in on the status page (admins only: it asks for the login).
    let server_root = s.base.trim_end_matches("/rest").to_string();
    let status = format!("{server_root}/status").replacen("http://", "http://root:root-pw@", 1);
    c.goto(&status).await.unwrap();
    wait_for_text(&c, "<h1>Status</h1>").await;
    shots.take(&c, "status").await;

    // From the root: a new container, through the form.
    c.goto(&s.url("")).await.unwrap();
    wait_for_text(&c, "Signed in as <strong>root</strong>").await;
    wait_for_text(&c, "New container").await;
    fill(&c, "#c-slug", "shelf").await;
    fill(
        &c,
        "#c-turtle",
        "<> <http://purl.org/dc/terms/title> \"A shelf\" .",
    )
    .await;
    click(&c, "form[data-kind=container] button").await;
    wait_for_text(&c, "<h1>A shelf</h1>").await;
    assert!(c
        .current_url()
        .await
        .unwrap()
        .as_str()
        .ends_with("/rest/shelf"));

    // A file, uploaded.
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "arca browser notes: quokka\n").unwrap();
    c.find(Locator::Css("#u-file"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    fill(&c, "#u-slug", "notes").await;
    click(&c, "form[data-kind=upload] button").await;
    let page = wait_for_text(&c, "arca browser notes: quokka").await;
    assert!(page.contains("notes.txt"), "{page}");
    assert!(c
        .current_url()
        .await
        .unwrap()
        .as_str()
        .ends_with("/shelf/notes/fcr:metadata"));
    // Fixity on demand.
    click(&c, "button[data-fixity]").await;
    wait_for_text(&c, "Fixity: SUCCESS").await;
    shots.take(&c, "binary").await;

    // The container's title, edited with the SPARQL form.
    c.goto(&s.url("shelf")).await.unwrap();
    wait_for_text(&c, "notes</a>").await;
    let sparql = c.find(Locator::Css("#p-sparql")).await.unwrap();
    let template = sparql.prop("value").await.unwrap().unwrap();
    assert!(template.contains("A new title"), "{template}");
    fill(
        &c,
        "#p-sparql",
        &template.replace("A new title", "The quokka shelf"),
    )
    .await;
    click(&c, "form[data-kind=patch] button").await;
    wait_for_text(&c, "<h1>The quokka shelf</h1>").await;
    // A version, then the TimeMap.
    click(&c, "form[data-kind=version] button").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    wait_for_text(&c, "<h1>The quokka shelf</h1>").await;
    shots.take(&c, "container").await;
    c.goto(&format!("{}/fcr:versions", s.url("shelf")))
        .await
        .unwrap();
    wait_for_text(&c, "<time datetime=").await;
    shots.take(&c, "timemap").await;

    // The reader may read the shelf (set through the API, as an admin would).
    let acl = format!(
        "@prefix acl: <http://www.w3.org/ns/auth/acl#> .\n<#r> a acl:Authorization ; acl:agent <http://users.example/reader> ; acl:mode acl:Read ; acl:accessTo <{0}> ; acl:default <{0}> .\n<#a> a acl:Authorization ; acl:agent <http://users.example/root> ; acl:mode acl:Read, acl:Write, acl:Control ; acl:accessTo <{0}> ; acl:default <{0}> .",
        s.url("shelf")
    );
    let r = s
        .request_anonymous(
            Method::PUT,
            &format!("{}/fcr:acl", s.url("shelf")),
            &[
                ("content-type", "text/turtle"),
                ("authorization", &basic("root")),
            ],
            acl,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    c.goto(&format!("{}/fcr:acl", s.url("shelf")))
        .await
        .unwrap();
    wait_for_text(&c, "users.example/reader").await;
    shots.take(&c, "acl").await;

    // Search finds the file by its text (the index catches up in the background).
    c.goto(&format!("{}/fcr:search", s.base)).await.unwrap();
    wait_for_text(&c, "Query (Lucene syntax").await;
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        fill(&c, "#q", "quokka").await;
        click(&c, "form.search button").await;
        let page = wait_for_text(&c, "Results").await;
        if page.contains(">notes</a>") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "search never found the file:\n{page}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    shots.take(&c, "search").await;
    c.find(Locator::LinkText("notes"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for_text(&c, "arca browser notes: quokka").await;

    // An error page.
    c.goto(&s.url("shelf/nothing-here")).await.unwrap();
    wait_for_text(&c, "404 Not Found").await;
    shots.take(&c, "error").await;

    // The read-only user, in a browser of its own: no write actions; a write sent anyway
    // is refused.
    let reader = browser(&driver, binary).await;
    sign_in(&reader, &s, "reader", "shelf").await;
    let page = wait_for_text(&reader, "Signed in as <strong>reader</strong>").await;
    assert!(page.contains("The quokka shelf"), "{page}");
    assert!(!page.contains("data-kind="), "{page}");
    assert!(!page.contains("Delete this resource"));
    let status = reader
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch(arguments[0], {method: 'DELETE'}).then(r => done(r.status), e => done(String(e)));",
            vec![json!(s.url("shelf/notes"))],
        )
        .await
        .unwrap();
    assert_eq!(status, json!(403));
    reader.close().await.unwrap();

    // The admin deletes the file from its page.
    c.goto(&format!("{}/fcr:metadata", s.url("shelf/notes")))
        .await
        .unwrap();
    wait_for_text(&c, "Delete this resource").await;
    click(&c, "form[data-kind=delete] button").await;
    let mut confirmed = c.accept_alert().await;
    for _ in 0..50 {
        if confirmed.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        confirmed = c.accept_alert().await;
    }
    confirmed.expect("the delete asks for confirmation");
    wait_for_text(&c, "<h1>The quokka shelf</h1>").await;
    let page = wait_for_text(&c, "No children").await;
    assert!(!page.contains(">notes</a>"));
    let r = s
        .request_anonymous(
            Method::GET,
            &s.url("shelf/notes"),
            &[("authorization", &basic("root"))],
            bytes::Bytes::new(),
        )
        .await;
    assert_eq!(r.status, 410);

    c.close().await.unwrap();
    drop(driver);
    s.stop().await;
}
