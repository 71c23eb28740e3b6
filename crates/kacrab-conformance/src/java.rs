//! Runs traces through the Java side: one JVM for a whole batch of traces.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::trace::Trace;

/// The main class of `conformance/java`.
pub const MAIN_CLASS: &str = "org.apache.kafka.clients.producer.internals.ConformanceHarness";

/// Builds `conformance/java` (mvn resolves the jars, javac compiles) and returns the
/// classpath to run it with.
///
/// # Errors
/// The build script failed (no `java`/`mvn`, or no way to fetch kafka-clients).
pub fn build(repo_root: &Path) -> Result<String, String> {
    let script = repo_root.join("conformance/java/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed", script.display()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `traces` through one JVM; per trace, its output lines (without the `end` line).
///
/// # Errors
/// The JVM could not start or its output ended early.
pub fn run(classpath: &str, traces: &[Trace]) -> Result<Vec<Vec<String>>, String> {
    let mut child = Command::new("java")
        .args([
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
            "-cp",
            classpath,
            MAIN_CLASS,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start java: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input: String = traces.iter().map(Trace::to_jsonl).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stdout = child.stdout.take().expect("piped");
    let mut results = Vec::with_capacity(traces.len());
    let mut current = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading java's output: {e}"))?;
        if line == r#"{"ev":"end"}"# {
            results.push(std::mem::take(&mut current));
        } else {
            current.push(line);
        }
    }
    let _ = writer.join();
    let status = child.wait().map_err(|e| e.to_string())?;
    if results.len() != traces.len() {
        return Err(format!(
            "java ({status}) answered {} of {} traces",
            results.len(),
            traces.len()
        ));
    }
    Ok(results)
}
