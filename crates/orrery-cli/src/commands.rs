//! The subcommands. Each returns its exit code; an `Err` means exit 2 (unreadable input,
//! unwritable output).

use crate::cli::{ExportFormat, GraphFormatArg, ReportFormat};
use anyhow::{bail, Context, Result};
use orrery_blueprint::render::{self, GraphFormat};
use orrery_blueprint::{
    check_read_sources, check_sources, fsio, save, Diagnostic, Encoding, FileReport, Severity, Source,
};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Reads every file with `read`; any unreadable one is an error naming it.
fn read_all(files: &[PathBuf], read: fn(&Path) -> std::io::Result<Source>) -> Result<Vec<Source>> {
    files.iter().map(|f| read(f).with_context(|| format!("cannot read {}", f.display()))).collect()
}

/// Whether to colour output for a terminal (never when NO_COLOR is set).
pub(crate) fn colour(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn diagnostic_line(file: &str, d: &Diagnostic, colour: bool) -> String {
    let place = match (d.line, d.column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    };
    let severity = match (colour, d.severity) {
        (false, s) => s.as_str().to_string(),
        (true, Severity::Error) => "\x1b[1;31merror\x1b[0m".to_string(),
        (true, Severity::Warning) => "\x1b[1;33mwarning\x1b[0m".to_string(),
        (true, Severity::Info) => "\x1b[1;36minfo\x1b[0m".to_string(),
    };
    format!("{file}:{}:{}: {severity}[{}]: {}{place}", d.task_id.as_deref().unwrap_or(""), d.path, d.code, d.message)
}

fn print_diagnostics(to: &mut dyn Write, report: &FileReport, colour: bool) {
    for d in &report.diagnostics {
        let _ = writeln!(to, "{}", diagnostic_line(&report.file, d, colour));
    }
}

pub fn validate(format: ReportFormat, files: &[PathBuf]) -> Result<u8> {
    // A large file gives up its text once loaded (its diagnostics are placed from the file).
    let sources = read_all(files, Source::read_given_up)?;
    let reports = check_read_sources(&sources)?;
    // The files' models are not freed one allocation at a time: the process ends now (a
    // 100,000-task blueprint's model is some 700,000 small allocations).
    std::mem::forget(sources);
    // Written in blocks, not a line at a time (a report may hold 100,000 diagnostics).
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match format {
        ReportFormat::Json => {
            orrery_blueprint::write_reports_pretty(&mut out, &reports)?;
            writeln!(out)?;
        }
        ReportFormat::Text => {
            let tty = colour(std::io::stdout().is_terminal());
            for r in &reports {
                print_diagnostics(&mut out, r, tty);
            }
            let invalid = reports.iter().filter(|r| !r.valid).count();
            let refused = reports.iter().filter(|r| !r.server_accepts).count();
            let summary = format!(
                "{} file(s): {} valid, {invalid} with errors; the reference server would refuse {refused}",
                reports.len(),
                reports.len() - invalid
            );
            out.flush()?;
            if std::io::stderr().is_terminal() || !reports.iter().all(|r| r.diagnostics.is_empty()) {
                eprintln!("{summary}");
            }
        }
    }
    out.flush()?;
    let code = if reports.iter().all(|r| r.valid) { 0 } else { 1 };
    std::mem::forget(reports);
    Ok(code)
}

pub fn fmt(check: bool, files: &[PathBuf]) -> Result<u8> {
    let sources = read_all(files, Source::read)?;
    let mut code = 0;
    for s in &sources {
        let loaded = match &s.loaded {
            Ok(l) => l,
            Err(diagnostics) => {
                let tty = colour(std::io::stderr().is_terminal());
                for d in diagnostics {
                    eprintln!("{}", diagnostic_line(&s.path.display().to_string(), d, tty));
                }
                code = 1;
                continue;
            }
        };
        let canonical = save::to_string(&loaded.blueprint, loaded.encoding);
        if canonical == s.text {
            continue;
        }
        if check {
            println!("{}", s.path.display());
            code = 1;
        } else {
            write_atomically(&s.path, &canonical)?;
            eprintln!("formatted {}", s.path.display());
        }
    }
    Ok(code)
}

/// Writes through a temporary file in the same folder, so a crash never leaves half a file
/// (`fsio::write_atomic`: a random, exclusive temporary name, the file's mode kept).
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    fsio::write_atomic(path, text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

pub fn export(to: ExportFormat, output: Option<&Path>, files: &[PathBuf]) -> Result<u8> {
    if files.len() > 1 && output.is_none() {
        bail!("exporting several files needs -o DIRECTORY");
    }
    let sources = read_all(files, Source::read)?;
    let reports = check_sources(&sources);
    let mut refused = false;
    let tty = colour(std::io::stderr().is_terminal());
    for r in &reports {
        let stderr = &mut std::io::stderr().lock();
        if !r.server_accepts || !r.valid {
            refused = true;
            let _ = writeln!(
                stderr,
                "{}: not exported: {}",
                r.file,
                if r.server_accepts { "Orrery finds errors in it" } else { "an antikythera server would refuse it" }
            );
            let errors = FileReport {
                diagnostics: r.diagnostics.iter().filter(|d| d.is_error()).cloned().collect(),
                ..r.clone()
            };
            print_diagnostics(stderr, &errors, tty);
        } else {
            print_diagnostics(stderr, r, tty);
        }
    }
    if refused {
        return Ok(1);
    }
    let encoding = match to {
        ExportFormat::Antikythera => Encoding::Plain,
        ExportFormat::Compas => Encoding::Compas,
    };
    for s in &sources {
        let loaded = s.loaded.as_ref().expect("accepted files loaded");
        let text = save::to_string(&loaded.blueprint, encoding);
        match output {
            None => std::io::stdout().write_all(text.as_bytes())?,
            Some(out) if files.len() == 1 && !out.is_dir() => write_atomically(out, &text)?,
            Some(dir) => {
                std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
                let name = s.path.file_name().context("no file name")?;
                write_atomically(&dir.join(name), &text)?;
            }
        }
    }
    Ok(0)
}

pub fn graph(format: GraphFormatArg, file: &Path) -> Result<u8> {
    let source = Source::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let loaded = match &source.loaded {
        Ok(l) => l,
        Err(diagnostics) => {
            let tty = colour(std::io::stderr().is_terminal());
            for d in diagnostics {
                eprintln!("{}", diagnostic_line(&file.display().to_string(), d, tty));
            }
            return Ok(1);
        }
    };
    let format = match format {
        GraphFormatArg::Dot => GraphFormat::Dot,
        GraphFormatArg::Mermaid => GraphFormat::Mermaid,
    };
    print!("{}", render::render(&loaded.blueprint, format));
    Ok(0)
}
