//! hipBLASLt's TensileLite catalogs (issue 22) from Debian sid's
//! `libhipblaslt1`, fetched and cached by `xtask::hipblaslt_catalog` (no
//! root). So far: the lazy mapping file, read by
//! `aqueduct_catalog::LazyMapping`, against the files beside it. The
//! counts are those `host/catalog/TENSILELITE.md` surveyed in 7.1.1+dfsg-4
//! (with Python's msgpack, independently of this reader).

use std::collections::BTreeSet;

use aqueduct::catalog::LazyMapping;
use xtask::hipblaslt_catalog::{MAPPING, VERSION, fetch};

#[test]
fn the_lazy_mapping_names_every_child_catalog_once() {
    let (dir, version) = fetch().unwrap_or_else(|e| panic!("{e}"));
    let mapping = LazyMapping::open(dir.join(MAPPING)).unwrap_or_else(|e| panic!("{e}"));
    let children: Vec<(u32, &str)> = mapping.children().collect();
    let stems: BTreeSet<String> = children.iter().map(|(_, s)| s.to_string()).collect();
    assert_eq!(stems.len(), children.len(), "a child named twice");
    // The children on disk: every catalog but the lazy roots and the
    // mapping itself.
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("the cached catalogs")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".dat") && n != MAPPING && !n.starts_with("TensileLibrary_lazy_"))
        .map(|n| n.trim_end_matches(".dat").to_string())
        .collect();
    assert_eq!(stems, on_disk, "children named and children present");
    // Index 0 starts the first child; every boundary switches child.
    assert_eq!(children.first().map(|c| c.0), Some(0));
    for pair in children.windows(2) {
        let ((_, before), (start, after)) = (pair[0], pair[1]);
        assert_eq!(mapping.child_of(start - 1), Some(before));
        assert_eq!(mapping.child_of(start), Some(after));
    }
    if version == VERSION {
        assert_eq!(mapping.len(), 717);
        assert_eq!(children.last().map(|c| c.0), Some(85_958));
        for gfx in [
            "gfx908", "gfx90a", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
            "gfx1200", "gfx1201",
        ] {
            let root = dir.join(format!("TensileLibrary_lazy_{gfx}.dat"));
            assert!(root.is_file(), "{}", root.display());
        }
    } else {
        eprintln!("{version}, not {VERSION}: the version's own counts are not checked");
    }
}
