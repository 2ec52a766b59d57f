//! Any bytes given to the code-object reader yield a code object or a typed
//! error; a panic, overflow or out-of-bounds access is a finding. Seed the
//! corpus with the built code objects (see the README).
#![no_main]

use aqueduct_abi::code_object::CodeObject;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(co) = CodeObject::parse(data) {
        // Touch what a loader would use.
        for k in &co.kernels {
            let _ = (k.descriptor.rsrc1(), k.entry_address, k.metadata.args.len());
        }
    }
});
