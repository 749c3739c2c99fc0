//! Where files come from: the [`Loader`] trait, the file policy of [`FsLoader`] and
//! the in-memory [`MemLoader`].
//!
//! Architecture Invariant: [`FsLoader`] is the crate's only IO. It reads what an
//! experiment names under one policy:
//!
//! - the file given on the command line ([`FileKind::Experiment`]) may be anywhere;
//! - a `use`d library ([`FileKind::Library`]) and a matrix CSV ([`FileKind::Matrix`])
//!   must lie, once every symbolic link is resolved, inside the experiment file's
//!   directory or a directory the user named (`--include-dir`);
//! - only regular files are read: devices, FIFOs, sockets and directories are
//!   refused before any byte is read (a FIFO is opened without blocking), and so
//!   are the kernel's pseudo file systems (`/proc`, `/sys`), whose files claim to be
//!   regular;
//! - a source file may hold at most [`MAX_SOURCE_BYTES`], a matrix
//!   [`MAX_MATRIX_BYTES`], and both must be UTF-8 text without NUL bytes.
//!
//! Every refusal is a short message that names the path and never quotes the
//! file. Each file read comes with its identity ([`FileId`]: device and inode), so
//! that the language recognises one file reached by two paths (a symbolic link, a
//! `..`) and ends a symbolic-link cycle as an include cycle.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes an experiment or library file may hold.
pub const MAX_SOURCE_BYTES: u64 = 1 << 20;
/// The most bytes a transfer-latency matrix CSV may hold.
pub const MAX_MATRIX_BYTES: u64 = 4 << 20;

/// What a file is read for; it decides where it may lie and how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// The file given on the command line.
    Experiment,
    /// A file named by `use`.
    Library,
    /// A topology's `matrix = "..."` CSV.
    Matrix,
}

impl FileKind {
    pub fn max_bytes(self) -> u64 {
        match self {
            FileKind::Experiment | FileKind::Library => MAX_SOURCE_BYTES,
            FileKind::Matrix => MAX_MATRIX_BYTES,
        }
    }
}

/// The identity of a file: on disk its device and inode, in memory its position.
/// Two paths that reach one file give one identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId {
    pub device: u64,
    pub inode: u64,
}

/// A file's text and identity.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub text: String,
    pub id: FileId,
}

/// Why a file was not read: a short phrase about the file that never quotes it
/// (`it is a FIFO, not a regular file`), and what to do about it if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub reason: String,
    pub help: Option<String>,
}

impl From<String> for ReadError {
    fn from(reason: String) -> ReadError {
        ReadError { reason, help: None }
    }
}

impl From<&str> for ReadError {
    fn from(reason: &str) -> ReadError {
        reason.to_string().into()
    }
}

/// Reads a file whose path is already resolved (relative to the including file).
pub trait Loader {
    fn read(&self, path: &str, kind: FileKind) -> Result<Loaded, ReadError>;
}

/// Reads from the file system under the policy in the module documentation.
#[derive(Debug, Clone, Default)]
pub struct FsLoader {
    /// Canonical directories that `use` and `matrix` may read below.
    roots: Vec<PathBuf>,
}

impl FsLoader {
    /// The policy for the experiment `main`: its own directory and `include_dirs`.
    /// A directory that cannot be resolved admits nothing.
    pub fn for_experiment(main: &Path, include_dirs: &[PathBuf]) -> FsLoader {
        let dir = match main.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let roots = std::iter::once(&dir)
            .chain(include_dirs)
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .collect();
        FsLoader { roots }
    }

    /// The canonical directories that `use` and `matrix` may read below.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }
}

