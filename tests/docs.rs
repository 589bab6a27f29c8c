//! Issue 56: the docs cannot drift. Every `stormark` command in a fenced block of README.md and
//! docs/*.md, and every complete one written inline in their prose (`` `stormark run /dev/sdb
//! --rw read ...` ``; not a synopsis with `HOST`, `...` or `[options]`), runs here, as written
//! but for the rules below, against the debug binary in a scratch directory, and must end with
//! the exit status the page gives (0 unless a `<!-- doc-test: exit N -->` comment before the
//! block says otherwise). A failure names the
//! page, the line and everything the command printed.
//!
//! What a page may put, as an HTML comment, on the line before a fenced block:
//!
//! - `<!-- doc-test: skip (WHY) -->`: not run, counted and printed with its reason (what CI
//!   cannot have: hosts of a real cluster, a kernel mount);
//! - `<!-- doc-test: synopsis -->`: a synopsis with brackets and placeholders, not a command;
//! - `<!-- doc-test: exit N -->` or `exit N|M (WHY)`: the status the commands end with;
//! - `<!-- doc-test: file NAME -->`: the block (a TOML job or suite file) is written to NAME,
//!   with the rules below, in the scratch directory of every page whose commands name it (the
//!   page's own file of that name first), before any command runs;
//! - `<!-- doc-test: output unchecked (WHY) -->`: the output shown is not compared;
//! - `<!-- doc-test: inline skip (WHY) -->`, anywhere in a page: its inline commands are not
//!   run (counted as skipped).
//!
//! A block of `$ stormark ...` lines followed by output is a transcript: each line of its output
//! without a digit (headings, `status: ok`, `expected vs measured:`, a finding's advice) must be
//! printed by the command too, spaces aside; lines with figures vary from run to run.
//!
//! The rules that make a page's command run on one CI machine, in a few seconds
//! ([`world`] applies them):
//!
//! - a path under /mnt, /tank, /tmp, /srv, /data, /scratch or /etc/stormark is one of the
//!   scratch directory's (made as a directory unless it names a file: `.json`, `.pem`, ...);
//!   /xfs is an XFS of 512 MiB on a loop device, and a command with `--auto` (which sizes its
//!   files by the free space) has its paths on an ext4 of 256 MiB; a block device
//!   (`/dev/nvme1n1`) is a loop device over a sparse file;
//! - `--time`, `--step-time` become 1 s, and `run`, `s3` and `net` commands without `--time`
//!   get `--time 1s`; a search (`--target-latency`) without `--step-time` gets `--step-time 1s`
//!   and at most 4 steps; a suite gets `--smoke`, and its relative TARGETs (`suite disks d1
//!   d2`) are made as directories;
//! - a `run` on a directory that gives no size (no `--size`, `--profile`, `--job`, `--auto`)
//!   gets `--size 64m` instead of 1 GiB a file;
//! - sizes of a GiB or more, in any option, become as many MiB (`--size 4g` is 4m,
//!   `--zone-skip 2g` 2m, `size = "16g"` 16m);
//! - hosts are stand-ins: `--agents` lists are agents in network namespaces (testkit's
//!   `NetCluster`, TLS where the command gives `--tls-ca`), S3 endpoints a MinIO with the
//!   bucket `bench`, `iscsi://` a tgtd LUN, `nfs://` a ganesha export, `net client HOST` a
//!   `stormark net server` on loopback, and a page's own `stormark agent` or `net server` line
//!   is started, seen listening and stopped.

use std::path::{Path, PathBuf};

use crate::docs_world as world;

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// One fenced block of a page.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The page, relative to the repository (`docs/run.md`).
    pub page: String,
    /// The line of the opening fence, from 1.
    pub line: usize,
    /// The fence's language (`sh`, `toml`, or empty).
    pub lang: String,
    /// The `doc-test:` comment before it, if any (the text after `doc-test:`).
    pub directive: Option<String>,
    /// Its lines with their numbers.
    pub lines: Vec<(usize, String)>,
}

/// A command of a page: its place, its words (shell-split), and the output shown after it in a
/// transcript.
#[derive(Debug, Clone)]
pub(crate) struct DocCommand {
    /// `stormark`, or a script of the repository (`deploy/deb/build.sh`).
    pub program: String,
    pub page: String,
    pub line: usize,
    pub argv: Vec<String>,
    pub shown: Vec<String>,
    pub exit: Vec<i32>,
    pub check_output: bool,
}

