//! `locklab completions SHELL` and `locklab man`: the command line described for
//! shells and `man`, both generated from the clap definition so they cannot drift.

use crate::cli::Cli;
use crate::exit::{self, Result, WithCode};
use clap::CommandFactory;

/// Print the completion script for `shell` (bash, zsh, fish, elvish, powershell).
pub fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "locklab", &mut std::io::stdout());
    Ok(exit::OK)
}

/// Print the manual page, `locklab(1)` in roff: the command, then a section per
/// subcommand with its synopsis and options (what `locklab help SUB` shows).
pub fn man() -> Result<i32> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .code(exit::RUN_FAILED)?;
    let mut page = String::from_utf8_lossy(&out).into_owned();
    for sub in cmd.get_subcommands() {
        let name = format!("locklab {}", sub.get_name());
        let sub = sub.clone().bin_name(name.clone());
        let man = clap_mangen::Man::new(sub);
        let mut synopsis = Vec::new();
        man.render_synopsis_section(&mut synopsis)
            .code(exit::RUN_FAILED)?;
        let mut options = Vec::new();
        man.render_options_section(&mut options)
            .code(exit::RUN_FAILED)?;
        page.push_str(&format!(".SH \"{}\"\n", name.to_uppercase()));
        // The sub-pages' own section headers become paragraphs of this section.
        for part in [synopsis, options] {
            let text = String::from_utf8_lossy(&part).into_owned();
            page.push_str(
                &text
                    .replace(".SH SYNOPSIS\n", "")
                    .replace(".SH OPTIONS\n", ".PP\nOptions:\n"),
            );
        }
    }
    use std::io::Write;
    std::io::stdout()
        .write_all(page.as_bytes())
        .code(exit::RUN_FAILED)?;
    Ok(exit::OK)
}
