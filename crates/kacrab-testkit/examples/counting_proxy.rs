//! A byte-level TCP relay that counts the connections made through it, so a script can
//! check that a client gives up after a final failure instead of reconnecting in a loop
//! (issue 11: "no reconnect storm, count the attempts"). It does not look into the bytes:
//! TLS and SASL pass through untouched (the testkit's `Proxy` decodes Kafka frames, which
//! a TLS stream hides).
//!
//! ```text
//! counting_proxy --target HOST:PORT --count-file FILE
//! ```
//!
//! Listens on an ephemeral loopback port and prints `LISTEN=127.0.0.1:PORT` on stdout
//! (one line, flushed) once it accepts; appends one line per accepted connection to
//! `FILE` (so `wc -l FILE` is the number of connection attempts); relays each connection
//! to `--target` until either side closes. Runs until killed.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::ExitCode;
use std::thread;

fn main() -> ExitCode {
    let mut target = None;
    let mut count_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        match (flag.as_str(), value) {
            ("--target", Some(v)) => target = Some(v),
            ("--count-file", Some(v)) => count_file = Some(v),
            _ => {
                eprintln!("usage: counting_proxy --target HOST:PORT --count-file FILE");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(target), Some(count_file)) = (target, count_file) else {
        eprintln!("usage: counting_proxy --target HOST:PORT --count-file FILE");
        return ExitCode::from(2);
    };
    match run(&target, &count_file) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("counting_proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(target: &str, count_file: &str) -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut out = io::stdout().lock();
    writeln!(out, "LISTEN={}", listener.local_addr()?)?;
    out.flush()?;
    drop(out);
    let mut counts = OpenOptions::new()
        .create(true)
        .append(true)
        .open(count_file)?;
    for (n, client) in listener.incoming().enumerate() {
        let client = client?;
        // One line per attempt, written before relaying so a client that fails at once
        // is still counted.
        writeln!(counts, "connection {} from {}", n + 1, client.peer_addr()?)?;
        counts.flush()?;
        let target = target.to_owned();
        thread::spawn(move || {
            if let Ok(upstream) = TcpStream::connect(&target) {
                relay(client, upstream);
            }
        });
    }
    Ok(())
}

/// Copies both directions until one side closes, then closes both.
fn relay(client: TcpStream, upstream: TcpStream) {
    let (Ok(mut c_read), Ok(mut u_read)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let (mut c_write, mut u_write) = (client, upstream);
    let up = thread::spawn(move || {
        let _ = io::copy(&mut c_read, &mut u_write);
        let _ = u_write.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut u_read, &mut c_write);
    let _ = c_write.shutdown(Shutdown::Both);
    let _ = up.join();
}