/// The fenced blocks of a Markdown page.
pub(crate) fn blocks(page: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut last_comment: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    let directive = last_comment
                        .take()
                        .filter(|(at, _)| *at + 1 == n)
                        .map(|(_, d)| d);
                    open = Some(Block {
                        page: page.to_string(),
                        line: n,
                        lang: rest.trim().to_string(),
                        directive,
                        lines: Vec::new(),
                    });
                }
            }
            continue;
        }
        match &mut open {
            Some(b) => b.lines.push((n, line.to_string())),
            None => {
                let t = line.trim();
                if let Some(d) = t
                    .strip_prefix("<!-- doc-test:")
                    .and_then(|d| d.strip_suffix("-->"))
                {
                    last_comment = Some((n, d.trim().to_string()));
                }
            }
        }
    }
    assert!(open.is_none(), "{page}: a fenced block is never closed");
    out
}

/// Splits a shell line into words as sh would (single and double quotes, backslashes), and
/// drops a trailing `# comment`.
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// What a block asks of the runner.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Directive {
    Run { exit: Vec<i32>, check_output: bool },
    Skip(String),
    Synopsis,
    File(String),
}

pub(crate) fn directive(b: &Block) -> Directive {
    let Some(d) = b.directive.as_deref() else {
        return Directive::Run {
            exit: vec![0],
            check_output: true,
        };
    };
    let at = format!("{}:{}", b.page, b.line);
    if let Some(why) = d.strip_prefix("skip") {
        let why = why
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim();
        assert!(!why.is_empty(), "{at}: a skip says why: `skip (WHY)`");
        return Directive::Skip(why.to_string());
    }
    if d == "synopsis" {
        return Directive::Synopsis;
    }
    if let Some(name) = d.strip_prefix("file ") {
        return Directive::File(name.trim().to_string());
    }
    if let Some(codes) = d.strip_prefix("exit ") {
        let codes = codes.split('(').next().unwrap_or("");
        let exit = codes
            .split('|')
            .map(|c| {
                c.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{at}: `exit N` or `exit N|M`, not {d:?}"))
            })
            .collect();
        return Directive::Run {
            exit,
            check_output: true,
        };
    }
    if let Some(why) = d.strip_prefix("output unchecked") {
        assert!(
            why.trim().starts_with('('),
            "{at}: `output unchecked (WHY)`"
        );
        return Directive::Run {
            exit: vec![0],
            check_output: false,
        };
    }
    panic!("{at}: unknown doc-test comment {d:?} (skip (WHY), synopsis, exit N, file NAME, output unchecked (WHY))");
}

/// The repository's scripts a page may show, run as stormark commands are.
const SCRIPTS: &[&str] = &["deploy/deb/build.sh"];

/// Languages whose blocks hold commands (the others are files, output or code).
fn shell_block(lang: &str) -> bool {
    matches!(lang, "" | "sh" | "console" | "bash")
}

/// The stormark commands of a shell block: `$ stormark ...` or `stormark ...` lines (with
/// `\` continuations and environment assignments before them), each with the transcript output
/// that follows it.
pub(crate) fn commands(b: &Block, exit: &[i32], check_output: bool) -> Vec<DocCommand> {
    let mut out: Vec<DocCommand> = Vec::new();
    let mut lines = b.lines.iter().peekable();
    let mut in_transcript = false;
    while let Some((n, line)) = lines.next() {
        let prompt = line.strip_prefix("$ ");
        let text = prompt.unwrap_or(line).trim();
        let mut words = shell_words(text);
        let mut joined = text.to_string();
        while joined.ends_with('\\') {
            let Some((_, next)) = lines.next() else { break };
            joined.pop();
            joined.push(' ');
            joined.push_str(next.trim());
            words = shell_words(&joined);
        }
        // FOO=... stormark ...: the assignments are the runner's to make.
        let start = words
            .iter()
            .position(|w| !w.contains('=') || w.starts_with('-'))
            .unwrap_or(words.len());
        let program = words
            .get(start)
            .filter(|w| SCRIPTS.contains(&w.as_str()) || *w == "stormark");
        if let Some(program) = program.cloned() {
            in_transcript = prompt.is_some();
            out.push(DocCommand {
                program,
                page: b.page.clone(),
                line: *n,
                argv: words[start + 1..].to_vec(),
                shown: Vec::new(),
                exit: exit.to_vec(),
                check_output,
            });
        } else if in_transcript && prompt.is_none() {
            if let Some(c) = out.last_mut() {
                c.shown.push(line.clone());
            }
        }
    }
    out
}

/// Options whose value a prose fragment may leave out.
const VALUED: &[&str] = &[
    "--agents",
    "--job",
    "--endpoint",
    "--token-file",
    "--listen",
];

