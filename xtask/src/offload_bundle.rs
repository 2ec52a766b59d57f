//! Clang offload bundles, the container hipBLASLt ships its GPU code in:
//! each `.co` of Debian sid's `libhipblaslt1` 7.1.1 is a compressed bundle
//! (`CCOB`) whose entries are a host stub and one device ELF per
//! processor. [`device_elf`] takes the ELF out; a plain ELF is returned
//! as it is.
//!
//! Layouts, from LLVM's `clang/lib/Driver/OffloadBundler.cpp` (the writer
//! of these files: each header is the sum of its field sizes) and checked
//! on the package's files, all version 2:
//!
//! ```text
//! compressed ("CCOB"), little-endian:
//!   v1: magic[4] version:u16 method:u16 uncompressed:u32 hash:u64          data @20
//!   v2: magic[4] version:u16 method:u16 total:u32 uncompressed:u32 hash:u64 data @24
//!   v3: magic[4] version:u16 method:u16 total:u64 uncompressed:u64 hash:u64 data @32
//!   method 1 = zstd (0 = zlib, not used by these packages and not read here)
//! uncompressed:
//!   "__CLANG_OFFLOAD_BUNDLE__" count:u64
//!   count × { offset:u64 size:u64 id_len:u64 id[id_len] }   offsets from byte 0
//!   ids: "host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx1201"
//! ```

/// The magic of an uncompressed bundle.
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The magic of a compressed one.
const COMPRESSED_MAGIC: &[u8] = b"CCOB";
/// The `method` of zstd compression.
const ZSTD: u16 = 1;
/// An uncompressed bundle larger than this is refused rather than
/// allocated (the largest of the package is 118 MB).
const MAX_UNCOMPRESSED: u64 = 1 << 30;

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    let bytes = b.get(at..at + 2).ok_or("bundle truncated")?;
    Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    let bytes = b.get(at..at + 4).ok_or("bundle truncated")?;
    Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, String> {
    let bytes = b.get(at..at + 8).ok_or("bundle truncated")?;
    Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
}

/// The bytes of a compressed bundle, decompressed.
fn decompress(b: &[u8]) -> Result<Vec<u8>, String> {
    let (version, method) = (u16_at(b, 4)?, u16_at(b, 6)?);
    let (uncompressed, data) = match version {
        1 => (u64::from(u32_at(b, 8)?), 20),
        2 => (u64::from(u32_at(b, 12)?), 24),
        3 => (u64_at(b, 16)?, 32),
        v => return Err(format!("compressed bundle version {v} (1 to 3 are read)")),
    };
    if method != ZSTD {
        return Err(format!("compressed bundle method {method} (only zstd, 1)"));
    }
    if uncompressed > MAX_UNCOMPRESSED {
        return Err(format!("compressed bundle of {uncompressed} bytes"));
    }
    let mut out = vec![0; uncompressed as usize];
    let n = ruzstd::decoding::FrameDecoder::new()
        .decode_all(b.get(data..).ok_or("bundle truncated")?, &mut out)
        .map_err(|e| format!("compressed bundle: {e}"))?;
    if n != out.len() {
        return Err(format!(
            "compressed bundle: {n} bytes, header says {uncompressed}"
        ));
    }
    Ok(out)
}