impl Loader for FsLoader {
    fn read(&self, path: &str, kind: FileKind) -> Result<Loaded, ReadError> {
        let canonical = std::fs::canonicalize(path).map_err(|e| io_words(&e))?;
        if kind != FileKind::Experiment && !self.roots.iter().any(|r| canonical.starts_with(r)) {
            return Err(ReadError {
                reason: format!(
                    "it lies outside the experiment's directory{}",
                    if self.roots.len() > 1 {
                        " and the --include-dir directories"
                    } else {
                        ""
                    }
                ),
                help: Some(
                    "files are read from the experiment's directory tree; pass --include-dir DIR to allow another"
                        .into(),
                ),
            });
        }
        let file = open_nonblocking(&canonical).map_err(|e| io_words(&e))?;
        let meta = file.metadata().map_err(|e| io_words(&e))?;
        if !meta.file_type().is_file() {
            return Err(format!("it is {}, not a regular file", file_kind_noun(&meta)).into());
        }
        if is_pseudo_fs(&file) {
            return Err("it is a kernel pseudo-file (/proc, /sys), not a regular file".into());
        }
        let cap = kind.max_bytes();
        if meta.len() > cap {
            return Err(too_large(meta.len(), cap).into());
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_words(&e))?;
        if bytes.len() as u64 > cap {
            return Err(too_large(bytes.len() as u64, cap).into());
        }
        let text = text_of(bytes).map_err(ReadError::from)?;
        use std::os::unix::fs::MetadataExt;
        Ok(Loaded {
            text,
            id: FileId {
                device: meta.dev(),
                inode: meta.ino(),
            },
        })
    }
}

/// Bytes to text, refusing what is not: invalid UTF-8 or NUL bytes.
fn text_of(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.contains(&0) {
        return Err("it is not a text file (it holds NUL bytes)".into());
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

fn too_large(len: u64, cap: u64) -> String {
    format!(
        "it is larger than the {} MiB a file may hold ({len} bytes)",
        cap >> 20
    )
}

/// Open for reading without blocking on a FIFO (whose `open` would wait for a
/// writer) and without making a terminal the controlling one.
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

fn file_kind_noun(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The kernel's pseudo file systems report regular files of size 0 whose contents
/// are generated (the environment, kernel state): never experiment input.
#[cfg(target_os = "linux")]
fn is_pseudo_fs(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `fstatfs` fills the buffer for an open descriptor, or fails.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), s.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: `fstatfs` succeeded, so the buffer is initialised.
    let f_type = unsafe { s.assume_init() }.f_type;
    [
        libc::PROC_SUPER_MAGIC,
        libc::SYSFS_MAGIC,
        libc::DEBUGFS_MAGIC,
        libc::SECURITYFS_MAGIC,
        libc::CGROUP_SUPER_MAGIC,
        libc::CGROUP2_SUPER_MAGIC,
    ]
    .contains(&f_type)
}

#[cfg(not(target_os = "linux"))]
fn is_pseudo_fs(_: &File) -> bool {
    false
}

/// An IO error as a short phrase without the OS's error number.
fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file".into(),
        PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_lowercase(),
                None => s.to_lowercase(),
            }
        }
    }
}

/// Files held in memory, by path (tests, the built-in quick start). Each path is
/// its own file.
pub struct MemLoader(pub BTreeMap<String, String>);

impl Loader for MemLoader {
    fn read(&self, path: &str, kind: FileKind) -> Result<Loaded, ReadError> {
        let (index, text) = self
            .0
            .iter()
            .enumerate()
            .find(|(_, (p, _))| *p == path)
            .map(|(i, (_, t))| (i, t))
            .ok_or_else(|| ReadError::from("no such file"))?;
        let cap = kind.max_bytes();
        if text.len() as u64 > cap {
            return Err(too_large(text.len() as u64, cap).into());
        }
        Ok(Loaded {
            text: text.clone(),
            id: FileId {
                device: 0,
                inode: index as u64,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_phrases() {
        let e = std::io::Error::from_raw_os_error(libc::ELOOP);
        assert_eq!(io_words(&e), "too many levels of symbolic links");
        let e = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(io_words(&e), "no such file");
    }

    #[test]
    fn binary_and_invalid_text_is_refused() {
        assert!(text_of(b"lock a = mcs\n".to_vec()).is_ok());
        assert!(text_of(b"a\0b".to_vec()).unwrap_err().contains("NUL"));
        assert!(text_of(vec![0xff, 0xfe]).unwrap_err().contains("UTF-8"));
    }
}
