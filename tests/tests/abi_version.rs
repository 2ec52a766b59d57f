//! The device library records the shared-layout version it was built
//! against, and the host refuses one that disagrees.

use aqueduct::device_code::{self, DeviceCodeError};
use aqueduct_abi::ABI_VERSION;
use aqueduct_abi::code_object::{ABI_VERSION_SYMBOL, CodeObject};
use aqueduct_tests::{built_code_objects, run_llvm_tool};

/// The file offset of `symbol`'s bytes, from llvm-readobj (independent of
/// aqueduct's reader): symbol value and section, then that section's
/// address and file offset.
fn file_offset_of(path: &str, symbol: &str) -> usize {
    let text = run_llvm_tool("llvm-readobj", &["--sections", "--symbols", path]);
    let field = |block: &str, key: &str| -> String {
        block
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {block}"))
            .trim()
            .to_string()
    };
    let hex = |s: String| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
    let blocks: Vec<&str> = text.split('}').collect();
    let sym = blocks
        .iter()
        .find(|b| b.contains("Symbol {") && b.contains(&format!("Name: {symbol} (")))
        .unwrap_or_else(|| panic!("{symbol} not in {path}"));
    let value = hex(field(sym, "Value:"));
    let section = field(sym, "Section:");
    let section_name = section.split(' ').next().expect("section name");
    let sec = blocks
        .iter()
        .find(|b| b.contains("Section {") && b.contains(&format!("Name: {section_name} (")))
        .expect("symbol's section");
    let address = hex(field(sec, "Address:"));
    let offset = hex(field(sec, "Offset:"));
    usize::try_from(value - address + offset).expect("offset fits")
}

#[test]
fn device_library_records_this_abi_version_and_a_different_one_is_refused() {
    for built in built_code_objects() {
        let bytes = std::fs::read(&built.path).expect("read code object");
        let parsed = CodeObject::parse(&bytes).expect("parse");
        // The simulator's test kernels and the memory-model probes link the
        // device library, so they carry its version too.
        if matches!(built.package, "aqueduct-test-kernels" | "aqueduct-probes") {
            assert_eq!(parsed.abi_version, Some(ABI_VERSION), "{}", built.gfx);
            continue;
        }
        if built.package != device_code::DEVICE_LIBRARY {
            assert_eq!(parsed.abi_version, None, "{}: {}", built.gfx, built.package);
            let err = device_code::check_abi(&built.path, &parsed).unwrap_err();
            assert!(
                err.to_string().contains("not an aqueduct device library"),
                "{err}"
            );
            continue;
        }
        let (_, loaded) = device_code::load_device_library(built.gfx)
            .unwrap_or_else(|e| panic!("{}: {e}", built.gfx));
        assert_eq!(loaded.abi_version, Some(ABI_VERSION), "{}", built.gfx);

        // Patch the recorded version where llvm-readobj says it is: the
        // reader must see the new value and the host must refuse it.
        let at = file_offset_of(built.path.to_str().expect("UTF-8 path"), ABI_VERSION_SYMBOL);
        assert_eq!(
            &bytes[at..at + 4],
            &ABI_VERSION.to_le_bytes(),
            "{}",
            built.gfx
        );
        let mut patched = bytes.clone();
        patched[at..at + 4].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        let parsed = CodeObject::parse(&patched).expect("parse patched");
        assert_eq!(parsed.abi_version, Some(0xdead_beef));
        let err = device_code::check_abi(&built.path, &parsed).unwrap_err();
        assert!(
            matches!(err, DeviceCodeError::AbiMismatch { found: Some(0xdead_beef), expected, .. } if expected == ABI_VERSION)
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("ABI {}", 0xdead_beefu32))
                && message.contains("cargo xtask build"),
            "{message}"
        );
    }
}
