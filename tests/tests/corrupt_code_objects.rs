//! A table of corrupted code objects, each derived from a real one the build
//! produced, and the typed error the reader must give for it (never a panic).

use aqueduct_abi::code_object::{CodeObject, CodeObjectError, MsgpackError};
use aqueduct_tests::built_code_objects;

fn u16_at(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// File offsets of (section type, offset, size, link) for every section.
fn sections(b: &[u8]) -> Vec<(u32, usize, usize, usize)> {
    let (shoff, shnum) = (u64_at(b, 40), u16_at(b, 60));
    (0..shnum)
        .map(|i| {
            let s = shoff + i * 64;
            (
                u32_at(b, s + 4),
                u64_at(b, s + 24),
                u64_at(b, s + 32),
                u32_at(b, s + 40) as usize,
            )
        })
        .collect()
}

/// File offset of the `.symtab` entry named `name`.
fn symbol_entry(b: &[u8], name: &str) -> usize {
    let secs = sections(b);
    let &(_, off, size, link) = secs.iter().find(|s| s.0 == 2).expect("symtab");
    let strtab = secs[link].1;
    (off..off + size)
        .step_by(24)
        .find(|&e| {
            let n = strtab + u32_at(b, e) as usize;
            b[n..].split(|&c| c == 0).next() == Some(name.as_bytes())
        })
        .expect("symbol present")
}

/// File offset of the metadata note's descriptor and its size, from the
/// PT_NOTE program header.
fn metadata_desc(b: &[u8]) -> (usize, usize, usize) {
    let (phoff, phnum) = (u64_at(b, 32), u16_at(b, 56));
    let ph = (0..phnum)
        .map(|i| phoff + i * 56)
        .find(|&p| u32_at(b, p) == 4)
        .expect("PT_NOTE");
    let note = u64_at(b, ph + 8);
    let namesz = u32_at(b, note) as usize;
    let descsz = u32_at(b, note + 4) as usize;
    (note, note + 12 + namesz.div_ceil(4) * 4, descsz)
}

#[test]
fn every_corruption_gives_its_typed_error() {
    let built = built_code_objects()
        .into_iter()
        .find(|b| b.gfx == "gfx942" && b.package == "aqueduct-device")
        .unwrap();
    let good = std::fs::read(&built.path).unwrap();
    let co = CodeObject::parse(&good).expect("the uncorrupted file parses");
    let kd_sym = symbol_entry(&good, "fill_u32.kd");
    let (note, desc, descsz) = metadata_desc(&good);
    let len = good.len() as u64;

    type Corrupt = Box<dyn Fn(&mut Vec<u8>)>;
    type Expect = Box<dyn Fn(&CodeObjectError) -> bool>;
    let cases: Vec<(&str, Corrupt, Expect)> = vec![
        (
            "empty file",
            Box::new(|b| b.clear()),
            Box::new(|e| *e == CodeObjectError::NotElf),
        ),
        (
            "bad magic",
            Box::new(|b| b[1] = b'X'),
            Box::new(|e| *e == CodeObjectError::NotElf),
        ),
        (
            "truncated header",
            Box::new(|b| b.truncate(40)),
            Box::new(|e| {
                matches!(
                    e,
                    CodeObjectError::Truncated {
                        what: "ELF header",
                        ..
                    }
                )
            }),
        ),
        (
            "ELF32",
            Box::new(|b| b[4] = 1),
            Box::new(|e| *e == CodeObjectError::UnsupportedElfClass { class: 1, data: 1 }),
        ),
        (
            "x86-64 machine",
            Box::new(|b| b[18..20].copy_from_slice(&62u16.to_le_bytes())),
            Box::new(|e| *e == CodeObjectError::WrongMachine { machine: 62 }),
        ),
        (
            "System V OS/ABI",
            Box::new(|b| b[7] = 0),
            Box::new(|e| *e == CodeObjectError::UnsupportedOsAbi { os_abi: 0 }),
        ),
        (
            "code object v2",
            Box::new(|b| b[8] = 0),
            Box::new(|e| *e == CodeObjectError::UnsupportedAbiVersion { abi_version: 0 }),
        ),
        (
            "relocatable object",
            Box::new(|b| b[16..18].copy_from_slice(&1u16.to_le_bytes())),
            Box::new(|e| *e == CodeObjectError::NotSharedObject { e_type: 1 }),
        ),
        (
            "unknown mach",
            Box::new(|b| b[48] = 0xff),
            Box::new(|e| *e == CodeObjectError::UnknownMach { mach: 0xff }),
        ),
        (
            "program headers past the end",
            Box::new(move |b| b[32..40].copy_from_slice(&len.to_le_bytes())),
            Box::new(|e| {
                matches!(
                    e,
                    CodeObjectError::Truncated {
                        what: "program headers",
                        ..
                    }
                )
            }),
        ),
        (
            "section headers at u64::MAX",
            Box::new(|b| b[40..48].copy_from_slice(&u64::MAX.to_le_bytes())),
            Box::new(|e| {
                matches!(
                    e,
                    CodeObjectError::Truncated {
                        what: "section headers",
                        ..
                    }
                )
            }),
        ),
        (
            "bad program header size",
            Box::new(|b| b[54] = 32),
            Box::new(|e| matches!(e, CodeObjectError::BadEntrySize { size: 32, .. })),
        ),
        (
            "note descriptor size past its segment",
            Box::new(move |b| b[note + 4..note + 8].copy_from_slice(&u32::MAX.to_le_bytes())),
            Box::new(|e| matches!(e, CodeObjectError::BadNote { .. })),
        ),
        (
            "metadata note of another type",
            Box::new(move |b| b[note + 8] = 33),
            Box::new(|e| *e == CodeObjectError::MissingMetadata),
        ),
        (
            "reserved msgpack byte",
            Box::new(move |b| b[desc] = 0xc1),
            Box::new(|e| *e == CodeObjectError::Msgpack(MsgpackError::ReservedByte { offset: 0 })),
        ),
        (
            "msgpack cut short",
            Box::new(move |b| b[desc + descsz - 40..desc + descsz].fill(0xdd)),
            Box::new(|e| matches!(e, CodeObjectError::Msgpack(_))),
        ),
        (
            "metadata root not a map",
            Box::new(move |b| b[desc..desc + descsz].fill(0xc0)),
            Box::new(|e| {
                matches!(
                    e,
                    CodeObjectError::Msgpack(MsgpackError::TrailingBytes { .. })
                )
            }),
        ),
        (
            "kernel descriptor symbol renamed",
            Box::new(move |b| {
                let strtab = sections(b)
                    .iter()
                    .find(|s| s.0 == 2)
                    .map(|s| sections(b)[s.3].1)
                    .unwrap();
                let name = strtab + u32_at(b, kd_sym) as usize;
                b[name] = b'X';
            }),
            Box::new(
                |e| matches!(e, CodeObjectError::MissingKernelDescriptor { kernel, .. } if kernel == "fill_u32"),
            ),
        ),
        (
            ".kd outside the file",
            Box::new(move |b| b[kd_sym + 8..kd_sym + 16].copy_from_slice(&(len * 4).to_le_bytes())),
            Box::new(
                |e| matches!(e, CodeObjectError::KernelDescriptorOutOfBounds { kernel, .. } if kernel == "fill_u32"),
            ),
        ),
        (
            "kernel entry outside code",
            Box::new({
                let kd = co.kernel("fill_u32").unwrap().descriptor_address as usize;
                // Descriptors sit in the first PT_LOAD, whose file offset equals its vaddr.
                move |b| b[kd + 16..kd + 24].copy_from_slice(&(1i64 << 40).to_le_bytes())
            }),
            Box::new(
                |e| matches!(e, CodeObjectError::KernelEntryOutsideCode { kernel, .. } if kernel == "fill_u32"),
            ),
        ),
    ];
    for (name, corrupt, expected) in &cases {
        let mut bytes = good.clone();
        corrupt(&mut bytes);
        match CodeObject::parse(&bytes) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => {
                assert!(expected(&e), "{name}: unexpected error {e:?}");
                assert!(!e.to_string().is_empty());
            }
        }
    }
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    for built in built_code_objects() {
        let good = std::fs::read(&built.path).unwrap();
        for cut in (0..good.len()).step_by(7) {
            assert!(
                CodeObject::parse(&good[..cut]).is_err(),
                "{} cut at {cut} parsed",
                built.path.display()
            );
        }
    }
}