/// The device ELF for `gfx` (e.g. `gfx1201`) in `bytes`: a plain ELF as it
/// is, else the bundle entry whose id names the processor (an id ending
/// in `amdgcn-amd-amdhsa--<gfx>`, target features after a colon allowed).
pub fn device_elf(bytes: &[u8], gfx: &str) -> Result<Vec<u8>, String> {
    if bytes.starts_with(b"\x7fELF") {
        return Ok(bytes.to_vec());
    }
    let owned;
    let b = if bytes.starts_with(COMPRESSED_MAGIC) {
        owned = decompress(bytes)?;
        &owned[..]
    } else {
        bytes
    };
    if !b.starts_with(BUNDLE_MAGIC) {
        return Err("neither an ELF nor a clang offload bundle".into());
    }
    let count = u64_at(b, BUNDLE_MAGIC.len())?;
    let mut at = BUNDLE_MAGIC.len() + 8;
    let mut ids = Vec::new();
    for _ in 0..count {
        let (offset, size, id_len) = (u64_at(b, at)?, u64_at(b, at + 8)?, u64_at(b, at + 16)?);
        at += 24;
        let id = b
            .get(at..at.saturating_add(id_len as usize))
            .ok_or("bundle truncated")?;
        at += id_len as usize;
        let id = String::from_utf8_lossy(id).into_owned();
        let processor = id.rsplit("--").next().unwrap_or("");
        if id.contains("amdgcn-amd-amdhsa") && processor.split(':').next() == Some(gfx) {
            let start = usize::try_from(offset).map_err(|e| e.to_string())?;
            let end = start.saturating_add(usize::try_from(size).map_err(|e| e.to_string())?);
            return b
                .get(start..end)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| format!("bundle entry {id} lies outside the bundle"));
        }
        ids.push(id);
    }
    Err(format!("no {gfx} entry in the bundle (entries: {ids:?})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle of a host stub and two device entries, as the writer lays
    /// it out.
    fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut head = BUNDLE_MAGIC.to_vec();
        head.extend((entries.len() as u64).to_le_bytes());
        let table: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
        let mut offset = (head.len() + table) as u64;
        let mut body = Vec::new();
        for (id, data) in entries {
            head.extend(offset.to_le_bytes());
            head.extend((data.len() as u64).to_le_bytes());
            head.extend((id.len() as u64).to_le_bytes());
            head.extend(id.as_bytes());
            offset += data.len() as u64;
            body.extend_from_slice(data);
        }
        head.extend(body);
        head
    }

    fn compressed(plain: &[u8], version: u16) -> Vec<u8> {
        let data =
            ruzstd::encoding::compress_to_vec(plain, ruzstd::encoding::CompressionLevel::Fastest);
        let mut out = COMPRESSED_MAGIC.to_vec();
        out.extend(version.to_le_bytes());
        out.extend(ZSTD.to_le_bytes());
        match version {
            1 => out.extend((plain.len() as u32).to_le_bytes()),
            2 => {
                out.extend(((24 + data.len()) as u32).to_le_bytes());
                out.extend((plain.len() as u32).to_le_bytes());
            }
            _ => {
                out.extend(((32 + data.len()) as u64).to_le_bytes());
                out.extend((plain.len() as u64).to_le_bytes());
            }
        }
        out.extend(0x1234_5678_9ABC_DEF0u64.to_le_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn finds_the_processor_entry_plain_and_compressed() {
        let elf_a = b"\x7fELF for gfx1100".repeat(50);
        let elf_b = b"\x7fELF for gfx1201".repeat(70);
        let plain = bundle(&[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", &elf_a),
            ("hipv4-amdgcn-amd-amdhsa--gfx1201:xnack-", &elf_b),
        ]);
        for bytes in [
            plain.clone(),
            compressed(&plain, 1),
            compressed(&plain, 2),
            compressed(&plain, 3),
        ] {
            assert_eq!(device_elf(&bytes, "gfx1100").unwrap(), elf_a);
            assert_eq!(device_elf(&bytes, "gfx1201").unwrap(), elf_b);
            let err = device_elf(&bytes, "gfx942").unwrap_err();
            assert!(
                err.contains("no gfx942 entry") && err.contains("gfx1100"),
                "{err}"
            );
        }
        // A plain ELF is itself.
        assert_eq!(device_elf(&elf_a, "gfx1201").unwrap(), elf_a);
    }

    #[test]
    fn refuses_damaged_bundles() {
        let plain = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx1201", b"\x7fELF....")]);
        for cut in [10, 30, 60, plain.len() - 3] {
            assert!(
                device_elf(&plain[..cut], "gfx1201").is_err(),
                "cut at {cut}"
            );
        }
        let mut bad = compressed(&plain, 2);
        bad[6] = 0; // zlib
        assert!(
            device_elf(&bad, "gfx1201")
                .unwrap_err()
                .contains("method 0")
        );
        let mut bad = compressed(&plain, 2);
        bad[4] = 9;
        assert!(
            device_elf(&bad, "gfx1201")
                .unwrap_err()
                .contains("version 9")
        );
        let mut bad = compressed(&plain, 2);
        bad[12] += 1; // one more byte than the data holds
        assert!(device_elf(&bad, "gfx1201").is_err());
        assert!(device_elf(b"garbage!", "gfx1201").is_err());
    }
}
