//! `locklab`: the command line. The only code that prints, renders diagnostics and
//! picks exit codes; everything it does is a call into `dsl`, `runner` or `analysis`.

mod cli;
mod cmd;
mod exit;
mod util;

use clap::Parser;
use cli::{Cli, Command};

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    // `locklab help language` is the reference's documented spelling.
    if argv.get(1).map(String::as_str) == Some("help")
        && argv.get(2).map(String::as_str) == Some("language")
    {
        print!("{}", locklab_dsl::LANGUAGE_REFERENCE);
        return;
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::INVALID_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = match cli.command {
        Command::Check { files, load } => cmd::check::run(&files, &load),
        Command::Plan {
            file,
            format,
            load,
            quick,
            slurm,
        } => cmd::plan::run(&file, format, &load, quick, &slurm),
        Command::Run(args) => cmd::run::run(&args, &argv),
        Command::Report { dir } => cmd::report::run(&dir),
        Command::Compare {
            a,
            b,
            allow_cross_host,
            sim_vs_native,
            out,
        } => cmd::compare::run(
            &a,
            b.as_deref(),
            allow_cross_host,
            sim_vs_native,
            out.as_deref(),
        ),
        Command::Reproduce { dir, out, jobs } => {
            cmd::reproduce::run(&dir, out.as_deref(), jobs, &argv)
        }
        Command::Merge { dirs, out } => cmd::merge::run(&dirs, &out),
        Command::Topo { measure, name } => cmd::topo::run(measure, name.as_deref()),
        Command::Bench { what, rows, iters } => cmd::bench::run(what, rows, iters),
        Command::Language => {
            print!("{}", locklab_dsl::LANGUAGE_REFERENCE);
            Ok(exit::OK)
        }
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            eprintln!("error: {}", error_text(&f.error));
            std::process::exit(f.code);
        }
    }
}

/// An error and its causes on one line, each said once: a cause whose text its
/// context already quotes (`create directory x: Read-only file system`) is not
/// repeated.
fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
