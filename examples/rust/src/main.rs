//! A Rust benchmark of your own: a HashMap<u64, u64> counting n pseudo-random keys. On i686
//! every u64 hash step (SipHash) is done in 32-bit halves, while the table's entries are the
//! same size on both ABIs.
use std::collections::HashMap;
use std::time::Instant;

fn main() {
    let n: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: rustbench N (a positive integer)");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut s: u64 = 88172645463325252;
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *counts.entry(s % (n / 4 + 1)).or_insert(0) += 1;
    }
    let mut h: u64 = 14695981039346656037;
    for k in 0..(n / 4 + 1) {
        h = (h ^ counts.get(&k).copied().unwrap_or(0)).wrapping_mul(1099511628211);
    }
    let secs = start.elapsed().as_secs_f64();
    println!("checksum: {:016x}", h);
    println!("rate: {:.1}", n as f64 / secs);
}
