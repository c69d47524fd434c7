use orrery_blueprint::condition::{self, Namespace};

#[test]
fn probe_deep() {
    for expr in ["-".repeat(500) + "x", "not ".repeat(50) + "x", "x".to_owned() + &" + x".repeat(2000), "x and ".repeat(300) + "x", "(".repeat(150) + "x" + &")".repeat(150)] {
        eprintln!("parsing {}", &expr[..20]);
        let parsed = condition::parse(&expr);
        eprintln!("parsed {:?}", parsed.as_ref().err());
        if let Ok(c) = parsed {
            let mut ns = Namespace::new();
            ns.insert("x", serde_json::json!(5));
            eprintln!("{:?}", c.evaluate(&ns));
        }
    }
}
