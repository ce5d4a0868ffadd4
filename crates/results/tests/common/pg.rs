//! A throw-away PostgreSQL 15 server for tests: a cluster made by `initdb` in a
//! temporary directory (as the unprivileged user `postgres` when the tests run as
//! root), listening on a unix socket in that directory and a free TCP port on
//! 127.0.0.1, stopped and removed on drop, even when the test panics. Shared by the
//! results crate's tests and the CLI tests (`#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's `postgresql-15` puts the server's programs.
pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running throw-away cluster.
pub struct TempPg {
    dir: tempfile::TempDir,
    port: u16,
    running: bool,
}

/// The cluster, or `None` (said on stderr) when PostgreSQL 15 is not installed.
pub fn start() -> Option<TempPg> {
    if !Path::new(PG_BIN).join("pg_ctl").exists() {
        eprintln!(
            "skipped: PostgreSQL 15 is not installed ({PG_BIN}/pg_ctl missing; Debian package postgresql)"
        );
        return None;
    }
    Some(TempPg::start())
}

fn as_cluster_user(program: &str) -> Command {
    let path = Path::new(PG_BIN).join(program);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port on 127.0.0.1")
}

impl TempPg {
    fn start() -> TempPg {
        let dir = tempfile::Builder::new()
            .prefix("audiolat-pg-")
            .tempdir()
            .expect("temporary directory");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            run_ok(
                Command::new("chown").arg("postgres:").arg(dir.path()),
                "chown",
            );
        }
        let data = dir.path().join("data");
        run_ok(
            as_cluster_user("initdb")
                .args([
                    "-U",
                    "audiolat",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data),
            "initdb",
        );
        let mut pg = TempPg {
            dir,
            port: 0,
            running: false,
        };
        pg.start_server();
        pg
    }

    fn start_server(&mut self) {
        // A port another test took between the probe and the start: try another.
        for _ in 0..5 {
            self.port = free_port();
            let opts = format!(
                "-k {} -p {} -h 127.0.0.1 -F -c max_connections=40",
                self.dir.path().display(),
                self.port
            );
            let status = as_cluster_user("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-o", &opts, "-l"])
                .arg(self.dir.path().join("log"))
                .args(["-w", "-t", "60", "start"])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("pg_ctl start");
            if status.success() {
                self.running = true;
                return;
            }
        }
        panic!(
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The URL of the cluster's database `postgres` as user `audiolat`.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of database `name` (made by [`TempPg::create_db`]).
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://audiolat@127.0.0.1:{}/{name}", self.port)
    }

    /// Makes a database.
    pub fn create_db(&self, name: &str) {
        run_ok(
            Command::new(Path::new(PG_BIN).join("createdb")).args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "audiolat",
                name,
            ]),
            "createdb",
        );
    }

    /// Starts the stopped server again (on another free port: see [`TempPg::url`]).
    pub fn restart(&mut self) {
        self.start_server();
    }

    /// Stops the server (fast shutdown: connections are cut).
    pub fn stop(&mut self) {
        if self.running {
            let _ = as_cluster_user("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "fast", "-w", "stop"])
                .stdout(std::process::Stdio::null())
                .status();
            self.running = false;
        }
    }
}

impl Drop for TempPg {
    fn drop(&mut self) {
        if self.running {
            let _ = as_cluster_user("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}
