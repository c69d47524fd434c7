//! Measures the log follower and window reads of `orrery-logs` (scripts/bench_logs.sh).
//!
//!   bench_logs DIR [--appends N] [--gib G] [--chunk BYTES] [--rounds N]
//!
//! - **Latency**: a writer thread appends a line stamped with the time of its write every ~1 ms
//!   (`--appends`, default 10,000); the follower's reader notes when each line arrives. Median,
//!   p99 and max, with file-system events (the default) and with polling only.
//! - **Throughput**: a writer appends `--gib` GiB (default 1) in 64 KiB writes as fast as it
//!   can; the time until the follower has seen every byte, then the same file written again
//!   while `tail -c +1 -f` (coreutils) follows it, its output read from a pipe. Both are bounded
//!   by the writer (its own time is reported beside), so a **catch-up** is measured too: each
//!   started on the written file at offset 0, the time until it has seen all of it. Both are
//!   run `--rounds` times (default 3), alternating, and the median round is reported.
//! - **Peak RSS**: a child process (this binary, `rss FILE`) follows the whole file from offset 0
//!   until drained, reads its tail window and every window of it, and reports its VmHWM.
//!
//! Prints one JSON object on standard output.
use orrery_logs::{follow, follow_until, read_window, FollowOptions, LogEvent, MAX_LIMIT};
use serde_json::json;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("rss") {
        return rss(Path::new(&args[1]));
    }
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("usage: bench_logs DIR [--appends N] [--gib G]");
        return ExitCode::from(2);
    };
    let flag = |name: &str, default: f64| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().unwrap())
    };
    let appends = flag("--appends", 10_000.0) as usize;
    let bytes = (flag("--gib", 1.0) * 1024.0 * 1024.0 * 1024.0) as u64;
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    let native = runtime.block_on(latency(&dir.join("latency.log"), appends, FollowOptions::default()));
    let polled = runtime.block_on(latency(
        &dir.join("latency-poll.log"),
        (appends / 5).max(100),
        FollowOptions { force_poll: true, ..FollowOptions::default() },
    ));
    let big = dir.join("big.log");
    let chunk = flag("--chunk", FollowOptions::default().chunk_size as f64) as usize;
    // Alternating rounds, the median of each: the machine's other work moves single runs a lot.
    let rounds = flag("--rounds", 3.0) as usize;
    let (mut ours, mut tail, mut ours_catch_up, mut tail_catch_up) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        ours.push(runtime.block_on(throughput_follower(&big, bytes, chunk)));
        tail.push(throughput_tail(&big, bytes));
        // The file is there now: how fast each catches up on it from offset 0 (no writer to wait for).
        ours_catch_up.push(runtime.block_on(catch_up_follower(&big, bytes, chunk)));
        tail_catch_up.push(catch_up_tail(&big, bytes));
    }
    let (ours, tail) = (median_run(ours), median_run(tail));
    let (ours_catch_up, tail_catch_up) = (median_run(ours_catch_up), median_run(tail_catch_up));
    let rss = Command::new(std::env::current_exe().unwrap()).args(["rss", big.to_str().unwrap()]).output().unwrap();
    let rss: serde_json::Value = serde_json::from_slice(&rss.stdout).expect("the rss child answers JSON");
    let _ = std::fs::remove_file(&big);
    let report = json!({
        "latency_native": native,
        "latency_poll": polled,
        "throughput": {"bytes": bytes, "follower": ours, "tail_f": tail},
        "catch_up": {"bytes": bytes, "follower": ours_catch_up, "tail_f": tail_catch_up},
        "rss": rss,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    std::fs::write(dir.join("logs.md"), markdown(&report)).unwrap();
    ExitCode::SUCCESS
}

/// The report as the table in target/bench/logs.md.
fn markdown(r: &serde_json::Value) -> String {
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let (n, p) = (&r["latency_native"], &r["latency_poll"]);
    let (ours, tail) = (&r["throughput"]["follower"], &r["throughput"]["tail_f"]);
    let rss = &r["rss"];
    let gib = f(&r["throughput"]["bytes"]) / 1073741824.0;
    let mut out = String::from("# Log follower benchmark (scripts/bench_logs.sh)\n\n");
    out += "| measure | value | target |\n|---|---|---|\n";
    out += &format!(
        "| latency, append to yield, file-system events ({} appends, 1 ms apart) | median {:.3} ms, p99 {:.3} ms, max {:.3} ms | p99 < 50 ms: {} |\n",
        n["appends"], f(&n["median_ms"]), f(&n["p99_ms"]), f(&n["max_ms"]), if f(&n["p99_ms"]) < 50.0 { "met" } else { "MISSED" }
    );
    out += &format!(
        "| latency, polling fallback only ({} appends; poll every 100 ms) | median {:.3} ms, p99 {:.3} ms, max {:.3} ms | (fallback) |\n",
        p["appends"], f(&p["median_ms"]), f(&p["p99_ms"]), f(&p["max_ms"])
    );
    out += &format!(
        "| follow throughput, {gib:.2} GiB appended in 64 KiB writes (median of {} rounds): orrery-logs follower | {:.3} s, {:.0} MiB/s (writer alone {:.3} s) | >= tail -f: {} |\n",
        ours["rounds_seconds"].as_array().unwrap().len(), f(&ours["seconds"]), f(&ours["mib_per_s"]), f(&ours["writer_seconds"]),
        if f(&ours["mib_per_s"]) >= f(&tail["mib_per_s"]) { "met" } else { "MISSED" }
    );
    out += &format!(
        "| follow throughput, same file written again: `tail -c +1 -f` (coreutils), read from a pipe | {:.3} s, {:.0} MiB/s (writer alone {:.3} s) | |\n",
        f(&tail["seconds"]), f(&tail["mib_per_s"]), f(&tail["writer_seconds"])
    );
    let (oc, tc) = (&r["catch_up"]["follower"], &r["catch_up"]["tail_f"]);
    out += &format!(
        "| catch-up on the written {gib:.2} GiB file from offset 0: orrery-logs follower | {:.3} s, {:.0} MiB/s | >= tail -f: {} |\n",
        f(&oc["seconds"]), f(&oc["mib_per_s"]), if f(&oc["mib_per_s"]) >= f(&tc["mib_per_s"]) { "met" } else { "MISSED" }
    );
    out += &format!(
        "| catch-up on the same file: `tail -c +1 -f`, read from a pipe | {:.3} s, {:.0} MiB/s | |\n",
        f(&tc["seconds"]),
        f(&tc["mib_per_s"])
    );
    let peak = f(&rss["after_windows_kib"]) / 1024.0;
    out += &format!(
        "| peak RSS (VmHWM) of a process following a {:.2} GiB file from 0 to its end, then reading its tail window and every window | {:.1} MiB (process at start {:.1} MiB, after following {:.1} MiB) | < 50 MiB: {} |\n",
        f(&rss["file_bytes"]) / 1073741824.0, peak, f(&rss["start_kib"]) / 1024.0, f(&rss["after_follow_kib"]) / 1024.0,
        if peak < 50.0 { "met" } else { "MISSED" }
    );
    out
}

/// The run of median time, with the number of rounds and every round's time beside it.
fn median_run(mut runs: Vec<serde_json::Value>) -> serde_json::Value {
    let all: Vec<f64> = runs.iter().map(|r| r["seconds"].as_f64().unwrap()).collect();
    runs.sort_by(|a, b| a["seconds"].as_f64().unwrap().partial_cmp(&b["seconds"].as_f64().unwrap()).unwrap());
    let mut median = runs[runs.len() / 2].clone();
    median["rounds_seconds"] = json!(all);
    median
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// One line every ~1 ms, each stamped with the nanoseconds since `start` at its write.
async fn latency(path: &Path, appends: usize, options: FollowOptions) -> serde_json::Value {
    let _ = std::fs::remove_file(path);
    std::fs::write(path, b"").unwrap();
    let mut follower = follow(path, 0, options);
    let watch = follower.watch_mode();
    let start = Instant::now();
    let writer = {
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            for seq in 0..appends {
                let line = format!("{seq} {} é🦀 a line of a log\n", start.elapsed().as_nanos());
                file.write_all(line.as_bytes()).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let mut samples = Vec::with_capacity(appends);
    let mut partial = String::new();
    while samples.len() < appends {
        let Some(Ok(LogEvent::Chunk(c))) = follower.next().await else { panic!("the follower ended early") };
        let now = start.elapsed().as_nanos() as f64;
        partial.push_str(&c.content);
        while let Some(end) = partial.find('\n') {
            let stamp: f64 = partial.split(' ').nth(1).unwrap().parse().unwrap();
            samples.push((now - stamp) / 1e6);
            partial.drain(..=end);
        }
    }
    writer.join().unwrap();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    json!({
        "appends": appends,
        "watch": format!("{watch:?}"),
        "median_ms": percentile(&samples, 0.5),
        "p99_ms": percentile(&samples, 0.99),
        "max_ms": samples[samples.len() - 1],
    })
}

/// `total` bytes of log lines, in 64 KiB writes; returns the writer's own time.
fn write_big(path: &Path, total: u64) -> f64 {
    let line = "0123456789 the quick brown fox jumps over the lazy dog é🦀 ünïcödé\n".as_bytes();
    let mut block = Vec::with_capacity(64 * 1024);
    while block.len() + line.len() <= 64 * 1024 {
        block.extend_from_slice(line);
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    let start = Instant::now();
    let mut written = 0u64;
    while written < total {
        let n = block.len().min((total - written) as usize);
        file.write_all(&block[..n]).unwrap();
        written += n as u64;
    }
    start.elapsed().as_secs_f64()
}

fn fresh(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::fs::write(path, b"").unwrap();
}

async fn throughput_follower(path: &Path, total: u64, chunk_size: usize) -> serde_json::Value {
    fresh(path);
    let mut follower = follow(path, 0, FollowOptions { chunk_size, ..FollowOptions::default() });
    let start = Instant::now();
    let writer = {
        let path = path.to_path_buf();
        std::thread::spawn(move || write_big(&path, total))
    };
    let mut seen = 0u64;
    while seen < total {
        let Some(Ok(LogEvent::Chunk(c))) = follower.next().await else { panic!("the follower ended early") };
        seen += c.next_offset - c.start_offset;
    }
    let secs = start.elapsed().as_secs_f64();
    let writer_secs = writer.join().unwrap();
    json!({"seconds": secs, "mib_per_s": total as f64 / 1048576.0 / secs, "writer_seconds": writer_secs, "chunk_size": chunk_size})
}

async fn catch_up_follower(path: &Path, total: u64, chunk_size: usize) -> serde_json::Value {
    let start = Instant::now();
    let mut follower = follow(path, 0, FollowOptions { chunk_size, ..FollowOptions::default() });
    let mut seen = 0u64;
    while seen < total {
        let Some(Ok(LogEvent::Chunk(c))) = follower.next().await else { panic!("the follower ended early") };
        seen += c.next_offset - c.start_offset;
    }
    let secs = start.elapsed().as_secs_f64();
    json!({"seconds": secs, "mib_per_s": total as f64 / 1048576.0 / secs})
}

fn catch_up_tail(path: &Path, total: u64) -> serde_json::Value {
    let start = Instant::now();
    let mut tail = Command::new("tail").args(["-c", "+1", "-f"]).arg(path).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = tail.stdout.take().unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut seen = 0u64;
    while seen < total {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "tail ended early");
        seen += n as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = tail.kill();
    let _ = tail.wait();
    json!({"seconds": secs, "mib_per_s": total as f64 / 1048576.0 / secs})
}

fn throughput_tail(path: &Path, total: u64) -> serde_json::Value {
    fresh(path);
    let mut tail = Command::new("tail")
        .args(["-c", "+1", "-f"])
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("coreutils tail runs");
    let mut out = tail.stdout.take().unwrap();
    let start = Instant::now();
    let writer = {
        let path = path.to_path_buf();
        std::thread::spawn(move || write_big(&path, total))
    };
    let mut buf = vec![0u8; 256 * 1024];
    let mut seen = 0u64;
    while seen < total {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "tail ended early");
        seen += n as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    let writer_secs = writer.join().unwrap();
    let _ = tail.kill();
    let _ = tail.wait();
    json!({"seconds": secs, "mib_per_s": total as f64 / 1048576.0 / secs, "writer_seconds": writer_secs})
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Follows FILE from 0 until drained, then reads its tail and every window of it.
fn rss(path: &Path) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let before = vm_hwm_kib();
    let size = std::fs::metadata(path).unwrap().len();
    let seen = runtime.block_on(async {
        let mut follower = follow_until(path, 0, FollowOptions::default(), async {});
        let mut seen = 0u64;
        while let Some(e) = follower.next().await {
            if let LogEvent::Chunk(c) = e.unwrap() {
                seen += c.next_offset - c.start_offset;
            }
        }
        seen
    });
    assert_eq!(seen, size, "the follower read the whole file");
    let after_follow = vm_hwm_kib();
    let tail = read_window(path, -1, None).unwrap();
    assert_eq!(tail.next_offset, size);
    let mut offset = 0u64;
    loop {
        let w = read_window(path, offset as i64, Some(MAX_LIMIT)).unwrap();
        if !w.has_more_after {
            break;
        }
        offset = w.next_offset;
    }
    let after_windows = vm_hwm_kib();
    println!(
        "{}",
        json!({"file_bytes": size, "start_kib": before, "after_follow_kib": after_follow, "after_windows_kib": after_windows})
    );
    ExitCode::SUCCESS
}
