//! `orrery lineage SESSION`: which attempt's output fed which attempt's input, and the
//! session's blueprint instances under their composites — the facade's `get_lineage`.

use crate::cli::ReportFormat;
use anyhow::{Context, Result};
use orrery_api::{Api, ApiOptions};
use serde_json::{json, Value};
use std::path::PathBuf;

pub fn lineage(session: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let db = crate::db_path(db)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let envelope = runtime.block_on(async {
        let api = Api::new(ApiOptions { db, work_dir: None, max_parallel: None });
        api.call("get_lineage", json!({"session_id": session})).await
    })?;
    if !envelope.success {
        eprintln!("orrery: {}", envelope.answer.as_str().unwrap_or("the lineage cannot be read"));
        return Ok(1);
    }
    let answer = envelope.answer;
    match format {
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
        ReportFormat::Text => print_text(&answer),
    }
    Ok(0)
}

fn print_text(answer: &Value) {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    println!("instances");
    for i in answer["instances"].as_array().into_iter().flatten() {
        let from = match i["composite"].as_str() {
            Some(composite) => format!("run by {composite}"),
            None => "root".to_string(),
        };
        let element = i["context"].get("element_id").map(|e| format!(", element {e}")).unwrap_or_default();
        println!("  {:<30} {} ({from}{element})", text(&i["id"]), text(&i["blueprint_id"]));
    }
    println!("inputs");
    for l in answer["inputs"].as_array().into_iter().flatten() {
        let consumer = format!("{}#{}", text(&l["node"]), l["attempt"]);
        let source = match l["source"].as_object() {
            Some(s) => format!("{}#{}", s["node"].as_str().unwrap_or(""), s["attempt"]),
            None => "(no attempt: a default or literal)".to_string(),
        };
        let sha = text(&l["value_sha256"]);
        println!(
            "  {consumer:<30} {:<16} <- {source:<30} via {}.{} sha256 {}",
            text(&l["input"]),
            text(&l["instance"]),
            text(&l["key"]),
            &sha[..sha.len().min(12)]
        );
    }
}