/// The complete commands written inline in a page's prose (`` `stormark run /dev/sdb ...` ``,
/// outside fenced blocks): those without a placeholder (`HOST`, `ID`, `...`, `<dir>`, `[opt]`,
/// `|`), which a reader copies as they are.
pub(crate) fn inline_commands(page: &str, text: &str) -> Vec<DocCommand> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (k, span) in line.split('`').enumerate() {
            let Some(rest) = span.strip_prefix("stormark ").filter(|_| k % 2 == 1) else {
                continue;
            };
            let words = shell_words(rest);
            // HOST, RUN_DIR, and A.json: names a reader replaces.
            let upper =
                |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            let placeholder = |w: &String| {
                w.contains("...")
                    || w.contains('<')
                    || w.contains('[')
                    || w == "|"
                    || upper(w.split('.').next().unwrap_or(""))
            };
            // `stormark net client --agents`: an option named, its value left to the prose.
            let dangling = words.last().is_some_and(|w| VALUED.contains(&w.as_str()));
            if words.len() < 3 || words.iter().any(placeholder) || dangling {
                continue;
            }
            out.push(DocCommand {
                program: "stormark".into(),
                page: page.to_string(),
                line: i + 1,
                argv: words,
                shown: Vec::new(),
                exit: vec![0],
                check_output: false,
            });
        }
    }
    out
}

/// Every page the runner reads: README.md and docs/*.md.
pub(crate) fn pages() -> Vec<String> {
    let mut v = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(format!("{REPO}/docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

/// The blocks of every page.
pub(crate) fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(format!("{REPO}/{p}")).expect("a page");
            blocks(p, &text)
        })
        .collect()
}

/// The files pages define (`doc-test: file NAME`): (page, name, text).
pub(crate) fn doc_files(all: &[Block]) -> Vec<(String, String, String)> {
    let mut files: Vec<(String, String, String)> = Vec::new();
    for b in all {
        if let Directive::File(name) = directive(b) {
            assert!(
                !files.iter().any(|(p, n, _)| *p == b.page && *n == name),
                "{}:{}: a second file {name} on this page",
                b.page,
                b.line
            );
            let text: Vec<&str> = b.lines.iter().map(|(_, l)| l.as_str()).collect();
            files.push((b.page.clone(), name, text.join("\n") + "\n"));
        }
    }
    files
}

/// What one page's blocks come to: the commands to run, and the skipped blocks with reasons.
pub(crate) struct PagePlan {
    pub commands: Vec<DocCommand>,
    pub skipped: Vec<(String, usize, usize, String)>,
    pub synopses: usize,
}

pub(crate) fn plan(page: &str) -> PagePlan {
    let text = std::fs::read_to_string(format!("{REPO}/{page}")).expect("a page");
    let mut p = PagePlan {
        commands: Vec::new(),
        skipped: Vec::new(),
        synopses: 0,
    };
    let inline = inline_commands(page, &text);
    let inline_skip = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("<!-- doc-test: inline skip (")
            .and_then(|r| r.strip_suffix(") -->"))
    });
    match inline_skip {
        Some(why) if !inline.is_empty() => {
            p.skipped
                .push((page.to_string(), 1, inline.len(), format!("inline: {why}")))
        }
        _ => p.commands.extend(inline),
    }
    for b in blocks(page, &text) {
        if !shell_block(&b.lang) {
            continue;
        }
        match directive(&b) {
            Directive::Run { exit, check_output } => {
                p.commands.extend(commands(&b, &exit, check_output))
            }
            Directive::Skip(why) => {
                let n = commands(&b, &[0], false).len();
                if n > 0 {
                    p.skipped.push((b.page.clone(), b.line, n, why));
                }
            }
            Directive::Synopsis => p.synopses += 1,
            Directive::File(_) => {}
        }
    }
    p
}

/// Runs every command of `page`; panics naming each that failed.
fn run_page(test: &str, page: &str) {
    let plan = plan(page);
    for (page, line, n, why) in &plan.skipped {
        eprintln!("DOC-SKIP {page}:{line}: {n} command(s): {why}");
    }
    if plan.commands.is_empty() {
        return;
    }
    let files = doc_files(&all_blocks());
    let Some(mut w) = world::World::new(test, page, &plan.commands, &files) else {
        return;
    };
    let mut failures = Vec::new();
    for c in &plan.commands {
        if let Err(e) = w.run(c) {
            failures.push(e);
        }
    }
    eprintln!(
        "DOC {page}: {} command(s) run, {} failed, {} skipped",
        plan.commands.len(),
        failures.len(),
        plan.skipped.iter().map(|s| s.2).sum::<usize>()
    );
    assert!(
        failures.is_empty(),
        "{} of {} commands of {page} failed:\n\n{}",
        failures.len(),
        plan.commands.len(),
        failures.join("\n\n")
    );
}

/// The transcript's lines without figures that the output lacks.
pub(crate) fn missing_lines(shown: &[String], printed: &str) -> Vec<String> {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let printed: Vec<String> = printed.lines().map(norm).collect();
    shown
        .iter()
        .map(|l| norm(l))
        .filter(|l| {
            l.chars().any(|c| c.is_alphabetic())
                && !l.chars().any(|c| c.is_ascii_digit())
                && l != "..."
        })
        .filter(|l| !printed.iter().any(|p| p.contains(l.as_str())))
        .collect()
}

