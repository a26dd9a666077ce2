//! `mtr-fake-llm`: the scripted fake OpenAI-compatible server as a standalone process, for
//! benchmarks and manual tests. Answers chat requests with a minimal valid instance of the
//! requested JSON schema (or "ok"), embeddings with the fake's deterministic vectors.
//!
//! Usage: mtr-fake-llm [--port N] [--latency-ms N] [--rate-429 F] [--rate-500 F]
//!                     [--rate-hang F] [--rate-malformed F] [--rate-broken F] [--rate-length F]
//!                     [--rate-echo-auth F] [--rate-no-choices F]
//!                     [--retry-after-s F] [--seed N] [--dims N]
//! Prints `listening on http://127.0.0.1:PORT/v1` on stderr, then serves until SIGINT or
//! SIGTERM, and prints `chat_calls N injected_faults M` on stderr as it stops (the fault
//! campaign in `benchmarks/faults/` counts calls with it).

use std::process::ExitCode;

use mtr_llm::fake::{FakeServer, Faults};

fn parse() -> Result<(u16, u64, Faults, usize), String> {
    let mut port = 0u16;
    let mut latency = 0u64;
    let mut faults = Faults {
        retry_after_s: 0.1,
        ..Default::default()
    };
    let mut dims = 256usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{a}: {e}");
        match a.as_str() {
            "--port" => port = val()?.parse().map_err(|e| bad(&e))?,
            "--latency-ms" => latency = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-429" => faults.rate_429 = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-500" => faults.rate_500 = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-hang" => faults.rate_hang = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-malformed" => faults.rate_malformed_body = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-broken" => faults.rate_broken_content = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-length" => faults.rate_length = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-echo-auth" => faults.rate_echo_auth = val()?.parse().map_err(|e| bad(&e))?,
            "--rate-no-choices" => faults.rate_no_choices = val()?.parse().map_err(|e| bad(&e))?,
            "--retry-after-s" => faults.retry_after_s = val()?.parse().map_err(|e| bad(&e))?,
            "--seed" => faults.seed = val()?.parse().map_err(|e| bad(&e))?,
            "--dims" => dims = val()?.parse().map_err(|e| bad(&e))?,
            "-h" | "--help" => return Err("usage: mtr-fake-llm [--port N] [--latency-ms N] [--rate-429 F] [--rate-500 F] [--rate-hang F] [--rate-malformed F] [--rate-broken F] [--rate-length F] [--rate-echo-auth F] [--rate-no-choices F] [--retry-after-s F] [--seed N] [--dims N]".into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok((port, latency, faults, dims))
}

fn main() -> ExitCode {
    let (port, latency, faults, dims) = match parse() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        match FakeServer::builder()
            .port(port)
            .latency_ms(latency)
            .faults(faults)
            .dims(dims)
            .start()
            .await
        {
            Ok(server) => {
                eprintln!("listening on {}", server.base_url());
                let term = async {
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(mut s) => {
                            s.recv().await;
                        }
                        Err(_) => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term => {}
                }
                eprintln!(
                    "chat_calls {} injected_faults {}",
                    server.chat_calls(),
                    server.injected_faults()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        }
    })
}
