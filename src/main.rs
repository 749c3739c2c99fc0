//! `locklab`: the command line. The only code that prints, renders diagnostics and
//! picks exit codes; everything it does is a call into `dsl`, `runner` or `analysis`.

mod cli;
mod cmd;
mod exit;
mod term;
mod util;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command};
use locklab_analysis::compare::CompareOptions;

fn main() {
    // `locklab plan FILE | head`: a closed pipe ends the process quietly, as it does
    // any Unix tool, instead of a panic in `println!`.
    // SAFETY: called first thing, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let argv: Vec<String> = std::env::args().collect();
    // `locklab help language` is the reference's documented spelling.
    if argv.get(1).map(String::as_str) == Some("help")
        && argv.get(2).map(String::as_str) == Some("language")
    {
        print!("{}", locklab_dsl::LANGUAGE_REFERENCE);
        return;
    }
    let colour = if term::colour() {
        clap::ColorChoice::Auto
    } else {
        clap::ColorChoice::Never
    };
    let parsed = Cli::command()
        .color(colour)
        .try_get_matches_from(&argv)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
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
    // A command that writes a results directory cleans up after Ctrl-C.
    if matches!(
        cli.command,
        Command::Run(_)
            | Command::Report { .. }
            | Command::Reproduce { .. }
            | Command::Merge { .. }
    ) {
        cmd::interrupt::install();
    }
    let result = match cli.command {
        Command::Check {
            files,
            load,
            format,
        } => cmd::check::run(&files, &load, format),
        Command::Plan {
            file,
            format,
            load,
            quick,
            slurm,
        } => cmd::plan::run(&file, format, &load, quick, &slurm),
        Command::Run(args) => cmd::run::run(&args, &argv),
        Command::Report { dir, accept } => cmd::report::run(&dir, accept.accept()),
        Command::Compare {
            a,
            b,
            allow_cross_host,
            sim_vs_native,
            tolerance,
            any_placement,
            out,
            format,
        } => cmd::compare::run(
            &a,
            &b,
            CompareOptions {
                allow_cross_host,
                sim_vs_native,
                tolerance,
                any_placement,
            },
            out.as_deref(),
            format,
        ),
        Command::Reproduce {
            dir,
            out,
            jobs,
            accept,
            force,
        } => cmd::reproduce::run(&dir, out.as_deref(), force, jobs, accept.accept(), &argv),
        Command::Merge {
            dirs,
            out,
            accept,
            force,
        } => cmd::merge::run(&dirs, &out, force, accept.accept()),
        Command::Trace {
            file,
            point,
            rep,
            from,
            span,
            format,
            load,
        } => cmd::trace::run(&file, &load, point.as_deref(), rep, from, span, format),
        Command::Topo {
            measure,
            passes,
            name,
        } => cmd::topo::run(measure, passes, name.as_deref()),
        Command::Bench { what, rows, iters } => cmd::bench::run(what, rows, iters),
        Command::Language => {
            print!("{}", locklab_dsl::LANGUAGE_REFERENCE);
            Ok(exit::OK)
        }
        Command::Completions { shell } => cmd::docs::completions(shell),
        Command::Man => cmd::docs::man(),
    };
    // Exits wait for an interruption being handled (`cmd::interrupt`), which then
    // ends the process by its signal.
    match result {
        Ok(code) => cmd::interrupt::exit(code),
        Err(f) => {
            eprintln!("error: {}", error_text(&f.error));
            cmd::interrupt::exit(f.code);
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