/// Where a page's scratch paths live (`/mnt/data` is `<scratch>/mnt/data`).
pub(crate) fn scratch_path(scratch: &Path, doc_path: &str) -> PathBuf {
    scratch.join(doc_path.trim_start_matches('/'))
}

macro_rules! page_tests {
    ($($name:ident => $page:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_page(stringify!($name), $page);
            }
        )*

        /// Every page has its test above: a new page cannot be left out.
        #[test]
        fn every_page_is_run() {
            let tested: Vec<&str> = vec![$($page),*];
            for p in pages() {
                assert!(tested.contains(&p.as_str()), "{p}: add it to page_tests! in tests/docs.rs");
            }
        }
    };
}

page_tests! {
    readme => "README.md",
    architecture => "docs/architecture.md",
    compare => "docs/compare.md",
    data => "docs/data.md",
    diagnosis => "docs/diagnosis.md",
    distributed => "docs/distributed.md",
    fio_compat => "docs/fio-compat.md",
    fuzzing => "docs/fuzzing.md",
    ior_mdtest => "docs/ior-mdtest.md",
    job_files => "docs/job-files.md",
    meta => "docs/meta.md",
    net => "docs/net.md",
    nfs_iscsi => "docs/nfs-iscsi.md",
    performance => "docs/performance.md",
    report => "docs/report.md",
    results_schema => "docs/results-schema.md",
    run => "docs/run.md",
    s3 => "docs/s3.md",
    search => "docs/search.md",
    security => "docs/security.md",
    suites => "docs/suites.md",
}

/// The count of the docs' commands: run, skipped (with reasons), synopses. Printed for the
/// record; it fails when a skip has no reason or a page's comment is unknown.
#[test]
fn the_docs_commands_are_counted() {
    let (mut run, mut skipped, mut synopses) = (0, 0, 0);
    for p in pages() {
        let plan = plan(&p);
        run += plan.commands.len();
        synopses += plan.synopses;
        for (page, line, n, why) in &plan.skipped {
            skipped += n;
            eprintln!("skipped: {page}:{line}: {n} command(s): {why}");
        }
    }
    eprintln!("the docs' commands: {run} run, {skipped} skipped, {synopses} synopses");
    assert!(run > 50, "only {run} commands found: is the parser broken?");
    let files = doc_files(&all_blocks());
    assert!(files.iter().any(|f| f.1 == "mixed.toml"), "{files:?}");
}

#[test]
fn shell_words_split_as_sh_does() {
    assert_eq!(
        shell_words(r#"run /d --target-latency 'p99<=2ms' --x "a b" c\ d # note"#),
        [
            "run",
            "/d",
            "--target-latency",
            "p99<=2ms",
            "--x",
            "a b",
            "c d"
        ]
    );
    assert_eq!(shell_words("a#b"), ["a#b"]);
}

#[test]
fn a_transcripts_lines_without_figures_are_checked() {
    let shown = vec![
        "status: ok".to_string(),
        " IOPS 3.2k".to_string(),
        "...".to_string(),
        "findings:".to_string(),
    ];
    assert_eq!(
        missing_lines(&shown, "x\nstatus:   ok\n"),
        vec!["findings:".to_string()]
    );
}

/// `--embedded` is offered where this build has the server, and only there: the default build
/// (no `embedded-s3`) neither lists it in `s3 --help` nor shows its example, and refuses it in
/// one line naming the feature (issue 56: the pages and the help presented it as the way to
/// try S3 while the release build had no server).
#[test]
fn embedded_s3_is_offered_only_by_a_build_that_has_it() {
    let bin = stormark_testkit::Bin(env!("CARGO_BIN_EXE_stormark"));
    let help = stormark_testkit::text(&bin.run(&["s3", "--help"]));
    let out = bin.run(&["s3", "--embedded", "--op-mix", "put", "--time", "1s", "-q"]);
    if cfg!(feature = "embedded-s3") {
        assert!(help.contains("--embedded"), "{help}");
    } else {
        assert!(!help.contains("--embedded"), "{help}");
        assert!(!help.contains("Embedded server"), "{help}");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            stormark_testkit::text(&out)
        );
        assert!(stormark_testkit::text(&out).contains("--features embedded-s3"));
    }
    for page in ["README.md", "docs/s3.md"] {
        let text = std::fs::read_to_string(format!("{REPO}/{page}")).unwrap();
        assert!(
            !text.contains("nothing installed"),
            "{page} presents --embedded as the way to try S3 with nothing installed"
        );
    }
}
