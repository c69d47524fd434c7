//! 338 COMPAS envelope probes written by hand from the reference's decoder and models (one rule
//! each way: guids, dtypes and the classes they name, inheritance, data, states, ids as Python
//! values, scopes, IO names, the lists the server iterates, envelopes of one class in another's
//! place, null values, COMPAS values), each POSTed once to a live reference server
//! (antikythera-sdk 0.5.1, `server/serve_reference.py`); `envelope_probes/verdicts.tsv` keeps its
//! HTTP status (201: accepted; 400 or 500: refused). Orrery's `server_accepts` must be the
//! server's verdict on every probe.

use orrery_blueprint::{check_sources, load, Source};
use std::collections::BTreeSet;
use std::path::PathBuf;

#[test]
fn orrery_predicts_the_live_servers_verdict_on_every_envelope_probe() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("envelope_probes");
    let verdicts = std::fs::read_to_string(dir.join("verdicts.tsv")).unwrap();
    let mut differing = BTreeSet::new();
    let mut probes = 0;
    for line in verdicts.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut fields = line.split('\t');
        let (file, status) = (fields.next().unwrap(), fields.next().unwrap());
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let loaded = load(&text).map_err(|e| e.diagnostics);
        let report = check_sources(&[Source::new(path, text, loaded)]).swap_remove(0);
        if report.server_accepts != (status == "201") {
            differing.insert(file.to_string());
        }
        probes += 1;
    }
    assert_eq!(probes, 338);
    assert!(differing.is_empty(), "Orrery disagrees with the server on {differing:?}");
}
