//! Any text either fails to load or loads into a blueprint that saves and loads back to the
//! same blueprint in both encodings, saves byte-stably, and validates and renders without
//! panicking. The fast load path and the careful one agree on every text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_blueprint::render::{render, GraphFormat};
use orrery_blueprint::validate::validate_encoded;
use orrery_blueprint::{load, save, Encoding, Library};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let fast = load(text);
    let careful = orrery_blueprint::load::load_carefully(text);
    match (&fast, &careful) {
        (Ok(f), Ok(c)) => {
            assert_eq!(f.blueprint, c.blueprint, "the two loaders disagree\n{text}");
            assert_eq!((f.encoding, &f.notes), (c.encoding, &c.notes), "the two loaders disagree\n{text}");
        }
        (Err(f), Err(c)) => assert_eq!(f.diagnostics, c.diagnostics, "the two loaders disagree\n{text}"),
        _ => panic!("one loader accepts what the other refuses\n{text}"),
    }
    let Ok(loaded) = fast else { return };
    let blueprint = &loaded.blueprint;

    for encoding in [Encoding::Plain, Encoding::Compas] {
        let saved = save::to_string(blueprint, encoding);
        let again = load(&saved).unwrap_or_else(|e| {
            panic!("a loaded blueprint saved as {encoding:?} does not load back: {:?}\n{saved}", e.diagnostics)
        });
        assert_eq!(again.encoding, encoding, "the saved text is read as the other encoding\n{saved}");
        assert_eq!(&again.blueprint, blueprint, "the blueprint changed through a {encoding:?} save and load\n{saved}");
        let resaved = save::to_string(&again.blueprint, encoding);
        assert_eq!(resaved, saved, "saving in {encoding:?} is not byte-stable");
    }

    let library = Library::new();
    validate_encoded(blueprint, loaded.encoding, &library);
    render(blueprint, GraphFormat::Dot);
    render(blueprint, GraphFormat::Mermaid);
});
